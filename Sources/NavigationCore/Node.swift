import JSON
import NavGraph
import Unchecked

/// One node of a session's coordinator tree (SPEC section 4). Nodes are reference objects so a
/// commit changes the few nodes it touches in place; `parent` lets a command find a node's
/// container without scanning the tree.
public final class Node {
    public enum Kind: String, Sendable { case stack, tabs, screen, flow }

    /// The number in the node's id: the id is "n" and this number (``id``). Made by the session's
    /// counter, never reused; the key of the session's node index. Requests name nodes by id, replies
    /// write ids from the number: no string is made for a node on the navigation path.
    public private(set) var number: Int
    public private(set) var kind: Kind
    /// A flow presented for a navigation's precondition (`recover: {flow}`): it goes with that
    /// navigation, so one found after a restart (whose navigation is gone) is closed.
    public internal(set) var isRecovery = false
    /// A flow: where it continues when it completes, as `navigate {then}` gave it (nil: the flow's
    /// declared `then`). Kept with the node, so it is shown by `tree` and saved with the tree.
    public internal(set) var then: NavigationSpec?
    /// Index into the graph's coordinators (screens and flows), else -1.
    public private(set) var coordinator: Int

    /// The same coordinator at its index in another graph (``Session/rebase(onto:coordinators:)``).
    func reindex(_ coordinators: [Int]) {
        if coordinator >= 0 { coordinator = coordinators[coordinator] }
        if let t = then { then = NavigationSpec(to: coordinators[t.to], by: t.by, with: t.with) }
    }
    /// The node's setup model as the JSON text navd writes for it (``WrittenJSON``): written by a
    /// copy into `tree`, notifications, the log and saved trees; ``params`` reads it back.
    public internal(set) var setup: WrittenJSON
    /// The setup model as a value, read back from ``setup`` (for the few that read its fields).
    public var params: JSONValue { setup.value }
    /// The version of the commit that last gave the node new params after it was made (0: none
    /// did): a leave guard asked about its params at an earlier version was asked about others.
    public internal(set) var paramsVersion = 0
    /// `params` as JSON, in bytes, for a node that shows a coordinator (0 for stacks and the root's
    /// tabs): what it adds to its session's ``Session/paramsBytes``.
    var paramsBytes = 0
    /// Screen or flow: params it had before, kept by `update {push: true}` (React Navigation's
    /// `pushParams`), the most recent last; `dismiss` restores them one at a time before it removes
    /// the screen. At most ``Session/maxParamsHistory``; nil while empty.
    public internal(set) var paramsHistory: [JSONValue]?
    /// ``paramsHistory`` as JSON, in bytes: also counted in the session's ``Session/paramsBytes``.
    var historyBytes = 0
    /// What this node adds to its session's ``Session/paramsBytes``: its params and their history.
    var countedBytes: Int { paramsBytes + historyBytes }
    /// Stack: screens and flows, last on top. Tabs: stacks. Flow: its step screens, last on top.
    public internal(set) var children: [Node] = []
    /// Tabs: the selected index.
    public internal(set) var selected: Int = 0
    /// Tabs whose container declares `back: history`: the tabs selected before, each once, the most
    /// recent last (never the selected one); nil while empty.
    public internal(set) var tabHistory: [Int]?
    /// Screen or flow: the stack it presents modally.
    public internal(set) var presented: Node?
    /// The node this one is a child of (or the screen that presents it): not retained, like an
    /// `unowned` reference without its costs (a checked one counts, an unchecked one retains
    /// atomically at each use). Valid while the node is in the tree, where its parent outlives it;
    /// a node that left the tree has none.
    var parentRef: NodeLink?

    public internal(set) var parent: Node? {
        get { parentRef?.node }
        set { parentRef = newValue.map { NodeLink($0) } }
    }

    /// The id of node `number`: "n" and the number.
    public static func id(_ number: Int) -> String { prefixedDecimal("n", number) }

