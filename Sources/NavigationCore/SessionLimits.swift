import JSON
import NavGraph
import RPC

/// The bounds of one session (SECURITY.md "Limits"), set by navd's options: how deep and how large
/// its tree may grow, how much its setup models and facts may hold. Every command checks them
/// before it changes anything (a command that would pass one is refused with `limitExceeded`,
/// naming the option), and a restored session is checked against them like a request.
public struct SessionLimits: Sendable, Equatable {
    /// `--max-tree-depth`: nodes on the path from the root to the deepest node, both counted (a root
    /// stack and its first screen: 2; each modal adds its stack and its screen). It bounds every walk
    /// of a tree, and the nesting of every document that holds one.
    public var maxDepth = Limit.maxTreeDepth.defaultValue
    /// `--max-tree-nodes`: nodes in one session's tree.
    public var maxNodes = Limit.maxTreeNodes.defaultValue
    /// `--max-params-bytes`: the setup models of every node of one tree together, as JSON.
    public var maxParamsBytes = Limit.maxParamsBytes.defaultValue
    /// `--max-facts`: facts in one session.
    public var maxFacts = Limit.maxFacts.defaultValue
    /// `--max-fact-value`: one fact's value, as JSON.
    public var maxFactValue = Limit.maxFactValue.defaultValue
    /// `--max-facts-bytes`: the names and values of every fact of one session together, as JSON.
    public var maxFactsBytes = Limit.maxFactsBytes.defaultValue

    public init() {}

    /// The largest `--max-tree-depth` navd accepts: deep enough for any app, shallow enough that a
    /// walk of a tree that deep stays far from the end of the stack.
    public static let depthCeiling = Limit.maxTreeDepth.most ?? 1_000

    /// The deepest JSON nesting of a document navd writes that holds a tree within `treeDepth`
    /// (a `tree` reply, a `stackChanged`, a saved tree, a keyed reply) whose values come from requests
    /// nested at most `valueDepth` deep: each node adds an object and its `children` array, a value
    /// its own nesting, the envelope a few levels. Readers of navd's output accept this much.
    public static func writtenDepth(treeDepth: Int, valueDepth: Int) -> Int { 2 * treeDepth + valueDepth + 8 }
}

extension SessionLimits {
    /// What `option` allows, and what the command would have made: the `limitExceeded` error.
    func exceeded(_ what: String, _ have: Int, _ max: Int, option: String, hint: String) -> NavError {
        NavError(.limitExceeded, "\(what) would be \(have); a session allows at most \(max) (the \(option) limit): \(hint)",
                 data: ["limit": .string(option), "max": .int(max)])
    }

    @inline(__always)
    func fits(depth: Int, nodes: Int, paramsBytes: Int) -> Bool {
        depth <= maxDepth && nodes <= maxNodes && paramsBytes <= maxParamsBytes
    }

    /// Refuses a tree of `depth` levels, `nodes` nodes and `paramsBytes` bytes of setup models; for an
    /// estimate (`exact` false), answers whether it fits instead.
    @inline(__always)
    func check(depth: Int, nodes: Int, paramsBytes: Int, exact: Bool) throws(NavError) -> Bool {
        if !exact { return fits(depth: depth, nodes: nodes, paramsBytes: paramsBytes) }
        try check(depth: depth, nodes: nodes, paramsBytes: paramsBytes)
        return true
    }

    /// Refuses a tree of `depth` levels, `nodes` nodes and `paramsBytes` bytes of setup models.
    @inline(__always)
    func check(depth: Int, nodes: Int, paramsBytes: Int) throws(NavError) {
        if fits(depth: depth, nodes: nodes, paramsBytes: paramsBytes) { return }
        try refuse(depth: depth, nodes: nodes, paramsBytes: paramsBytes)
    }

    /// The `limitExceeded` of a tree that passes a limit (kept out of the line: messages are long).
    @inline(never)
    func refuse(depth: Int, nodes: Int, paramsBytes: Int) throws(NavError) {
        if depth > maxDepth {
            throw exceeded("the tree's depth", depth, maxDepth, option: "--max-tree-depth",
                           hint: "dismiss modals or flows before presenting more, or navigate with by: root or reset")
        }
        if nodes > maxNodes {
            throw exceeded("the number of nodes in the tree", nodes, maxNodes, option: "--max-tree-nodes",
                           hint: "dismiss screens before pushing more, or navigate with by: root or reset")
        }
        if paramsBytes > maxParamsBytes {
            throw exceeded("the setup models of the tree's nodes together", paramsBytes, maxParamsBytes, option: "--max-params-bytes",
                           hint: "keep large data out of params (pass an id instead), or dismiss screens first")
        }
    }

    /// Why a session of `graph` cannot hold even the graph's root within these limits; nil when it can.
    public func problem(with graph: NavigationGraph) -> String? {
        let probe = Session(name: "main", graph: graph)
        let depth = probe.root.height
        if depth > maxDepth { return "the graph's root is \(depth) nodes deep; --max-tree-depth is \(maxDepth)" }
        if probe.nodeCount > maxNodes { return "the graph's root has \(probe.nodeCount) nodes; --max-tree-nodes is \(maxNodes)" }
        return nil
    }
}

