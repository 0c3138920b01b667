import JSON
import RPC
import UV
#if canImport(Glibc)
import Glibc
#endif

/// The version navd reports in `hello`.
public let navdVersion = "0.1.0"

extension Server {
    /// `ping`, `hello`, `stats`, `rpc.discover`: methods that need no navigation state.
    func registerCoreMethods() {
        methods.register("ping", params: [], changes: false, session: .none) { call in call.succeed("pong") }

        methods.register("hello", params: ["client", "token"], changes: false, session: .none) { [self] call in
            if let name = call.param("client") {
                guard case .string(let s) = name else {
                    call.fail(.invalidParams("\"client\" must be a string naming the client, e.g. \"nav-tui\""))
                    return
                }
                do throws(RPCError) { try self.config.checkName(s, "the client name", param: "client") } catch {
                    call.fail(error)
                    return
                }
                call.connection.clientName = s
            }
            if let token = call.param("token") {
                guard case .string(let t) = token else {
                    call.fail(.invalidParams("\"token\" must be a string"))
                    return
                }
                guard t.utf8.count <= self.config.maxName else {
                    call.fail(.limitExceeded("the token is \(t.utf8.count) bytes long; tokens may be at most \(self.config.maxName) bytes (the --max-name limit)",
                                             limit: "--max-name", max: self.config.maxName))
                    return
                }
                guard self.policy.tokens[t] != nil else {
                    let why = self.policyFile.map { "the policy file \($0) grants it no role; list it under `tokens:` there (SIGHUP reloads the file)" }
                        ?? "navd runs without a policy file, so no token grants a role; start navd with --policy FILE listing the token under `tokens:`"
                    call.fail(.accessDenied("unknown token: \(why)"))
                    return
                }
                call.connection.token = t
                call.connection.roles = self.policy.roles(uid: call.connection.peer?.uid, token: t)
            }
            var result: JSONObject = [
                "server": "navd", "version": .string(navdVersion), "protocol": 1,
                "roles": .array(call.connection.roles.sorted().map { .string($0) }),
                "connection": .int(call.connection.id),
            ]
            if let p = call.connection.peer {
                result["peer"] = ["pid": .int(Int(p.pid)), "uid": .int(Int(p.uid)), "gid": .int(Int(p.gid))]
            }
            call.succeed(.object(result))
        }

        methods.register("stats", params: [], changes: false, session: .none) { [self] call in
            call.succeed(.object(self.statsObject()))
        }

        methods.register("rpc.discover", params: [], changes: false, session: .none) { [self] call in
            call.succeed(self.openRPCDocument)
        }
    }

    func statsObject() -> JSONObject {
        let uptimeMs = Int((EventLoop.hrtime - startedAt) / 1_000_000)
        let n = navigator.counts
        var o: JSONObject = [
            "connections": .int(connections.count),
            "connectionsAccepted": .int(stats.connectionsAccepted),
            "connectionsRefused": .int(stats.connectionsRefused),
            "requests": .int(stats.requests),
            "notificationsReceived": .int(stats.notificationsIn),
            "errors": .int(stats.errors),
            "notificationsSent": .int(stats.notificationsSent),
            "commits": .int(n.commits),
            "pending": .int(n.pending),
            "sessions": .int(n.sessions),
            "subscriptions": .int(n.subscriptions),
            "provided": .int(n.provided),
            "tasksStarted": .int(n.tasksStarted),
            "bytesIn": .int(stats.bytesIn),
            "bytesOut": .int(stats.bytesOut),
            "slowClientsDropped": .int(stats.slowClientsDropped),
            "pendingClientRequests": .int(connections.values.reduce(0) { $0 + $1.outboundCount }),
            "children": .int(n.children),
            "providerRequestsWaiting": .int(n.providerRequestsWaiting),
            "users": .object(usersObject(n)),
            "uptime": .double(Double(uptimeMs) / 1000),
            "memory": ["rss": .int(EventLoop.residentMemory)],
        ]
        if let pg = sharedStore { o.append("cluster", .object(pg.statsObject(mirrors: n.mirrors))) }
        return o
    }

    /// What each uid holds of the shares counted per user: connections, sessions it opened, pending
    /// navigations and running command children.
    func usersObject(_ n: Navigator.Counts) -> JSONObject {
        let uids = Set(connectionsByUid.keys).union(n.sessionsByUid.keys).union(n.pendingByUid.keys).union(n.childrenByUid.keys)
        return JSONObject(uniqueMembers: uids.sorted().map { uid in
            (key: String(uid), value: [
                "connections": .int(connectionsByUid[uid] ?? 0), "sessions": .int(n.sessionsByUid[uid] ?? 0),
                "pending": .int(n.pendingByUid[uid] ?? 0), "children": .int(n.childrenByUid[uid] ?? 0),
            ] as JSONValue)
        })
    }
}
