import Foundation
import JSON
import RPC
import UV

#if canImport(Glibc)
import Glibc
#endif

/// An error navd answered: JSON-RPC code, `data.kind`, message and data.
public struct NavClientError: Error, CustomStringConvertible {
    public let code: Int
    public let kind: String
    public let message: String
    public let data: JSONValue

    public init(code: Int, kind: String, message: String, data: JSONValue = .null) {
        self.code = code
        self.kind = kind
        self.message = message
        self.data = data
    }

    public var description: String { "\(kind) (\(code)): \(message)" }
}

/// A synchronous client of navd over its Unix socket, newline-delimited JSON-RPC.
/// Notifications that arrive while waiting for a reply are queued for ``nextNotification()``.
public final class NavClient {
    /// The socket this client talks to: the one it was made with, or, after it followed a `moved`
    /// error (cluster mode), the node that owns the session.
    public private(set) var socketPath: String
    private var fd: Int32
    /// Whether a `moved` error is followed: the client connects to the owner node the error names,
    /// says `hello` again as it did, and sends the request there once. Subscriptions made on the
    /// previous node stay there (subscribe again).
    public var followsMoved = true
    /// The last `hello` sent, said again after following `moved`.
    private var lastHello: NavCall?
    private var buffer: [UInt8] = []
    /// Bytes at the start of `buffer` known to hold no newline (a long line is scanned once).
    private var scanned = 0
    private var nextId = 1
    /// Deep enough for anything navd writes (``NavClient/maxDepth``), no deeper.
    private let parser = JSONParser(maxDepth: NavClient.maxDepth)
    public private(set) var pendingNotifications: [JSONValue] = []
    /// Notifications dropped, oldest first, because more than ``maxQueuedNotifications`` waited.
    public private(set) var droppedNotifications = 0

    /// The longest line accepted from navd: its `--max-output` (8 MiB by default) and then some.
    public static let maxLine = 16 << 20
    /// The deepest JSON accepted from navd: what it writes for a tree within the deepest
    /// `--max-tree-depth` it allows (1,000) with values within `--max-depth` 64.
    public static let maxDepth = 2 * 1_000 + 64 + 8
    /// The most notifications kept unread (read while a call waits); past it the oldest are dropped.
    public var maxQueuedNotifications = 10_000
    /// How long connecting may take by default (navd stopped, or its queue of connections full).
    public static let connectTimeout = 5.0
    /// Answers requests navd sends (precondition.evaluate / recover); nil answers with an error.
    public var requestHandler: ((String, JSONValue) -> JSONValue?)?
    /// When set, notifications that arrive while a call waits for its reply are handed to it as they
    /// come (a `navigationPending` for this client's own navigation, say) instead of being queued.
    /// An error it throws ends the call's wait with that error.
    public var onNotification: ((JSONValue) throws -> Void)?
    /// Signals that interrupt a wait for navd (a call or ``nextNotification()``), which then throws
    /// `interrupted`; the client stays usable (to `cancel` what it waited for). Setting it blocks them
    /// in this thread, so they stay pending until the wait sees them (checked every 100 ms).
    public var interruptingSignals: [Int32] = [] {
        didSet {
            var set = sigset_t()
            sigemptyset(&set)
            for s in interruptingSignals { sigaddset(&set, s) }
            sigprocmask(SIG_BLOCK, &set, nil)
        }
    }

    /// Answers navd's `precondition.evaluate` / `precondition.recover` requests with `body`.
    public func onPrecondition(_ body: @escaping (PreconditionRequest) -> PreconditionAnswer) {
        requestHandler = { method, params in
            guard method.hasPrefix("precondition.") else { return nil }
            let r = PreconditionRequest(method: method, params: params)
            return body(r).json(for: r)
        }
    }

    /// `--socket`, else `$NAVD_SOCKET`, else `$XDG_RUNTIME_DIR/navd.sock`, else `/tmp/navd-<uid>.sock` (as navd chooses).
    public static func defaultSocketPath(explicit: String? = nil) -> String {
        SocketPath.clientPath(explicit: explicit, environment: ProcessInfo.processInfo.environment)
    }

