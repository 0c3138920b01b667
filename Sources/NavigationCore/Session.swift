import JSON
import NavGraph

/// What a client asks `navigate` to do, decoded from its params.
public struct NavigateRequest: Sendable {
    public var to: String?
    public var route: String?
    public var by: Presentation?
    public var with: JSONObject?
    public var from: String?
    public var ifVersion: Int?
    public var key: String?
    public var dryRun = false

    public init(to: String? = nil, route: String? = nil, by: Presentation? = nil, with: JSONObject? = nil,
                from: String? = nil, ifVersion: Int? = nil, key: String? = nil, dryRun: Bool = false) {
        self.to = to
        self.route = route
        self.by = by
        self.with = with
        self.from = from
        self.ifVersion = ifVersion
        self.key = key
        self.dryRun = dryRun
    }
}

/// Where a navigation goes: a coordinator of the graph (by index), and the style and setup a route
/// supplies (a navigation's own `by` and `with` win over them).
public struct Destination: Sendable {
    public let target: Int
    public let by: Presentation?
    public let with: JSONObject?

    public init(target: Int, by: Presentation? = nil, with: JSONObject? = nil) {
        self.target = target
        self.by = by
        self.with = with
    }
}

extension NavigationGraph {
    /// The destination `to` (a coordinator) or `route` (a route name) names, or the error that says
    /// what is wrong: neither or both given, an unknown or ambiguous name (with a suggestion).
    public func destination(to: String?, route routeName: String?) throws(NavError) -> Destination {
        if let routeName {
            if to != nil { throw NavError(.invalidParams, "give either \"to\" (a coordinator) or \"route\" (a route name), not both", data: ["param": "to"]) }
            guard let route = route(named: routeName) else {
                if let amb = ambiguity(of: routeName) {
                    throw NavError(.unknownTarget, "route `\(routeName)` is declared by several modules; say which: \(amb.joined(separator: ", "))", data: ["route": .string(routeName)])
                }
                let hint = suggestRoute(for: routeName).map { "; did you mean `\($0)`?" } ?? "; the routes are \(routes.map(\.name).joined(separator: ", "))"
                throw NavError(.unknownTarget, "no route `\(routeName)`\(hint)", data: ["route": .string(routeName)])
            }
            return Destination(target: route.to, by: route.by, with: route.with)
        }
        guard let name = to else {
            throw NavError(.invalidParams, "navigate needs \"to\" (a coordinator such as \"shop.Product\") or \"route\" (a route name)", data: ["param": "to"])
        }
        guard let c = coordinator(named: name) else {
            if let amb = ambiguity(of: name) {
                throw NavError(.unknownTarget, "`\(name)` is declared by several modules; say which: \(amb.joined(separator: ", "))", data: ["to": .string(name)])
            }
            let hint = suggestCoordinator(for: name).map { "; did you mean `\($0)`?" } ?? ""
            throw NavError(.unknownTarget, "`\(name)` is not a coordinator of the graph\(hint)", data: ["to": .string(name)])
        }
        return Destination(target: c.index)
    }
}

/// A navigation that passed validation and waits for its preconditions, then its commit.
public struct Plan: Sendable {
    public let target: Int
    public let by: Presentation
    public let params: JSONValue
    /// The number of the source node (its id is ``sourceId``).
    public let source: Int
    public let ifVersion: Int?
    /// Preconditions to evaluate, in order.
    public let preconditions: [Int]
    /// For a deep link (`open`): the whole stack to build, bottom first.
    public var link: [LinkStep]? = nil
    /// What few navigations carry (hints, popUpTo, then), boxed so the plan of every other one stays
    /// small to copy.
    private var extras: PlanExtras?

    /// Presentation hints for front-ends (`navigate {hints}`): opaque to navd, carried to `stackChanged`.
    public var hints: JSONValue? {
        get { extras?.hints }
        set { extras = PlanExtras(hints: newValue, popUpTo: popUpTo, then: then) }
    }
    /// `navigate {popUpTo}`: the screen to pop to (its number) and whether it goes too; the target is
    /// then placed from the screen left on top, in the same commit.
    public var popUpTo: (node: Int, inclusive: Bool)? {
        get { extras?.popUpTo }
        set { extras = PlanExtras(hints: hints, popUpTo: newValue, then: then) }
    }
    /// `navigate {then}` to a flow: where navigation continues when that flow completes.
    public var then: NavigationSpec? {
        get { extras?.then }
        set { extras = PlanExtras(hints: hints, popUpTo: popUpTo, then: newValue) }
    }

    /// The source node's id.
    public var sourceId: String { Node.id(source) }

    /// This plan with `extra` preconditions evaluated before its own (a `popUpTo`'s leave guards).
    public func withPreconditions(before extra: [Int]) -> Plan {
        var p = Plan(target: target, by: by, params: params, source: source, ifVersion: ifVersion,
                     preconditions: extra + preconditions.filter { !extra.contains($0) })
        p.link = link
        p.extras = extras
        return p
    }

    public init(target: Int, by: Presentation, params: JSONValue, source: Int, ifVersion: Int?, preconditions: [Int]) {
        self.target = target
        self.by = by
        self.params = params
        self.source = source
        self.ifVersion = ifVersion
        self.preconditions = preconditions
    }
}

/// The rarely set parts of a ``Plan`` (immutable: a plan that changes one makes a new box).
final class PlanExtras: Sendable {
    let hints: JSONValue?
    let popUpTo: (node: Int, inclusive: Bool)?
    let then: NavigationSpec?
    init(hints: JSONValue?, popUpTo: (node: Int, inclusive: Bool)?, then: NavigationSpec?) {
        self.hints = hints
        self.popUpTo = popUpTo
        self.then = then
    }
}

/// One screen of a deep link's stack.
public struct LinkStep: Sendable {
    public let coordinator: Int
    public let params: JSONValue
    public let by: Presentation
}

/// A flow that left the tree in a commit.
public struct EndedFlow: Sendable {
    public enum Status: String, Sendable { case completed, failed, cancelled }
    public let id: String
    public let coordinator: Int
    public let status: Status
    public let result: JSONValue?
    public let error: JSONValue?
}

/// Lists kept as nil while empty (see ``Commit``): the first element makes the array.
extension Optional where Wrapped: RangeReplaceableCollection {
    mutating func append(_ element: Wrapped.Element) {
        if self == nil { self = Wrapped([element]) } else { self!.append(element) }
    }

    mutating func insertFirst(_ element: Wrapped.Element) {
        if self == nil { self = Wrapped([element]) } else { self!.insert(element, at: self!.startIndex) }
    }

    mutating func append(contentsOf other: Wrapped?) {
        guard let other else { return }
        if self == nil { self = other } else { self!.append(contentsOf: other) }
    }
}

/// The changes a commit records, built only when someone will read them.
struct ChangeLog {
    let enabled: Bool
    /// Unretained: the session holds its graph, and a log lives only while its commit is made.
    private let graph: Unmanaged<NavigationGraph>
    /// The changes so far as JSON text: `[`, then each change written when it happens (a node as
    /// it is then: a later change of the same commit may change it again). nil while empty.
    private var w: JSONWriter? = nil
    /// A navigation's presentation hints, written into the next change recorded (its own).
    var hints: JSONValue? = nil

    init(enabled: Bool, _ graph: NavigationGraph) {
        self.enabled = enabled
        self.graph = Unmanaged.passUnretained(graph)
    }

    /// The list, `[…]`, or nil when nothing was recorded.
    var text: JSONText? {
        guard var w else { return nil }
        w.raw(UInt8(ascii: "]"))
        return JSONText(w.bytes)
    }

    /// Records `{"op":…,"parent":…,"index":…,"node"|"root":…,"removed":[…]}` with the fields given,
    /// in that order: push and present (parent, node), replace (parent, index, node, removed), reset
    /// (root, removed), select (parent, index), dismiss (parent, removed), pop (parent, index,
    /// removed). Inlined down to the `enabled` check; the writing is out of line.
    @inline(__always)
    mutating func record(_ op: StaticString, parent: Node? = nil, index: Int? = nil, node: Node? = nil, root: Node? = nil,
                         removed: NodeNumbers? = nil) {
        if enabled { write(op, parent: parent, index: index, node: node, root: root, removed: removed) }
    }

