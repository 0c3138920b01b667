import JSON
import NavGraph

/// `dismiss`: what a dismiss removes, how it is detached, and the leave guards it must pass.
extension Session {
    // MARK: dismiss

    /// Removes `nodeId` (default: the visible top) and everything above it in its stack; with
    /// `merging` (`dismiss {result, merge: true}`), the screen then on top takes those fields into its
    /// params in the same commit (an `update` change), or nothing happens if it may not.
    public func dismiss(_ nodeId: String?, merging: ResultMerge? = nil) throws(NavError) -> Commit {
        if let merging, !isTrial {
            // Checked on a copy first: a merge the screen below refuses changes nothing.
            try tryOnCopy { trial throws(NavError) in _ = try trial.dismiss(nodeId, merging: merging) }
        }
        var node = try dismissTarget(nodeId)
        let commit = try remove(node, status: .cancelled, result: nil, error: nil, flowNode: nil, merging: merging)
        recycle(&node)
        return commit
    }

    /// What `dismiss {result, merge: true}` merges into the screen left on top, and as whom.
    public struct ResultMerge: Sendable {
        public let fields: JSONObject
        public let caller: Caller
        public let maxBytes: Int
        public init(fields: JSONObject, caller: Caller, maxBytes: Int) {
            self.fields = fields
            self.caller = caller
            self.maxBytes = maxBytes
        }
    }

    /// The node `dismiss(_:)` removes: `nodeId`, or the visible top.
    func dismissTarget(_ nodeId: String?) throws(NavError) -> Node {
        if let id = nodeId {
            guard let n = nodes[id] else {
                throw NavError(.unknownNode, "no node `\(id)` in session `\(name)`; `tree` lists the current nodes", data: ["node": .string(id)])
            }
            return n
        }
        guard let top = visibleTopRef else { throw NavError(.unknownNode, "nothing to dismiss") }
        return top.with { $0 }
    }

    /// What a dismiss removes (with what is above it): `toNode` (a `dismiss {to}` whose match was
    /// found when it was asked), else `to`, else node `nodeId` (default: the visible top).
    public func dismissal(node nodeId: String?, to: String?, toNode: Int?, inclusive: Bool) throws(NavError) -> Node {
        if let toNode { return try popRemovalTarget(above: toNode, inclusive: inclusive) }
        if let to { return try popRemovalTarget(to, inclusive: inclusive) }
        return try dismissTarget(nodeId)
    }

    /// Removes `node` following the dismiss rules; `flowNode` is the flow completing, if any;
    /// `alsoRemoving`: the modal a screen popped to loses too (``modalAlsoPopped(_:inclusive:)``).
    func remove(_ node: Node, status: EndedFlow.Status, result: JSONValue?, error: JSONValue?, flowNode: Node?,
                merging: ResultMerge? = nil, alsoRemoving modal: Node? = nil) throws(NavError) -> Commit {
        var changes = ChangeLog(self)
        var removed = Removal()
        // The screen left on top where the node was (off the visible path too) takes the result.
        let region = merging == nil ? nil : Region(around: node, in: self, goingBack: flowNode == nil)
        try detach(node, flowNode: flowNode, changes: &changes, removed: &removed, goingBack: flowNode == nil)
        if let modal { try detach(modal, flowNode: nil, changes: &changes, removed: &removed) }
        if let merging {
            guard let top = region?.topScreen(in: self) else { throw NavError(.unknownNode, "no screen is left on top to take the result") }
            try merge(merging.fields, into: top, caller: merging.caller, maxBytes: merging.maxBytes)
            changes.record("update", node: top)
        }
        if let f = flowNode {
            removed.ended.insertFirst(EndedFlow(id: f.id, coordinator: f.coordinator, status: status, result: result, error: error))
        }
        version += 1
        return Commit(version: version, log: changes, node: nil, removedNumbers: removed.numbers, endedFlows: removed.ended)
    }

    /// What removing `node` by the dismiss rules takes out of the tree: a presented stack (from its
    /// owner), or the children of a stack or flow from an index on. Checks only; changes nothing.
    /// Unretained (as the tree walks are): valid while the tree is unchanged, which it is from the
    /// check to the change.
    enum Detachment {
        case modal(owner: NodeLink, stack: NodeLink)
        case pop(container: NodeLink, index: Int)
        /// A dismiss at the first screen of the selected tab of a container with `back:`: that
        /// tab is selected instead, nothing removed.
        case selectTab(shell: NodeLink, index: Int)
    }

