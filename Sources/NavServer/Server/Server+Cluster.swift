import Logging
import NavigationCore
import RPC

/// Cluster mode (`--store postgres://…`), the server's side: what the shared store reports goes to
/// the navigator, except changing requests turned away while PostgreSQL cannot be reached and the
/// stop when this node lost its lease.
extension Server: ClusterEvents {
    /// Methods that change sessions: refused with `unavailable` while the store cannot write.
    static let changingMethods = ["navigate", "open", "dismiss", "update", "reset", "flowComplete",
                                  "context.set", "session.open", "session.close", "graph.reload"]

    func sessionsClaimed(_ sessions: [Session], own: Bool) { navigator.sessionsClaimed(sessions, own: own) }

    func sessionsLost(_ names: [String]) { navigator.sessionsLost(names) }

    func changeNotified(_ payload: String) { navigator.changeNotified(payload) }

    func storeAvailabilityChanged(_ available: Bool, reason: String) {
        if available {
            for (name, h) in refusedMethods { methods[name] = h }
            refusedMethods = [:]
            logger.notice("changes are accepted again", metadata: ["navd.reason": "\(reason)"])
            return
        }
        guard refusedMethods.isEmpty else { return }
        for name in Self.changingMethods {
            guard let h = methods[name] else { continue }
            refusedMethods[name] = h
            methods[name] = { call in
                call.fail(RPCError(.unavailable, "navd cannot store changes now (\(reason)); nothing was done. Reads (tree, subscribe, context.get) still work; retry after data.retryAfterMs",
                                   data: ["retryAfterMs": .int(250)]))
            }
        }
    }

    func leaseLost(_ why: String) {
        guard failure == nil else { return }
        logger.critical("this node lost its registration in PostgreSQL (another navd started with the same --node?); stopping", metadata: ["navd.error": "\(why)"])
        failure = "lost the cluster lease: \(why)"
        disconnectAll(reason: "navd lost its cluster lease")
        dirty.removeAll()
        shutdown()
    }
}
