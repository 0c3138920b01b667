import JSON
import RPC
import UV
import Unchecked

/// A batch whose requests are dispatched a slice per loop iteration: its text (parsed again for
/// each slice) and where the next slice starts.
final class PendingBatch {
    let body: [UInt8]
    let framing: Framing
    let collector: BatchCollector
    var next: Int

    init(body: [UInt8], framing: Framing, collector: BatchCollector, next: Int) {
        self.body = body
        self.framing = framing
        self.collector = collector
        self.next = next
    }
}

/// Collects the replies of one batch and sends them together, in request order, once all are in.
/// The replies it holds count as the client's unsent output (`--max-output`).
final class BatchCollector {
    let peer: Peer
    let framing: Framing
    /// Each reply's encoded message.
    var slots: [[UInt8]?]
    var outstanding: Int
    /// The most an error reply standing in for a left-out answer takes (its message and an id).
    static let errorRoom = 640
    /// Bytes of the replies collected so far (errors standing in for those left out aside).
    private var bytes = 0

    init(peer: Peer, framing: Framing, count: Int) {
        self.peer = peer
        self.framing = framing
        slots = Array(repeating: nil, count: count)
        outstanding = 0
    }

    /// Keeps reply `index`: the error `instead` writes when the batch's replies would pass
    /// `--max-output` with it (the batch is answered whole, each answer that does not fit by an
    /// error). Answers the size of the reply as `encode` wrote it (past `--max-output`: left out).
    @discardableResult
    func fill(_ index: Int, method: MethodTable.Entry? = nil, _ encode: (inout JSONWriter) -> Void, instead: (RPCError, inout JSONWriter) -> Void) -> Int {
        var w = JSONWriter(capacity: 64)
        encode(&w)
        var size = w.buffer.count
        // Room is kept for an error in every slot, so that the whole batch's answer fits.
        let maxOutput = peer.dispatcher.limits.maxOutput
        if bytes + size > maxOutput - slots.count * BatchCollector.errorRoom {
            // Left out: the error stands in (a few hundred bytes, at most --max-batch of them).
            w = JSONWriter(capacity: 256)
            instead(peer.tooLarge(size, inBatch: true, method: method?.spec), &w)
            size = maxOutput + 1
        } else {
            bytes += size
        }
        slots[index] = w.bytes
        outstanding -= 1
        if bytes + peer.connection.unsentBytes > maxOutput && !peer.connection.isClosed {
            peer.connection.overflow()
            return size
        }
        finishIfDone()
        return size
    }

    func finishIfDone() {
        guard outstanding == 0 else { return }
        let replies = slots.compactMap { $0 }
        // A batch of notifications only gets no reply at all.
        guard !replies.isEmpty else { return }
        let size = replies.reduce(1) { $0 + $1.count + 1 }  // brackets and commas: n + 1
        // Written once, into the connection's output, where a message in a scratch array first
        // copied the whole answer twice (megabytes for a large batch, while every client waited).
        peer.connection.sendFramed(size: size, framing) { out in
            out.append(UInt8(ascii: "["))
            for (i, r) in replies.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                r.withUnsafeBytes { out.append(contentsOf: $0) }
            }
            out.append(UInt8(ascii: "]"))
        }
    }
}

/// The way back to the client for an answer that comes after the method's handler returned (a
/// navigation waiting on preconditions, a keyed duplicate joining it): it keeps an owned copy of
/// the request's id. Share it freely: it is one object per request, and only the first answer counts.
final class Reply: Answer {
    let peer: Peer
    let id: JSONValue?
    let framing: Framing
    let batch: BatchCollector?
    let slot: Int
    let entry: MethodTable.Entry
    let startedAt: UInt64
    private var answered = false

    init(peer: Peer, id: JSONValue?, framing: Framing, batch: BatchCollector?, slot: Int, entry: MethodTable.Entry, startedAt: UInt64) {
        self.peer = peer
        self.id = id
        self.framing = framing
        self.batch = batch
        self.slot = slot
        self.entry = entry
        self.startedAt = startedAt
    }

    /// Answers with a value (what literals and trees read as).
    func succeed(_ result: JSONValue) { answer(result) }

    /// Answers with a result of a known shape, written straight into the connection's output.
    func succeed<R: JSONEncodable>(_ result: R) { answer(result) }

