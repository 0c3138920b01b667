import JSON
import NavGraph
import NavServer
import NavigationCore
import RPC

/// Where a session is: this node, another live node (`moved`), a node whose lease expired
/// (`unavailable` while it is taken over), or nowhere yet known (looked up in PostgreSQL).
extension PostgresStore {
    /// Why the node does not serve `name` (it holds no such session): it is another live node's
    /// (`moved`), or PostgreSQL or a takeover must be waited for (`unavailable`); nil: no such session.
    public func whereabouts(_ name: String) -> SessionWhereabouts {
        if !isUp {
            return .unavailable(RPCError(.unavailable, "navd node \(node) cannot reach PostgreSQL, where session \"\(name)\" is kept; retry in a moment",
                                         data: ["session": .string(name), "node": .string(node), "retryAfterMs": .int(250)]))
        }
        guard let owner = owners[name] else {
            // Another node may have made it a moment ago (its notification is on its way): unknown
            // until PostgreSQL was asked, then absent for a second.
            if let seen = absent[name], loop.now - seen < 1_000 { return .absent }
            return .unknown
        }
        if owner == node && isClosing(name) {
            return .unavailable(RPCError(.unavailable, "session \"\(name)\" is being closed on node \(node) (PostgreSQL has not stored the close yet); retry in a moment",
                                         data: ["session": .string(name), "node": .string(node), "retryAfterMs": .int(50)]))
        }
        if owner == node {
            reclaimStranded(name)
            return .unavailable(RPCError(.unavailable, "session \"\(name)\" is being read again from PostgreSQL on node \(node); retry in a moment",
                                         data: ["session": .string(name), "node": .string(node), "retryAfterMs": .int(100)]))
        }
        if let n = nodes[owner], n.until > loop.now {
            return .moved(RPCError(.moved, "session \"\(name)\" is owned by navd node \(owner), listening on \(n.socket); send the request there",
                                   data: ["session": .string(name), "node": .string(owner), "socket": .string(n.socket)]))
        }
        sweep()
        refreshOwner(name)
        return .unavailable(RPCError(.unavailable, "session \"\(name)\"'s owner, node \(owner), stopped renewing its lease; a node is taking the session over: retry in a moment",
                                     data: ["session": .string(name), "node": .string(owner), "retryAfterMs": .int(leaseMs / 3)]))
    }

    /// Reads the owner of `name` (a node learns of sessions others make through their notification;
    /// a request may come first), then runs `then`: the directory now knows it, or knows it is absent.
    public func lookUp(_ name: String, then: @escaping () -> Void) -> Bool {
        guard waitingLookUps < Self.maxLookUps, connection.isUp else { return false }
        waitingLookUps += 1
        if lookingUp[name] != nil {
            lookingUp[name]!.append(then)
            return true
        }
        lookingUp[name] = [then]
        connection.query(PostgresSchema.owner, [name]) { [unowned self] r in
            let waiting = lookingUp.removeValue(forKey: name) ?? []
            waitingLookUps -= waiting.count
            if case .success(let rows) = r {
                if let owner = rows.rows.first?[0] {
                    if owners[name] == nil { owners[name] = owner }
                } else {
                    if absent.count > 10_000 { absent = absent.filter { loop.now - $0.value < 1_000 } }
                    absent[name] = loop.now
                }
            } else {
                absent[name] = loop.now
            }
            for w in waiting { w() }
        }
        return true
    }

    /// Reads the owner of `name` again: the directory names a node whose lease expired, and if
    /// another node took the session over while this one missed its notification (a reconnection),
    /// only PostgreSQL knows.
    private func refreshOwner(_ name: String) {
        guard connection.isUp, refreshing.count < Self.maxLookUps, refreshing.insert(name).inserted else { return }
        connection.query(PostgresSchema.owner, [name]) { [unowned self] r in
            refreshing.remove(name)
            guard case .success(let rows) = r else { return }
            if let owner = rows.rows.first?[0] ?? nil {
                if owner != node { owners[name] = owner }
            } else if owners[name] != node {
                owners[name] = nil
            }
        }
    }

    /// Every session the node knows of (from PostgreSQL and the notifications since), by owner node.
    public var directory: [String: String] { owners }

    /// A session's row as it is now (for a subscriber on this node of a session another node owns).
    public func read(_ name: String, _ done: @escaping (Result<Session?, RPCError>) -> Void) {
        connection.query(PostgresSchema.readSession, [name]) { [unowned self] r in
            switch r {
            case .failure(let f):
                done(.failure(RPCError(.unavailable, "cannot read session \"\(name)\" from PostgreSQL: \(f.message)", data: ["retryAfterMs": .int(250)])))
            case .success(let rows):
                guard let row = rows.rows.first, let graph else { return done(.success(nil)) }
                do throws(NavError) {
                    let s = try saved.session(name, graph: graph, version: Int(row[1] ?? "") ?? 0, nextId: Int(row[2] ?? "") ?? 0,
                                              tree: row[3] ?? "null", facts: row[4] ?? "{}", parser: saved.parser())
                    try checkTabs(of: s, savedUnder: row.count > 8 ? row[7] : nil, layout: row.count > 8 ? row[8] : nil, graph: graph)
                    done(.success(s))
                } catch {
                    done(.failure(RPCError(.internalError, "session \"\(name)\" in PostgreSQL cannot be read: \(error.message) (every node must serve the graph its owner serves: graph.reload each node after changing it)")))
                }
            }
        }
    }
}
