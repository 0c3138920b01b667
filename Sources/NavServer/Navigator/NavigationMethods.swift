import JSON
import NavGraph
import NavigationCore
import RPC
#if canImport(Glibc)
import Glibc
#endif

extension Navigator {
    /// navigate, dismiss, flowComplete, tree, subscribe/unsubscribe, context.*, session.*, cancel.
    /// Handlers hold the server strongly: it owns the table and empties it at shutdown, which ends
    /// the cycle. (An `unowned` reference, checked or not, costs an atomic operation at every use.)
    func registerNavigationMethods(in methods: MethodTable) {
        // Registering a method with its param enum makes the enum's table now, not on a first request
        // (making one reflects on the enum's cases).
        methods.register("navigate", NavigateParam.self, changes: true, session: .acts(on: ["session"])) { [self] call in self.navigate(call) }
        methods.register("open", OpenParam.self, changes: true, session: .acts(on: ["session"])) { [self] call in self.open(call) }

        methods.register("dismiss", DismissParam.self, changes: true, session: .acts(on: ["session"])) { [self] call in self.dismiss(call) }

        methods.register("update", UpdateParam.self, changes: true, session: .acts(on: ["session"])) { [self] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<UpdateParam>(call)
                let state = try self.state(p.given(.session), for: call.client)
                let node = try p.requiredString(.node, "the id of the live screen whose params to change")
                guard let with = try p.objectParam(.with) else {
                    throw .invalidParams("`update` needs \"with\": the fields to merge into the screen's params (null removes one)", data: ["param": "with"])
                }
                do throws(NavError) {
                    let c = try state.session.update(node, with: with, caller: Caller(roles: call.client.roles), maxBytes: self.config.maxMessage)
                    self.publish(c, in: state)
                    return ["version": .int(c.version), "node": c.node.map { $0.json(self.graph) } ?? .null]
                } catch { throw error.rpc }
            }
        }

        methods.register("reset", ResetParam.self, changes: true, session: .acts(on: ["session"])) { [self] call in self.reset(call) }

