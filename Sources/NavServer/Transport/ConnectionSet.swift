import JSON
import Logging
import RPC
import UV
import Unchecked
#if canImport(Glibc)
import Glibc
#endif

/// What the transport asks of the layer above it, for the whole set of connections. The layer above
/// (dispatch) implements it; the transport calls up only through it and ``ConnectionHandler``.
protocol ConnectionSetDelegate: AnyObject {
    /// A connection was accepted: the layer above gives it the handler of its messages.
    func accepted(_ c: Connection) -> any ConnectionHandler
    /// A connection closed (its handler heard it first).
    func closed(_ c: Connection)
    /// Whether replies must wait for the end of the iteration (changes not yet stored): a read that
    /// carried one request is then not answered at once.
    var repliesWait: Bool { get }
    /// Saves the commits waiting to be stored now, when the store can without waiting on the disk or
    /// another thread; answers whether replies may then leave at once.
    func saveCommitsNow() -> Bool
    /// The last stream of a closed connection is closed (it handed its output over, or its time ran out).
    func streamsClosed()
}

/// Every connection, and what is per loop iteration: connections with output to write, held input
/// ready to be handled, clients reading slowly, the broadcast log of this iteration's notifications,
/// the streams of closed connections still writing their last output. Knows nothing above it: what
/// a message means is its connection's handler's business.
final class ConnectionSet {
    let loop: EventLoop
    let logger: Logger
    let limits: TransportLimits
    var stats = TransportStats()
    /// When the read being handled began (``EventLoop/hrtime``): where a request's latency starts.
    /// The end of the last read or timed callback of the same poll when there was one (the loop
    /// read these bytes after it), else when the read's callback began.
    var readStartedAt: UInt64 = 0
    /// The layer above, set before the first connection: weak, as it holds this set (the server
    /// owns both; a strong reference made a cycle, which kept every stopped server's loop and
    /// connections alive in a process that makes several).
    weak var delegate: (any ConnectionSetDelegate)?
    /// Whether a reply may have to wait for the end of the iteration (``ConnectionSetDelegate/repliesWait``);
    /// false while the store writes nothing (`--ephemeral`), and then the delegate is not asked
    /// (asking takes a chain of loads through the layers above on every read).
    var repliesMayWait = true

    /// Whether replies must wait for the end of the iteration now (commits not yet saved).
    @inline(__always)
    var repliesWait: Bool { repliesMayWait && (delegate?.repliesWait ?? false) }

    /// Whether a reply may leave now: nothing waits to be stored, or the store saved it just now
    /// (``ConnectionSetDelegate/saveCommitsNow()``).
    @inline(__always)
    func repliesMayLeaveNow() -> Bool {
        guard repliesWait else { return true }
        // A few writes of the store per iteration: past them, the iteration's answers leave together
        // after its one write (a busy loop is better served by fewer, larger writes).
        guard savesThisIteration < ConnectionSet.savesPerIteration else { return false }
        savesThisIteration += 1
        return delegate?.saveCommitsNow() ?? false
    }
    /// How often this iteration asked the store to save at once for an answer (``repliesMayLeaveNow()``),
    /// whether or not it could; reset by ``flush()``.
    private var savesThisIteration = 0
    /// The most such asks per iteration.
    static let savesPerIteration = 4

