import JSON
import NavGraph

/// `flowComplete`: a flow ends with a result, an error or a cancel.
extension Session {
    // MARK: flowComplete

    public enum FlowOutcome: Sendable {
        case result(JSONValue)
        case error(JSONValue)
        case cancelled
    }

    /// Ends the flow `flowId` and removes it (and what is above it) from the tree.
    public func flowComplete(_ flowId: String, _ outcome: FlowOutcome) throws(NavError) -> Commit {
        guard let flow = nodes[flowId] else {
            throw NavError(.flowNotActive, "no live flow `\(flowId)` in session `\(name)`: it completed, was dismissed, or never existed", data: ["flow": .string(flowId)])
        }
        guard flow.kind == .flow else {
            throw NavError(.flowNotActive, "node `\(flowId)` is a \(flow.kind.rawValue), not a flow", data: ["flow": .string(flowId)])
        }
        let c = graph.coordinators[flow.coordinator]
        switch outcome {
        case .result(let r):
            if let schema = c.flow?.result, let v = schema.validate(r) {
                throw NavError(.invalidSetup, "the result does not match the result schema of flow `\(c.name)`: \(v.message)",
                               data: ["pointer": .string(v.pointer), "rule": .string(v.rule), "flow": .string(flowId)])
            }
            return try removeFlow(flow, .completed, result: r, error: nil)
        case .error(let e):
            return try removeFlow(flow, .failed, result: nil, error: e)
        case .cancelled:
            return try removeFlow(flow, .cancelled, result: nil, error: nil)
        }
    }

    private func removeFlow(_ flow: Node, _ status: EndedFlow.Status, result: JSONValue?, error: JSONValue?) throws(NavError) -> Commit {
        if let place = Self.firstPlace(of: flow) {
            let how = status == .completed
                ? "give it a `then` (in the graph, or navigate {then}): completing it then continues there, its target taking the flow's place"
                : "navigate from its step with by: root (or by: replace of the root stack's first screen) instead"
            throw NavError(.notAllowed, "flow `\(flow.id)` (\(graph.coordinators[flow.coordinator].name)) is the first node of \(place) and cannot leave the tree by itself (a stack is never empty); \(how)",
                           data: ["flow": .string(flow.id)])
        }
        return try remove(flow, status: status, result: result, error: error, flowNode: flow)
    }

    /// "the root stack" or "a tab" when `flow` is the first node of one (which no commit may empty).
    private static func firstPlace(of flow: Node) -> String? {
        guard flow.indexInParent == 0, let stack = flow.parent, stack.parent == nil || stack.parent?.kind == .tabs else { return nil }
        return stack.parent == nil ? "the root stack" : "a tab"
    }

    /// A flow first in the root stack or in a tab cannot leave the tree by itself: completed with a
    /// result, it ends as its `then` takes its place, in the same commit (an onboarding flow at the
    /// root continuing to the app's tabs): by `root`, by `replace` of the flow, and by `push` or
    /// `present` too, which become a replace of the flow (nothing would be left to push on or
    /// present from; as `navigate {popUpTo}` inclusive of such a first screen does). The plan of
    /// that navigation (``Plan/completing`` set), validated as any `then` (with the style it names:
    /// the flow's `opens` or declared `then` decide, `with` resolved from the result); nil when the
    /// flow is not first in its stack (``flowComplete(_:_:)`` completes it, and the `then` follows
    /// from where it was).
    public func planCompletion(of flowId: String, result: JSONValue, then: NavigationSpec?, caller: Caller) throws(NavError) -> Plan? {
        guard let flow = nodes[flowId], flow.kind == .flow, Self.firstPlace(of: flow) != nil else { return nil }
        let c = graph.coordinators[flow.coordinator]
        if let schema = c.flow?.result, let v = schema.validate(result) {
            throw NavError(.invalidSetup, "the result does not match the result schema of flow `\(c.name)`: \(v.message)",
                           data: ["pointer": .string(v.pointer), "rule": .string(v.rule), "flow": .string(flowId)])
        }
        guard let then else { return nil }  // (refused by flowComplete, which says what would do)
        return try planTakingPlace(of: flow, result: result, to: then.to, by: then.by, with: resolveResultReferences(then.with ?? [:], in: result),
                                   caller: caller, declaredTarget: false)
    }

    /// The navigation to `to` that takes the place of flow `flowNumber` (first in its stack) as it
    /// completes with `result`: its `then` (``planCompletion(of:result:then:caller:)``), or where a
    /// precondition of that navigation redirects it (`declaredTarget`: the graph's own `redirect:`,
    /// which skips the flow's `opens`). A push or present becomes a replace of the flow; a select is
    /// refused.
    public func planTakingPlace(ofFlow flowNumber: Int, result: JSONValue, to: Int, by: Presentation?, with: JSONObject, caller: Caller,
                                declaredTarget: Bool) throws(NavError) -> Plan {
        guard let flow = nodes[number: flowNumber], flow.kind == .flow else {
            throw NavError(.conflict, "the flow `\(Node.id(flowNumber))` is gone (it left the tree while its then waited)", data: ["flow": .string(Node.id(flowNumber))])
        }
        return try planTakingPlace(of: flow, result: result, to: to, by: by, with: with, caller: caller, declaredTarget: declaredTarget)
    }

