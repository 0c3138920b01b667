import JSON
import Logging
import NavGraph
import NavigationCore
import RPC
import UV
import Unchecked

/// What dispatch asks of the server that owns it: whether replies wait for changes to be stored,
/// and the news of connections closing (for the shutdown).
protocol DispatchHost: AnyObject {
    var repliesWait: Bool { get }
    func saveCommitsNow() -> Bool
    func connectionClosed()
    func streamsClosed()
}

/// The limits dispatch keeps to (``ServerConfiguration`` makes them).
struct DispatchLimits: Sendable {
    /// The deepest JSON nesting a message may have (`--max-depth`).
    var maxDepth = 64
    /// The most requests one batch may hold (`--max-batch`).
    var maxBatch = 1_000
    /// The most unread output a client may hold (`--max-output`): no answer may be larger.
    var maxOutput = 8 << 20
    /// Reads that hold the loop this long or longer are kept for `slowlog.get` (`--slowlog-threshold`)…
    var slowlogThresholdNs: UInt64 = 10_000_000
    /// …the newest this many (`--slowlog-max-len`; 0: none).
    var slowlogMaxLen = 128
}

/// Dispatch's counters, for `stats`.
struct DispatchStats {
    var requests = 0
    var requestsAnswered = 0
    var notificationsIn = 0
    var errors = 0
}

/// From a message to a method and back: each connection's messages (through its ``Peer``) parsed
/// in place, a batch spread over loop iterations, each request located (cluster mode) and handed to
/// the method the table declares, its answer written back. The layer between the transport (which
/// knows no meaning) and the navigator and methods (which know no connection).
final class Dispatcher {
    let loop: EventLoop
    let logger: Logger
    let limits: DispatchLimits
    let parser: JSONParser
    /// Method name → what it declared and its handler.
    let methods = MethodTable()
    let transport: ConnectionSet
    /// Members of every session's audience together (``Recipients``), for `stats`.
    let audienceTally = AudienceTally()
    var stats = DispatchStats()
    /// Every client, by connection id.
    private(set) var peers: [Int: Peer] = [:]
    /// Roles per uid and per token; changing it recomputes every client's roles.
    var policy = Policy() {
        didSet {
            for p in peers.values { p.grant(policy.roles(uid: p.uid, token: p.token)) }
        }
    }
    /// Why the store cannot write now (cluster mode): while set, changing methods are refused.
    var refusingChanges: String?
    /// `--max-data-bytes`: past it, methods that may add data are refused.
    var dataCeiling = DataCeiling(max: .max, data: DataPool())
    /// The store as several nodes share it (cluster mode): where sessions not served here are.
    var directory: (any SessionDirectory)?
    /// The sessions served here (the navigator's), where each call's session is found.
    weak var sessions: (any SessionSource)?
    /// What decoding params reads besides them; replaced with the graph.
    var decoding: DecodingContext
    /// The server, which owns the dispatcher: weak, as a strong reference made a cycle, which kept
    /// a stopped server alive in a process that makes several (tests, the session fuzz target).
    weak var host: (any DispatchHost)?
    private var outboundCounter = 0
    /// Methods answered during the read being handled, whose latencies are taken when it ends.
    /// The first `unsettledCount` of these. Uncounted: the method table keeps its entries for the
    /// server's life. Emptied at the end of each read by setting the count (releasing counted
    /// references, or `removeAll`, cost more than the settling itself).
    private var unsettled: [Unretained<MethodTable.Entry>] = []
    private var unsettledCount = 0

    /// The reads that held the loop longest (`slowlog.get`).
    let slowlog: SlowLog
    /// ``SlowLog/effectiveThresholdNs``, read at the end of every read.
    private let slowThresholdNs: UInt64

    init(loop: EventLoop, logger: Logger, limits: DispatchLimits, transport: ConnectionSet, decoding: DecodingContext) {
        slowlog = SlowLog(thresholdNs: limits.slowlogThresholdNs, maxLen: limits.slowlogMaxLen)
        slowThresholdNs = slowlog.effectiveThresholdNs
        self.decoding = decoding
        self.loop = loop
        self.logger = logger
        self.limits = limits
        self.parser = JSONParser(maxDepth: limits.maxDepth)
        self.transport = transport
    }

    func nextOutboundId() -> Int {
        outboundCounter += 1
        return outboundCounter
    }

    /// Requests navd sent its clients that they have not answered.
    var outboundCount: Int { peers.values.reduce(0) { $0 + $1.outbound.count } }

