import JSON
import NavGraph
import NavigationCore
import RPC
#if canImport(Glibc)
import Glibc
#endif

extension Server {
    /// navigate, dismiss, flowComplete, tree, subscribe/unsubscribe, context.*, session.*, cancel.
    /// Handlers hold the server strongly: it owns the table and empties it at shutdown, which ends
    /// the cycle. (A checked `unowned` reference costs an atomic operation per request, and so does
    /// an `unowned(unsafe)` one, at every use.)
    func registerNavigationMethods() {
        // Param tables are made now, not on a first request (making one reflects on the enum's cases).
        _ = (SessionParam.table, DismissParam.table, UpdateParam.table, ResetParam.table, LinkResolveParam.table, FlowCompleteParam.table, ContextParam.table, SessionNameParam.table,
             ProvideParam.table, CancelParam.table, NavigateParam.table, OpenParam.table, ReloadParam.table)
        methods["navigate"] = { [self] call in self.navigate(call) }
        methods["open"] = { [self] call in self.open(call) }

        methods["dismiss"] = { [self] call in self.dismiss(call) }

        methods["update"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> JSONValue in
                let p = try Params<UpdateParam>(call)
                let state = try self.hub.state(p.given(.session), for: call.connection)
                let node = try p.requiredString(.node, "the id of the live screen whose params to change")
                guard let with = try p.objectParam(.with) else {
                    throw .invalidParams("`update` needs \"with\": the fields to merge into the screen's params (null removes one)", data: ["param": "with"])
                }
                do throws(NavError) {
                    let c = try state.session.update(node, with: with, caller: Caller(roles: call.connection.roles), maxBytes: self.config.maxMessage)
                    self.hub.publish(c, in: state)
                    return ["version": .int(c.version), "node": c.node.map { $0.json(self.graph) } ?? .null]
                } catch { throw error.rpc }
            }
        }

        methods["reset"] = { [self] call in self.reset(call) }

