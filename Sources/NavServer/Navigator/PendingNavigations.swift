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
    /// Enters `nav` among the pending navigations (``register(_:)``) and starts its preconditions;
    /// answers a limit's refusal instead when one more would pass it (not remembered under its key:
    /// a retry may find room). `supersedingBySource`: a newer navigation from the same source (or
    /// dismiss of the same screen) cancels a pending one, and the removal of that node cancels it.
    func startPending(_ nav: PendingNavigation, supersedingBySource: Bool = false) {
        let sourceKey = SessionKey(nav.state.session.name, nav.plan.sourceId)
        let older = supersedingBySource ? pendingBySource[sourceKey] : nil
        do throws(NavError) { try admitPending(nav, freeing: older) } catch {
            nav.finished = true
            for r in nav.replies { r.fail(error.rpc) }
            nav.onFinish?(.failure(error))
            return
        }
        if let older { supersede(older, by: nav.id, dismiss: nav.leaving != nil) }
        register(nav)
        if supersedingBySource { pendingBySource[sourceKey] = nav }
        if let key = nav.key { pendingByKey[SessionKey(nav.state.session.name, key)] = nav }
        runPreconditions(nav)
    }

    /// A navigation that commits at once (no preconditions) supersedes, as a pending one does, the
    /// navigation or dismiss pending from its source screen. Costs nothing while none is pending.
    @inline(__always)
    func supersedePending(from source: Int, in session: Session, by number: Int) {
        guard !pendingBySource.isEmpty else { return }
        guard let older = pendingBySource[SessionKey(session.name, Node.id(source))] else { return }
        supersede(older, by: PendingNavigation.id(number), dismiss: false)
    }

    /// Ends `older` `cancelled`: navigation (or dismiss, `dismiss`) `id` from the same screen came after it.
    private func supersede(_ older: PendingNavigation, by id: String, dismiss: Bool) {
        finish(older, .failure(NavError(.cancelled, "the \(older.leaving == nil ? "navigation" : "dismiss") was superseded by \(dismiss ? "dismiss" : "navigation") \(id) from the same screen",
                                        data: ["navigation": .string(older.id), "by": .string(id)])))
    }

    /// Refuses one more pending navigation past `--max-pending` or its uid's share of it
    /// (``FairShare``), or past the cap of its connection or its session; `freeing` is a pending navigation it supersedes (it leaves first).
    func admitPending(_ nav: PendingNavigation, freeing older: PendingNavigation? = nil) throws(NavError) {
        func freed(_ same: Bool) -> Int { older.map { !$0.finished && $0.registered && same ? 1 : 0 } ?? 0 }
        let verdict = config.pending.verdict(for: nav.uid, in: pendingByUid, freeing: freed(true), freeingOwn: freed(older?.uid == nav.uid))
        if verdict != .admitted {
            throw config.pending.refusal(verdict, uid: nav.uid, in: pendingByUid, what: "pending navigations and dismisses",
                                         advice: "wait for some to finish, or cancel some")
        }
        let mine = (pendingByClient[nav.client.id]?.count ?? 0) - freed(older?.client === nav.client)
        if config.maxPendingPerConnection > 0 && mine >= config.maxPendingPerConnection {
            throw NavError(.limitExceeded, "this connection has \(mine) pending navigations and dismisses, the most one connection may (the --max-pending-per-connection limit); wait for their replies, or cancel some",
                           data: ["limit": "--max-pending-per-connection", "max": .int(config.maxPendingPerConnection)])
        }
        let here = nav.state.pendingCount - freed(older?.state === nav.state)
        if here >= config.maxPendingPerSession {
            throw NavError(.limitExceeded, "session \"\(nav.state.session.name)\" has \(here) pending navigations and dismisses, the most one session may (the --max-pending-per-session limit); wait for some to finish, or cancel some",
                           data: ["limit": "--max-pending-per-session", "max": .int(config.maxPendingPerSession)])
        }
    }

    /// Enters `nav` among the pending navigations, counted against its uid, its client and its
    /// session; the client's going cancels it (unless it is detached).
    func register(_ nav: PendingNavigation) {
        nav.registered = true
        pending[nav.id] = nav
        pendingByUid.add(nav.uid)
        nav.state.pending[nav.number] = nav
        pendingByClient[nav.client.id, default: [:]][nav.number] = nav
        watch(nav.client)
    }

    /// Commits a navigation whose preconditions passed.
    func commitResult(_ nav: PendingNavigation) -> Result<JSONValue, NavError> {
        if let unguarded = guardsNotRun(nav) { return .failure(unguarded) }
        if let instead = nav.commitInstead { return instead() }
        let r = commitResult(nav.state, nav.plan, navigation: nav.number, starter: nav.client, key: nav.key).map(\.json)
        guard !nav.redirects.isEmpty, case .success(.object(var o)) = r else { return r }
        // Where it went instead, and why.
        o.append("redirected", .array(nav.redirects.map { hop in
            ["from": .string(graph.coordinators[hop.from].name), "precondition": .string(hop.precondition), "to": .string(graph.coordinators[hop.to].name)]
        }))
        return .success(.object(o))
    }

    /// `conflict` when committing `nav` now would remove a screen or flow whose leave guards did not
    /// run for it: one that came (pushed, presented) while it waited for its preconditions. Its guards
    /// were those of what it would remove when it was planned; what came since would leave unasked.
    /// Nil when the tree has not changed since (the usual case, no work), or the navigation is forced.
    func guardsNotRun(_ nav: PendingNavigation) -> NavError? {
        let session = nav.state.session
        guard graph.hasLeaveGuards, !nav.force, session.version != nav.plannedAt else { return nil }
        let now: [LeaveGuard]
        if let guardsNow = nav.guardsNow {
            now = guardsNow()
        } else if nav.plan.popUpTo != nil || nav.plan.link != nil || nav.plan.by.mayReplaceScreens {
            now = session.leaveGuards(removedBy: nav.plan)
        } else {
            return nil
        }
        let ran = nav.guardsPassedBefore.union(nav.plan.guards)
        let missed = now.filter { !ran.contains($0) }
        guard !missed.isEmpty else { return staleGuards(nav, now) }
        let names = missed.preconditions.map { graph.preconditions[$0].name }
        return NavError(.conflict, "the tree changed while \(nav.id) waited (version \(nav.plannedAt), now \(session.version)): it would now also remove what the leave guards \(names.map { "`\($0)`" }.joined(separator: ", ")) protect, which did not run for it; ask again: those guards then run first (a replacement with `force: true` skips them)",
                        data: ["navigation": .string(nav.id), "preconditions": .array(names.map(JSONValue.string)), "version": .int(session.version)])
    }

    /// `conflict` when a leave guard that passed for `nav` was asked about params its node no longer
    /// has (an `update` came while it waited, or a dismiss gave back earlier params): its answer was
    /// about a screen the user no longer sees. Nil when none of the guards in `now` (what the commit
    /// would remove) is stale.
    private func staleGuards(_ nav: PendingNavigation, _ now: [LeaveGuard]) -> NavError? {
        let session = nav.state.session
        let stale = now.filter { g in
            guard let asked = nav.guardsAsked[g], let node = session.node(number: g.node) else { return false }
            return node.paramsVersion > asked
        }
        guard let first = stale.first, let node = session.node(number: first.node) else { return nil }
        let names = stale.preconditions.map { graph.preconditions[$0].name }
        let asked = nav.guardsAsked[first] ?? 0
        return NavError(.conflict, "the params of `\(node.id)` (`\(graph.coordinators[node.coordinator].name)`) changed at version \(node.paramsVersion), after the leave guard \(names.map { "`\($0)`" }.joined(separator: ", ")) protecting it was asked about them at version \(asked), while \(nav.id) waited: its answer was about params the screen no longer has; ask again: the guard then runs about the params it has now (a replacement with `force: true` skips it)",
                        data: ["navigation": .string(nav.id), "preconditions": .array(names.map(JSONValue.string)), "version": .int(session.version),
                               "leaving": .string(node.id)])
    }

    /// Remembers a keyed navigation's reply in its session and, with a state file, on disk (written
    /// with the iteration's commits, before the reply leaves). Only a navigation that committed is
    /// remembered: a refused or failed one changed nothing, leaves nothing (no key, no record, no
    /// memory), and its retry runs again.
    @inline(never)
    func remember(_ state: SessionState, key: String, _ reply: Result<JSONText, NavError>) {
        guard case .success = reply else { return }
        keyBudget.remember(state, key: key, reply, limits: config)
        store.keyRemembered(state.session, key: key, reply: reply)
    }

    /// Commits `plan` and publishes it; `starter` hears `flowCompleted` of a flow it starts; `key`:
    /// the keyed navigation's key, whose reply is remembered after it.
    func commitResult(_ state: SessionState, _ plan: Plan, navigation: Int, starter: some Client, key: String? = nil) -> Result<Navigated, NavError> {
        do throws(NavError) { return .success(try commit(state, plan, navigation: navigation, starter: starter, key: key)) } catch { return .failure(error) }
    }

    /// Commits `plan` and publishes it; `starter` hears `flowCompleted` of a flow it starts; `key`:
    /// the keyed navigation's key, whose reply is remembered after it.
    @inline(__always)
    func commit(_ state: SessionState, _ plan: Plan, navigation: Int, starter: some Client, key: String? = nil) throws(NavError) -> Navigated {
        try state.withSession { session in
            Result { () throws(NavError) in try commit(state, lent: session, plan, navigation: navigation, starter: starter, key: key) }
        }.get()
    }

    /// `commit` with the state's session, lent by a caller that holds it (``SessionState/withSession(_:)``).
    @inline(__always)
    func commit(_ state: SessionState, lent session: Session, _ plan: Plan, navigation: Int, starter: some Client, key: String?) throws(NavError) -> Navigated {
        let before = session.version
        let source = plan.sourceCoordinator >= 0 ? plan.sourceCoordinator : session.coordinator(ofNode: plan.source)
        let c = try session.commit(plan)
        covered(plan, source: source)
        if let steps = plan.link { covered(built: steps, target: plan.target, link: plan.linkIndex) }
        // `navigate {existing}` that found the screen as asked changes nothing: nothing to publish.
        if c.version == before { return Navigated(navigation: navigation, node: c.node?.number ?? -1, version: c.version, visible: .lent(session)) }
        // Only a flow this commit made has a starter: selecting a tab whose first node is a flow,
        // or a link that ends on one already there, starts nothing.
        // (The kind is read first: binding the node for a screen, the common case, would count a
        // reference for nothing.)
        if let kind = c.node?.kind, kind == .flow || kind == .tabs, let n = c.node, session.madeByLastCommit(n) {
            if kind == .flow {
                coverage.forEachActive { $0.flowStarted(n.coordinator) }
                state.flowStarters[n.id] = starter
            } else {
                coverage.forEachActive { $0.flowsMade(byContainer: n.coordinator) }
            }
        }
        // The reply reports the path of this commit. Publishing can lead to further commits (a flow
        // that ended resumes a navigation; a dismissed source or a dropped subscriber cancels one
        // and its recovery flow), so then the path is listed now; otherwise it is written from
        // the tree when the reply is encoded, without building an array.
        let mayCommitAgain = c.endedList != nil || !c.removedNumbers.isEmpty || !state.subscribers.isEmpty
        let path: VisiblePath = mayCommitAgain ? .numbers(session.visibleNumbers) : .lent(session)
        publish(c, in: state, hints: plan.hints, key: key)
        return Navigated(navigation: navigation, node: c.node?.number ?? -1, version: c.version, visible: path)
    }

    /// Replies to everyone waiting on `nav` (the requester and joined keyed duplicates), once.
    /// A navigation being committed is answered by its commit alone (see ``PendingNavigation/committing``).
    func finish(_ nav: PendingNavigation, _ result: Result<JSONValue, NavError>) {
        guard !nav.finished, !nav.committing else { return }
        nav.finished = true
        if case .failure(let e) = result, e.kind == .cancelled, nav.step < nav.plan.preconditions.count {
            covered(graph.preconditions[nav.plan.preconditions[nav.step]], .cancelled)
        }
        nav.cancelTask?()
        nav.cancelTask = nil
        let session = nav.state.session
        if nav.registered {
            pending[nav.id] = nil
            let sourceKey = SessionKey(session.name, nav.plan.sourceId)
            if pendingBySource[sourceKey] === nav { pendingBySource[sourceKey] = nil }
            if let key = nav.key { pendingByKey[SessionKey(session.name, key)] = nil }
            pendingByUid.remove(nav.uid)
            nav.state.pending[nav.number] = nil
            if pendingByClient[nav.client.id]?.removeValue(forKey: nav.number) != nil, pendingByClient[nav.client.id]?.isEmpty == true {
                pendingByClient[nav.client.id] = nil
            }
        }
        if let key = nav.key { remember(nav.state, key: key, result.map(JSONText.init)) }
        if nav.announced { announceEnd(nav, result) }
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
