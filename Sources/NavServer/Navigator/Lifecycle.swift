import JSON
import NavGraph
import NavigationCore
#if canImport(Glibc)
import Glibc
#endif

/// The sessions' lifecycle, which the navigator owns: restored from a store, carried over to a
/// reloaded graph, counted for `stats`. The server decides when (at start, on `graph.reload` or
/// SIGHUP, on `stats`); what happens to the sessions is decided here.
extension Navigator {
    /// Takes the sessions `store` kept, and tells it every change from now on. Returns how many it
    /// restored. A single node makes "main" when the store had none (and tells the store); a node
    /// sharing its store serves "main" only when the store gave it.
    func restore(_ sessions: [Session], from store: any Store, placement: any SessionPlacement = OneNode()) -> Int {
        self.store = store
        self.placement = placement
        for session in sessions {
            let state = makeState(session)
            self.sessions[session.name] = state
            keyBudget.adopt(state, limits: config)
            numberNavigations(afterThoseOf: session)
        }
        // Sessions made before the store was chosen ("main") record changes as it wants them.
        for state in self.sessions.values { state.recordsAlways = alwaysRecorded }
        // No navigation waits any more on the recovery flows the last run presented.
        let closed = sessions.reduce(0) { n, s in self.sessions[s.name].map { n + closeOrphanedRecoveryFlows(of: $0) } ?? n }
        if closed > 0 {
            logger.info("recovery flows closed: the navigations they were presented for ended with the last run", metadata: ["navd.flows": "\(closed)"])
        }
        let hasMain = sessions.contains { $0.name == "main" }
        if !hasMain {
            if !placement.makesMain {
                self.sessions["main"] = nil
            } else if let main = self.sessions["main"] {
                store.sessionOpened(main.session)
            }
        }
        return sessions.count
    }

    /// What carrying the sessions over to a new graph did.
    enum GraphSwap {
        /// Live nodes the new graph cannot show (their coordinator is gone, or their params no longer
        /// match its setup), one line each; nothing changed.
        case refused(problems: [String])
        /// Swapped; `removedNodes` nodes were removed first (forced).
        case swapped(removedNodes: Int)
    }

    /// Whether `new` declares what `old` did for a tree to hold a node of it as it is: the same
    /// kind, setup, flow steps and tabs (indices through `reindexed`, old to new), so that
    /// everything a restore checks of such a node gives what it gave.
    static func declaredAlike(_ old: Coordinator, _ new: Coordinator, _ reindexed: [Int]) -> Bool {
        old.isFlow == new.isFlow && old.tabs.isEmpty == new.tabs.isEmpty
            && old.setup?.source == new.setup?.source
            && old.tabs.map { reindexed[$0] } == new.tabs
            && old.flow?.steps.map { reindexed[$0] } == new.flow?.steps
    }

