import Foundation
import JSON
import RPC

/// Coordinators, their flows and ability sets, and the navigations a graph describes (then, redirect).
extension Builder {
    /// `abilities: {browse: [Product, Search]}`: named lists of coordinators that `opens` may use by
    /// name, so many screens share one list. A set lists coordinators only (not other sets), and its
    /// name may not be a coordinator's of the same module.
    mutating func buildAbilities(_ map: [(key: String, keyLocation: SourceLocation, value: Doc)], module: String) {
        for (name, loc, v) in map {
            let q = module + "." + name
            if name.isEmpty || name.utf8.contains(UInt8(ascii: ".")) {
                d.error(loc, "`\(name)` is not a valid ability set name: names are declared unqualified, without dots")
                continue
            }
            if coordinatorIndex[q] != nil {
                d.error(loc, "ability set `\(q)` has the name of a coordinator; `opens: [\(name)]` would be ambiguous, so rename the set")
                abilities[q] = nil
                continue
            }
            var set: [Int] = []
            var listed = Set<Int>()  // a search of the list for each name was quadratic in its length
            for (ref, l) in stringList(v, "ability set `\(q)`") {
                if coordinatorIndex[qualify(ref, in: module)] == nil && abilities[qualify(ref, in: module)] != nil {
                    d.error(l, "ability set `\(q)` lists the ability set `\(ref)`; a set lists coordinators only (list the coordinators, or name both sets in `opens`)")
                    continue
                }
                guard let i = resolveCoordinator(ref, in: module, at: l, role: " (in ability set `\(q)`)") else { continue }
                if !listed.insert(i).inserted { d.error(l, "`\(coordinators[i].name)` is listed twice in ability set `\(q)`") } else { set.append(i) }
            }
            abilities[q] = set
        }
    }

    mutating func buildCoordinator(_ c: CoordinatorDraft, _ doc: Doc, module: String, at loc: SourceLocation) {
        if doc.isNull { return }
        guard doc.mapping != nil else {
            d.error(doc.location, "coordinator `\(c.name)` must be a mapping (its `setup`, `opens`, …), or empty")
            return
        }
        unknownKeys(doc, allowed: Builder.coordinatorKeys, what: "coordinator `\(c.name)`")
        if let s = doc["setup"] {
            c.setup = schema(s, what: "setup")
            if c.setup == nil { invalidSetups.insert(c.index) }
        }
        if let o = doc["opens"] { buildOpens(c, o, module: module) }
        if let p = doc["presentations"] {
            var set = Set<Presentation>()
            for (s, l) in stringList(p, "`presentations`") {
                if let pr = presentation(Doc(value: .scalar(s, plain: true), location: l)) { set.insert(pr) }
            }
            c.presentations = set
        }
        if let p = doc["preconditions"] {
            for (ref, l) in stringList(p, "`preconditions`") {
                if let i = resolvePrecondition(ref, in: module, at: l) { c.preconditions.append(i) }
            }
        }
        if let t = doc["tabs"] { buildTabs(c, t, isFlow: doc["flow"] != nil, module: module) }
        if let b = doc["back"] {
            if doc["tabs"] == nil {
                d.error(b.location, "`back` says what dismiss does at the first screen of a tab, and `\(c.name)` declares no `tabs`")
            } else if let back = tabBack(b) {
                c.tabBack = back
            }
        }
        if let p = doc["leave"] {
            for (ref, l) in stringList(p, "`leave`") {
                if let i = resolvePrecondition(ref, in: module, at: l) { c.leave.append(i) }
            }
        }
        if let a = doc["access"] { c.access = stringList(a, "`access`").map(\.0) }
        if let m = doc["mediation"], let map = expectMap(m, "`mediation`") { buildMediation(c, map) }
        if let id = doc["identity"] { buildIdentity(c, id) }
        if let t = doc["then"], doc["flow"] == nil {
            d.error(t.location, "`then` says where navigation continues when a flow completes, and `\(c.name)` is not a flow; declare `flow:` or remove `then`")
        }
        if let t = doc["description"] ?? doc["title"] { c.description = t.text }
    }

