import JSON
import NavGraph
import NavigationCore
import RPC

/// `dismiss`, with the `leave:` guards of what it would remove.
extension Navigator {
    func dismiss(_ r: borrowing DismissRequest, _ call: some Responder) {
        let state = r.state
        call.withClient { client in
            state.withSession { session in
                guard let o = r.options else {
                    return dismiss(state, session, node: nil, to: nil, inclusive: false, result: nil, merge: false, call, by: client)
                }
                dismiss(state, session, node: o.node, to: o.to, inclusive: o.inclusive, result: o.result, merge: o.merge, call, by: client)
            }
        }
    }

    private func dismiss<R: Responder>(_ state: SessionState, _ session: Session, node: String?, to: String?, inclusive: Bool, result: JSONValue?,
                                       merge: Bool, _ call: R, by client: R.Asker) {
        // A screen with earlier params (`update {push: true}`) takes them back and stays: nothing
        // is removed, so no leave guard runs. Not when the dismiss hands a result on or goes `to`.
        if to == nil && result == nil {
            do throws(NavError) {
                if let c = try session.restoreEarlierParams(node) {
                    publish(c, in: state)
                    call.succeed(Removed(c))
                    return
                }
            } catch {
                call.fail(error.rpc)
                return
            }
        }
        // The leave guards of every screen and flow it would remove, the top one's first.
        var guards: [LeaveGuard] = []
        var guarded: Node?
        if graph.hasLeaveGuards {
            do throws(NavError) {
                (guards, guarded) = try session.leaveGuards(node: node, to: to, inclusive: inclusive, goingBack: true)
            } catch {
                call.fail(error.rpc)
                return
            }
        }
        guard let guarded else {
            // No guard: dismiss at once.
            do throws(NavError) {
                call.succeed(Removed(try dismissNow(state, session, node: node, to: to, inclusive: inclusive, result: result, merge: merge, caller: client)))
            } catch {
                call.fail(error.rpc)
            }
            return
        }
        let plan = Plan(target: guarded.coordinator, by: .push, setup: guarded.setup, source: guarded.number, ifVersion: nil, preconditions: [])
            .withPreconditions(before: guards)
        let nav = PendingNavigation(number: nextNavigation(), state: state, plan: plan, key: nil,
                                    caller: Caller(lending: client.roleHolder), reply: call.deferred(), client: client)
        nav.leaving = guarded.id
        let connection = client
        // What it dismisses is what it was asked about: the screen shown now (not whatever is on top
        // once the guards pass), the screen `to` matches now (wherever it is by then).
        let node = node ?? (to == nil ? session.visibleTop?.id : nil)
        let match = to.flatMap { try? session.popTarget($0).number }
        nav.guardsNow = {
            if let match, let guards = try? session.leaveGuards(popTo: match, inclusive: inclusive) { return guards }
            return (try? session.leaveGuards(node: node, to: nil, inclusive: false, goingBack: true))?.guards ?? []
        }
        nav.commitInstead = { [unowned self] in
            Result { () throws(NavError) in
                let c = try self.dismissNow(state, state.session, node: node, toNode: match, inclusive: inclusive, result: result, merge: merge, caller: connection)
                return ["version": .int(c.version), "removed": .array(c.removed.map(JSONValue.string))]
            }
        }
        startPending(nav, supersedingBySource: true)
    }

    /// Dismisses (the guards, if any, have passed): commits, publishes and hands `result` on.
    private func dismissNow(_ state: SessionState, _ session: Session, node: String?, to: String? = nil, toNode: Int? = nil, inclusive: Bool,
                            result: JSONValue?, merge: Bool, caller: some Client) throws(NavError) -> Commit {
        guard let result else {
            // Nothing handed on: no region or merge to note (no optional value made and dropped).
            let c = try commitDismissal(session, node: node, to: to, toNode: toNode, inclusive: inclusive, merging: nil)
            publish(c, in: state)
            return c
        }
        // `screenResult`: the screen shown where the dismiss takes effect, and then the one left on top there.
        let region = (try? session.dismissal(node: node, to: to, toNode: toNode, inclusive: inclusive)).map { Session.Region(around: $0, in: session) }
        let shown = region?.topScreen(in: session)?.id
        let merging = merge ? result.objectValue.map {
            Session.ResultMerge(fields: $0, caller: Caller(lending: caller.roleHolder), maxBytes: config.maxMessage)
        } : nil
        let c = try commitDismissal(session, node: node, to: to, toNode: toNode, inclusive: inclusive, merging: merging)
        publish(c, in: state)
        deliverScreenResult(result, from: shown ?? c.removed.first ?? "", to: region?.topScreen(in: session)?.id, in: state, caller: caller)
        return c
    }

    /// The dismiss's commit, and the `back:` coverage of the tabs it went back in.
    @inline(__always)
    private func commitDismissal(_ session: Session, node: String?, to: String?, toNode: Int?, inclusive: Bool,
                                 merging: Session.ResultMerge?) throws(NavError) -> Commit {
        let c: Commit
        if let toNode {
            c = try session.dismiss(toNode: toNode, inclusive: inclusive, merging: merging)
        } else if let to {
            c = try session.dismiss(to: to, inclusive: inclusive, merging: merging)
        } else {
            c = try session.dismiss(node, merging: merging)
        }
        if let container = session.wentBackIn {
            session.wentBackIn = nil
            coverage.forEachActive { $0.wentBack(in: container) }
        }
        return c
    }
}