    @inline(never)
    private mutating func write(_ op: StaticString, parent: Node?, index: Int?, node: Node?, root: Node?, removed: NodeNumbers?) {
        if w == nil {
            w = JSONWriter(capacity: 256)
            w!.raw(UInt8(ascii: "["))
        } else {
            w!.raw(UInt8(ascii: ","))
        }
        w!.raw("{\"op\":\"")
        w!.raw(op)
        w!.raw(UInt8(ascii: "\""))
        if let parent {
            w!.raw(",\"parent\":")
            parent.writeId(into: &w!)
        }
        if let index {
            w!.raw(",\"index\":")
            w!.write(int: index)
        }
        if let node {
            w!.raw(",\"node\":")
            graph._withUnsafeGuaranteedRef { node.write(into: &w!, $0) }
        }
        if let root {
            w!.raw(",\"root\":")
            graph._withUnsafeGuaranteedRef { root.write(into: &w!, $0) }
        }
        if let removed {
            w!.raw(",\"removed\":")
            w!.write(nodeIds: removed)
        }
        if let h = hints {
            w!.raw(",\"hints\":")
            w!.write(h)
            hints = nil
        }
        w!.raw(UInt8(ascii: "}"))
    }
}

/// One committed change of a session's tree.
public struct Commit {
    public let version: Int
    /// Ordered operations that bring a copy of the tree from `version - 1` to `version`; empty when
    /// the session does not record changes (``Session/recordsChanges``). Read from ``changeText``.
    public var changes: [JSONValue] {
        guard let changeText else { return [] }
        return (try? JSONParser(maxDepth: 4096).parse(changeText.bytes))?.arrayValue ?? []
    }
    /// The node the navigation created (or selected), if any.
    public let node: Node?
    /// The numbers of the nodes that left the tree (ids: ``removed``), each subtree in pre-order.
    public let removedNumbers: NodeNumbers
    public var endedFlows: [EndedFlow] { endedList ?? [] }
    /// The changes as JSON text (a list), written as they happened: sent to subscribers as it is.
    /// nil when none were recorded. The lists below are nil when empty (as they usually are):
    /// dropping a commit then releases nothing for them (an empty array is released like any
    /// other, an absent one is not).
    public let changeText: JSONText?
    public let endedList: [EndedFlow]?

    init(version: Int, changes: JSONText?, node: Node?, removedNumbers: NodeNumbers, endedFlows: [EndedFlow]?) {
        self.version = version
        changeText = changes
        self.node = node
        self.removedNumbers = removedNumbers
        endedList = endedFlows
    }

    /// The ids of the nodes that left the tree.
    public var removed: [String] { removedNumbers.map(Node.id) }
}

/// Node numbers in order, the first kept inline: a commit usually removes one node or none, and
/// then no array is allocated.
public struct NodeNumbers: RandomAccessCollection, Sendable {
    private var first: Int = 0
    private var rest: [Int]? = nil  // nil, not empty: nothing to release
    public private(set) var count = 0

    public init() {}

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(i: Int) -> Int {
        precondition(i >= 0 && i < count, "index out of range")
        return i == 0 ? first : rest.unsafelyUnwrapped[i - 1]
    }

    public mutating func append(_ n: Int) {
        if count == 0 { first = n } else { rest.append(n) }
        count += 1
    }

    public mutating func append(contentsOf other: NodeNumbers) {
        for n in other { append(n) }
    }
}

/// The roles of the client making a request.
public struct Caller: Sendable {
    public var roles: Set<String>
    public init(roles: Set<String> = []) { self.roles = roles }
}

/// `prefix` followed by `n` in decimal (node and navigation ids), without string interpolation's
/// generic machinery: ids are made on every navigation.
public func prefixedDecimal(_ prefix: StaticString, _ n: Int) -> String {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 40) { buf in
        let p = prefix.utf8CodeUnitCount
        buf.baseAddress!.update(from: prefix.utf8Start, count: p)
        var v = n.magnitude
        var digits = 0
        repeat {
            digits += 1
            v /= 10
        } while v > 0
        var at = p + (n < 0 ? 1 : 0)
        if n < 0 { buf[p] = UInt8(ascii: "-") }
        at += digits
        v = n.magnitude
        repeat {
            at -= 1
            buf[at] = UInt8(ascii: "0") + UInt8(v % 10)
            v /= 10
        } while v > 0
        return String(decoding: UnsafeBufferPointer(rebasing: buf[0..<(p + (n < 0 ? 1 : 0) + digits)]), as: UTF8.self)
    }
}

/// The nodes of a tree by id. Ids are the ones ``Session`` makes ("n" and a number), so the index is
/// keyed by the number: hashing an integer is much cheaper than hashing a string, and every
/// navigation looks nodes up, adds some and removes others. A string that is not such an id finds
/// nothing.
///
/// Open addressing with linear probing (Fibonacci hashing: node numbers are consecutive, and a
/// multiply spreads them), at most half full, in storage of its own: keys are compared without
/// touching the nodes, and the nodes are held unretained — the tree holds every node it lists (a
/// node is in the index exactly while it is in the tree), so probing counts no references.
final class NodeIndex {
    /// Each slot's node number + 1 (0: empty), and its node.
    private var keys: UnsafeMutablePointer<Int>
    private var nodes: UnsafeMutablePointer<Unmanaged<Node>?>
    private var capacity = 16
    private var shift = 60  // 64 - log2(capacity)
    private var used = 0

    init() {
        keys = .allocate(capacity: 16)
        keys.initialize(repeating: 0, count: 16)
        nodes = .allocate(capacity: 16)
        nodes.initialize(repeating: nil, count: 16)
    }

    deinit {
        keys.deallocate()
        nodes.deallocate()
    }

    /// The number of an id made by ``Session/newId()``: "n", then digits without a leading zero.
    static func number(_ id: String) -> Int? {
        var s = id
        return s.withUTF8 { b -> Int? in
            guard b.count >= 2, b.count <= 19, b[0] == UInt8(ascii: "n"), b[1] != UInt8(ascii: "0") || b.count == 2 else { return nil }
            var n = 0
            for i in 1..<b.count {
                let d = b[i] &- UInt8(ascii: "0")
                guard d < 10 else { return nil }
                n = n * 10 + Int(d)
            }
            return n
        }
    }

