import JSON
import RPC

/// Collects the replies of one batch and sends them together, in request order, once all are in.
final class BatchCollector {
    let connection: Connection
    let framing: Framing
    /// Each reply's encoded message.
    var slots: [[UInt8]?]
    var outstanding: Int

    init(connection: Connection, framing: Framing, count: Int) {
        self.connection = connection
        self.framing = framing
        slots = Array(repeating: nil, count: count)
        outstanding = 0
    }

    func fill(_ index: Int, _ encode: (inout JSONWriter) -> Void) {
        var w = JSONWriter(capacity: 64)
        encode(&w)
        slots[index] = w.bytes
        outstanding -= 1
        finishIfDone()
    }

    func finishIfDone() {
        guard outstanding == 0 else { return }
        let replies = slots.compactMap { $0 }
        // A batch of notifications only gets no reply at all.
        guard !replies.isEmpty else { return }
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(replies.reduce(2) { $0 + $1.count + 1 })
        for (i, r) in replies.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: r)
        }
        out.append(UInt8(ascii: "]"))
        connection.sendFramed(out, framing)
    }
}

/// The way back to the client for one request. Share it freely (with a pending navigation, say):
/// it is one object per request, so passing it along costs one reference count, and only the first
/// answer counts. Notifications get a reply that sends nothing.
final class Reply {
    let connection: Connection
    let id: JSONValue?
    let framing: Framing
    let batch: BatchCollector?
    let slot: Int
    /// Whether the connection counts this request among those awaiting a reply.
    var counted = false
    private var answered = false

    init(connection: Connection, id: JSONValue?, framing: Framing, batch: BatchCollector?, slot: Int) {
        self.connection = connection
        self.id = id
        self.framing = framing
        self.batch = batch
        self.slot = slot
    }

    var expectsAnswer: Bool { id != nil }

    /// Answers with a value (what literals and trees read as).
    func succeed(_ result: JSONValue) { answer(result) }

    /// Answers with a result of a known shape, written straight into the connection's output.
    func succeed<R: JSONEncodable>(_ result: R) { answer(result) }

    /// Writes the reply into the connection's output (or the batch's slot).
    private func answer(_ result: some JSONEncodable) {
        guard let id, !answered else { return }
        answered = true
        if let batch {
            batch.fill(slot) { RPCEncoder.response(id: id, result: result, into: &$0) }
        } else {
            connection.send(framing) { RPCEncoder.response(id: id, result: result, into: &$0) }
        }
        connection.server.stats.requestsAnswered += 1
        if counted { connection.requestAnswered() }
    }

    func fail(_ error: RPCError) {
        guard let id, !answered else { return }
        answered = true
        if let batch {
            batch.fill(slot) { RPCEncoder.error(id: id, error: error, into: &$0) }
        } else {
            connection.send(framing) { RPCEncoder.error(id: id, error: error, into: &$0) }
        }
        connection.server.stats.errors += 1
        if counted { connection.requestAnswered() }
    }

    func finish(_ result: Result<some JSONEncodable, RPCError>) {
        switch result {
        case .success(let v): answer(v)
        case .failure(let e): fail(e)
        }
    }
}

/// One incoming call as a method handler sees it. `params` (an object, an empty array or nil) is read
/// in place from the parser's buffers: handlers read it before they return (``Params``), and keep
/// copies (`JSONValue`, `String`) of what they need later.
struct Call {
    let connection: Connection
    let methodName: JSONView
    let params: JSONView?
    let reply: Reply

    var method: String { methodName.string ?? "" }

    /// The param `name` as a value, or nil when absent.
    func param(_ name: String) -> JSONValue? { params?.member(name)?.value }
}
