import JSON
import NavGraph
import NavigationCore
import RPC

/// Preconditions run as asynchronous tasks on the loop: each navigation is a small state machine
/// (`PendingNavigation.step`) advanced by callbacks; the loop serves everyone else meanwhile.
extension Navigator {
    /// Evaluates the preconditions of `nav` from its current step; commits when all have passed.
    func runPreconditions(_ nav: PendingNavigation) {
        while !nav.finished {
            guard nav.step < nav.plan.preconditions.count else {
                nav.committing = true
                let outcome = commitResult(nav)
                nav.committing = false
                finish(nav, outcome)
                return
            }
            if let g = nav.plan.leaveGuard(at: nav.step) {
                guard guardSubject(nav) != nil else {
                    // The node this guard protects left the tree meanwhile: nothing left to protect.
                    nav.step += 1
                    nav.recovered = false
                    continue
                }
                // It is asked about the params the node has now.
                nav.guardsAsked[g] = nav.state.session.version
            }
            let p = graph.preconditions[nav.plan.preconditions[nav.step]]
            switch p.kind {
            case .check(let fact, let test):
                let (passed, reason) = nav.state.session.evaluate(fact: fact, test)
                if passed {
                    covered(p, nav.recovered ? .recovered : .passed)
                    nav.step += 1
                    nav.recovered = false
                    continue
                }
                failed(nav, p, reason: reason)
                return
            case .command, .provider:
                evaluateAsync(nav, p)
                return
            }
        }
    }

    /// Most UTF-8 bytes of a failure's reason kept: a command's first line or a provider's
    /// `reason` is repeated in the error and to every subscriber, so a longer one is cut.
    static let maxReasonBytes = 1024

    /// The current precondition failed: recover once if it can, else the navigation fails.
    func failed(_ nav: PendingNavigation, _ p: Precondition, reason given: String, timeout: Bool = false) {
        guard !nav.finished else { return }
        let reason = ErrorText.cut(given, toBytes: Self.maxReasonBytes)
        if let r = p.recover, !nav.recovered {
            nav.recovered = true
            recover(nav, p, r, reason: reason)
            return
        }
        if let r = p.redirect, !nav.onLeaveGuard {
            redirect(nav, p, r, declared: true)
            return
        }
        covered(p, timeout ? .timedOut : .failed)
        let kind: NavError.Kind = timeout ? .preconditionTimeout : .preconditionFailed
        let what = timeout ? "timed out" : "failed"
        let target = graph.coordinators[nav.plan.target].name
        var data: JSONObject = ["precondition": .string(p.name), "reason": .string(reason), "navigation": .string(nav.id)]
        let message: String
        if let subject = guardSubject(nav) {
            let leaving = Node.id(subject.node)
            data["leaving"] = .string(leaving)
            message = "leave guard `\(p.name)` of `\(graph.coordinators[subject.coordinator].name)` (\(leaving)) \(what), so it stays"
                + (nav.leaving == nil ? " and the navigation to `\(target)` is refused: \(reason)" : ": \(reason)")
        } else {
            let screen = screenSubject(nav).coordinator
            if screen != nav.plan.target {
                message = "precondition `\(p.name)` of `\(graph.coordinators[screen].name)` (in the stack built for `\(target)`) \(what): \(reason)"
            } else if let start = startStepDeclaring(p, flow: graph.coordinators[screen]) {
                // A flow's start step's own precondition (it runs after the flow's): named as the step's.
                message = "precondition `\(p.name)` of `\(graph.coordinators[start].name)` (the start of flow `\(target)`) \(what): \(reason)"
            } else {
                message = "precondition `\(p.name)` of `\(target)` \(what): \(reason)"
            }
        }
        finish(nav, .failure(NavError(kind, message, data: data)))
    }

    /// The start step of `flow` when `p` is that step's precondition and not the flow's own.
    private func startStepDeclaring(_ p: Precondition, flow: Coordinator) -> Int? {
        guard flow.flowStart >= 0, !flow.preconditions.contains(p.index),
              graph.coordinators[flow.flowStart].preconditions.contains(p.index) else { return nil }
        return flow.flowStart
    }

