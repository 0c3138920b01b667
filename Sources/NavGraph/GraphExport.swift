import JSON

extension NavigationGraph {
    /// The resolved graph as JSON: what `graph.describe` answers and `navd graph --format json` prints.
    public func describe() -> JSONValue {
        func names(_ ids: [Int]) -> JSONValue { .array(ids.map { .string(coordinators[$0].name) }) }
        var rootObj = JSONObject()
        switch root {
        case .stack(let i): rootObj.append("stack", .string(coordinators[i].name))
        case .tabs(let t):
            rootObj.append("tabs", names(t))
            if rootBack != .none { rootObj.append("back", .string(rootBack.rawValue)) }
        }
        var cs = JSONObject()
        for c in coordinators { cs.append(c.name, describe(c)) }
        var rs = JSONObject()
        for r in routes {
            var o: JSONObject = ["to": .string(coordinators[r.to].name)]
            if let by = r.by { o.append("by", .string(by.rawValue)) }
            if let w = r.with { o.append("with", .object(w)) }
            rs.append(r.name, .object(o))
        }
        var ls = JSONObject()
        for l in links {
            ls.append(l.pattern, .array(l.entries.map { e in
                var o: JSONObject = ["to": .string(coordinators[e.coordinator].name)]
                if !e.with.isEmpty { o.append("with", .object(e.with)) }
                if let by = e.by { o.append("by", .string(by.rawValue)) }
                return .object(o)
            }))
        }
        var ps = JSONObject()
        for p in preconditions { ps.append(p.name, describe(p)) }
        var out: JSONObject = [
            "modules": .array(modules.map { .string($0.name) }),
            "root": .object(rootObj),
            "coordinators": .object(cs),
            "routes": .object(rs),
            "links": .object(ls),
            "preconditions": .object(ps),
        ]
        if !guards.isEmpty {
            // A coordinator's `preconditions` above start with the guards that guard it.
            out.append("guards", .array(guards.map { g in
                ["precondition": .string(preconditions[g.precondition].name), "except": names(g.exempt.sorted())]
            }))
        }
        return .object(out)
    }

    /// One coordinator as `graph.describe` shows it.
    func describe(_ c: Coordinator) -> JSONValue {
        func names(_ ids: [Int]) -> JSONValue { .array(ids.map { .string(coordinators[$0].name) }) }
        var o = JSONObject()
        o.append("module", .string(c.module))
        if let d = c.description { o.append("description", .string(d)) }
        o.append("kind", .string(c.isFlow ? "flow" : c.tabs.isEmpty ? "screen" : "tabs"))
        if !c.tabs.isEmpty { o.append("tabs", names(c.tabs)) }
        if c.tabBack != .none { o.append("back", .string(c.tabBack.rawValue)) }
        if !c.leave.isEmpty { o.append("leave", .array(c.leave.map { .string(preconditions[$0].name) })) }
        if let s = c.setup { o.append("setup", s.source) }
        o.append("opens", names(c.opens))
        o.append("presentations", .array((c.presentations.map { p in Presentation.allCases.filter { p.contains($0) } } ?? Presentation.allCases).map { .string($0.rawValue) }))
        o.append("preconditions", .array(c.preconditions.map { .string(preconditions[$0].name) }))
        o.append("access", .array(c.access.map(JSONValue.string)))
        if !c.mediation.isEmpty {
            o.append("mediation", .object(JSONObject(uniqueMembers: c.mediation.map { ($0.field, .string("$source." + $0.sourcePath.joined(separator: "."))) })))
        }
        if !c.identity.isEmpty { o.append("identity", .array(c.identity.map(JSONValue.string))) }
        if let f = c.flow {
            var fo = JSONObject()
            fo.append("start", .string(coordinators[f.start].name))
            fo.append("steps", names(f.steps))
            if let r = f.result { fo.append("result", r.source) }
            if let t = f.then { fo.append("then", describe(t)) }
            o.append("flow", .object(fo))
        }
        if !c.stepOf.isEmpty { o.append("stepOf", names(c.stepOf)) }
        return .object(o)
    }

