import JSON
import Logging
import NavGraph
import NavigationCore
import RPC
import UV

#if canImport(Glibc)
import Glibc
#endif

/// Why navd could not start.
public struct StartupError: Error, CustomStringConvertible {
    public let description: String
}

/// The daemon: the listening socket, the connections, the method table and the shutdown sequence.
/// Everything runs on one libuv loop, on the thread that calls ``run()``.
public final class Server {
    let config: ServerConfiguration
    let logger: Logger
    let loop: EventLoop
    private var listener: PipeListener?
    private var signals: [Signal] = []
    private var flusher: Check?
    private(set) var connections: [Int: Connection] = [:]
    private var nextConnectionId = 1
    private var outboundCounter = 0
    /// Connections with output queued in this iteration.
    var dirty: [Connection] = []
    /// This iteration's notifications, each encoded and framed once; subscribers refer to ranges of it
    /// until they are flushed, then it is emptied.
    let broadcastLog = ByteBuffer(capacity: 4096)
    var stats = Stats()
    let startedAt = EventLoop.hrtime
    let parser: JSONParser
    /// Field names of the setup models requests carry (`with`), made into strings once.
    let setupKeys = StringCache()
    /// Method name → handler.
    let methods = MethodTable()
    private(set) var isShuttingDown = false
    /// Runs when SIGHUP arrives.
    public var onHangup: (() -> Void)?
    /// The navigation graph every navigation is checked against.
    public internal(set) var graph: NavigationGraph
    /// Sessions, pending navigations, subscriptions and providers.
    var hub: SessionHub!
    /// Where sessions are kept (``EphemeralStore`` until a state file is used); told about every
    /// change, flushed once per loop iteration.
    var store: any Store = EphemeralStore()

    /// Keeps state in `path`: restores its sessions now, saves every commit from now on.
    public func useStateFile(_ path: String, durability: Durability) throws(StateError) -> Int {
        try use(SQLiteStore(path: path, durability: durability))
    }

    /// Restores the sessions `s` keeps and tells it every change from now on.
    func use(_ s: any Store) throws(StateError) -> Int {
        let sessions: [Session]
        do { sessions = try s.load(graph: graph) } catch {
            s.close()
            throw error
        }
        // Restored keyed replies name navigations ("nav-7"); new ones are numbered after them.
        let parser = JSONParser(maxDepth: 4096)
        for session in sessions {
            hub.sessions[session.name] = SessionState(session)
            for reply in session.keyed.values {
                let id: JSONValue? = switch reply {
                case .success(let t): (try? parser.parse(t.bytes))?["navigation"]
                case .failure(let e): e.data["navigation"]
                }
                if let n = id?.stringValue.flatMap(PendingNavigation.number(ofId:)) { hub.numberNavigations(after: n) }
            }
        }
        if hub.sessions["main"].map({ st in !sessions.contains { $0 === st.session } }) ?? true {
            s.sessionOpened(hub.sessions["main"]!.session)
        }
        store = s
        return sessions.count
    }
    /// Loads a graph from a directory (nil: the embedded example), for `graph.reload`.
    public var graphLoader: ((String?) -> (NavigationGraph?, Diagnostics))?
    /// Where the current graph came from (nil: the embedded example).
    public var graphPath: String?
    /// Counts reloads; sent in `graphReloaded`.
    var graphVersion = 1
    /// Roles per uid and per token. Setting it (SIGHUP) recomputes every open connection's roles.
    public var policy = Policy() {
        didSet {
            for c in connections.values { c.roles = policy.roles(uid: c.peer?.uid, token: c.token) }
        }
    }

    /// Refuses a request that changes the daemon unless the client holds ``Policy/adminRole``.
    func requireAdmin(_ c: Connection, _ what: String) throws(RPCError) {
        guard !c.roles.contains(Policy.adminRole) else { return }
        let uid = c.peer.map { "uid \($0.uid)" } ?? "this client"
        throw .accessDenied("\(what) changes the daemon and needs the role \(Policy.adminRole); \(uid) does not hold it. navd's own uid holds it; grant it to others in the policy file (--policy), under `uids:` or `tokens:`",
                            data: ["roles": [.string(Policy.adminRole)]])
    }
    /// The policy file `policy` came from (`--policy`), for messages; nil: no policy, nobody holds a role.
    public var policyFile: String?
    /// More counters for `stats`, from the components that own them.
    var extraStats: () -> JSONObject = { [:] }
    /// The OpenRPC document returned by `rpc.discover`, embedded in the binary.
    lazy var openRPCDocument: JSONValue = (try? JSONParser(maxDepth: 256).parse(EmbeddedProtocol.openRPC)) ?? .null

