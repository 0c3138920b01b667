import NavGraph

/// The cheap part of exploration, for `navd check`'s warnings: read from the graph's declarations
/// alone (no tree is built), so it runs on every check of a graph of any size in time linear in it.
/// - a coordinator no declaration leads to (root, tabs, `opens`, a flow's steps, a `then`, a
///   redirect, a recovery flow, a deep link's stack);
/// - a flow whose last step its start cannot lead to through its steps' `opens` (or next steps);
/// - preconditions that redirect in a cycle through the targets' own preconditions.
public enum GraphLint {
    public static func warnings(_ g: NavigationGraph) -> [Diagnostic] {
        var out: [Diagnostic] = []
        let n = g.coordinators.count
        // Reachability over what may lead where.
        var next = [[Int]](repeating: [], count: n)
        for c in g.coordinators {
            next[c.index] += c.opens + c.tabs
            if let f = c.flow {
                next[c.index].append(f.start)
                if let t = f.then { next[c.index].append(t.to) }
                next[c.index] += stepSuccessors(c, g)
            }
            for p in c.preconditions {
                let pre = g.preconditions[p]
                if let r = pre.redirect { next[c.index].append(r.to) }
                if case .flow(let f)? = pre.recover { next[c.index].append(f) }
            }
        }
        var seen = [Bool](repeating: false, count: n)
        var queue: [Int]
        switch g.root {
        case .stack(let c): queue = [c]
        case .tabs(let cs): queue = cs
        }
        for l in g.links { queue += l.entries.map(\.coordinator) }
        for r in g.routes where r.by == .select { queue.append(r.to) }
        while let c = queue.popLast() {
            guard !seen[c] else { continue }
            seen[c] = true
            queue += next[c].filter { !seen[$0] }
        }
        for c in g.coordinators where !seen[c.index] {
            out.append(Diagnostic(.warning, c.location, "no declaration leads to `\(c.name)`: neither the root, a tab, an `opens`, a flow, a redirect, a recovery nor a deep link shows it (`navd explore` walks the graph)"))
        }
        // Flows whose last step cannot be reached from their start.
        for c in g.coordinators {
            guard let f = c.flow, let last = f.steps.last, last != f.start else { continue }
            var reached: Set<Int> = [f.start]
            var q = [f.start]
            while let s = q.popLast() {
                for t in successors(ofStep: s, in: f, g) where !reached.contains(t) {
                    reached.insert(t)
                    q.append(t)
                }
            }
            if !reached.contains(last) {
                out.append(Diagnostic(.warning, c.location, "flow `\(c.name)` cannot be completed at its last step `\(g.coordinators[last].name)`: no step's `opens` (or next step) leads there from `\(g.coordinators[f.start].name)`"))
            }
        }
        // Redirect cycles through declared redirects.
        var redirects: [Int: [(precondition: Int, to: Int)]] = [:]
        for c in g.coordinators {
            for p in c.preconditions { if let r = g.preconditions[p].redirect { redirects[c.index, default: []].append((p, r.to)) } }
        }
        var reported = Set<Int>()
        for (start, _) in redirects.sorted(by: { $0.key < $1.key }) {
            var path: [Int] = [start]
            func dfs(_ c: Int) {
                for (p, t) in redirects[c] ?? [] {
                    if let at = path.firstIndex(of: t) {
                        if reported.insert(p).inserted && at == 0 {
                            let names = (path[at...] + [t]).map { g.coordinators[$0].name }.joined(separator: " → ")
                            out.append(Diagnostic(.warning, g.preconditions[p].location, "`\(g.preconditions[p].name)` redirects in a cycle: \(names); navd fails such a navigation as a redirect loop"))
                        }
                        continue
                    }
                    guard path.count < 64 else { continue }
                    path.append(t)
                    dfs(t)
                    path.removeLast()
                }
            }
            dfs(start)
        }
        return out
    }

    /// Where a flow's step may lead within the flow: its `opens`, else the next step.
    static func successors(ofStep s: Int, in f: Flow, _ g: NavigationGraph) -> [Int] {
        let c = g.coordinators[s]
        if !c.opens.isEmpty { return c.opens.filter { f.steps.contains($0) } }
        guard let i = f.steps.firstIndex(of: s), i + 1 < f.steps.count else { return [] }
        return [f.steps[i + 1]]
    }

    static func stepSuccessors(_ flow: Coordinator, _ g: NavigationGraph) -> [Int] {
        guard let f = flow.flow else { return [] }
        return f.steps.flatMap { successors(ofStep: $0, in: f, g) }
    }
}