    /// One precondition as `graph.describe` shows it.
    func describe(_ p: Precondition) -> JSONValue {
        var o = JSONObject()
        switch p.kind {
        case .check(let fact, let test):
            var c: JSONObject = ["fact": .string(fact)]
            switch test {
            case .equals(let v): c.append("equals", v)
            case .notEquals(let v): c.append("notEquals", v)
            case .exists(let b): c.append("exists", .bool(b))
            }
            o.append("check", .object(c))
        case .command(let argv, let t):
            o.append("command", .array(argv.map(JSONValue.string)))
            o.append("timeoutMs", .int(Int(t)))
        case .provider(let t):
            o.append("provider", true)
            o.append("timeoutMs", .int(Int(t)))
        }
        switch p.recover {
        case .flow(let f)?:
            var r: JSONObject = ["flow": .string(coordinators[f].name)]
            if !p.recoverFacts.isEmpty { r.append("facts", .object(p.recoverFacts)) }
            o.append("recover", .object(r))
        case .command(let argv, let t)?: o.append("recover", ["command": .array(argv.map(JSONValue.string)), "timeoutMs": .int(Int(t))])
        case .provider(let n, let t)?: o.append("recover", ["provider": .string(n), "timeoutMs": .int(Int(t))])
        case nil: break
        }
        if let r = p.redirect { o.append("redirect", describe(r)) }
        return .object(o)
    }

    /// A flow's `then` or a precondition's `redirect` as the graph writes it: the target's name
    /// alone, or `{to, by?, with?}` when it gives a style or params.
    func describe(_ spec: NavigationSpec) -> JSONValue {
        guard spec.by != nil || spec.with != nil else { return .string(coordinators[spec.to].name) }
        return object(spec)
    }

    /// `spec` as `{to, by?, with?}`, its target by name: how a flow node shows and keeps the `then`
    /// `navigate` gave it (`tree`, notifications, saved state).
    public func object(_ spec: NavigationSpec) -> JSONValue {
        var o: JSONObject = ["to": .string(coordinators[spec.to].name)]
        if let by = spec.by { o.append("by", .string(by.rawValue)) }
        if let with = spec.with { o.append("with", .object(with)) }
        return .object(o)
    }