    /// Whether the path is the default one (neither `--socket` nor `$NAVD_SOCKET` named it): then the
    /// client talks only to a navd of its own uid (or root's), never to a socket another user placed.
    static func usesDefaultPath(explicit: String?) -> Bool {
        explicit == nil && (ProcessInfo.processInfo.environment["NAVD_SOCKET"] ?? "").isEmpty
    }

    /// Refuses a peer that runs as another user (a squatted default socket).
    static func checkPeer(uid: UInt32, path: String) throws(NavClientError) {
        guard uid == getuid() || uid == 0 else {
            throw NavClientError(code: 0, kind: "connect",
                                 message: "the socket \(path) is served by uid \(uid), not by you (uid \(getuid())): refusing to talk to it; start your own navd or name a socket with --socket / NAVD_SOCKET",
                                 data: .null)
        }
    }

    /// Connects to navd at `socketPath` (see ``defaultSocketPath(explicit:)``), within `connectTimeout` seconds.
    public init(socketPath: String? = nil, connectTimeout: Double = NavClient.connectTimeout) throws {
        self.socketPath = NavClient.defaultSocketPath(explicit: socketPath)
        fd = try NavClient.connectSocket(self.socketPath, checkingPeer: NavClient.usesDefaultPath(explicit: socketPath), timeout: connectTimeout)
    }

