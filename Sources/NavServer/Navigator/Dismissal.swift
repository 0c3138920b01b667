import JSON
import NavGraph
import NavigationCore
import RPC

/// `dismiss`, with the `leave:` guards of what it would remove.
extension Navigator {
    func dismiss(_ r: borrowing DismissRequest, _ call: some Responder) {
        let state = r.state
        let session = state.session
        // The leave guards of every screen and flow it would remove, the top one's first.
        var guards: [Int] = []
        var guarded: Node?
        if graph.hasLeaveGuards {
            do throws(NavError) {
                (guards, guarded) = try session.leaveGuards(node: r.node, to: r.to, inclusive: r.inclusive)
            } catch {
                call.fail(error.rpc)
                return
            }
        }
        guard let guarded else {
            // No guard: dismiss at once.
            do throws(NavError) {
                call.succeed(Removed(try dismissNow(state, node: r.node, to: r.to, inclusive: r.inclusive, result: r.result, caller: call.client)))
            } catch {
                call.fail(error.rpc)
            }
            return
        }
        let plan = Plan(target: guarded.coordinator, by: .push, params: guarded.params, source: guarded.number, ifVersion: nil, preconditions: guards)
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan, key: nil,
                                    caller: Caller(roles: call.client.roles), reply: call.deferred(), client: call.client)
        nav.leaving = guarded.id
        let connection = call.client
        let (node, to, inclusive, result) = (r.node, r.to, r.inclusive, r.result)
        nav.commitInstead = { [unowned self] in
            Result { () throws(NavError) in
                let c = try self.dismissNow(state, node: node, to: to, inclusive: inclusive, result: result, caller: connection)
                return ["version": .int(c.version), "removed": .array(c.removed.map(JSONValue.string))]
            }
        }
        startPending(nav, supersedingBySource: true)
    }

    /// Dismisses (the guards, if any, have passed): commits, publishes and hands `result` on.
    private func dismissNow(_ state: SessionState, node: String?, to: String?, inclusive: Bool, result: JSONValue?,
                            caller: some Client) throws(NavError) -> Commit {
        let session = state.session
        let shown = result == nil ? nil : session.visibleTop?.id
        let c: Commit
        if let to { c = try session.dismiss(to: to, inclusive: inclusive) } else { c = try session.dismiss(node) }
        publish(c, in: state)
        if let result { deliverScreenResult(result, from: shown ?? c.removed.first ?? "", in: state, caller: caller) }
        return c
    }
}
