import JSON
import UV

/// A client of navd on a libuv loop, for front-ends that must also watch a terminal, timers or
/// signals (nav-tui). Replies come back to the closure given with each call; notifications and
/// navd's requests go to the handlers. Everything runs on the loop's thread.
public final class NavLoopClient {
    public typealias Reply = (Result<JSONValue, NavClientError>) -> Void

    public let socketPath: String
    private let loop: EventLoop
    private var stream: PipeStream?
    private var buffer: [UInt8] = []
    private var nextId = 1
    private var waiting: [Int: Reply] = [:]
    /// The line of each request waiting, kept to send it again where a `moved` error points.
    private var sentLines: [Int: [UInt8]] = [:]
    /// Whether a `moved` error (cluster mode) is followed: the request is sent once more, over a
    /// connection of its own to the node that owns the session, and answered from there. This
    /// client's own connection (and its subscriptions) stays where it is.
    public var followsMoved = true
    private let parser = JSONParser(maxDepth: 512)
    private var connected = false

    /// `(method, params)` of each notification.
    public var onNotification: ((String, JSONValue) -> Void)?
    /// Answers navd's requests (`precondition.evaluate` / `recover`); nil answers with an error.
    public var onRequest: ((String, JSONValue) -> JSONValue?)?
    /// navd closed the connection (or it failed); calls still waiting got a `connection` error.
    public var onClose: ((NavClientError) -> Void)?

    public init(loop: EventLoop, socketPath: String? = nil) {
        self.loop = loop
        self.socketPath = NavClient.defaultSocketPath(explicit: socketPath)
        self.explicitPath = socketPath
    }
    private let explicitPath: String?

    /// Connects; `done` receives nil once connected, else why not.
    public func connect(_ done: @escaping (NavClientError?) -> Void) {
        let path = socketPath
        stream = PipeStream.connect(loop: loop, path: path) { [weak self] s, error in
            guard let self else { return }
            if let error {
                s.close()
                self.stream = nil
                done(.connection("cannot connect to navd at \(path): \(error.message) (is navd running? start it with `make run` or pass --socket / NAVD_SOCKET)"))
                return
            }
            if NavClient.usesDefaultPath(explicit: self.explicitPath) {
                do throws(NavClientError) {
                    guard let peer = s.peerCredentials() else {
                        throw .connection("cannot read the credentials of \(path)'s server")
                    }
                    try NavClient.checkPeer(uid: peer.uid, path: path)
                } catch {
                    s.close()
                    self.stream = nil
                    done(error)
                    return
                }
            }
            self.connected = true
            s.startReading { [weak self] event in self?.read(event) }
            done(nil)
        }
    }

    public var isConnected: Bool { connected }

    /// Sends `request`; `reply` runs with its result or navd's error.
    @discardableResult
    public func call(_ request: NavCall, _ reply: @escaping Reply) -> Int {
        let id = nextId
        nextId += 1
        guard connected, let stream else {
            reply(.failure(.connection("not connected to navd")))
            return id
        }
        waiting[id] = reply
        let line = request.line(id: id)
        if followsMoved { sentLines[id] = line }
        stream.write(line)
        return id
    }

    public func close() {
        guard let s = stream else { return }
        stream = nil
        connected = false
        s.close()
        sentLines.removeAll()
        failWaiting(.connection("connection closed"))
    }

    private func failWaiting(_ error: NavClientError) {
        let w = waiting
        waiting.removeAll()
        for (_, r) in w.sorted(by: { $0.key < $1.key }) { r(.failure(error)) }
    }

    /// Bytes at the start of `buffer` known to hold no newline (a long line is scanned once).
    private var scanned = 0

