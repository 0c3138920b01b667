import JSON
import NavGraph

/// Pop to a destination (`dismiss {to, inclusive}`), reset, and live params (`update {node, with}`).
extension Session {
    /// The nearest node matching `target` (a node id, or a coordinator's name) among the stacks and
    /// flows on the visible path, searched from the top of the innermost one down to the root.
    public func popTarget(_ target: String) throws(NavError) -> Node {
        var containers: [Node] = []
        forEachVisible { n in if n.kind == .stack || n.kind == .flow { containers.append(n) } }
        let byId = nodes[target]
        if byId == nil, NodeIndex.number(target) != nil, graph.coordinator(named: target) == nil {
            // A node id (as navd makes them) of no node: say so, not that no coordinator has that name.
            throw NavError(.unknownNode, "no node `\(target)` in session `\(name)`; `tree` lists the current nodes", data: ["to": .string(target)])
        }
        let coordinator: Int? = byId == nil ? try graph.destination(to: target, route: nil).target : nil
        for container in containers.reversed() {
            for child in container.children.reversed() {
                if let byId, child === byId { return child }
                if let coordinator, child.coordinator == coordinator { return child }
            }
        }
        let what = byId != nil ? "node `\(target)` is not" : "no screen of `\(graph.coordinators[coordinator!].name)` is"
        // One off the visible path (in a tab not selected): dismiss by node reaches it.
        var elsewhere = byId.flatMap { $0.kind == .screen || $0.kind == .flow ? $0 : nil }
        if elsewhere == nil, let coordinator { root.forEach { n in if elsewhere == nil && n.coordinator == coordinator && n.kind != .tabs { elsewhere = n } } }
        let hint = elsewhere.map { "; `\($0.id)` (\(graph.coordinators[$0.coordinator].name)) is off it, in a tab not selected: dismiss {node: \"\($0.id)\"} removes it and what is above it there, or select its tab first" } ?? "; `tree` shows them"
        throw NavError(.unknownNode, "\(what) in the stacks of the visible path of session `\(name)`\(hint)",
                       data: ["to": .string(target)])
    }

    /// Removes everything above the nearest screen matching `target` on the visible path (and that
    /// screen too when `inclusive`), in one commit.
    public func dismiss(to target: String, inclusive: Bool, merging: ResultMerge? = nil) throws(NavError) -> Commit {
        if let merging, !isTrial {
            try tryOnCopy { trial throws(NavError) in _ = try trial.dismiss(to: target, inclusive: inclusive, merging: merging) }
        }
        let (going, modal) = try popRemoval(target, inclusive: inclusive)
        return try remove(going, status: .cancelled, result: nil, error: nil, flowNode: nil, merging: merging, alsoRemoving: modal)
    }

    /// `dismiss {to}` whose match, found on the visible path when it was asked, is screen `number`:
    /// what is above it goes (it too when `inclusive`), wherever it is by now (a dismiss that waited
    /// for leave guards while another tab was selected). `conflict` when the match is gone.
    public func dismiss(toNode number: Int, inclusive: Bool, merging: ResultMerge? = nil) throws(NavError) -> Commit {
        if let merging, !isTrial {
            try tryOnCopy { trial throws(NavError) in _ = try trial.dismiss(toNode: number, inclusive: inclusive, merging: merging) }
        }
        let going = try popRemovalTarget(above: number, inclusive: inclusive)
        let modal = nodes[number: number].flatMap { modalAlsoPopped($0, inclusive: inclusive) }
        return try remove(going, status: .cancelled, result: nil, error: nil, flowNode: nil, merging: merging, alsoRemoving: modal)
    }

    /// What ``dismiss(toNode:inclusive:merging:)`` removes (with what is above it).
    public func popRemovalTarget(above number: Int, inclusive: Bool) throws(NavError) -> Node {
        guard let match = nodes[number: number] else {
            throw NavError(.conflict, "the screen `\(Node.id(number))` that \"to\" matched is gone (removed while the dismiss waited)", data: ["node": .string(Node.id(number))])
        }
        if let going = removalAbove(match, inclusive: inclusive) { return going }
        throw NavError(.unknownNode, "nothing above `\(match.id)` (\(graph.coordinators[match.coordinator].name)) to dismiss any more; use inclusive: true to dismiss it too",
                       data: ["node": .string(match.id)])
    }

    /// The node `dismiss(to:inclusive:)` removes (with what is above it).
    func popRemovalTarget(_ target: String, inclusive: Bool) throws(NavError) -> Node {
        try popRemoval(target, inclusive: inclusive).going
    }

    /// What `dismiss(to:inclusive:)` removes: the node removed with what is above it, and the modal
    /// the match also loses (``modalAlsoPopped(_:inclusive:)``).
    func popRemoval(_ target: String, inclusive: Bool) throws(NavError) -> (going: Node, modal: Node?) {
        let match = try popTarget(target)
        if let going = removalAbove(match, inclusive: inclusive) { return (going, modalAlsoPopped(match, inclusive: inclusive)) }
        throw NavError(.unknownNode, "nothing above `\(match.id)` (\(graph.coordinators[match.coordinator].name)) to dismiss: it is the visible top; use inclusive: true to dismiss it too",
                       data: ["node": .string(match.id), "to": .string(target)])
    }

