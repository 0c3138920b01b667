import UV

/// nav-web's server: HTTP/1.1 connections on one libuv loop, each answered by ``Routes`` or turned
/// into a page's WebSocket relayed to navd (``PageRelay``). At most ``maxConnections`` at once; a
/// connection whose request head has not arrived whole within `--head-timeout` (or that stays idle
/// as long between requests) is closed, and so is one that leaves its answers unread (more than
/// ``Relay/maxQueued``) for `--stall-timeout`.
final class WebServer {
    let loop: EventLoop
    let settings: Settings
    private let listener: TCPListener
    /// The port listened on, once ``start(port:)`` returned.
    private(set) var port = 0
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    private var sweep: UV.Timer?
    private(set) var stopping = false
    private var stopped: (() -> Void)?
    private var graceTimer: UV.Timer?

    /// The most connections open at once (pages and plain requests); one more is answered 503.
    static let maxConnections = 1024
    init(loop: EventLoop, settings: Settings) {
        self.loop = loop
        self.settings = settings
        listener = TCPListener(loop: loop)
    }

    /// Listens on `settings.host`, `port` (0: any free port).
    func start(port: Int) throws(UVError) {
        try listener.listen(host: settings.host, port: port) { [unowned self] _ in self.accept() }
        self.port = listener.port
        settings.port = self.port
        let sweep = UV.Timer(loop: loop)
        sweep.start(milliseconds: 1_000, repeat: 1_000) { [unowned self] in self.closeStalled() }
        sweep.unref()
        self.sweep = sweep
    }

    private func accept() {
        guard let stream = try? listener.accept() else { return }
        guard !stopping, connections.count < Self.maxConnections else {
            stream.write(HTTPAnswer.text(503, "nav-web: too many connections (at most \(Self.maxConnections)); try again later\n").bytes(keepAlive: false))
            stream.shutdownAndClose()
            return
        }
        let connection = HTTPConnection(server: self, stream: stream)
        connections[ObjectIdentifier(connection)] = connection
        connection.start()
    }

    /// A connection closed: forgotten; the last one ends a stop.
    func closed(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = nil
        if stopping && connections.isEmpty { finishStop() }
    }

    private func closeStalled() {
        let now = loop.now
        for c in Array(connections.values) {
            if c.waitingSince.map({ now - $0 >= settings.headTimeoutMs }) == true { c.timedOut() }
            if c.stalledSince.map({ now - $0 >= settings.stallTimeoutMs }) == true { c.close() }
        }
    }

    /// Stops: listens no more, tells each page its WebSocket closes (status 1000; a browser answers
    /// at once), lets requests being answered finish, and cuts off what is left after `graceMs`;
    /// `then` runs once every connection is closed.
    func stop(graceMs: UInt64, then: @escaping () -> Void) {
        guard !stopping else { return }
        stopping = true
        stopped = then
        listener.close()
        sweep?.close()
        for c in Array(connections.values) { c.stop() }
        if connections.isEmpty { return finishStop() }
        let timer = UV.Timer(loop: loop)
        timer.start(milliseconds: graceMs) { [unowned self] in
            for c in Array(self.connections.values) { c.close() }
        }
        graceTimer = timer
    }

    private func finishStop() {
        graceTimer?.close()
        graceTimer = nil
        let then = stopped
        stopped = nil
        then?()
    }
}

/// One client's connection: requests read and answered one at a time (pipelined requests wait
/// their turn, unread), until it closes or becomes a page's WebSocket.
final class HTTPConnection {
    unowned let server: WebServer
    let stream: TCPStream
    private var buffer: [UInt8] = []
    /// How much of `buffer` is known to hold no head's end (see ``HTTPHead/mayEnd(_:from:)``).
    private var scanned = 0
    /// A request is being answered.
    private var busy = false
    private var dispatching = false
    /// The write side is shut and what the client still sends is read and dropped until it closes.
    private var lingering = false
    private var lingerTimer: UV.Timer?
    private(set) var isClosed = false
    private var relay: PageRelay?
    /// Since when the connection waits for a request's head (nil while answering or relaying).
    private(set) var waitingSince: UInt64?
    /// Since when the client has left more than ``Relay/maxQueued`` unread (nil while it reads).
    var stalledSince: UInt64?

    /// How long a closing connection waits for the client to close its side.
    static let lingerMs: UInt64 = 2_000

    init(server: WebServer, stream: TCPStream) {
        self.server = server
        self.stream = stream
    }

    func start() {
        stream.setNoDelay()
        waitingSince = server.loop.now
        stream.startReading { [unowned self] event in self.read(event) }
    }

    private func read(_ event: StreamHandle.ReadEvent) {
        switch event {
        case .data(let bytes):
            if lingering { return }
            if let relay { return relay.fromPage(bytes.raw) }
            buffer.append(contentsOf: bytes.raw)
            handleBuffered()
        case .end, .error:
            close()
        }
    }

