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

    /// The dry run of a navigation whose `key` was used: `replays` (the first one's result) or
    /// `joins` (the pending navigation it would wait for); nothing would change.
    private func keyedDryRun(_ session: Session, key: String) -> JSONValue? {
        let extra: (String, JSONValue)
        if case .success(let first)? = session.keyed[key] {
            extra = ("replays", (try? JSONParser(maxDepth: 64).parse(first.bytes)) ?? .null)
        } else if let joining = pendingByKey[SessionKey(session.name, key)] {
            extra = ("joins", .string(joining.id))
        } else {
            return nil
        }
        return ["dryRun": true, "version": .int(session.version), "node": .null, "visible": .array(session.visible.map(JSONValue.string)),
                "preconditions": [], "changes": [], extra.0: extra.1]
    }

    func navigate(_ r: borrowing NavigateRequest, _ call: some Responder) {
        call.withClient { client in r.state.withSession { session in navigate(r, call, by: client, in: session) } }
    }

    private func navigate<R: Responder>(_ r: borrowing NavigateRequest, _ call: R, by client: R.Asker, in session: Session) {
        let state = r.state
        let caller = Caller(lending: client.roleHolder)
        if r.dryRun {
            // A key already used: the navigation would change nothing and get the first one's reply
            // (or wait for the pending one), so that is what a dry run answers.
            if let key = r.key, let replay = keyedDryRun(session, key: key) {
                call.succeed(replay)
                return
            }
            do {
                let plan = try self.plan(r, caller: caller)
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
        let key = r.key
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
            plan = try self.plan(r, caller: caller)
        } catch {
            if let key { remember(state, key: key, .failure(error)) }
            call.fail(error.rpc)
            return
        }
        if plan.preconditions.isEmpty {
            // Nothing to wait for: commit now, without the pending-navigation bookkeeping.
            let number = nextNavigation()
            do throws(NavError) {
                let done = try commit(state, lent: session, plan, navigation: number, starter: client, key: key)
                if let key { remember(state, key: key, .success(JSONText(encoding: done))) }
                call.succeed(done)
            } catch {
                if let key { remember(state, key: key, .failure(error)) }
                call.fail(error.rpc)
            }
            // After its commit, so that ending the older one (and a recovery flow it presented) does
            // not move the version this navigation's `ifVersion` was checked against.
            supersedePending(from: plan.source, in: session, by: number)
            return
        }
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan, key: key, caller: caller, reply: call.deferred(), client: client)
        // A detached navigation outlives its client (`navctl --no-wait`); others end with it.
        nav.detached = r.detach
        nav.force = r.options?.force ?? false
        nav.reportsProgress = r.progress
        startPending(nav, supersedingBySource: true)
    }

    /// Validates a navigation: its plan, with the options few navigations give (`hints`, `popUpTo`,
    /// `then`).
    private func plan(_ r: borrowing NavigateRequest, caller: Caller) throws(NavError) -> Plan {
        let session = r.state.session
        guard let o = r.options else {
            // The usual navigation: `to` found by its bytes, nothing else given (nil literals: no
            // optional value is copied and dropped).
            let destination = if let i = r.coordinator { Destination(target: i) } else { try graph.destination(to: nil, route: nil) }
            let p = try session.plan(destination, by: r.by, with: nil, from: nil, ifVersion: r.ifVersion, caller: caller, withView: r.withView)
            return p.by.mayReplaceScreens ? guardingReplacement(p, in: session) : p
        }
        let destination: Destination
        if o.route == nil, let i = r.coordinator {
            destination = Destination(target: i)
        } else {
            destination = try graph.destination(to: o.toName, route: o.route)
            if destination.route >= 0 { coverage.forEachActive { $0.resolved(route: destination.route) } }
        }
        var p = try session.plan(destination, by: r.by, with: o.with, from: o.from, ifVersion: r.ifVersion, caller: caller, withView: r.withView,
                                 existing: o.existing, merge: o.merge)
        let then = try o.then.map { v throws(NavError) in try navigationSpec(v, param: "then") }
        if let then { try checkThen(then, flow: p.target) }
        try applyOptions(to: &p, session: session, hints: o.hints, popUpTo: o.popUpTo, then: then)
        if p.reuse != nil, let pop = p.popUpTo, graph.hasLeaveGuards {
            // `existing: pop` removes what is above the screen it keeps: their leave guards run first.
            let guards = try session.leaveGuards(above: pop.node)
            if !guards.isEmpty { p = p.withPreconditions(before: guards) }
        }
        return !o.force && p.by.mayReplaceScreens ? guardingReplacement(p, in: session) : p
    }

    /// `plan` (a `replace`, a `root`, a `select` that brings the declared tabs back, a deep link or
    /// a `reset {to}`), after the `leave:` guards of
    /// the screens it removes (the topmost's first), as a dismiss runs them; `force` skips them.
    /// Those in `passed` (which passed for the navigation already, before a redirect) are not run again.
    func guardingReplacement(_ plan: Plan, in session: Session, passed: Set<LeaveGuard> = []) -> Plan {
        guard graph.hasLeaveGuards else { return plan }
        let guards = session.leaveGuards(removedBy: plan).filter { !passed.contains($0) }
        return guards.isEmpty ? plan : plan.withPreconditions(before: guards)
    }

    /// The `leave:` guards a completing flow's `then` (``Plan/completing``) runs: those of what its
    /// commit removes outside the flow's own stack (a `then` by `root` from a tab takes the other
    /// tabs too). The flow, and the stack it is first in, leave because the flow completes, and a
    /// flow's end runs no guard (as `flowComplete` of any flow removes what is above it).
    func completionGuards(_ plan: Plan, in session: Session) -> [LeaveGuard] {
        guard graph.hasLeaveGuards, let flow = plan.completing?.flow else { return [] }
        let guards = session.leaveGuards(removedBy: plan)
        guard !guards.isEmpty, let stack = session.node(number: flow)?.parent else { return guards }
        var ending = Set<Int>()
        stack.forEach { ending.insert($0.number) }
        return guards.filter { !ending.contains($0.node) }
    }

    /// `plan`, a completing flow's `then`, after ``completionGuards(_:in:)`` (those not in `passed`).
    func guardingCompletion(_ plan: Plan, in session: Session, passed: Set<LeaveGuard> = []) -> Plan {
        let guards = completionGuards(plan, in: session).filter { !passed.contains($0) }
        return guards.isEmpty ? plan : plan.withPreconditions(before: guards)
    }

    /// The most requests that may wait for one pending keyed navigation (repeats of its key).
    static let maxJoined = 64

    /// `open {url}`: a deep link builds its whole stack in one commit, after the preconditions of
    /// every coordinator on the way.
    func open(_ r: OpenRequest, _ call: some Responder) {
        let (state, url, dryRun, ifVersion) = (r.state, r.url, r.dryRun, r.ifVersion)
        let session = state.session
        let caller = Caller(lending: call.client.roleHolder)
        let plan: Plan
        do throws(NavError) {
            let link = try session.planLink(url, caller: caller, ifVersion: ifVersion)
            if r.pushesLastScreen, let last = link.link?.last {
                // Jetpack's navigate(Uri): the matched destination, pushed as `navigate` would push
                // it (the visible screen's opens decide; unset fields mediated from it), with
                // navOptions' popUpTo as `navigate {popUpTo}` does it (leave guards first).
                var pushed = try session.plan(Destination(target: last.coordinator), by: .push, with: last.params.objectValue, from: nil,
                                              ifVersion: ifVersion, caller: caller)
                if let popUpTo = r.popUpTo { try applyOptions(to: &pushed, session: session, hints: nil, popUpTo: popUpTo, then: nil) }
                plan = pushed
            } else {
                plan = r.force ? link : guardingReplacement(link, in: session)
            }
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
        // The link's last screen pushed from the visible one is a navigation from that screen: it
        // supersedes one pending from there, as `navigate` does. A whole stack removes the screen,
        // which cancels what is pending from it.
        let pushes = r.pushesLastScreen
        if plan.preconditions.isEmpty {
            let number = nextNavigation()
            call.finish(commitResult(state, plan, navigation: number, starter: call.client).mapError(\.rpc))
            if pushes { supersedePending(from: plan.source, in: session, by: number) }
            return
        }
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan,
                                    key: nil, caller: caller, reply: call.deferred(), client: call.client)
        nav.force = r.force
        startPending(nav, supersedingBySource: pushes)
    }

    /// `reset {}` (the graph's root, fresh) or `reset {to: [{to, with?, by?}…]}` (a stack built as a
    /// deep link builds it, after the preconditions of its screens).
    func reset(_ r: ResetRequest, _ call: some Responder) {
        let (state, steps, ifVersion) = (r.state, r.steps, r.ifVersion)
        let session = state.session
        guard let steps else {
            if let v = ifVersion, v != session.version {
                call.fail(NavError(.conflict, "the tree is at version \(session.version), not \(v) as \"ifVersion\" requires", data: ["version": .int(session.version)]).rpc)
                return
            }
            let resetNow = { [unowned self] () -> JSONValue in
                let c = session.resetToRoot()
                // The root, fresh: shown again, as a new session's (its flows started).
                self.coverage.forEachActive { $0.sessionStarted() }
                self.publish(c, in: state)
                return ["version": .int(c.version), "visible": .array(session.visible.map(JSONValue.string))]
            }
            let guards = graph.hasLeaveGuards && !r.force ? session.leaveGuardsOfTheTree() : []
            guard !guards.isEmpty, let top = session.visibleTop else { return call.succeed(resetNow()) }
            // The leave guards of the whole tree first, as a dismiss of it would run them.
            let plan = Plan(target: top.coordinator, by: .root, setup: top.setup, source: top.number, ifVersion: nil, preconditions: [])
                .withPreconditions(before: guards)
            let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan, key: nil,
                                        caller: Caller(lending: call.client.roleHolder), reply: call.deferred(), client: call.client)
            nav.leaving = top.id
            nav.guardsNow = { session.leaveGuardsOfTheTree() }
            nav.commitInstead = { .success(resetNow()) }
            startPending(nav)
            return
        }
        var plan: Plan
        do throws(NavError) {
            plan = try session.planReset(steps, caller: Caller(lending: call.client.roleHolder), ifVersion: ifVersion)
            if !r.force { plan = guardingReplacement(plan, in: session) }
        } catch {
            call.fail(error.rpc)
            return
        }
        if plan.preconditions.isEmpty {
            call.finish(commitResult(state, plan, navigation: nextNavigation(), starter: call.client).mapError(\.rpc))
            return
        }
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan, key: nil,
                                    caller: Caller(lending: call.client.roleHolder), reply: call.deferred(), client: call.client)
        nav.force = r.force
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
            let match = try session.popTarget(popUpTo.to)
            if popUpTo.inclusive && session.isFirstOfARootStack(match) {
                // Jetpack's popUpTo(start) { inclusive = true }: the stack is never empty, so the
                // target takes the first screen's place (by: replace), after the leave guards of
                // that screen and of what is above it.
                guard plan.by == .push else {
                    throw NavError(.invalidParams, "popUpTo inclusive of `\(match.id)`, the first screen of its stack, makes the target its first screen, which a push does (as by: replace from it); a stack is never empty, so there is nothing to present from",
                                   data: ["param": "popUpTo"])
                }
                var guards = graph.coordinators[match.coordinator].leave.map { LeaveGuard(precondition: $0, node: match.number) }
                if graph.hasLeaveGuards, let above = try? session.leaveGuards(node: nil, to: match.id, inclusive: false) {
                    guards = above.guards + guards.filter { !above.guards.contains($0) }
                }
                plan = plan.replacing(match.number, preconditions: guards)
                _ = try session.dryRun(plan)
                return
            }
            plan.popUpTo = (match.number, popUpTo.inclusive)
            // The screens the pop removes keep their leave guards: they run first.
            if graph.hasLeaveGuards, let guards = try? session.leaveGuards(node: nil, to: popUpTo.to, inclusive: popUpTo.inclusive),
               !guards.guards.isEmpty {
                plan = plan.withPreconditions(before: guards.guards)
            }
            // What the pop leaves on top must be able to show the target (a modal already shown is popped first).
            _ = try session.dryRun(plan)
        }
    }

    /// `navigate {then}` goes only to a flow, and names the flow's declared `then` or one of its opens.
    func checkThen(_ then: NavigationSpec, flow target: Int) throws(NavError) {
        // Kept with the flow's node and saved with the tree as written there (qualified names):
        // bounded as `hints` are, in that form, so that a restart reads back what navd wrote.
        let size = graph.object(then).encodedSize
        if size > Session.maxThenBytes {
            throw NavError(.limitExceeded, "\"then\" is \(size) bytes of JSON (its target's name qualified); it may be at most \(Session.maxThenBytes)",
                           data: ["param": "then", "limit": "then", "max": .int(Session.maxThenBytes)])
        }
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

extension Presentation {
    /// Whether a navigation by this style may remove screens besides its source's stack top: a
    /// `replace`, a `root`, and a `select` that brings back the tabs a `root` navigation replaced.
    var mayReplaceScreens: Bool { self == .replace || self == .root || self == .select }
}
