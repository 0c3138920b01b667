import NavGraph
import Unchecked

// The links of a tree that count no reference: the only code of NavigationCore that uses the
// `Unchecked` module. Each is safe by one rule; rules 1 and 2 are checked by
// ``Session/linkProblems()`` after every step of the tree's property tests (under
// `make test-asan` too), 3 to 6 hold by where the links are used (the same tests run them there):
//
// 1. A node in the tree links to its parent (``Node/parentRef``), which outlives it while it is in
//    the tree; a node taken out of the tree links to none (``Session/forget(_:into:except:)``).
// 2. The index (``NodeTable``) lists exactly the nodes in the tree: the tree holds every node the
//    index finds.
// 3. A ``NodeLink`` read during a walk or a check is used before the tree changes (a walk's body
//    must not change the tree; a ``Session/Detachment`` goes from its check to its change at once).
// 4. A change log's graph (``GraphLink``) is its session's, which outlives the log.
// 5. A coordinator read while a navigation is planned (``CoordinatorLink``) is one of its session's
//    graph, which the session holds throughout: only a reload replaces it, never a plan.
// 6. A caller lent by its client (``RolesLink``, ``Caller/init(lending:)``) is read only while the
//    request it was made for is answered, which the client outlives; whatever keeps a caller longer
//    (a navigation waiting on its preconditions) keeps it held (``Caller/kept``).

/// A node, read without counting a reference: valid while the tree holds the node (rules 1 and 3).
struct NodeLink {
    private let ref: Unretained<Node>

    @inline(__always) init(_ node: Node) { ref = Unretained(node) }

    /// Child `i` of `node`, read without counting (the node's children array holds it).
    @inline(__always) static func child(_ i: Int, of node: Node) -> NodeLink {
        NodeLink(ref: Unretained.element(i, of: node.children))
    }

    @inline(__always) private init(ref: Unretained<Node>) { self.ref = ref }

    /// The node, as a counted reference.
    @inline(__always) var node: Node { ref.object }

    /// Runs `body` with the node, counting no reference for the call.
    @inline(__always) func with<R>(_ body: (Node) throws -> R) rethrows -> R { try ref.with(body) }

    @inline(__always) static func === (a: NodeLink, b: NodeLink) -> Bool { a.ref === b.ref }
}

/// Coordinator `i` of a session's graph, read without counting a reference (rule 5).
struct CoordinatorLink {
    private let ref: Unretained<Coordinator>

    @inline(__always) init(_ i: Int, of graph: NavigationGraph) {
        precondition(i >= 0 && i < graph.coordinators.count, "coordinator index out of range")
        ref = Unretained.element(i, of: graph.coordinators)
    }

    /// Runs `body` with the coordinator, counting no reference for the call.
    @inline(__always) func with<R>(_ body: (Coordinator) throws -> R) rethrows -> R { try ref.with(body) }
}

/// The roles of a client, read without counting a reference (rule 6).
@usableFromInline struct RolesLink: @unchecked Sendable {
    @usableFromInline let ref: Unretained<RoleHolder>
    @inlinable init(_ holder: RoleHolder) { ref = Unretained(holder) }
    var roles: Set<String> { ref.with { $0.roles } }
}

/// The graph a change log writes names from, not counted (rule 4).
struct GraphLink {
    private let ref: Unretained<NavigationGraph>
    init(_ graph: NavigationGraph) { ref = Unretained(graph) }
    @inline(__always) func with<R>(_ body: (NavigationGraph) throws -> R) rethrows -> R { try ref.with(body) }
    var graph: NavigationGraph { ref.object }
}

/// Nodes by number, not counted (rule 2: the tree holds each node listed).
final class NodeTable {
    private let table = UnretainedTable<Node>()
    subscript(_ k: Int) -> Node? { table[k] }
    /// What `body` reads of node `k`, without counting a reference (rule 2).
    func read<T>(_ k: Int, _ body: (Node) -> T) -> T? { table.read(k, body) }
    func insert(_ n: Node, key: Int) { table.insert(n, key: key) }
    func remove(key: Int) { table.remove(key: key) }
    var count: Int { table.count }
    func removeAll() { table.removeAll() }
}

extension Session {
    /// What breaks the rules above, one line each (empty: none): every node in the tree links to
    /// its parent and is what the index finds under its number, and the index lists no other node.
    func linkProblems() -> [String] {
        var problems: [String] = []
        var count = 0
        func walk(_ n: Node, parent: Node?) {
            count += 1
            if n.parentRef?.node !== parent { problems.append("\(n.id) links to \(n.parentRef?.node.id ?? "no parent"), not \(parent?.id ?? "no parent")") }
            if nodes[number: n.number] !== n { problems.append("the index does not find \(n.id)") }
            if let p = n.presented { walk(p, parent: n) }
            for c in n.children { walk(c, parent: n) }
        }
        walk(root, parent: nil)
        if nodes.count != count { problems.append("the index lists \(nodes.count) nodes, the tree holds \(count)") }
        var walked: [String] = []
        forEachVisible { walked.append($0.id) }
        if walked != visible { problems.append("the visible walk reads \(walked), not \(visible)") }
        return problems
    }
}
