import Foundation
import JSON
import RPC

/// Checks made once every module is read: constants, links against opens, mediation, recovery
/// cycles, unreached coordinators.
extension Builder {
    // MARK: cross checks

    /// A constant a route or link gives a setup field must be one the field's schema accepts (or no
    /// navigation by it could ever pass), and a field the setup forbids cannot be given at all.
    /// Values written `":param"` come from the URL and are checked when it is opened.
    mutating func checkConstants(routes: [Route], links: [Link]) {
        func problem(_ target: CoordinatorDraft, _ field: String, _ value: JSONValue) -> String? {
            guard let setup = target.setup else { return nil }
            if let property = setup.properties.first(where: { $0.name == field })?.schema {
                return property.validate(value).map { "\($0.message)" }
            }
            switch setup.additional {
            case .allowed: return nil
            case .forbidden:
                let declared = setup.properties.map(\.name)
                return "the setup of `\(target.name)` declares no field `\(field)` and allows no others (it declares \(briefList(declared, none: "none")))"
            case .schema(let extra): return extra.validate(value).map { "\($0.message)" }
            }
        }
        for r in routes {
            let target = coordinators[r.to]
            for (field, v) in r.with ?? [:] {
                if let why = problem(target, field, v) {
                    d.error(constantLocations[r.location]?[field] ?? r.location, "route `\(r.name)` gives `\(target.name)` the constant \(field): \(JSONWriter.string(v)), which its setup never accepts: \(why)")
                }
            }
        }
        for (what, t, fields) in specConstants {
            let target = coordinators[t]
            for f in fields {
                if let why = problem(target, f.name, f.value) {
                    d.error(f.location, "\(what) gives `\(target.name)` the constant \(f.name): \(JSONWriter.string(f.value)), which its setup never accepts: \(why)")
                }
            }
        }
        for l in links {
            for (n, e) in l.entries.enumerated() {
                let target = coordinators[e.coordinator]
                let entryLocation = linkEntryLocations[l.location]?[n].entry
                for (field, v) in e.with {
                    var value = v
                    if case .string(let text) = v {
                        if text.hasPrefix(":") { continue }
                        value = target.setup?.coerce(text, forProperty: field) ?? v  // as `open` reads it
                    }
                    if let why = problem(target, field, value) {
                        d.error(entryLocation.flatMap { constantLocations[$0]?[field] } ?? l.location, "link `\(l.pattern)` gives `\(target.name)` the constant \(field): \(JSONWriter.string(v)), which its setup never accepts: \(why)")
                    }
                }
            }
        }
    }

    /// `by: select` shows the tab whose stack starts with the target: a route or `then` that selects
    /// a coordinator no tab starts with (of the root or of a tab container) always fails; a redirect
    /// that does fails every navigation it redirects (in a link its target is pushed instead).
    /// Written `by: select`, or without `by` to a target that allows only select. Warnings.
    /// Notes a route's, `then`'s or redirect's navigation to coordinator `i` for
    /// ``checkSelectTargets(root:)`` when it selects: `by: select`, or no `by` to a target that
    /// allows only select.
    mutating func noteSelect(_ by: Presentation?, of i: Int, _ what: String, at location: SourceLocation, redirect: Bool = false) {
        guard (by ?? Presentation.unnamed(allows: coordinators[i].allows)) == .select else { return }
        selectTargets.append((what, i, location, redirect))
    }

    mutating func checkSelectTargets(root: Root?) {
        var tabs = Set(coordinators.flatMap(\.tabs))
        if case .tabs(let t)? = root { tabs.formUnion(t) }
        // A coordinator that may only be selected and that no tab starts with: no navigation shows it.
        for c in coordinators where c.presentations == [.select] && !tabs.contains(c.index) {
            d.warning(c.location, "`\(c.name)` may only be selected (presentations: [select]), but no tab starts with it: no navigation can show it (only a deep link whose first screen it is); add push or present to its presentations, or make it a tab")
        }
        let all = tabs.sorted().prefix(21).map { coordinators[$0].name }, tabCount = tabs.count
        for s in selectTargets where !tabs.contains(s.target) {
            let why = "\(s.what) selects `\(coordinators[s.target].name)`, but no tab starts with it (select shows the tab whose stack starts with its target; the tabs start with \(briefList(all, none: "nothing: the graph has no tabs", total: tabCount)))"
            // Warnings, not errors: a graph that declares such a navigation still loads (asking for
            // it answers notAllowed, which a test may mean to see).
            if s.redirect {
                d.warning(s.location, why + ": a navigation it redirects fails (a link it redirects pushes it); show it by push or present, or name a tab")
            } else {
                d.warning(s.location, why + ": navigating by it always fails (notAllowed); show it by push or present, or name a tab")
            }
        }
    }