    /// Carries every session over to `newGraph`, between two commits. Refused while a live node
    /// cannot be shown by it, unless `force`, which removes those nodes first with ordinary commits
    /// (published as `stackChanged`). Pending navigations, planned against the old graph, fail with
    /// `conflict`.
    func swapGraph(to newGraph: NavigationGraph, force: Bool) -> GraphSwap {
        // What the new graph cannot show, with the session's name: put in the order of the names
        // below (the walk goes through the table as it lies, not sorted, as most reloads find
        // nothing).
        var missing: [(name: String, state: SessionState, node: Node)] = []
        var problems: [(name: String, text: String)] = []
        // A tab is known by its place among the tabs its graph declares: a shell whose declared tabs
        // the new graph changes (added, removed, moved) is refused like a node it cannot show; forced,
        // the session is reset to the new root.
        var retabbed: Set<String> = []
        let oldRootTabs = graph.rootTabNames, newRootTabs = newGraph.rootTabNames
        // Each coordinator's index in the new graph (-1: not declared), and whether it is declared
        // there as it was (``Navigator/declaredAlike``): a node of such a coordinator passes every
        // check below, and a session whose nodes all are is kept as it is, its indices changed.
        let reindexed = graph.coordinators.map { newGraph.coordinator(named: $0.name)?.index ?? -1 }
        let alike = graph.coordinators.map { reindexed[$0.index] >= 0 && Navigator.declaredAlike($0, newGraph.coordinators[reindexed[$0.index]], reindexed) }
        // The sessions kept as they are (their indices changed), and the others (rebuilt).
        var kept: [SessionState] = [], others: [SessionState] = []
        kept.reserveCapacity(sessions.count)
        let rootTabsChanged = oldRootTabs != newRootTabs
        for state in sessions.values {
            let name = state.session.name
            var asItWas = true
            if rootTabsChanged, state.session.root.kind == .tabs {
                asItWas = false
                retabbed.insert(name)
                let now = newRootTabs.map { "the new graph declares \($0.joined(separator: ", "))" } ?? "the new graph's root is a stack"
                problems.append((name, "session \"\(name)\": its root tabs are \(oldRootTabs?.joined(separator: ", ") ?? ""); \(now) (a tab is known by its place)"))
            }
            state.session.root.forEach { n in
                guard n.coordinator >= 0 else { return }
                if alike[n.coordinator], n.then.map({ reindexed[$0.to] >= 0 }) ?? true { return }
                asItWas = false
                let shown = graph.coordinators[n.coordinator].name
                guard reindexed[n.coordinator] >= 0 else {
                    missing.append((name, state, n))
                    problems.append((name, "session \"\(name)\": node \(n.id) shows `\(shown)`, which the new graph does not declare"))
                    return
                }
                let c = newGraph.coordinators[reindexed[n.coordinator]]
                // A node is made for its coordinator's kind: a screen, a flow and its steps, or a
                // tab container; a coordinator declared as another kind now cannot be shown by it.
                let declared = c.isFlow ? "a flow" : !c.tabs.isEmpty ? "a tab container" : "a screen"
                let held = n.kind == .flow ? "a flow" : n.kind == .tabs ? "a tab container" : "a screen"
                if declared != held {
                    missing.append((name, state, n))
                    problems.append((name, "session \"\(name)\": node \(n.id) is \(held) of `\(shown)`, which the new graph declares as \(declared)"))
                    return
                }
                if n.kind == .flow, let t = n.then, reindexed[t.to] < 0 {
                    missing.append((name, state, n))
                    problems.append((name, "session \"\(name)\": flow \(n.id) (`\(shown)`) goes on to `\(graph.coordinators[t.to].name)` when it completes (the then its navigate gave), which the new graph does not declare"))
                    return
                }
                if n.kind == .flow, let steps = c.flow?.steps {
                    if let stray = n.children.first(where: { $0.coordinator >= 0 && !steps.contains(reindexed[$0.coordinator]) }) {
                        missing.append((name, state, n))
                        problems.append((name, "session \"\(name)\": flow \(n.id) (`\(shown)`) holds the step \(stray.id) (`\(graph.coordinators[stray.coordinator].name)`), which is not a step of the flow in the new graph"))
                        return
                    }
                }
                if n.kind == .tabs, graph.coordinators[n.coordinator].tabs.map({ reindexed[$0] }) != c.tabs {
                    let was = graph.coordinators[n.coordinator].tabs.map { graph.coordinators[$0].name }
                    let now = c.tabs.map { newGraph.coordinators[$0].name }
                    missing.append((name, state, n))
                    retabbed.insert(name)
                    problems.append((name, "session \"\(name)\": tab container \(n.id) (`\(shown)`) holds the tabs \(was.joined(separator: ", ")); the new graph declares \(now.isEmpty ? "none" : now.joined(separator: ", ")) (a tab is known by its place)"))
                    return
                }
                // A restored session is checked as a request is.
                if let v = c.setup?.validate(n.params) {
                    missing.append((name, state, n))
                    problems.append((name, "session \"\(name)\": the params of node \(n.id) do not match the new setup of `\(shown)`: \(v.message)"))
                }
            }
            if asItWas { kept.append(state) } else { others.append(state) }
        }
        // In the order of the session names, each session's in the order found.
        func byName<T>(_ items: [T], _ name: (T) -> String) -> [T] {
            items.enumerated().sorted { (name($0.element), $0.offset) < (name($1.element), $1.offset) }.map(\.element)
        }
        if !problems.isEmpty && !force { return .refused(problems: byName(problems, \.name).map(\.text)) }
        missing = byName(missing, \.name)
        for nav in Array(pending.values) {
            finish(nav, .failure(NavError(.conflict, "the graph was reloaded while the navigation was pending; navigate again", data: ["navigation": .string(nav.id)])))
        }
        // Forced: the missing nodes go with ordinary commits, against the old graph. One that no
        // dismissal removes (a root stack's first screen, a root tab's) takes its session to the new
        // graph's root, below.
        var removed = 0
        var resetting: Set<String> = []
        for (_, state, node) in missing where state.session.node(node.id) != nil && !resetting.contains(state.session.name) {
            do throws(NavError) {
                let commit = try state.session.dismiss(node.id)
                removed += commit.removedNumbers.count
                publish(commit, in: state)
            } catch {
                resetting.insert(state.session.name)
            }
        }
        // Every session's nodes are rebuilt against the new graph (coordinator indices change); the
        // store hears of the reload first, then of each session rebuilt. A session whose tree the new
        // graph cannot hold goes on at its root, by one `reset` commit (the version goes on).
        store.graphReloaded(newGraph, sessions: sessions.count)
        var resets: [(SessionState, Commit)] = []
        for state in kept {
            state.session.rebase(onto: newGraph, coordinators: reindexed)
            store.sessionChanged(state.session)
        }
        for state in others {
            let s = state.session
            var rebuilt: Session? = nil
            var retabbedReset = false
            if !resetting.contains(s.name) {
                do throws(NavError) {
                    let retab = retabbed.contains(s.name)
                    let r = try Session(restoring: s.name, graph: newGraph, root: s.root.json(graph), version: s.version,
                                        nextId: s.idCounter, facts: .object(s.sortedFacts), limits: config.session, tabsAsDeclared: !retab)
                    retabbedReset = retab && (try? Session.checkTabs(of: r.root, graph: newGraph)) == nil
                    rebuilt = r
                } catch {
                    logger.error("session could not be carried over to the new graph; it is reset to the graph's root",
                                 metadata: ["navd.session": "\(s.name)", "navd.error": "\(error.message)"])
                }
            }
            let next = rebuilt ?? Session(succeeding: s, graph: newGraph, limits: config.session)
            next.owner = s.owner
            next.adoptKeys(of: s)
            state.session = next
            // Made once the state holds the session, which then records the forms its subscribers
            // hear (compact ones too); published once the new graph is served.
            if rebuilt == nil {
                resets.append((state, next.resetCommit(replacing: s)))
            } else if retabbedReset {
                resets.append((state, next.resetToRoot()))
            }
            store.sessionChanged(next)
        }
        graph = newGraph
        // Coverage is of one graph: counting starts again (named runs too, as started), before the
        // resets, whose ended flows are numbered in the new graph.
        let runs = coverage
        coverage = CoverageRuns(graph: newGraph)
        for name in runs.named.keys where runs.isActive(name) { _ = coverage.start(name, graph: newGraph) }
        for (state, commit) in resets {
            removed += commit.removedNumbers.count
            publish(commit, in: state)
        }
        // The client that started a flow still hears it end, if the flow is still live; the flows a
        // reset ended were announced to it above.
        for state in sessions.values where !state.flowStarters.isEmpty {
            state.flowStarters = state.flowStarters.filter { state.session.node($0.key) != nil }
        }
        return .swapped(removedNodes: removed)
    }

