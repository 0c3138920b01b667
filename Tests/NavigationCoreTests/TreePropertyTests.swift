import JSON
import NavClient
import NavGraph
import NavTesting
import Testing
@testable import NavigationCore


/// Random operation sequences over the example graph and a graph of tabs (a tab container that may
/// replace a tab's first screen, links into tabs that present, flows in links), in many sessions:
/// after every step the tree keeps its invariants and a mirror fed only with the commits' changes
/// equals the tree.
@Suite struct TreePropertyTests {
    static let example = GraphLoader.loadEmbeddedExample().graph!
    static let tabs = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: """
        root: {tabs: [Home, Browse], back: history}
        coordinators:
          Home: {opens: [Item, Box, Modal, F], setup: {type: object, properties: {v: {type: integer}}}}
          Browse: {opens: [Item, Box]}
          Item: {setup: {type: object, required: [id], properties: {id: {type: integer}}}, opens: [Item, Modal, Box, F]}
          Modal: {presentations: [present], opens: [Item, Box]}
          Box: {tabs: [BoxA, BoxB], back: order}
          BoxA: {opens: [Item, F]}
          BoxB: {opens: [Modal]}
          F: {flow: {start: S1, steps: [S1, S2]}}
          S1: {}
          S2: {opens: [Modal]}
        links:
          "/modal": [Home, {to: Modal, by: present}]
          "/item/:id": [Home, {to: Item, with: {id: ":id"}}]
          "/v/:v/item/:id": [{to: Home, with: {v: ":v"}}, {to: Item, with: {id: ":id"}}]
          "/browse/item/:id": [Browse, {to: Item, with: {id: ":id"}}]
          "/box": [Home, Box]
          "/flow": [Home, F, S2]
        """)], baseDirectory: "/g").graph!

    /// A value that often satisfies `schema` (and sometimes does not, on purpose).
    func sample(_ schema: Schema?, _ rng: inout SplitMix64) -> JSONObject {
        guard let schema else { return [:] }
        var o = JSONObject()
        for (name, sub) in schema.properties where schema.required.contains(name) || Bool.random(using: &rng) {
            let t = sub.types ?? [.string]
            if let e = sub.enumValues { o.append(name, e.randomElement(using: &rng)!) }
            else if t.contains(.integer) { o.append(name, .int(Int.random(in: 1...5, using: &rng))) }
            else if t.contains(.number) { o.append(name, .double(2.5)) }
            else if t.contains(.boolean) { o.append(name, .bool(true)) }
            else { o.append(name, .string(["a1", "b2", "", "x@y"].randomElement(using: &rng)!)) }
        }
        return o
    }

    func checkInvariants(_ s: Session, everSeen: Set<String>) {
        let graph = s.graph
        var ids = Set<String>()
        func walk(_ n: Node, parent: Node?) {
            #expect(ids.insert(n.id).inserted, "duplicate id \(n.id)")
            #expect(s.node(n.id) === n, "index out of date for \(n.id)")
            #expect(n.parent === parent, "parent of \(n.id)")
            switch n.kind {
            case .tabs:
                #expect(!n.children.isEmpty && n.children.indices.contains(n.selected))
                #expect(n.children.allSatisfy { $0.kind == .stack })
                #expect((n.coordinator >= 0) == (parent != nil), "only the root's tabs have no coordinator: \(n.id)")
                if n.coordinator >= 0 { #expect(n.children.count == graph.coordinators[n.coordinator].tabs.count) }
            case .stack:
                #expect(!n.children.isEmpty, "empty stack \(n.id)")
                #expect(n.children.allSatisfy { $0.kind == .screen || $0.kind == .flow || ($0.kind == .tabs && $0.coordinator >= 0) },
                        "a stack holds screens, flows and tab containers")
            case .flow:
                let steps = graph.coordinators[n.coordinator].flow!.steps
                #expect(!n.children.isEmpty && n.children.allSatisfy { $0.kind == .screen && steps.contains($0.coordinator) }, "malformed flow \(n.id)")
            case .screen:
                #expect(n.children.isEmpty)
            }
            if let p = n.presented { #expect(p.kind == .stack); walk(p, parent: n) }
            for c in n.children { walk(c, parent: n) }
        }
        walk(s.root, parent: nil)
        #expect(ids.count == s.nodeCount)
        // The links that count no reference keep their rules (TreeLinks.swift).
        #expect(s.linkProblems().isEmpty, "\(s.linkProblems())")
        // Within the limits, and the setup models (with their earlier params) counted as they are.
        var params = 0
        s.root.forEach {
            if $0.coordinator >= 0 { params += $0.params.encodedSize }
            if let h = $0.paramsHistory {
                #expect(!h.isEmpty && h.count <= Session.maxParamsHistory)
                params += JSONValue.array(h).encodedSize
            }
        }
        #expect(s.paramsBytes == params, "params bytes counted \(s.paramsBytes), are \(params)")
        #expect(s.root.height <= s.limits.maxDepth && s.nodeCount <= s.limits.maxNodes && s.paramsBytes <= s.limits.maxParamsBytes,
                "past a limit: depth \(s.root.height), nodes \(s.nodeCount), params \(s.paramsBytes) (\(s.limits))")
        // visible: a path from the root that ends at a screen.
        let v = s.visible
        #expect(v.first == s.root.id)
        #expect(s.node(v.last!)?.kind == .screen)
        for (a, b) in zip(v, v.dropFirst()) {
            let pa = s.node(a)!, nb = s.node(b)!
            #expect(nb.parent === pa)
            switch pa.kind {
            case .tabs: #expect(pa.children[pa.selected] === nb)
            case .stack, .flow: #expect(pa.children.last === nb)
            case .screen: #expect(pa.presented === nb)
            }
        }
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func randomOperationsKeepTheTreeConsistent(seed: UInt64) throws {
        let graph = seed <= 4 ? TreePropertyTests.example : TreePropertyTests.tabs
        var rng = SplitMix64(seed: seed)
        let coordinators = graph.coordinators
        var commits = 0, failures = 0, limited = 0
        let described = graph.describe()
        var dismissesChecked = [0, 0]  // dismisses of the top the mirror said would act, and would have nothing to dismiss
        for sequence in 0..<750 {
            let s = Session(name: "s\(sequence)", graph: graph)
            if Bool.random(using: &rng) {
                // Tight limits, so that navigations meet them: refused ones change nothing.
                s.limits.maxDepth = Int.random(in: 4...8, using: &rng)
                s.limits.maxNodes = Int.random(in: 8...20, using: &rng)
                s.limits.maxParamsBytes = Int.random(in: 12...80, using: &rng)
            }
            var mirror = TreeMirror(snapshot: .object(s.snapshot()))
            // A second subscriber, in the compact form: its mirror must stay the same tree.
            s.recordsCompactChanges = true
            var snapshot = s.snapshot()
            snapshot.append("ref", 1)
            var compactMirror = TreeMirror(snapshot: .object(snapshot))
            // A copy brought forward by replaying the compact changes, as a log store's restore does.
            let replica = s.copy()
            var everSeen = Set<String>()
            s.root.forEach { everSeen.insert($0.id) }
            if Bool.random(using: &rng) { try s.setFacts(["loggedIn": true]) }
            // The tree as JSON and as text, made once after each step for all its checks (and kept
            // as the next step's `before`).
            var tree = s.root.json(graph), treeText = JSONWriter.string(tree)
            for _ in 0..<Int.random(in: 5...40, using: &rng) {
                let before = treeText
                let version = s.version
                var allIds: [String] = []
                s.root.forEach { allIds.append($0.id) }
                let commit: Commit?
                do {
                    switch Int.random(in: 0..<15, using: &rng) {
                    case 0..<6:
                        let target = coordinators.randomElement(using: &rng)!
                        let by = Bool.random(using: &rng) ? Presentation.allCases.randomElement(using: &rng)! : nil
                        let from = Int.random(in: 0..<4, using: &rng) == 0 ? allIds.randomElement(using: &rng) : nil
                        let caller = Caller(roles: Bool.random(using: &rng) ? ["staff"] : [])
                        let r = NavigateRequest(to: target.name, by: by, with: sample(target.setup, &rng), from: from,
                                                ifVersion: Int.random(in: 0..<8, using: &rng) == 0 ? s.version - 1 : nil)
                        var plan = try s.plan(r, caller: caller)
                        if Int.random(in: 0..<4, using: &rng) == 0 {
                            // navigate {popUpTo}: pop to a coordinator (or node) on the visible path first.
                            let to = Bool.random(using: &rng) ? coordinators.randomElement(using: &rng)!.name : allIds.randomElement(using: &rng)!
                            plan.popUpTo = (try s.popTarget(to).number, Bool.random(using: &rng))
                        }
                        // dryRun answers what the navigation does: the same changes and visible path, or a refusal.
                        let predicted = try? s.dryRun(plan)
                        let made: Commit
                        do throws(NavError) {
                            made = try s.commit(plan)
                        } catch {
                            #expect(predicted == nil, "dryRun predicted a commit that failed (\(error.message)) at seed \(seed), session \(sequence)")
                            throw error
                        }
                        #expect(predicted?.commit.changeText?.bytes == made.changeText?.bytes && predicted?.visible == s.visible,
                                "dryRun predicted other changes at seed \(seed), session \(sequence), version \(s.version)")
                        commit = made
                    case 6..<8:
                        // dismiss: earlier params (update {push: true}) are restored first, as the server does.
                        let id = Bool.random(using: &rng) ? allIds.randomElement(using: &rng) : nil
                        // What a front-end reads from its mirror and the described graph: whether a
                        // dismiss of the visible top has nothing to dismiss, as navd answers.
                        let refusal = id == nil ? TreeMirror(snapshot: .object(s.snapshot())).nothingToDismiss(graph: described) : nil
                        if id == nil { dismissesChecked[refusal == nil ? 0 : 1] += 1 }
                        let dismissed: Result<Commit, NavError>
                        do throws(NavError) {
                            if let restored = try s.restoreEarlierParams(id) { dismissed = .success(restored) } else { dismissed = .success(try s.dismiss(id)) }
                        } catch {
                            dismissed = .failure(error)
                        }
                        if id == nil, case .failure(let error) = dismissed {
                            #expect((refusal != nil) == (error.kind == .unknownNode), "navd: \(error.message); the mirror: \(refusal ?? "a dismiss") at seed \(seed), session \(sequence)")
                        } else if id == nil {
                            #expect(refusal == nil, "the mirror said \(refusal ?? "") at seed \(seed), session \(sequence)")
                        }
                        commit = try dismissed.get()
                    case 8:
                        // dismiss {to, inclusive}
                        let to = Bool.random(using: &rng) ? coordinators.randomElement(using: &rng)!.name : allIds.randomElement(using: &rng)!
                        commit = try s.dismiss(to: to, inclusive: Bool.random(using: &rng))
                    case 9:
                        // update {node, with}
                        let id = allIds.randomElement(using: &rng)!
                        let setup = s.node(id).flatMap { $0.kind == .screen || $0.kind == .flow ? graph.coordinators[$0.coordinator].setup : nil }
                        commit = try s.update(id, with: sample(setup, &rng), push: Bool.random(using: &rng),
                                              caller: Caller(roles: Bool.random(using: &rng) ? ["staff"] : []))
                    case 10:
                        // reset {} or reset {to: [...]}
                        if Bool.random(using: &rng) {
                            commit = s.resetToRoot()
                        } else {
                            let steps = (0..<Int.random(in: 1...3, using: &rng)).map { _ -> ResetStep in
                                let c = coordinators.randomElement(using: &rng)!
                                return ResetStep(to: c.name, with: sample(c.setup, &rng), by: Bool.random(using: &rng) ? .present : nil)
                            }
                            commit = try s.commit(try s.planReset(steps, caller: Caller(roles: ["staff"]), ifVersion: nil))
                        }
                    case 11:
                        // open: a URL made from one of the graph's link patterns.
                        let link = graph.links.randomElement(using: &rng)!
                        let path = link.segments.map { seg -> String in
                            switch seg {
                            case .literal(let l): return l
                            case .parameter, .optional: return ["p1", "a1", "ord-3", "2"].randomElement(using: &rng)!
                            case .wildcard: return "a/b"
                            }
                        }
                        commit = try s.commit(try s.planLink("/" + path.joined(separator: "/"), caller: Caller()))
                        // link.resolve gives back a URL whose link builds the same stack (a first screen
                        // the link gives no params keeps the tab's, as opening it keeps that screen).
                        if let url = try? s.resolveLink(nil).url {
                            let steps = (try? s.planLink(url, caller: Caller()))?.link ?? []
                            var chain = s.linkChain(to: s.visibleTop!)
                            // (A link ending at a tab container stands for its first tab's first screen.)
                            if steps.count == chain.count - 1, chain.count >= 2, chain[chain.count - 2].kind == .tabs { chain.removeLast() }
                            let built = steps.enumerated().map { i, step in
                                [step.coordinator: JSONWriter.string(i == 0 && step.params == .object([:]) ? chain[0].params : step.params)]
                            }
                            #expect(built == chain.map { [$0.coordinator: JSONWriter.string($0.params)] }, "resolve/open round trip of \(url)")
                        }
                    default:
                        var flows: [String] = []
                        s.root.forEach { if $0.kind == .flow { flows.append($0.id) } }
                        let id = flows.randomElement(using: &rng) ?? allIds.randomElement(using: &rng)!
                        let outcome: Session.FlowOutcome = [.cancelled, .error(["message": "no"]), .result(["orderId": "ord-1", "user": "ann"]), .result([:])]
                            .randomElement(using: &rng)!
                        commit = try s.flowComplete(id, outcome)
                    }
                } catch {
                    if (error as? NavError)?.kind == .limitExceeded { limited += 1 }
                    commit = nil
                }
                tree = s.root.json(graph)
                treeText = JSONWriter.string(tree)
                if let commit {
                    commits += 1
                    #expect(commit.version == version + 1 && s.version == version + 1)
                    var newIds: [String] = []
                    s.root.forEach { if !everSeen.contains($0.id) { newIds.append($0.id) } }
                    for id in newIds { everSeen.insert(id) }
                    for id in commit.removed { #expect(s.node(id) == nil) }
                    try mirror.apply(.object(["version": .int(commit.version), "changes": .array(commit.changes)]))
                    #expect(mirror.root == tree, "mirror diverged at seed \(seed), session \(sequence), version \(s.version)")
                    let compact = try commit.compactText.map { try JSONParser().parse($0.bytes) } ?? .array([])
                    #expect(compact.arrayValue?.count == commit.changes.count)
                    try compactMirror.apply(.array([1, .int(commit.version), compact, .array([])]))
                    #expect(compactMirror.root == tree, "compact mirror diverged at seed \(seed), session \(sequence), version \(s.version)")
                    try replica.replay(changes: compact, compact: true, version: commit.version, nextId: s.idCounter)
                    #expect(replica.root.json(graph) == tree && replica.paramsBytes == s.paramsBytes,
                            "the compact changes replayed diverged at seed \(seed), session \(sequence), version \(s.version)")
                } else {
                    failures += 1
                    #expect(s.version == version && treeText == before, "a failed command changed the tree")
                }
                checkInvariants(s, everSeen: everSeen)
                // The compact form of the whole tree reads back as the tree.
                var c = JSONWriter()
                s.root.writeCompact(into: &c, graph)
                #expect(try TreeMirror.expand(node: JSONParser().parse(c.bytes)) == tree, "compact tree differs at seed \(seed), session \(sequence)")
                // The snapshot written straight into a reply is the snapshot value, byte for byte.
                var w = JSONWriter()
                s.writeSnapshot(into: &w)
                #expect(w.bytes == JSONWriter.encode(.object(s.snapshot())), "written snapshot differs at seed \(seed), session \(sequence)")
            }
        }
        #expect(commits > 1000 && failures > 1000 && limited > 50, "the generator exercises every path (\(commits) commits, \(failures) failures, \(limited) past a limit)")
        #expect(dismissesChecked.allSatisfy { $0 > 20 }, "dismisses of the top the mirror judged: \(dismissesChecked) (acting, nothing to dismiss)")
    }
}