    private(set) var connections: [Int: Connection] = [:]
    /// The numbers of connections in the order they connected (numbers only grow), for
    /// `client.list`'s pages (``page(after:limit:where:)``): closed ones stay listed until they are
    /// most of the list (``holes`` of them), then are swept out at once.
    private var order: [Int] = []
    private var holes = 0
    /// Open connections by the peer's uid (the uid's share of `--max-connections`).
    private(set) var byUid = UidCounts()
    private var nextId = 1
    /// Connections with output queued in this iteration.
    var dirty: ContiguousArray<Connection> = []
    /// The list ``flush()`` walks, kept empty between flushes: it trades places with ``dirty`` so that
    /// neither is copied nor allocated again.
    private var flushing: ContiguousArray<Connection> = []
    /// This iteration's notifications, each encoded and framed once; subscribers refer to ranges of it
    /// until they are flushed, then it is emptied.
    let broadcastLog = ByteBuffer(capacity: 4096)
    /// Set while output must not leave (a commit is being stored in the background): connections are
    /// not read, flushes keep their output.
    private(set) var outputHeld = false
    /// Set while navd stops: a closed connection's last output waits at most 500 ms for its reader.
    var isClosing = false
    /// Streams of closed connections still handing their last output to the kernel, each with the
    /// timer that closes it if its client never reads that output.
    private var drainingStreams: [ObjectIdentifier: (stream: any ClientStream, timer: Timer)] = [:]
    /// Connections whose held input is handled in the next iteration (see ``Connection/holdsInput``).
    private var readyInput: [Connection] = []
    /// Keeps the loop from waiting in poll while held input is ready to be handled.
    private var inputIdle: Idle?
    /// Connections whose stream holds output the kernel has not taken (clients reading slowly), with
    /// the unsent bytes each held when last counted.
    private var backlogged: [ObjectIdentifier: (connection: Connection, counted: Int)] = [:]
    /// The sum of the counted bytes: never less than what the backlogged hold now (a stream's queue
    /// grows only by a flush, which counts it again, and shrinks as the kernel takes it), so only a
    /// sum past `--max-total-output` needs an exact count; one flush costs the same however many
    /// clients are backlogged.
    private var backlogCounted = 0
    /// Connections whose decoder holds input across reads (an unfinished message, or messages held
    /// back), each with what it holds in ``Connection/inputCounted``…
    private var inputHolders: [ObjectIdentifier: Connection] = [:]
    /// …and their sum, held against `--max-total-input`.
    private(set) var inputHeld = 0
    private var sweeper: Timer?
    /// Connections whose client finished sending while answers were still due or subscriptions
    /// held (`echo … | socat`, then its `-t` timeout closing the socket): the kernel tells nothing
    /// more once their input ended, so they are asked every ``hangUpCheckMs`` whether the client
    /// closed its socket (or nothing more is owed to it).
    private var halfClosed: [ObjectIdentifier: Connection] = [:]
    private var hangUpCheck: Timer?
    /// How often half-closed connections are checked for a closed socket.
    static let hangUpCheckMs: UInt64 = 100

    init(loop: EventLoop, logger: Logger, limits: TransportLimits) {
        self.loop = loop
        self.logger = logger
        self.limits = limits
    }

    var isEmpty: Bool { connections.isEmpty }
    var count: Int { connections.count }
    var hasDrainingStreams: Bool { !drainingStreams.isEmpty }

    /// Starts the sweep of half-sent messages (`--message-timeout`).
    func start() {
        let sweep = Timer(loop: loop).labelled("half-sent messages swept (--message-timeout)")
        sweep.unref()
        let every = max(10, min(1_000, limits.messageTimeoutMs / 4))
        sweep.start(milliseconds: every, repeat: every) { [unowned self] in self.sweepPartialMessages() }
        sweeper = sweep
    }

    /// Releases the set's own handles (connections close by themselves).
    func stop() {
        sweeper?.close()
        sweeper = nil
        hangUpCheck?.close()
        hangUpCheck = nil
        halfClosed.removeAll()
        inputIdle?.close()
        inputIdle = nil
        readyInput.removeAll()
    }

    // MARK: Connections

    func accept(_ listener: PipeListener) {
        guard let stream = try? listener.accept() else { return }
        attach(stream)
    }

