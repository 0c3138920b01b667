import JSON
import RPC

/// Collects the replies of one batch and sends them together, in request order, once all are in.
final class BatchCollector {
    let connection: Connection
    let framing: Framing
    var slots: [JSONValue?]
    var outstanding: Int

    init(connection: Connection, framing: Framing, count: Int) {
        self.connection = connection
        self.framing = framing
        slots = Array(repeating: nil, count: count)
        outstanding = 0
    }

    func fill(_ index: Int, _ message: JSONValue) {
        slots[index] = message
        outstanding -= 1
        finishIfDone()
    }

    func finishIfDone() {
        guard outstanding == 0 else { return }
        let replies = slots.compactMap { $0 }
        // A batch of notifications only gets no reply at all.
        guard !replies.isEmpty else { return }
        var w = JSONWriter(capacity: replies.count * 48)
        w.write(.array(replies))
        connection.sendFramed(w.bytes, framing)
    }
}

/// The way back to the client for one request. Copy it freely (into a pending navigation, say);
/// only the first answer counts. Notifications get a reply that sends nothing.
struct Reply {
    let connection: Connection
    let id: JSONValue?
    let framing: Framing
    let batch: BatchCollector?
    let slot: Int
    /// Whether the connection counts this request among those awaiting a reply.
    var counted = false

    var expectsAnswer: Bool { id != nil }

    func succeed(_ result: JSONValue) {
        guard let id else { return }
        if let batch {
            batch.fill(slot, .object(["jsonrpc": "2.0", "id": id, "result": result]))
        } else {
            connection.send(framing) { RPCEncoder.response(id: id, result: result, into: &$0) }
        }
        connection.server.stats.requestsAnswered += 1
        if counted { connection.requestAnswered() }
    }

    func fail(_ error: RPCError) {
        guard let id else { return }
        if let batch {
            batch.fill(slot, .object(["jsonrpc": "2.0", "id": id, "error": error.json]))
        } else {
            connection.send(framing) { RPCEncoder.error(id: id, error: error, into: &$0) }
        }
        connection.server.stats.errors += 1
        if counted { connection.requestAnswered() }
    }

    func finish(_ result: Result<JSONValue, RPCError>) {
        switch result {
        case .success(let v): succeed(v)
        case .failure(let e): fail(e)
        }
    }
}

/// One incoming call as a method handler sees it.
struct Call {
    let connection: Connection
    let method: String
    let params: JSONObject
    let reply: Reply
}
