import Foundation
import JSON

#if canImport(Glibc)
import Glibc
#endif

/// Paths of the repository and its built products.
public enum Repo {
    /// The repository root (two folders above this file's folder).
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A built executable: `$NAVD_BIN_DIR/name`, else the debug build folder.
    public static func binary(_ name: String) -> String {
        if let dir = ProcessInfo.processInfo.environment["NAVD_BIN_DIR"] { return dir + "/" + name }
        return root.appendingPathComponent(".build/debug/\(name)").path
    }

    public static func file(_ relative: String) -> URL { root.appendingPathComponent(relative) }
}

/// A fresh temporary directory, removed by ``remove()``.
public struct TempDir: Sendable {
    public let path: String
    public init() {
        var template = Array("/tmp/navd-test-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }
    public func remove() { try? FileManager.default.removeItem(atPath: path) }
    public func file(_ name: String) -> String { path + "/" + name }

    /// A policy file holding `text` (`policy.yaml`, mode 0600: a file with tokens must be readable
    /// by navd's user alone); its path.
    public func policy(_ text: String) throws -> String {
        let path = file("policy.yaml")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    /// A graph directory `name` holding one module, `text` as `app.yaml`; its path.
    public func graph(_ text: String, named name: String = "graph") throws -> String {
        let d = file(name)
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        try text.write(toFile: d + "/app.yaml", atomically: true, encoding: .utf8)
        return d
    }
}

/// A real navd process on a temporary socket, spawned with posix_spawn (Foundation's Process can
/// stall when every cooperative thread of the test runner is busy).
public final class Daemon: @unchecked Sendable {
    public let socketPath: String
    public let dir: TempDir
    public let pid: pid_t
    private var exitStatus: Int32?
    private let log = LogCollector()

    /// Starts `navd` with `arguments` (plus `--socket`) and waits until it logs that it listens. With
    /// `graph`, navd serves that one module (written as `app.yaml` in a directory of the daemon's own).
    /// `launcher`: a command that execs navd's command line given after it (the same process).
    /// `useDefaultState`: navd keeps its default state file (else `--ephemeral`, unless `arguments`
    /// name a state file or store).
    public init(graph: String? = nil, arguments: [String] = [], socketPath: String? = nil, environment: [String: String]? = nil,
                waitUntilServing: Bool = true, useDefaultSocket: Bool = false, useDefaultState: Bool = false, launcher: [String] = []) throws {
        dir = TempDir()
        self.socketPath = socketPath ?? dir.file("navd.sock")
        var graphArgs: [String] = []
        if let graph {
            try FileManager.default.createDirectory(atPath: dir.file("graph"), withIntermediateDirectories: true)
            try graph.write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
            graphArgs = ["--graph", dir.file("graph")]
        }
        // Tests keep no state file unless they ask for one.
        let stateArgs = useDefaultState || arguments.contains("--state") || arguments.contains("--store") ? [] : ["--ephemeral"]
        let socketArgs = useDefaultSocket ? [] : ["--socket", self.socketPath]
        let argv = launcher + [Repo.binary("navd")] + socketArgs + stateArgs + graphArgs + arguments
        var env = environment ?? ProcessInfo.processInfo.environment
        env["SWIFT_BACKTRACE"] = env["SWIFT_BACKTRACE"] ?? "enable=no"
        // A cluster node keeps its coverage where its state file would be ($XDG_STATE_HOME/navd/):
        // beside its socket, not in the home directory of whoever runs the tests (a restart under
        // the same socket finds it again).
        if arguments.contains("--store") && environment?["XDG_STATE_HOME"] == nil {
            env["XDG_STATE_HOME"] = URL(fileURLWithPath: self.socketPath).deletingLastPathComponent().path + "/state"
        }
        pid = try spawn(argv, environment: env, stderrTo: log)
        if waitUntilServing { try waitForLog("navd listening", timeout: 20) }
    }

    /// Everything navd wrote to stderr so far.
    public var stderr: String { log.text }

    /// Waits until navd's stderr contains `text` (or navd exits).
    public func waitForLog(_ text: String, timeout: Double = 10) throws {
        guard log.wait(for: text, timeout: timeout) else {
            if log.closed {
                throw TestFailure("navd exited (status \(waitForExit())) before logging '\(text)': \(stderr)")
            }
            throw TestFailure("navd did not log '\(text)' within \(timeout) s: \(stderr)")
        }
    }

    public func client() throws -> TestClient { try TestClient(path: socketPath) }

    public var isRunning: Bool {
        if exitStatus != nil { return false }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid {
            exitStatus = decodeStatus(status)
            return false
        }
        return true
    }

    /// Waits for navd to exit; returns its exit status (128 + signal when killed).
    @discardableResult
    public func waitForExit() -> Int32 {
        if let exitStatus {
            // Reaped already (``isRunning``): its stderr may still be on its way to the collector.
            log.waitUntilClosed(timeout: 5)
            return exitStatus
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let s = decodeStatus(status)
        exitStatus = s
        log.waitUntilClosed(timeout: 5)  // so that ``stderr`` holds everything navd wrote
        return s
    }

    /// Waits at most `timeout` seconds for navd to exit; nil if it is still running (then it is killed).
    public func waitForExit(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning {
            if Date() > deadline {
                stop(signal: SIGKILL)
                return nil
            }
            usleep(20_000)
        }
        return waitForExit()
    }

    /// Kills navd with SIGKILL `microseconds` from now, from a thread of its own (a crash at a
    /// random point of whatever the test is doing meanwhile).
    public func killNine(afterMicroseconds microseconds: Int) {
        let pid = self.pid
        Thread { usleep(UInt32(microseconds)); kill(pid, SIGKILL) }.start()
    }

    /// Sends `signal` and waits for the exit; returns the exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) -> Int32 {
        if exitStatus == nil { kill(pid, signal) }
        return waitForExit()
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            _ = waitForExit()
        }
        dir.remove()
    }
}

private func decodeStatus(_ status: Int32) -> Int32 {
    let sig = status & 0x7f
    return sig == 0 ? (status >> 8) & 0xff : 128 + sig
}

/// Collects a child's stderr on a thread of its own and lets tests wait for a line.
final class LogCollector: @unchecked Sendable {
    private var data: [UInt8] = []
    private let cond = NSCondition()
    private(set) var closed = false

    var text: String {
        cond.lock()
        defer { cond.unlock() }
        return String(decoding: data, as: UTF8.self)
    }

    func start(fd: Int32) {
        Thread.detachNewThread { [self] in
            var buf = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                cond.lock()
                if n <= 0 {
                    closed = true
                } else {
                    data.append(contentsOf: buf[0..<n])
                }
                cond.broadcast()
                cond.unlock()
                if n <= 0 { break }
            }
            Glibc.close(fd)
        }
    }

    /// Waits until the process's stderr reached its end (everything it wrote is in).
    func waitUntilClosed(timeout: Double) {
        let deadline = Date().addingTimeInterval(timeout)
        cond.lock()
        defer { cond.unlock() }
        while !closed && cond.wait(until: deadline) {}
    }

    func wait(for text: String, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        let needle = Array(text.utf8)
        cond.lock()
        defer { cond.unlock() }
        while true {
            if contains(data, needle) { return true }
            if closed || !cond.wait(until: deadline) { return contains(data, needle) }
        }
    }

    private func contains(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= hay.count else { return false }
        guard let first = needle.first else { return true }
        var i = 0
        while i + needle.count <= hay.count {
            if hay[i] == first && hay[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }
}

/// posix_spawn with stdout to /dev/null (or `stdoutFD`) and stderr into `log`.
func spawn(_ argv: [String], environment: [String: String], stderrTo log: LogCollector) throws -> pid_t {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw TestFailure("pipe failed") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
    posix_spawn_file_actions_addclose(&actions, fds[0])
    posix_spawn_file_actions_addclose(&actions, fds[1])
    let pid: pid_t
    do {
        pid = try posixSpawn(argv, &actions, environment: environment.map { "\($0.key)=\($0.value)" })
    } catch {
        Glibc.close(fds[1])
        Glibc.close(fds[0])
        throw error
    }
    Glibc.close(fds[1])
    log.start(fd: fds[0])
    return pid
}

/// posix_spawn with an empty signal mask: the test runner's threads block signals, and a child
/// must not inherit that mask. `environment` nil keeps this process's environment.
func posixSpawn(_ argv: [String], _ actions: inout posix_spawn_file_actions_t, environment: [String]?) throws -> pid_t {
    let cArgs = argv.map { strdup($0) } + [nil]
    let cEnv = environment.map { $0.map { strdup($0) } + [nil] }
    defer {
        cArgs.forEach { free($0) }
        cEnv?.forEach { free($0) }
    }
    closeInheritedDescriptors(&actions)
    var attr = posix_spawnattr_t()
    posix_spawnattr_init(&attr)
    defer { posix_spawnattr_destroy(&attr) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attr, &empty)
    posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK))
    var pid: pid_t = 0
    let rc = cEnv.map { env in posix_spawn(&pid, argv[0], &actions, &attr, cArgs, env) }
        ?? posix_spawn(&pid, argv[0], &actions, &attr, cArgs, environ)
    guard rc == 0 else { throw TestFailure("cannot start \(argv[0]): error \(rc)") }
    return pid
}

/// Adds, after the file actions given so far, one that closes every descriptor from 3 up in the
/// child. The tests run in parallel threads of one process, and what one test opens (a client's
/// socket, the write end of another child's stderr pipe) would otherwise live on in every child
/// another test starts meanwhile: a socket the test closed would not hang up for the navd serving it,
/// and a pipe would not end for the collector reading it, until that other child exited.
/// (`posix_spawn_file_actions_addclosefrom_np`, glibc 2.34, is not in Swift's Glibc module.)
public func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    // RTLD_DEFAULT (a null handle): the C library this process already has.
    guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return }
    _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
}

