import Foundation
import JSON
import NavTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// navd under a service manager: the socket systemd makes and passes (socket activation, driven by
/// systemd's own `systemd-socket-activate`), and the state navd tells it over `NOTIFY_SOCKET`.
@Suite(.serialized) struct ServiceManagerTests {
    /// systemd's launcher. It passes navd only the variables it is told to (`-E`), as systemd
    /// does: the sanitizer's and the backtracer's settings of `make test-asan` are passed on.
    static let activate: [String] = {
        var launcher = ["/usr/bin/systemd-socket-activate"]
        for name in ["ASAN_OPTIONS", "SWIFT_BACKTRACE"] where getenv(name) != nil { launcher += ["-E", name] }
        return launcher
    }()

    @Test func aSocketTheServiceManagerPassedIsServedAndLeftInPlace() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("activated.sock")
        let d = try Daemon(arguments: [], socketPath: path, waitUntilServing: false, useDefaultSocket: true,
                           launcher: Self.activate + ["-l", path])
        try d.waitForLog("Listening on")
        // systemd made the socket; navd does not run yet, and the client's connection waits for it.
        #expect(!d.stderr.contains("navd listening"))
        let c = try TestClient(path: path)
        #expect(try c.call("ping") == "pong")
        try d.waitForLog("navd listening")
        #expect(d.stderr.contains("navd.socket=\(path)") && d.stderr.contains("socket activation"), "\(d.stderr)")
        #expect(try c.call("session.open", ["name": "s1"])["version"] == 0)
        #expect(d.stop(signal: SIGTERM) == 0)
        // The manager owns the file: it stays for the next start, where clients queue meanwhile.
        var st = stat()
        #expect(lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK)
    }

    @Test func theSameSocketNamedByDashDashSocketIsAccepted() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("activated.sock")
        let d = try Daemon(arguments: [], socketPath: path, waitUntilServing: false, launcher: Self.activate + ["-l", path])
        try d.waitForLog("Listening on")
        let c = try TestClient(path: path)
        #expect(try c.call("ping") == "pong")
        #expect(d.stop(signal: SIGTERM) == 0)
    }

    /// Starts navd under `systemd-socket-activate` with `listen`, makes the first connection with
    /// socat's `address` (`PATH` replaced by the socket's path) and returns navd's exit status and
    /// what it wrote. With `--accept` the launcher stays and forks navd per connection: then the
    /// status is the child's, as the launcher reports it.
    func refused(_ listen: [String], connect address: String, arguments: [String] = [], prepare: (String) -> Void = { _ in })
        throws -> (Int32, String)
    {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("activated.sock")
        let d = try Daemon(arguments: arguments, socketPath: path, waitUntilServing: false, useDefaultSocket: arguments.isEmpty,
                           launcher: Self.activate + listen.map { $0.replacingOccurrences(of: "PATH", with: path) })
        try d.waitForLog("Listening on")
        prepare(path)
        _ = try runCommand("/usr/bin/socat", ["-u", "/dev/null", address.replacingOccurrences(of: "PATH", with: path)])
        if listen.contains("--accept") {
            try d.waitForLog("died with code")
            d.stop(signal: SIGTERM)
            return (d.stderr.contains("died with code 1") ? 1 : -1, d.stderr)
        }
        let status = d.waitForExit(timeout: 20)
        return (status ?? -1, d.stderr)
    }

    @Test func socketsNavdCannotServeAreRefusedByName() throws {
        // Two sockets.
        var (status, err) = try refused(["-l", "PATH", "-l", "PATH.2"], connect: "UNIX-CONNECT:PATH")
        #expect(status == 1 && err.contains("passed 2 sockets (LISTEN_FDS=2") && err.contains("one ListenStream="), "\(err)")
        // A connection rather than a listening socket (Accept=yes).
        (status, err) = try refused(["--accept", "-l", "PATH"], connect: "UNIX-CONNECT:PATH")
        #expect(status == 1 && err.contains("does not listen") && err.contains("Accept=no"), "\(err)")
        // Not a stream.
        (status, err) = try refused(["--seqpacket", "-l", "PATH"], connect: "UNIX-CONNECT:PATH,type=5")
        #expect(status == 1 && err.contains("not a stream socket") && err.contains("ListenStream="), "\(err)")
        // Any user could connect.
        (status, err) = try refused(["-l", "PATH"], connect: "UNIX-CONNECT:PATH", prepare: { chmod($0, 0o666) })
        #expect(status == 1 && err.contains("has mode 666") && err.contains("SocketMode=0600"), "\(err)")
        // --socket names another socket.
        (status, err) = try refused(["-l", "PATH"], connect: "UNIX-CONNECT:PATH", arguments: ["--socket", "/tmp/navd-test-elsewhere.sock"])
        #expect(status == 1 && err.contains("--socket /tmp/navd-test-elsewhere.sock is not the socket the service manager passed"), "\(err)")
    }

    @Test func aDescriptorThatIsNotASocketIsRefused() throws {
        // A careless launcher: LISTEN_FDS=1 for this process, and a file on descriptor 3.
        let d = try Daemon(waitUntilServing: false,
                           launcher: ["/bin/sh", "-c", "exec 3</dev/null; LISTEN_PID=$$ LISTEN_FDS=1 exec \"$@\"", "sh"])
        #expect(d.waitForExit(timeout: 20) == 1)
        #expect(d.stderr.contains("descriptor 3 (LISTEN_FDS=1) is not a socket"), "\(d.stderr)")
    }

    @Test func aTCPSocketIsRefused() throws {
        let port = try freeTCPPort()
        let (status, err) = try refused(["-l", "127.0.0.1:\(port)"], connect: "TCP:127.0.0.1:\(port)")
        #expect(status == 1 && err.contains("not a Unix-domain socket") && err.contains("ListenStream=/path/to/navd.sock"), "\(err)")
    }

    @Test func navdTellsTheServiceManagerItsState() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for address in [dir.file("notify"), "@navd-test-notify-\(getpid())"] {
            let manager = try DatagramReceiver(address: address)
            let d = try Daemon(environment: ProcessInfo.processInfo.environment.merging(
                ["NOTIFY_SOCKET": address, "WATCHDOG_USEC": "200000"], uniquingKeysWith: { $1 }))
            // Ready once it serves: a client ordered after it finds the socket answering.
            let ready = try manager.receive()
            #expect(ready.hasPrefix("READY=1\n") && ready.contains("MAINPID=\(d.pid)") && ready.contains("STATUS=serving \(d.socketPath)"), "\(ready)")
            #expect(try d.client().call("ping") == "pong")
            // The watchdog is pinged from the loop, every half of WATCHDOG_USEC.
            #expect(try manager.receive() == "WATCHDOG=1")
            #expect(try manager.receive() == "WATCHDOG=1")
            kill(d.pid, SIGHUP)
            #expect(try manager.receive(skipping: "WATCHDOG=1").hasPrefix("RELOADING=1\n"))
            #expect(try manager.receive(skipping: "WATCHDOG=1").hasPrefix("READY=1\n"))
            kill(d.pid, SIGTERM)
            #expect(try manager.receive(skipping: "WATCHDOG=1") == "STOPPING=1\nSTATUS=stopping: signal 15")
            #expect(d.waitForExit() == 0)
            // The watchdog's timer was closed with the rest: the loop ended with every handle released.
            #expect(d.stderr.contains("navd.handlesReleased=true"), "\(d.stderr)")
        }
    }
}