    private func planTakingPlace(of flow: Node, result: JSONValue, to: Int, by: Presentation?, with: JSONObject, caller: Caller,
                                 declaredTarget: Bool) throws(NavError) -> Plan {
        let target = graph.coordinators[to]
        let style = by ?? target.unnamedPresentation
        guard style != .select else {
            let place = Self.firstPlace(of: flow) ?? "its stack"
            throw NavError(.notAllowed, "flow `\(flow.id)` (\(graph.coordinators[flow.coordinator].name)) is the first node of \(place) and cannot leave the tree by itself, and its `then` selects `\(target.name)`, which would leave it there; a flow first in its stack continues only to a `then` that takes its place (by push, present, replace or root)",
                           data: ["flow": .string(flow.id), "to": .string(target.name), "by": .string(style.rawValue)])
        }
        var plan = try plan(Destination(target: to), by: style, with: with, from: flow.id, ifVersion: nil, caller: caller, afterFlow: flow.coordinator,
                            declaredTarget: declaredTarget)
        if plan.by == .push || plan.by == .present { plan = plan.replacing(flow.number, preconditions: []) }
        plan.completing = (flow.number, result)
        return plan
    }
}

extension Session {
    /// Presents `flow` over the visible top screen to recover a precondition: a system action,
    /// so abilities and presentations do not apply.
    public func presentForRecovery(_ flow: Int, caller: Caller) throws(NavError) -> Commit {
        let c = graph.coordinators[flow]
        if !c.access.isEmpty && caller.roles.isDisjoint(with: c.access) {
            let held = caller.roles.isEmpty ? "none" : caller.roles.sorted().joined(separator: ", ")
            throw NavError(.accessDenied, "the recovery flow `\(c.name)` admits only clients with role \(c.access.joined(separator: " or ")); this client holds \(held), so it cannot be presented for it",
                           data: ["to": .string(c.name), "roles": .array(c.access.map(JSONValue.string))])
        }
        try checkStartStepAccess(of: c, caller: caller)
        guard let top = visibleTop else { throw NavError(.conflict, "session `\(name)` shows no screen to present the recovery flow over") }
        var plan = Plan(target: flow, by: .present, params: .object([:]), source: top.number, ifVersion: nil, preconditions: [])
        plan.recovery = true
        return try commit(plan)
    }

    /// The recovery flows of the tree (``Node/isRecovery``), each presented for a navigation that
    /// waited on it. Read after a restart, when no navigation waits any more: each is closed.
    public func recoveryFlows() -> [Node] {
        guard holdsRecoveryFlows else { return [] }
        var found: [Node] = []
        root.forEach { if $0.isRecovery { found.append($0) } }
        if found.isEmpty { holdsRecoveryFlows = false }
        return found
    }

    /// Evaluates a `check` precondition against the session's facts.
    public func evaluate(fact: String, _ test: Precondition.Check) -> (passed: Bool, reason: String) {
        let v = facts[fact]
        switch test {
        case .equals(let want):
            let ok = v.map { factEqual($0, want) } ?? false
            return (ok, ok ? "" : "fact `\(fact)` is \(v.map { JSONWriter.string($0) } ?? "not set\(flatHint(fact))"), it must be \(JSONWriter.string(want))")
        case .notEquals(let avoid):
            let ok = !(v.map { factEqual($0, avoid) } ?? false)
            return (ok, ok ? "" : "fact `\(fact)` is \(JSONWriter.string(avoid)), it must not be")
        case .exists(let want):
            let ok = (v != nil) == want
            return (ok, ok ? "" : want ? "fact `\(fact)` is not set\(flatHint(fact))" : "fact `\(fact)` is set, it must not be")
        }
    }

    /// For a dotted fact that is not set while a fact named by its start is (`user` for
    /// `user.plan.tier`): facts are named flat, the dots are part of the name, so an object set
    /// under `user` is not looked into. Says so, with the context.set that would set it.
    private func flatHint(_ fact: String) -> String {
        var name = Substring(fact)
        while let dot = name.lastIndex(of: ".") {
            name = name[..<dot]
            if facts[String(name)] != nil {
                return " (fact `\(name)` is set, but facts are named flat: the dots are part of the name and a value under `\(name)` is not looked into; set it with context.set {facts: {\"\(fact)\": …}})"
            }
        }
        return ""
    }
}

private func factEqual(_ a: JSONValue, _ b: JSONValue) -> Bool {
    if let x = a.doubleValue, let y = b.doubleValue { return x == y }
    return a == b
}
