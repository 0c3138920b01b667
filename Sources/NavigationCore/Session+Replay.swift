import JSON
import NavGraph
import RPC

// MARK: - Replaying recorded changes

/// A restored session brought forward by the changes its commits recorded (the `changes` of
/// `stackChanged`, as a durable log keeps them): each change applied as a subscriber's copy of
/// the tree applies it, but to the session's own nodes, every node it brings read as a restored
/// node is (shape, coordinator, setup model), within the session's limits.
extension Session {
    /// Applies the changes of the commit that made `version` (exactly the next version) and sets
    /// the id counter it left; `compact`: the changes are in the compact form (each read back into
    /// the full one first). On an error the session is unusable: the caller refuses the log.
    public func replay(changes: JSONValue, compact: Bool = false, version v: Int, nextId n: Int) throws(NavError) {
        guard v == version + 1 else {
            throw NavError(.corruptState, "a recorded commit makes version \(v) of session \"\(name)\", which is at version \(version)")
        }
        guard (0...Session.maxRestoredCounter).contains(n), n >= nextId else {
            throw NavError(.corruptState, "a recorded commit of session \"\(name)\" sets the id counter to \(n), below \(nextId) or out of range")
        }
        guard case .array(let list) = changes else {
            throw NavError(.corruptState, "the recorded changes of version \(v) of session \"\(name)\" are not a list")
        }
        nextId = n
        var count = 0
        for change in list {
            if compact {
                let full: JSONValue
                do { full = try CompactChange.expand(change: change) } catch {
                    throw NavError(.corruptState, "a recorded change of version \(v) of session \"\(name)\" is not in the compact form: \(error.description)")
                }
                try replayChange(full, count: &count)
            } else {
                try replayChange(change, count: &count)
            }
        }
        version = v
    }

    /// Replaces every fact by the recorded ones (an object of fact name → value, checked as saved
    /// facts are).
    public func replayFacts(_ j: JSONValue) throws(NavError) {
        replaceFacts(try Session.restoredFacts(j, limits: limits))
        if factsBytes > limits.maxFactsBytes {
            throw NavError(.limitExceeded, "the recorded facts of session \"\(name)\" are \(factsBytes) bytes of JSON; --max-facts-bytes is \(limits.maxFactsBytes)")
        }
    }

    /// Merges recorded fact changes (a null value removes a fact), checked as saved facts are and
    /// held to the same limits as `context.set`.
    public func replayFactChanges(_ j: JSONValue) throws(NavError) {
        guard case .object(let changes) = j else {
            throw NavError(.corruptState, "recorded fact changes of session \"\(name)\" are a JSON \(j.typeName), not an object of fact name → value")
        }
        for (k, _) in changes { try Session.checkRestoredFactName(k) }
        try setFacts(changes)
    }

    /// Checks a session after its changes were replayed, as a restored one is checked.
    public func checkReplayed() throws(NavError) {
        try Session.validateRestored(root, nextId: nextId)
        // What a replayed change added is checked against the graph as a saved tree is.
        try Session.checkTabs(of: root, graph: graph)
        try Session.checkFlowSteps(of: root, graph: graph)
        try limits.check(depth: root.height, nodes: nodeCount, paramsBytes: paramsBytes)
    }