    /// "n" and ``number``.
    public var id: String { Node.id(number) }

    init(number: Int, kind: Kind, coordinator: Int = -1, setup: WrittenJSON = .emptyObject) {
        self.number = number
        self.kind = kind
        self.coordinator = coordinator
        self.setup = setup
    }

    /// Makes a node that left the tree, with no other reference to it, a new node (see
    /// ``Session``'s spare nodes): an allocation and a free saved per screen shown and dismissed.
    func reuse(number: Int, kind: Kind, coordinator: Int, setup: WrittenJSON, paramsBytes: Int) {
        assert(children.isEmpty && presented == nil && parentRef == nil, "only a detached leaf is reused")
        self.number = number
        self.kind = kind
        self.coordinator = coordinator
        self.setup = setup
        self.paramsBytes = paramsBytes
        paramsVersion = 0
        isRecovery = false
        // Set only when set (as they rarely are): an assignment releases the old value, nil included.
        if then != nil { then = nil }
        selected = 0
        if tabHistory != nil { tabHistory = nil }
        if paramsHistory != nil { paramsHistory = nil }
        historyBytes = 0
    }

    /// The child the user sees through this node (the selected tab, the top of a stack or flow, the
    /// stack a screen presents), or nil; read without reference counting, for walks of a tree that
    /// holds its nodes throughout.
    @inline(__always) var visibleChild: NodeLink? {
        switch kind {
        case .tabs: return children.isEmpty ? nil : unretainedChild(selected)
        case .stack, .flow: return children.isEmpty ? nil : unretainedChild(children.count - 1)
        case .screen: return presented.map { NodeLink($0) }
        }
    }

    @inline(__always) private func unretainedChild(_ i: Int) -> NodeLink {
        NodeLink.child(i, of: self)
    }

    /// Deep copy with the same ids (used by dry runs).
    func copy() -> Node {
        let n = Node(number: number, kind: kind, coordinator: coordinator, setup: setup)
        n.paramsBytes = paramsBytes
        n.paramsVersion = paramsVersion
        n.isRecovery = isRecovery
        n.then = then
        n.paramsHistory = paramsHistory
        n.historyBytes = historyBytes
        n.selected = selected
        n.tabHistory = tabHistory
        n.children = children.map { let c = $0.copy(); c.parent = n; return c }
        if let p = presented { let c = p.copy(); c.parent = n; n.presented = c }
        return n
    }

    /// The node as JSON (SPEC section 4), with coordinator names from `graph`.
    public func json(_ graph: NavigationGraph) -> JSONValue {
        var o = JSONObject()
        o.members.reserveCapacity(6)
        o.append("id", .string(id))
        o.append("kind", .string(kind.rawValue))
        switch kind {
        case .stack:
            o.append("children", .array(children.map { $0.json(graph) }))
        case .tabs:
            if coordinator >= 0 {
                // A tab container navigated to (not the root's tabs): its coordinator and params.
                o.append("coordinator", .string(graph.coordinators[coordinator].name))
                o.append("params", params)
            }
            o.append("children", .array(children.map { $0.json(graph) }))
            o.append("selected", .int(selected))
            if let h = tabHistory { o.append("history", .array(h.map(JSONValue.int))) }
        case .screen, .flow:
            o.append("coordinator", .string(graph.coordinators[coordinator].name))
            o.append("params", params)
            if let h = paramsHistory { o.append("paramsHistory", .array(h)) }
            if isRecovery { o.append("recovery", true) }
            if let t = then { o.append("then", graph.object(t)) }
            if kind == .flow { o.append("children", .array(children.map { $0.json(graph) })) }
            if let p = presented { o.append("presented", p.json(graph)) }
        }
        return .object(o)
    }