    /// Serves a client on `stream` (a socket navd accepted, or a ``MemoryStream`` in a test):
    /// refused with `tooManyConnections` past `--max-connections`, or past its uid's share of it
    /// (``FairShare``: one user alone may take all but the reserve kept for others).
    @discardableResult
    func attach(_ stream: any ClientStream) -> Connection? {
        let uid = stream.peerCredentials()?.uid ?? getuid()
        let verdict = limits.connections.verdict(for: uid, in: byUid)
        if verdict != .admitted {
            let refusal = limits.connections.refusal(verdict, uid: uid, in: byUid, what: "connections",
                                                     advice: "close connections you no longer use, or try again later", kind: .tooManyConnections).rpc
            stats.connectionsRefused += 1
            logger.warning("refusing a connection: \(refusal.data["limit"]?.stringValue ?? "") reached", metadata: ["navd.uid": "\(uid)", "navd.held": "\(byUid[uid])"])
            var w = JSONWriter()
            RPCEncoder.error(id: .null, error: refusal, into: &w)
            w.raw(UInt8(ascii: "\n"))
            w.bytes.withUnsafeBytes { stream.write(ByteView($0)) }
            drain(stream)
            return nil
        }
        byUid.add(uid)
        let c = Connection(id: nextId, owner: self, stream: stream)
        nextId += 1
        c.handler = delegate?.accepted(c)
        connections[c.id] = c
        order.append(c.id)
        stats.connectionsAccepted += 1
        c.start()
        return c
    }

    /// The connection `c` closed (``Connection/finishClose()``).
    func connectionClosed(_ c: Connection) {
        connections[c.id] = nil
        leftOrder()
        if c.inputCounted != 0 { inputCounted(c, 0) }
        halfClosed[ObjectIdentifier(c)] = nil
        outputDrained(c)
        let uid = c.credentials?.uid ?? getuid()
        byUid.remove(uid)
        delegate?.closed(c)
    }

    /// The most entries one page looks at past what it answers: a page for a client that sees
    /// few of many connections (its uid's) stops there and gives its cursor, as Redis's SCAN may
    /// answer fewer than asked, so that no page costs more than this whatever the connections.
    static let pageLooksAtMost = 4096