    @inline(__always) private func home(_ number: Int) -> Int {
        Int(truncatingIfNeeded: (UInt64(truncatingIfNeeded: number) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    /// The slot holding `number`, or nil.
    @inline(__always)
    private func slot(of number: Int) -> Int? {
        let mask = capacity &- 1
        let key = number &+ 1
        var i = home(number)
        while keys[i] != 0 {
            if keys[i] == key { return i }
            i = (i &+ 1) & mask
        }
        return nil
    }

    subscript(id: String) -> Node? {
        guard let k = Self.number(id) else { return nil }
        return self[number: k]
    }

    subscript(number k: Int) -> Node? {
        guard k >= 0, let i = slot(of: k) else { return nil }
        return nodes[i]!._withUnsafeGuaranteedRef { $0 }
    }

    func insert(_ n: Node) {
        guard n.number >= 0 else { return }
        if (used + 1) * 2 > capacity { grow() }
        let mask = capacity &- 1
        let key = n.number &+ 1
        var i = home(n.number)
        while keys[i] != 0 {
            if keys[i] == key {
                nodes[i] = Unmanaged.passUnretained(n)
                return
            }
            i = (i &+ 1) & mask
        }
        keys[i] = key
        nodes[i] = Unmanaged.passUnretained(n)
        used += 1
    }

    func remove(_ n: Node) {
        guard n.number >= 0, var i = slot(of: n.number) else { return }
        keys[i] = 0
        nodes[i] = nil
        used -= 1
        // Move later entries of the probe run back into the gap (no tombstones).
        let mask = capacity &- 1
        var j = i
        while true {
            j = (j &+ 1) & mask
            guard keys[j] != 0 else { return }
            let h = home(keys[j] &- 1)
            let stays = i <= j ? (i < h && h <= j) : (i < h || h <= j)
            if !stays {
                keys[i] = keys[j]
                nodes[i] = nodes[j]
                keys[j] = 0
                nodes[j] = nil
                i = j
            }
        }
    }

    private func grow() {
        let oldKeys = keys, oldNodes = nodes, oldCapacity = capacity
        capacity *= 2
        shift -= 1
        keys = .allocate(capacity: capacity)
        keys.initialize(repeating: 0, count: capacity)
        nodes = .allocate(capacity: capacity)
        nodes.initialize(repeating: nil, count: capacity)
        used = 0
        for i in 0..<oldCapacity where oldKeys[i] != 0 { oldNodes[i]!._withUnsafeGuaranteedRef { insert($0) } }
        oldKeys.deallocate()
        oldNodes.deallocate()
    }

    var count: Int { used }

    func removeAll() {
        keys.update(repeating: 0, count: capacity)
        nodes.update(repeating: nil, count: capacity)
        used = 0
    }
}

/// One session: a coordinator tree, its version, its facts and its navigation keys. All commands
/// validate completely before they change anything, so a failed command leaves no trace.
public final class Session {
    public let name: String
    public let graph: NavigationGraph
    public private(set) var root: Node
    public internal(set) var version = 0
    /// Whether commits build their `changes` (the JSON subscribers apply). A server turns it off for a
    /// session nobody subscribes to; dry runs always record.
    public var recordsChanges = true
    /// Facts set with `context.set`, read by `check` preconditions.
    public var facts: [String: JSONValue] = [:]
    /// The uid of the user who opened the session (nil: navd's own, as for "main"). Only that user
    /// and admins may close it or write its facts.
    public var owner: UInt32?
    private var nextId = 0
    /// The id counter when the last `commit(_:)` began (``madeByLastCommit(_:)``).
    private var idCounterBeforeCommit = 0
    /// A copy a commit is tried on first (it tries no further copy).
    var isTrial = false
    let nodes = NodeIndex()
    /// Leaf nodes that left the tree with no other reference to them, made new nodes again by
    /// ``newNode(_:coordinator:params:)`` (a screen pushed and dismissed over and over allocates
    /// nothing); a few at most.
    private var spare: [Node] = []
    private static let maxSpare = 8

    /// Keeps `node` for reuse when it left the tree as a leaf and nothing else refers to it. Its
    /// setup model is kept too: the next navigation may build its own in the same storage
    /// (``takeSpareSetupStorage()``).
    private func recycle(_ node: inout Node) {
        guard spare.count < Session.maxSpare, node.children.isEmpty, node.presented == nil,
              isKnownUniquelyReferenced(&node) else { return }
        spare.append(node)
    }

    /// The members storage of the setup model of the node this session will make next, taken
    /// from it (empty when there is none): build the next setup model in it and, when nothing
    /// else holds it, no buffer is allocated for it nor the old one freed. Taking it changes
    /// nothing visible: a spare node is not in the tree.
    public func takeSpareSetupStorage() -> [JSONObject.Member] {
        guard let s = spare.last, case .object(let o) = s.params else { return [] }
        s.params = .null  // `o` now holds the members alone
        return o.members
    }

    /// Replies of keyed navigations (idempotency): the newest ``maxKeys``. A result is kept as the
    /// JSON text first sent (one array: cheap to keep, to send again and to forget).
    public private(set) var keyed: [String: Result<JSONText, NavError>] = [:]
    /// The keys of `keyed` in a ring, oldest at `oldestKey` once it is full: the oldest is
    /// overwritten, so remembering a key costs the same however many are kept.
    private var keyRing: [String] = []
    private var oldestKey = 0
    public static let maxKeys = 4096

    public init(name: String, graph: NavigationGraph) {
        self.name = name
        self.graph = graph
        root = Node(number: 0, kind: .stack)  // replaced below
        root = makeRoot()
    }

    private init(copying s: Session) {
        recordsChanges = true
        name = s.name
        graph = s.graph
        root = s.root.copy()
        version = s.version
        facts = s.facts
        nextId = s.nextId
        root.forEach { nodes.insert($0) }
    }

    public var nodeCount: Int { nodes.count }

    func replaceState(root newRoot: Node, version v: Int, nextId n: Int, facts f: [String: JSONValue]) {
        nodes.removeAll()
        root = newRoot
        version = v
        nextId = n
        facts = f
        root.forEach { nodes.insert($0) }
    }
    public func node(_ id: String) -> Node? { nodes[id] }
    public func node(number: Int) -> Node? { nodes[number: number] }

    // MARK: Tree building

    /// A new node with the next id, entered in the index.
    private func newNode(_ kind: Node.Kind, coordinator: Int = -1, params: JSONValue = .object([:])) -> Node {
        nextId += 1
        let n: Node
        if let s = spare.popLast() {
            s.reuse(number: nextId, kind: kind, coordinator: coordinator, params: params)
            n = s
        } else {
            n = Node(number: nextId, kind: kind, coordinator: coordinator, params: params)
        }
        nodes.insert(n)
        return n
    }

    func adopt(_ child: Node, into parent: Node) {
        child.parentRef = Unmanaged.passUnretained(parent)
        parent.children.append(child)
    }

    /// A screen, or a flow with its start step.
    func makeTarget(_ coordinator: Int, params: JSONValue) -> Node {
        if graph.coordinators[coordinator].isTabContainer {
            // A tab container: a tabs node with a stack per tab, the first selected.
            let t = newNode(.tabs, coordinator: coordinator, params: params)
            for c in graph.coordinators[coordinator].tabs { adopt(makeStack(holding: makeTarget(c, params: .object([:]))), into: t) }
            return t
        }
        let start = graph.coordinators[coordinator].flowStart
        if start >= 0 {
            let flow = newNode(.flow, coordinator: coordinator, params: params)
            adopt(newNode(.screen, coordinator: start), into: flow)
            return flow
        }
        return newNode(.screen, coordinator: coordinator, params: params)
    }

    func makeStack(holding first: Node) -> Node {
        let s = newNode(.stack)
        adopt(first, into: s)
        return s
    }

    func makeRoot() -> Node {
        switch graph.root {
        case .stack(let c):
            return makeStack(holding: makeTarget(c, params: .object([:])))
        case .tabs(let tabs):
            let t = newNode(.tabs)
            for c in tabs { adopt(makeStack(holding: makeTarget(c, params: .object([:]))), into: t) }
            return t
        }
    }

    // MARK: Reading

    /// Node ids from the root to the screen the user sees.
    public var visible: [String] {
        var path: [String] = []
        path.reserveCapacity(8)
        forEachVisible { path.append($0.id) }
        return path
    }

    /// The numbers of ``visible``'s nodes (their ids are "n" and the number): one array, no strings.
    public var visibleNumbers: [Int] {
        var path: [Int] = []
        path.reserveCapacity(8)
        forEachVisible { path.append($0.number) }
        return path
    }

    /// Calls `body` with each node from the root to the screen the user sees (``visible``'s nodes);
    /// `body` must not change the tree.
    @inline(__always)
    public func forEachVisible(_ body: (Node) -> Void) {
        // The tree holds every node for the whole walk: no retain and release per step.
        var cur = Unmanaged.passUnretained(root)
        while true {
            guard let next = cur._withUnsafeGuaranteedRef({ n -> Unmanaged<Node>? in
                body(n)
                return n.visibleChild
            }) else { return }
            cur = next
        }
    }

    /// Writes ``visible`` as a JSON array of ids, from the tree (no array, no strings, no reference counting).
    public func writeVisible(into w: inout JSONWriter) {
        w.raw(UInt8(ascii: "["))
        var cur = Unmanaged.passUnretained(root)
        while true {
            let next = cur._withUnsafeGuaranteedRef { n -> Unmanaged<Node>? in
                let next = n.visibleChild
                w.reserving(25) { o in  // a node id (at most 23 bytes), then "," or "]"
                    o.nodeId(n.number)
                    o.raw(next == nil ? UInt8(ascii: "]") : UInt8(ascii: ","))
                }
                return next
            }
            guard let next else { break }
            cur = next
        }
    }

    /// The screen the user sees.
    public var visibleTop: Node? { visibleTopRef?.takeUnretainedValue() }

    /// The screen the user sees, unretained (valid until the tree changes): the walk and its result
    /// cost no reference counting, where ``visibleTop``'s result is retained (atomically).
    @inline(__always)
    var visibleTopRef: Unmanaged<Node>? {
        var n = Unmanaged.passUnretained(root)
        var top: Unmanaged<Node>? = nil
        while true {
            let (isScreen, next) = n._withUnsafeGuaranteedRef { ($0.kind == .screen, $0.visibleChild) }
            if isScreen { top = n }
            guard let next else { return top }
            n = next
        }
    }

    /// `{session, version, root, visible}`.
    public func snapshot() -> JSONObject {
        ["session": .string(name), "version": .int(version), "root": root.json(graph), "visible": .array(visible.map(JSONValue.string))]
    }

    /// Writes what ``snapshot()`` makes, byte for byte, without making it.
    public func writeSnapshot(into w: inout JSONWriter) {
        w.raw("{\"session\":")
        w.write(string: name)
        w.raw(",\"version\":")
        w.write(int: version)
        w.raw(",\"root\":")
        root.write(into: &w, graph)
        w.raw(",\"visible\":")
        writeVisible(into: &w)
        w.raw(UInt8(ascii: "}"))
    }

    // MARK: navigate

    /// Validates a navigation completely without changing anything.
    public func plan(_ r: NavigateRequest, caller: Caller) throws(NavError) -> Plan {
        try plan(graph.destination(to: r.to, route: r.route), by: r.by, with: r.with, from: r.from, ifVersion: r.ifVersion, caller: caller)
    }

    /// Validates a navigation to `destination` completely without changing anything: `by` and `with`
    /// as given (they win over a route's), `from` a node id (default: the visible top).
    /// `afterFlow`: the navigation continues a completed flow (its `then`): the flow's `opens` and
    /// its declared `then` decide what it may open, not the source's. `declaredTarget`: the graph
    /// itself names this target (a precondition's declared `redirect`), so `opens` is not asked.
    public func plan(_ destination: Destination, by: Presentation?, with given: JSONObject?, from: String?, ifVersion: Int?,
                     caller: Caller, afterFlow: Int? = nil, declaredTarget: Bool = false) throws(NavError) -> Plan {
        let target = graph.coordinators[destination.target]
        var with: JSONObject
        if let routeWith = destination.with {
            with = routeWith
            if let given { for (k, v) in given { with[k] = v } }
        } else {
            with = given ?? JSONObject()
        }
        let style = by ?? destination.by ?? .push
        let r = (from: from, ifVersion: ifVersion)

        // Source.
        let source: Node
        if let from = r.from {
            guard let n = nodes[from] else {
                throw NavError(.unknownNode, "no node `\(from)` in session `\(name)`; `tree` lists the current nodes", data: ["node": .string(from)])
            }
            guard n.kind == .screen else {
                throw NavError(.unknownNode, "node `\(from)` is a \(n.kind.rawValue); \"from\" must name a screen", data: ["node": .string(from)])
            }
            source = n
        } else {
            guard let top = visibleTopRef else { throw NavError(.unknownNode, "session `\(name)` shows no screen to navigate from") }
            source = top._withUnsafeGuaranteedRef { $0 }
        }
        if let v = r.ifVersion, v != version {
            throw NavError(.conflict, "the tree is at version \(version), not \(v) as \"ifVersion\" requires; fetch `tree` and decide again",
                           data: ["version": .int(version), "ifVersion": .int(v)])
        }

        // Style, abilities, access.
        let sourceCoordinator = graph.coordinators[source.coordinator]
        guard target.allows(style) else {
            let allowed = Presentation.allCases.filter { target.allows($0) }.map(\.rawValue).joined(separator: ", ")
            throw NavError(.notAllowed, "`\(target.name)` cannot be shown by \(style.rawValue); its presentations are \(allowed)",
                           data: ["from": .string(source.id), "to": .string(target.name), "by": .string(style.rawValue)])
        }
        let enclosingFlow: Node? = source.parentRef.flatMap { p in p._withUnsafeGuaranteedRef { $0.kind == .flow ? $0 : nil } }
        let enclosingSteps = enclosingFlow.flatMap { graph.coordinators[$0.coordinator].flow?.steps }
        let isStepOfEnclosingFlow = enclosingSteps?.contains(target.index) ?? false
        // Steps follow `opens` like every screen; a step that declares none opens the step after it.
        let isNextStep = sourceCoordinator.opens.isEmpty && enclosingSteps.map { steps in
            steps.firstIndex(of: source.coordinator).map { $0 + 1 < steps.count && steps[$0 + 1] == target.index } ?? false
        } ?? false
        if declaredTarget {
            // The graph declared this navigation; presentations, access and setup still apply.
        } else if let flow = afterFlow.map({ graph.coordinators[$0] }) {
            if style.needsAbility && !flow.mayContinue(to: target.index) {
                let opens = flow.opens.map { graph.coordinators[$0].name }
                throw NavError(.notAllowed, "flow `\(flow.name)` cannot continue to `\(target.name)`: a flow continues to its declared `then` or to what its opens list (\(opens.isEmpty ? "empty" : opens.joined(separator: ", ")))",
                               data: ["from": .string(source.id), "to": .string(target.name), "by": .string(style.rawValue)])
            }
        } else if style.needsAbility && !sourceCoordinator.canOpen(target.index) && !isNextStep {
            let opens = sourceCoordinator.opens.map { graph.coordinators[$0].name }
            throw NavError(.notAllowed, "`\(sourceCoordinator.name)` cannot open `\(target.name)`: its opens are \(opens.isEmpty ? "empty" : opens.joined(separator: ", ")) (select and root are always available)",
                           data: ["from": .string(source.id), "to": .string(target.name), "by": .string(style.rawValue)])
        }
        switch style {
        case .present:
            if source.presented != nil {
                throw NavError(.notAllowed, "`\(source.id)` (\(sourceCoordinator.name)) is already presenting; dismiss its modal first or present from the modal's top",
                               data: ["from": .string(source.id)])
            }
        case .replace:
            if let f = enclosingFlow, !isStepOfEnclosingFlow {
                throw NavError(.notAllowed, "`\(target.name)` cannot replace a step of flow `\(graph.coordinators[f.coordinator].name)`: it is not one of its steps",
                               data: ["from": .string(source.id)])
            }
        case .select:
            guard nestedTab(of: target.index) != nil || declaredTab(target.index) != nil else {
                var tabs: [String] = []
                if case .tabs(let declared) = graph.root { tabs = declared.map { graph.coordinators[$0].name } }
                throw NavError(.notAllowed, tabs.isEmpty ? "select needs tabs, and the graph's root is a stack"
                                                        : "`\(target.name)` is not one of the tabs; the graph declares the tabs \(tabs.joined(separator: ", "))",
                               data: ["to": .string(target.name), "by": "select"])
            }
        default: break
        }
        if !target.access.isEmpty && caller.roles.isDisjoint(with: target.access) {
            let held = caller.roles.isEmpty ? "none" : caller.roles.sorted().joined(separator: ", ")
            throw NavError(.accessDenied, "`\(target.name)` admits only clients with role \(target.access.joined(separator: " or ")); this client holds \(held). Roles come from the policy file (--policy), by uid or by token (hello {token})",
                           data: ["to": .string(target.name), "roles": .array(target.access.map(JSONValue.string))])
        }

        // Setup model: mediation, then the schema.
        if style == .select {
            return Plan(target: target.index, by: style, params: .object(with), source: source.number, ifVersion: r.ifVersion, preconditions: target.preconditions)
        }
        mediate(target, from: source.params, into: &with)
        let params = JSONValue.object(with)
        if let setup = target.setup, let violation = setup.validate(params) {
            throw NavError(.invalidSetup, "\"with\" does not match the setup of `\(target.name)`: \(violation.message)",
                           data: ["pointer": .string(violation.pointer), "rule": .string(violation.rule), "to": .string(target.name)])
        }
        return Plan(target: target.index, by: style, params: params, source: source.number, ifVersion: r.ifVersion, preconditions: target.preconditions)
    }

    /// Mediation: the fields of `target`'s setup that `with` leaves unset, copied from the source's params.
    @inline(__always)
    func mediate(_ target: Coordinator, from source: JSONValue, into with: inout JSONObject) {
        for (field, path) in target.mediation where with[field] == nil {
            var v: JSONValue? = source
            for p in path { v = v?[p] }
            if let v { with[field] = v }
        }
    }

    /// The innermost tab container on the visible path that declares `coordinator` as a tab, and
    /// that tab's index.
    func nestedTab(of coordinator: Int) -> (Node, Int)? {
        var found: (Node, Int)?
        forEachVisible { n in
            if n.kind == .tabs, n.coordinator >= 0, let i = graph.coordinators[n.coordinator].tabs.firstIndex(of: coordinator), i < n.children.count {
                found = (n, i)
            }
        }
        return found
    }

    /// The index of the tab the graph's root declares for `coordinator`, if it declares tabs.
    func declaredTab(_ coordinator: Int) -> Int? {
        guard case .tabs(let tabs) = graph.root else { return nil }
        return tabs.firstIndex(of: coordinator)
    }

    /// The tab of the live tab shell that the graph declares for `coordinator`: tabs keep the identity
    /// the graph gave them (by index), whatever their stacks hold now.
    func tabIndex(of coordinator: Int) -> Int? {
        guard root.kind == .tabs, let i = declaredTab(coordinator), i < root.children.count else { return nil }
        return i
    }

    /// Applies a validated plan: the source must still exist and `ifVersion` must still hold.
    public func commit(_ plan: Plan) throws(NavError) -> Commit {
        idCounterBeforeCommit = nextId
        if let steps = plan.link { return try commitLink(steps, ifVersion: plan.ifVersion) }
        guard let origin = nodes[number: plan.source] else {
            throw NavError(.conflict, "the source node `\(plan.sourceId)` is gone (dismissed while the navigation was pending)", data: ["node": .string(plan.sourceId)])
        }
        if let v = plan.ifVersion, v != version {
            throw NavError(.conflict, "the tree is at version \(version), not \(v) as \"ifVersion\" requires; fetch `tree` and decide again",
                           data: ["version": .int(version), "ifVersion": .int(v)])
        }
        var changes = ChangeLog(enabled: recordsChanges, graph)
        var removed = Removal()
        var source = origin
        if let pop = plan.popUpTo {
            // Presenting from what the pop leaves can still be refused: try it on a copy first, so a
            // refused navigation changes nothing.
            if plan.by == .present && !isTrial {
                let trial = Session(copying: self)
                trial.isTrial = true
                _ = try trial.commit(plan)
            }
            source = try popUp(to: pop.node, inclusive: pop.inclusive, changes: &changes, removed: &removed)
        }
        if changes.enabled, let h = plan.hints { changes.hints = h }
        let created: Node
        switch plan.by {
        case .push:
            // Unretained walk up (reading `parent` would retain, atomically).
            var container = source.parentRef!
            if container._withUnsafeGuaranteedRef({ $0.kind == .flow && !(graph.coordinators[$0.coordinator].flow?.steps.contains(plan.target) ?? false) }) {
                container = container._withUnsafeGuaranteedRef { $0.parentRef! }
            }
            created = makeTarget(plan.target, params: plan.params)
            container._withUnsafeGuaranteedRef { container in
                adopt(created, into: container)
                changes.record("push", parent: container, node: created)
            }
        case .present:
            if source.presented != nil {
                throw NavError(.notAllowed, "`\(source.id)` is already presenting; dismiss its modal first", data: ["from": .string(source.id)])
            }
            created = makeTarget(plan.target, params: plan.params)
            let stack = makeStack(holding: created)
            stack.parent = source
            source.presented = stack
            changes.record("present", parent: source, node: stack)
        case .replace:
            let container = source.parent!
            let index = source.indexInParent!
            for n in container.children[index...] { forget(n, into: &removed) }
            container.children.removeSubrange(index...)
            created = makeTarget(plan.target, params: plan.params)
            adopt(created, into: container)
            changes.record("replace", parent: container, index: index, node: created, removed: removed.numbers)
        case .root:
            forget(root, into: &removed)
            created = makeTarget(plan.target, params: plan.params)
            root = makeStack(holding: created)
            changes.record("reset", root: root, removed: removed.numbers)
        case .select:
            if let (shell, i) = nestedTab(of: plan.target) {
                // A tab of a tab container on the visible path (the innermost that declares it).
                shell.selected = i
                created = shell.children[i].children[0]
                changes.record("select", parent: shell, index: i)
                break
            }
            guard let tab = declaredTab(plan.target) else {
                throw NavError(.notAllowed, "`\(graph.coordinators[plan.target].name)` is not one of the tabs the graph declares")
            }
            if tabIndex(of: plan.target) == nil {
                // The tab shell was replaced (a `root` navigation): selecting a tab brings it back, fresh.
                forget(root, into: &removed)
                root = makeRoot()
                changes.record("reset", root: root, removed: removed.numbers)
            }
            let i = tab
            root.selected = i
            created = root.children[i].children[0]
            changes.record("select", parent: root, index: i)
        }
        version += 1
        return Commit(version: version, changes: changes.text, node: created, removedNumbers: removed.numbers, endedFlows: removed.ended)
    }

    /// The pop of `navigate {popUpTo}`: removes what is above screen `number` (and it too when
    /// `inclusive`), recording the change; answers the screen now on top, from which the navigation
    /// is placed. Nothing above it is no pop.
    func popUp(to number: Int, inclusive: Bool, changes: inout ChangeLog, removed: inout Removal) throws(NavError) -> Node {
        guard let match = nodes[number: number] else {
            throw NavError(.conflict, "the popUpTo screen `\(Node.id(number))` is gone (dismissed while the navigation was pending)",
                           data: ["node": .string(Node.id(number))])
        }
        if let going = removalAbove(match, inclusive: inclusive) {
            try detach(going, flowNode: nil, changes: &changes, removed: &removed)
        }
        guard let top = visibleTop else { throw NavError(.unknownNode, "no screen is left on top after popUpTo") }
        return top
    }

    /// Runs `plan` then `commit` on a copy: what would happen, with nothing changed.
    public func dryRun(_ r: NavigateRequest, caller: Caller) throws(NavError) -> (plan: Plan, commit: Commit, visible: [String]) {
        let p = try plan(r, caller: caller)
        let (c, visible) = try dryRun(p)
        return (p, c, visible)
    }

    /// Commits a validated plan on a copy: the commit and visible path it would give, with nothing changed.
    public func dryRun(_ plan: Plan) throws(NavError) -> (commit: Commit, visible: [String]) {
        let copy = Session(copying: self)
        let c = try copy.commit(plan)
        return (c, copy.visible)
    }

    /// Commits `plan` on a copy: the commit and visible path it would give (nil if it would fail).
    public func dryRunCommit(_ plan: Plan) -> (Commit?, [String]) {
        let copy = Session(copying: self)
        guard let c = try? copy.commit(plan) else { return (nil, visible) }
        return (c, copy.visible)
    }

    /// Nodes leaving the tree in one commit: their numbers (each subtree in pre-order) and the flows
    /// among them, which end.
    struct Removal {
        var numbers = NodeNumbers()
        var ended: [EndedFlow]? = nil  // nil while empty (see ``Commit``)

        mutating func append(_ other: Removal) {
            numbers.append(contentsOf: other.numbers)
            ended.append(contentsOf: other.ended)
        }
    }

    /// Drops `n` and everything below it from the index (pre-order: the node, its children, what it
    /// presents), recording them in `r`; flows among them end as cancelled, except `except` (a flow
    /// completing, which ends with its own status). Nodes that left the tree have no parent.
    func forget(_ n: Node, into r: inout Removal, except: Node? = nil) {
        r.numbers.append(n.number)
        nodes.remove(n)
        n.parentRef = nil
        if n.kind == .flow && n !== except {
            r.ended.append(EndedFlow(id: n.id, coordinator: n.coordinator, status: .cancelled, result: nil, error: nil))
        }
        for c in n.children { forget(c, into: &r, except: except) }
        if let p = n.presented { forget(p, into: &r, except: except) }
    }

    // MARK: dismiss

    /// Removes `nodeId` (default: the visible top) and everything above it in its stack.
    public func dismiss(_ nodeId: String?) throws(NavError) -> Commit {
        var node = try dismissTarget(nodeId)
        let commit = try remove(node, status: .cancelled, result: nil, error: nil, flowNode: nil)
        recycle(&node)
        return commit
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
        return top._withUnsafeGuaranteedRef { $0 }
    }

    /// Removes `node` following the dismiss rules; `flowNode` is the flow completing, if any.
    func remove(_ node: Node, status: EndedFlow.Status, result: JSONValue?, error: JSONValue?, flowNode: Node?) throws(NavError) -> Commit {
        var changes = ChangeLog(enabled: recordsChanges, graph)
        var removed = Removal()
        try detach(node, flowNode: flowNode, changes: &changes, removed: &removed)
        if let f = flowNode {
            removed.ended.insertFirst(EndedFlow(id: f.id, coordinator: f.coordinator, status: status, result: result, error: error))
        }
        version += 1
        return Commit(version: version, changes: changes.text, node: nil, removedNumbers: removed.numbers, endedFlows: removed.ended)
    }

    /// What removing `node` by the dismiss rules takes out of the tree: a presented stack (from its
    /// owner), or the children of a stack or flow from an index on. Checks only; changes nothing.
    /// Unretained (as the tree walks are): valid while the tree is unchanged, which it is from the
    /// check to the change.
    enum Detachment {
        case modal(owner: Unmanaged<Node>, stack: Unmanaged<Node>)
        case pop(container: Unmanaged<Node>, index: Int)
    }

    func detachment(of node: Node) throws(NavError) -> Detachment {
        switch node.kind {
        case .tabs where node.coordinator < 0:
            throw NavError(.unknownNode, "nothing to dismiss: `\(node.id)` is the tab bar", data: ["node": .string(node.id)])
        case .stack:
            if let shell = node.parent, shell.kind == .tabs, shell.coordinator >= 0 {
                // A tab of a tab container: dismissing it dismisses the container.
                return try detachment(of: shell)
            }
            guard let owner = node.parentRef, owner._withUnsafeGuaranteedRef({ $0.kind == .screen || $0.kind == .flow }) else {
                throw NavError(.unknownNode, "nothing to dismiss: `\(node.id)` is \(node.parent == nil ? "the root stack" : "a tab's stack")", data: ["node": .string(node.id)])
            }
            return .modal(owner: owner, stack: Unmanaged.passUnretained(node))
        case .screen, .flow, .tabs:
            let container = node.parentRef!._withUnsafeGuaranteedRef { $0 }
            let index = node.indexInParent!
            if container.kind == .flow && index == 0 {
                // Dismissing a flow's first step abandons the flow.
                return try detachment(of: container)
            }
            if index == 0, let shell = container.parent, shell.kind == .tabs, shell.coordinator >= 0 {
                // The first screen of a tab of a tab container: the container goes.
                return try detachment(of: shell)
            }
            if index == 0 {
                guard let owner = container.parentRef, owner._withUnsafeGuaranteedRef({ $0.kind == .screen || $0.kind == .flow }) else {
                    let place = container.parent == nil ? "the root stack" : "a tab"
                    let what = node.kind == .flow
                        ? "flow `\(node.id)` (\(graph.coordinators[node.coordinator].name)) is the first node of \(place) and cannot leave the tree (dismissing its first step would abandon it)"
                        : "`\(node.id)` (\(graph.coordinators[node.coordinator].name)) is the first screen of \(place)"
                    throw NavError(.unknownNode, "nothing to dismiss: \(what); navigate with by: root or select instead",
                                   data: ["node": .string(node.id)])
                }
                return .modal(owner: owner, stack: Unmanaged.passUnretained(container))
            }
            return .pop(container: Unmanaged.passUnretained(container), index: index)
        }
    }

    /// Takes `node` and what is above it out of the tree by the dismiss rules, recording the change;
    /// the caller commits.
    func detach(_ node: Node, flowNode: Node?, changes: inout ChangeLog, removed: inout Removal) throws(NavError) {
        switch try detachment(of: node) {
        case .modal(let owner, let stack):
            owner._withUnsafeGuaranteedRef { owner in
                stack._withUnsafeGuaranteedRef { forget($0, into: &removed, except: flowNode) }
                owner.presented = nil
                changes.record("dismiss", parent: owner, removed: removed.numbers)
            }
        case .pop(let container, let index):
            container._withUnsafeGuaranteedRef { container in
                for n in container.children[index...] { forget(n, into: &removed, except: flowNode) }
                if index == container.children.count - 1 { container.children.removeLast() } else { container.children.removeSubrange(index...) }
                changes.record("pop", parent: container, index: index, removed: removed.numbers)
            }
        }
    }

    /// The `leave:` guards of what a dismiss would remove (`dismiss(_:)`, or with `to`,
    /// `dismiss(to:inclusive:)`): their preconditions, the top screen's first, and the topmost guarded
    /// node. Changes nothing; throws what the dismiss would.
    public func leaveGuards(node nodeId: String?, to: String?, inclusive: Bool) throws(NavError) -> (preconditions: [Int], guarded: Node?) {
        // The usual dismiss (the visible top, a screen above others in its stack, presenting nothing)
        // removes that screen alone: only its own guards count. Read without retaining anything.
        if nodeId == nil && to == nil, let top = visibleTopRef {
            let alone = top._withUnsafeGuaranteedRef { n -> Bool in
                guard n.presented == nil, let c = n.parentRef else { return false }
                return c._withUnsafeGuaranteedRef { $0.kind == .stack && $0.children.count > 1 && $0.children.last === n }
            }
            if alone {
                let coordinator = top._withUnsafeGuaranteedRef { $0.coordinator }
                if !graph.leaveGuarded[coordinator] { return ([], nil) }
            }
        }
        let target: Node
        if let to { target = try popRemovalTarget(to, inclusive: inclusive) } else { target = try dismissTarget(nodeId) }
        var preconditions: [Int] = []
        var guarded: Node?
        switch try detachment(of: target) {
        case .modal(_, let stack): stack._withUnsafeGuaranteedRef { collectLeaveGuards($0, &preconditions, &guarded) }
        case .pop(let container, let index):
            container._withUnsafeGuaranteedRef { container in
                var i = container.children.count
                while i > index {
                    i -= 1
                    collectLeaveGuards(container.children[i], &preconditions, &guarded)
                }
            }
        }
        return (preconditions, guarded)
    }

    /// The guards of `n` and what is above it, top first.
    private func collectLeaveGuards(_ n: Node, _ preconditions: inout [Int], _ guarded: inout Node?) {
        if let p = n.presented { collectLeaveGuards(p, &preconditions, &guarded) }
        var i = n.children.count
        while i > 0 {
            i -= 1
            collectLeaveGuards(n.children[i], &preconditions, &guarded)
        }
        guard n.kind == .screen || n.kind == .flow || (n.kind == .tabs && n.coordinator >= 0), graph.leaveGuarded[n.coordinator] else { return }
        for p in graph.coordinators[n.coordinator].leave where !preconditions.contains(p) { preconditions.append(p) }
        if guarded == nil { guarded = n }
    }

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
        if flow.indexInParent == 0, let stack = flow.parent, stack.parent == nil || stack.parent?.kind == .tabs {
            throw NavError(.notAllowed, "flow `\(flow.id)` is the first node of \(stack.parent == nil ? "the root stack" : "a tab") and cannot leave the tree; navigate with by: root instead",
                           data: ["flow": .string(flow.id)])
        }
        return try remove(flow, status: status, result: result, error: error, flowNode: flow)
    }

    // MARK: keys

    /// Takes over `other`'s remembered keys, oldest first (a session rebuilt for a new graph keeps
    /// answering retries of navigations made before the reload).
    public func adoptKeys(of other: Session) {
        for k in other.keyRing[other.oldestKey...] + other.keyRing[..<other.oldestKey] {
            if let r = other.keyed[k] { remember(key: k, r) }
        }
    }

    public func remember(key: String, _ reply: Result<JSONText, NavError>) {
        guard keyed.updateValue(reply, forKey: key) == nil else { return }  // a key again: its reply replaced
        if keyRing.count < Session.maxKeys {
            keyRing.append(key)
        } else {
            keyed[keyRing[oldestKey]] = nil
            keyRing[oldestKey] = key
            oldestKey = (oldestKey + 1) % Session.maxKeys
        }
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
        guard let top = visibleTop else { throw NavError(.conflict, "session `\(name)` shows no screen to present the recovery flow over") }
        return try commit(Plan(target: flow, by: .present, params: .object([:]), source: top.number, ifVersion: nil, preconditions: []))
    }

    /// Evaluates a `check` precondition against the session's facts.
    public func evaluate(fact: String, _ test: Precondition.Check) -> (passed: Bool, reason: String) {
        let v = facts[fact]
        switch test {
        case .equals(let want):
            let ok = v.map { factEqual($0, want) } ?? false
            return (ok, ok ? "" : "fact `\(fact)` is \(v.map { JSONWriter.string($0) } ?? "not set"), it must be \(JSONWriter.string(want))")
        case .notEquals(let avoid):
            let ok = !(v.map { factEqual($0, avoid) } ?? false)
            return (ok, ok ? "" : "fact `\(fact)` is \(JSONWriter.string(avoid)), it must not be")
        case .exists(let want):
            let ok = (v != nil) == want
            return (ok, ok ? "" : want ? "fact `\(fact)` is not set" : "fact `\(fact)` is set, it must not be")
        }
    }
}

private func factEqual(_ a: JSONValue, _ b: JSONValue) -> Bool {
    if let x = a.doubleValue, let y = b.doubleValue { return x == y }
    return a == b
}

// MARK: - Deep links

extension Session {
    /// Matches `url` against the graph's links and validates the whole stack it names.
    public func planLink(_ url: String, caller: Caller, ifVersion: Int? = nil) throws(NavError) -> Plan {
        // Read as bytes: the delimiters are ASCII, so every slice cut at one is whole UTF-8 (and
        // the Character-wise searches and splits cost tens of thousands of instructions a link).
        let u = Array(url.utf8)
        let slash = UInt8(ascii: "/")
        var lo = 0, hi = u.count
        var hostOnly = false  // `shop://app`: the path is "/"
        if let afterScheme = endOfScheme(u) {
            if let s = u[afterScheme...].firstIndex(of: slash) { lo = s } else { hostOnly = true }
        }
        if hostOnly { lo = hi }
        if let hash = u[lo..<hi].firstIndex(of: UInt8(ascii: "#")) { hi = hash }
        let q = u[lo..<hi].firstIndex(of: UInt8(ascii: "?"))
        let pathEnd = q ?? hi
        guard hostOnly || (lo < pathEnd && u[lo] == slash) else {
            throw NavError(.noMatchingLink, "`\(url)` is not a URL path: write it as /product/42 or shop://app/product/42", data: ["url": .string(url)])
        }
        var segments: [Substring] = []
        for seg in u[lo..<pathEnd].split(separator: slash, omittingEmptySubsequences: true) {
            guard let decoded = percentDecode(seg) else {
                throw NavError(.noMatchingLink, "`\(url)` has a malformed percent-escape in `\(String(decoding: seg, as: UTF8.self))`", data: ["url": .string(url)])
            }
            segments.append(Substring(decoded))
        }
        var query: [String: String] = [:]
        for item in q.map({ u[($0 + 1)..<hi].split(separator: UInt8(ascii: "&")) }) ?? [] {
            let kv = item.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let k = percentDecode(kv[0]), let v = percentDecode(kv.count > 1 ? kv[1] : []) else {
                throw NavError(.noMatchingLink, "`\(url)` has a malformed percent-escape in its query", data: ["url": .string(url)])
            }
            query[k] = v
        }
        for link in graph.links {
            guard var params = link.match(pathSegments: segments) else { continue }
            for (key, p) in link.query { if let v = query[key] { params[p] = v } }
            // Query values the pattern does not declare go to the target's setup when it has that field
            // (`/product/42?ref=mail` fills Product's `ref`); any others (`utm_source`…) are ignored.
            var extra: [(String, String)] = []
            for (key, v) in query where !link.query.contains(where: { $0.key == key }) { extra.append((key, v)) }
            return try planLinkStack(link, params: params, extraQuery: extra.sorted { $0.0 < $1.0 }, url: url, caller: caller, ifVersion: ifVersion)
        }
        let patterns = graph.links.map(\.pattern)
        throw NavError(.noMatchingLink, "`\(url)` matches no link of the graph; the patterns are \(patterns.isEmpty ? "none" : patterns.joined(separator: ", "))",
                       data: ["url": .string(url)])
    }

    private func planLinkStack(_ link: Link, params: [String: String], extraQuery: [(String, String)], url: String, caller: Caller,
                               ifVersion: Int?) throws(NavError) -> Plan {
        if let v = ifVersion, v != version {
            throw NavError(.conflict, "the tree is at version \(version), not \(v) as \"ifVersion\" requires", data: ["version": .int(version)])
        }
        var steps: [LinkStep] = []
        var preconditions: [Int] = []
        for (i, entry) in link.entries.enumerated() {
            let c = graph.coordinators[entry.coordinator]
            var with = JSONObject()
            for (field, v) in entry.with {
                if case .string(let s) = v, s.hasPrefix(":") {
                    guard let value = params[String(s.dropFirst())] else { continue }  // an absent query parameter
                    with.append(field, c.setup?.coerce(value, forProperty: field) ?? .string(value))
                } else if case .string(let s) = v {
                    with.append(field, c.setup?.coerce(s, forProperty: field) ?? v)  // a constant written as text, like the URL's values
                } else {
                    with.append(field, v)
                }
            }
            if i == link.entries.count - 1, let setup = c.setup {
                for (key, value) in extraQuery where with[key] == nil && setup.declares(key) {
                    with.append(key, setup.coerce(value, forProperty: key))
                }
            }
            try appendStep(c, with: with, by: entry.by, to: &steps, preconditions: &preconditions, caller: caller,
                           origin: "link `\(link.pattern)`", data: ["url": .string(url)])
        }
        var plan = Plan(target: steps.last!.coordinator, by: .push, params: steps.last!.params, source: visibleTop?.number ?? root.number,
                        ifVersion: ifVersion, preconditions: preconditions)
        plan.link = steps
        return plan
    }

    /// Validates one screen of a stack built at once (a deep link's, a `reset`'s) and appends it:
    /// mediation from the screen below, its presentation, access and setup; its preconditions join
    /// the plan's. `origin` names what asked for it in messages.
    func appendStep(_ c: Coordinator, with given: JSONObject, by asked: Presentation?, to steps: inout [LinkStep],
                    preconditions: inout [Int], caller: Caller, origin: String, data: JSONObject) throws(NavError) {
        var with = given
        // Mediation, as in `navigate`: fields left unset come from the screen below.
        if let below = steps.last { mediate(c, from: below.params, into: &with) }
        let by = steps.isEmpty ? Presentation.push : (asked ?? .push)
        if !steps.isEmpty && !c.allows(by) {
            throw NavError(.notAllowed, "\(origin) shows `\(c.name)` by \(by.rawValue), which its presentations do not allow", data: data)
        }
        if let below = steps.last, !graph.coordinators.stackStepAllowed(from: below.coordinator, to: c.index) {
            var d = data
            d["to"] = .string(c.name)
            throw NavError(.notAllowed, "\(origin) puts `\(c.name)` above `\(graph.coordinators[below.coordinator].name)`, which cannot open it (its opens decide, as for navigate)", data: d)
        }
        if !c.access.isEmpty && caller.roles.isDisjoint(with: c.access) {
            var d = data
            d["to"] = .string(c.name)
            throw NavError(.accessDenied, "`\(c.name)` (in \(origin)) admits only clients with role \(c.access.joined(separator: " or "))", data: d)
        }
        if let setup = c.setup, let v = setup.validate(.object(with)) {
            var d: JSONObject = ["pointer": .string(v.pointer), "rule": .string(v.rule), "to": .string(c.name)]
            for (k, x) in data { d[k] = x }
            throw NavError(.invalidSetup, "\(origin) gives `\(c.name)` an invalid setup: \(v.message)", data: d)
        }
        for p in c.preconditions where !preconditions.contains(p) { preconditions.append(p) }
        steps.append(LinkStep(coordinator: c.index, params: .object(with), by: by))
    }

    /// Builds a link's stack in one commit: in the tab (or root stack) that starts with its first
    /// screen when there is one, else as a new root stack.
    func commitLink(_ steps: [LinkStep], ifVersion: Int?) throws(NavError) -> Commit {
        if let v = ifVersion, v != version {
            throw NavError(.conflict, "the tree is at version \(version), not \(v) as \"ifVersion\" requires", data: ["version": .int(version)])
        }
        var changes = ChangeLog(enabled: recordsChanges, graph)
        var removed = Removal()
        let first = steps[0]
        var stack: Node?
        if root.kind == .tabs, let i = tabIndex(of: first.coordinator) {
            if root.selected != i {
                root.selected = i
                changes.record("select", parent: root, index: i)
            }
            stack = root.children[i]
        } else if root.kind == .stack, root.children.first?.coordinator == first.coordinator, root.children.first?.kind == .screen {
            stack = root
        }
        var top: Node
        if let stack, let bottom = stack.children.first, bottom.params == first.params || first.params == .object([:]) {
            if stack.children.count > 1 {
                var cut = Removal()
                for n in stack.children[1...] { forget(n, into: &cut) }
                stack.children.removeSubrange(1...)
                changes.record("pop", parent: stack, index: 1, removed: cut.numbers)
                removed.append(cut)
            }
            if let p = bottom.presented {
                var modal = Removal()
                forget(p, into: &modal)
                bottom.presented = nil
                changes.record("dismiss", parent: bottom, removed: modal.numbers)
                removed.append(modal)
            }
            top = bottom
            for step in steps.dropFirst() { top = attach(step, over: top, changes: &changes) }
        } else {
            forget(root, into: &removed)
            let bottom = makeTarget(first.coordinator, params: first.params)
            let newRoot = makeStack(holding: bottom)
            top = bottom
            var ignored = ChangeLog(enabled: false, graph)
            for step in steps.dropFirst() { top = attach(step, over: top, changes: &ignored) }
            root = newRoot
            changes.record("reset", root: root, removed: removed.numbers)
        }
        version += 1
        return Commit(version: version, changes: changes.text, node: top, removedNumbers: removed.numbers, endedFlows: removed.ended)
    }

    private func attach(_ step: LinkStep, over top: Node, changes: inout ChangeLog) -> Node {
        let node = makeTarget(step.coordinator, params: step.params)
        if step.by == .present {
            let s = makeStack(holding: node)
            s.parent = top
            top.presented = s
            changes.record("present", parent: top, node: s)
        } else {
            let container = top.parent!
            adopt(node, into: container)
            changes.record("push", parent: container, node: node)
        }
        return node.kind == .flow ? node.children[0] : node
    }
}

/// Where what follows the first `://` starts in `u`, if it has one.
private func endOfScheme(_ u: [UInt8]) -> Int? {
    var i = 0
    while i + 2 < u.count {
        if u[i] == UInt8(ascii: ":") && u[i + 1] == UInt8(ascii: "/") && u[i + 2] == UInt8(ascii: "/") { return i + 3 }
        i += 1
    }
    return nil
}

/// `s` with its `%XX` escapes decoded, or nil when an escape is malformed or the result is not UTF-8
/// (`+` is left alone, not read as a space: URLs write a space as %20).
func percentDecode(_ s: ArraySlice<UInt8>) -> String? {
    guard s.contains(UInt8(ascii: "%")) else { return String(decoding: s, as: UTF8.self) }
    var bytes: [UInt8] = []
    var it = s.makeIterator()
    while let b = it.next() {
        if b == UInt8(ascii: "%") {
            guard let h = it.next(), let l = it.next(), let hv = hexValue(h), let lv = hexValue(l) else { return nil }
            bytes.append(hv << 4 | lv)
        } else {
            bytes.append(b)
        }
    }
    return String(validating: bytes, as: UTF8.self)
}

private func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
    default: return nil
    }
}

// MARK: - Restoring

extension Session {
    /// A session rebuilt from its saved form (`root` as `tree` answers it). Throws a message when
    /// the saved tree names coordinators the graph does not have or is malformed.
    public convenience init(restoring name: String, graph: NavigationGraph, root json: JSONValue, version: Int,
                            nextId: Int, facts: [String: JSONValue]) throws(NavError) {
        self.init(name: name, graph: graph)
        guard (0...Session.maxRestoredCounter).contains(version), (0...Session.maxRestoredCounter).contains(nextId) else {
            throw NavError(.conflict, "saved version \(version) or id counter \(nextId) is outside 0…\(Session.maxRestoredCounter)")
        }
        let restored = try Session.node(from: json, graph: graph)
        try Session.validateRestored(restored, nextId: nextId)
        replaceState(root: restored, version: version, nextId: nextId, facts: facts)
    }