    /// What popping to `match` removes with what is above it: `match` itself when `inclusive`, else
    /// the node above it in its stack, else what it presents; nil when nothing is above it. Shared by
    /// `dismiss {to}` and `navigate {popUpTo}`.
    /// Whether `n` is the first screen (or flow) of the root stack or of a tab of the root: the one
    /// a stack that is never empty keeps, so no dismiss removes it.
    public func isFirstOfARootStack(_ n: Node) -> Bool {
        guard n.indexInParent == 0, let stack = n.parent, stack.kind == .stack else { return false }
        guard let shell = stack.parent else { return true }
        return shell.kind == .tabs && shell.coordinator < 0
    }

    /// The modal a screen popped to loses besides the screens above it in its stack: one it presents
    /// while they are above it (presented from it when it was not on top, and hidden by them).
    /// Popping to a screen shows it, so what it presents goes too, after the screens above it. Nil
    /// otherwise (a modal over a screen on top of its stack is what ``removalAbove(_:inclusive:)``
    /// answers, and `inclusive` removes the screen with its modal).
    func modalAlsoPopped(_ match: Node, inclusive: Bool) -> Node? {
        guard !inclusive, let modal = match.presented, let container = match.parent, let i = match.indexInParent,
              i + 1 < container.children.count else { return nil }
        return modal
    }

    func removalAbove(_ match: Node, inclusive: Bool) -> Node? {
        if inclusive { return match }
        if let container = match.parent, let i = match.indexInParent, i + 1 < container.children.count { return container.children[i + 1] }
        return match.presented
    }

    /// The most earlier params a screen keeps (`update {push: true}`); past it the oldest go.
    public static let maxParamsHistory = 16
    /// The most a `navigate {then}` may be, as JSON (kept with its flow's node, saved with the tree).
    public static let maxThenBytes = 4096

    /// Merges `given` into the params of the live screen or flow `nodeId` (a null removes a field),
    /// validated by its setup schema; one commit with an `update` change carrying the node. The
    /// caller needs one of the coordinator's `access` roles, as to navigate to it. The merged params
    /// may be at most `maxBytes` of JSON (updates add up; one navigate cannot give more either).
    /// `push` (screens only): the params it had are kept in its ``Node/paramsHistory`` (at most
    /// ``maxParamsHistory``, the oldest dropped), for `dismiss` to restore.
    public func update(_ nodeId: String, with given: JSONObject, push: Bool = false, caller: Caller, maxBytes: Int = .max) throws(NavError) -> Commit {
        guard let n = nodes[nodeId] else {
            throw NavError(.unknownNode, "no node `\(nodeId)` in session `\(name)`; `tree` lists the current nodes", data: ["node": .string(nodeId)])
        }
        if push {
            guard n.kind == .screen else {
                throw NavError(.invalidParams, "`push` keeps a screen's earlier params for `dismiss` to restore; node `\(nodeId)` is a \(n.kind.rawValue), which a dismiss never shows again: update it without push",
                               data: ["param": "push", "node": .string(nodeId)])
            }
            var history = n.paramsHistory ?? []
            history.append(n.params)
            if history.count > Session.maxParamsHistory { history.removeFirst(history.count - Session.maxParamsHistory) }
            let before = (n.paramsHistory, n.historyBytes)
            setParamsHistory(n, history)
            do throws(NavError) { try merge(given, into: n, caller: caller, maxBytes: maxBytes) } catch {
                n.paramsHistory = before.0
                paramsBytes += before.1 - n.historyBytes
                n.historyBytes = before.1
                throw error
            }
        } else {
            try merge(given, into: n, caller: caller, maxBytes: maxBytes)
        }
        var changes = ChangeLog(self)
        changes.record("update", node: n)
        version += 1
        return Commit(version: version, log: changes, node: n, removedNumbers: NodeNumbers(), endedFlows: nil)
    }

