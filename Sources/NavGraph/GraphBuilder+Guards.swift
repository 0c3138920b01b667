/// Graph-level guards: `guards: [{precondition: signedIn, except: [account, shop.Home]}]` in a module
/// (go_router's top-level `redirect`, Vue Router's `beforeEach`).
extension Builder {
    /// The guards a module declares: each a precondition (a name, or `{precondition, except}`) with
    /// the coordinators it exempts.
    mutating func buildGuards(_ doc: Doc, module: String, preconditions: [Precondition]) -> [GraphGuard] {
        guard let items = doc.sequence else {
            d.error(doc.location, "`guards` must be a list of preconditions, each a name or {precondition: NAME, except: [coordinators or modules]}")
            return []
        }
        var out: [GraphGuard] = []
        for item in items {
            var name: Doc? = item
            var except: Doc?
            if item.mapping != nil {
                unknownKeys(item, allowed: ["precondition", "except"], what: "a guard")
                name = item["precondition"]
                except = item["except"]
            }
            guard let n = name, let ref = n.text, !n.isNull else {
                d.error(item.location, "a guard names its precondition: `- signedIn` or `- {precondition: signedIn, except: [account]}`")
                continue
            }
            guard let p = resolvePrecondition(ref, in: module, at: n.location) else { continue }
            // A guard is checked against every coordinator, and its `except` may name them all.
            let all = coordinators.count
            guard countEdges(all, at: n.location, what: "the guard `\(ref)` (checked against each of \(all) coordinators)") else { continue }
            var exempt = Set<Int>()
            for (ref, l) in except.map({ stringList($0, "`except`") }) ?? [] {
                if moduleNames[ref] != nil {
                    for c in coordinators where c.module == ref { exempt.insert(c.index) }
                } else if let i = resolveCoordinator(ref, in: module, at: l, role: " (in the `except` of a guard; a module name exempts its coordinators)") {
                    exempt.insert(i)
                }
            }
            // What the precondition itself sends the user to is never stopped by it.
            if case .flow(let f) = preconditions[p].recover {
                exempt.insert(f)
                for s in coordinators[f].flow?.steps ?? [] { exempt.insert(s) }
            }
            if let r = preconditions[p].redirect { exempt.insert(r.to) }
            out.append(GraphGuard(precondition: p, exempt: exempt, location: n.location))
        }
        return out
    }

    /// Puts the guards first in the preconditions of every coordinator they guard, in declaration
    /// order (one the coordinator also lists runs once, as a guard).
    mutating func applyGuards(_ guards: [GraphGuard]) {
        guard !guards.isEmpty else { return }
        for c in coordinators {
            let first = guards.filter { !$0.exempt.contains(c.index) }.map(\.precondition)
            guard !first.isEmpty else { continue }
            var seen = Set<Int>()
            c.preconditions = (first + c.preconditions).filter { seen.insert($0).inserted }
        }
    }
}