    /// Writes what ``json(_:)`` makes, byte for byte, without making it (for `tree` and the other
    /// snapshots, which would otherwise build a value for every node and string only to write it).
    public func write(into w: inout JSONWriter, _ graph: NavigationGraph) {
        let number = self.number
        switch kind {
        case .screen, .flow:
            // The fixed part in one reservation: id, kind, coordinator, and the params' key.
            let isScreen = kind == .screen
            graph.coordinators[coordinator].nameJSON.withUnsafeBytes { name in
                w.reserving(64 + ReservedOutput.maxIntBytes + name.count) { o in
                    o.raw("{\"id\":")
                    o.nodeId(number)
                    o.raw(isScreen ? ",\"kind\":\"screen\",\"coordinator\":" : ",\"kind\":\"flow\",\"coordinator\":")
                    o.raw(name)
                    o.raw(",\"params\":")
                }
            }
        case .stack, .tabs:
            w.raw("{\"id\":")
            writeId(into: &w)
        }
        switch kind {
        case .stack:
            w.raw(",\"kind\":\"stack\"")
            writeChildren(into: &w, graph)
        case .tabs:
            w.raw(",\"kind\":\"tabs\"")
            if coordinator >= 0 {
                w.raw(",\"coordinator\":")
                graph.coordinators[coordinator].nameJSON.withUnsafeBytes { w.buffer.append(contentsOf: $0) }
                w.raw(",\"params\":")
                w.write(setup)
            }
            writeChildren(into: &w, graph)
            w.raw(",\"selected\":")
            w.write(int: selected)
            if let h = tabHistory { w.raw(",\"history\":"); w.write(.array(h.map(JSONValue.int))) }
        case .screen, .flow:
            w.write(setup)
            if let h = paramsHistory { w.raw(",\"paramsHistory\":"); w.write(.array(h)) }
            if isRecovery { w.raw(",\"recovery\":true") }
            if let t = then { w.raw(",\"then\":"); w.write(graph.object(t)) }
            if kind == .flow { writeChildren(into: &w, graph) }
            if let p = presented {
                w.raw(",\"presented\":")
                p.write(into: &w, graph)
            }
        }
        w.raw(UInt8(ascii: "}"))
    }

    /// Writes the node in the compact form (`subscribe {notifications: "compact"}`): `i` its number,
    /// `k` its kind unless a screen, `c` its coordinator, `w` its params unless `{}`, `ph` earlier
    /// params, `rc` true for a recovery flow, `th` a flow's `then` given by `navigate`, `ch` children, `sel` the selected tab, `hi` the tab history, `pr` what it presents.
    public func writeCompact(into w: inout JSONWriter, _ graph: NavigationGraph) {
        // The fixed part in one reservation: number, kind, coordinator.
        let number = self.number, kind = self.kind
        if coordinator >= 0 {
            graph.coordinators[coordinator].nameJSON.withUnsafeBytes { name in
                w.reserving(24 + ReservedOutput.maxIntBytes + name.count) { Node.writeCompactHead(number, kind, name, into: &$0) }
            }
            if !setup.isEmptyObject {
                w.raw(",\"w\":")
                w.write(setup)
            }
        } else {
            w.reserving(24 + ReservedOutput.maxIntBytes) { Node.writeCompactHead(number, kind, nil, into: &$0) }
        }
        if let h = paramsHistory { w.raw(",\"ph\":"); w.write(.array(h)) }
        if isRecovery { w.raw(",\"rc\":true") }
        if let t = then { w.raw(",\"th\":"); w.write(graph.object(t)) }
        if kind != .screen {
            w.raw(",\"ch\":[")
            for (i, c) in children.enumerated() {
                if i > 0 { w.raw(UInt8(ascii: ",")) }
                c.writeCompact(into: &w, graph)
            }
            w.raw(UInt8(ascii: "]"))
        }
        if kind == .tabs {
            w.raw(",\"sel\":")
            w.write(int: selected)
            if let h = tabHistory { w.raw(",\"hi\":"); w.write(.array(h.map(JSONValue.int))) }
        }
        if let p = presented {
            w.raw(",\"pr\":")
            p.writeCompact(into: &w, graph)
        }
        w.raw(UInt8(ascii: "}"))
    }