    /// The graph in Graphviz DOT: modules as clusters, `opens` as solid edges, flow steps inside
    /// their flow's box, the root's tabs from a `root` node, preconditions and roles as labels.
    public func dot() -> String {
        func q(_ s: String) -> String {
            "\"" + s.replacingAll("\\", "\\\\").replacingAll("\"", "\\\"").replacingAll("\n", "\\n") + "\""
        }
        var out = "digraph navd {\n"
        out += "  graph [rankdir=LR, fontname=\"Helvetica\", fontsize=12, compound=true, nodesep=0.3, ranksep=0.6];\n"
        out += "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", fontsize=11];\n"
        out += "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n"
        out += "  root [shape=circle, label=\"root\", fillcolor=\"#333333\", fontcolor=white, width=0.5];\n"
        func label(_ c: Coordinator) -> String {
            var l = c.localName
            if c.setup?.required.isEmpty == false { l += "(" + c.setup!.required.joined(separator: ", ") + ")" }
            if !c.preconditions.isEmpty { l += "\n⚑ " + c.preconditions.map { preconditions[$0].localName }.joined(separator: ", ") }
            if !c.access.isEmpty { l += "\nroles: " + c.access.joined(separator: ", ") }
            return l
        }
        for m in modules {
            out += "  subgraph \(q("cluster_" + m.name)) {\n"
            out += "    label=\(q("module " + m.name)); style=\"rounded\"; color=\"#999999\";\n"
            for c in coordinators where c.module == m.name && c.stepOf.isEmpty {
                if let f = c.flow {
                    out += "    subgraph \(q("cluster_flow_" + c.name)) {\n"
                    out += "      label=\(q("flow " + label(c).replacingAll("\n", " "))); style=\"rounded,filled\"; fillcolor=\"#eef4ff\"; color=\"#4a7bd0\";\n"
                    out += "      \(q(c.name)) [label=\(q(label(c) + "\n(flow)")), shape=box, fillcolor=\"#d6e4ff\"];\n"
                    for s in f.steps {
                        let sc = coordinators[s]
                        out += "      \(q(sc.name)) [label=\(q(label(sc)))\(s == f.start ? ", penwidth=2" : "")];\n"
                    }
                    out += "    }\n"
                } else {
                    let fill = c.access.isEmpty ? "white" : "#fff1d6"
                    out += "    \(q(c.name)) [label=\(q(label(c))), fillcolor=\(q(fill))];\n"
                }
            }
            out += "  }\n"
        }
        switch root {
        case .stack(let i): out += "  root -> \(q(coordinators[i].name)) [label=\"stack\", style=bold];\n"
        case .tabs(let t):
            for (n, i) in t.enumerated() { out += "  root -> \(q(coordinators[i].name)) [label=\(q("tab \(n)")), style=bold];\n" }
        }
        for c in coordinators {
            for o in c.opens { out += "  \(q(c.name)) -> \(q(coordinators[o].name));\n" }
            if let f = c.flow {
                out += "  \(q(c.name)) -> \(q(coordinators[f.start].name)) [style=dotted, label=\"start\"];\n"
                // A step that declares no opens goes on to the next one.
                for (a, b) in zip(f.steps, f.steps.dropFirst()) where coordinators[a].opens.isEmpty {
                    out += "  \(q(coordinators[a].name)) -> \(q(coordinators[b].name)) [style=dotted, label=\"next\"];\n"
                }
                if let then = f.then {
                    out += "  \(q(c.name)) -> \(q(coordinators[then.to].name)) [style=dashed, color=\"#7d3c98\", label=\"then\"];\n"
                }
            }
        }
        for p in preconditions {
            if case .flow(let f)? = p.recover {
                for c in coordinators where c.preconditions.contains(p.index) {
                    out += "  \(q(c.name)) -> \(q(coordinators[f].name)) [style=dashed, color=\"#c0392b\", label=\(q("recover " + p.localName))];\n"
                }
            }
            if let r = p.redirect {
                for c in coordinators where c.preconditions.contains(p.index) {
                    out += "  \(q(c.name)) -> \(q(coordinators[r.to].name)) [style=dashed, color=\"#d35400\", label=\(q("redirect " + p.localName))];\n"
                }
            }
        }
        // Routes and deep links: a node each, in a cluster outside the modules, with a dashed edge to
        // the screen they show (a link's label names the stack it builds).
        func cluster(_ id: String, _ label: String, color: String, fill: String, shape: String, _ items: [(node: String, label: String, to: Int, edge: String)]) {
            guard !items.isEmpty else { return }
            out += "  subgraph \(id) {\n    label=\(q(label)); style=\"rounded,dashed\"; color=\(q(color));\n"
            for i in items { out += "    \(q(i.node)) [label=\(q(i.label)), shape=\(shape), fillcolor=\(q(fill)), color=\(q(color))];\n" }
            out += "  }\n"
            for i in items { out += "  \(q(i.node)) -> \(q(coordinators[i.to].name)) [style=dashed, color=\(q(color)), label=\(q(i.edge))];\n" }
        }
        cluster("cluster_routes", "routes", color: "#2f6fbf", fill: "#e3efff", shape: "cds",
                routes.map { ("route:" + $0.name, $0.name, $0.to, ($0.by ?? coordinators[$0.to].unnamedPresentation).rawValue) })
        cluster("cluster_links", "deep links", color: "#2e8b57", fill: "#e6f5ec", shape: "note", links.compactMap { l in
            l.entries.last.map { ("link:" + l.pattern, l.pattern, $0.coordinator, l.entries.map { coordinators[$0.coordinator].localName }.joined(separator: " › ")) }
        })
        out += "  legend [shape=plaintext, fillcolor=none, label=\"→ opens    ⋯ start of a flow, and a step's next    red dashed: recovery flow of a precondition    orange dashed: its redirect\\lpurple dashed: where a flow goes when it completes (then)    blue dashed: a route to its target    green dashed: a deep link to the screen it shows (via its stack)\\l\"];\n"
        out += "}\n"
        return out
    }
}

extension String {
    /// Every occurrence of `a` replaced by `b` (without Foundation).
    public func replacingAll(_ a: String, _ b: String) -> String {
        guard contains(a) else { return self }
        return split(separator: a, omittingEmptySubsequences: false).joined(separator: b)
    }
}