    /// Connects `fd` to `addr` within ``connectTimeout``: a Unix socket whose server does not accept
    /// (stopped, or its queue full) refuses a non-blocking connect with EAGAIN until then.
    private static func connect(_ fd: Int32, _ addr: inout sockaddr_un, path: String, timeout: Double) throws(NavClientError) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, flags) }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if rc == 0 { return }
            let e = errno
            if e == EAGAIN || e == EINTR {
                guard Date() < deadline else {
                    throw NavClientError(code: 0, kind: "timeout", message: "navd at \(path) did not accept the connection within \(timeout) s (is it stopped or overloaded?)", data: .null)
                }
                usleep(10_000)
                continue
            }
            throw NavClientError(code: 0, kind: "connect",
                                 message: "cannot connect to navd at \(path): \(String(cString: strerror(e))) (is navd running? start it with `make run` or pass --socket / NAVD_SOCKET)", data: .null)
        }
    }

    private static func connectSocket(_ socketPath: String, checkingPeer: Bool, timeout: Double = NavClient.connectTimeout) throws -> Int32 {
        // An empty path (an unset variable in `--socket "$X"`) or a leading NUL would name an
        // abstract socket, which has no file permissions: anyone could be listening there.
        guard let first = socketPath.utf8.first, first != 0 else {
            throw NavClientError(code: 0, kind: "connect", message: "the socket path is empty; give navd's socket with --socket PATH or NAVD_SOCKET", data: .null)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(socketPath.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            close(fd)
            throw NavClientError(code: 0, kind: "connect", message: "socket path too long: \(socketPath)", data: .null)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in for (i, b) in bytes.enumerated() { p[i] = b } }
        do { try connect(fd, &addr, path: socketPath, timeout: timeout) } catch {
            close(fd)
            throw error
        }
        if checkingPeer {
            guard let cred = PeerCredentials.of(descriptor: fd) else {
                close(fd)
                throw NavClientError(code: 0, kind: "connect", message: "cannot read the credentials of \(socketPath)'s server", data: .null)
            }
            do { try NavClient.checkPeer(uid: cred.uid, path: socketPath) } catch {
                close(fd)
                throw error
            }
        }
        return fd
    }

    deinit { close(fd) }

    /// Sends `bytes`, all of them before `deadline` (`timeout` past it: navd stopped reading).
    private func sendBytes(_ bytes: [UInt8], deadline: Date? = nil) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN {
                var ms: Int32 = -1
                if let deadline {
                    let left = deadline.timeIntervalSinceNow
                    guard left > 0 else { throw NavClientError(code: 0, kind: "timeout", message: "navd did not take the request in time (is it stopped?)", data: .null) }
                    ms = NavClient.pollMilliseconds(left)
                }
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, ms)
                continue
            }
            guard n > 0 else { throw NavClientError(code: 0, kind: "connection", message: "navd closed the connection", data: .null) }
            off += n
        }
    }

    /// `poll`'s wait for `left` seconds (more than 0): 1 ms to 1e9 ms, so that a deadline however
    /// far (`--timeout 1e300`) never passes Int32's range.
    static func pollMilliseconds(_ left: Double) -> Int32 {
        let ms = left * 1000 + 1
        return ms < 1e9 ? Int32(max(ms, 1)) : 1_000_000_000
    }

    /// The next message from navd; nil when navd closed the connection. Throws `timeout` when
    /// `deadline` passes first, `interrupted` when one of ``interruptingSignals`` arrives.
    public func readMessage(deadline: Date? = nil) throws -> JSONValue? {
        while true {
            if let nl = buffer[scanned...].firstIndex(of: 10) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                scanned = 0
                if line.isEmpty { continue }
                do { return try parser.parse(line) } catch {
                    throw NavClientError.protocolError("navd sent a line that is not JSON-RPC (\(error)): \(String(decoding: line.prefix(80), as: UTF8.self))")
                }
            }
            scanned = buffer.count
            guard buffer.count <= NavClient.maxLine else {
                buffer = []
                scanned = 0
                throw NavClientError.protocolError("a line from navd is longer than \(NavClient.maxLine) bytes")
            }
            if deadline != nil || !interruptingSignals.isEmpty { try waitReadable(deadline: deadline) }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// Waits until the socket has input, `deadline` passes (`timeout`) or an interrupting signal is
    /// pending (`interrupted`, the signal taken).
    private func waitReadable(deadline: Date?) throws {
        var set = sigset_t()
        sigemptyset(&set)
        for s in interruptingSignals { sigaddset(&set, s) }
        while true {
            if !interruptingSignals.isEmpty {
                var pending = sigset_t()
                sigpending(&pending)
                if let s = interruptingSignals.first(where: { sigismember(&pending, $0) == 1 }) {
                    var none = timespec(tv_sec: 0, tv_nsec: 0)
                    _ = sigtimedwait(&set, nil, &none)
                    throw NavClientError(code: 0, kind: "interrupted", message: "interrupted by signal \(s)", data: .null)
                }
            }
            var ms: Int32 = interruptingSignals.isEmpty ? -1 : 100
            if let deadline {
                let left = deadline.timeIntervalSinceNow
                if left <= 0 { throw NavClientError(code: 0, kind: "timeout", message: "navd did not answer in time", data: .null) }
                ms = ms < 0 ? NavClient.pollMilliseconds(left) : min(ms, NavClient.pollMilliseconds(left))
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, ms)
            if r > 0 { return }
            if r < 0 && errno != EINTR { return }  // let recv report the error
        }
    }

    /// Calls `method`; returns its result or throws the error navd answered.
    @discardableResult
    public func call(_ method: String, _ params: JSONObject = [:], timeout: Double? = nil) throws -> JSONValue {
        try call(NavCall(method, params), timeout: timeout)
    }

    /// Sends `request`; returns its result or throws the error navd answered (`timeout` when no
    /// reply came within `timeout` seconds).
    @discardableResult
    public func call(_ request: NavCall, timeout: Double? = nil) throws -> JSONValue {
        let id = nextId
        nextId += 1
        let method = request.method
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        try sendBytes(request.line(id: id), deadline: deadline)
        while true {
            guard let m = try readMessage(deadline: deadline) else {
                throw NavClientError(code: 0, kind: "connection", message: "navd closed the connection before answering \(method)", data: .null)
            }
            if try handleIncoming(m) { continue }
            try throwIfAboutTheConnection(m)
            guard m["id"] == .int(id) else { continue }
            if let e = m["error"] {
                let error = NavClientError(rpcError: e)
                if error.kind == "moved", followsMoved, !followingMoved, let target = error.data["socket"]?.stringValue, !target.isEmpty {
                    return try follow(to: target, request, timeout: timeout)
                }
                throw error
            }
            if method == "hello" { lastHello = request }
            return m["result"] ?? .null
        }
    }

    private var followingMoved = false

    /// Connects to the node a `moved` error named and sends `request` there (once: a second
    /// `moved` is an error).
    private func follow(to target: String, _ request: NavCall, timeout: Double?) throws -> JSONValue {
        let newFd = try NavClient.connectSocket(target, checkingPeer: true)
        close(fd)
        fd = newFd
        socketPath = target
        buffer = []
        scanned = 0
        followingMoved = true
        defer { followingMoved = false }
        if let hello = lastHello { try call(hello, timeout: timeout) }
        return try call(request, timeout: timeout)
    }

    /// Queues notifications and answers navd's requests; true when `m` was one of those.
    private func handleIncoming(_ m: JSONValue) throws -> Bool {
        guard let method = m["method"]?.stringValue else { return false }
        if let id = m["id"] {
            try? sendBytes(NavCall.answer(id: id, method: method, result: requestHandler?(method, m["params"] ?? .null)))
        } else if let onNotification {
            try onNotification(m)
        } else {
            if pendingNotifications.count >= maxQueuedNotifications {
                pendingNotifications.removeFirst()
                droppedNotifications += 1
            }
            pendingNotifications.append(m)
        }
        return true
    }

    /// The next notification (queued first); nil when navd closed the connection.
    public func nextNotification() throws -> JSONValue? {
        if !pendingNotifications.isEmpty { return pendingNotifications.removeFirst() }
        while let m = try readMessage() {
            if m["method"] != nil && m["id"] == nil { return m }
            if try !handleIncoming(m) { try throwIfAboutTheConnection(m) }
        }
        return nil
    }

    /// An error answering no request (`id` null) is about the connection, which navd closes next
    /// (another client's `client.kill`, `--max-output`, `--message-timeout`, too many connections):
    /// thrown, so that its reason is what the caller hears rather than a bare end of the stream.
    private func throwIfAboutTheConnection(_ m: JSONValue) throws {
        if m["id"] == .null, let e = m["error"] { throw NavClientError(rpcError: e) }
    }

    /// Serves navd's requests (for `provide`) until the connection closes.
    public func serve() throws {
        while let m = try readMessage() {
            _ = try handleIncoming(m)
            pendingNotifications.removeAll()
        }
    }
}

