import JSON
import NavGraph
import NavigationCore
import RPC
#if canImport(Glibc)
import Glibc
#endif

/// `navigate`, `open` and `reset`: decoded, planned by the session, started as pending navigations.
extension Navigator {
    // MARK: navigate

    func navigate(_ call: Call) {
        let state: SessionState
        let by: Presentation?, to: JSONView?, route: String?, with: JSONObject?, from: String?, ifVersion: Int?, key: String?, dryRun: Bool
        let detach: Bool, progress: Bool
        let hints: JSONValue?
        var withBytes: Int?
        let popUpTo: (to: String, inclusive: Bool)?
        let then: NavigationSpec?
        do throws(RPCError) {
            let p = try Params<NavigateParam>(call)
            state = try self.state(p.given(.session), for: call.client)
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
            with = try p.objectParam(.with, keys: setupKeys, reusing: state.session.takeSpareSetupStorage(), size: &withBytes)
            from = try p.string(.from)
            ifVersion = try p.int(.ifVersion)
            key = try p.string(.key)
            if let key { try config.checkName(key, "the navigation key", param: "key") }
            dryRun = try p.bool(.dryRun) ?? false
            detach = try p.bool(.detach) ?? false
            progress = try p.bool(.progress) ?? false
            if let h = p.value(.hints) {
                guard case .object = h else {
                    throw .invalidParams("\"hints\" must be an object of presentation wishes, like {\"animated\": false}", data: ["param": "hints"])
                }
                try checkSize(h, "\"hints\"", limit: Navigator.maxHintsBytes, param: "hints")
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
        let caller = Caller(roles: call.client.roles)
        let session = state.session
        /// Validates the navigation (while `to` is still readable: before this handler returns).
        func validate() throws(NavError) -> Plan {
            let destination: Destination
            if route == nil, let to, let i = graph.coordinatorIndex(utf8: to.stringBytes) {
                destination = Destination(target: i)
            } else {
                destination = try graph.destination(to: to?.string, route: route)
            }
            return try session.plan(destination, by: by, with: with, from: from, ifVersion: ifVersion, caller: caller, withBytes: withBytes)
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
            if let joining = pendingByKey[SessionKey(session.name, key)] {
                guard joining.replies.count < Navigator.maxJoined else {
                    call.fail(.limitExceeded("\(joining.replies.count) requests already wait for \(joining.id) (key \"\(key)\"), the most that may; wait for its reply",
                                             limit: "joined", max: Navigator.maxJoined))
                    return
                }
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
                let done = try commit(state, plan, navigation: nextNavigation(), starter: call.client)
                if let key { remember(session, key: key, .success(JSONText(encoding: done))) }
                call.succeed(done)
            } catch {
                if let key { remember(session, key: key, .failure(error)) }
                call.fail(error.rpc)
            }
            return
        }
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan, key: key, caller: caller, reply: call.deferred())
        // A detached navigation outlives its client (`navctl --no-wait`); others end with it.
        nav.detached = detach
        nav.reportsProgress = progress
        startPending(nav, supersedingBySource: true)
    }

    /// The most requests that may wait for one pending keyed navigation (repeats of its key).
    static let maxJoined = 64

    /// `open {url}`: a deep link builds its whole stack in one commit, after the preconditions of
    /// every coordinator on the way.
    func open(_ call: Call) {
        let state: SessionState
        let url: String
        let dryRun: Bool
        let ifVersion: Int?
        do throws(RPCError) {
            let p = try Params<OpenParam>(call)
            state = try self.state(p.given(.session), for: call.client)
            url = try p.requiredString(.url, "the deep link to open, such as \"/product/42\" or \"shop://app/product/42\"")
            dryRun = try p.bool(.dryRun) ?? false
            ifVersion = try p.int(.ifVersion)
        } catch {
            call.fail(error)
            return
        }
        let session = state.session
        let caller = Caller(roles: call.client.roles)
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
            call.finish(commitResult(state, plan, navigation: nextNavigation(), starter: call.client).mapError(\.rpc))
            return
        }
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan,
                                    key: nil, caller: caller, reply: call.deferred())
        startPending(nav)
    }

    /// `reset {}` (the graph's root, fresh) or `reset {to: [{to, with?, by?}…]}` (a stack built as a
    /// deep link builds it, after the preconditions of its screens).
    func reset(_ call: Call) {
        let state: SessionState
        let steps: [ResetStep]?
        let ifVersion: Int?
        do throws(RPCError) {
            let p = try Params<ResetParam>(call)
            state = try self.state(p.given(.session), for: call.client)
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
            publish(c, in: state)
            call.succeed(["version": .int(c.version), "visible": .array(session.visible.map(JSONValue.string))])
            return
        }
        let plan: Plan
        do throws(NavError) {
            plan = try session.planReset(steps, caller: Caller(roles: call.client.roles), ifVersion: ifVersion)
        } catch {
            call.fail(error.rpc)
            return
        }
        if plan.preconditions.isEmpty {
            call.finish(commitResult(state, plan, navigation: nextNavigation(), starter: call.client).mapError(\.rpc))
            return
        }
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan, key: nil,
                                    caller: Caller(roles: call.client.roles), reply: call.deferred())
        startPending(nav)
    }

    /// `navigate`'s `hints`, `then` and `popUpTo`, applied to a validated plan. (A method, not part
    /// of `navigate`'s local `validate`, so that the plan of every other navigation captures nothing
    /// more.)
    func applyOptions(to plan: inout Plan, session: Session, hints: JSONValue?, popUpTo: (to: String, inclusive: Bool)?,
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
    func checkThen(_ then: NavigationSpec, flow target: Int) throws(NavError) {
        let flow = graph.coordinators[target]
        guard flow.flow != nil else {
            throw NavError(.invalidParams, "\"then\" says where to go when a flow completes, and `\(flow.name)` is not a flow", data: ["param": "then"])
        }
        if then.by?.needsAbility ?? true, !flow.mayContinue(to: then.to) {
            throw NavError(.notAllowed, "flow `\(flow.name)` cannot continue to `\(graph.coordinators[then.to].name)`: \"then\" names its declared `then` or a coordinator its opens list",
                           data: ["param": "then", "to": .string(graph.coordinators[then.to].name)])
        }
    }
}
