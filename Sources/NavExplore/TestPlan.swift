import JSON
import NavGraph
import NavigationCore

/// A small set of navigation sequences that together take every `opens` edge, route and link a
/// test can reach with facts alone, and put on top every coordinator it can reach so, as
/// model-based testing tools generate edge-covering paths: each sequence runs
/// from a fresh session (`session.open`), each step says the facts to set first, how providers
/// answer, what commands must do, and which coordinator is on top after it. Made greedily: the
/// edge reached deepest first, its whole path marking every edge it takes, until none is left.
public struct TestPlan: Sendable {
    public struct PlanStep: Sendable {
        public let method: String
        public let params: JSONObject
        public let facts: JSONObject
        public let providers: [String: Bool]
        public let commands: [String: Bool]
        public let expect: String
        public let edge: String?
    }
    public struct Sequence: Sendable {
        public let name: String
        public let steps: [PlanStep]
    }
    public let sequences: [Sequence]
    /// Roles the plan's navigations need (the targets' `access`): the generated pytest runs navd
    /// with a policy granting them to the token ``token``.
    public let roles: [String]
    public static let token = "navd-plan"
    /// The edges the plan takes (source → target names), each once.
    public let edges: [String]

    init(_ e: Explorer, edges wanted: [(Int, Int)]) {
        let g = e.graph
        func path(_ i: Int) -> [Step] {
            var out: [Step] = []
            var at = i
            while let p = e.states[at].plainParent, let s = e.states[at].plainStep {
                out.append(s)
                at = p
            }
            return out.reversed()
        }
        let ordered = wanted.map { w -> (Int, Int, Int, Step) in
            let (from, step) = e.plainEdges[Explorer.Pair(source: w.0, target: w.1)]!
            return (w.0, w.1, from, step)
        }.sorted { e.states[$0.2].plainDepth != e.states[$1.2].plainDepth ? e.states[$0.2].plainDepth > e.states[$1.2].plainDepth : ($0.0, $0.1) < ($1.0, $1.1) }
        var covered = Set<Explorer.Pair>()
        var sequences: [Sequence] = []
        // What the sequences so far put on top and which preconditions they meet.
        var onTop = Set<Int>()
        if let root = e.states.first, root.top >= 0 { onTop.insert(root.top) }
        var met = Set<Int>()
        func add(_ name: String, _ steps: [Step]) {
            for s in steps {
                if let edge = s.edge, g.coordinators[edge.source].canOpen(edge.target) {
                    covered.insert(Explorer.Pair(source: edge.source, target: edge.target))
                }
                if s.top >= 0 { onTop.insert(s.top) }
                met.formUnion(s.outcomes.map(\.precondition))
            }
            sequences.append(Sequence(name: name, steps: steps.map { TestPlan.planStep($0, g) }))
        }
        for (source, target, from, step) in ordered where !covered.contains(Explorer.Pair(source: source, target: target)) {
            add("edge-\(sequences.count + 1)", path(from) + [step])
        }
        // Every route and deep link a test can take, each once, after the edges.
        for (ri, (from, step)) in e.plainRoutes.sorted(by: { $0.key < $1.key }) {
            add("route-\(g.routes[ri].localName)", path(from) + [step])
        }
        for (li, step) in e.plainLinks.sorted(by: { $0.key < $1.key }) {
            add("link-\(li + 1)", [step])
        }
        // Every tabs container's `back:` a test can go through, each once.
        for (c, (from, step)) in e.plainTabBacks.sorted(by: { $0.key < $1.key }) {
            add("back-\(c < 0 ? "root" : g.coordinators[c].localName)", path(from) + [step])
        }
        // Every coordinator a test can put on top that no sequence above does (a flow's steps that
        // declare no opens, a flow's `then`): the shallowest plain way to it, each once.
        var shallowest: [Int: Int] = [:]
        for (i, st) in e.states.enumerated() where st.plainParent != nil && st.top >= 0 {
            if let b = shallowest[st.top], e.states[b].plainDepth <= st.plainDepth { continue }
            shallowest[st.top] = i
        }
        for (c, i) in shallowest.sorted(by: { $0.key < $1.key }) where !onTop.contains(c) {
            add("show-\(g.coordinators[c].localName)", path(i))
        }
        // Every precondition a test can meet with facts alone that none of those meets (a leave
        // guard, met by a dismiss), each once.
        for (p, (from, step)) in e.plainPreconditions.sorted(by: { $0.key < $1.key }) where !met.contains(p) {
            add("meet-\(g.preconditions[p].localName)", path(from) + [step])
        }
        self.sequences = sequences
        var roles = Set<String>()
        for s in sequences {
            for step in s.steps {
                if step.method == "navigate", let to = step.params["to"]?.stringValue, let c = g.coordinator(named: to) { roles.formUnion(c.access) }
            }
        }
        self.roles = roles.sorted()
        edges = wanted.map { "\(g.coordinators[$0.0].name) → \(g.coordinators[$0.1].name)" }
    }

