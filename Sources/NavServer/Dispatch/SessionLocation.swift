import JSON
import RPC

/// Where a session a request names is, as a store several nodes share knows it (cluster mode).
public enum SessionWhereabouts {
    /// Nowhere: the method answers as it does on one node (`unknownTarget`; `session.open` makes it).
    case absent
    /// Another live node owns it (the `moved` error to answer).
    case moved(RPCError)
    /// The store or a takeover must be waited for (the `unavailable` error to answer).
    case unavailable(RPCError)
    /// The directory does not know it yet (another node may have just made it): ask the store, then
    /// dispatch the request.
    case unknown
}

/// Where dispatch found the session a call names (cluster mode).
enum CallRoute {
    /// Here, or nowhere (the method answers as on one node): its handler runs.
    case here
    /// Another node's, which the method watches from here: its remote handler runs
    /// (``MethodTable/Entry/remoteHandler``).
    case remote
    /// Answered already (`moved`, `unavailable`), or to run again once looked up.
    case answered
}

extension Dispatcher {
    /// Cluster mode: how to dispatch `call`. The session it names (``MethodTable/SessionUse``) is
    /// here, or nowhere: its handler. Another node's that the method may watch from here: its
    /// remote handler. Another node's otherwise, or one that cannot be reached now: answered
    /// `moved` or `unavailable`. One the directory does not know: looked up first, then dispatched
    /// (once: `lookedUp`).
    func locate(_ call: Call, _ entry: MethodTable.Entry, in pg: any SessionDirectory, lookedUp: Bool) -> CallRoute {
        let params: [String], watches: Bool
        switch entry.spec.session {
        case .none: return .here
        case .acts(let p): (params, watches) = (p, false)
        case .watches(let p): (params, watches) = (p, true)
        }
        var name = "main"
        for p in params {
            guard let v = call.param(p), !v.isNull else { continue }
            guard let s = v.stringValue else { return .here }  // the method says what is wrong with it
            name = s
            break
        }
        if sessions?.serves(name) == true { return .here }
        switch pg.whereabouts(name) {
        case .absent: return .here
        case .moved(let e):
            if watches && entry.remoteHandler != nil { return .remote }
            call.fail(e)
        case .unavailable(let e): call.fail(e)
        case .unknown:
            if lookedUp { return .here }
            if retryAfterLookUp(call, entry, name) { return .answered }
            call.fail(RPCError(.unavailable, "session \"\(name)\" is being looked up in PostgreSQL; retry in a moment",
                               data: ["session": .string(name), "retryAfterMs": .int(10)]))
        }
        return .answered
    }

    /// Runs `call` again once the store has looked `name` up: the request, made into text again (its
    /// bytes are gone when the handler returns), is read anew and answered then (into its slot
    /// when it came in a batch). False when it cannot wait (too many wait, or PostgreSQL cannot be
    /// reached).
    func retryAfterLookUp(_ call: Call, _ entry: MethodTable.Entry, _ name: String) -> Bool {
        guard let pg = directory, let id = call.id else { return false }
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
        let c = call.peer, framing = call.framing, batch = call.batch?.object, slot = call.slot, startedAt = transport.readStartedAt
        return pg.lookUp(name) { [unowned self] in
            guard !c.isClosed else { return }
            text.withUnsafeBytes { raw in
                guard let message = try? parser.view(raw, padded: false), case .request(let r) = RPCMessage.decode(message) else { return }
                // Answered as if read now, in a read that began when the request was first read.
                settleAnswers()
                let now = transport.readStartedAt
                transport.readStartedAt = startedAt
                run(entry, Call(peer: c, id: r.id, methodName: r.methodName, params: r.params, framing: framing, batch: batch, slot: slot,
                              entry: entry), lookedUp: true)
                settleAnswers()
                transport.readStartedAt = now
            }
        }
    }
}