        methods["link.resolve"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> JSONValue in
                let p = try Params<LinkResolveParam>(call)
                let state = try self.hub.state(p.given(.session), for: call.connection)
                let node = try p.string(.node)
                do throws(NavError) {
                    let (url, pattern) = try state.session.resolveLink(node)
                    return ["url": .string(url), "link": .string(pattern)]
                } catch { throw error.rpc }
            }
        }

        methods["flowComplete"] = { [self] call in self.flowComplete(call) }

        methods["tree"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionParam>(call)
                return Snapshot(session: try self.hub.state(p.given(.session), for: call.connection).session)
            }
        }

        methods["subscribe"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionParam>(call)
                let state = try self.hub.state(p.given(.session), for: call.connection)
                self.hub.subscribe(call.connection, to: state)
                return Snapshot(session: state.session)
            }
        }

        methods["unsubscribe"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionParam>(call)
                let state = try self.hub.state(p.given(.session), for: call.connection)
                self.hub.unsubscribe(call.connection, from: state)
                return Snapshot(session: state.session)
            }
        }

        methods["context.set"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> JSONValue in
                let p = try Params<ContextParam>(call)
                let state = try self.hub.state(p.given(.session), for: call.connection)
                try self.requireOwner(call.connection, state.session, "`context.set`")
                guard let facts = try p.objectParam(.facts) else {
                    throw .invalidParams("`context.set` needs \"facts\": an object of fact name → JSON value (null removes a fact)", data: ["param": "facts"])
                }
                // Checked whole before anything changes: a refused request sets no fact.
                var added = 0
                for (k, v) in facts {
                    try self.checkName(k, "the fact name \"\(k.prefix(40))\"", param: "facts")
                    if v.isNull { continue }
                    let size = JSONWriter.encode(v).count
                    if size > self.config.maxFactValue {
                        throw .limitExceeded("the value of fact \"\(k)\" is \(size) bytes of JSON; a fact may hold at most \(self.config.maxFactValue) (the --max-fact-value limit)",
                                             limit: "--max-fact-value", max: self.config.maxFactValue)
                    }
                    if state.session.facts[k] == nil { added += 1 }
                }
                let removed = facts.filter { $0.value.isNull && state.session.facts[$0.key] != nil }.count
                if state.session.facts.count + added - removed > self.config.maxFacts {
                    throw .limitExceeded("session \"\(state.session.name)\" would hold \(state.session.facts.count + added - removed) facts; a session may hold at most \(self.config.maxFacts) (the --max-facts limit): remove facts by setting them to null",
                                         limit: "--max-facts", max: self.config.maxFacts)
                }
                for (k, v) in facts {
                    if v.isNull { state.session.facts.removeValue(forKey: k) } else { state.session.facts[k] = v }
                }
                self.store.factsChanged(state.session)
                return ["facts": .object(self.factsObject(state.session))]
            }
        }

        methods["context.get"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> JSONValue in
                let p = try Params<ContextParam>(call)
                let state = try self.hub.state(p.given(.session), for: call.connection)
                if let names = try p.stringArray(.facts) {
                    var o = JSONObject()
                    for n in names { if let v = state.session.facts[n] { o.append(n, v) } }
                    return ["facts": .object(o)]
                }
                return ["facts": .object(self.factsObject(state.session))]
            }
        }

        methods["session.open"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionNameParam>(call)
                let given = try p.string(.name)
                let alias = try p.string(.session)
                guard let name = given ?? alias else {
                    throw .invalidParams("`session.open` needs \"name\": the session's name", data: ["param": "name"])
                }
                guard !name.isEmpty else {
                    throw .invalidParams("`session.open`'s \"name\" is empty; give the session a name such as \"test-1\"", data: ["param": "name"])
                }
                try self.checkName(name, "the session name", param: "name")
                if self.hub.sessions[name] == nil {
                    guard self.hub.sessions.count < self.config.maxSessions else {
                        throw .limitExceeded("navd already holds \(self.hub.sessions.count) sessions, the most it keeps (the --max-sessions limit); close sessions you no longer need with session.close",
                                             limit: "--max-sessions", max: self.config.maxSessions)
                    }
                    let session = Session(name: name, graph: self.graph)
                    if let uid = call.connection.peer?.uid, uid != getuid() { session.owner = uid }
                    self.hub.sessions[name] = SessionState(session)
                    self.store.sessionOpened(self.hub.sessions[name]!.session)
                }
                return Snapshot(session: self.hub.sessions[name]!.session)
            }
        }

        methods["session.close"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> JSONValue in
                let p = try Params<SessionNameParam>(call)
                let given = try p.string(.name)
                let alias = try p.string(.session)
                guard let name = given ?? alias else {
                    throw .invalidParams("`session.close` needs \"name\": the session's name", data: ["param": "name"])
                }
                guard name != "main" else {
                    throw RPCError(code: -32003, kind: "notAllowed", message: "session \"main\" always exists and cannot be closed", data: ["session": "main"])
                }
                let state = try self.hub.state(name)
                try self.requireOwner(call.connection, state.session, "`session.close`")
                for p in self.hub.pending.values where p.state === state {
                    self.finish(p, .failure(NavError(.cancelled, "the navigation was cancelled: its session \"\(name)\" was closed", data: ["navigation": .string(p.id)])))
                }
                for c in state.subscribers.values { c.subscriptions.remove(name) }
                state.isClosed = true
                self.hub.sessions[name] = nil
                self.store.sessionClosed(name)
                return ["ok": true]
            }
        }

        methods["session.list"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> JSONValue in
                _ = try Params<SessionParam>(call)
                return ["sessions": .array(self.hub.sessions.keys.sorted().map(JSONValue.string))]
            }
        }

        methods["provide"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> JSONValue in
                let p = try Params<ProvideParam>(call)
                try self.requireAdmin(call.connection, "`provide` (answering preconditions for every session)")
                guard let names = try p.stringArray(.preconditions), !names.isEmpty else {
                    throw .invalidParams("`provide` needs \"preconditions\": the names of the provider preconditions (or recovery providers) this client evaluates", data: ["param": "preconditions"])
                }
                for n in names { try self.checkName(n, "the provided name \"\(n.prefix(40))\"", param: "preconditions") }
                guard names.count <= self.config.maxBatch else {
                    throw .limitExceeded("`provide` names \(names.count) preconditions; one call may name at most \(self.config.maxBatch) (the --max-batch limit)",
                                         limit: "--max-batch", max: self.config.maxBatch)
                }
                // Precondition names are stored qualified; other names (recovery providers) as given.
                let resolved = names.map { self.graph.precondition(named: $0)?.name ?? $0 }
                self.hub.provide(resolved, by: call.connection)
                return ["ok": true, "preconditions": .array(resolved.map(JSONValue.string))]
            }
        }

        methods["cancel"] = { [self] call in
            self.handle(call) { () throws(RPCError) -> JSONValue in
                let p = try Params<CancelParam>(call)
                let id = try p.requiredString(.navigation, "the id a navigate reply or navigationPending notification gave")
                guard let pending = self.hub.pending[id] else { return ["cancelled": false] }
                self.finish(pending, .failure(NavError(.cancelled, "the navigation was cancelled by a `cancel` request", data: ["navigation": .string(id)])))
                return ["cancelled": true]
            }
        }
    }

    /// Refuses to close or write the facts of a session another user opened, unless the client is an admin.
    func requireOwner(_ c: Connection, _ s: Session, _ what: String) throws(RPCError) {
        let owner = s.owner ?? getuid()
        if c.peer?.uid == owner || c.roles.contains(Policy.adminRole) { return }
        throw .accessDenied("\(what) on session \"\(s.name)\" needs the uid that opened it (\(owner)) or the role \(Policy.adminRole); open a session of your own with session.open {name}",
                            data: ["session": .string(s.name), "roles": [.string(Policy.adminRole)]])
    }

    /// Refuses a name a client gives (a session, a fact, a key…) that is longer than `--max-name` or
    /// holds a control character (it would garble logs and commands).
    func checkName(_ name: String, _ what: String, param: String) throws(RPCError) {
        if name.utf8.count > config.maxName {
            throw .limitExceeded("\(what) is \(name.utf8.count) bytes long; names may be at most \(config.maxName) bytes (the --max-name limit)",
                                 limit: "--max-name", max: config.maxName)
        }
        if name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw .invalidParams("\(what) holds a control character (a NUL, a newline, …); names are printable text", data: ["param": .string(param)])
        }
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
    func deliverScreenResult(_ result: JSONValue, from shown: String, in state: SessionState, caller: Connection) {
        let s = state.session
        let params: JSONValue = [
            "session": .string(s.name), "node": .string(shown),
            "to": .string(s.visibleTop?.id ?? ""), "result": result,
        ]
        var targets = Array(state.subscribers.values)
        if state.subscribers[caller.id] == nil { targets.append(caller) }
        broadcast(method: "screenResult", params: params, to: targets)
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

    /// `reset {}` (the graph's root, fresh) or `reset {to: [{to, with?, by?}…]}` (a stack built as a
    /// deep link builds it, after the preconditions of its screens).
    private func reset(_ call: Call) {
        let state: SessionState
        let steps: [ResetStep]?
        let ifVersion: Int?
        do throws(RPCError) {
            let p = try Params<ResetParam>(call)
            state = try hub.state(p.given(.session), for: call.connection)
            ifVersion = try p.int(.ifVersion)
            if let raw = p.value(.to) {
                guard case .array(let items) = raw, items.count <= config.maxBatch else {
                    throw .invalidParams("\"to\" must be a list of screens, like [\"shop.Home\", {\"to\": \"shop.Product\", \"with\": {\"id\": \"p1\"}}] (at most --max-batch)",
                                         data: ["param": "to"])
                }
                steps = try items.map { item throws(RPCError) -> ResetStep in
                    if case .string(let name) = item { return ResetStep(to: name) }
                    guard let to = item["to"]?.stringValue else {
                        throw .invalidParams("each screen of \"to\" is a coordinator name or {to, with?, by?}", data: ["param": "to"])
                    }
                    var by: Presentation?
                    if let b = item["by"]?.stringValue {
                        guard let pr = Presentation(rawValue: b), pr == .push || pr == .present else {
                            throw .invalidParams("a reset screen is shown by push or present, not \"\(b)\"", data: ["param": "to"])
                        }
                        by = pr
                    }
                    return ResetStep(to: to, with: item["with"]?.objectValue ?? JSONObject(), by: by)
                }
            } else {
                steps = nil
            }
        } catch {
            call.fail(error)
            return
        }
        let session = state.session
        guard let steps else {
            if let v = ifVersion, v != session.version {
                call.fail(NavError(.conflict, "the tree is at version \(session.version), not \(v) as \"ifVersion\" requires", data: ["version": .int(session.version)]).rpc)
                return
            }
            let c = session.resetToRoot()
            hub.publish(c, in: state)
            call.succeed(["version": .int(c.version), "visible": .array(session.visible.map(JSONValue.string))])
            return
        }
        let plan: Plan
        do throws(NavError) {
            plan = try session.planReset(steps, caller: Caller(roles: call.connection.roles), ifVersion: ifVersion)
        } catch {
            call.fail(error.rpc)
            return
        }
        if plan.preconditions.isEmpty {
            call.finish(commitResult(state, plan, navigation: hub.nextNavigation(), starter: call.connection).mapError(\.rpc))
            return
        }
        let nav = PendingNavigation(number: hub.nextNavigation(), state: state, plan: plan, key: nil,
                                    caller: Caller(roles: call.connection.roles), reply: call.deferred())
        startPending(nav, for: call.connection)
    }

    /// `navigate`'s `hints`, `then` and `popUpTo`, applied to a validated plan. (A method, not part
    /// of `navigate`'s local `validate`, so that the plan of every other navigation captures nothing
    /// more.)
    private func applyOptions(to plan: inout Plan, session: Session, hints: JSONValue?, popUpTo: (to: String, inclusive: Bool)?,
                              then: NavigationSpec?) throws(NavError) {
        if let hints { plan.hints = hints }
        if let then { plan.then = then }
        if let popUpTo {
            guard plan.by == .push || plan.by == .present else {
                throw NavError(.invalidParams, "\"popUpTo\" goes with by: push or present, and this navigation is by \(plan.by.rawValue)", data: ["param": "popUpTo"])
            }
            plan.popUpTo = (try session.popTarget(popUpTo.to).number, popUpTo.inclusive)
            // The screens the pop removes keep their leave guards: they run first.
            if graph.hasLeaveGuards, let guards = try? session.leaveGuards(node: nil, to: popUpTo.to, inclusive: popUpTo.inclusive),
               !guards.preconditions.isEmpty {
                plan = plan.withPreconditions(before: guards.preconditions)
            }
            // What the pop leaves on top must be able to show the target (a modal already shown is popped first).
            _ = try session.dryRun(plan)
        }
    }

    /// `navigate {then}` goes only to a flow, and names the flow's declared `then` or one of its opens.
    private func checkThen(_ then: NavigationSpec, flow target: Int) throws(NavError) {
        let flow = graph.coordinators[target]
        guard flow.flow != nil else {
            throw NavError(.invalidParams, "\"then\" says where to go when a flow completes, and `\(flow.name)` is not a flow", data: ["param": "then"])
        }
        if then.by?.needsAbility ?? true, !flow.mayContinue(to: then.to) {
            throw NavError(.notAllowed, "flow `\(flow.name)` cannot continue to `\(graph.coordinators[then.to].name)`: \"then\" names its declared `then` or a coordinator its opens list",
                           data: ["param": "then", "to": .string(graph.coordinators[then.to].name)])
        }
    }

    func factsObject(_ s: Session) -> JSONObject {
        JSONObject(uniqueMembers: s.facts.keys.sorted().map { ($0, s.facts[$0]!) })
    }

    /// Runs a synchronous handler and replies with its result or error.
    func handle<R: JSONEncodable>(_ call: Call, _ body: () throws(RPCError) -> R) {
        do { call.succeed(try body()) } catch { call.fail(error) }
    }

    // MARK: navigate

    private func navigate(_ call: Call) {
        let state: SessionState
        let by: Presentation?, to: JSONView?, route: String?, with: JSONObject?, from: String?, ifVersion: Int?, key: String?, dryRun: Bool
        let detach: Bool, progress: Bool
        let hints: JSONValue?
        let popUpTo: (to: String, inclusive: Bool)?
        let then: NavigationSpec?
        do throws(RPCError) {
            let p = try Params<NavigateParam>(call)
            state = try hub.state(p.given(.session), for: call.connection)
            if let b = try p.string(.by) {
                guard let pr = Presentation(rawValue: b) else {
                    throw RPCError.invalidParams("\"by\" must be push, present, replace, root or select, not \"\(b)\"", data: ["param": "by"])
                }
                by = pr
            } else {
                by = nil
            }
            // `to` stays in place: it is looked up by its bytes (a string is made only for a message).
            to = try p.stringView(.to)
            route = try p.string(.route)
            // The setup model is built in the storage of the node the session will make next
            // (a node dismissed earlier), when it has one.
            with = try p.objectParam(.with, keys: setupKeys, reusing: state.session.takeSpareSetupStorage())
            from = try p.string(.from)
            ifVersion = try p.int(.ifVersion)
            key = try p.string(.key)
            if let key { try checkName(key, "the navigation key", param: "key") }
            dryRun = try p.bool(.dryRun) ?? false
            detach = try p.bool(.detach) ?? false
            progress = try p.bool(.progress) ?? false
            if let h = p.value(.hints) {
                guard case .object = h else {
                    throw .invalidParams("\"hints\" must be an object of presentation wishes, like {\"animated\": false}", data: ["param": "hints"])
                }
                try checkSize(h, "\"hints\"", limit: Server.maxHintsBytes, param: "hints")
                hints = h
            } else {
                hints = nil
            }
            if let pop = p.value(.popUpTo) {
                guard let target = pop["to"]?.stringValue, pop.objectValue?.keys.allSatisfy({ $0 == "to" || $0 == "inclusive" }) == true else {
                    throw .invalidParams("\"popUpTo\" must be {to: COORDINATOR_OR_NODE, inclusive?: bool}, like {\"to\": \"shop.Home\"}", data: ["param": "popUpTo"])
                }
                var inclusive = false
                if let i = pop["inclusive"] {
                    guard case .bool(let b) = i else { throw .invalidParams("\"popUpTo.inclusive\" must be true or false", data: ["param": "popUpTo"]) }
                    inclusive = b
                }
                if let by, by != .push && by != .present {
                    throw .invalidParams("\"popUpTo\" goes with by: push or present (the target is placed from the screen left on top), not \(by.rawValue)",
                                         data: ["param": "popUpTo"])
                }
                popUpTo = (target, inclusive)
            } else {
                popUpTo = nil
            }
            then = try p.value(.then).map { v throws(RPCError) in try navigationSpec(v, param: "then") }
        } catch {
            call.fail(error)
            return
        }
        let caller = Caller(roles: call.connection.roles)
        let session = state.session
        /// Validates the navigation (while `to` is still readable: before this handler returns).
        func validate() throws(NavError) -> Plan {
            let destination: Destination
            if route == nil, let to, let i = graph.coordinatorIndex(utf8: to.stringBytes) {
                destination = Destination(target: i)
            } else {
                destination = try graph.destination(to: to?.string, route: route)
            }
            return try session.plan(destination, by: by, with: with, from: from, ifVersion: ifVersion, caller: caller)
        }


        if dryRun {
            do {
                var plan = try validate()
                if hints != nil || popUpTo != nil || then != nil {
                    if let then { try checkThen(then, flow: plan.target) }
                    try applyOptions(to: &plan, session: session, hints: hints, popUpTo: popUpTo, then: then)
                }
                let (commit, visible) = try session.dryRun(plan)
                call.succeed([
                    "dryRun": true, "version": .int(session.version),
                    "node": commit.node.map { $0.json(graph) } ?? .null,
                    "visible": .array(visible.map(JSONValue.string)),
                    "preconditions": .array(plan.preconditions.map { .string(graph.preconditions[$0].name) }),
                    "changes": .array(commit.changes),
                ])
            } catch {
                call.fail(error.rpc)
            }
            return
        }

        if let key {
            if let done = session.keyed[key] {
                switch done {
                case .success(let v): call.succeed(v)
                case .failure(let e): call.fail(e.rpc)
                }
                return
            }
            if let joining = hub.pendingByKey[SessionKey(session.name, key)] {
                joining.replies.append(call.deferred())
                return
            }
        }

        let plan: Plan
        do {
            var p = try validate()
            // The options few navigations give (kept out of `validate`, whose captures cost every navigation).
            if hints != nil || popUpTo != nil || then != nil {
                if let then { try checkThen(then, flow: p.target) }
                try applyOptions(to: &p, session: session, hints: hints, popUpTo: popUpTo, then: then)
            }
            plan = p
        } catch {
            if let key { remember(session, key: key, .failure(error)) }
            call.fail(error.rpc)
            return
        }
        if plan.preconditions.isEmpty {
            // Nothing to wait for: commit now, without the pending-navigation bookkeeping.
            do throws(NavError) {
                let done = try commit(state, plan, navigation: hub.nextNavigation(), starter: call.connection)
                if let key { remember(session, key: key, .success(JSONText(encoding: done))) }
                call.succeed(done)
            } catch {
                if let key { remember(session, key: key, .failure(error)) }
                call.fail(error.rpc)
            }
            return
        }
        let nav = PendingNavigation(number: hub.nextNavigation(), state: state, plan: plan, key: key, caller: caller, reply: call.deferred())
        // A newer navigation from the same source supersedes a pending one.
        let sourceKey = SessionKey(session.name, plan.sourceId)
        if let older = hub.pendingBySource[sourceKey] {
            finish(older, .failure(NavError(.cancelled, "the navigation was superseded by \(nav.id) from the same source", data: ["navigation": .string(older.id), "by": .string(nav.id)])))
        }
        nav.registered = true
        hub.pending[nav.id] = nav
        hub.pendingBySource[sourceKey] = nav
        nav.reportsProgress = progress
        // A detached navigation outlives its client (`navctl --no-wait`); others end with it.
        if !detach {
            call.connection.onClose.append { [unowned self, weak nav] _ in
                guard let nav, !nav.finished else { return }
                self.finish(nav, .failure(NavError(.cancelled, "the navigation was cancelled: the client that asked for it disconnected", data: ["navigation": .string(nav.id)])))
            }
        }
        if let key { hub.pendingByKey[SessionKey(session.name, key)] = nav }
        runPreconditions(nav)
    }

    /// `open {url}`: a deep link builds its whole stack in one commit, after the preconditions of
    /// every coordinator on the way.
    private func open(_ call: Call) {
        let state: SessionState
        let url: String
        let dryRun: Bool
        let ifVersion: Int?
        do throws(RPCError) {
            let p = try Params<OpenParam>(call)
            state = try hub.state(p.given(.session), for: call.connection)
            url = try p.requiredString(.url, "the deep link to open, such as \"/product/42\" or \"shop://app/product/42\"")
            dryRun = try p.bool(.dryRun) ?? false
            ifVersion = try p.int(.ifVersion)
        } catch {
            call.fail(error)
            return
        }
        let session = state.session
        let caller = Caller(roles: call.connection.roles)
        let plan: Plan
        do throws(NavError) {
            plan = try session.planLink(url, caller: caller, ifVersion: ifVersion)
        } catch {
            call.fail(error.rpc)
            return
        }
        if dryRun {
            let (commit, visible) = session.dryRunCommit(plan)
            call.succeed([
                "dryRun": true, "version": .int(session.version), "node": commit?.node.map { $0.json(graph) } ?? .null,
                "visible": .array(visible.map(JSONValue.string)),
                "preconditions": .array(plan.preconditions.map { .string(graph.preconditions[$0].name) }),
                "changes": .array(commit?.changes ?? []),
            ])
            return
        }
        if plan.preconditions.isEmpty {
            call.finish(commitResult(state, plan, navigation: hub.nextNavigation(), starter: call.connection).mapError(\.rpc))
            return
        }
        let nav = PendingNavigation(number: hub.nextNavigation(), state: state, plan: plan,
                                    key: nil, caller: caller, reply: call.deferred())
        startPending(nav, for: call.connection)
    }

    /// Enters `nav` among the pending navigations, cancels it if the client that asked for it
    /// disconnects, and starts its preconditions.
    func startPending(_ nav: PendingNavigation, for connection: Connection, what: String = "navigation") {
        nav.registered = true
        hub.pending[nav.id] = nav
        connection.onClose.append { [unowned self, weak nav] _ in
            guard let nav, !nav.finished else { return }
            self.finish(nav, .failure(NavError(.cancelled, "the \(what) was cancelled: the client that asked for it disconnected", data: ["navigation": .string(nav.id)])))
        }
        runPreconditions(nav)
    }

    /// Commits a navigation whose preconditions passed.
    func commitResult(_ nav: PendingNavigation) -> Result<JSONValue, NavError> {
        if let instead = nav.commitInstead { return instead() }
        let r = commitResult(nav.state, nav.plan, navigation: nav.number, starter: nav.connection).map(\.json)
        guard !nav.redirects.isEmpty, case .success(.object(var o)) = r else { return r }
        // Where it went instead, and why.
        o.append("redirected", .array(nav.redirects.map { hop in
            ["from": .string(graph.coordinators[hop.from].name), "precondition": .string(hop.precondition), "to": .string(graph.coordinators[hop.to].name)]
        }))
        return .success(.object(o))
    }

    /// Remembers a keyed navigation's reply in its session and, with a state file, on disk (written
    /// with the iteration's commits, before the reply leaves).
    @inline(never)
    func remember(_ session: Session, key: String, _ reply: Result<JSONText, NavError>) {
        session.remember(key: key, reply)
        store.keyRemembered(session, key: key, reply: reply)
    }

    /// Commits `plan` and publishes it; `starter` hears `flowCompleted` of a flow it starts.
    func commitResult(_ state: SessionState, _ plan: Plan, navigation: Int, starter: Connection) -> Result<Navigated, NavError> {
        do throws(NavError) { return .success(try commit(state, plan, navigation: navigation, starter: starter)) } catch { return .failure(error) }
    }

    /// Commits `plan` and publishes it; `starter` hears `flowCompleted` of a flow it starts.
    @inline(__always)
    func commit(_ state: SessionState, _ plan: Plan, navigation: Int, starter: Connection) throws(NavError) -> Navigated {
        let c = try state.session.commit(plan)
        // Only a flow this commit made has a starter: selecting a tab whose first node is a flow,
        // or a link that ends on one already there, starts nothing.
        if let n = c.node, n.kind == .flow, state.session.madeByLastCommit(n) {
            state.flowStarters[n.id] = starter
            if let then = plan.then { state.flowThens[n.id] = then }
        }
        // The reply reports the path of this commit. Publishing can lead to further commits (a flow
        // that ended resumes a navigation; a dismissed source or a dropped subscriber cancels one
        // and its recovery flow), so then the path is listed now; otherwise it is written from
        // the tree when the reply is encoded, without building an array.
        let mayCommitAgain = c.endedList != nil || !c.removedNumbers.isEmpty || !state.subscribers.isEmpty
        let path: VisiblePath = mayCommitAgain ? .numbers(state.session.visibleNumbers) : .current(state.session)
        hub.publish(c, in: state, hints: plan.hints)
        return Navigated(navigation: navigation, node: c.node?.number ?? -1, version: c.version, visible: path)
    }

    /// Replies to everyone waiting on `nav` (the requester and joined keyed duplicates), once.
    func finish(_ nav: PendingNavigation, _ result: Result<JSONValue, NavError>) {
        guard !nav.finished else { return }
        nav.finished = true
        nav.cancelTask?()
        nav.cancelTask = nil
        let session = nav.state.session
        if nav.registered {
            hub.pending[nav.id] = nil
            let sourceKey = SessionKey(session.name, nav.plan.sourceId)
            if hub.pendingBySource[sourceKey] === nav { hub.pendingBySource[sourceKey] = nil }
            if let key = nav.key { hub.pendingByKey[SessionKey(session.name, key)] = nil }
        }
        if let key = nav.key { remember(session, key: key, result.map(JSONText.init)) }
        for r in nav.replies {
            switch result {
            case .success(let v): r.succeed(v)
            case .failure(let e): r.fail(e.rpc)
            }
        }
        if let done = nav.onFinish {
            nav.onFinish = nil
            done(result)
        }
    }

    /// A flow left the tree: a navigation waiting on it as a recovery resumes.
    func flowEnded(_ flow: EndedFlow, in state: SessionState) {
        recoveryFlowEnded(flow, in: state)
    }
}