// MARK: - Typed calls

extension NavClient {
    public func ping() throws { try call(.ping()) }

    @discardableResult
    public func hello(client: String? = nil, token: String? = nil) throws -> JSONValue { try call(.hello(client: client, token: token)) }

    public func stats() throws -> JSONValue { try call(.stats()) }

    public func describeGraph() throws -> JSONValue { try call(.describeGraph()) }

    @discardableResult
    public func navigate(to target: String, by style: NavCall.Style? = nil, with setup: JSONValue? = nil, from source: String? = nil,
                         session: String? = nil, ifVersion: Int? = nil, key: String? = nil, dryRun: Bool = false,
                         existing: NavCall.Existing? = nil, merge: Bool = false, force: Bool = false) throws -> Committed {
        Committed(try call(.navigate(to: target, by: style, with: setup, from: source, session: session,
                                     ifVersion: ifVersion, key: key, dryRun: dryRun, existing: existing, merge: merge, force: force)))
    }

    @discardableResult
    public func navigate(route: String, by style: NavCall.Style? = nil, with setup: JSONValue? = nil, from source: String? = nil,
                         session: String? = nil, ifVersion: Int? = nil, key: String? = nil, dryRun: Bool = false,
                         existing: NavCall.Existing? = nil, merge: Bool = false) throws -> Committed {
        Committed(try call(.navigate(route: route, by: style, with: setup, from: source, session: session,
                                     ifVersion: ifVersion, key: key, dryRun: dryRun, existing: existing, merge: merge)))
    }