    /// Up to `limit` open connections that `include` admits, after number `after` in the order they
    /// connected, and the number to go on from while there may be more.
    func page(after: Int, limit: Int, where include: (Connection) -> Bool) -> (connections: [Connection], next: Int?) {
        var lo = 0, hi = order.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if order[mid] <= after { lo = mid + 1 } else { hi = mid }
        }
        var i = lo
        var found: [Connection] = []
        while i < order.count && found.count < limit && i - lo < limit + ConnectionSet.pageLooksAtMost {
            if let c = connections[order[i]], include(c) { found.append(c) }
            i += 1
        }
        return (found, i < order.count ? order[i - 1] : nil)
    }

    /// Counts the place a closed connection leaves in ``order``; sweeps the closed out once they are most of it.
    private func leftOrder() {
        holes += 1
        if holes > 1024 && holes > order.count - holes {
            order.removeAll { connections[$0] == nil }
            holes = 0
        }
    }

    /// Closes every connection at once (queued output is dropped).
    func closeAll(reason: String) {
        for c in Array(connections.values) { c.close(reason: reason) }
        dirty.removeAll()
    }

    /// Closes every connection once its queued output is written.
    func closeAllAfterFlush() {
        for c in Array(connections.values) { c.closeAfterFlush() }
    }

    // MARK: Output

    /// Handles the held input that is ready (the end of a loop iteration, before what it changes is
    /// stored and its answers are sent).
    func handleReadyInput() {
        if !readyInput.isEmpty && !outputHeld { resumeReadyInput() }
    }

    /// Hands every connection's queued output to its stream (the end of a loop iteration); nothing
    /// while output is held.
    func flush() {
        if outputHeld { return }
        savesThisIteration = 0
        if !dirty.isEmpty {
            swap(&flushing, &dirty)
            // Connections with replies first, then those that only have notifications: a requester
            // gets its answers (and can send its next requests) while the notifications are written.
            // (A flush may mark a connection dirty again: it joins the new list, not this one.)
            let batch = flushing
            batch.forEachUncounted { c in if c.hasOwnOutput { c.flush() } }
            batch.forEachUncounted { c in c.flush() }
            _ = consume batch
            flushing.removeAll(keepingCapacity: true)
        }
        // Every connection that referred to the log was dirty and has just been flushed.
        broadcastLog.removeAll(keepingAtMost: 1 << 20)
    }

    /// Until ``releaseOutput()``, nothing is read, handled or sent (a commit is being stored: what
    /// arrives meanwhile goes into the next one, and nothing that depends on it leaves before it).
    func holdOutput() {
        outputHeld = true
        for c in connections.values { c.gateInput() }
        inputIdle?.stop()
    }

    /// What waits to be sent depends on changes that were not stored: clients waiting for a reply are
    /// disconnected (they retry, keyed navigations safely); subscribers lose the notifications of
    /// versions that never were.
    /// Answers the ids of the connections kept open whose notifications were dropped (some may
    /// not have depended on the commit: the layer above sends them what they must know again).
    @discardableResult
    func dropHeldOutput() -> Set<Int> {
        let batch = dirty
        dirty.removeAll()
        var kept = Set<Int>()
        for c in batch {
            if c.hasOwnOutput {
                c.close(reason: "navd could not store the changes it was about to acknowledge")
            } else {
                c.dropSharedOutput()
                if !c.isClosed { kept.insert(c.id) }
            }
        }
        broadcastLog.removeAll(keepingAtMost: 1 << 20)
        return kept
    }

    /// Sends what waited, and reads again.
    func releaseOutput() {
        outputHeld = false
        flush()
        for c in Array(connections.values) { c.ungateInput() }
        inputIdle?.start()
    }

    // MARK: Held input and output limits

    /// A connection holds input: it is handled next iteration if the connection's output is below
    /// its mark (or the layer above holds work for its next slice); otherwise when its output drains.
    func inputHeld(_ c: Connection) {
        guard !c.queuedForInput, !c.isClosed, c.workHeld || c.unsentBytes <= limits.pauseMark else { return }
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

    /// `c` has output queued in its stream: if all clients together hold more than
    /// `--max-total-output`, those holding the most are disconnected until they hold less.
    func outputQueued(_ c: Connection) {
        let key = ObjectIdentifier(c), unsent = c.unsentBytes
        backlogCounted += unsent - (backlogged[key]?.counted ?? 0)
        backlogged[key] = (c, unsent)
        guard backlogCounted > limits.maxTotalOutput else { return }
        // The counts may be of bytes the kernel took since: count every backlogged client again.
        for (k, e) in backlogged { backlogged[k]!.counted = e.connection.unsentBytes }
        backlogCounted = backlogged.values.reduce(0) { $0 + $1.counted }
        while backlogCounted > limits.maxTotalOutput, let worst = backlogged.values.max(by: { $0.counted < $1.counted })?.connection {
            outputDrained(worst)
            logger.warning("disconnecting the client holding the most unsent output: all clients together passed --max-total-output",
                           metadata: ["navd.client": "\(worst.id)", "navd.limit": "\(limits.maxTotalOutput)"])
            worst.overflow()
        }
    }

    func outputDrained(_ c: Connection) {
        guard let e = backlogged.removeValue(forKey: ObjectIdentifier(c)) else { return }
        backlogCounted -= e.counted
    }

    /// `c`'s decoder holds `held` bytes now: past `--max-total-input` for all clients together, some
    /// are cut (``shedInput()``).
    func inputCounted(_ c: Connection, _ held: Int) {
        inputHeld += held - c.inputCounted
        c.inputCounted = held
        if held == 0 {
            inputHolders[ObjectIdentifier(c)] = nil
        } else {
            inputHolders[ObjectIdentifier(c)] = c
            if inputHeld > limits.maxTotalInput { shedInput() }
        }
    }

    /// All clients together hold more than `--max-total-input` of unfinished messages: the uid holding
    /// the most loses its connection holding the most, again (the uid holding the most asked anew each
    /// time) until all hold less than seven eighths of the limit. One uid alone may hold everything;
    /// when uids contend, the largest holder is cut first. Cutting to below the limit by an eighth
    /// means a client adding a few bytes a read does not start this walk at every read.
    private func shedInput() {
        let target = limits.maxTotalInput - limits.maxTotalInput / 8
        var byUid: [UInt32: (held: Int, connections: [Connection])] = [:]
        for c in inputHolders.values {
            let uid = c.credentials?.uid ?? getuid()
            byUid[uid, default: (0, [])].held += c.inputCounted
            byUid[uid]!.connections.append(c)
        }
        for uid in byUid.keys { byUid[uid]!.connections.sort { $0.inputCounted < $1.inputCounted } }  // the largest last
        while inputHeld > target, let uid = byUid.max(by: { $0.value.held < $1.value.held })?.key {
            guard let c = byUid[uid]!.connections.popLast() else { byUid[uid] = nil; continue }
            byUid[uid]!.held -= c.inputCounted
            c.cutForInput(limit: limits.maxTotalInput)
        }
    }

    /// Disconnects clients that left part of a message unsent for longer than `--message-timeout`.
    func sweepPartialMessages() {
        let now = loop.now
        for c in Array(connections.values) where c.partialSince != 0 && now - c.partialSince >= limits.messageTimeoutMs {
            logger.info("closing a connection that left part of a message unsent", metadata: ["navd.client": "\(c.id)"])
            c.close(telling: .invalidRequest(
                "part of a message waited \(formatMs(limits.messageTimeoutMs)) for its rest (the --message-timeout limit); end every message with a newline, or send the Content-Length bytes you announced; the connection will close",
                kind: .messageTimeout, data: ["limit": .int(Int(limits.messageTimeoutMs))]))
        }
    }

    /// Connections whose client finished sending that still owe it answers or notifications.
    var halfClosedCount: Int { halfClosed.count }

    /// Watches `c`, whose client finished sending while answers were due, until it closes: a client
    /// that then closes its socket is gone, and is closed at the next check.
    func watchForHangUp(_ c: Connection) {
        halfClosed[ObjectIdentifier(c)] = c
        guard hangUpCheck == nil else { return }
        let t = Timer(loop: loop).labelled("half-closed connections checked for hang-ups")
        t.unref()
        t.start(milliseconds: Self.hangUpCheckMs, repeat: Self.hangUpCheckMs) { [unowned self] in self.checkHalfClosed() }
        hangUpCheck = t
    }

    private func checkHalfClosed() {
        for c in halfClosed.values {
            switch c.halfClosedEnd {
            case .gone: c.close(reason: nil)  // drops it from `halfClosed`
            case .done:
                halfClosed[ObjectIdentifier(c)] = nil
                c.closeAfterFlush()
            case nil: break
            }
        }
        if halfClosed.isEmpty {
            hangUpCheck?.close()
            hangUpCheck = nil
        }
    }

    // MARK: Closing streams

    /// How long a closed connection's last output may wait for its client to read it: 500 ms while
    /// navd shuts down (clients that never read must not hold the exit back), else 5 s.
    private var drainTimeoutMs: UInt64 { isClosing ? 500 : 5_000 }

    /// Shuts `stream` down after its queued writes, closing it outright if they are not read in time.
    func drain(_ stream: any ClientStream) {
        let id = ObjectIdentifier(stream)
        let timer = Timer(loop: loop).labelled("a closing connection's output timed out")
        drainingStreams[id] = (stream, timer)
        timer.start(milliseconds: drainTimeoutMs) { [unowned self] in
            stream.close { [unowned self] in self.streamClosed(id) }
        }
        stream.shutdownAndClose { [unowned self] in self.streamClosed(id) }
    }

    private func streamClosed(_ id: ObjectIdentifier) {
        guard let entry = drainingStreams.removeValue(forKey: id) else { return }
        entry.timer.close()
        if drainingStreams.isEmpty { delegate?.streamsClosed() }
    }
}