    /// `{"i":number`, the kind unless a screen, and the coordinator's name (JSON) when it shows one.
    @inline(__always)
    private static func writeCompactHead(_ number: Int, _ kind: Kind, _ name: UnsafeRawBufferPointer?, into o: inout ReservedOutput) {
        o.raw("{\"i\":")
        o.int(number)
        switch kind {
        case .stack: o.raw(",\"k\":\"stack\"")
        case .tabs: o.raw(",\"k\":\"tabs\"")
        case .flow: o.raw(",\"k\":\"flow\"")
        case .screen: break
        }
        if let name {
            o.raw(",\"c\":")
            o.raw(name)
        }
    }

    private func writeChildren(into w: inout JSONWriter, _ graph: NavigationGraph) {
        w.raw(",\"children\":[")
        for (i, c) in children.enumerated() {
            if i > 0 { w.raw(UInt8(ascii: ",")) }
            c.write(into: &w, graph)
        }
        w.raw(UInt8(ascii: "]"))
    }

    /// Writes the id as a JSON string, from its number.
    @inlinable
    public func writeId(into w: inout JSONWriter) { w.write(nodeId: number) }

    /// Calls `body` for this node and every node below it.
    public func forEach(_ body: (Node) -> Void) {
        body(self)
        for c in children { c.forEach(body) }
        presented?.forEach(body)
    }

    /// Index of this node in its parent's children, if it is a child (not a presented stack). The top
    /// of a stack (what `dismiss` removes by default) is found first.
    var indexInParent: Int? {
        guard let p = parentRef else { return nil }
        return p.with { p in
            if let last = p.children.last, last === self { return p.children.count - 1 }
            return p.children.firstIndex { $0 === self }
        }
    }
}

extension JSONWriter {
    /// Writes the id of node `number` ("n" and the number) as a JSON string.
    @inlinable
    public mutating func write(nodeId number: Int) {
        reserving(ReservedOutput.maxIntBytes + 3) { $0.nodeId(number) }
    }

    /// Writes the ids of nodes `numbers` as a JSON array (inlinable: specialized where it is called).
    @inlinable
    public mutating func write(nodeIds numbers: NodeNumbers) { write(numbers, asIds: true) }

    /// Writes node numbers as a JSON array of numbers (the compact form of a list of ids).
    @inlinable
    public mutating func write(nodeNumbers numbers: NodeNumbers) { write(numbers, asIds: false) }

    /// `numbers` as a JSON array, each an id (`"n8"`) or a number (`8`).
    @inlinable @inline(__always)
    mutating func write(_ numbers: NodeNumbers, asIds: Bool) {
        // The brackets and the first number in one reservation: a commit removes one node or none.
        let count = numbers.count, first = numbers.first
        reserving(ReservedOutput.maxIntBytes + 5) { o in
            o.raw(UInt8(ascii: "["))
            if count > 0 {
                if asIds { o.nodeId(first) } else { o.int(first) }
            }
            if count < 2 { o.raw(UInt8(ascii: "]")) }
        }
        guard count > 1, let rest = numbers.rest else { return }
        for n in rest {
            reserving(ReservedOutput.maxIntBytes + 4) { o in
                o.raw(UInt8(ascii: ","))
                if asIds { o.nodeId(n) } else { o.int(n) }
            }
        }
        raw(UInt8(ascii: "]"))
    }

    /// The same for any sequence of numbers.
    @inlinable
    public mutating func write(nodeIds numbers: some Sequence<Int>) {
        raw(UInt8(ascii: "["))
        var first = true
        for n in numbers {
            reserving(ReservedOutput.maxIntBytes + 4) { o in
                if !first { o.raw(UInt8(ascii: ",")) }
                o.nodeId(n)
            }
            first = false
        }
        raw(UInt8(ascii: "]"))
    }
}