/// Random `setFacts` sequences (names added, changed, removed, some of them unlike ASCII order),
/// the sorted names asked for at random points and copies made between them: the names kept in
/// order always equal the facts' names sorted afresh.
@Suite struct FactNamesPropertyTests {
    @Test(arguments: 0..<20)
    func sortedNamesFollowEveryChange(seed: Int) throws {
        var rng = SplitMix64(seed: UInt64(seed))
        var s = Session(name: "p", graph: TreePropertyTests.example)
        // (Not "e\u{301}" beside "\u{e9}": Swift orders those two spellings inconsistently with
        // names that follow them, so that no order is the sorted one; the test below.)
        let names = ["a", "b", "B", "a.b", "ä", "z9", "z10", "é", "cart.items", "0", "~"]
        for _ in 0..<300 {
            var changes = JSONObject()
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let name = names.randomElement(using: &rng)! + (Bool.random(using: &rng) ? "" : String(Int.random(in: 0..<20, using: &rng)))
                changes[name] = Int.random(in: 0..<3, using: &rng) == 0 ? .null : .int(Int.random(in: 0..<9, using: &rng))
            }
            try s.setFacts(changes)
            if Int.random(in: 0..<4, using: &rng) == 0 { #expect(s.sortedFactNames == s.facts.keys.sorted()) }
            if Int.random(in: 0..<20, using: &rng) == 0 { s = s.copy() }
        }
        #expect(s.sortedFactNames == s.facts.keys.sorted())
        #expect(s.sortedFactNames.count == s.facts.count)
    }

    /// Two spellings of one name (canonically equivalent, so one fact) and names Swift orders
    /// inconsistently against them: no name is lost or listed twice as they come and go.
    @Test func equivalentSpellingsNeitherLoseNorDoubleAName() throws {
        let s = Session(name: "p", graph: TreePropertyTests.example)
        try s.setFacts(["e\u{301}": 1, "\u{e9}1": 2, "\u{e9}10": 3, "f": 4])
        _ = s.sortedFactNames
        try s.setFacts(["\u{e9}": 5, "e\u{301}1": .null, "\u{e9}2": 6])
        #expect(Set(s.sortedFactNames) == Set(s.facts.keys) && s.sortedFactNames.count == s.facts.count, "\(s.sortedFactNames)")
        try s.setFacts(["\u{e9}": .null, "\u{e9}10": .null])
        #expect(Set(s.sortedFactNames) == Set(s.facts.keys) && s.sortedFactNames.count == s.facts.count && s.facts.count == 2, "\(s.sortedFactNames)")
    }
}