    /// Tells subscribers, and the client that asked for `nav` when it asked for progress (so that it can
    /// say what it waits for and cancel it), that `nav` waits for precondition `what`; `flow` is the
    /// recovery flow presented for it; `queued`, that it waits for a slot to run it (a command's or
    /// a provider's), behind `behind` of its own uid's (uids take turns) of `waiting` in all.
    func announcePending(_ nav: PendingNavigation, waitingFor what: String, flow: Node? = nil,
                         queued: (slot: String, behind: Int, waiting: Int)? = nil) {
        var params: JSONObject = [
            "session": .string(nav.state.session.name), "navigation": .string(nav.id),
            "to": .string(graph.coordinators[nav.plan.target].name), "waitingFor": .string(what),
        ]
        if let subject = guardSubject(nav) {
            // A leave guard: the screen it protects, which the user may be asked about.
            params["leaving"] = .string(Node.id(subject.node))
        }
        if let flow {
            params["flow"] = ["node": .string(flow.id), "coordinator": .string(graph.coordinators[flow.coordinator].name)]
        } else if let recovering = nav.recovering {
            params["recovering"] = recovering
        } else if nav.recovered {
            params["afterRecovery"] = true  // evaluated again, its recovery done
        }
        if let queued {
            params["queued"] = ["for": .string(queued.slot), "behind": .int(queued.behind), "waiting": .int(queued.waiting)]
        }
        nav.announcement = .object(params)
        notifySubscribers("navigationPending", .object(params), of: nav.state, also: nav.reportsProgress ? nav.client : nil)
    }

    /// Tells those told that `nav` was pending that it ended: committed (with its version), failed or
    /// cancelled (with the error its client is answered), so that a front-end listing what waits can
    /// take it off (LSP's work-done progress `end`).
    func announceEnd(_ nav: PendingNavigation, _ result: Result<JSONValue, NavError>) {
        var params: JSONObject = ["session": .string(nav.state.session.name), "navigation": .string(nav.id)]
        switch result {
        case .success(let v):
            params["status"] = "committed"
            if let version = v["version"] { params["version"] = version }
        case .failure(let e):
            params["status"] = .string(e.kind == .cancelled ? "cancelled" : "failed")
            params["error"] = ["code": .int(e.code), "message": .string(e.message), "data": .object(e.wireData)]
        }
        notifySubscribers("navigationEnded", .object(params), of: nav.state, also: nav.reportsProgress ? nav.client : nil)
    }

    private func recover(_ nav: PendingNavigation, _ p: Precondition, _ r: Precondition.Recover, reason: String) {
        switch r {
        case .flow(let f):
            let state = nav.state
            do throws(NavError) {
                let c = try state.session.presentForRecovery(f, caller: nav.caller)
                guard let flowNode = c.node else { throw NavError(.conflict, "no recovery flow node") }
                state.flowStarters[flowNode.id] = nav.client
                recoveries[SessionKey(state.session.name, flowNode.id)] = nav
                let steps = flowNode.children.map(\.coordinator)
                coverage.forEachActive { run in
                    run.committed(source: -1, target: flowNode.coordinator, by: .present)
                    run.shownToo(steps, but: flowNode.coordinator)
                    run.flowStarted(flowNode.coordinator)
                }
                publish(c, in: state)
                announcePending(nav, waitingFor: p.name, flow: flowNode)
                let key = SessionKey(state.session.name, flowNode.id)
                nav.cancelTask = { [unowned self] in
                    self.recoveries[key] = nil
                    self.closeAbandonedRecovery(key, in: state)
                }
            } catch where error.kind == .accessDenied {
                var e = error
                e.data["precondition"] = .string(p.name)
                e.data["navigation"] = .string(nav.id)
                finish(nav, .failure(e))
            } catch {
                failed(nav, p, reason: "\(reason); the recovery flow could not be presented: \(error.message)")
            }
        case .command, .provider:
            recoverAsync(nav, p, r, reason: reason)
        }
    }

    /// The navigation waiting on recovery flow `key` ended without it (cancelled, its client gone,
    /// superseded, timed out): the flow it presented goes too (ended `cancelled`, as if its starter
    /// cancelled it), so that it neither blocks the same navigation later (its steps open nothing
    /// of the app) nor completes to no effect.
    @discardableResult
    private func closeAbandonedRecovery(_ key: SessionKey, in state: SessionState) -> Bool {
        guard !state.isClosed, state.session.node(key.name)?.kind == .flow,
              let c = try? state.session.flowComplete(key.name, .cancelled) else { return false }
        publish(c, in: state)
        return true
    }

