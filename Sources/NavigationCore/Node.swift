import JSON
import NavGraph

/// One node of a session's coordinator tree (SPEC section 4). Nodes are reference objects so a
/// commit changes the few nodes it touches in place; `parent` lets a command find a node's
/// container without scanning the tree.
public final class Node {
    public enum Kind: String, Sendable { case stack, tabs, screen, flow }

    public let id: String
    /// The number in `id` ("n42" → 42), the key of the session's node index; -1 for another form.
    let number: Int
    public let kind: Kind
    /// Index into the graph's coordinators (screens and flows), else -1.
    public let coordinator: Int
    public internal(set) var params: JSONValue
    /// Stack: screens and flows, last on top. Tabs: stacks. Flow: its step screens, last on top.
    public internal(set) var children: [Node] = []
    /// Tabs: the selected index.
    public internal(set) var selected: Int = 0
    /// Screen or flow: the stack it presents modally.
    public internal(set) var presented: Node?
    /// `unowned`, not `weak`: a weak reference would give every node a side table and put all its
    /// retains and releases on the slow path. A parent outlives its children in the tree.
    public internal(set) unowned var parent: Node?

    init(id: String, number: Int? = nil, kind: Kind, coordinator: Int = -1, params: JSONValue = .object([:])) {
        self.id = id
        self.number = number ?? NodeIndex.number(id) ?? -1
        self.kind = kind
        self.coordinator = coordinator
        self.params = params
    }

    /// The child the user sees through this node (the selected tab, the top of a stack or flow, the
    /// stack a screen presents), or nil; read without reference counting, for walks of a tree that
    /// holds its nodes throughout.
    @inline(__always) var visibleChild: Unmanaged<Node>? {
        switch kind {
        case .tabs: return children.isEmpty ? nil : unretainedChild(selected)
        case .stack, .flow: return children.isEmpty ? nil : unretainedChild(children.count - 1)
        case .screen: return presented.map { Unmanaged.passUnretained($0) }
        }
    }

    @inline(__always) private func unretainedChild(_ i: Int) -> Unmanaged<Node> {
        children.withUnsafeBufferPointer { b in
            Unmanaged.fromOpaque(UnsafeRawPointer(b.baseAddress! + i).load(as: UnsafeRawPointer.self))
        }
    }

    /// Deep copy with the same ids (used by dry runs).
    func copy() -> Node {
        let n = Node(id: id, number: number, kind: kind, coordinator: coordinator, params: params)
        n.selected = selected
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
            o.append("children", .array(children.map { $0.json(graph) }))
            o.append("selected", .int(selected))
        case .screen, .flow:
            o.append("coordinator", .string(graph.coordinators[coordinator].name))
            o.append("params", params)
            if kind == .flow { o.append("children", .array(children.map { $0.json(graph) })) }
            if let p = presented { o.append("presented", p.json(graph)) }
        }
        return .object(o)
    }

    /// Writes the id as a JSON string: from its number when it has one (no string is read).
    public func writeId(into w: inout JSONWriter) {
        if number >= 0 {
            w.raw("\"n")
            w.write(int: number)
            w.raw(UInt8(ascii: "\""))
        } else {
            w.write(string: id)
        }
    }

    /// Calls `body` for this node and every node below it.
    public func forEach(_ body: (Node) -> Void) {
        body(self)
        for c in children { c.forEach(body) }
        presented?.forEach(body)
    }

    /// Index of this node in its parent's children, if it is a child (not a presented stack).
    var indexInParent: Int? {
        guard let p = parent else { return nil }
        return p.children.firstIndex { $0 === self }
    }
}