/// Runs a command to completion, feeding `input` on stdin; returns status and output.
public func runCommand(_ path: String, _ args: [String], input: String? = nil,
                       environment: [String: String]? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    if let environment { p.environment = environment }
    let out = Pipe(), err = Pipe(), inp = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = inp
    try p.run()
    if let input { inp.fileHandleForWriting.write(Data(input.utf8)) }
    try? inp.fileHandleForWriting.close()
    // Read both pipes to the end concurrently so neither can fill up and block the child.
    let errBox = DataBox()
    let done = DispatchSemaphore(value: 0)
    let errHandle = err.fileHandleForReading
    Thread.detachNewThread {
        errBox.set(errHandle.readDataToEndOfFile())
        done.signal()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    done.wait()
    let errData = errBox.get()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}

/// `socat` as a user would run it: `echo LINE | socat -t1 - UNIX-CONNECT:SOCK`.
public func socat(_ input: String, socket: String, wait: Double = 1) throws -> String {
    try runCommand("/usr/bin/socat", ["-t\(wait)", "-", "UNIX-CONNECT:\(socket)"], input: input).stdout
}

private final class DataBox: @unchecked Sendable {
    private var data = Data()
    private let lock = NSLock()
    func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
    func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
}

/// Runs `argv` to completion with posix_spawn and waitpid (no Foundation.Process), stdin from
/// /dev/null, stdout captured through a temporary file, stderr discarded, signals unblocked. For tools
/// like tmux whose client leaves a daemon behind and whose exit Foundation.Process can miss.
public func runSpawned(_ argv: [String]) throws -> (status: Int32, stdout: String) {
    let outPath = NSTemporaryDirectory() + "navd-spawn-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    defer { unlink(outPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let pid = try posixSpawn(argv, &actions, environment: nil)
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
    return (decodeStatus(status), out)
}
