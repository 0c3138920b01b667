import JSON
import Logging
import NavGraph
import NavigationCore
import RPC
import UV
#if canImport(Glibc)
import Glibc
#endif

/// A message read from a connection: parsed in place, a batch spread over loop iterations, each
/// request dispatched to its method.
extension Server {
    // MARK: Messages

    func handleMessage(_ body: UnsafeRawBufferPointer, framing: Framing, from c: Connection) {
        let message: JSONView
        do {
            // A message in the read buffer is followed by its padding: parsed in place.
            message = try parser.view(body, padded: EventLoop.readPadding >= JSONParser.padding && loop.isInReadBuffer(body))
        } catch {
            let e: RPCError
            switch error.kind {
            case .empty: e = .parseError("empty message: send one JSON-RPC object or batch per line", kind: .emptyMessage)
            case .invalidUTF8: e = .parseError("the message is not valid UTF-8", kind: .invalidUTF8)
            case .tooDeep:
                e = .invalidRequest("JSON nested deeper than \(config.maxDepth) levels (the limit)", kind: .tooDeep,
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

    func handleBatch(_ message: JSONView, body: UnsafeRawBufferPointer, framing: Framing, from c: Connection) {
        let items = message.elements
        let count = items.count
        guard count > 0 else {
            answerInvalid(RPCDecodeFailure(id: .null, error: .invalidRequest("empty batch: a batch must hold at least one request", kind: .emptyBatch)),
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
    func dispatchSlice(_ items: [JSONView], from start: Int, batch: BatchCollector, framing: Framing,
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
    func answerInvalid(_ f: RPCDecodeFailure, to c: Connection, framing: Framing, batch: BatchCollector?, slot: Int) {
        stats.errors += 1
        if let batch {
            batch.fill(slot, { RPCEncoder.error(id: f.id, error: f.error, into: &$0) }, instead: { RPCEncoder.error(id: f.id, error: $0, into: &$1) })
        } else {
            c.send(framing) { RPCEncoder.error(id: f.id, error: f.error, into: &$0) }
        }
    }

    @inline(__always)
    func dispatch(_ request: RPCRequest, from c: Connection, framing: Framing, batch: BatchCollector?, slot: Int) {
        if request.id == nil { stats.notificationsIn += 1 } else {
            stats.requests += 1
            c.requestDispatched()
        }
        let call = Call(connection: c, id: request.id, methodName: request.methodName, params: request.params,
                        framing: framing, batch: batch, slot: slot)
        guard let entry = methods.entry(named: request.methodName.stringBytes) else {
            call.fail(.methodNotFound(request.method))
            return
        }
        if let p = request.params, !p.isObject && !(p.isArray && p.count == 0) {
            call.fail(.invalidParams("navd's methods take named parameters: \"params\" must be an object"))
            return
        }
        run(entry, call, lookedUp: false)
    }

    /// Hands `call` to its method, unless the method changes sessions while the store cannot write,
    /// or (cluster mode) the session it names is elsewhere or must be looked up first.
    @inline(__always)
    func run(_ entry: MethodTable.Entry, _ call: Call, lookedUp: Bool) {
        if entry.spec.changes, let why = refusingChanges {
            call.fail(RPCError(.unavailable, "navd cannot store changes now (\(why)); nothing was done. Reads (tree, subscribe, context.get) still work; retry after data.retryAfterMs",
                               data: ["retryAfterMs": .int(250)]))
            return
        }
        if let pg = sharedStore, entry.spec.session != .none, !locate(call, entry, in: pg, lookedUp: lookedUp) { return }
        entry.handler(call)
    }
}