        methods.register("link.resolve", LinkResolveParam.self, changes: false, session: .acts(on: ["session"])) { [self] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<LinkResolveParam>(call)
                let state = try self.state(p.given(.session), for: call.client)
                let node = try p.string(.node)
                do throws(NavError) {
                    let (url, pattern) = try state.session.resolveLink(node)
                    return ["url": .string(url), "link": .string(pattern)]
                } catch { throw error.rpc }
            }
        }

        methods.register("flowComplete", FlowCompleteParam.self, changes: true, session: .acts(on: ["session"])) { [self] call in self.flowComplete(call) }

        methods.register("tree", SessionParam.self, changes: false, session: .acts(on: ["session"])) { [self] call in
            call.answer { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionParam>(call)
                return Snapshot(session: try self.state(p.given(.session), for: call.client).session)
            }
        }

        methods.register("subscribe", SessionParam.self, changes: false, session: .watches(["session"])) { [self] call in
            if self.publishesChanges, let name = self.remoteSession(call) { return self.subscribeRemote(call, name) }
            call.answer { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionParam>(call)
                let state = try self.state(p.given(.session), for: call.client)
                self.subscribe(call.client, to: state)
                return Snapshot(session: state.session)
            }
        }

        methods.register("unsubscribe", SessionParam.self, changes: false, session: .watches(["session"])) { [self] call in
            if self.publishesChanges, let name = self.remoteSession(call) {
                self.dropMirrorSubscriber(name, call.client)
                call.client.subscriptions.remove(name)
                return self.subscribeRemoteEnded(call, name)
            }
            call.answer { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionParam>(call)
                let state = try self.state(p.given(.session), for: call.client)
                self.unsubscribe(call.client, from: state)
                return Snapshot(session: state.session)
            }
        }

        methods.register("context.set", ContextParam.self, changes: true, session: .acts(on: ["session"])) { [self] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ContextParam>(call)
                let state = try self.state(p.given(.session), for: call.client)
                try self.requireOwner(call.client, state.session, "`context.set`")
                guard let facts = try p.objectParam(.facts) else {
                    throw .invalidParams("`context.set` needs \"facts\": an object of fact name → JSON value (null removes a fact)", data: ["param": "facts"])
                }
                // Checked whole before anything changes: a refused request sets no fact.
                for (k, _) in facts { try self.config.checkName(k, "the fact name \"\(k.prefix(40))\"", param: "facts") }
                do throws(NavError) { try state.session.setFacts(facts) } catch { throw error.rpc }
                self.store.factsChanged(state.session)
                return ["facts": .object(state.session.sortedFacts)]
            }
        }

        methods.register("context.get", ContextParam.self, changes: false, session: .acts(on: ["session"])) { [self] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ContextParam>(call)
                let state = try self.state(p.given(.session), for: call.client)
                if let names = try p.stringArray(.facts) {
                    var o = JSONObject()
                    for n in names { if let v = state.session.facts[n] { o.append(n, v) } }
                    return ["facts": .object(o)]
                }
                return ["facts": .object(state.session.sortedFacts)]
            }
        }

        methods.register("session.open", SessionNameParam.self, changes: true, session: .acts(on: ["name", "session"])) { [self] call in
            call.answer { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionNameParam>(call)
                let given = try p.string(.name)
                let alias = try p.string(.session)
                guard let name = given ?? alias else {
                    throw .invalidParams("`session.open` needs \"name\": the session's name", data: ["param": "name"])
                }
                guard !name.isEmpty else {
                    throw .invalidParams("`session.open`'s \"name\" is empty; give the session a name such as \"test-1\"", data: ["param": "name"])
                }
                try self.config.checkName(name, "the session name", param: "name")
                if self.sessions[name] == nil {
                    guard self.sessions.count < self.config.maxSessions else {
                        throw .limitExceeded("navd already holds \(self.sessions.count) sessions, the most it keeps (the --max-sessions limit); close sessions you no longer need with session.close",
                                             limit: "--max-sessions", max: self.config.maxSessions)
                    }
                    let uid = call.client.uid ?? getuid()
                    let opened = self.sessions.values.reduce(0) { $0 + (($1.session.owner ?? getuid()) == uid ? 1 : 0) }
                    guard opened < self.config.maxSessionsPerUid else {
                        throw .limitExceeded("uid \(uid) has opened \(opened) sessions, the most one user may (the --max-sessions-per-uid limit); close sessions you no longer need with session.close",
                                             limit: "--max-sessions-per-uid", max: self.config.maxSessionsPerUid)
                    }
                    let session = Session(name: name, graph: self.graph)
                    if uid != getuid() { session.owner = uid }
                    self.sessions[name] = self.makeState(session)
                    self.store.sessionOpened(self.sessions[name]!.session)
                }
                return Snapshot(session: self.sessions[name]!.session)
            }
        }

        methods.register("session.close", SessionNameParam.self, changes: true, session: .acts(on: ["name", "session"])) { [self] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<SessionNameParam>(call)
                let given = try p.string(.name)
                let alias = try p.string(.session)
                guard let name = given ?? alias else {
                    throw .invalidParams("`session.close` needs \"name\": the session's name", data: ["param": "name"])
                }
                guard name != "main" else {
                    throw RPCError(.notAllowed, "session \"main\" always exists and cannot be closed", data: ["session": "main"])
                }
                let state = try self.state(name)
                try self.requireOwner(call.client, state.session, "`session.close`")
                for p in self.pending.values where p.state === state {
                    self.finish(p, .failure(NavError(.cancelled, "the navigation was cancelled: its session \"\(name)\" was closed", data: ["navigation": .string(p.id)])))
                }
                for c in state.subscribers.clients.values { c.subscriptions.remove(name) }
                state.isClosed = true
                self.sessions[name] = nil
                self.store.sessionClosed(name)
                return ["ok": true]
            }
        }

        methods.register("session.list", SessionParam.self, changes: false, session: .none) { [self] call in
            call.answer { () throws(RPCError) -> JSONValue in
                _ = try Params<SessionParam>(call)
                if let pg = self.shared {
                    // Cluster mode: every session of the cluster, and the node that owns each.
                    var owners = pg.directory
                    for name in self.sessions.keys { owners[name] = pg.node }
                    let names = owners.keys.sorted()
                    return ["sessions": .array(names.map(JSONValue.string)),
                            "owners": .object(JSONObject(uniqueMembers: names.map { ($0, .string(owners[$0]!)) }))]
                }
                return ["sessions": .array(self.sessions.keys.sorted().map(JSONValue.string))]
            }
        }

        methods.register("provide", ProvideParam.self, changes: false, session: .none) { [self] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ProvideParam>(call)
                try Policy.requireAdmin(call.client, "`provide` (answering preconditions for every session)")
                guard let names = try p.stringArray(.preconditions), !names.isEmpty else {
                    throw .invalidParams("`provide` needs \"preconditions\": the names of the provider preconditions (or recovery providers) this client evaluates", data: ["param": "preconditions"])
                }
                for n in names { try self.config.checkName(n, "the provided name \"\(n.prefix(40))\"", param: "preconditions") }
                guard names.count <= self.config.maxBatch else {
                    throw .limitExceeded("`provide` names \(names.count) preconditions; one call may name at most \(self.config.maxBatch) (the --max-batch limit)",
                                         limit: "--max-batch", max: self.config.maxBatch)
                }
                // Precondition names are stored qualified; other names (recovery providers) as given.
                let resolved = names.map { self.graph.precondition(named: $0)?.name ?? $0 }
                self.provide(resolved, by: call.client)
                return ["ok": true, "preconditions": .array(resolved.map(JSONValue.string))]
            }
        }

        methods.register("cancel", CancelParam.self, changes: true, session: .acts(on: ["session"])) { [self] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<CancelParam>(call)
                let id = try p.requiredString(.navigation, "the id a navigate reply or navigationPending notification gave")
                guard let pending = self.pending[id] else { return ["cancelled": false] }
                self.finish(pending, .failure(NavError(.cancelled, "the navigation was cancelled by a `cancel` request", data: ["navigation": .string(id)])))
                return ["cancelled": true]
            }
        }
    }

    /// Refuses to close or write the facts of a session another user opened, unless the client is an admin.
    func requireOwner(_ c: some Client, _ s: Session, _ what: String) throws(RPCError) {
        let owner = s.owner ?? getuid()
        if c.uid == owner || c.roles.contains(Policy.adminRole) { return }
        throw .accessDenied("\(what) on session \"\(s.name)\" needs the uid that opened it (\(owner)) or the role \(Policy.adminRole); open a session of your own with session.open {name}",
                            data: ["session": .string(s.name), "roles": [.string(Policy.adminRole)]])
    }

    /// The largest `hints` object or dismiss `result`, as JSON.
    static let maxHintsBytes = 4096

    /// Refuses a value larger than `limit` bytes of JSON.
    func checkSize(_ v: JSONValue, _ what: String, limit: Int, param: String) throws(RPCError) {
        let size = JSONWriter.encode(v).count
        if size > limit {
            throw .limitExceeded("\(what) is \(size) bytes of JSON; it may be at most \(limit)", limit: param, max: limit)
        }
    }

    /// `dismiss {result}`: tells the screen now on top (the one below what was dismissed) the result
    /// of the screen that was shown, as `screenResult {session, node, to, result}` to the session's
    /// subscribers and the caller.
    func deliverScreenResult(_ result: JSONValue, from shown: String, in state: SessionState, caller: some Client) {
        let s = state.session
        let params: JSONValue = [
            "session": .string(s.name), "node": .string(shown),
            "to": .string(s.visibleTop?.id ?? ""), "result": result,
        ]
        publisher.notify("screenResult", params, to: state.audience, also: caller)
    }

    /// A coordinator name or `{to, by?, with?}` (`navigate {then}`, a precondition's redirect answer).
    func navigationSpec(_ v: JSONValue, param: String) throws(RPCError) -> NavigationSpec {
        let shape = "\"\(param)\" must be a coordinator name or {to, by?, with?}, like {\"to\": \"account.OrderDetail\", \"with\": {\"orderId\": \"$result.orderId\"}}"
        var to: String?, by: Presentation?, with = JSONObject()
        switch v {
        case .string(let name): to = name
        case .object(let o):
            guard o.keys.allSatisfy({ ["to", "by", "with"].contains($0) }) else { throw .invalidParams(shape, data: ["param": .string(param)]) }
            to = o["to"]?.stringValue
            if let b = o["by"] {
                guard let name = b.stringValue, let pr = Presentation(rawValue: name) else { throw .invalidParams(shape, data: ["param": .string(param)]) }
                by = pr
            }
            if let w = o["with"] {
                guard case .object(let wo) = w else { throw .invalidParams(shape, data: ["param": .string(param)]) }
                for (_, x) in wo {
                    if case .string(let s) = x, isResultReference(s) == false {
                        throw .invalidParams("`\(s)` in \"\(param).with\" is not a result reference; write \"$result\" or \"$result.FIELD\"", data: ["param": .string(param)])
                    }
                }
                with = wo
            }
        default: break
        }
        guard let to else { throw .invalidParams(shape, data: ["param": .string(param)]) }
        do throws(NavError) {
            return NavigationSpec(to: try graph.destination(to: to, route: nil).target, by: by, with: with)
        } catch { throw error.rpc }
    }

}