    /// The navigator's counts, for `stats`. `subscriptions` counts this node's subscribers of
    /// sessions it owns and of sessions other nodes own (heard through the store).
    struct Counts {
        var commits: Int
        var pending: Int
        var sessions: Int
        var subscriptions: Int
        /// Preconditions with a live provider.
        var provided: Int
        var tasksStarted: Int
        var children: Int
        var providerRequestsWaiting: Int
        var mirrors: Int
        /// Per uid: sessions it opened (navd's own uid for those nobody opened), pending
        /// navigations, running children.
        var sessionsByUid: [UInt32: Int]
        var pendingByUid: [UInt32: Int]
        var childrenByUid: [UInt32: Int]
        var subscriptionsByUid: [UInt32: Int]
    }

    var counts: Counts {
        let byUid = sessions.byUid.byUid
        return Counts(commits: commits, pending: pending.count, sessions: sessions.count,
                      subscriptions: publisher.audienceMembers,
                      provided: providers.values.reduce(0) { $0 + ($1.contains { !$0.isClosed } ? 1 : 0) },
                      tasksStarted: tasksStarted, children: childrenByUid.total,
                      providerRequestsWaiting: providerSlots.values.reduce(0) { $0 + $1.waitingCount },
                      mirrors: mirrors.count, sessionsByUid: byUid, pendingByUid: pendingByUid.byUid, childrenByUid: childrenByUid.byUid,
                      subscriptionsByUid: subscriptionsByUid.byUid)
    }
}
