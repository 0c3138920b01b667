import JSON
import NavGraph
import NavigationCore
import RPC

/// `dismiss`, with the `leave:` guards of what it would remove.
extension Navigator {
    func dismiss(_ call: Call) {
        let state: SessionState
        let node: String?, to: String?, inclusive: Bool, result: JSONValue?
        do throws(RPCError) {
            let p = try Params<DismissParam>(call)
            state = try self.state(p.given(.session), for: call.client)
            node = try p.string(.node)
            to = try p.string(.to)
            inclusive = try p.bool(.inclusive) ?? false
            if node != nil && to != nil {
                throw .invalidParams("`dismiss` takes \"node\" (that node and what is above it) or \"to\" (pop to a screen), not both", data: ["param": "to"])
            }
            result = p.value(.result)
            if let result { try checkSize(result, "\"result\"", limit: Navigator.maxHintsBytes, param: "result") }
        } catch {
            call.fail(error)
            return
        }
        let session = state.session
        // The leave guards of every screen and flow it would remove, the top one's first.
        var guards: [Int] = []
        var guarded: Node?
        if graph.hasLeaveGuards {
            do throws(NavError) {
                (guards, guarded) = try session.leaveGuards(node: node, to: to, inclusive: inclusive)
            } catch {
                call.fail(error.rpc)
                return
            }
        }
        guard let guarded else {
            // No guard: dismiss at once.
            do throws(NavError) {
                call.succeed(Removed(try dismissNow(state, node: node, to: to, inclusive: inclusive, result: result, caller: call.client)))
            } catch {
                call.fail(error.rpc)
            }
            return
        }
        let plan = Plan(target: guarded.coordinator, by: .push, params: guarded.params, source: guarded.number, ifVersion: nil, preconditions: guards)
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan, key: nil,
                                    caller: Caller(roles: call.client.roles), reply: call.deferred())
        nav.leaving = guarded.id
        let connection = call.client
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