    private func answer(_ result: some JSONEncodable) {
        guard let id, !answered else { return }
        answered = true
        peer.deliver(framing, batch: batch.map(Unretained.init), slot: slot, isError: false, entry: entry, startedAt: startedAt,
                           { RPCEncoder.response(id: id, result: result, into: &$0) },
                           instead: { RPCEncoder.error(id: id, error: $0, into: &$1) })
    }

    func fail(_ error: RPCError) {
        guard let id, !answered else { return }
        answered = true
        peer.deliver(framing, batch: batch.map(Unretained.init), slot: slot, isError: true, entry: entry, startedAt: startedAt,
                           { RPCEncoder.error(id: id, error: error, into: &$0) },
                           instead: { RPCEncoder.error(id: id, error: $0, into: &$1) })
    }

}

/// One incoming call as a method handler sees it, read in place from the parser's buffers: the
/// handler reads its params before it returns (``Params``) and keeps copies (`JSONValue`, `String`)
/// of what it needs later. A handler answers exactly once: now (``succeed(_:)``, ``fail(_:)``), or
/// later through the ``Reply`` that ``deferred()`` makes. A notification (no id) is answered by
/// nothing: its answers send nothing.
///
/// Made of views and three references, none counted: the client that asked and the method called
/// outlive the handler's run (the read being handled holds the client; the server's method table,
/// the method), and so does a batch (its dispatcher holds it). A call therefore lives only while
/// its handler runs: whatever answers later keeps the counted ``Reply`` that ``deferred()`` makes,
/// and whatever keeps the client keeps ``peer`` (a counted reference once read), never the call.
struct Call: Responder {
    private let lentPeer: Unretained<Peer>
    /// The client that asked (the navigator sees it as a ``Client``).
    var peer: Peer { lentPeer.object }
    var client: Peer { peer }
    /// The request's id as given, or nil for a notification.
    let id: JSONView?
    let methodName: JSONView
    /// An object, an empty array, or nil.
    let params: JSONView?
    let framing: Framing
    /// The batch the call belongs to (most calls have none), not counted: whoever dispatches the
    /// call holds it until the handler returns; ``reply()`` takes a counted reference.
    let batch: Unretained<BatchCollector>?
    let slot: Int
    private let lentEntry: Unretained<MethodTable.Entry>
    /// The method called, whose counts its answer adds to.
    var entry: MethodTable.Entry { lentEntry.object }

    init(peer: Peer, id: JSONView?, methodName: JSONView, params: JSONView?, framing: Framing, batch: BatchCollector?, slot: Int,
         entry: MethodTable.Entry) {
        lentPeer = Unretained(peer)
        self.id = id
        self.methodName = methodName
        self.params = params
        self.framing = framing
        self.batch = batch.map(Unretained.init)
        self.slot = slot
        lentEntry = Unretained(entry)
    }

    var method: String { methodName.string ?? "" }

    /// The param `name` as a value, or nil when absent.
    func param(_ name: String) -> JSONValue? { params?.member(name)?.value }

    /// Answers with a value (what literals and trees read as).
    func succeed(_ result: JSONValue) { answer(result) }

    /// Answers with a result of a known shape, written straight into the connection's output.
    func succeed<R: JSONEncodable>(_ result: R) { answer(result) }

    @inline(__always)
    private func answer(_ result: some JSONEncodable) {
        guard let id else { return }
        lent { peer, entry in
            peer.deliver(framing, batch: batch, slot: slot, isError: false, entry: entry, startedAt: nil,
                         { RPCEncoder.response(id: id, result: result, into: &$0) },
                         instead: { RPCEncoder.error(id: id, error: $0, into: &$1) })
        }
    }

    func fail(_ error: RPCError) {
        guard let id else { return }
        lent { peer, entry in
            peer.deliver(framing, batch: batch, slot: slot, isError: true, entry: entry, startedAt: nil,
                         { RPCEncoder.error(id: id, error: error, into: &$0) },
                         instead: { RPCEncoder.error(id: id, error: $0, into: &$1) })
        }
    }

    @inline(__always)
    func withClient<T>(_ body: (Peer) -> T) -> T { lentPeer.with(body) }

    /// Runs `body` with the client and the method, counting no reference for the call.
    @inline(__always)
    func lent<R>(_ body: (Peer, MethodTable.Entry) -> R) -> R {
        lentPeer.with { p in lentEntry.with { e in body(p, e) } }
    }

