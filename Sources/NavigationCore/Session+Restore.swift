import JSON
import NavGraph

// MARK: - Restoring

extension Session {
    /// A session rebuilt from its saved form (`root` as `tree` answers it, `facts` as `context.get`
    /// does), checked as a request would be: the tree's shape and ids, every coordinator known, every
    /// setup model valid for its coordinator's current schema, facts an object of named values, and
    /// every bound of `limits`. Throws the first problem, naming the node or fact and the rule.
    /// `tabsAsDeclared: false` (a graph reload, which checks the tabs itself) takes tab shells
    /// whatever tabs the graph now declares.
    public convenience init(restoring name: String, graph: NavigationGraph, root json: JSONValue, version: Int,
                            nextId: Int, facts: JSONValue, limits: SessionLimits, tabsAsDeclared: Bool = true) throws(NavError) {
        try self.init(restoringTree: name, graph: graph, root: json, version: version, nextId: nextId, facts: facts, limits: limits, keys: nil,
                      tabsAsDeclared: tabsAsDeclared)
    }

    /// As the other, with the tree read in place from the document a parser parsed last (a
    /// snapshot's tree), each member read once; `keys` gives the params' object keys (a restart
    /// reads the same few keys a hundred thousand times).
    public convenience init(restoring name: String, graph: NavigationGraph, root json: JSONView, version: Int,
                            nextId: Int, facts: JSONValue, limits: SessionLimits, keys: StringCache?) throws(NavError) {
        try self.init(restoringTree: name, graph: graph, root: json, version: version, nextId: nextId, facts: facts, limits: limits, keys: keys)
    }

    /// The two above, specialized for each kind of root within this module.
    convenience init<Root: SavedNodeSource>(restoringTree name: String, graph: NavigationGraph, root json: Root, version: Int,
                                            nextId: Int, facts: JSONValue, limits: SessionLimits, keys: StringCache?,
                                            tabsAsDeclared: Bool = true) throws(NavError) {
        self.init(name: name, graph: graph, replacingTree: ())
        self.limits = limits
        guard (0...Session.maxRestoredCounter).contains(version), (0...Session.maxRestoredCounter).contains(nextId) else {
            throw NavError(.corruptState, "saved version \(version) or id counter \(nextId) is outside 0…\(Session.maxRestoredCounter)")
        }
        var count = 0
        let restored = try Session.node(from: json, graph: graph, depth: 1, count: &count, limits: limits, keys: keys)
        try Session.validateRestored(restored, nextId: nextId)
        if tabsAsDeclared { try Session.checkTabs(of: restored, graph: graph) }
        try Session.checkFlowSteps(of: restored, graph: graph)
        let table = try Session.restoredFacts(facts, limits: limits)
        replaceState(root: restored, version: version, nextId: nextId, facts: table)
        try limits.check(depth: 0, nodes: 0, paramsBytes: paramsBytes)
        if factsBytes > limits.maxFactsBytes {
            throw NavError(.limitExceeded, "the saved facts are \(factsBytes) bytes of JSON together; --max-facts-bytes is \(limits.maxFactsBytes)",
                           data: ["limit": "--max-facts-bytes", "max": .int(limits.maxFactsBytes)])
        }
    }