    /// Closes the recovery flows of `state` that no navigation waits on: those whose navigation
    /// ended with the navd that ran it (a restart, a crash, another node's session taken over).
    /// Each is ended `cancelled` and removed in a commit of its own, as when its navigation is
    /// cancelled; answers how many.
    @discardableResult
    func closeOrphanedRecoveryFlows(of state: SessionState) -> Int {
        var closed = 0
        for flow in state.session.recoveryFlows() {
            let key = SessionKey(state.session.name, flow.id)
            // (One inside another that was closed went with it.)
            if recoveries[key] == nil && closeAbandonedRecovery(key, in: state) { closed += 1 }
        }
        return closed
    }

    /// A recovery flow ended: evaluate the precondition again (completed) or fail (otherwise).
    func recoveryFlowEnded(_ flow: EndedFlow, in state: SessionState) {
        guard let nav = recoveries.removeValue(forKey: SessionKey(state.session.name, flow.id)), !nav.finished else { return }
        nav.cancelTask = nil
        let p = graph.preconditions[nav.plan.preconditions[nav.step]]
        guard flow.status == .completed else {
            failed(nav, p, reason: "the recovery flow `\(graph.coordinators[flow.coordinator].name)` was \(flow.status == .failed ? "failed" : "cancelled")")
            return
        }
        if !p.recoverFacts.isEmpty {
            if let problem = establish(resolveResultReferences(p.recoverFacts, in: flow.result), in: state) {
                nav.recovered = true
                failed(nav, p, reason: "the recovery flow `\(graph.coordinators[flow.coordinator].name)` completed, but its facts could not be set: \(problem)")
                return
            }
        }
        reevaluate(nav)
    }

    /// Sets facts a recovery flow establishes (`recover.facts`), within the session's fact limits;
    /// answers the problem instead when one would pass a limit (nothing is set).
    func establish(_ facts: JSONObject, in state: SessionState) -> String? {
        do throws(NavError) { try state.session.setFacts(facts) } catch { return error.message }
        state.session.syncAccount()
        store.factsChanged(state.session, changes: facts)
        return nil
    }

    /// The most redirects one navigation may take (a longer chain is reported as a loop).
    static let maxRedirects = 8

    /// A precondition answered `{redirect: …}` (a provider or command answer): parses it and follows it.
    func followRedirect(_ nav: PendingNavigation, _ p: Precondition, answered raw: JSONValue) {
        if nav.onLeaveGuard {
            failed(nav, p, reason: "it answered a redirect, and a leave guard can only let \(nav.leaving != nil ? "the dismiss" : "what removes its screen") go on or refuse it")
            return
        }
        do throws(NavError) {
            redirect(nav, p, try navigationSpec(raw, param: "redirect"), declared: false)
        } catch {
            failed(nav, p, reason: "it answered a redirect navd cannot follow: \(error.message)")
        }
    }