    /// The way to answer after the handler returns; the call itself must then not be answered.
    func deferred() -> any Answer { reply() }

    /// ``deferred()`` as dispatch's own type.
    func reply() -> Reply {
        Reply(peer: peer, id: id?.value, framing: framing, batch: batch?.object, slot: slot, entry: entry,
              startedAt: peer.dispatcher.transport.readStartedAt)
    }
}

extension Peer {
    /// Sends one answer, encoded by `encode`: into its slot of `batch` when the request came in one,
    /// otherwise into the output; and counts it, in all and for its method (`entry`): its latency
    /// from `startedAt`, or (nil) from the read being handled, taken when that read ends. An answer
    /// larger than `--max-output` (what a client may hold unread) is replaced by the error
    /// `instead` writes, so that no answer disconnects the client that asked for it.
    @inline(__always)
    func deliver(_ framing: Framing, batch: Unretained<BatchCollector>?, slot: Int, isError: Bool, entry: MethodTable.Entry, startedAt: UInt64?,
                 _ encode: (inout JSONWriter) -> Void, instead: (RPCError, inout JSONWriter) -> Void) {
        let size = batch.map { $0.with { $0.fill(slot, method: entry, encode, instead: instead) } } ?? connection.send(framing, encode)
        let tooLarge = size > dispatcher.limits.maxOutput
        if tooLarge {
            replaced(size, framing, batched: batch != nil, method: entry, instead)
        } else if isError {
            dispatcher.stats.errors += 1
        } else {
            dispatcher.stats.requestsAnswered += 1
        }
        if isError || tooLarge { entry.counts.errors += 1 }
        if let startedAt {
            entry.counts.answered(after: EventLoop.hrtime &- startedAt)
        } else {
            dispatcher.answeredInRead(entry)
        }
        connection.requestAnswered()
    }

    /// An answer of `size` bytes, past `--max-output`, was left out: the error `instead` writes
    /// goes in its place (a batch's collector put it there already).
    @inline(never)
    private func replaced(_ size: Int, _ framing: Framing, batched: Bool, method: MethodTable.Entry, _ instead: (RPCError, inout JSONWriter) -> Void) {
        if !batched { connection.send(framing) { instead(tooLarge(size, method: method.spec), &$0) } }
        dispatcher.logger.info("an answer larger than --max-output was replaced by an error", metadata: ["navd.client": "\(id)", "navd.bytes": "\(size)"])
        dispatcher.stats.errors += 1
    }

    /// The error that takes the place of an answer of `size` bytes, past `--max-output`, with the
    /// way to ask `method` for less where it has one.
    /// A method that changes something was carried out all the same: only its answer is left out.
    /// `atLeast`: `size` is a bound found before the answer was written (none was).
    func tooLarge(_ size: Int, inBatch: Bool = false, atLeast: Bool = false, method: MethodTable.Spec? = nil) -> RPCError {
        let what = inBatch ? "with this answer (\(size) bytes) the batch's answers would be"
            : atLeast ? "the answer would be at least \(size) bytes," : "the answer is \(size) bytes,"
        let done = method?.changes == true ? " (the request was carried out: only its answer is left out)" : ""
        return .limitExceeded("\(what) more than a client may hold unread (the --max-output limit, \(dispatcher.limits.maxOutput))\(done); \(Self.lessOf(method?.name, inBatch: inBatch)), or ask whoever runs navd to raise --max-output",
                              limit: "--max-output", max: dispatcher.limits.maxOutput)
    }

    /// How to ask `method` for a smaller answer.
    static func lessOf(_ method: String?, inBatch: Bool) -> String {
        let batches = inBatch ? " (or send the batch's requests in smaller batches)" : ""
        switch method {
        case "context.get", "context.set": return "ask for the facts needed (context.get {facts: [names]})" + batches
        case "session.list", "client.list": return "ask for smaller pages (\(method!) {limit: N}, then {after: …})" + batches
        case "graph.describe", "graph.export", "rpc.discover", "coverage.report":
            return "this answer is as large as the graph itself" + (inBatch ? ": ask for it alone, outside the batch" : "")
        case "tree", "subscribe", "session.open":
            return "the session's tree is that large" + (inBatch ? ": ask for it alone, outside the batch" : "")
        default: return inBatch ? "send the batch's requests in smaller batches" : "ask for less"
        }
    }
}
