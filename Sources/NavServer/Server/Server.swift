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
    public let logger: Logger
    public let loop: EventLoop
    var listener: PipeListener?
    /// The listening socket a service manager passed (socket activation): served instead of
    /// binding ``socketPath``, and left in place at shutdown, where the manager keeps queueing
    /// clients until navd runs again.
    public var passedSocket: Systemd.PassedSocket?
    /// The service manager told of navd's state (`NOTIFY_SOCKET`): ready, reloading, stopping.
    public var notifier: Systemd.Notifier?
    /// Sends the service manager's watchdog its pings (`WATCHDOG_USEC`) from the loop: a loop that
    /// stops turning stops them, and the manager restarts navd.
    var watchdog: Timer?
    /// `--watch-graph`: the watch on the graph's directory (``watchGraph()``).
    var graphWatch: GraphWatch?
    /// Answers that depend on the graph alone (``graphAnswer(_:_:)``), written once for it.
    var graphAnswers = GraphAnswers()
    /// The backup of the state files being written (`state.backup`), if one is.
    var backup: StateBackup?
    var signals: [Signal] = []
    var flusher: Check?
    /// Forgets the loop's clock mark before each poll (``EventLoop/clockMark``).
    var markReset: Prepare?
    /// Coverage kept beside the state file (none with ephemeral state).
    var coverageFile: CoverageFile?
    /// Keeps the loop turning while the store has background work (``Store/hasBackgroundWork``).
    var storeWork: Idle?
    /// The connections (transport: bytes, framing, output, flow control).
    let transport: ConnectionSet
    /// From messages to methods and back; the navigator's publisher.
    let dispatcher: Dispatcher
    let startedAt = EventLoop.hrtime
    /// Method name → what it declared and its handler.
    var methods: MethodTable { dispatcher.methods }
    /// Serving, stopping or stopped (``ServerPhase``): asked by every callback.
    public private(set) var phase = ServerPhase.serving
    var isShuttingDown: Bool { !phase.isServing }
    /// Runs when SIGHUP arrives.
    public var onHangup: (() -> Void)?
    /// The navigation graph every navigation is checked against.
    public var graph: NavigationGraph { navigator.graph }
    /// Sessions, pending navigations, subscriptions, providers, and the navigation methods.
    var navigator: Navigator!
    /// Where sessions are kept (``EphemeralStore`` until a state file is used); told about every
    /// change, flushed once per loop iteration. The navigator holds it.
    var store: any Store {
        get { navigator.store }
        set {
            navigator.store = newValue
            transport.repliesMayWait = !newValue.writesNothing
        }
    }
    /// Why the store cannot write now (cluster mode): while set, changing methods are refused.
    var refusingChanges: String? {
        get { dispatcher.refusingChanges }
        set { dispatcher.refusingChanges = newValue }
    }
    /// Set while a shared store writes a commit in the background (``Store/beginFlush(graph:done:)``).
    var commitInFlight = false
    /// Loop turns the commits waiting to be written have gathered more (`--durability full`).
    var gatheredTurns = 0
    /// A write of the state file that failed inside a connection's read (``saveCommitsNow()``):
    /// navd stops at the end of the iteration (``flushAll()``), not in the middle of that read,
    /// whose callers still use the connection and the method table a stop takes apart.
    var stateFailedInRead: StateError?

    /// Keeps state in `path`: restores its sessions now, saves every commit from now on.
    /// With `repair`, a saved session that breaks a rule (a schema, a limit) is set aside in the
    /// file's `set_aside` table and logged, instead of stopping navd.
    public func useStateFile(_ path: String, durability: Durability, repair: Bool = false) throws(StateError) -> Int {
        let file = try LogStore(path: path, durability: durability, saved: SavedSessions(config), repair: repair,
                                compactAt: config.logCompactBytes, compactRatio: config.logCompactRatio)
        file.closeRetired = { [loop] in loop.closeInBackground($0) }
        file.makeSpare = { [loop] path, size, done in loop.zeroFileInBackground(path, size: size, done) }
        let restored = try use(file)
        keepCoverage(beside: path)
        for line in file.restoreReport { logger.info("state read", metadata: ["navd.state": "\(path)", "navd.read": "\(line)"]) }
        for line in file.restoreWarnings { logger.warning("state read with a warning", metadata: ["navd.state": "\(path)", "navd.warning": "\(line)"]) }
        for (name, reason) in file.snapshot.setAside {
            logger.warning("session set aside (--repair): it is kept in the state file's set_aside table and not served",
                           metadata: ["navd.session": "\(name)", "navd.reason": "\(reason)", "navd.state": "\(path)"])
        }
        return restored
    }

    /// Cluster mode: keeps sessions in `store`, shared with other nodes (NavCluster's
    /// `PostgresStore`); restores this node's sessions (and those of nodes whose lease expired)
    /// now. Call before ``start()``.
    public func useSharedStore(_ store: any SharedStore) throws(StateError) -> Int {
        store.events = self
        return try use(store)
    }

    /// The socket it serves (where other nodes send clients, in cluster mode).
    public var socketPath: String { config.socketPath }

    /// How stores read back what navd wrote, within this server's limits.
    public var savedSessions: SavedSessions { SavedSessions(config) }

    /// Restores the sessions `s` keeps and tells it every change from now on.
    func use(_ s: any Store) throws(StateError) -> Int {
        let sessions: [Session]
        do { sessions = try s.load(graph: graph) } catch {
            s.close()
            throw error
        }
        // Cluster mode is decided here, once: dispatch routes by the store's directory, the
        // navigator replicates through it; nothing else asks which kind of store it is.
        let shared = s as? any SharedStore
        dispatcher.directory = shared
        transport.repliesMayWait = !s.writesNothing
        return navigator.restore(sessions, from: s, placement: shared.map(Replicated.init) ?? OneNode())
    }
    /// Loads a graph from a directory (nil: the embedded example), for `graph.reload`.
    public var graphLoader: ((String?) -> (NavigationGraph?, Diagnostics))?
    /// Where the current graph came from (nil: the embedded example).
    public var graphPath: String?
    /// Counts reloads; sent in `graphReloaded`.
    var graphVersion = 1
    /// Roles per uid and per token. Setting it (SIGHUP) recomputes every open connection's roles.
    public var policy: Policy {
        get { dispatcher.policy }
        set { dispatcher.policy = newValue }
    }

    /// The policy file `policy` came from (`--policy`), for messages; nil: no policy, nobody holds a role.
    public var policyFile: String?
    /// Unknown tokens `hello` took from each uid, to slow guessing (``TokenGuesses``).
    var tokenGuesses = TokenGuesses()
    /// The OpenRPC document returned by `rpc.discover`, embedded in the binary.
    lazy var openRPCDocument: JSONValue = (try? JSONParser(maxDepth: 256).parse(EmbeddedProtocol.openRPC)) ?? .null

    public init(config: ServerConfiguration, graph: NavigationGraph, logger: Logger, loop: EventLoop = EventLoop()) {
        self.config = config
        self.logger = logger
        self.loop = loop
        transport = ConnectionSet(loop: loop, logger: logger, limits: config.transport)
        dispatcher = Dispatcher(loop: loop, logger: logger, limits: config.dispatch, transport: transport,
                                decoding: DecodingContext(graph: graph, limits: config.navigator))
        transport.delegate = dispatcher
        let navigator = Navigator(config: config.navigator, graph: graph, logger: logger, loop: loop, publisher: dispatcher)
        self.navigator = navigator
        dispatcher.sessions = navigator
        dispatcher.dataCeiling = DataCeiling(max: config.maxDataBytes, data: navigator.data)
        dispatcher.host = self
        transport.repliesMayWait = !navigator.store.writesNothing
        methods.registerAll(self)
    }

    /// Serves a client on `stream` (a test's ``MemoryStream``; sockets are accepted by the listener).
    func attach(_ stream: any ClientStream) {
        transport.attach(stream)
    }

    // MARK: Lifecycle

    /// Binds the socket (refusing a live one, replacing a stale one), or serves the one a service
    /// manager passed (``passedSocket``); installs signal handlers.
    public func start() throws {
        let l: PipeListener
        if let passed = passedSocket {
            let problem = { (e: UVError) in
                StartupError(description: "cannot serve the socket the service manager passed (\(passed.path), descriptor \(passed.descriptor)): \(e.message)")
            }
            do { l = try PipeListener(loop: loop, adopting: passed.descriptor) } catch { throw problem(error) }
            do { try l.listen(backlog: config.listenBacklog) { [unowned self] listener in self.transport.accept(listener) } } catch {
                l.close()
                throw problem(error)
            }
        } else {
            l = try bindSocket()
        }
        listener = l
        startServing()
        for sig in [SIGTERM, SIGINT, SIGHUP] {
            let s = Signal(loop: loop).labelled(sig == SIGHUP ? "SIGHUP: graph and policy reloaded" : sig == SIGTERM ? "SIGTERM: shutdown" : "SIGINT: shutdown")
            s.start(signal: sig) { [unowned self] signum in
                guard self.phase.isServing else { return }
                if signum == SIGHUP {
                    self.notifier?.send("RELOADING=1\nSTATUS=reloading the policy and the graph")
                    self.onHangup?()
                    self.notifier?.send("READY=1\nSTATUS=serving \(self.socketPath)")
                } else {
                    self.logger.info("signal received, shutting down", metadata: ["navd.signal": "\(signum)"])
                    self.stop(.signal(signum))
                }
            }
            signals.append(s)
        }
    }

    /// Binds ``socketPath`` and listens: a socket file left by a navd that is gone is replaced, one
    /// that answers is refused, and anything else at the path is left alone.
    private func bindSocket() throws -> PipeListener {
        let path = config.socketPath
        if let problem = ServerConfiguration.pathProblem(path, option: "--socket") { throw StartupError(description: problem) }
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
            try l.listen(backlog: config.listenBacklog) { [unowned self] listener in self.transport.accept(listener) }
        } catch {
            l.close()
            if error == .notFound {
                let dir = StateFiles.directory(of: path)
                throw StartupError(description: "cannot listen on \(path): the directory \(dir) does not exist; create it (mkdir -p \(dir)) or choose another --socket")
            }
            throw StartupError(description: "cannot listen on \(path): \(error.message)")
        }
        return l
    }

    /// Pings the service manager's watchdog every `milliseconds` from the loop (half its
    /// `WatchdogSec=`), until navd stops.
    public func startWatchdog(milliseconds: UInt64) {
        guard let notifier else { return }
        let t = Timer(loop: loop).labelled("service manager's watchdog pinged")
        t.start(milliseconds: milliseconds, repeat: milliseconds) { notifier.send("WATCHDOG=1") }
        watchdog = t
    }

    /// Starts what serves connections on the loop, however they arrive: the end-of-iteration
    /// flush and the sweep of half-sent messages. ``start()`` calls it; a test that attaches
    /// ``MemoryStream``s calls it alone.
    func startServing() {
        let log = dispatcher.slowlog
        // Work outside reads is timed while the threshold is above 0 (0 keeps every read that
        // answers: a trace of reads, not of every timer's tick and every iteration's end).
        if log.maxLen > 0 && log.thresholdNs > 0 {
            loop.stallWatch = StallWatch(thresholdNs: log.thresholdNs) { [unowned self] label, ns in
                self.dispatcher.noteStall(label, ns: ns)
            }
        }
        let f = Check(loop: loop)
        f.start(timed: false) { [unowned self] in self.flushAll() }
        flusher = f
        // A mark left by a callback before the poll (a timer's, a closed handle's) is not when a
        // read after the wait began: the first read of each poll reads the clock.
        let loop = self.loop
        let r = Prepare(loop: loop)
        r.start { loop.clockMark = 0 }
        markReset = r
        transport.start()
        startCoverageWrites()
    }

    /// Runs the loop until shutdown completes. Returns whether every handle was released.
    @discardableResult
    public func run() -> Bool {
        loop.run()
        return loop.close()
    }

    /// Tries to connect to an existing socket file, running the loop until the attempt resolves. A
    /// listener whose queue stays full for a second (EAGAIN: a navd too busy to accept) answers too.
    func socketAnswers(_ path: String) -> Bool {
        var answered = false
        var done = false
        let probe = PipeStream.connect(loop: loop, path: path, patience: 1_000) { s, err in
            answered = err == nil || err?.code == -EAGAIN
            done = true
            s.close()
        }
        _ = probe
        while !done { loop.runOnce(wait: true) }
        loop.runOnce(wait: false)
        return answered
    }

    /// Stops accepting, flushes replies, closes every connection and removes the socket file.
    public func shutdown() { stop(.asked) }

    /// The one way to stop. From `serving`: stop accepting, flush, close every connection after its
    /// output (at once on a fault: nothing unsaved may leave), and finish once no commit is being
    /// stored. While already stopping, a fault still counts (the exit status says so) and closes
    /// the connections left at once.
    func stop(_ cause: StopCause) {
        switch phase {
        case .serving:
            phase = .stopping(cause)
        case .stopping(let current):
            if cause.isFault && !current.isFault {
                phase = .stopping(cause)
                transport.closeAll(reason: "navd stopped: \(cause)")
                finishIfDone()
            }
            return
        case .stopped(let current):
            // The last flush failed after everything closed: the exit status must say so.
            if cause.isFault && !current.isFault { phase = .stopped(cause) }
            return
        }
        transport.isClosing = true
        notifier?.send("STOPPING=1\nSTATUS=stopping: \(cause)")
        listener?.close()
        listener = nil
        // A passed socket stays: its manager owns the file and queues clients for the next start.
        if passedSocket == nil { unlink(config.socketPath) }
        watchdog?.close()
        watchdog = nil
        stopWatchingGraph()
        if cause.isFault {
            transport.closeAll(reason: "navd stopped: \(cause)")
        } else {
            flushAll()
        }
        for s in signals { s.close() }
        signals = []
        transport.closeAllAfterFlush()
        finishIfDone()
    }

    /// Finishes stopping once every connection closed and no commit is being stored (its answer
    /// calls this again): the store is not closed under its own callback.
    func finishIfDone() {
        // A backup being copied finishes first: the store's close would write the file it copies.
        guard case .stopping = phase, transport.isEmpty, !commitInFlight, backup == nil else { return }
        finishShutdown()
    }

    /// Set when navd stopped because of a fault (it could not save its state, it lost its lease),
    /// not because it was asked to: the process then exits with a non-zero status so that a
    /// supervisor restarts it.
    public var failure: String? {
        guard let c = phase.cause, c.isFault else { return nil }
        return c.description
    }

    private func finishShutdown() {
        guard case .stopping(let cause) = phase else { return }
        phase = .stopped(cause)
        do { try store.flush(graph: graph) } catch {
            stop(.stateFileFailed("\(error)"))
        }
        // Closed, and kept until the server goes: the shutdown may have been asked from one of the
        // store's own callbacks (a lost lease), which must not find its store released under it.
        stopCoverageWrites()
        store.close()
        flusher?.close()
        flusher = nil
        markReset?.close()
        markReset = nil
        storeWork?.close()
        storeWork = nil
        transport.stop()
        // Method handlers hold the server strongly: end that cycle.
        methods.removeAll()
        if !transport.hasDrainingStreams { loop.stop() }
    }
}
