import JSON
import NavGraph

// MARK: - Restoring

extension Session {
    /// A session rebuilt from its saved form (`root` as `tree` answers it). Throws a message when
    /// the saved tree names coordinators the graph does not have or is malformed.
    public convenience init(restoring name: String, graph: NavigationGraph, root json: JSONValue, version: Int,
                            nextId: Int, facts: [String: JSONValue]) throws(NavError) {
        self.init(name: name, graph: graph)
        guard (0...Session.maxRestoredCounter).contains(version), (0...Session.maxRestoredCounter).contains(nextId) else {
            throw NavError(.corruptState, "saved version \(version) or id counter \(nextId) is outside 0…\(Session.maxRestoredCounter)")
        }
        let restored = try Session.node(from: json, graph: graph)
        try Session.validateRestored(restored, nextId: nextId)
        replaceState(root: restored, version: version, nextId: nextId, facts: facts)
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
        var seen = Set<Int>()
        var work: [Node] = [root]
        while let n = work.popLast() {
            guard n.number > 0, n.number <= nextId else {
                throw NavError(.corruptState, "saved node \(n.id) is numbered beyond the saved id counter \(nextId): a new node would reuse its id")
            }
            guard seen.insert(n.number).inserted else { throw NavError(.corruptState, "saved node id \(n.id) appears twice") }
            let allowed: Set<Node.Kind>
            switch n.kind {
            case .stack: allowed = [.screen, .flow, .tabs]
            case .tabs: allowed = [.stack]
            case .flow: allowed = [.screen]
            case .screen: allowed = []
            }
            if n.kind == .stack || n.kind == .tabs || n.kind == .flow, n.children.isEmpty {
                throw NavError(.corruptState, "saved \(n.kind.rawValue) \(n.id) has no children")
            }
            for c in n.children where c.kind == .tabs && c.coordinator < 0 {
                throw NavError(.corruptState, "saved stack \(n.id) holds tabs \(c.id) that name no tab container")
            }
            for c in n.children where !allowed.contains(c.kind) {
                throw NavError(.corruptState, "saved \(n.kind.rawValue) \(n.id) holds a \(c.kind.rawValue) (\(c.id))")
            }
            if n.kind == .tabs, !n.children.indices.contains(n.selected) {
                throw NavError(.corruptState, "saved tabs \(n.id) select tab \(n.selected) of \(n.children.count)")
            }
            if let p = n.presented {
                guard n.kind == .screen || n.kind == .flow, p.kind == .stack else {
                    throw NavError(.corruptState, "saved \(n.kind.rawValue) \(n.id) presents a \(p.kind.rawValue); only screens and flows present, and what they present is a stack")
                }
                work.append(p)
            }
            work.append(contentsOf: n.children)
        }
    }

    static func node(from j: JSONValue, graph: NavigationGraph) throws(NavError) -> Node {
        guard let id = j["id"]?.stringValue, let k = j["kind"]?.stringValue, let kind = Node.Kind(rawValue: k) else {
            throw NavError(.corruptState, "saved node without id or kind: \(JSONWriter.string(j).prefix(120))")
        }
        var coordinator = -1
        if kind == .screen || kind == .flow || (kind == .tabs && j["coordinator"] != nil) {
            let cname = j["coordinator"]?.stringValue ?? ""
            guard let c = graph.coordinator(named: cname) else {
                throw NavError(.unknownTarget, "saved node \(id) shows `\(cname)`, which the graph does not declare")
            }
            coordinator = c.index
        }
        guard let n = Node(id: id, kind: kind, coordinator: coordinator, params: j["params"] ?? .object([:])) else {
            throw NavError(.corruptState, "saved node id `\(id)` is not one navd makes (\"n\" and a number)")
        }
        n.selected = j["selected"]?.intValue ?? 0
        for c in j["children"]?.arrayValue ?? [] {
            let child = try node(from: c, graph: graph)
            child.parent = n
            n.children.append(child)
        }
        if let p = j["presented"] {
            let child = try node(from: p, graph: graph)
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
        var changes = ChangeLog(enabled: true, graph)
        changes.record("reset", root: root, removed: removed.numbers)
        return Commit(version: version, changes: changes.text,
                      node: nil, removedNumbers: removed.numbers, endedFlows: removed.ended)
    }

    /// The id counter, saved so restored sessions never reuse an id.
    public var idCounter: Int { nextId }

    /// Whether the last `commit(_:)` made `node` (rather than selecting or keeping it).
    public func madeByLastCommit(_ node: Node) -> Bool { node.number > idCounterBeforeCommit }
}