    /// Counts `n` more edges of the graph (an `opens` entry, a set's coordinators, a guard checked
    /// against every coordinator); false once they would pass ``GraphLimits/maxEdges``, said once at
    /// `location` (`what` passed it), after which nothing more is expanded.
    mutating func countEdges(_ n: Int, at location: SourceLocation, what: @autoclosure () -> String) -> Bool {
        guard !edgesRefused else { return false }
        if edges + n <= limits.maxEdges {
            edges += n
            return true
        }
        edgesRefused = true
        d.error(location, "\(what()) brings the graph past \(limits.maxEdges) edges (the --max-graph-edges limit): every coordinator's `opens`, an ability set counting each of its coordinators, and every guard, counting once for each coordinator, come to more. Open smaller sets (a set in the `opens` of every screen makes the graph as large as screens times the set), or raise the limit")
        return false
    }

    /// `opens`: coordinators and ability sets (a set brings its coordinators; one already opened is
    /// not repeated).
    private mutating func buildOpens(_ c: CoordinatorDraft, _ o: Doc, module: String) {
        var listed = Set<Int>()
        let name = c.name
        for (ref, l) in stringList(o, "`opens`") {
            // An ability set brings its coordinators (one already opened is not repeated).
            if coordinatorIndex[qualify(ref, in: module)] == nil, let set = abilities[qualify(ref, in: module)] {
                guard countEdges(set.count, at: l, what: "`opens: [\(ref)]` of `\(name)` (a set of \(set.count))") else { continue }
                for i in set where c.opensSet.insert(i).inserted {
                    c.opens.append(i)
                    c.opensLocations.append(l)
                }
                continue
            }
            guard let i = resolveCoordinator(ref, in: module, at: l) else { incompleteOpens.insert(c.index); continue }
            guard countEdges(1, at: l, what: "the `opens` of `\(name)`") else { continue }
            if !listed.insert(i).inserted {
                d.error(l, "`\(coordinators[i].name)` is listed twice in the `opens` of `\(c.name)`")
            } else if c.opensSet.insert(i).inserted {
                c.opens.append(i)
                c.opensLocations.append(l)
            }
        }
    }

    private mutating func buildTabs(_ c: CoordinatorDraft, _ t: Doc, isFlow: Bool, module: String) {
        if isFlow {
            d.error(t.location, "coordinator `\(c.name)` is a flow and a tab container; give it `flow` or `tabs`, not both")
        }
        var tabs: [Int] = []
        var listed = Set<Int>()
        var locations: [SourceLocation] = []
        for (ref, l) in stringList(t, "`tabs`") {
            guard let i = resolveCoordinator(ref, in: module, at: l, role: " (a tab of `\(c.name)`)") else { continue }
            if !listed.insert(i).inserted {
                d.error(l, "`\(coordinators[i].name)` is listed twice in the `tabs` of `\(c.name)`")
            } else {
                tabs.append(i)
                locations.append(l)
            }
        }
        if tabs.isEmpty { d.error(t.location, "the `tabs` of `\(c.name)` list no coordinator; give at least one, as [General, Privacy]") }
        c.tabs = tabs
        tabContainerLocations[c.index] = locations
    }

    /// `mediation`: fields of the target's params filled from the source's (`$source.FIELD`).
    private mutating func buildMediation(_ c: CoordinatorDraft, _ map: [(key: String, keyLocation: SourceLocation, value: Doc)]) {
        for (field, l, v) in map {
            guard let expr = v.text, expr.hasPrefix("$source") else {
                d.error(v.location, "mediation of `\(field)` must read the source's params, as \"$source.FIELD\", not `\(v.description)`")
                continue
            }
            let path = expr.split(separator: ".").dropFirst().map(String.init)
            if expr != "$source" && !expr.hasPrefix("$source.") || path.isEmpty {
                d.error(v.location, "mediation of `\(field)` must name a field of the source's params, as \"$source.FIELD\", not `\(expr)`")
                continue
            }
            if let setup = c.setup, setup.types?.contains(.object) ?? true, !setup.properties.isEmpty, !setup.declares(field),
               case .forbidden = setup.additional {
                d.error(l, "mediation fills `\(field)`, which the setup of `\(c.name)` does not declare")
            }
            c.mediation.append((field, path))
            mediationLocations[c.index, default: [:]][field] = v.location
        }
    }

