import JSON
import UV
#if canImport(Glibc)
import Glibc
#endif

/// `stats`: each layer's counters, and what each uid holds.
extension Server {
    func statsObject() -> JSONObject {
        let uptimeMs = Int((EventLoop.hrtime - startedAt) / 1_000_000)
        let n = navigator.counts, t = transport.stats, d = dispatcher.stats
        var o: JSONObject = [
            "connections": .int(transport.count),
            "halfClosed": .int(transport.halfClosedCount),
            "connectionsAccepted": .int(t.connectionsAccepted),
            "connectionsRefused": .int(t.connectionsRefused),
            "requests": .int(d.requests),
            "notificationsReceived": .int(d.notificationsIn),
            "errors": .int(d.errors),
            "notificationsSent": .int(t.notificationsSent),
            "commits": .int(n.commits),
            "pending": .int(n.pending),
            "sessions": .int(n.sessions),
            "subscriptions": .int(n.subscriptions),
            "provided": .int(n.provided),
            "tasksStarted": .int(n.tasksStarted),
            "bytesIn": .int(t.bytesIn),
            "bytesOut": .int(t.bytesOut),
            "slowClientsDropped": .int(t.slowClientsDropped),
            "inputHoldersDropped": .int(t.inputHoldersDropped),
            "pendingClientRequests": .int(dispatcher.outboundCount),
            "children": .int(n.children),
            "providerRequestsWaiting": .int(n.providerRequestsWaiting),
            "users": .object(usersObject(n)),
            "uptime": .double(Double(uptimeMs) / 1000),
            "memory": ["rss": .int(EventLoop.residentMemory), "data": .int(navigator.data.total), "maxData": .int(dispatcher.dataCeiling.max),
                       "input": .int(transport.inputHeld), "maxInput": .int(transport.limits.maxTotalInput)],
            "methods": .object(dispatcher.methods.countsObject),
        ]
        if let section = store.stats(mirrors: n.mirrors) { o.append(section.key, .object(section.value)) }
        return o
    }

    /// What each uid holds of the shares counted per user: connections, sessions it opened, pending
    /// navigations, running command children, subscriptions and the bytes its sessions hold
    /// (`--max-data-bytes`'s share).
    func usersObject(_ n: Navigator.Counts) -> JSONObject {
        let uids = Set(transport.byUid.byUid.keys).union(n.sessionsByUid.keys).union(n.pendingByUid.keys).union(n.childrenByUid.keys)
            .union(n.subscriptionsByUid.keys)
        return JSONObject(uniqueMembers: uids.sorted().map { uid in
            (key: String(uid), value: [
                "connections": .int(transport.byUid[uid]), "sessions": .int(n.sessionsByUid[uid] ?? 0),
                "pending": .int(n.pendingByUid[uid] ?? 0), "children": .int(n.childrenByUid[uid] ?? 0),
                "subscriptions": .int(n.subscriptionsByUid[uid] ?? 0),
                "bytes": .int(navigator.data.bytes(of: uid)),
            ] as JSONValue)
        })
    }
}