    /// The largest version or id counter a saved session may hold: far beyond any real count, and far
    /// enough below `Int.max` that counting on can never overflow.
    public static let maxRestoredCounter = 1 << 53

    /// Checks that a saved tree has the shape navd makes: a stack or tabs at the root, stacks of
    /// screens and flows (never empty), tabs of stacks with a selected index among them, flows of
    /// screens, presented stacks; every id unique and below the id counter, so that no id is reused.
    static func validateRestored(_ root: Node, nextId: Int) throws(NavError) {
        guard root.kind == .stack || root.kind == .tabs else {
            throw NavError(.conflict, "the saved root is a \(root.kind.rawValue); navd's roots are stacks or tabs")
        }
        var seen = Set<Int>()
        var work: [Node] = [root]
        while let n = work.popLast() {
            guard n.number > 0, n.number <= nextId else {
                throw NavError(.conflict, "saved node \(n.id) is numbered beyond the saved id counter \(nextId): a new node would reuse its id")
            }
            guard seen.insert(n.number).inserted else { throw NavError(.conflict, "saved node id \(n.id) appears twice") }
            let allowed: Set<Node.Kind>
            switch n.kind {
            case .stack: allowed = [.screen, .flow, .tabs]
            case .tabs: allowed = [.stack]
            case .flow: allowed = [.screen]
            case .screen: allowed = []
            }
            if n.kind == .stack || n.kind == .tabs || n.kind == .flow, n.children.isEmpty {
                throw NavError(.conflict, "saved \(n.kind.rawValue) \(n.id) has no children")
            }
            for c in n.children where c.kind == .tabs && c.coordinator < 0 {
                throw NavError(.conflict, "saved stack \(n.id) holds tabs \(c.id) that name no tab container")
            }
            for c in n.children where !allowed.contains(c.kind) {
                throw NavError(.conflict, "saved \(n.kind.rawValue) \(n.id) holds a \(c.kind.rawValue) (\(c.id))")
            }
            if n.kind == .tabs, !n.children.indices.contains(n.selected) {
                throw NavError(.conflict, "saved tabs \(n.id) select tab \(n.selected) of \(n.children.count)")
            }
            if let p = n.presented {
                guard n.kind == .screen || n.kind == .flow, p.kind == .stack else {
                    throw NavError(.conflict, "saved \(n.kind.rawValue) \(n.id) presents a \(p.kind.rawValue); only screens and flows present, and what they present is a stack")
                }
                work.append(p)
            }
            work.append(contentsOf: n.children)
        }
    }