    func peerClosed(_ p: Peer) { peers[p.id] = nil }

    // MARK: Messages

    func handleMessage(_ body: ByteView, framing: Framing, from c: Peer) {
        // A message in the read buffer is followed by its padding: parsed in place.
        let padded = EventLoop.readPadding >= JSONParser.padding && loop.isInReadBuffer(body)
        if let r = RPCMessage.scanRequest(body, padded: padded, parser: parser) {
            dispatch(r, from: c, framing: framing, batch: nil, slot: 0)
            return
        }
        let message: JSONView
        do {
            message = try parser.view(body, padded: padded)
        } catch {
            let e: RPCError
            switch error.kind {
            case .empty:
                e = .parseError(framing.isContentLength ? "empty message: the Content-Length body holds no JSON; send one JSON-RPC object or batch in it"
                                                        : "empty message: send one JSON-RPC object or batch per line", kind: .emptyMessage)
            case .invalidUTF8: e = .parseError("the message is not valid UTF-8", kind: .invalidUTF8)
            case .tooDeep:
                e = .invalidRequest("JSON nested deeper than \(limits.maxDepth) levels (the --max-depth limit); nest objects and arrays at most \(limits.maxDepth) deep, counting the message itself", kind: .tooDeep,
                                    data: ["limit": .int(limits.maxDepth)])
            case .syntax:
                let at = error.location.map { l -> JSONObject in ["offset": .int(l.offset), "line": .int(l.line), "column": .int(l.column)] }
                e = .parseError("invalid JSON: \(error.detail)", data: at ?? [:])
            }
            stats.errors += 1
            var w = JSONWriter()
            RPCEncoder.error(id: .null, error: e, into: &w)
            c.connection.sendFramed(w.bytes, framing)
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

    func handleBatch(_ message: JSONView, body: ByteView, framing: Framing, from c: Peer) {
        let items = message.elements
        let count = items.count
        guard count > 0 else {
            answerInvalid(RPCDecodeFailure(id: .null, error: .invalidRequest("empty batch: a batch must hold at least one request", kind: .emptyBatch)),
                          to: c, framing: framing, batch: nil, slot: 0)
            return
        }
        guard count <= limits.maxBatch else {
            answerInvalid(RPCDecodeFailure(id: .null, error: .limitExceeded(
                "a batch of \(count) requests; a batch may hold at most \(limits.maxBatch) (the --max-batch limit): send it in smaller batches",
                limit: "--max-batch", max: limits.maxBatch)), to: c, framing: framing, batch: nil, slot: 0)
            return
        }
        let batch = BatchCollector(peer: c, framing: framing, count: count)
        for item in items {
            switch RPCMessage.decode(item) {
            case .request(let r) where r.id != nil: batch.outstanding += 1
            case .invalid: batch.outstanding += 1
            default: break
            }
        }
        batch.outstanding += 1  // held until every item is dispatched
        let next = dispatchSlice(items, from: 0, batch: batch, framing: framing, peer: c)
        if next < count && !c.isClosed {
            // The rest waits for the next iterations; the connection holds its other input meanwhile.
            c.pendingBatch = PendingBatch(body: Array(body), framing: framing, collector: batch, next: next)
            return
        }
        batch.outstanding -= 1
        batch.finishIfDone()
    }

    /// Dispatches `items` from `start` for at most ``batchSliceNs``; returns the index of the first
    /// item left. The slice also ends where the next item, if it cost what the last one did, would
    /// take it past its time (items of 2 ms each made slices of 4 ms).
    func dispatchSlice(_ items: [JSONView], from start: Int, batch: BatchCollector, framing: Framing,
                       peer c: Peer) -> Int {
        let began = EventLoop.hrtime
        var itemBegan = began
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
            let now = EventLoop.hrtime
            if (now &- began) &+ (now &- itemBegan) > Dispatcher.batchSliceNs { break }
            itemBegan = now
        }
        return i
    }

    /// Dispatches the next slice of `c`'s pending batch (parsed again from its saved text).
    func continueBatch(_ c: Peer) {
        guard let p = c.pendingBatch else { return }
        let message: JSONView
        do {
            message = try p.body.withUnsafeBytes { raw throws(JSONParseError) in try parser.view(raw, padded: false) }
        } catch {
            c.pendingBatch = nil  // it was parsed once already, so this cannot happen
            return
        }
        let items = message.elements
        p.next = dispatchSlice(items, from: p.next, batch: p.collector, framing: p.framing, peer: c)
        if p.next >= items.count || c.isClosed {
            c.pendingBatch = nil
            p.collector.outstanding -= 1
            p.collector.finishIfDone()
        }
    }

    /// Answers a message that is not valid JSON-RPC (it was never a request the connection awaits).
    func answerInvalid(_ f: RPCDecodeFailure, to c: Peer, framing: Framing, batch: BatchCollector?, slot: Int) {
        stats.errors += 1
        if let batch {
            batch.fill(slot, { RPCEncoder.error(id: f.id, error: f.error, into: &$0) }, instead: { RPCEncoder.error(id: f.id, error: $0, into: &$1) })
        } else {
            c.connection.send(framing) { RPCEncoder.error(id: f.id, error: f.error, into: &$0) }
        }
    }

    @inline(__always)
    func dispatch(_ request: RPCRequest, from c: Peer, framing: Framing, batch: BatchCollector?, slot: Int) {
        if request.id == nil { stats.notificationsIn += 1 } else {
            stats.requests += 1
            c.connection.requestDispatched()
        }
        guard let found = methods.entry(named: request.methodName.stringBytes) else {
            methodNotFound(request, from: c, framing: framing, batch: batch, slot: slot)
            return
        }
        found.with { entry in
            let call = Call(peer: c, id: request.id, methodName: request.methodName, params: request.params,
                            framing: framing, batch: batch, slot: slot, entry: entry)
            if let p = request.params, !p.isObject && !(p.isArray && p.count == 0) {
                call.fail(.invalidParams("navd's methods take named parameters: \"params\" must be an object"))
                return
            }
            run(entry, call, lookedUp: false)
        }
    }

    /// Notes an answer given while its read is handled (its latency is taken when the read ends).
    @inline(__always)
    func answeredInRead(_ entry: MethodTable.Entry) {
        if entry.counts.unsettled == 0 {
            if unsettledCount < unsettled.count {
                unsettled[unsettledCount] = Unretained(entry)
            } else {
                unsettled.append(Unretained(entry))
            }
            unsettledCount += 1
        }
        entry.counts.unsettled += 1
    }

    /// Puts the answers given during the read that just ended in their methods' latency buckets:
    /// each took from when the read began until now. `readBy`: the client whose read it was, when
    /// the time is the loop's (not a retried request's, which waited elsewhere): a read that took
    /// `--slowlog-threshold` or more goes to the slow log.
    func settleAnswers(readBy peer: Peer? = nil) {
        guard unsettledCount > 0 else {
            // A read that left no mark of its end: the next read of the poll reads the clock.
            if let peer { settleQuietRead(peer) } else { loop.clockMark = 0 }
            return
        }
        let now = EventLoop.hrtime
        loop.clockMark = now
        let ns = now &- transport.readStartedAt
        if ns >= slowThresholdNs, let peer { noteSlowRead(ns, by: peer, now: now) }
        responsesInRead = 0
        for i in 0..<unsettledCount {
            unsettled[i].with { e in
                e.counts.answered(e.counts.unsettled, after: ns)
                e.counts.unsettled = 0
            }
        }
        unsettledCount = 0
    }

    /// Replies of clients to navd's own requests (a provider's `precondition.evaluate` answer) read
    /// in the read being handled: what a slow read that answered nothing did.
    var responsesInRead = 0

    /// A read that answered nothing in its time (notifications, replies to navd's requests, part
    /// of a message): kept in the slow log too when it took as long, as a provider's reply that
    /// lets many waiting navigations commit may.
    @inline(never)
    private func settleQuietRead(_ peer: Peer) {
        defer { responsesInRead = 0 }
        guard slowThresholdNs != .max else {
            loop.clockMark = 0
            return
        }
        let now = EventLoop.hrtime
        loop.clockMark = now
        let ns = now &- transport.readStartedAt
        if ns >= slowThresholdNs { noteSlowRead(ns, by: peer, now: now) }
    }

    /// Keeps a read that held the loop `ns` (``SlowLog``), before its answers are settled (their
    /// methods' unsettled counts say what it answered); logs it, at most a line a second.
    @inline(never)
    private func noteSlowRead(_ ns: UInt64, by peer: Peer, now: UInt64) {
        var methods: [(name: String, count: Int)] = []
        var answers = 0
        for i in 0..<unsettledCount {
            unsettled[i].with { e in
                methods.append((e.spec.name, e.counts.unsettled))
                answers += e.counts.unsettled
            }
        }
        methods.sort { $0.count > $1.count || ($0.count == $1.count && $0.name < $1.name) }
        let named = Array(methods.prefix(SlowLog.methodsMost))
        let read = SlowLog.Read(connection: peer.id, client: peer.clientName, uid: peer.uid, answers: answers,
                                responses: responsesInRead, methods: named)
        let (log, leftOut) = slowlog.record({ id, at in SlowLog.Entry(id: id, at: at, ns: ns, read: read, kind: "read", what: nil) }, now: now)
        guard log else { return }
        let what = named.map { "\($0.name) x\($0.count)" }.joined(separator: ", ") + (methods.count > named.count ? ", …" : "")
        let replies = responsesInRead > 0 ? ", \(responsesInRead) replies to navd's requests" : ""
        logger.notice("a read held the loop for \(Double(ns / 1_000) / 1_000) ms (every other client waited): \(answers) answers\(what.isEmpty ? "" : " (\(what))")\(replies)\(leftOut > 0 ? "; \(leftOut) more slow reads and callbacks since the last such line" : ""); slowlog.get lists them",
                      metadata: ["navd.client": "\(peer.id)", "navd.name": "\(peer.clientName ?? "-")"])
    }

    /// Keeps work outside reads that held the loop `ns` (``SlowLog``): a callback of a handle
    /// labelled `label`, or the end of an iteration; logs it, at most a line a second.
    @inline(never)
    func noteStall(_ label: Handle.Label, ns: UInt64) {
        let now = EventLoop.hrtime
        let (log, leftOut) = slowlog.record({ id, at in SlowLog.Entry(id: id, at: at, ns: ns, read: nil, kind: label.kind, what: label.what) }, now: now)
        guard log else { return }
        logger.notice("\(label.what) (\(label.kind)) held the loop for \(Double(ns / 1_000) / 1_000) ms (every client waited)\(leftOut > 0 ? "; \(leftOut) more slow reads and callbacks since the last such line" : ""); slowlog.get lists them")
    }

    /// Answers a request for a method navd does not have (counted among errors, not by method: the
    /// names a client makes up are not kept).
    @inline(never)
    func methodNotFound(_ request: RPCRequest, from c: Peer, framing: Framing, batch: BatchCollector?, slot: Int) {
        guard let id = request.id else { return }
        stats.errors += 1
        let error = RPCError.methodNotFound(request.method, likely: methods.likely(request.method))
        if let batch {
            batch.fill(slot, { RPCEncoder.error(id: id, error: error, into: &$0) }, instead: { RPCEncoder.error(id: id, error: $0, into: &$1) })
        } else {
            c.connection.send(framing) { RPCEncoder.error(id: id, error: error, into: &$0) }
        }
        c.connection.requestAnswered()
    }

    /// Hands `call` to its method, unless its client holds none of the roles the method declares,
    /// the method changes sessions while the store cannot write, it may add data past
    /// `--max-data-bytes`, or (cluster mode) the session it names is elsewhere or must be looked
    /// up first.
    @inline(__always)
    func run(_ entry: MethodTable.Entry, _ call: Call, lookedUp: Bool) {
        if entry.isRestricted, !entry.spec.roles.contains(where: call.peer.roles.contains) {
            call.fail(Policy.denied(entry.spec, to: call.peer))
            return
        }
        if entry.spec.changes, let why = refusingChanges {
            call.fail(RPCError(.unavailable, "navd cannot store changes now (\(why)); nothing was done. Reads (tree, subscribe, context.get) still work; retry after data.retryAfterMs",
                               data: ["retryAfterMs": .int(250)]))
            return
        }
        if entry.spec.grows, dataCeiling.isNear, dataCeiling.refuses(call.peer.uid) {
            call.fail(dataCeiling.refusal(entry.spec.name, uid: call.peer.uid))
            return
        }
        if let pg = directory, entry.spec.session != .none {
            switch locate(call, entry, in: pg, lookedUp: lookedUp) {
            case .here: break
            case .remote: return entry.remoteHandler!(call)
            case .answered: return
            }
        }
        entry.handler(call)
    }
}

extension Dispatcher: ConnectionSetDelegate {
    func accepted(_ c: Connection) -> any ConnectionHandler {
        let p = Peer(connection: c, dispatcher: self, roles: policy.roles(uid: c.credentials?.uid, token: nil))
        peers[c.id] = p
        return p
    }

    func closed(_ c: Connection) { host?.connectionClosed() }

    var repliesWait: Bool { host?.repliesWait ?? false }

    func saveCommitsNow() -> Bool { host?.saveCommitsNow() ?? false }

    func streamsClosed() { host?.streamsClosed() }
}