    /// Each screen of a link after the first must be one the screen below it may open: the screen
    /// itself, or for a flow its first step (which a link builds with it), by its `opens` or as the
    /// next step of its flow; or one of the tabs of the tab container below it, which the link
    /// selects (by `select`, written or not).
    mutating func checkLinkOpens(_ links: [Link], _ coordinators: [Coordinator]) {
        for l in links {
            for (n, (below, above)) in zip(l.entries, l.entries.dropFirst()).enumerated() {
                let at = linkEntryLocations[l.location]?[n + 1]
                let container = coordinators[below.coordinator]
                if container.tabs.contains(above.coordinator) {
                    if let by = above.by, by != .select {
                        d.error(at?.entry ?? l.location, "link `\(l.pattern)` shows `\(coordinators[above.coordinator].name)`, a tab of `\(container.name)` just below it, by \(by.rawValue); a link selects a tab of its container: give the entry no `by`, or by: select")
                    }
                    continue
                }
                if above.by == .select {
                    let what = container.tabs.isEmpty ? "is not a tab container" : "is a tab container whose tabs are \(briefList(container.tabs.prefix(21).map { coordinators[$0].name }, none: "", total: container.tabs.count))"
                    d.error(at?.entry ?? l.location, "link `\(l.pattern)` selects `\(coordinators[above.coordinator].name)`, but `\(container.name)` just below it \(what); a link selects only a tab of the container just below, else pushes or presents")
                    continue
                }
                if coordinators.stackStepAllowed(from: below.coordinator, to: above.coordinator) { continue }
                let source = coordinators[below.coordinator]
                let opener = source.flow.map { coordinators[$0.start] } ?? source
                if incompleteOpens.contains(opener.index) { continue }
                let opens = opener.opens.prefix(21).map { coordinators[$0].name }
                d.error(linkEntryLocations[l.location]?[n + 1].name ?? l.location, "link `\(l.pattern)` puts `\(coordinators[above.coordinator].name)` above `\(source.name)`, which cannot open it: the opens of `\(opener.name)` are \(briefList(opens, none: "empty", total: opener.opens.count))")
            }
        }
    }