    private func read(_ event: PipeStream.ReadEvent) {
        switch event {
        case .data(let bytes):
            buffer.append(contentsOf: bytes)
            var start = 0
            var searchFrom = scanned
            while let nl = buffer[searchFrom...].firstIndex(of: 10) {
                let line = buffer[start..<nl]
                start = nl + 1
                searchFrom = start
                if line.isEmpty { continue }
                guard let m = try? parser.parse(Array(line)) else { return lost(.protocolError("navd sent a line that is not JSON-RPC")) }
                dispatch(m)
            }
            buffer.removeSubrange(0..<start)
            scanned = buffer.count
            guard buffer.count <= NavClient.maxLine else { return lost(.protocolError("a line from navd is longer than \(NavClient.maxLine) bytes")) }
        case .end, .error:
            lost(closing ?? .connection("navd closed the connection"))
        }
    }

    /// Why navd said it closes the connection (an error answering no request, `id` null: another
    /// client's `client.kill`, a limit), reported when the connection ends.
    private var closing: NavClientError?

    /// The connection ended (or broke off): calls still waiting fail with `why`.
    private func lost(_ why: NavClientError) {
        buffer = []
        scanned = 0
        closing = nil
        sentLines.removeAll()
        stream?.close()
        stream = nil
        connected = false
        failWaiting(why)
        onClose?(why)
    }

    private func dispatch(_ m: JSONValue) {
        if let method = m["method"]?.stringValue {
            let params = m["params"] ?? .null
            if let id = m["id"] {
                stream?.write(NavCall.answer(id: id, method: method, result: onRequest?(method, params)))
            } else {
                onNotification?(method, params)
            }
            return
        }
        if m["id"] == .null, let e = m["error"] { closing = NavClientError(rpcError: e) }
        guard let id = m["id"]?.intValue, let reply = waiting.removeValue(forKey: id) else { return }
        let line = sentLines.removeValue(forKey: id)
        if let e = m["error"] {
            let error = NavClientError(rpcError: e)
            if error.kind == "moved", let line, let target = error.data["socket"]?.stringValue, !target.isEmpty {
                return follow(line, id: id, to: target, reply)
            }
            reply(.failure(error))
        } else {
            reply(.success(m["result"] ?? .null))
        }
    }

    /// Sends `line` (request `id`) to the node at `target` over a connection of its own, answers
    /// `reply` with what that node says (a second `moved` included), then closes that connection.
    private func follow(_ line: [UInt8], id: Int, to target: String, _ reply: @escaping Reply) {
        var answered = false
        var pending: [UInt8] = []
        let finish: (PipeStream, Result<JSONValue, NavClientError>) -> Void = { s, r in
            guard !answered else { return }
            answered = true
            s.close()
            reply(r)
        }
        _ = PipeStream.connect(loop: loop, path: target) { [parser] s, error in
            if let error {
                finish(s, .failure(.connection("cannot reach the node that owns the session at \(target): \(error.message)")))
                return
            }
            // The socket comes from the cluster's directory: a node must run as this user (or root),
            // as NavClient and the Python client require, or a rewritten directory could send the
            // request to anyone's server.
            do throws(NavClientError) {
                guard let peer = s.peerCredentials() else { throw .connection("cannot read the credentials of \(target)'s server") }
                try NavClient.checkPeer(uid: peer.uid, path: target)
            } catch {
                finish(s, .failure(error))
                return
            }
            s.startReading { event in
                switch event {
                case .data(let bytes):
                    pending.append(contentsOf: bytes)
                    while let nl = pending.firstIndex(of: 10) {
                        let m = try? parser.parse(Array(pending[..<nl]))
                        pending.removeSubrange(...nl)
                        guard let m, m["method"] == nil, m["id"]?.intValue == id else { continue }
                        if let e = m["error"] { finish(s, .failure(NavClientError(rpcError: e))) } else { finish(s, .success(m["result"] ?? .null)) }
                    }
                case .end, .error:
                    finish(s, .failure(.connection("the node that owns the session (\(target)) closed the connection before answering")))
                }
            }
            s.write(line)
        }
    }
}
