import JSON
import NavGraph
import NavigationCore
import RPC
#if canImport(Glibc)
import Glibc
#endif

/// Pending navigations: started, committed when their preconditions pass, finished with one
/// outcome for every reply waiting on them.
extension Navigator {
    /// Enters `nav` among the pending navigations, cancels it if the client that asked for it
    /// disconnects, and starts its preconditions.
    func startPending(_ nav: PendingNavigation, for client: some Client, what: String = "navigation") {
        nav.registered = true
        pending[nav.id] = nav
        client.whenGone { [unowned self, weak nav] _ in
            guard let nav, !nav.finished else { return }
            self.finish(nav, .failure(NavError(.cancelled, "the \(what) was cancelled: the client that asked for it disconnected", data: ["navigation": .string(nav.id)])))
        }
        runPreconditions(nav)
    }

    /// Commits a navigation whose preconditions passed.
    func commitResult(_ nav: PendingNavigation) -> Result<JSONValue, NavError> {
        if let instead = nav.commitInstead { return instead() }
        let r = commitResult(nav.state, nav.plan, navigation: nav.number, starter: nav.client).map(\.json)
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
    func commitResult(_ state: SessionState, _ plan: Plan, navigation: Int, starter: some Client) -> Result<Navigated, NavError> {
        do throws(NavError) { return .success(try commit(state, plan, navigation: navigation, starter: starter)) } catch { return .failure(error) }
    }

    /// Commits `plan` and publishes it; `starter` hears `flowCompleted` of a flow it starts.
    @inline(__always)
    func commit(_ state: SessionState, _ plan: Plan, navigation: Int, starter: some Client) throws(NavError) -> Navigated {
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
        publish(c, in: state, hints: plan.hints)
        return Navigated(navigation: navigation, node: c.node?.number ?? -1, version: c.version, visible: path)
    }

    /// Replies to everyone waiting on `nav` (the requester and joined keyed duplicates), once.
    /// A navigation being committed is answered by its commit alone (see ``PendingNavigation/committing``).
    func finish(_ nav: PendingNavigation, _ result: Result<JSONValue, NavError>) {
        guard !nav.finished, !nav.committing else { return }
        nav.finished = true
        nav.cancelTask?()
        nav.cancelTask = nil
        let session = nav.state.session
        if nav.registered {
            pending[nav.id] = nil
            let sourceKey = SessionKey(session.name, nav.plan.sourceId)
            if pendingBySource[sourceKey] === nav { pendingBySource[sourceKey] = nil }
            if let key = nav.key { pendingByKey[SessionKey(session.name, key)] = nil }
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