    /// Saved facts: an object of fact name → value, each within the fact limits.
    /// A fact name read back: not empty, no control character (as `context.set` admits them).
    static func checkRestoredFactName(_ k: String) throws(NavError) {
        if k.isEmpty || k.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw NavError(.corruptState, "a saved fact name is empty or holds a control character: \(JSONWriter.string(.string(String(k.prefix(40)))))")
        }
    }

    static func restoredFacts(_ j: JSONValue, limits: SessionLimits) throws(NavError) -> [String: JSONValue] {
        guard case .object(let o) = j else {
            throw NavError(.corruptState, "the saved facts are \(j.typeName == "null" ? "null" : "a JSON \(j.typeName)"), not an object of fact name → value")
        }
        guard o.count <= limits.maxFacts else {
            throw NavError(.limitExceeded, "\(o.count) facts are saved; --max-facts is \(limits.maxFacts)", data: ["limit": "--max-facts", "max": .int(limits.maxFacts)])
        }
        var table: [String: JSONValue] = [:]
        table.reserveCapacity(o.count)
        for (k, v) in o {
            try checkRestoredFactName(k)
            let size = v.encodedSize
            if size > limits.maxFactValue {
                throw NavError(.limitExceeded, "saved fact \"\(k.prefix(64))\" holds \(size) bytes of JSON; --max-fact-value is \(limits.maxFactValue)",
                               data: ["limit": "--max-fact-value", "max": .int(limits.maxFactValue)])
            }
            table[k] = v
        }
        return table
    }

    /// The largest version or id counter a saved session may hold: far beyond any real count, and far
    /// enough below `Int.max` that counting on can never overflow.
    public static let maxRestoredCounter = 1 << 53

    /// Checks that a saved tree has the shape navd makes: a stack or tabs at the root, stacks of
    /// screens and flows (never empty), tabs of stacks with a selected index among them, flows of
    /// screens, presented stacks; every id unique and below the id counter, so that no id is reused.
    static func validateRestored(_ root: Node, nextId: Int) throws(NavError) {
        guard root.kind == .stack || root.kind == .tabs else {
            throw NavError(.corruptState, "the saved root is a \(root.kind.rawValue); navd's roots are stacks or tabs")
        }
        // The numbers, sorted after the walk to find one that repeats: no set is built for the few
        // nodes a tree has (a restart reads a hundred thousand trees).
        var numbers: [Int] = []
        numbers.reserveCapacity(16)
        var work: [Node] = [root]
        while let n = work.popLast() {
            guard n.number > 0, n.number <= nextId else {
                throw NavError(.corruptState, "saved node \(n.id) is numbered beyond the saved id counter \(nextId): a new node would reuse its id")
            }
            numbers.append(n.number)
            if n.kind == .stack || n.kind == .tabs || n.kind == .flow, n.children.isEmpty {
                throw NavError(.corruptState, "saved \(n.kind.rawValue) \(n.id) has no children")
            }
            for c in n.children where c.kind == .tabs && c.coordinator < 0 {
                throw NavError(.corruptState, "saved stack \(n.id) holds tabs \(c.id) that name no tab container")
            }
            for c in n.children where !mayHold(n.kind, c.kind) {
                throw NavError(.corruptState, "saved \(n.kind.rawValue) \(n.id) holds a \(c.kind.rawValue) (\(c.id))")
            }
            if n.kind == .tabs, !n.children.indices.contains(n.selected) {
                throw NavError(.corruptState, "saved tabs \(n.id) select tab \(n.selected) of \(n.children.count)")
            }
            if let h = n.tabHistory, !h.allSatisfy(n.children.indices.contains) {
                throw NavError(.corruptState, "saved tabs \(n.id) remember tab \(h.first { !n.children.indices.contains($0) } ?? -1) of \(n.children.count)")
            }
            if let p = n.presented {
                guard n.kind == .screen || n.kind == .flow, p.kind == .stack else {
                    throw NavError(.corruptState, "saved \(n.kind.rawValue) \(n.id) presents a \(p.kind.rawValue); only screens and flows present, and what they present is a stack")
                }
                work.append(p)
            }
            work.append(contentsOf: n.children)
        }
        numbers.sort()
        for i in numbers.indices.dropFirst() where numbers[i] == numbers[i - 1] {
            throw NavError(.corruptState, "saved node id \(Node.id(numbers[i])) appears twice")
        }
    }

    /// Checks that each flow of a saved or replayed tree holds only steps its flow declares (a screen
    /// a flow pushes that is not one goes on the stack holding the flow).
    static func checkFlowSteps(of root: Node, graph: NavigationGraph) throws(NavError) {
        var todo = [root]
        while let n = todo.popLast() {
            if n.kind == .flow, let steps = graph.coordinators[n.coordinator].flow?.steps,
               let stray = n.children.first(where: { $0.coordinator >= 0 && !steps.contains($0.coordinator) }) {
                throw NavError(.unknownTarget, "saved flow \(n.id) (`\(graph.coordinators[n.coordinator].name)`) holds \(stray.id) (`\(graph.coordinators[stray.coordinator].name)`), which is not one of its steps in the graph")
            }
            todo.append(contentsOf: n.children)
            if let p = n.presented { todo.append(p) }
        }
    }

    /// Checks that each tab shell of a saved tree holds as many tabs as the graph declares for it
    /// (the root's `tabs`, or its container's): a tab is known by its place, so a graph that added,
    /// removed or moved tabs cannot take the tree as it is.
    public static func checkTabs(of root: Node, graph: NavigationGraph) throws(NavError) {
        try forEachTabShell(of: root) { n throws(NavError) in
            let (declared, owner) = declaredTabs(of: n, graph: graph)
            guard let declared else {
                throw NavError(.corruptState, "saved tabs \(n.id) are the root's tabs, and the graph's root is a stack")
            }
            if n.children.count != declared.count {
                let names = declared.map { graph.coordinators[$0].name }.joined(separator: ", ")
                throw NavError(.corruptState, "saved tabs \(n.id) hold \(n.children.count) tabs; \(owner) declares \(declared.count) (\(names))")
            }
        }
    }

    /// Calls `body` with each tab shell of the tree below `root`, presented ones included.
    static func forEachTabShell(of root: Node, _ body: (Node) throws(NavError) -> Void) throws(NavError) {
        var work: [Node] = [root]
        while let n = work.popLast() {
            if n.kind == .tabs { try body(n) }
            if let p = n.presented { work.append(p) }
            work.append(contentsOf: n.children)
        }
    }

    /// The tabs `graph` declares for the tab shell `n` (its container's, or the root's; nil when the
    /// graph's root is a stack), and who declares them, for messages.
    static func declaredTabs(of n: Node, graph: NavigationGraph) -> (tabs: [Int]?, owner: String) {
        if n.coordinator >= 0 {
            return (graph.coordinators[n.coordinator].tabs, "its container `\(graph.coordinators[n.coordinator].name)`")
        }
        if case .tabs(let t) = graph.root { return (t, "the graph's root") }
        return (nil, "the graph's root")
    }

    /// Whether a `parent` node may hold a `child` among its children: stacks hold screens, flows and
    /// tabs; tabs hold stacks; flows hold screens; screens hold none.
    static func mayHold(_ parent: Node.Kind, _ child: Node.Kind) -> Bool {
        switch parent {
        case .stack: return child == .screen || child == .flow || child == .tabs
        case .tabs: return child == .stack
        case .flow: return child == .screen
        case .screen: return false
        }
    }

    /// The saved node `j` at `depth` (the root: 1) and what is below it, read within `limits`'
    /// depth and node count (so the walk is bounded), each setup model checked against its
    /// coordinator's schema.
    static func node<Source: SavedNodeSource>(from j: Source, graph: NavigationGraph, depth: Int, count: inout Int, limits: SessionLimits,
                                              keys: StringCache?) throws(NavError) -> Node {
        guard depth <= limits.maxDepth else {
            throw NavError(.limitExceeded, "the saved tree is deeper than \(limits.maxDepth) nodes (the --max-tree-depth limit)",
                           data: ["limit": "--max-tree-depth", "max": .int(limits.maxDepth)])
        }
        count += 1
        guard count <= limits.maxNodes else {
            throw NavError(.limitExceeded, "the saved tree has more than \(limits.maxNodes) nodes (the --max-tree-nodes limit)",
                           data: ["limit": "--max-tree-nodes", "max": .int(limits.maxNodes)])
        }
        let saved = j.savedNode(keys: keys, graph: graph)
        guard saved.idIsString, let kind = saved.kind else {
            throw NavError(.corruptState, "saved node without id or kind: \(JSONWriter.string(j.savedJSON).prefix(120))")
        }
        var coordinator = -1
        if kind == .screen || kind == .flow || (kind == .tabs && saved.hasCoordinator) {
            guard let c = saved.coordinator else {
                throw NavError(.unknownTarget, "saved node \(saved.id) shows `\(saved.coordinatorName ?? "")`, which the graph does not declare")
            }
            coordinator = c
            // A node is made for its coordinator's kind: a graph that made a screen a flow (or a
            // tab container, or the other way) cannot take the node as it is.
            let declared = graph.coordinators[c]
            let kindDeclared: Node.Kind = declared.isFlow ? .flow : declared.tabs.isEmpty ? .screen : .tabs
            guard kindDeclared == kind else {
                throw NavError(.unknownTarget, "saved node \(saved.id) is a \(kind.rawValue) of `\(declared.name)`, which the graph declares as a \(kindDeclared.rawValue)")
            }
        }
        let params = saved.params ?? .object([:])
        if coordinator >= 0 {
            let c = graph.coordinators[coordinator]
            guard case .object = params else {
                throw NavError(.corruptState, "saved node \(saved.id) (\(c.name)) has params that are a JSON \(params.typeName), not an object")
            }
            if let setup = c.setup, let violation = setup.validate(params) {
                throw NavError(.invalidSetup, "saved node \(saved.id) (\(c.name)) has params that do not match its setup: \(violation.message)",
                               data: ["pointer": .string(violation.pointer), "rule": .string(violation.rule), "node": .string(saved.id)])
            }
        }
        guard let number = saved.number else {
            throw NavError(.corruptState, "saved node id `\(saved.id)` is not one navd makes (\"n\" and a number)")
        }
        let n = Node(number: number, kind: kind, coordinator: coordinator, setup: WrittenJSON(params))
        if coordinator >= 0 {
            n.paramsBytes = n.setup.count
            if let history = saved.paramsHistory,
               let h = try restoredParamsHistory(history, of: saved.id, coordinator: graph.coordinators[coordinator]) {
                n.paramsHistory = h
                n.historyBytes = JSONValue.array(h).encodedSize
            }
        }
        n.selected = saved.selected ?? 0
        n.isRecovery = kind == .flow && saved.recovery
        if kind == .flow, let t = saved.then { n.then = try restoredThen(t, of: saved.id, graph: graph) }
        if kind == .tabs, let h = saved.history {
            // Checked against the children below.
            guard let list = Session.tabHistory(h, selected: n.selected) else {
                throw NavError(.corruptState, "saved tabs \(saved.id) have a history that is not a list of distinct tab indexes other than the selected one")
            }
            n.tabHistory = list
        }
        for c in saved.children {
            let child = try node(from: c, graph: graph, depth: depth + 1, count: &count, limits: limits, keys: keys)
            child.parent = n
            n.children.append(child)
        }
        if let p = saved.presented {
            let child = try node(from: p, graph: graph, depth: depth + 1, count: &count, limits: limits, keys: keys)
            child.parent = n
            n.presented = child
        }
        return n
    }

    /// Replaces the whole tree by the graph's root (one commit, a `reset` change).
    public func resetToRoot() -> Commit {
        let old = root
        let fresh = makeRoot()
        root = fresh
        var removed = Removal()
        forget(old, into: &removed)
        version += 1
        var changes = ChangeLog(full: true, compact: recordsCompactChanges, graph)
        changes.record("reset", root: root, removed: removed.numbers)
        return Commit(version: version, log: changes,
                      node: nil, removedNumbers: removed.numbers, endedFlows: removed.ended)
    }

    /// Takes the session to `newGraph`, keeping its nodes: `coordinators` gives, for each
    /// coordinator of ``graph``, its index in `newGraph`. For a graph reload where every
    /// coordinator the tree shows is declared in `newGraph` as it was (its kind, setup, steps and
    /// tabs) and a flow's `then` names one it declares: a restore of the saved tree would check
    /// the same things against the same declarations and build the same tree, without the tree
    /// written out and read back (about 8 µs a session: 0.8 s of the loop for 100,000).
    public func rebase(onto newGraph: NavigationGraph, coordinators: [Int]) {
        root.forEach { $0.reindex(coordinators) }
        graph = newGraph
    }

    /// The session that succeeds `old` on `graph` when that graph cannot hold `old`'s tree (a forced
    /// graph reload): at the graph's root, its ids made after `old`'s (none is reused), with `old`'s
    /// version and facts. ``resetCommit(replacing:)`` then makes the one commit that says so.
    public convenience init(succeeding old: Session, graph: NavigationGraph, limits: SessionLimits) {
        self.init(name: old.name, graph: graph, replacingTree: ())
        self.limits = limits
        version = old.version
        nextId = old.nextId
        facts = old.facts
        sortedNames = old.sortedNames
        factsBytes = old.factsBytes
        root = makeRoot()
    }

    /// The `reset` commit from `old`'s tree to this session's root (made by
    /// ``init(succeeding:graph:limits:)``): every old node removed, the flows among them ended as
    /// cancelled (those this session's graph still declares as flows; the others are named by no
    /// coordinator of it and are left out).
    public func resetCommit(replacing old: Session) -> Commit {
        var removed = Removal()
        old.forget(old.root, into: &removed)
        var ended: [EndedFlow]? = nil
        for f in removed.ended ?? [] {
            guard let c = graph.coordinator(named: old.graph.coordinators[f.coordinator].name), c.isFlow else { continue }
            ended.append(EndedFlow(id: f.id, coordinator: c.index, status: f.status, result: nil, error: nil))
        }
        version += 1
        var changes = ChangeLog(full: true, compact: recordsCompactChanges, graph)
        changes.record("reset", root: root, removed: removed.numbers)
        return Commit(version: version, log: changes, node: nil, removedNumbers: removed.numbers, endedFlows: ended)
    }

    /// The id counter, saved so restored sessions never reuse an id.
    public var idCounter: Int { nextId }

    /// Whether the last `commit(_:)` made `node` (rather than selecting or keeping it).
    public func madeByLastCommit(_ node: Node) -> Bool { node.number > idCounterBeforeCommit }
}