    /// `identity`: the setup fields that tell two screens of the coordinator apart.
    private mutating func buildIdentity(_ c: CoordinatorDraft, _ id: Doc) {
        var listed = Set(c.identity)  // a search of the list for each field was quadratic in its length
        for (field, l) in stringList(id, "`identity`") {
            if listed.contains(field) {
                d.error(l, "`\(field)` is listed twice in the `identity` of `\(c.name)`")
            } else if invalidSetups.contains(c.index) {
                continue  // its setup's errors were reported
            } else if c.setup.map({ !$0.declares(field) }) ?? true {
                let declared = c.setup?.properties.map(\.name) ?? []
                d.error(l, "identity field `\(field)` is not declared by the setup of `\(c.name)`; `identity` names fields of its setup's `properties`"
                    + (declared.isEmpty ? ", and it declares none" : " (\(briefList(declared, none: "")))"))
            } else {
                c.identity.append(field)
                listed.insert(field)
            }
        }
    }

    /// `flow:`, and its `then` given beside it (`then:` a key of the coordinator, as the flow's own).
    mutating func buildFlow(_ c: CoordinatorDraft, _ doc: Doc, then outerThen: Doc? = nil, module: String) {
        guard doc.mapping != nil else {
            d.error(doc.location, "`flow` of `\(c.name)` must be a mapping with `steps` (or `start`) and optionally `result` and `then`")
            return
        }
        unknownKeys(doc, allowed: Builder.flowKeys, what: "the flow of `\(c.name)`")
        var steps: [Int] = []
        var stepsOK = true
        if let s = doc["steps"] {
            for (ref, l) in stringList(s, "`steps`") {
                if ref.utf8.contains(UInt8(ascii: ".")) && !ref.hasPrefix(module + ".") {
                    d.error(l, "flow step `\(ref)` is not a coordinator of module `\(module)`: a flow's steps must be declared in the flow's own module")
                    stepsOK = false
                    continue
                }
                guard let i = resolveCoordinator(ref, in: module, at: l, role: " (a step of flow `\(c.name)`)") else { stepsOK = false; continue }
                if i == c.index {
                    d.error(l, "flow `\(c.name)` cannot be a step of itself")
                    stepsOK = false
                    continue
                }
                if flowDeclared.contains(i) {
                    d.error(l, "flow step `\(coordinators[i].name)` is a flow; steps must be screens")
                }
                steps.append(i)
            }
        }
        var start: Int?
        if let s = doc["start"] {
            if let ref = s.text, !s.isNull {
                if ref.utf8.contains(UInt8(ascii: ".")) && !ref.hasPrefix(module + ".") {
                    d.error(s.location, "flow start `\(ref)` is not a coordinator of module `\(module)`: a flow's steps must be declared in the flow's own module")
                } else {
                    start = resolveCoordinator(ref, in: module, at: s.location, role: " (the start of flow `\(c.name)`)")
                }
            } else {
                d.error(s.location, "`start` must name the flow's first step")
            }
        } else if let first = steps.first, stepsOK {
            // No `start`: the flow begins with the first of its steps (their order is its path).
            start = first
        } else if doc["steps"] == nil {
            d.error(doc.location, "flow `\(c.name)` has neither `start` nor `steps`; add `steps:` listing its screens in order (the first is where it starts), or `start:` naming its first step")
        }
        if let st = start {
            if doc["steps"] == nil { steps = [st] } else if stepsOK && !steps.contains(st) {
                d.error(doc["start"]!.location, "flow start `\(coordinators[st].name)` is not among the flow's steps; add it to `steps`")
            }
        }
        var result: Schema?
        if let r = doc["result"] { result = schema(r, what: "flow result") }
        var then: NavigationSpec?
        if let inner = doc["then"], let outer = outerThen {
            d.error(outer.location, "flow `\(c.name)` declares `then` twice, in its `flow` (line \(inner.location.line)) and beside it; keep one")
        } else if let t = doc["then"] ?? outerThen {
            then = navigationSpec(t, what: "the `then` of flow `\(c.name)`", module: module, flow: c.index)
        }
        if let st = start {
            c.flow = Flow(start: st, steps: steps, result: result, then: then)
            for s in steps { coordinators[s].stepOf.append(c.index) }
        }
    }

