import JSON
import RPC
import UV

/// Requests navd sends a client (a provider's `precondition.evaluate`, `precondition.recover`):
/// each with a timer, answered once by the client's reply, a timeout, or the client going away.
extension Peer {
    // MARK: Requests from navd to the client

    /// Sends a request to the client; `completion` runs exactly once: with its reply, or with an error if
    /// the client answers with one, does not answer in `timeoutMs`, or disconnects. `released` runs
    /// once when the request is over for the client too: answered, timed out or the client gone, even
    /// after ``cancelRequest(_:)`` (a withdrawn request still occupies the client until then).
    @discardableResult
    func request(_ method: String, params: JSONValue, timeoutMs: UInt64, released: (() -> Void)? = nil,
                 completion: @escaping (Result<JSONValue, RPCError>) -> Void) -> Int {
        guard !isClosed else {
            completion(.failure(RPCError(.clientGone, "the client is not connected")))
            released?()
            return -1
        }
        let rid = dispatcher.nextOutboundId()
        let timer = Timer(loop: dispatcher.loop).labelled("a request to a client timed out")
        outbound[rid] = OutboundRequest(method: method, completion: completion, released: released, timer: timer)
        timer.start(milliseconds: timeoutMs) {
            self.completeOutbound(rid, .failure(RPCError(.timeout, "the client did not answer \(method) within \(timeoutMs) ms")))
        }
        var w = JSONWriter()
        RPCEncoder.request(id: .int(rid), method: method, params: params, into: &w)
        connection.sendFramed(w.bytes, connection.lastFraming)
        return rid
    }

    /// Withdraws a request: its completion will not run, and the client is told (`$/cancelRequest`).
    /// One with a `released` hook stays counted until the client answers it or its time is up.
    func cancelRequest(_ rid: Int) {
        guard var r = outbound[rid], r.completion != nil else { return }
        if r.released == nil {
            outbound[rid] = nil
            r.timer.close()
        } else {
            r.completion = nil
            outbound[rid] = r
        }
        var w = JSONWriter()
        RPCEncoder.notification(method: "$/cancelRequest", params: ["id": .int(rid)], into: &w)
        connection.sendFramed(w.bytes, connection.lastFraming)
    }

    var outboundCount: Int { outbound.count }

    func receivedResponse(_ response: RPCResponse) {
        dispatcher.responsesInRead += 1
        guard let rid = response.id.intValue, outbound[rid] != nil else {
            dispatcher.logger.debug("reply to an unknown request id", metadata: ["navd.client": "\(id)"])
            return
        }
        completeOutbound(rid, response.result)
    }

    func completeOutbound(_ rid: Int, _ result: Result<JSONValue, RPCError>) {
        guard let r = outbound.removeValue(forKey: rid) else { return }
        r.timer.close()
        r.completion?(result)
        r.released?()
    }
}

struct OutboundRequest {
    let method: String
    /// Nil once withdrawn (``Peer/cancelRequest(_:)``).
    var completion: ((Result<JSONValue, RPCError>) -> Void)?
    let released: (() -> Void)?
    let timer: Timer
}