/// navd's log lines when its standard error is systemd's journal.
@Suite(.serialized) struct JournalLogTests {
    static let graph = """
        module: app
        root: {stack: Home}
        coordinators:
          Home: {}
        """

    /// navd started with `JOURNAL_STREAM` naming its stderr (as systemd sets it), or `other`.
    func daemon(journalStream other: String? = nil) throws -> Daemon {
        let stream = other ?? "$(stat -L -c %d:%i /proc/self/fd/2)"
        return try Daemon(graph: Self.graph, launcher: ["/bin/sh", "-c", "JOURNAL_STREAM=\(stream) exec \"$@\"", "sh"])
    }

    @Test func linesCarryTheirPriorityAndNoTimestamp() throws {
        let d = try daemon()
        // A broken graph reloaded by SIGHUP: an error, priority 3.
        try "coordinators: [".write(toFile: d.dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        kill(d.pid, SIGHUP)
        try d.waitForLog("graph not reloaded")
        #expect(d.stop(signal: SIGTERM) == 0)
        let lines = d.stderr.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("<6>info navd: ") && $0.hasSuffix("[navd] navd listening") }, "\(d.stderr)")
        #expect(lines.contains { $0.hasPrefix("<3>error navd: ") && $0.contains("graph not reloaded") }, "\(d.stderr)")
        #expect(lines.allSatisfy { $0.first == "<" }, "\(d.stderr)")
    }

    @Test func aJournalStreamThatIsNotStandardErrorLeavesTheLinesAsTheyWere() throws {
        // An inherited variable whose stream is not navd's stderr.
        let d = try daemon(journalStream: "1:1")
        #expect(d.stop(signal: SIGTERM) == 0)
        let listening = d.stderr.split(separator: "\n").first { $0.hasSuffix("navd listening") } ?? ""
        #expect(listening.hasPrefix("20") && listening.contains(" info navd: "), "\(d.stderr)")
    }
}

/// A port of 127.0.0.1 nobody listens on now.
private func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &a) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard ok else { throw TestFailure("no free port: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: a.sin_port))
}

/// The service manager's side of `NOTIFY_SOCKET`: a datagram socket at a path or an abstract
/// address (`@name`).
private final class DatagramReceiver {
    let fd: Int32
    let path: String?

    init(address: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var a = sockaddr_un()
        a.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(address.utf8)
        withUnsafeMutableBytes(of: &a.sun_path) { p in
            for (i, b) in bytes.enumerated() { p[i] = b }
            if bytes.first == UInt8(ascii: "@") { p[0] = 0 }
        }
        let abstract = bytes.first == UInt8(ascii: "@")
        path = abstract ? nil : address
        let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard rc == 0 else { throw TestFailure("bind \(address): \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The next datagram (10 s at most), past any equal to `skipping`.
    func receive(skipping: String? = nil) throws -> String {
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buf, buf.count, 0)
            guard n >= 0 else { throw TestFailure("no message from navd: \(String(cString: strerror(errno)))") }
            let m = String(decoding: buf[0..<n], as: UTF8.self)
            if m != skipping { return m }
        }
    }

    deinit {
        close(fd)
        if let path { unlink(path) }
    }
}
