import JSON
import RPC

extension RPCError {
    /// In `data` of an `unavailable` error a shared store gives for a session it must look up first:
    /// the request is handled again after the look-up (``Server/retryAfterLookUp(_:_:)``) and this
    /// error is never sent as it is.
    static let lookUpMarker = "\u{0}lookUp"
}

extension Server {
    /// Handles `call` again once the store has looked `name` up (cluster mode): the request, made
    /// into text again, is dispatched anew and answered then (into its slot when it came in a
    /// batch). False when it cannot wait (too many wait, or PostgreSQL cannot be reached).
    func retryAfterLookUp(_ call: Call, _ name: String) -> Bool {
        guard let pg = store.shared, let id = call.id else { return false }
        var w = JSONWriter(capacity: 256)
        w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
        w.write(id)
        w.raw(",\"method\":")
        w.write(call.methodName)
        if let p = call.params {
            w.raw(",\"params\":")
            w.write(p)
        }
        w.raw("}")
        let text = w.bytes
        // A batch's collector waits for this reply (its slot is filled by the retried call).
        let c = call.connection, framing = call.framing, batch = call.batchRef?.object, slot = call.slot
        return pg.lookUp(name) { [unowned self] in
            guard !c.isClosed else { return }
            text.withUnsafeBytes { raw in
                guard let message = try? parser.view(raw, padded: false), case .request(let r) = RPCMessage.decode(message),
                      let handler = methods.handler(named: r.methodName.stringBytes) else { return }
                handler(Call(connection: c, id: r.id, methodName: r.methodName, params: r.params, framing: framing, batch: batch, slot: slot))
            }
        }
    }
}