/// The params of each navigation method (see ``ParamName``).
enum DismissParam: Int, ParamName {
    case session, node, to, inclusive, result
    static let table = ParamTable(Self.self)
}

enum UpdateParam: Int, ParamName {
    case session, node, with
    static let table = ParamTable(Self.self)
}

enum ResetParam: Int, ParamName {
    case session, to, ifVersion
    static let table = ParamTable(Self.self)
}

enum FlowCompleteParam: Int, ParamName {
    case session, flow, result, error, cancelled
    static let table = ParamTable(Self.self)
}

enum ContextParam: Int, ParamName {
    case session, facts
    static let table = ParamTable(Self.self)
}

enum SessionNameParam: Int, ParamName {
    case name, session
    static let table = ParamTable(Self.self)
}

enum ProvideParam: Int, ParamName {
    case preconditions, session
    static let table = ParamTable(Self.self)
}

enum CancelParam: Int, ParamName {
    case navigation, session
    static let table = ParamTable(Self.self)
}

enum NavigateParam: Int, ParamName {
    case session, to, route, by, with, from, ifVersion, key, dryRun, hints, popUpTo, then, detach, progress
    static let table = ParamTable(Self.self)
}

enum LinkResolveParam: Int, ParamName {
    case session, node
    static let table = ParamTable(Self.self)
}

enum OpenParam: Int, ParamName {
    case session, url, dryRun, ifVersion
    static let table = ParamTable(Self.self)
}