extension Session {
    /// A saved flow's `then` (`{to, by?, with?}`, as ``NavigationGraph/object(_:)`` writes it). A
    /// target `graph` does not declare is refused as a node's coordinator would be (a graph reload
    /// removes such a flow first, or is refused).
    static func restoredThen(_ t: JSONValue, of id: String, graph: NavigationGraph) throws(NavError) -> NavigationSpec? {
        guard t.encodedSize <= maxThenBytes else {
            throw NavError(.corruptState, "saved flow \(id) has a then of more than \(maxThenBytes) bytes of JSON, more than navigate takes")
        }
        guard case .object(let o) = t, let to = o["to"]?.stringValue else {
            throw NavError(.corruptState, "saved flow \(id) has a then that is not {to, by?, with?}: \(JSONWriter.string(t).prefix(120))")
        }
        var by: Presentation?
        if let b = o["by"] {
            guard let name = b.stringValue, let p = Presentation(rawValue: name) else {
                throw NavError(.corruptState, "saved flow \(id) has a then whose by is not a presentation: \(JSONWriter.string(b).prefix(60))")
            }
            by = p
        }
        var with: JSONObject?
        if let w = o["with"] {
            guard case .object(let wo) = w else { throw NavError(.corruptState, "saved flow \(id) has a then whose with is not an object") }
            with = wo
        }
        guard let c = graph.coordinator(named: to) else {
            throw NavError(.unknownTarget, "saved flow \(id) goes on to `\(to)` when it completes (the then its navigate gave), which the graph does not declare")
        }
        return NavigationSpec(to: c.index, by: by, with: with)
    }

