import JSON
import NavGraph
import NavigationCore

/// Each precondition's outcome as a choice (a check by the facts it reads, a command or provider
/// passing or failing, a recovery flow completed or cancelled), and the samples the walk sends.
extension Explorer {
    // MARK: Preconditions as choices

    struct Resolution {
        var step: Step
        /// What is committed; nil: the navigation failed.
        var plan: Plan?
    }

    /// Every way the preconditions of `plan` can come out, passing first.
    func resolve(_ plan: Plan, in session: Session, step: Step) -> [Resolution] {
        var out: [Resolution] = []
        walk(plan, at: 0, recovered: nil, step: step, chain: [plan.target], session: session, into: &out)
        for r in out { note(r.step.outcomes) }
        return out
    }

    /// `recovered`: the current precondition is evaluated again after a recovery; `.some(true)`
    /// when the recovery set the fact it checks to a passing value, `.some(false)` when to a failing
    /// one, `.some(nil)` when it left the outcome open.
    private func walk(_ plan: Plan, at i: Int, recovered: Bool??, step: Step, chain: [Int], session: Session, into out: inout [Resolution]) {
        guard out.count < Explorer.maxResolutions else { return }
        guard i < plan.preconditions.count else {
            out.append(Resolution(step: step, plan: plan))
            return
        }
        let p = graph.preconditions[plan.preconditions[i]]
        // Passing.
        if recovered != .some(.some(false)) {
            var pass = step
            pass.outcomes.append((p.index, recovered == nil ? .passed : .recovered))
            if recovered != nil || need(p, passing: true, &pass) {
                walk(plan, at: i + 1, recovered: nil, step: pass, chain: chain, session: session, into: &out)
            }
        }
        if recovered == .some(.some(true)) { return }
        // Failing: recovered once if it can be, else redirected, else the navigation fails.
        var fail = step
        if recovered == nil && !need(p, passing: false, &fail) { return }
        if recovered == nil, let r = p.recover {
            var rec = fail
            switch r {
            case .flow(let f):
                rec.recoveredBy.append(f)
                let facts = resolveResultReferences(p.recoverFacts, in: SampleValues.value(for: graph.coordinators[f].flow?.result))
                var decided: Bool?? = .some(nil)
                if case .check(let fact, let test) = p.kind, let v = facts[fact] { decided = .some(Explorer.passes(v, test)) }
                walk(plan, at: i, recovered: decided, step: rec, chain: chain, session: session, into: &out)
            case .command(let argv, _):
                rec.commands["recover " + p.name + " (" + (argv.first ?? "") + ")"] = true
                walk(plan, at: i, recovered: .some(nil), step: rec, chain: chain, session: session, into: &out)
            case .provider(let name, _):
                rec.providers["recover " + name] = true
                walk(plan, at: i, recovered: .some(nil), step: rec, chain: chain, session: session, into: &out)
            }
        }
        if let spec = p.redirect, plan.link == nil {
            var red = fail
            red.outcomes.append((p.index, .redirected))
            if chain.contains(spec.to) || chain.count > 8 {
                if !redirectLoops.contains(where: { $0.precondition == p.index }) { redirectLoops.append((p.index, chain + [spec.to])) }
                out.append(Resolution(step: red, plan: nil))
                return
            }
            do throws(NavError) {
                let by = graph.coordinators[spec.to].redirectPresentation(named: spec.by, redirecting: plan.by)
                // A completing flow's `then` redirected: its target takes the flow's place, as in navd.
                let next: Plan
                if let c = plan.completing {
                    next = try session.planTakingPlace(ofFlow: c.flow, result: c.result, to: spec.to, by: by, with: spec.with ?? [:], caller: caller, declaredTarget: true)
                } else {
                    next = try session.plan(Destination(target: spec.to), by: by, with: spec.with, from: plan.sourceId, ifVersion: nil, caller: caller, declaredTarget: true)
                }
                red.redirectedTo.append(spec.to)
                walk(next, at: 0, recovered: nil, step: red, chain: chain + [spec.to], session: session, into: &out)
            } catch {
                if !redirectProblems.contains(where: { $0.precondition == p.index }) {
                    redirectProblems.append((p.index, "redirects to `\(graph.coordinators[spec.to].name)`, which cannot be navigated to from `\(graph.coordinators[session.visibleTop?.coordinator ?? 0].name)`: \(error.message)"))
                }
                out.append(Resolution(step: red, plan: nil))
            }
            return
        }
        fail.outcomes.append((p.index, .failed))
        out.append(Resolution(step: fail, plan: nil))
    }