/// The params of each navigation method (see ``ParamName``).
enum DismissParam: Int, ParamName {
    case session, node, to, inclusive, result
    nonisolated(unsafe) static var tableStorage: ParamTable?
}

enum UpdateParam: Int, ParamName {
    case session, node, with
    nonisolated(unsafe) static var tableStorage: ParamTable?
}

enum ResetParam: Int, ParamName {
    case session, to, ifVersion
    nonisolated(unsafe) static var tableStorage: ParamTable?
}

enum FlowCompleteParam: Int, ParamName {
    case session, flow, result, error, cancelled
    nonisolated(unsafe) static var tableStorage: ParamTable?
}

enum ContextParam: Int, ParamName {
    case session, facts
    nonisolated(unsafe) static var tableStorage: ParamTable?
}

enum SessionNameParam: Int, ParamName {
    case name, session
    nonisolated(unsafe) static var tableStorage: ParamTable?
}

enum ProvideParam: Int, ParamName {
    case preconditions, session
    nonisolated(unsafe) static var tableStorage: ParamTable?
}

enum CancelParam: Int, ParamName {
    case navigation, session
    nonisolated(unsafe) static var tableStorage: ParamTable?
}

enum NavigateParam: Int, ParamName {
    case session, to, route, by, with, from, ifVersion, key, dryRun, hints, popUpTo, then, detach, progress
    nonisolated(unsafe) static var tableStorage: ParamTable?
}

enum LinkResolveParam: Int, ParamName {
    case session, node
    nonisolated(unsafe) static var tableStorage: ParamTable?
}

enum OpenParam: Int, ParamName {
    case session, url, dryRun, ifVersion
    nonisolated(unsafe) static var tableStorage: ParamTable?
}