    static func planStep(_ s: Step, _ g: NavigationGraph) -> PlanStep {
        let method: String
        var params = JSONObject()
        switch s.action {
        case .navigate(let t, let by, let with):
            method = "navigate"
            params.append("to", .string(g.coordinators[t].name))
            params.append("by", .string(by.rawValue))
            if !with.isEmpty { params.append("with", .object(with)) }
        case .dismiss:
            method = "dismiss"
        case .completeFlow(let node, _, let result):
            method = "flowComplete"
            params.append("flow", .string(node))
            if let result { params.append("result", result) } else { params.append("cancelled", .bool(true)) }
        case .open(_, let url):
            method = "open"
            params.append("url", .string(url))
        case .route(let r, let with):
            method = "navigate"
            params.append("route", .string(g.routes[r].name))
            if !with.isEmpty { params.append("with", .object(with)) }
        }
        let edge = s.edge.flatMap { g.coordinators[$0.source].canOpen($0.target) ? "\(g.coordinators[$0.source].name) → \(g.coordinators[$0.target].name)" : nil }
        return PlanStep(method: method, params: params, facts: s.facts, providers: s.providers, commands: s.commands,
                        expect: s.top >= 0 ? g.coordinators[s.top].name : "", edge: edge)
    }

    public var json: JSONValue {
        var o: JSONObject = ["edges": .array(edges.map(JSONValue.string))]
        if !roles.isEmpty {
            o.append("roles", .array(roles.map(JSONValue.string)))
            o.append("token", .string(TestPlan.token))
        }
        o.append("sequences", .array(sequences.map { seq in
            ["name": .string(seq.name), "steps": .array(seq.steps.map { s in
                var step: JSONObject = ["method": .string(s.method), "params": .object(s.params)]
                if !s.facts.isEmpty { step.append("facts", .object(s.facts)) }
                if !s.providers.isEmpty {
                    step.append("providers", .object(JSONObject(uniqueMembers: s.providers.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.bool($0.value)) })))
                }
                if !s.commands.isEmpty {
                    step.append("commands", .object(JSONObject(uniqueMembers: s.commands.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.bool($0.value)) })))
                }
                step.append("expect", .string(s.expect))
                if let e = s.edge { step.append("edge", .string(e)) }
                return .object(step)
            })] as JSONValue
        }))
        return .object(o)
    }

    /// A pytest module that runs the plan (`navd-plan.json` beside it) with navd's pytest plugin,
    /// one test per sequence; `graph`: the graph directory for `navd_graph` (nil: navd's example).
    public func pytest(graph: String?) -> String {
        let marker = graph.map { "@pytest.mark.navd_graph(\(pythonString($0)))\n" } ?? ""
        return """
        # Made by `navd explore`: every `opens` edge, route, link and screen a test can reach with facts alone.
        # Run with navd's pytest plugin (pip install navd-client): pytest test_navd_plan.py --navd-coverage
        import atexit
        import json
        import os
        import shutil
        import tempfile

        import pytest

        from navd_client.plan import run_sequence

        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "navd-plan.json")) as f:
            PLAN = json.load(f)

        # Roles the plan's targets admit, granted to the plan's token by a policy of its own.
        pytestmark = []
        if PLAN.get("roles"):
            _policy_dir = tempfile.mkdtemp(prefix="navd-plan-")
            atexit.register(shutil.rmtree, _policy_dir, True)
            _policy = os.path.join(_policy_dir, "policy.json")
            # navd reads a policy that holds tokens only when no other user may read it.
            with os.fdopen(os.open(_policy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                json.dump({"tokens": {PLAN["token"]: PLAN["roles"]}}, f)
            pytestmark.append(pytest.mark.navd_args("--policy", _policy))


        \(marker)@pytest.mark.parametrize("sequence", PLAN["sequences"], ids=lambda s: s["name"])
        def test_navigation_plan(navd, navd_client, sequence):
            run_sequence(navd, navd_client, sequence, token=PLAN.get("token"))

        """
    }

    func pythonString(_ s: String) -> String {
        var out = "\""
        for ch in s.unicodeScalars {
            switch ch {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where ch.value < 0x20 || ch.value == 0x7F:
                let h = String(ch.value, radix: 16)
                out += "\\x" + (h.count < 2 ? "0" + h : h)
            default: out.unicodeScalars.append(ch)
            }
        }
        return out + "\""
    }
}
