import JSON
import RPC
import UV

/// `client.list`, declared in `Protocol/methods/client.list.json`: the connections open to navd,
/// a page at a time in the order they connected (``ConnectionSet/page(after:limit:where:)``), as
/// Redis's `CLIENT LIST`; its role, `admin`, is declared with it (it shows every client's peer and
/// the sessions it follows).
enum ClientListMethod: NavdMethod {
    /// The most connections one answer lists.
    static let pageMost = 1_000
    /// The most session names listed per connection (`subscriptions` counts them all).
    static let subscribedToMost = 16

    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.clientList, ClientListParam.self) { [server] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ClientListParam>(call)
                try p.acceptUnused(.session)
                let limit = try p.int(.limit) ?? pageMost
                guard (1...pageMost).contains(limit) else {
                    throw .invalidParams("`client.list`'s \"limit\" is \(limit); give 1 to \(pageMost) connections per page", data: ["param": "limit"])
                }
                let after = try p.int(.after) ?? 0
                guard after >= 0 else {
                    throw .invalidParams("`client.list`'s \"after\" is \(after), not a cursor; pass the \"next\" of the previous answer", data: ["param": "after"])
                }
                let caller = call.peer
                var include: (Connection) -> Bool = { _ in true }
                if let name = try p.string(.subscribedTo) {
                    guard server.navigator.sessions[name] != nil else {
                        throw RPCError(.unknownTarget, "`client.list`'s \"subscribedTo\" names no session: \"\(name.prefix(80))\" is not open here (session.list lists them)",
                                       data: ["param": "subscribedTo", "session": .string(name)])
                    }
                    include = { c in (c.handler as? Peer)?.subscriptions.contains(name) == true }
                }
                let page = server.transport.page(after: after, limit: limit, where: include)
                let now = EventLoop.hrtime
                var out: JSONObject = ["clients": .array(page.connections.map { entry($0, caller: caller, server: server, now: now) })]
                if let next = page.next { out["next"] = .int(next) }
                return .object(out)
            }
        }
    }

    private static func entry(_ c: Connection, caller: Peer, server: Server, now: UInt64) -> JSONValue {
        let peer = c.handler as? Peer
        let subscriptions = peer?.subscriptions ?? []
        var e: JSONObject = ["id": .int(c.id)]
        if let name = peer?.clientName { e["client"] = .string(name) }
        e["peer"] = c.credentials.map { p in ["pid": .int(Int(p.pid)), "uid": .int(Int(p.uid)), "gid": .int(Int(p.gid))] } ?? [:]
        e["roles"] = .array((peer?.roles ?? []).sorted().map { .string($0) })
        e["age"] = .int(Int((now &- c.openedAt) / 1_000_000_000))
        e["idle"] = .int(Int((now &- max(c.lastReadAt, c.openedAt)) / 1_000_000_000))
        e["subscriptions"] = .int(subscriptions.count)
        e["subscribedTo"] = .array(subscriptions.sorted().prefix(subscribedToMost).map { .string($0) })
        e["requests"] = .int(c.requests)
        e["awaiting"] = .int(c.awaiting)
        e["pending"] = .int(server.navigator.pendingByClient[c.id]?.count ?? 0)
        e["output"] = .int(c.unsentBytes)
        e["input"] = .int(c.inputCounted)
        e["notifications"] = .string(peer?.prefersCompact == true ? "compact" : "full")
        e["halfClosed"] = .bool(c.peerDone)
        if c === caller.connection { e["self"] = true }
        return .object(e)
    }
}
