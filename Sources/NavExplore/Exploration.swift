import JSON
import NavGraph
import NavigationCore

/// What an exploration found, each at its place in the graph (`navd explore`).
public struct Finding: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case unreachable, deadEnd, incompleteFlow, brokenLink, recovery, cycle, route, redirect, unsampled
    }
    public let kind: Kind
    public let location: SourceLocation
    public let message: String
    /// A note says what the graph alone cannot tell (the app may make it right); the rest are defects.
    public var note = false
}

/// The outcome of ``Explorer/run()``: findings, what was reached, and the test plan.
public final class Exploration {
    public let graph: NavigationGraph
    public let options: ExploreOptions
    public let stateCount: Int
    public let truncated: Bool
    public let findings: [Finding]
    /// Every `opens` edge (source → target) some explored step took.
    public let reachedEdges: [(source: Int, target: Int)]
    /// Those a test can take with facts alone (no recovery, every precondition passing).
    public let plainEdges: Set<Int>
    public let plan: TestPlan

    init(_ e: Explorer) {
        graph = e.graph
        options = e.options
        stateCount = e.states.count
        truncated = e.truncated
        let g = e.graph
        var found: [Finding] = []
        let bound = e.truncated ? " within \(e.options.depth) steps (exploration stopped at --max-states \(e.options.maxStates) or --depth \(e.options.depth); raise them to look further)" : ""

        for c in g.coordinators where !e.shown.contains(c.index) {
            let why = e.unsampledSetup.contains(c.index) ? " (its `setup` schema has no value navd can make, so no navigation to it could be tried: name a value with `examples: [...]`)" : ""
            found.append(Finding(kind: .unreachable, location: c.location, message: "`\(c.name)` is never shown: no navigation from the root reaches it\(bound)\(why)"))
        }
        // Dead ends: a screen on top of every expanded tree it tops, with nothing leading on.
        var tops: [Int: (expanded: Int, stuck: Int, example: Int)] = [:]
        for (i, s) in e.states.enumerated() where s.expanded && s.top >= 0 {
            var t = tops[s.top] ?? (0, 0, i)
            t.expanded += 1
            if s.exits == 0 { t.stuck += 1; t.example = i }
            tops[s.top] = t
        }
        for (c, t) in tops.sorted(by: { $0.key < $1.key }) where t.expanded > 0 && t.stuck == t.expanded {
            let co = g.coordinators[c]
            let path = e.describePath(to: t.example)
            found.append(Finding(kind: .deadEnd, location: co.location,
                                 message: "`\(co.name)` has no way back but reset: on top, nothing it opens, no dismiss, tab or flow step leads anywhere (reached by \(path))"))
        }
        for c in g.coordinators where c.isFlow && e.shown.contains(c.index) && !e.flowTops.contains(c.index) {
            let last = c.flow!.steps.last.map { g.coordinators[$0].name } ?? "?"
            found.append(Finding(kind: .incompleteFlow, location: c.location,
                                 message: "flow `\(c.name)` cannot be completed: its last step `\(last)` is never on top (no step's `opens` leads there from `\(g.coordinators[c.flow!.start].name)`)\(bound)"))
        }
        for c in g.coordinators where e.unsampledResult.contains(c.index) && e.shown.contains(c.index) {
            found.append(Finding(kind: .incompleteFlow, location: c.location,
                                 message: "flow `\(c.name)` cannot be completed: its `result` schema has no value navd can make (name one with `examples: [...]`)"))
        }
        for (li, problem) in e.linkProblems.sorted(by: { $0.key < $1.key }) {
            let l = g.links[li]
            found.append(Finding(kind: .brokenLink, location: l.location, message: "deep link `\(l.pattern)`: \(problem)"))
        }
        found += Exploration.recoveryFindings(e)
        for (p, chain) in e.redirectLoops {
            let pre = g.preconditions[p]
            found.append(Finding(kind: .cycle, location: pre.location,
                                 message: "`\(pre.name)` redirects in a cycle: \(chain.map { g.coordinators[$0].name }.joined(separator: " → "))"))
        }
        for (p, message) in e.redirectProblems {
            let pre = g.preconditions[p]
            found.append(Finding(kind: .redirect, location: pre.location, message: "`\(pre.name)` \(message)"))
        }
        for (ri, r) in g.routes.enumerated() where e.routeResolved[ri] != true {
            found.append(Finding(kind: .route, location: r.location,
                                 message: "route `\(r.name)` never resolves from any screen reached\(bound)\(e.routeProblem[ri].map { ": \($0)" } ?? "")"))
        }
        for c in e.unsampledSetup.sorted() {
            let co = g.coordinators[c]
            found.append(Finding(kind: .unsampled, location: co.location,
                                 message: "`\(co.name)`: its `setup` schema has no value navd can make; exploration could not navigate to it (give its fields `examples: [...]`)"))
        }
        findings = found.sorted { $0.location < $1.location }

        var reached: [(Int, Int)] = []
        var plain = Set<Int>()
        var seen = Set<Explorer.Pair>()
        for k in e.edges.keys where g.coordinators[k.source].canOpen(k.target) {
            let pair = Explorer.Pair(source: k.source, target: k.target)
            if seen.insert(pair).inserted { reached.append((k.source, k.target)) }
        }
        reached.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        for (n, r) in reached.enumerated() where e.plainEdges[Explorer.Pair(source: r.0, target: r.1)] != nil { plain.insert(n) }
        reachedEdges = reached.map { (source: $0.0, target: $0.1) }
        plainEdges = plain
        plan = TestPlan(e, edges: reached.filter { e.plainEdges[Explorer.Pair(source: $0.0, target: $0.1)] != nil })
    }

