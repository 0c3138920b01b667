import JSON
import NavGraph
import NavigationCore
import RPC

/// `flowComplete`, and the navigation a completed flow continues with (`then`).
extension Navigator {
    func flowComplete(_ r: FlowCompleteRequest, _ call: some Responder) {
        let (state, flow, outcome) = (r.state, r.flow, r.outcome)
        // Read before the commit: publishing the end of the flow forgets both.
        let recovering = recoveries[SessionKey(state.session.name, flow)]
        let isRecovery = recovering != nil
        if let nav = recovering, case .result = outcome {
            // A completed recovery flow writes its precondition's `recover.facts` into the session:
            // only who may write the session's facts may complete it (as `context.set` requires).
            let p = graph.preconditions[nav.plan.preconditions[nav.step]]
            if !p.recoverFacts.isEmpty {
                do throws(NavError) {
                    try requireOwner(call.client, state.session, "completing recovery flow `\(flow)` (it sets the facts \(p.recoverFacts.keys.joined(separator: ", ")) by `recover.facts` of \(p.name))")
                } catch {
                    call.fail(error.rpc)
                    return
                }
            }
        }
        let flowNode = state.session.node(flow)
        let flowCoordinator = flowNode.flatMap { $0.kind == .flow ? $0.coordinator : nil }
        let then = flowNode?.then ?? flowCoordinator.flatMap { graph.coordinators[$0].flow?.then }
        // Where the flow is: its `then` goes on from the screen its end leaves on top there.
        let region = then == nil ? nil : flowNode.map { Session.Region(around: $0, in: state.session, goingBack: false) }
        if case .result(let result) = outcome, !isRecovery {
            // A flow first in the root stack or a tab ends only as its `then` takes its place.
            let completion: Plan?
            do throws(NavError) {
                completion = try state.session.planCompletion(of: flow, result: result, then: then, caller: Caller(lending: call.client.roleHolder))
            } catch {
                call.fail(error.rpc)
                return
            }
            if let completion {
                completeByThen(completion, in: state, call: call)
                return
            }
        }
        let c: Commit
        do throws(NavError) { c = try state.session.flowComplete(flow, outcome) } catch {
            call.fail(error.rpc)
            return
        }
        publish(c, in: state)
        // A recovery flow's completion resumes the navigation that waited on it instead.
        guard case .result(let result) = outcome, !isRecovery, let then, let flowCoordinator else {
            call.succeed(Removed(c))
            return
        }
        let top = region?.topScreen(in: state.session)
        let from = top === state.session.visibleTop ? nil : top?.id
        continueAfterFlow(then, of: flowCoordinator, from: from, result: result, completed: c, in: state, call: call)
    }

    /// Completes a flow first in the root stack or a tab by its `then`, which takes its place in one
    /// commit (after the `then`'s preconditions): the reply is `flowComplete`'s, that commit's
    /// `version` and `removed`, with the navigation as `then`. If the `then` fails, nothing changes:
    /// the flow is still live, and `flowComplete` fails with that error.
    private func completeByThen(_ completion: Plan, in state: SessionState, call: some Responder) {
        let session = state.session, client = call.client
        // What the `then` removes beyond the flow's end (another tab's screens, by `root`) keeps its
        // leave guards: they run first, as for any navigation that replaces screens.
        let plan = guardingCompletion(completion, in: session)
        /// Commits `plan` (the `then`, or where a precondition redirected it): the reply's `removed`
        /// is what that commit took out of the tree.
        func commitNow(_ plan: Plan, navigation: Int, redirects: [(from: Int, precondition: String, to: Int)] = []) -> Result<JSONValue, NavError> {
            var before: [String] = []
            session.root.forEach { before.append($0.id) }
            return commitResult(state, plan, navigation: navigation, starter: client).map { [graph] navigated in
                var then = navigated.json
                if !redirects.isEmpty, case .object(var o) = then {
                    // Where it went instead, and why (as a navigate's reply says).
                    o.append("redirected", .array(redirects.map { hop in
                        ["from": .string(graph.coordinators[hop.from].name), "precondition": .string(hop.precondition), "to": .string(graph.coordinators[hop.to].name)]
                    }))
                    then = .object(o)
                }
                let removed = before.filter { session.node($0) == nil }.map(JSONValue.string)
                return ["version": then["version"] ?? .int(session.version), "removed": .array(removed), "then": then]
            }
        }
        if plan.preconditions.isEmpty {
            let deferred = call.deferred()
            switch commitNow(plan, navigation: nextNavigation()) {
            case .success(let reply): deferred.succeed(reply)
            case .failure(let e): deferred.fail(e.rpc)
            }
            return
        }
        let deferred = call.deferred()
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan, caller: Caller(lending: client.roleHolder), client: client)
        nav.commitInstead = { [unowned nav] in commitNow(nav.plan, navigation: nav.number, redirects: nav.redirects) }
        // What changed while it waited is compared with the guards it would run now, not those of the flow's end.
        nav.guardsNow = { [unowned self, unowned nav] in self.completionGuards(nav.plan, in: session) }
        nav.onFinish = { outcome in
            switch outcome {
            case .success(let reply): deferred.succeed(reply)
            case .failure(let e): deferred.fail(e.rpc)
            }
        }
        startPending(nav)
    }

    /// Navigates to a completed flow's `then` from the screen now on top where the flow was (`from`:
    /// that screen when it is not the visible top: a flow in a tab not selected), as the client that
    /// completed it; the reply to `flowComplete` carries its outcome as `then` (after its preconditions).
    private func continueAfterFlow(_ then: NavigationSpec, of flow: Int, from: String?, result: JSONValue, completed c: Commit, in state: SessionState,
                                   call: some Responder) {
        let removed: JSONValue = .array(c.removed.map(JSONValue.string))
        let version = c.version
        func reply(_ outcome: Result<JSONValue, NavError>, _ to: any Answer) {
            let thenValue: JSONValue
            switch outcome {
            case .success(let v): thenValue = v
            case .failure(let e): thenValue = ["error": e.rpc.json]
            }
            to.succeed(["version": .int(version), "removed": removed, "then": thenValue] as JSONValue)
        }
        let caller = Caller(lending: call.client.roleHolder)
        var plan: Plan
        do throws(NavError) {
            // (No `with` given: a `then` that selects a tab keeps its screen's params.)
            plan = try state.session.plan(Destination(target: then.to), by: then.by, with: then.with.map { resolveResultReferences($0, in: result) },
                                          from: from, ifVersion: nil, caller: caller, afterFlow: flow)
            // A `then` that replaces the screen below the flow (or, by `root`, the tree) runs the
            // leave guards of what it removes, as `navigate` does.
            if plan.by.mayReplaceScreens { plan = guardingReplacement(plan, in: state.session) }
        } catch {
            reply(.failure(error), call.deferred())
            return
        }
        if plan.preconditions.isEmpty {
            reply(commitResult(state, plan, navigation: nextNavigation(), starter: call.client).map(\.json), call.deferred())
            return
        }
        let deferred = call.deferred()
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan, caller: caller, client: call.client)
        nav.onFinish = { outcome in reply(outcome, deferred) }
        startPending(nav)
    }
}