    /// Sends `nav` to `spec` instead, from the same source: validated as a navigation (the graph's
    /// own `redirect:` skips `opens`), then its target's preconditions run from the first. A target
    /// already visited, or more than ``maxRedirects`` redirects, is a loop and fails the navigation.
    func redirect(_ nav: PendingNavigation, _ p: Precondition, _ spec: NavigationSpec, declared: Bool) {
        guard !nav.finished else { return }
        // What redirects: the target, or in a link's (a reset's) stack the screen `p` is about.
        var from = nav.plan.target
        var redirecting: (link: [LinkStep], at: Int)?
        if let link = nav.plan.link, nav.step < nav.plan.preconditions.count {
            let held = nav.plan.preconditions[nav.step]
            let at = nav.plan.linkStep(at: nav.step)
                ?? link.firstIndex { graph.preconditions(showing: graph.coordinators[$0.coordinator]).contains(held) } ?? link.count - 1
            redirecting = (link, at)
            from = link[at].coordinator
        }
        let chain = [nav.redirects.first?.from ?? from] + nav.redirects.map(\.to)
        let names = (chain + [spec.to]).map { graph.coordinators[$0].name }.joined(separator: " → ")
        if chain.contains(spec.to) || nav.redirects.count >= Navigator.maxRedirects {
            finish(nav, .failure(NavError(.preconditionFailed, "precondition `\(p.name)` redirects in a loop: \(names) (at most \(Navigator.maxRedirects) redirects, each to a target not visited yet)",
                                          data: ["precondition": .string(p.name), "reason": "redirect loop", "navigation": .string(nav.id),
                                                 "redirects": .array((chain + [spec.to]).map { .string(graph.coordinators[$0].name) })])))
            return
        }
        let session = nav.state.session
        var plan: Plan
        do throws(NavError) {
            if let completing = nav.plan.completing {
                // A completing flow's `then` redirected: the redirect's target takes the flow's place.
                plan = try session.planTakingPlace(ofFlow: completing.flow, result: completing.result, to: spec.to,
                                                   by: graph.coordinators[spec.to].redirectPresentation(named: spec.by, redirecting: nav.plan.by),
                                                   with: spec.with ?? [:], caller: nav.caller, declaredTarget: declared)
            } else if let (link, at) = redirecting, spec.by != .root, !selectsRootTab(spec, below: link[..<at]) {
                // A link or a reset: the target takes the redirecting screen's place in its stack
                // (one by root, or that selects a tab of the root, goes so instead, below, as for a navigate).
                plan = try session.planRedirectedLink(link, replacing: at, to: spec.to, by: spec.by, with: spec.with ?? [:],
                                                      source: nav.plan.source, ifVersion: nav.plan.ifVersion, caller: nav.caller, declaredTarget: declared)
            } else {
                plan = try session.plan(Destination(target: spec.to), by: graph.coordinators[spec.to].redirectPresentation(named: spec.by, redirecting: nav.plan.by),
                                        // (No `with` given: a select keeps the tab screen's params.)
                                        with: spec.with, from: nav.plan.sourceId,
                                        ifVersion: nav.plan.ifVersion, caller: nav.caller, declaredTarget: declared)
            }
        } catch {
            var e = error
            e.data["precondition"] = .string(p.name)
            e.data["navigation"] = .string(nav.id)
            e.data["redirectedTo"] = .string(graph.coordinators[spec.to].name)
            finish(nav, .failure(NavError(e.kind, "precondition `\(p.name)` redirects to `\(graph.coordinators[spec.to].name)`, which cannot be navigated to: \(e.message)", data: e.data)))
            return
        }
        if let hints = nav.plan.hints { plan.hints = hints }
        if let popUpTo = nav.plan.popUpTo { plan.popUpTo = popUpTo }
        if !nav.force && plan.completing != nil {
            // A completing flow's `then` redirected: the guards of what it removes beyond the flow's end.
            plan = guardingCompletion(plan, in: session, passed: Set(nav.plan.guards))
        } else if !nav.force && (plan.by.mayReplaceScreens || plan.link != nil) {
            // A redirect that replaces screens (`by: root`, a link's stack) runs the leave guards of
            // what it removes first, those that have not passed for this navigation already.
            plan = guardingReplacement(plan, in: session, passed: Set(nav.plan.guards))
        }
        covered(p, .redirected)
        nav.redirects.append((from: from, precondition: p.name, to: spec.to))
        nav.guardsPassedBefore.formUnion(nav.plan.guards)
        nav.plan = plan
        nav.step = 0
        nav.recovered = false
        runPreconditions(nav)
    }

    /// Whether a redirect in a link (`spec`, the link's screens below the one redirecting: `kept`)
    /// selects a tab of the graph's root: one no container among `kept` declares (a container's tab
    /// is selected in the link's stack). Such a redirect selects that tab and builds nothing of the
    /// link, as the same redirect of a `navigate` does; its target in the stack would show a tab's
    /// first screen in another tab.
    private func selectsRootTab(_ spec: NavigationSpec, below kept: ArraySlice<LinkStep>) -> Bool {
        guard spec.by == .select, case .tabs(let tabs) = graph.root, tabs.contains(spec.to) else { return false }
        return !kept.contains { graph.coordinators[$0.coordinator].tabs.contains(spec.to) }
    }

    /// Evaluates the current precondition again after a recovery; no second recovery.
    func reevaluate(_ nav: PendingNavigation) {
        runPreconditions(nav)
    }
}