    private func replayChange(_ c: JSONValue, count: inout Int) throws(NavError) {
        guard let op = c["op"]?.stringValue else { throw NavError(.corruptState, "a recorded change of session \"\(name)\" has no op") }
        var removed = Removal()
        switch op {
        case "reset":
            let fresh = try replayedNode(c["root"], count: &count)
            forget(root, into: &removed)
            root = fresh
            fresh.forEach { nodes.insert($0); paramsBytes += $0.countedBytes; if $0.paramsHistory != nil { mayHoldParamsHistory = true }; if $0.isRecovery { holdsRecoveryFlows = true } }
        case "update":
            guard let id = c["node"]?["id"]?.stringValue, let n = nodes[id], n.coordinator >= 0 else {
                throw NavError(.corruptState, "a recorded update of session \"\(name)\" names no live screen")
            }
            let params = c["node"]?["params"] ?? .object([:])
            if let setup = graph.coordinators[n.coordinator].setup, let violation = setup.validate(params) {
                throw NavError(.invalidSetup, "a recorded update of \(id) does not match its setup: \(violation.message)")
            }
            let history = try Session.restoredParamsHistory(c["node"]?["paramsHistory"], of: id, coordinator: graph.coordinators[n.coordinator])
            setParams(n, WrittenJSON(params))
            setParamsHistory(n, history)
        default:
            guard let parentId = c["parent"]?.stringValue, let parent = nodes[parentId] else {
                throw NavError(.corruptState, "a recorded \(op) of session \"\(name)\" names no live parent")
            }
            let given = c["index"]?.intValue
            if given == nil && (op == "replace" || op == "pop" || op == "select") {
                throw NavError(.corruptState, "a recorded \(op) of \(parentId) lacks its index")
            }
            let index = given ?? 0
            switch op {
            case "push", "replace":
                guard parent.kind == .stack || parent.kind == .flow, (0...parent.children.count).contains(index) else {
                    throw NavError(.corruptState, "a recorded \(op) into \(parentId) does not fit its children")
                }
                if op == "replace" {
                    for child in parent.children[index...] { forget(child, into: &removed) }
                    parent.children.removeSubrange(index...)
                }
                let node = try replayedNode(c["node"], count: &count)
                adopt(node, into: parent)
                node.forEach { nodes.insert($0); paramsBytes += $0.countedBytes; if $0.paramsHistory != nil { mayHoldParamsHistory = true }; if $0.isRecovery { holdsRecoveryFlows = true } }
            case "present":
                guard parent.kind == .screen || parent.kind == .flow, parent.presented == nil else {
                    throw NavError(.corruptState, "a recorded present from \(parentId) does not fit")
                }
                let stack = try replayedNode(c["node"], count: &count)
                stack.parent = parent
                parent.presented = stack
                stack.forEach { nodes.insert($0); paramsBytes += $0.countedBytes; if $0.paramsHistory != nil { mayHoldParamsHistory = true }; if $0.isRecovery { holdsRecoveryFlows = true } }
            case "dismiss":
                guard let p = parent.presented else { throw NavError(.corruptState, "a recorded dismiss of \(parentId) finds nothing presented") }
                forget(p, into: &removed)
                parent.presented = nil
            case "pop":
                // A stack keeps its first screen: a pop removes from the second on.
                guard index >= 1, index < parent.children.count else {
                    throw NavError(.corruptState, "a recorded pop of \(parentId) at \(index) finds no child it may remove")
                }
                for child in parent.children[index...] { forget(child, into: &removed) }
                parent.children.removeSubrange(index...)
            case "select":
                guard parent.kind == .tabs, parent.children.indices.contains(index) else {
                    throw NavError(.corruptState, "a recorded select of \(parentId) at \(index) finds no tab")
                }
                var history: [Int]?
                if let h = c["history"] {
                    guard let list = Session.tabHistory(h, selected: index), list.allSatisfy(parent.children.indices.contains) else {
                        throw NavError(.corruptState, "a recorded select of \(parentId) carries a history that is not distinct tab indexes other than the selected one")
                    }
                    history = list
                }
                parent.selected = index
                parent.tabHistory = history
            default:
                throw NavError(.corruptState, "a recorded change of session \"\(name)\" has the unknown op \"\(op)\"")
            }
        }
    }

    /// A node a change brings, read as a restored node is (its subtree bounded by the limits).
    private func replayedNode(_ j: JSONValue?, count: inout Int) throws(NavError) -> Node {
        guard let j else { throw NavError(.corruptState, "a recorded change of session \"\(name)\" lacks its node") }
        return try Session.node(from: j, graph: graph, depth: 1, count: &count, limits: limits, keys: nil)
    }
}