    @discardableResult
    public func dismiss(node: String? = nil, session: String? = nil) throws -> Committed {
        Committed(try call(.dismiss(node: node, session: session)))
    }

    /// `dismiss {result, merge?}`: the result for the screen below; with `merge` it stays in its params.
    @discardableResult
    public func dismiss(node: String? = nil, result: JSONValue, merge: Bool = false, session: String? = nil) throws -> Committed {
        Committed(try call(.dismiss(node: node, result: result, merge: merge, session: session)))
    }

    @discardableResult
    public func flowComplete(flow: String, _ outcome: NavCall.FlowOutcome, session: String? = nil) throws -> Committed {
        Committed(try call(.flowComplete(flow: flow, outcome, session: session)))
    }

    @discardableResult
    public func open(url: String, session: String? = nil, ifVersion: Int? = nil, dryRun: Bool = false,
                     pushingLastScreen: Bool = false, force: Bool = false, popUpTo: String? = nil, popInclusive: Bool = false) throws -> Committed {
        Committed(try call(.open(url: url, session: session, ifVersion: ifVersion, dryRun: dryRun, pushingLastScreen: pushingLastScreen, force: force,
                                 popUpTo: popUpTo, popInclusive: popInclusive)))
    }

    /// `update {node, with, push?}`; `push`: a dismiss of the screen restores the params it had first.
    @discardableResult
    public func update(node: String, with fields: JSONObject, push: Bool = false, session: String? = nil) throws -> JSONValue {
        try call(.update(node: node, with: fields, push: push, session: session))
    }

    public func tree(session: String? = nil) throws -> TreeMirror { TreeMirror(snapshot: try call(.tree(session: session))) }

    /// Subscribes and answers a mirror of the tree at the subscription; keep it current with ``apply(to:)``.
    public func subscribe(session: String? = nil, compact: Bool = false) throws -> TreeMirror {
        TreeMirror(snapshot: try call(.subscribe(session: session, compact: compact)))
    }

    public func unsubscribe(session: String? = nil) throws { try call(.unsubscribe(session: session)) }

    @discardableResult
    public func setFacts(_ facts: JSONObject, session: String? = nil) throws -> JSONObject {
        try call(.setFacts(facts, session: session))["facts"]?.objectValue ?? [:]
    }

    public func facts(_ names: [String]? = nil, session: String? = nil) throws -> JSONObject {
        try call(.facts(names, session: session))["facts"]?.objectValue ?? [:]
    }

    /// Declares this connection the provider of `preconditions`; `answer` decides each request.
    /// Requests are answered while this client waits for replies or runs ``serve()``.
    public func provide(_ preconditions: [String], answer: @escaping (PreconditionRequest) -> PreconditionAnswer) throws {
        onPrecondition(answer)
        try call(.provide(preconditions))
    }

    @discardableResult
    public func cancel(navigation: String) throws -> Bool { try call(.cancel(navigation: navigation))["cancelled"]?.boolValue ?? false }

    public func openSession(_ name: String) throws -> TreeMirror { TreeMirror(snapshot: try call(.openSession(name))) }
    public func closeSession(_ name: String) throws { try call(.closeSession(name)) }
    public func sessions() throws -> [JSONValue] { try call(.listSessions())["sessions"]?.arrayValue ?? [] }

    /// Reads notifications until a `stackChanged` for `mirror`'s session arrives and applies it.
    /// Other notifications are handed to `other`. Returns false when navd closed the connection, or
    /// closed the mirror's session (`sessionClosed`: the mirror is then ``TreeMirror/closed``).
    @discardableResult
    public func apply(to mirror: inout TreeMirror, other: (JSONValue) -> Void = { _ in }) throws -> Bool {
        guard !mirror.closed else { return false }
        while let n = try nextNotification() {
            let params = n["params"] ?? .null
            let method = n["method"]?.stringValue ?? ""
            if method == "stackChanged" && mirror.concerns(params) {
                try mirror.apply(params)
                return true
            }
            other(n)
            if mirror.take(method, params) { return false }
        }
        return false
    }
}