    /// `Target` or `{to, by?, with?}`: a navigation the graph describes (a flow's `then`, a
    /// precondition's `redirect`); `with` values may be `"$result"` or `"$result.FIELD"`.
    mutating func navigationSpec(_ doc: Doc, what: String, module: String, redirect: Bool = false, flow: Int? = nil) -> NavigationSpec? {
        var toDoc = doc
        var by: Presentation?
        var with: JSONObject?
        if doc.mapping != nil {
            unknownKeys(doc, allowed: ["to", "by", "with"], what: what)
            guard let t = doc["to"] else {
                d.error(doc.location, "\(what) needs `to:`, the coordinator navigation goes to")
                return nil
            }
            toDoc = t
            if let b = doc["by"] { by = presentation(b) }
            if let w = doc["with"] {
                guard case .object(let o) = w.json else {
                    d.error(w.location, "`with` of \(what) must be a mapping of setup fields")
                    return nil
                }
                with = o
                for (_, _, v) in w.mapping ?? [] {
                    if let s = v.text, isResultReference(s) == false {
                        d.error(v.location, "`\(s)` is not a result reference; write \"$result\" (the whole result) or \"$result.FIELD\"")
                    }
                }
            }
        }
        guard let ref = toDoc.text, !toDoc.isNull else {
            d.error(toDoc.location, "\(what) must name a coordinator, as `OrderDetail` or {to: OrderDetail, with: {id: \"$result.id\"}}")
            return nil
        }
        guard let i = resolveCoordinator(ref, in: module, at: toDoc.location, role: " (\(what))") else { return nil }
        if let w = doc.mapping != nil ? doc["with"] : nil {
            // Constants only: a `$result` reference is read when the flow completes.
            let fields = (w.mapping ?? []).filter { !($0.2.text?.hasPrefix("$result") ?? false) }.map { (name: $0.0, value: $0.2.json, location: $0.2.location) }
            if !fields.isEmpty { specConstants.append((what, i, fields)) }
        }
        if let by, !coordinators[i].allows(by) {
            d.error(doc["by"]?.location ?? doc.location, "\(what) shows `\(coordinators[i].name)` by \(by.rawValue), which its `presentations` do not allow")
        } else {
            noteSelect(by, of: i, what, at: doc["by"]?.location ?? toDoc.location, redirect: redirect)
        }
        specTargets.append((what, i, Set(with.map { Array($0.keys) } ?? []), toDoc.location, flow))
        if let flow { noteResultReferences(doc.mapping != nil ? doc["with"] : nil, of: flow, what) }
        return NavigationSpec(to: i, by: by, with: with)
    }

    /// Notes the `"$result.FIELD…"` values of `mapping` (a `then`'s `with`, a recovery's `facts`),
    /// read from the result of `flow`, for ``checkResultReferences()``.
    mutating func noteResultReferences(_ mapping: Doc?, of flow: Int, _ what: String) {
        for (_, _, v) in mapping?.mapping ?? [] {
            if let s = v.text, s.hasPrefix("$result."), isResultReference(s) == true { resultReferences.append((what, flow, s, v.location)) }
        }
    }
}