    /// Every field a link screen's setup requires must be one the link can give: from the pattern or
    /// a constant (`with`), or mediated from the screen below. A screen before the last that lacks
    /// one can never be opened by the link (an error, at the entry); the last screen may still get
    /// it from a query value the pattern does not declare (`?id=…`): a warning.
    mutating func checkLinkRequiredFields(_ links: [Link]) {
        for l in links {
            var optional: [String: String] = [:]
            for s in l.segments { if case .optional(let name) = s { optional[name] = "the optional segment `:\(name)?`" } }
            for q in l.query { optional[q.parameter] = "the query parameter `?\(q.key)=:\(q.parameter)`" }
            for (n, e) in l.entries.enumerated() {
                let target = coordinators[e.coordinator]
                guard let setup = target.setup else { continue }
                let mediated = n > 0 ? Set(target.mediation.map(\.field)) : []
                // A required field filled from a parameter a URL may leave out (`:name?`, a query
                // parameter): the URL without it matches the link and always fails.
                for field in setup.required where !mediated.contains(field) {
                    guard case .string(let text)? = e.with[field], text.hasPrefix(":"),
                          let how = optional[String(text.dropFirst())] else { continue }
                    d.warning(linkEntryLocations[l.location].flatMap { constantLocations[$0[n].entry]?[field] } ?? l.location,
                              "link `\(l.pattern)` fills `\(field)`, which the setup of `\(target.name)` requires, from \(how), which a URL may leave out: such a URL matches the link and always fails (invalidSetup); make the parameter required, or declare a second link without it")
                }
                let missing = setup.required.filter { e.with[$0] == nil && !mediated.contains($0) }
                guard !missing.isEmpty else { continue }
                let at = linkEntryLocations[l.location]?[n].entry ?? l.location
                let fields = missing.map { "`\($0)`" }.joined(separator: ", ")
                let fix = "fill \(missing.count == 1 ? "it" : "them") in the entry's `with` from the pattern (\(missing.map { "\($0): \":\($0)\"" }.joined(separator: ", "))) or with a constant"
                if n < l.entries.count - 1 {
                    d.error(at, "link `\(l.pattern)` gives `\(target.name)` no \(fields), which its setup requires, so the link can never open; \(fix)")
                } else {
                    d.warning(at, "link `\(l.pattern)` gives `\(target.name)` no \(fields), which its setup requires: only a query value the pattern does not declare (?\(missing[0])=…) can; \(fix)")
                }
            }
        }
    }

    /// A redirect or a flow's `then` is a navigation nobody adds `with` to: a field its target's
    /// setup requires that it does not give (nor mediation fills from the source) fails it every
    /// time (`invalidSetup`). A warning: the graph loads, and a `navigate {then}` may give another.
    mutating func checkSpecRequiredFields() {
        for s in specTargets {
            let target = coordinators[s.target]
            guard let setup = target.setup else { continue }
            let mediated = Set(target.mediation.map(\.field))
            let missing = setup.required.filter { !s.given.contains($0) && !mediated.contains($0) }
            guard !missing.isEmpty else { continue }
            let fields = missing.map { "`\($0)`" }.joined(separator: ", ")
            let result = s.flow.flatMap { coordinators[$0].flow?.result }
            let fromResult = missing.filter { result?.declares($0) ?? false }
            let fix = fromResult.count == missing.count
                ? "take \(missing.count == 1 ? "it" : "them") from the flow's result: with: {\(missing.map { "\($0): \"$result.\($0)\"" }.joined(separator: ", "))}"
                : "give \(missing.count == 1 ? "it" : "them") in its `with` (a constant\(s.flow != nil ? ", or \"$result.FIELD\" from the flow's result" : ""))"
            let when = s.flow != nil ? "continuing after the flow always fails (invalidSetup)" : "every navigation it redirects fails (invalidSetup)"
            d.warning(s.location, "\(s.what) goes to `\(target.name)` without \(fields), which its setup requires: \(when); \(fix)")
        }
    }

    /// A command's `{with.FIELD}` reads the params of the screen its precondition is about: when
    /// every coordinator the precondition guards (or protects, as a leave guard; a flow whose start
    /// step it guards too) declares a setup and none declares FIELD, it is empty unless a navigation
    /// gives that undeclared field, most likely a misspelt name: a warning, with the likely one.
    /// A graph-level guard is about every coordinator: not checked.
    mutating func checkPlaceholderFields(_ preconditions: [Precondition], graphGuards: Set<Int>) {
        var about: [Int: [Int]] = [:]  // precondition → the coordinators it is about, built once when a command reads a field
        for p in preconditions where !graphGuards.contains(p.index) && p.index < preconditionLocations.count {
            var fields: [String] = []
            if case .command(let argv, _) = p.kind { fields += argv.flatMap(ArgvTemplate.fields(in:)) }
            if case .command(let argv, _)? = p.recover { fields += argv.flatMap(ArgvTemplate.fields(in:)) }
            var seen: Set<String> = []
            fields = fields.filter { !$0.isEmpty && seen.insert($0).inserted }
            guard !fields.isEmpty else { continue }
            if about.isEmpty { about = coordinatorsByPrecondition() }
            let subjects = about[p.index] ?? []
            let setups = subjects.map { coordinators[$0].setup }
            guard !setups.isEmpty, !setups.contains(where: { $0 == nil }) else { continue }
            let declared = Set(setups.flatMap { $0!.properties.map(\.name) })
            for f in fields where !declared.contains(f) {
                // A dotted path reads nested params: declared when some setup holds it.
                if f.contains("."), setups.contains(where: { $0!.declaresPath(f.split(separator: ".", omittingEmptySubsequences: false)) }) { continue }
                let names = subjects.map { coordinators[$0].name }
                let said = hint(for: f, among: declared).map { "; did you mean `{with.\($0)}`?" } ?? ""
                d.warning(preconditionLocations[p.index], "precondition `\(p.name)` passes `{with.\(f)}`, a field none of the coordinators it is about declares (\(briefList(names, none: ""))\(declared.isEmpty ? ", which declare\(names.count == 1 ? "s" : "") no fields" : ": \(names.count == 1 ? "it declares" : "they declare") \(briefList(declared.sorted(), none: ""))")): it is empty unless a navigation gives that undeclared field\(said)")
            }
        }
    }

    /// For each precondition, the coordinators it guards or protects as a leave guard, then the
    /// flows whose start step is one of those (not already among them), each in the graph's
    /// order: one pass over the coordinators.
    private func coordinatorsByPrecondition() -> [Int: [Int]] {
        var flowsStartingAt: [Int: [Int]] = [:]
        for c in coordinators { if let flow = c.flow { flowsStartingAt[flow.start, default: []].append(c.index) } }
        var about: [Int: [Int]] = [:]
        for c in coordinators {
            for p in Set(c.preconditions + c.leave) { about[p, default: []].append(c.index) }
        }
        for (p, guarded) in about {
            let among = Set(guarded)
            let flows = Set(guarded.flatMap { flowsStartingAt[$0] ?? [] }).subtracting(among)
            about[p] = guarded + flows.sorted()
        }
        return about
    }

    /// `"$result.FIELD…"` reads a part of a flow's result: when the flow's `result` schema declares
    /// fields and not FIELD, the part is never there (left out), most likely a misspelt name: a
    /// warning, with the likely one.
    mutating func checkResultReferences() {
        for r in resultReferences {
            guard let result = coordinators[r.flow].flow?.result, !result.properties.isEmpty else { continue }
            let field = String(r.reference.dropFirst("$result.".count).split(separator: ".", maxSplits: 1)[0])
            guard !result.declares(field) else { continue }
            let declared = result.properties.map(\.name)
            let said = hint(for: field, among: declared).map { "; did you mean `$result.\($0)`?" } ?? ""
            d.warning(r.location, "\(r.what) reads `\(r.reference)`, but the result schema of flow `\(coordinators[r.flow].name)` declares no `\(field)` (it declares \(briefList(declared, none: "none"))): the value is left out whenever the result has no such part\(said)")
        }
    }

    /// A mediation reads `$source.FIELD`: every coordinator that may open the target must declare FIELD.
    mutating func checkMediation() {
        var sourcesOf: [Int: [Int]] = [:]  // a target that mediates → the coordinators that open it, in one pass
        for s in coordinators {
            for t in s.opensSet where !coordinators[t].mediation.isEmpty { sourcesOf[t, default: []].append(s.index) }
        }
        for target in coordinators where !target.mediation.isEmpty {
            let sources = (sourcesOf[target.index] ?? []).map { coordinators[$0] }
            for (field, path) in target.mediation {
                let at = mediationLocations[target.index]?[field] ?? target.location
                for s in sources {
                    guard let setup = s.setup else {
                        if invalidSetups.contains(s.index) { continue }
                        d.error(at, "`\(target.name)` fills `\(field)` from `$source.\(path.joined(separator: "."))`, but its source `\(s.name)` has no setup model to read it from; declare `\(path[0])` in the setup of `\(s.name)`")
                        continue
                    }
                    if !setup.declares(path[0]) {
                        let said = hint(for: path[0], among: setup.properties.map(\.name)).map { "; did you mean `$source.\($0)`?" } ?? ""
                        d.error(at, "`\(target.name)` fills `\(field)` from `$source.\(path.joined(separator: "."))`, but the setup of its source `\(s.name)` does not declare `\(path[0])`\(said)")
                    }
                }
            }
        }
    }

    /// A flow F depends on flow G when a precondition guarding F (or one of F's steps) recovers with G.
    /// A cycle means recovering would present the same flow forever: each precondition whose
    /// recovery lies on one is an error. An edge lies on a cycle exactly when its two flows are in
    /// one strongly connected component, so the check is linear in the flows and their edges (a
    /// search from every flow, copying its path, took minutes for a chain of 20,000 recovery flows);
    /// the first ``maxCycleChains`` errors also name a cycle, found by a search inside the component.
    mutating func checkRecoveryCycles(_ preconditions: [Precondition]) {
        var edges = [[(to: Int, precondition: Int)]](repeating: [], count: coordinators.count)
        for c in coordinators where c.flow != nil {
            let guarded = [c.index] + (c.flow?.steps ?? [])
            for g in guarded {
                for p in coordinators[g].preconditions where p < preconditions.count {
                    if case .flow(let f)? = preconditions[p].recover { edges[c.index].append((f, p)) }
                }
            }
        }
        let component = Self.components(edges.map { $0.map(\.to) })
        var reported: Set<Int> = []
        var chains = 0
        for from in edges.indices {
            for e in edges[from] where component[e.to] == component[from] && reported.insert(e.precondition).inserted {
                var chain = ""
                if chains < Self.maxCycleChains {
                    chains += 1
                    let path = Self.path(from: e.to, to: from, in: edges, within: component)
                    chain = " (" + (path + [e.to]).map { coordinators[$0].name }.joined(separator: " → ") + ")"
                }
                d.error(recoverLocations[e.precondition] ?? preconditions[e.precondition].location,
                        "recovery cycle: precondition `\(preconditions[e.precondition].name)` recovers with flow `\(coordinators[e.to].name)`, which that precondition (directly or through other flows) guards\(chain); recover with a flow it does not guard")
            }
        }
    }

    /// Recovery cycles named with their flows; past this many, the errors name only the precondition
    /// (each such name takes a search of its component).
    static let maxCycleChains = 20

    /// Each node's strongly connected component (Tarjan's algorithm, written without recursion: a
    /// chain of thousands of flows must not exhaust the stack); -1 for a node without edges that no
    /// edge reaches.
    static func components(_ successors: [[Int]]) -> [Int] {
        let n = successors.count
        var index = [Int](repeating: -1, count: n), low = [Int](repeating: 0, count: n)
        var component = [Int](repeating: -1, count: n), onStack = [Bool](repeating: false, count: n)
        var stack: [Int] = [], work: [(node: Int, next: Int)] = []
        var counter = 0, components = 0
        func visit(_ v: Int) {
            index[v] = counter
            low[v] = counter
            counter += 1
            stack.append(v)
            onStack[v] = true
            work.append((v, 0))
        }
        for root in 0..<n where index[root] < 0 && !successors[root].isEmpty {
            visit(root)
            while let (v, i) = work.last {
                if i < successors[v].count {
                    work[work.count - 1].next += 1
                    let w = successors[v][i]
                    if index[w] < 0 {
                        visit(w)
                    } else if onStack[w] {
                        low[v] = min(low[v], index[w])
                    }
                    continue
                }
                work.removeLast()
                if let (u, _) = work.last { low[u] = min(low[u], low[v]) }
                if low[v] == index[v] {
                    while let w = stack.popLast() {
                        onStack[w] = false
                        component[w] = components
                        if w == v { break }
                    }
                    components += 1
                }
            }
        }
        return component
    }

    /// A shortest path from `start` to `goal` through the nodes of their component (breadth first),
    /// both included; `[start]` when they are the same node.
    static func path(from start: Int, to goal: Int, in edges: [[(to: Int, precondition: Int)]], within component: [Int]) -> [Int] {
        var parent = [start: start]
        var queue = [start], head = 0
        while head < queue.count, parent[goal] == nil {
            let v = queue[head]
            head += 1
            for e in edges[v] where component[e.to] == component[start] && parent[e.to] == nil {
                parent[e.to] = v
                queue.append(e.to)
            }
        }
        var path = [goal]
        while let last = path.last, last != start, let p = parent[last] { path.append(p) }
        return path.reversed()
    }

    mutating func warnUnreached(root: Root?, routes: [Route], links: [Link], preconditions: [Precondition]) {
        var reached = Set<Int>()
        switch root {
        case .stack(let i)?: reached.insert(i)
        case .tabs(let t)?: reached.formUnion(t)
        case nil: return
        }
        for c in coordinators {
            reached.formUnion(c.opens)
            reached.formUnion(c.tabs)
            if let f = c.flow {
                reached.formUnion(f.steps)
                if let t = f.then { reached.insert(t.to) }
            }
        }
        for r in routes { reached.insert(r.to) }
        for l in links { reached.formUnion(l.entries.map(\.coordinator)) }
        for p in preconditions {
            if case .flow(let f)? = p.recover { reached.insert(f) }
            if let r = p.redirect { reached.insert(r.to) }
        }
        for c in coordinators where !reached.contains(c.index) {
            d.warning(c.location, "coordinator `\(c.name)` cannot be reached: nothing opens it and no root, route or link leads to it")
        }
    }
}