    private func handleBuffered() {
        guard !dispatching else { return }
        dispatching = true
        defer { dispatching = false }
        while !busy && !isClosed && !lingering && relay == nil {
            // A client that sends requests without reading the answers is not read further until
            // it has taken them.
            if stream.queuedBytes > Relay.maxQueued {
                stream.pauseReading()
                stalledSince = server.loop.now
                stream.onDrain = { [unowned self] in
                    self.stream.onDrain = nil
                    self.stalledSince = nil
                    self.stream.resumeReading()
                    self.handleBuffered()
                }
                return
            }
            guard HTTPHead.mayEnd(buffer, from: scanned) else {
                scanned = buffer.count
                return
            }
            switch HTTPHead.parse(buffer) {
            case .incomplete:
                scanned = buffer.count
                return
            case .refused(let status, let reason):
                return send(.text(status, "nav-web: \(reason)\n"), keepAlive: false)
            case .head(let head, let length):
                buffer.removeFirst(length)
                scanned = 0
                waitingSince = nil
                if head.path == "/ws" && head.field("upgrade")?.lowercased() == "websocket" && head.fieldHasToken("connection", "upgrade") {
                    return upgrade(head)
                }
                busy = true
                stream.pauseReading()
                Routes.answer(head, server: server) { [weak self] answer in self?.answered(answer, head) }
            }
        }
    }

    private func answered(_ answer: HTTPAnswer, _ request: HTTPRequestHead) {
        guard !isClosed, busy else { return }
        busy = false
        send(answer, keepAlive: request.keepAlive && !server.stopping, bodyless: request.method == "HEAD")
        guard !isClosed, !lingering else { return }
        waitingSince = server.loop.now
        stream.resumeReading()
        handleBuffered()
    }

    /// Writes `answer`; without `keepAlive` the connection then closes.
    private func send(_ answer: HTTPAnswer, keepAlive: Bool, bodyless: Bool = false) {
        stream.write(answer.bytes(keepAlive: keepAlive, bodyless: bodyless))
        if !keepAlive { closeAfterWrites() }
    }

    /// Shuts the write side once what was written is sent, reads and drops what the client still
    /// sends, and closes when it closes its side or after ``lingerMs`` (closing with unread bytes
    /// would reset the connection, and the client could lose the last answer).
    func closeAfterWrites() {
        guard !isClosed, !lingering else { return }
        lingering = true
        waitingSince = nil
        stream.shutdownWriting()
        stream.resumeReading()
        closeWithinLinger()
    }

    /// Closes the connection after ``lingerMs`` unless it closed before (the client's end, its
    /// answer to a close frame).
    func closeWithinLinger() {
        guard !isClosed, lingerTimer == nil else { return }
        let timer = UV.Timer(loop: server.loop)
        timer.start(milliseconds: Self.lingerMs) { [weak self] in self?.close() }
        lingerTimer = timer
    }

    /// Answers a WebSocket upgrade on /ws: refused as ``Access`` says, or switched to a relay.
    private func upgrade(_ head: HTTPRequestHead) {
        if let refused = Access.upgradeRefusal(head, settings: server.settings, port: server.port) {
            return send(refused, keepAlive: false)
        }
        guard head.method == "GET", head.field("sec-websocket-version") == "13" else {
            var a = HTTPAnswer.text(426, "nav-web: the WebSocket needs GET with Sec-WebSocket-Version: 13 (RFC 6455)\n")
            a.fields.append(("Sec-WebSocket-Version", "13"))
            return send(a, keepAlive: false)
        }
        guard let key = head.field("sec-websocket-key"), WebSocket.validKey(key) else {
            return send(.text(400, "nav-web: the WebSocket upgrade needs a Sec-WebSocket-Key of 16 bytes in base64 (RFC 6455 4.1)\n"), keepAlive: false)
        }
        stream.write(HTTPAnswer(status: 101, fields: [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", WebSocket.accept(key: key)),
        ]).bytes(keepAlive: true))
        let relay = PageRelay(connection: self, settings: server.settings, loop: server.loop)
        self.relay = relay
        let rest = buffer
        buffer = []
        relay.start(leftover: rest)
    }

    /// The head did not arrive in time (or the connection stayed idle): closed, with a 408 when a
    /// request had begun.
    func timedOut() {
        guard !isClosed, !lingering, !busy, relay == nil else { return }
        if buffer.isEmpty { return close() }
        send(.text(408, "nav-web: the request's head did not arrive within \(server.settings.headTimeoutMs / 1000) s\n"), keepAlive: false)
    }

    /// The server stops: a page is told (close frame 1000), an idle connection closes, a request
    /// being answered finishes first.
    func stop() {
        if let relay { return relay.close(code: 1000, reason: "nav-web is stopping") }
        if !busy && !lingering { close() }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        lingerTimer?.close()
        lingerTimer = nil
        relay?.pageGone()
        relay = nil
        stream.close()
        server.closed(self)
    }
}