    /// Recovery flows that cannot make their precondition pass: the flow cannot be completed, or the
    /// facts it sets fail the check (a flow setting no fact of the check is a note).
    static func recoveryFindings(_ e: Explorer) -> [Finding] {
        let g = e.graph
        var found: [Finding] = []
    for p in g.preconditions {
        guard case .flow(let f)? = p.recover else { continue }
        let flow = g.coordinators[f]
        if !e.flowTops.contains(f) {
            found.append(Finding(kind: .recovery, location: p.location,
                                 message: "`\(p.name)` recovers through flow `\(flow.name)`, which cannot be completed: the precondition can never pass by recovery"))
            continue
        }
        guard case .check(let fact, let test) = p.kind else { continue }
        let facts = resolveResultReferences(p.recoverFacts, in: SampleValues.value(for: flow.flow?.result))
        if let v = facts[fact] {
            if !Explorer.passes(v, test) {
                found.append(Finding(kind: .recovery, location: p.location,
                                     message: "`\(p.name)` recovers through `\(flow.name)`, whose `facts` set `\(fact)` to \(JSONWriter.string(v)), for which the check fails: the navigation fails after every recovery"))
            }
        } else if p.recoverFacts.isEmpty || !p.recoverFacts.keys.contains(fact) {
            var f = Finding(kind: .recovery, location: p.location,
                            message: "`\(p.name)` recovers through `\(flow.name)`, which sets no fact `\(fact)` (`recover: {flow, facts: {\(fact): …}}`): it passes after the flow only if a front-end sets the fact")
            f.note = true
            found.append(f)
        }
    }
        return found
    }

    /// `opens` entries of the graph, each source → target once.
    public var declaredEdges: [(source: Int, target: Int)] {
        graph.coordinators.flatMap { c in Array(Set(c.opens)).sorted().map { (source: c.index, target: $0) } }
    }

    public var defects: [Finding] { findings.filter { !$0.note } }

    // MARK: Output

    public var text: String {
        let g = graph
        let total = declaredEdges.count
        var out = "navd explore: \(stateCount) trees within \(options.depth) steps\(truncated ? " (stopped at a bound: what is not reached may lie beyond it)" : "")\n"
        out += "  coordinators shown: \(g.coordinators.count - findings.filter { $0.kind == .unreachable }.count)/\(g.coordinators.count)\n"
        out += "  opens edges reachable: \(reachedEdges.count)/\(total); by facts alone (the test plan): \(plainEdges.count)\n"
        out += "  test plan: \(plan.sequences.count) sequences, \(plan.sequences.reduce(0) { $0 + $1.steps.count }) steps\n"
        let defects = self.defects, notes = findings.filter(\.note)
        if defects.isEmpty {
            out += "\nNo defects found.\n"
        } else {
            out += "\nDefects (\(defects.count)):\n"
            for f in defects { out += "\(f.location): \(f.kind.rawValue): \(f.message)\n" }
        }
        if !notes.isEmpty {
            out += "\nNotes (\(notes.count)):\n"
            for f in notes { out += "\(f.location): note: \(f.message)\n" }
        }
        let unreachableEdges = declaredEdges.filter { d in !reachedEdges.contains { $0.source == d.source && $0.target == d.target } }
        if !unreachableEdges.isEmpty {
            out += "\n`opens` edges never taken (\(unreachableEdges.count)):\n"
            for d in unreachableEdges { out += "  \(g.coordinators[d.source].name) → \(g.coordinators[d.target].name)\n" }
        }
        return out
    }

    public var json: JSONValue {
        let g = graph
        var o: JSONObject = [
            "states": .int(stateCount), "depth": .int(options.depth), "maxStates": .int(options.maxStates), "truncated": .bool(truncated),
        ]
        o.append("findings", .array(findings.map { f in
            ["kind": .string(f.kind.rawValue), "at": .string("\(f.location.file):\(f.location.line)"), "line": .int(f.location.line),
             "file": .string(f.location.file), "message": .string(f.message), "note": .bool(f.note)] as JSONValue
        }))
        o.append("edges", .array(reachedEdges.enumerated().map { n, e in
            ["from": .string(g.coordinators[e.source].name), "to": .string(g.coordinators[e.target].name), "byFactsAlone": .bool(plainEdges.contains(n))] as JSONValue
        }))
        o.append("declaredEdges", .int(declaredEdges.count))
        o.append("plan", plan.json)
        return .object(o)
    }
}

extension Explorer {
    /// The steps from the root to state `i`, as a short text.
    func describePath(to i: Int) -> String {
        var steps: [String] = []
        var at: Int? = i
        while let k = at, let step = states[k].step {
            steps.append(describe(step))
            at = states[k].parent
        }
        return steps.isEmpty ? "the root" : steps.reversed().joined(separator: ", ")
    }

    func describe(_ step: Step) -> String {
        switch step.action {
        case .navigate(let t, let by, _): return "\(by.rawValue) \(graph.coordinators[t].name)"
        case .dismiss: return "dismiss"
        case .completeFlow(_, let f, let r): return "\(r == nil ? "cancel" : "complete") \(graph.coordinators[f].name)"
        case .open(_, let url): return "open \(url)"
        case .route(let r, _): return "route \(graph.routes[r].name)"
        }
    }
}