    func note(_ list: [(precondition: Int, outcome: Coverage.Outcome)]) {
        for (p, o) in list { outcomes[p, default: []].insert(o.rawValue) }
    }

    /// Records in `step` what makes `p` pass (or fail): the fact a check reads, or how a command or
    /// provider answers. False when that contradicts what the step already needs.
    func need(_ p: Precondition, passing: Bool, _ step: inout Step) -> Bool {
        switch p.kind {
        case .check(let fact, let test):
            let v = Explorer.value(making: test, pass: passing)
            if let old = step.facts[fact] { return old == v }
            step.facts.append(fact, v)
        case .command:
            if let old = step.commands[p.name] { return old == passing }
            step.commands[p.name] = passing
        case .provider:
            if let old = step.providers[p.name] { return old == passing }
            step.providers[p.name] = passing
        }
        return true
    }

    /// A fact value (null: no fact) for which `test` passes, or fails.
    static func value(making test: Precondition.Check, pass: Bool) -> JSONValue {
        switch (test, pass) {
        case (.equals(let v), true), (.notEquals(let v), false): return v
        case (.equals(let v), false), (.notEquals(let v), true): return different(from: v)
        case (.exists(let e), _): return e == pass ? .bool(true) : .null
        }
    }

    static func different(from v: JSONValue) -> JSONValue {
        switch v {
        case .bool(let b): return .bool(!b)
        case .int(let i): return .int(i == 0 ? 1 : 0)
        case .string(let s): return .string(s == "x" ? "y" : "x")
        case .null: return .bool(true)
        default: return .null
        }
    }

    static func passes(_ value: JSONValue, _ test: Precondition.Check) -> Bool {
        switch test {
        case .equals(let v): return value == v
        case .notEquals(let v): return value != v
        case .exists(let e): return value.isNull != e
        }
    }

    // MARK: Samples

    /// Setup params for a navigation to `c` (nil: its schema has no value navd can make).
    func sample(_ c: Int) -> JSONObject? {
        if let s = samples[c] { return s }
        let v = SampleValues.value(for: graph.coordinators[c].setup)?.objectValue
        if v == nil { unsampledSetup.insert(c) }
        samples[c] = v
        return v
    }

    /// URLs for `link`, each parameter from the field it fills in the link's stack (percent-encoded
    /// as `link.resolve` writes it, as a pattern's sample may hold any character, a wildcard's as
    /// the segments `open` joins back into it): every optional segment and query parameter
    /// given, then, when the pattern declares any, none of them (a URL may leave them out). Nil
    /// when a parameter's field has no value navd can make.
    func sampleURLs(_ link: Link) -> [String]? {
        func valueOf(_ param: String, wildcard: Bool = false, inPath: Bool = true) -> String? {
            for e in link.entries {
                for (field, v) in e.with where v.stringValue == ":" + param {
                    let schema = graph.coordinators[e.coordinator].setup?.properties.first { $0.name == field }?.schema
                    return SampleValues.urlValue(for: schema, inPath: inPath).map { wildcard ? wildcardSegments($0) : percentEncode($0) }
                }
            }
            return "x"
        }
        func url(optional: Bool) -> String? {
            var path = ""
            for s in link.segments {
                switch s {
                case .literal(let l): path += "/" + percentEncode(l)
                case .parameter(let name), .wildcard(let name):
                    guard let v = valueOf(name, wildcard: s == .wildcard(name)) else { return nil }
                    path += "/" + v
                case .optional(let name):
                    guard optional else { continue }
                    guard let v = valueOf(name) else { return nil }
                    path += "/" + v
                }
            }
            if path.isEmpty { path = "/" }
            guard optional else { return path }
            var query: [String] = []
            for (key, p) in link.query {
                guard let v = valueOf(p, inPath: false) else { return nil }
                query.append(key + "=" + v)
            }
            return query.isEmpty ? path : path + "?" + query.joined(separator: "&")
        }
        guard let full = url(optional: true) else { return nil }
        let leavesOut = !link.query.isEmpty || link.segments.contains { if case .optional = $0 { true } else { false } }
        guard leavesOut, let short = url(optional: false) else { return [full] }
        return [full, short]
    }
}