    public init(config: ServerConfiguration, graph: NavigationGraph, logger: Logger, loop: EventLoop = EventLoop()) {
        self.config = config
        self.graph = graph
        self.logger = logger
        self.loop = loop
        self.parser = JSONParser(maxDepth: config.maxDepth)
        registerCoreMethods()
        registerGraphMethods()
        hub = SessionHub(server: self)
        registerNavigationMethods()
        registerReloadMethod()
    }

    // MARK: Lifecycle

    /// Binds the socket (refusing a live one, replacing a stale one), installs signal handlers.
    public func start() throws {
        let path = config.socketPath
        guard path.utf8.count <= ServerConfiguration.maxSocketPath else {
            throw StartupError(description: "the socket path \(path) is \(path.utf8.count) bytes long; Unix sockets allow at most \(ServerConfiguration.maxSocketPath): choose a shorter --socket")
        }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if directory == ServerConfiguration.privateSocketDirectory(environment: getenv("TMPDIR").map { ["TMPDIR": String(cString: $0)] } ?? [:]) {
            try preparePrivateDirectory(directory)
        }
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFSOCK else {
                throw StartupError(description: "\(path) exists and is not a socket; navd does not replace other files: remove it or choose another --socket")
            }
            guard st.st_uid == getuid() else {
                throw StartupError(description: "the socket \(path) belongs to uid \(st.st_uid), not to navd's uid \(getuid()); navd will not take it over: remove it or choose another --socket")
            }
            if socketAnswers(path) {
                throw StartupError(description: "another navd is already serving \(path); stop it first or choose another path with --socket")
            }
            logger.info("replacing stale socket file", metadata: ["navd.socket": "\(path)"])
            unlink(path)
        }
        let l = PipeListener(loop: loop)
        do {
            try l.bind(path: path, mode: 0o600)
            try l.listen { [unowned self] listener in self.accept(listener) }
        } catch {
            l.close()
            throw StartupError(description: "cannot listen on \(path): \(error.message)")
        }
        listener = l
        let f = Check(loop: loop)
        f.start { [unowned self] in self.flushAll() }
        flusher = f
        let sweep = Timer(loop: loop)
        sweep.unref()
        let every = max(10, min(1_000, config.messageTimeoutMs / 4))
        sweep.start(milliseconds: every, repeat: every) { [unowned self] in self.sweepPartialMessages() }
        sweeper = sweep
        for sig in [SIGTERM, SIGINT, SIGHUP] {
            let s = Signal(loop: loop)
            s.start(signal: sig) { [unowned self] signum in
                if signum == SIGHUP {
                    self.onHangup?()
                } else {
                    self.logger.info("signal received, shutting down", metadata: ["navd.signal": "\(signum)"])
                    self.shutdown()
                }
            }
            signals.append(s)
        }
    }

    /// Makes (or checks) the 0700 directory of the default socket: it must be a real directory owned by
    /// navd's uid that nobody else may enter, or another user could place a socket of their own there.
    private func preparePrivateDirectory(_ dir: String) throws {
        if mkdir(dir, 0o700) != 0 && errno != EEXIST {
            throw StartupError(description: "cannot create \(dir) for the socket: \(String(cString: strerror(errno))); choose another --socket")
        }
        var st = stat()
        guard lstat(dir, &st) == 0 else {
            throw StartupError(description: "cannot inspect \(dir): \(String(cString: strerror(errno))); choose another --socket")
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == getuid(), st.st_mode & 0o077 == 0 else {
            throw StartupError(description: "\(dir) is not a private directory of uid \(getuid()) (it is a symbolic link, belongs to uid \(st.st_uid) or is open to others, mode \(String(st.st_mode & 0o777, radix: 8))); navd will not put its socket there: remove it or choose another --socket")
        }
    }

    /// Runs the loop until shutdown completes. Returns whether every handle was released.
    @discardableResult
    public func run() -> Bool {
        loop.run()
        return loop.close()
    }

    /// Tries to connect to an existing socket file, running the loop until the attempt resolves.
    private func socketAnswers(_ path: String) -> Bool {
        var answered = false
        var done = false
        let probe = PipeStream.connect(loop: loop, path: path) { s, err in
            answered = (err == nil)
            done = true
            s.close()
        }
        _ = probe
        while !done { loop.runOnce(wait: true) }
        loop.runOnce(wait: false)
        return answered
    }

    /// Stops accepting, flushes replies, closes every connection and removes the socket file.
    public func shutdown() {
        guard !isShuttingDown else { return }
        isShuttingDown = true
        listener?.close()
        listener = nil
        unlink(config.socketPath)
        flushAll()
        for s in signals { s.close() }
        signals = []
        onShutdown?()
        for c in Array(connections.values) { c.closeAfterFlush() }
        if connections.isEmpty { finishShutdown() }
    }

    /// Runs once at the beginning of shutdown (other components close their handles).
    var onShutdown: (() -> Void)?

    /// Set when navd stopped because of a fault (it could not save its state), not because it was
    /// asked to: the process then exits with a non-zero status so that a supervisor restarts it.
    public private(set) var failure: String?

    private var shutdownFinished = false

    private func finishShutdown() {
        guard !shutdownFinished else { return }
        shutdownFinished = true
        do { try store.flush(graph: graph) } catch {
            if failure == nil { failure = "cannot write the state file: \(error)" }
        }
        store.close()
        store = EphemeralStore()
        flusher?.close()
        flusher = nil
        sweeper?.close()
        sweeper = nil
        inputIdle?.close()
        inputIdle = nil
        readyInput.removeAll()
        // Method handlers hold the server strongly: end that cycle.
        methods.removeAll()
        if drainingStreams.isEmpty { loop.stop() }
    }

    // MARK: Closing streams

    /// Streams of closed connections still handing their last output to the kernel, each with the
    /// timer that closes it if its client never reads that output.
    private var drainingStreams: [ObjectIdentifier: (stream: PipeStream, timer: Timer)] = [:]

    /// How long a closed connection's last output may wait for its client to read it: 500 ms while
    /// navd shuts down (clients that never read must not hold the exit back), else 5 s.
    var drainTimeoutMs: UInt64 { isShuttingDown ? 500 : 5_000 }

    /// Shuts `stream` down after its queued writes, closing it outright if they are not read in time.
    func drain(_ stream: PipeStream) {
        let id = ObjectIdentifier(stream)
        let timer = Timer(loop: loop)
        drainingStreams[id] = (stream, timer)
        timer.start(milliseconds: drainTimeoutMs) { [unowned self] in
            stream.close { [unowned self] in self.streamClosed(id) }
        }
        stream.shutdownAndClose { [unowned self] in self.streamClosed(id) }
    }

    private func streamClosed(_ id: ObjectIdentifier) {
        guard let entry = drainingStreams.removeValue(forKey: id) else { return }
        entry.timer.close()
        if shutdownFinished && drainingStreams.isEmpty { loop.stop() }
    }

    // MARK: Connections

    private func accept(_ listener: PipeListener) {
        guard let stream = try? listener.accept() else { return }
        if connections.count >= config.maxConnections {
            stats.connectionsRefused += 1
            logger.warning("refusing a connection: --max-connections reached",
                           metadata: ["navd.limit": "\(config.maxConnections)"])
            var w = JSONWriter()
            RPCEncoder.error(id: .null, error: RPCError(
                code: -32600, kind: "tooManyConnections",
                message: "navd already serves \(config.maxConnections) connections (the --max-connections limit); try again later"),
                into: &w)
            w.raw(UInt8(ascii: "\n"))
            stream.write(w.bytes)
            drain(stream)
            return
        }
        let c = Connection(id: nextConnectionId, server: self, stream: stream)
        nextConnectionId += 1
        c.roles = policy.roles(uid: c.peer?.uid, token: nil)
        connections[c.id] = c
        stats.connectionsAccepted += 1
        c.start()
    }

    func connectionClosed(_ c: Connection) {
        connections[c.id] = nil
        if isShuttingDown && connections.isEmpty { finishShutdown() }
    }

    func nextOutboundId() -> Int {
        outboundCounter += 1
        return outboundCounter
    }

    /// Whether replies must wait for the end of the iteration: commits not yet in the state file.
    var holdsReplies: Bool { store.hasPendingWrites }

    private func flushAll() {
        if !readyInput.isEmpty { resumeReadyInput() }
        // Commits reach the state file before any reply or notification of this iteration leaves.
        if store.hasPendingWrites {
            do { try store.flush(graph: graph) } catch {
                logger.critical("cannot write the state file; stopping so that nothing unsaved is acknowledged", metadata: ["navd.error": "\(error)"])
                failure = "cannot write the state file: \(error)"
                for c in Array(connections.values) { c.close(reason: "navd cannot save its state") }
                dirty.removeAll()
                shutdown()
                return
            }
        }
        if !dirty.isEmpty {
            let batch = dirty
            dirty.removeAll(keepingCapacity: true)
            // Connections with replies first, then those that only have notifications: a requester
            // gets its answers (and can send its next requests) while the notifications are written.
            for c in batch where c.hasOwnOutput { c.flush() }
            for c in batch { c.flush() }
        }
        // Every connection that referred to the log was dirty and has just been flushed.
        broadcastLog.removeAll(keepingAtMost: 1 << 20)
    }

    // MARK: Held input and output limits

    /// Connections whose held input is handled in the next iteration (see ``Connection/holdsInput``).
    private var readyInput: [Connection] = []
    /// Keeps the loop from waiting in poll while held input is ready to be handled.
    private var inputIdle: Idle?

    /// A connection holds input: it is handled next iteration if the connection's output is below
    /// its mark (or a batch waits for its next slice); otherwise when its output drains.
    func inputHeld(_ c: Connection) {
        guard !c.queuedForInput, !c.isClosed, c.pendingBatch != nil || c.unsentBytes <= c.pauseMark else { return }
        c.queuedForInput = true
        readyInput.append(c)
        if inputIdle == nil {
            let idle = Idle(loop: loop)
            idle.start()
            inputIdle = idle
        }
    }

    private func resumeReadyInput() {
        let ready = readyInput
        readyInput.removeAll()
        for c in ready {
            c.queuedForInput = false
            c.resumeInput()
        }
        if readyInput.isEmpty, let idle = inputIdle {
            idle.close()
            inputIdle = nil
        }
    }

    /// Connections whose stream holds output the kernel has not taken (clients reading slowly).
    private var backlogged: [ObjectIdentifier: Connection] = [:]

    /// `c` has output queued in its stream: if all clients together hold more than
    /// `--max-total-output`, those holding the most are disconnected until they hold less.
    func outputQueued(_ c: Connection) {
        backlogged[ObjectIdentifier(c)] = c
        var total = backlogged.values.reduce(0) { $0 + $1.unsentBytes }
        while total > config.maxTotalOutput, let worst = backlogged.values.max(by: { $0.unsentBytes < $1.unsentBytes }) {
            total -= worst.unsentBytes
            backlogged[ObjectIdentifier(worst)] = nil
            logger.warning("disconnecting the client holding the most unsent output: all clients together passed --max-total-output",
                           metadata: ["navd.client": "\(worst.id)", "navd.limit": "\(config.maxTotalOutput)"])
            worst.overflow()
        }
    }

    func outputDrained(_ c: Connection) { backlogged[ObjectIdentifier(c)] = nil }

    /// Disconnects clients that left part of a message unsent for longer than `--message-timeout`.
    private func sweepPartialMessages() {
        let now = loop.now
        for c in Array(connections.values) where c.partialSince != 0 && now - c.partialSince >= config.messageTimeoutMs {
            logger.info("closing a connection that left part of a message unsent", metadata: ["navd.client": "\(c.id)"])
            var w = JSONWriter()
            RPCEncoder.error(id: .null, error: .invalidRequest(
                "part of a message waited \(formatMs(config.messageTimeoutMs)) for its rest (the --message-timeout limit); end every message with a newline, or send the Content-Length bytes you announced; the connection will close",
                kind: "messageTimeout", data: ["limit": .int(Int(config.messageTimeoutMs))]), into: &w)
            c.sendFramed(w.bytes, c.lastFraming)
            c.closeAfterFlush()
        }
    }

    private var sweeper: Timer?


    // MARK: Messages

    func handleMessage(_ body: UnsafeRawBufferPointer, framing: Framing, from c: Connection) {
        let message: JSONView
        do {
            // A message in the read buffer is followed by its padding: parsed in place.
            message = try parser.view(body, padded: EventLoop.readPadding >= JSONParser.padding && loop.isInReadBuffer(body))
        } catch {
            let e: RPCError
            switch error.kind {
            case .empty: e = .parseError("empty message: send one JSON-RPC object or batch per line", kind: "emptyMessage")
            case .invalidUTF8: e = .parseError("the message is not valid UTF-8", kind: "invalidUTF8")
            case .tooDeep:
                e = .invalidRequest("JSON nested deeper than \(config.maxDepth) levels (the limit)", kind: "tooDeep",
                                    data: ["limit": .int(config.maxDepth)])
            case .syntax: e = .parseError("invalid JSON: \(error.detail)")
            }
            stats.errors += 1
            var w = JSONWriter()
            RPCEncoder.error(id: .null, error: e, into: &w)
            c.sendFramed(w.bytes, framing)
            return
        }
        if message.isArray {
            handleBatch(message, body: body, framing: framing, from: c)
            return
        }
        if let r = RPCMessage.request(message) {
            dispatch(r, from: c, framing: framing, batch: nil, slot: 0)
            return
        }
        switch RPCMessage.decode(message) {
        case .request(let r):
            dispatch(r, from: c, framing: framing, batch: nil, slot: 0)
        case .response(let r):
            c.receivedResponse(r)
        case .invalid(let f):
            answerInvalid(f, to: c, framing: framing, batch: nil, slot: 0)
        }
    }

    /// How long one loop iteration may spend on one batch's requests; the rest wait for the next
    /// iteration, so that a large batch does not stall other clients.
    static let batchSliceNs: UInt64 = 2_000_000

    private func handleBatch(_ message: JSONView, body: UnsafeRawBufferPointer, framing: Framing, from c: Connection) {
        let items = message.elements
        let count = items.count
        guard count > 0 else {
            answerInvalid(RPCDecodeFailure(id: .null, error: .invalidRequest("empty batch: a batch must hold at least one request", kind: "emptyBatch")),
                          to: c, framing: framing, batch: nil, slot: 0)
            return
        }
        guard count <= config.maxBatch else {
            answerInvalid(RPCDecodeFailure(id: .null, error: .limitExceeded(
                "a batch of \(count) requests; a batch may hold at most \(config.maxBatch) (the --max-batch limit): send it in smaller batches",
                limit: "--max-batch", max: config.maxBatch)), to: c, framing: framing, batch: nil, slot: 0)
            return
        }
        let batch = BatchCollector(connection: c, framing: framing, count: count)
        for item in items {
            switch RPCMessage.decode(item) {
            case .request(let r) where r.id != nil: batch.outstanding += 1
            case .invalid: batch.outstanding += 1
            default: break
            }
        }
        batch.outstanding += 1  // held until every item is dispatched
        let next = dispatchSlice(items, from: 0, batch: batch, framing: framing, connection: c)
        if next < count && !c.isClosed {
            // The rest waits for the next iterations; the connection holds its other input meanwhile.
            c.pendingBatch = PendingBatch(body: Array(body), framing: framing, collector: batch, next: next)
            return
        }
        batch.outstanding -= 1
        batch.finishIfDone()
    }

    /// Dispatches `items` from `start` for at most ``batchSliceNs``; returns the index of the first
    /// item left.
    private func dispatchSlice(_ items: [JSONView], from start: Int, batch: BatchCollector, framing: Framing,
                               connection c: Connection) -> Int {
        let began = EventLoop.hrtime
        var i = start
        while i < items.count && !c.isClosed {
            switch RPCMessage.decode(items[i]) {
            case .request(let r):
                dispatch(r, from: c, framing: framing, batch: r.id == nil ? nil : batch, slot: i)
            case .response(let r):
                c.receivedResponse(r)
            case .invalid(let f):
                answerInvalid(f, to: c, framing: framing, batch: batch, slot: i)
            }
            i += 1
            if EventLoop.hrtime - began > Server.batchSliceNs { break }
        }
        return i
    }

    /// Dispatches the next slice of `c`'s pending batch (parsed again from its saved text).
    func continueBatch(_ c: Connection) {
        guard let p = c.pendingBatch else { return }
        let message: JSONView
        do {
            message = try p.body.withUnsafeBytes { raw throws(JSONParseError) in try parser.view(raw, padded: false) }
        } catch {
            c.pendingBatch = nil  // it was parsed once already, so this cannot happen
            return
        }
        let items = message.elements
        p.next = dispatchSlice(items, from: p.next, batch: p.collector, framing: p.framing, connection: c)
        if p.next >= items.count || c.isClosed {
            c.pendingBatch = nil
            p.collector.outstanding -= 1
            p.collector.finishIfDone()
        }
    }

    /// Answers a message that is not valid JSON-RPC (it was never a request the connection awaits).
    private func answerInvalid(_ f: RPCDecodeFailure, to c: Connection, framing: Framing, batch: BatchCollector?, slot: Int) {
        stats.errors += 1
        if let batch {
            batch.fill(slot) { RPCEncoder.error(id: f.id, error: f.error, into: &$0) }
        } else {
            c.send(framing) { RPCEncoder.error(id: f.id, error: f.error, into: &$0) }
        }
    }

    @inline(__always)
    private func dispatch(_ request: RPCRequest, from c: Connection, framing: Framing, batch: BatchCollector?, slot: Int) {
        if request.id == nil { stats.notificationsIn += 1 } else {
            stats.requests += 1
            c.requestDispatched()
        }
        let call = Call(connection: c, id: request.id, methodName: request.methodName, params: request.params,
                        framing: framing, batch: batch, slot: slot)
        guard let handler = methods.handler(named: request.methodName.stringBytes) else {
            call.fail(.methodNotFound(request.method))
            return
        }
        if let p = request.params, !p.isObject && !(p.isArray && p.count == 0) {
            call.fail(.invalidParams("navd's methods take named parameters: \"params\" must be an object"))
            return
        }
        handler(call)
    }

    // MARK: Broadcast

    /// Sends one notification to `targets`, encoding it once per framing in use: the line goes into the
    /// broadcast log and every newline subscriber refers to it; the Content-Length form is built when
    /// first needed and copied.
    func broadcast(method: String, params: JSONValue, to targets: some Sequence<Connection>) {
        broadcast(method: method, encodable: params, to: ContiguousArray(targets))
    }

    func broadcast(method: String, encodable params: some JSONEncodable, to targets: ContiguousArray<Connection>) {
        let log = broadcastLog
        let start = log.count
        var w = JSONWriter(into: log)
        RPCEncoder.notification(method: method, encodable: params, into: &w)
        let bodyEnd = log.count
        log.append(UInt8(ascii: "\n"))
        let end = log.count
        var headed: ByteBuffer?
        var sent = 0
        // The array holds every target for the whole loop: no retain and release per subscriber.
        targets.withUnsafeBufferPointer { list in
          for i in list.indices {
            Unmanaged.passUnretained(list[i])._withUnsafeGuaranteedRef { c in
            guard !c.isClosed else { return }
            switch c.lastFraming {
            case .newline:
                c.sendShared(start, end)
            case .contentLength:
                if headed == nil {
                    let h = ByteBuffer(capacity: bodyEnd - start + 32)
                    log.withUnsafeBytes { Framing.append(UnsafeRawBufferPointer(rebasing: $0[start..<bodyEnd]), .contentLength, to: h) }
                    headed = h
                }
                headed!.withUnsafeBytes { c.sendRaw($0) }
            }
            sent += 1
            }
          }
        }
        stats.notificationsSent += sent
    }
}