    static func node(from j: JSONValue, graph: NavigationGraph) throws(NavError) -> Node {
        guard let id = j["id"]?.stringValue, let k = j["kind"]?.stringValue, let kind = Node.Kind(rawValue: k) else {
            throw NavError(.conflict, "saved node without id or kind: \(JSONWriter.string(j).prefix(120))")
        }
        var coordinator = -1
        if kind == .screen || kind == .flow || (kind == .tabs && j["coordinator"] != nil) {
            let cname = j["coordinator"]?.stringValue ?? ""
            guard let c = graph.coordinator(named: cname) else {
                throw NavError(.unknownTarget, "saved node \(id) shows `\(cname)`, which the graph does not declare")
            }
            coordinator = c.index
        }
        guard let n = Node(id: id, kind: kind, coordinator: coordinator, params: j["params"] ?? .object([:])) else {
            throw NavError(.conflict, "saved node id `\(id)` is not one navd makes (\"n\" and a number)")
        }
        n.selected = j["selected"]?.intValue ?? 0
        for c in j["children"]?.arrayValue ?? [] {
            let child = try node(from: c, graph: graph)
            child.parent = n
            n.children.append(child)
        }
        if let p = j["presented"] {
            let child = try node(from: p, graph: graph)
            child.parent = n
            n.presented = child
        }
        return n
    }

    /// Replaces the whole tree by the graph's root (one commit, a `reset` change).
    public func resetToRoot() -> Commit {
        let old = root
        let fresh = makeRoot()
        root = fresh
        var removed = Removal()
        forget(old, into: &removed)
        version += 1
        var changes = ChangeLog(enabled: true, graph)
        changes.record("reset", root: root, removed: removed.numbers)
        return Commit(version: version, changes: changes.text,
                      node: nil, removedNumbers: removed.numbers, endedFlows: removed.ended)
    }

    /// The id counter, saved so restored sessions never reuse an id.
    public var idCounter: Int { nextId }

    /// Whether the last `commit(_:)` made `node` (rather than selecting or keeping it).
    public func madeByLastCommit(_ node: Node) -> Bool { node.number > idCounterBeforeCommit }
}