    /// Merges `given` into the params of screen or flow `n` (a null removes a field), checked first
    /// (access, size, the session's limits, the setup schema): on an error nothing changed.
    func merge(_ given: JSONObject, into n: Node, caller: Caller, maxBytes: Int = .max) throws(NavError) {
        let nodeId = n.id
        guard n.kind == .screen || n.kind == .flow else {
            throw NavError(.unknownNode, "node `\(nodeId)` is a \(n.kind.rawValue); only screens and flows have params", data: ["node": .string(nodeId)])
        }
        let c = graph.coordinators[n.coordinator]
        if !c.access.isEmpty && caller.roles.isDisjoint(with: c.access) {
            let held = caller.roles.isEmpty ? "none" : caller.roles.sorted().joined(separator: ", ")
            throw NavError(.accessDenied, "`\(c.name)` admits only clients with role \(c.access.joined(separator: " or ")); this client holds \(held), so it cannot change the params of `\(nodeId)`",
                           data: ["node": .string(nodeId), "roles": .array(c.access.map(JSONValue.string))])
        }
        let params = Session.merged(n.params, given)
        let text = WrittenJSON(params)
        let size = text.count
        if size > maxBytes {
            throw NavError(.limitExceeded, "the params of `\(nodeId)` would be \(size) bytes of JSON; a screen's params may be at most \(maxBytes) (the --max-message limit)",
                           data: ["limit": "--max-message", "max": .int(maxBytes), "node": .string(nodeId)])
        }
        try limits.check(depth: 0, nodes: 0, paramsBytes: paramsBytes - n.paramsBytes + size)
        if let setup = c.setup, let violation = setup.validate(params) {
            throw NavError(.invalidSetup, "the params of `\(nodeId)` would not match the setup of `\(c.name)`: \(violation.message)",
                           data: ["pointer": .string(violation.pointer), "rule": .string(violation.rule), "node": .string(nodeId)])
        }
        setParams(n, text)
    }

    /// `params` with `given` merged in, as `update` merges: a field given replaces, a null removes one.
    static func merged(_ params: JSONValue, _ given: JSONObject) -> JSONValue {
        var merged = params.objectValue ?? JSONObject()
        merged.merge(given, nullRemoves: true)
        return .object(merged)
    }

    /// `dismiss` of a screen with earlier params (`update {push: true}`): the last of them become its
    /// params again, one commit with an `update` change; nil when `nodeId` (default: the visible
    /// top) is not the visible top or has no earlier params (then the dismiss removes it).
    public func restoreEarlierParams(_ nodeId: String?) throws(NavError) -> Commit? {
        guard mayHoldParamsHistory, let top = visibleTopRef?.with({ $0 }), nodeId == nil || nodeId == top.id,
              var history = top.paramsHistory, let earlier = history.popLast() else { return nil }
        setParamsHistory(top, history.isEmpty ? nil : history)
        setParams(top, WrittenJSON(earlier))
        var changes = ChangeLog(self)
        changes.record("update", node: top)
        version += 1
        return Commit(version: version, log: changes, node: top, removedNumbers: NodeNumbers(), endedFlows: nil)
    }

    /// Gives `n` the params history `history` (nil or empty: none), keeping the session's total.
    func setParamsHistory(_ n: Node, _ history: [JSONValue]?) {
        let list = history.flatMap { $0.isEmpty ? nil : $0 }
        let bytes = list.map { JSONValue.array($0).encodedSize } ?? 0
        if list != nil { mayHoldParamsHistory = true }
        n.paramsHistory = list
        paramsBytes += bytes - n.historyBytes
        n.historyBytes = bytes
    }

    /// Gives `n` new params, keeping the session's total; called by a commit before it counts its
    /// version, which becomes the node's ``Node/paramsVersion``.
    func setParams(_ n: Node, _ setup: WrittenJSON) {
        let bytes = setup.count
        n.setup = setup
        n.paramsVersion = version + 1
        paramsBytes += bytes - n.paramsBytes
        n.paramsBytes = bytes
    }
}

/// One screen asked for by `reset {to: [...]}`.
public struct ResetStep: Sendable {
    public var to: String
    public var with: JSONObject
    public var by: Presentation?
    public init(to: String, with: JSONObject = JSONObject(), by: Presentation? = nil) {
        self.to = to
        self.with = with
        self.by = by
    }
}

extension Session {
    /// `reset {to: [steps]}`: the stack is validated screen by screen as a deep link's is (presentation,
    /// access, setup, mediation; the preconditions of every screen run before the commit), then built
    /// as a deep link builds it.
    public func planReset(_ entries: [ResetStep], caller: Caller, ifVersion: Int?) throws(NavError) -> Plan {
        guard !entries.isEmpty else {
            throw NavError(.invalidParams, "`reset` with \"to\" needs at least one screen, like [{to: \"shop.Home\"}]; send reset {} for the graph's root",
                           data: ["param": "to"])
        }
        if let v = ifVersion, v != version {
            throw NavError(.conflict, "the tree is at version \(version), not \(v) as \"ifVersion\" requires", data: ["version": .int(version)])
        }
        var steps: [LinkStep] = []
        var preconditions = LinkPreconditions()
        for (i, e) in entries.enumerated() {
            let c = graph.coordinators[try graph.destination(to: e.to, route: nil).target]
            try appendStep(c, with: e.with, by: e.by, to: &steps, preconditions: &preconditions, caller: caller,
                           origin: "reset step \(i)", data: ["step": .int(i)])
        }
        var plan = Plan(target: steps.last!.coordinator, by: .push, params: steps.last!.params, source: visibleTop?.number ?? root.number,
                        ifVersion: ifVersion, preconditions: preconditions.preconditions)
        plan.link = steps
        plan.linkSubjects = preconditions.subjects
        return plan
    }
}