    /// `goingBack`: a dismiss (not a pop of popUpTo, not a flow ending), which at the first screen of
    /// a tab follows its container's `back:`.
    func detachment(of node: Node, goingBack: Bool = false) throws(NavError) -> Detachment {
        switch node.kind {
        case .tabs where node.coordinator < 0:
            throw NavError(.unknownNode, "nothing to dismiss: `\(node.id)` is the tab bar", data: ["node": .string(node.id)])
        case .stack:
            if let shell = node.parent, shell.kind == .tabs, shell.coordinator >= 0 {
                // A tab of a tab container: dismissing it dismisses the container.
                return try detachment(of: shell)
            }
            guard let owner = node.parentRef, owner.with({ $0.kind == .screen || $0.kind == .flow }) else {
                throw NavError(.unknownNode, "nothing to dismiss: `\(node.id)` is \(node.parent == nil ? "the root stack" : "a tab's stack")", data: ["node": .string(node.id)])
            }
            return .modal(owner: owner, stack: NodeLink(node))
        case .screen, .flow, .tabs:
            let container = node.parentRef!.with { $0 }
            let index = node.indexInParent!
            if goingBack && index == 0 && node.kind == .screen, let shell = container.parent, shell.kind == .tabs,
               shell.children[shell.selected] === container, let back = tabToGoBack(in: shell) {
                return .selectTab(shell: NodeLink(shell), index: back)
            }
            if container.kind == .flow && index == 0 {
                // Dismissing a flow's first step abandons the flow.
                return try detachment(of: container)
            }
            if index == 0, let shell = container.parent, shell.kind == .tabs, shell.coordinator >= 0 {
                // The first screen of a tab of a tab container: the container goes.
                do throws(NavError) { return try detachment(of: shell) } catch where error.kind == .unknownNode {
                    // Said of the node asked about: the container is what cannot go.
                    throw NavError(.unknownNode, "nothing to dismiss: `\(node.id)` (\(graph.coordinators[node.coordinator].name)) is the first screen of a tab of `\(shell.id)` (\(graph.coordinators[shell.coordinator].name)), so dismissing it dismisses that tab container, and \(error.message.replacingOccurrences(of: "nothing to dismiss: ", with: ""))",
                                   data: ["node": .string(node.id), "container": .string(shell.id)])
                }
            }
            if index == 0 {
                guard let owner = container.parentRef, owner.with({ $0.kind == .screen || $0.kind == .flow }) else {
                    let place = container.parent == nil ? "the root stack" : "a tab"
                    let what = node.kind == .flow
                        ? "flow `\(node.id)` (\(graph.coordinators[node.coordinator].name)) is the first node of \(place) and cannot leave the tree (dismissing its first step would abandon it)"
                        : "`\(node.id)` (\(graph.coordinators[node.coordinator].name)) is the first screen of \(place)"
                    throw NavError(.unknownNode, "nothing to dismiss: \(what) (a stack is never empty); to make another screen the first, navigate from it with by: replace (or by: root, or select a tab)",
                                   data: ["node": .string(node.id)])
                }
                return .modal(owner: owner, stack: NodeLink(container))
            }
            return .pop(container: NodeLink(container), index: index)
        }
    }

    /// Takes `node` and what is above it out of the tree by the dismiss rules, recording the change;
    /// the caller commits.
    func detach(_ node: Node, flowNode: Node?, changes: inout ChangeLog, removed: inout Removal, goingBack: Bool = false) throws(NavError) {
        switch try detachment(of: node, goingBack: goingBack) {
        case .selectTab(let shell, let index):
            shell.with { goBack(to: index, in: $0, changes: &changes) }
        case .modal(let owner, let stack):
            owner.with { owner in
                stack.with { forget($0, into: &removed, except: flowNode) }
                owner.presented = nil
                changes.record("dismiss", parent: owner, removed: removed.numbers)
            }
        case .pop(let container, let index):
            container.with { container in
                for n in container.children[index...] { forget(n, into: &removed, except: flowNode) }
                if index == container.children.count - 1 { container.children.removeLast() } else { container.children.removeSubrange(index...) }
                changes.record("pop", parent: container, index: index, removed: removed.numbers)
            }
        }
    }

    /// The `leave:` guards of what is above screen `number` in its stack (and what it presents): what
    /// `navigate {existing: pop}` pops. Empty when nothing is above it.
    public func leaveGuards(above number: Int) throws(NavError) -> [LeaveGuard] {
        try leaveGuards(popTo: number, inclusive: false) ?? []
    }

    /// The `leave:` guards of what popping to screen `number` removes (it too when `inclusive`):
    /// what is above it in its stack, then the modal it presents. Nil when it is gone or nothing is
    /// above it.
    public func leaveGuards(popTo number: Int, inclusive: Bool) throws(NavError) -> [LeaveGuard]? {
        guard let screen = nodes[number: number], let going = removalAbove(screen, inclusive: inclusive) else { return nil }
        var guards = try leaveGuards(node: going.id, to: nil, inclusive: false).guards
        if let modal = modalAlsoPopped(screen, inclusive: inclusive) {
            var guarded: Node?
            collectLeaveGuards(modal, &guards, &guarded)
        }
        return guards
    }

    /// The `leave:` guards of what a dismiss would remove (`dismiss(_:)`, or with `to`,
    /// `dismiss(to:inclusive:)`): one for each guarded screen and each of its guards, the top screen's
    /// first, and the topmost guarded node. Changes nothing; throws what the dismiss would.
    /// `goingBack`: for a dismiss (see ``detachment(of:goingBack:)``).
    public func leaveGuards(node nodeId: String?, to: String?, inclusive: Bool, goingBack: Bool = false) throws(NavError) -> (guards: [LeaveGuard], guarded: Node?) {
        // The usual dismiss (the visible top, a screen above others in its stack, presenting nothing)
        // removes that screen alone: only its own guards count. Read without retaining anything.
        if nodeId == nil && to == nil, let top = visibleTopRef {
            let alone = top.with { n -> Bool in
                guard n.presented == nil, let c = n.parentRef else { return false }
                return c.with { $0.kind == .stack && $0.children.count > 1 && $0.children.last === n }
            }
            if alone {
                let coordinator = top.with { $0.coordinator }
                if !graph.leaveGuarded[coordinator] { return ([], nil) }
            }
        }
        let target: Node
        var modal: Node?
        if let to { (target, modal) = try popRemoval(to, inclusive: inclusive) } else { target = try dismissTarget(nodeId) }
        var guards: [LeaveGuard] = []
        var guarded: Node?
        switch try detachment(of: target, goingBack: goingBack) {
        case .selectTab: break
        case .modal(_, let stack): stack.with { collectLeaveGuards($0, &guards, &guarded) }
        case .pop(let container, let index):
            container.with { container in
                var i = container.children.count
                while i > index {
                    i -= 1
                    collectLeaveGuards(container.children[i], &guards, &guarded)
                }
            }
        }
        // The modal the match presents, hidden by the screens above it, goes too.
        if let modal { collectLeaveGuards(modal, &guards, &guarded) }
        return (guards, guarded)
    }

    /// The `leave:` guards of what committing `plan` would remove (a `replace`, a `root`, a deep link
    /// or a `reset {to}` replacing stacks), the topmost's first; empty when it removes nothing
    /// guarded, or would fail (its commit then says why).
    public func leaveGuards(removedBy plan: Plan) -> [LeaveGuard] {
        guard let removed = dryRunCommit(plan).0?.removedNumbers else { return [] }
        var guards: [LeaveGuard] = []
        for number in removed.reversed() {
            guard let n = nodes[number: number], n.coordinator >= 0, graph.leaveGuarded[n.coordinator] else { continue }
            appendLeaveGuards(of: n, to: &guards)
        }
        return guards
    }

    /// The `leave:` guards of every node of the tree, the topmost's first (what `reset {}` removes).
    public func leaveGuardsOfTheTree() -> [LeaveGuard] {
        var guards: [LeaveGuard] = []
        var guarded: Node?
        collectLeaveGuards(root, &guards, &guarded)
        return guards
    }

    /// The guards of `n` and what is above it, top first.
    private func collectLeaveGuards(_ n: Node, _ guards: inout [LeaveGuard], _ guarded: inout Node?) {
        if let p = n.presented { collectLeaveGuards(p, &guards, &guarded) }
        var i = n.children.count
        while i > 0 {
            i -= 1
            collectLeaveGuards(n.children[i], &guards, &guarded)
        }
        guard n.kind == .screen || n.kind == .flow || (n.kind == .tabs && n.coordinator >= 0), graph.leaveGuarded[n.coordinator] else { return }
        appendLeaveGuards(of: n, to: &guards)
        if guarded == nil { guarded = n }
    }

    /// `n`'s own guards, each once, in their declared order. Only `n`'s are compared (each node is
    /// met once): a tree of many guarded screens is not compared with itself.
    private func appendLeaveGuards(of n: Node, to guards: inout [LeaveGuard]) {
        let first = guards.count
        for p in graph.coordinators[n.coordinator].leave {
            let g = LeaveGuard(precondition: p, node: n.number)
            if !guards[first...].contains(g) { guards.append(g) }
        }
    }

    /// The params of node `number` and its coordinator (-1 for a stack), or nil when it is not in
    /// the tree: what a leave guard of that node is asked about.
    public func leaving(_ number: Int) -> (coordinator: Int, params: JSONValue)? {
        guard let n = nodes[number: number] else { return nil }
        return (n.coordinator, n.params)
    }
}

/// A `leave:` guard of one node: precondition `precondition` (its index in the graph) protecting the
/// screen, flow or tab container numbered `node`. A guard runs once for each node it protects,
/// about that node (its id, coordinator and params), so that a guard declared by two screens of a
/// stack is asked about both.
public struct LeaveGuard: Hashable, Sendable {
    public let precondition: Int
    public let node: Int

    public init(precondition: Int, node: Int) {
        self.precondition = precondition
        self.node = node
    }
}

extension Array where Element == LeaveGuard {
    /// The preconditions these guards run, each once, in their order.
    public var preconditions: [Int] {
        var out: [Int] = []
        for g in self where !out.contains(g.precondition) { out.append(g.precondition) }
        return out
    }
}