    /// A tabs node's `history` as navd writes it, in a saved tree or a recorded `select`: distinct
    /// tab indexes, at least one, never the selected tab; nil when `h` is not one.
    /// A saved screen's params history (`paramsHistory`): nil when absent; else a list of at most
    /// ``maxParamsHistory`` objects, each matching the coordinator's setup as params must.
    static func restoredParamsHistory(_ h: JSONValue?, of id: String, coordinator c: Coordinator) throws(NavError) -> [JSONValue]? {
        guard let h else { return nil }
        guard case .array(let list) = h, !list.isEmpty, list.count <= maxParamsHistory else {
            throw NavError(.corruptState, "saved node \(id) (\(c.name)) has a params history that is not a list of 1 to \(maxParamsHistory) objects")
        }
        for p in list {
            guard case .object = p else {
                throw NavError(.corruptState, "saved node \(id) (\(c.name)) has earlier params that are a JSON \(p.typeName), not an object")
            }
            if let setup = c.setup, let violation = setup.validate(p) {
                throw NavError(.invalidSetup, "saved node \(id) (\(c.name)) has earlier params that do not match its setup: \(violation.message)",
                               data: ["pointer": .string(violation.pointer), "rule": .string(violation.rule), "node": .string(id)])
            }
        }
        return list
    }

    static func tabHistory(_ h: JSONValue, selected: Int) -> [Int]? {
        guard let items = h.arrayValue else { return nil }
        let list = items.compactMap(\.intValue)
        guard list.count == items.count, !list.isEmpty, Set(list).count == list.count, !list.contains(selected) else { return nil }
        return list
    }
}