extension Session {
    /// Nodes from the root to `n`, both counted (the tree holds every node of the walk).
    @inline(__always)
    func depth(of n: Node) -> Int {
        var d = 1
        var p = n.parentRef
        while let up = p {
            d += 1
            p = up.with { $0.parentRef }
        }
        return d
    }

    /// What making a node of `coordinator` adds (``makeTarget(_:params:bytes:)``; ``NavigationGraph/Made``).
    @inline(__always)
    func shape(of coordinator: Int) -> (height: Int, nodes: Int, extraBytes: Int) {
        let m = graph.made[coordinator]
        return (m.height, m.nodes, m.extraBytes)
    }

    /// Whether a deep link's stack surely fits, counting nothing it removes: from the bottom of the
    /// root's stack (or a tab's), each modal step goes two levels deeper (its stack and itself).
    func linkFits(_ steps: [LinkStep]) -> Bool {
        var depth = root.kind == .tabs ? 3 : 2
        var deepest = 0, nodes = nodeCount + 1, bytes = paramsBytes
        for (i, step) in steps.enumerated() {
            if i > 0 && step.by == .select {
                // A tab of the container below, made with it: its screens are two levels deeper.
                depth += 2
                bytes += step.params.encodedSize
                continue
            }
            let s = shape(of: step.coordinator)
            if i > 0 && step.by == .present {
                depth += 2
                nodes += 1
            }
            deepest = max(deepest, depth + s.height - 1)
            nodes += s.nodes
            bytes += step.params.encodedSize + s.extraBytes
        }
        return limits.fits(depth: deepest, nodes: nodes, paramsBytes: bytes)
    }

    /// The tree the graph's root makes (``makeRoot()``): its depth, nodes and setup-model bytes.
    func rootShape() -> (height: Int, nodes: Int, bytes: Int) {
        switch graph.root {
        case .stack(let c):
            let s = shape(of: c)
            return (1 + s.height, 1 + s.nodes, 2 + s.extraBytes)
        case .tabs(let tabs):
            var height = 0, nodes = 1, bytes = 0
            for t in tabs {
                let s = shape(of: t)
                height = max(height, s.height)
                nodes += 1 + s.nodes
                bytes += 2 + s.extraBytes
            }
            return (2 + height, nodes, bytes)
        }
    }

    /// Refuses a navigation to `target` by `by` from `source`, whose setup model is `bytes` of JSON,
    /// when the tree it would make passes a limit. Exact, except where a `popUpTo` (`exact` false)
    /// removes nodes before it adds its own: then it is an estimate that counts nothing removed, and
    /// ``commit(_:)`` measures the tree on a trial copy when the estimate passes a limit. Answers
    /// false when an estimate passed a limit (the commit must be measured). Given scalars, not the
    /// plan: it runs on every navigation.
    @inline(__always)
    func checkGrowth(target: Int, by: Presentation, bytes: Int, exact: Bool, from source: Node) throws(NavError) -> Bool {
        let s = graph.made[target]
        let added = bytes + s.extraBytes
        switch by {
        case .push:
            // A screen pushed is no deeper than the screens already in its stack (a stack is never
            // empty): only a taller target (a flow, a tab container) can deepen the tree.
            var deepest = 0
            if s.height > 1 {
                // The stack the target goes on: the source's, or the one holding the source's flow.
                var container = source.parentRef!
                if container.with({ $0.kind == .flow && !(graph.coordinators[$0.coordinator].flow?.steps.contains(target) ?? false) }) {
                    container = container.with { $0.parentRef! }
                }
                deepest = container.with { self.depth(of: $0) } + s.height
            }
            return try limits.check(depth: deepest, nodes: nodeCount + s.nodes, paramsBytes: paramsBytes + added, exact: exact)
        case .present:
            return try limits.check(depth: depth(of: source) + 1 + s.height, nodes: nodeCount + 1 + s.nodes, paramsBytes: paramsBytes + added, exact: exact)
        case .replace:
            // The source and what is above it in its stack go.
            var goneNodes = 0, goneBytes = 0
            if let container = source.parent, let i = source.indexInParent {
                for n in container.children[i...] {
                    n.forEach { m in
                        goneNodes += 1
                        goneBytes += m.paramsBytes
                    }
                }
            }
            return try limits.check(depth: depth(of: source) - 1 + s.height, nodes: nodeCount - goneNodes + s.nodes,
                                    paramsBytes: paramsBytes - goneBytes + added, exact: exact)
        case .root:
            return try limits.check(depth: 1 + s.height, nodes: 1 + s.nodes, paramsBytes: added, exact: exact)
        case .select:
            if nestedTab(of: target) == nil, declaredTab(target) != nil, tabIndex(of: target) == nil {
                let r = rootShape()
                return try limits.check(depth: r.height, nodes: r.nodes, paramsBytes: r.bytes, exact: exact)
            }
            return true
        }
    }
}

extension Node {
    /// Nodes from this one to the deepest below it, both counted (a walk bounded by the tree's depth).
    public var height: Int {
        var h = 0
        for c in children { h = max(h, c.height) }
        if let p = presented { h = max(h, p.height) }
        return h + 1
    }
}
