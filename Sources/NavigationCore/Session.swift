import JSON
import NavGraph

/// One session: a coordinator tree, its version, its facts and its navigation keys. All commands
/// validate completely before they change anything, so a failed command leaves no trace.
public final class Session {
    public let name: String
    /// The graph the tree is of; changed only by ``rebase(onto:coordinators:)``.
    public internal(set) var graph: NavigationGraph
    public internal(set) var root: Node
    public internal(set) var version = 0
    /// Whether commits build their `changes` (the JSON subscribers apply). A server turns it off for a
    /// session nobody subscribes to; dry runs always record.
    public var recordsChanges = true
    /// Whether commits also build their changes in the compact form (a subscriber asked for it).
    public var recordsCompactChanges = false
    /// Whether the name is plain (``isPlainName(_:dots:)``, as `session.open` requires; a session
    /// restored or made otherwise may not be): written into JSON as it is, nothing to escape. Checked
    /// once here rather than at every commit's log record. (Beside the flags above: no room taken.)
    public let nameIsPlain: Bool
    /// Facts set with `context.set` (``setFacts(_:)``), read by `check` preconditions; replaced
    /// whole by ``replaceFacts(_:)``.
    public internal(set) var facts: [String: JSONValue] = [:]
    /// The fact names in order, once asked for (``sortedFactNames``); kept in order as
    /// ``setFacts(_:)`` adds and removes names, so that listing thousands of facts sorted (each
    /// `context.set`'s answer, a provider's request) does not sort them every time.
    var sortedNames: [String]?
    /// The bounds this session's tree and facts stay within (navd's options).
    public var limits = SessionLimits()
    /// The setup models of every node of the tree together, as JSON, in bytes (`--max-params-bytes`).
    public internal(set) var paramsBytes = 0
    /// Whether a node may hold earlier params (`update {push: true}`, or a restored or replayed
    /// history): until then a `dismiss` does not look for them.
    var mayHoldParamsHistory = false
    /// Whether a node may be a recovery flow (one was presented, restored or replayed): until then
    /// ``recoveryFlows()`` does not look.
    var holdsRecoveryFlows = false
    /// The names and values of every fact together, as JSON, in bytes (`--max-facts-bytes`).
    public internal(set) var factsBytes = 0
    /// The account of the uid it counts against (the server's `--max-data-bytes`): holds what the
    /// session held (``paramsBytes`` and ``factsBytes``) when it joined or was last synced
    /// (``syncAccount()``, once a commit or a change of facts, not at every change of a count).
    /// nil: counted nowhere.
    public var account: DataAccount? {
        didSet {
            guard oldValue !== account else { return }
            oldValue?.add(-accountedBytes)
            accountedBytes = account == nil ? 0 : paramsBytes + factsBytes
            account?.add(accountedBytes)
        }
    }
    /// What ``account`` holds of this session.
    public private(set) var accountedBytes = 0

    /// Brings ``account`` up to what the session holds now.
    public func syncAccount() {
        guard let account else { return }
        let now = paramsBytes + factsBytes
        if now != accountedBytes {
            account.add(now - accountedBytes)
            accountedBytes = now
        }
    }
    /// The uid of the user who opened the session (nil: navd's own, as for "main"). Only that user
    /// and admins may close it or write its facts.
    public var owner: UInt32?
    /// Set by a dismiss that went back through a tabs container's `back:` (instead of removing a
    /// screen): the container's coordinator, -1 for the root's tabs; nil otherwise. Whoever reads
    /// it (coverage) sets it back to nil.
    public var wentBackIn: Int?
    /// Free for the store that keeps this session: a log store marks with it the sessions its
    /// snapshot lacks (a compare where a lookup by name would hash the name at every commit).
    public var storeMark = 0
    var nextId = 0
    /// The id counter when the last `commit(_:)` began (``madeByLastCommit(_:)``).
    var idCounterBeforeCommit = 0
    /// A copy a commit is tried on first (it tries no further copy).
    var isTrial = false

    /// Runs `change` on a copy of the session first, so that a change refused part-way (a limit
    /// passed, a merge refused) leaves this session as it was.
    func tryOnCopy(_ change: (Session) throws(NavError) -> Void) throws(NavError) {
        let trial = Session(copying: self)
        trial.isTrial = true
        try change(trial)
    }
    let nodes = NodeIndex()
    /// Leaf nodes that left the tree with no other reference to them, made new nodes again by
    /// ``newNode(_:coordinator:setup:)`` (a screen pushed and dismissed over and over allocates
    /// nothing); a few at most.
    private var spare: [Node] = []
    private static let maxSpare = 8

    /// Keeps `node` for reuse when it left the tree as a leaf and nothing else refers to it.
    func recycle(_ node: inout Node) {
        guard spare.count < Session.maxSpare, node.children.isEmpty, node.presented == nil,
              isKnownUniquelyReferenced(&node) else { return }
        spare.append(node)
    }

    /// Replies of keyed navigations (idempotency): the newest ``maxKeys``, within ``maxKeyBytes``.
    /// A result is kept as the JSON text first sent (one array: cheap to keep, to send again and to forget).
    public private(set) var keyed: [String: Result<JSONText, NavError>] = [:]
    /// The keys of `keyed`, oldest first from `keyHead`, with what each takes: the oldest is
    /// forgotten first, so remembering a key costs the same however many are kept.
    private var keyRing: [(key: String, bytes: Int)] = []
    private var keyHead = 0
    /// The bytes the kept keys and replies take.
    public private(set) var keyBytes = 0
    /// Keys remembered so far: the kept ones are numbered `keySeq - keyed.count ..< keySeq`.
    public private(set) var keySeq = 0
    public static let maxKeys = 4096
    public static let maxKeyBytes = 1 << 20

    public convenience init(name: String, graph: NavigationGraph) {
        self.init(name: name, graph: graph, replacingTree: ())
        root = makeRoot()
    }

    /// A session whose tree is a placeholder, replaced next: by the graph's root (``init(name:graph:)``)
    /// or by a restored tree (``replaceState(root:version:nextId:facts:)``), for which none is built
    /// for the graph's root only to be dropped (a restart makes a hundred thousand).
    init(name: String, graph: NavigationGraph, replacingTree: Void) {
        self.name = name
        nameIsPlain = isPlainName(name, dots: true)
        self.graph = graph
        root = Node(number: 0, kind: .stack)
    }

    /// An independent copy of the session's tree, facts and counters (exploration branches on it).
    public func copy() -> Session { Session(copying: self) }

    init(copying s: Session) {
        recordsChanges = true
        name = s.name
        nameIsPlain = s.nameIsPlain
        graph = s.graph
        root = s.root.copy()
        version = s.version
        facts = s.facts
        sortedNames = s.sortedNames
        factsBytes = s.factsBytes
        paramsBytes = s.paramsBytes
        mayHoldParamsHistory = s.mayHoldParamsHistory
        holdsRecoveryFlows = s.holdsRecoveryFlows
        limits = s.limits
        nextId = s.nextId
        root.forEach { nodes.insert($0) }
    }

    public var nodeCount: Int { nodes.count }

    func replaceState(root newRoot: Node, version v: Int, nextId n: Int, facts f: [String: JSONValue]) {
        nodes.removeAll()
        root = newRoot
        version = v
        nextId = n
        replaceFacts(f)
        paramsBytes = 0
        root.forEach { node in
            nodes.insert(node)
            paramsBytes += node.countedBytes
            if node.paramsHistory != nil { mayHoldParamsHistory = true }
            if node.isRecovery { holdsRecoveryFlows = true }
        }
    }
    public func node(_ id: String) -> Node? { nodes[id] }
    public func node(number: Int) -> Node? { nodes[number: number] }
    /// The coordinator node `number` shows (-1: none, or no such node).
    public func coordinator(ofNode number: Int) -> Int { nodes.coordinator(ofNode: number) }

    // MARK: Tree building

    /// A new node with the next id, entered in the index; its setup's bytes are counted in
    /// ``paramsBytes`` for a node that shows a coordinator.
    private func newNode(_ kind: Node.Kind, coordinator: Int = -1, setup: WrittenJSON = .emptyObject) -> Node {
        nextId += 1
        let n: Node
        let counted = coordinator >= 0 ? setup.count : 0
        if !spare.isEmpty {
            let s = spare.removeLast()
            s.reuse(number: nextId, kind: kind, coordinator: coordinator, setup: setup, paramsBytes: counted)
            n = s
        } else {
            n = Node(number: nextId, kind: kind, coordinator: coordinator, setup: setup)
            n.paramsBytes = counted
        }
        paramsBytes += counted
        nodes.insert(n)
        return n
    }

    func adopt(_ child: Node, into parent: Node) {
        child.parentRef = NodeLink(parent)
        parent.children.append(child)
    }

    /// A screen, or a flow with its start step, with the setup model `setup`.
    func makeTarget(_ coordinator: Int, setup: WrittenJSON) -> Node {
        if graph.coordinators[coordinator].isTabContainer { return makeTabs(coordinator, setup: setup) }
        let start = graph.coordinators[coordinator].flowStart
        if start >= 0 {
            let flow = newNode(.flow, coordinator: coordinator, setup: setup)
            adopt(newNode(.screen, coordinator: start), into: flow)
            return flow
        }
        return newNode(.screen, coordinator: coordinator, setup: setup)
    }

    /// A tab container: a tabs node with a stack per tab, each starting with its tab's coordinator
    /// (no params), the first selected; or, with `selecting`, that tab selected and its first screen
    /// given those params (a deep link that selects it).
    func makeTabs(_ coordinator: Int, setup: WrittenJSON, selecting: (tab: Int, setup: WrittenJSON)? = nil) -> Node {
        let t = newNode(.tabs, coordinator: coordinator, setup: setup)
        for (i, c) in graph.coordinators[coordinator].tabs.enumerated() {
            if let selecting, selecting.tab == i {
                adopt(makeStack(holding: makeTarget(c, setup: selecting.setup)), into: t)
            } else {
                adopt(makeStack(holding: makeTarget(c, setup: .emptyObject)), into: t)
            }
        }
        if let selecting { t.selected = selecting.tab }
        return t
    }

    func makeStack(holding first: Node) -> Node {
        let s = newNode(.stack)
        adopt(first, into: s)
        return s
    }

    func makeRoot() -> Node {
        switch graph.root {
        case .stack(let c):
            return makeStack(holding: makeTarget(c, setup: .emptyObject))
        case .tabs(let tabs):
            let t = newNode(.tabs)
            for c in tabs { adopt(makeStack(holding: makeTarget(c, setup: .emptyObject)), into: t) }
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
        var cur = NodeLink(root)
        while true {
            guard let next = cur.with({ n -> NodeLink? in
                body(n)
                return n.visibleChild
            }) else { return }
            cur = next
        }
    }

    /// Writes ``visible`` as a JSON array of ids, from the tree (no array, no strings, no reference counting).
    public func writeVisible(into w: inout JSONWriter) {
        w.raw(UInt8(ascii: "["))
        var cur = NodeLink(root)
        while true {
            let next = cur.with { n -> NodeLink? in
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

    /// Writes ``visible`` as a JSON array of node numbers (the compact form).
    public func writeVisibleNumbers(into w: inout JSONWriter) {
        w.raw(UInt8(ascii: "["))
        var cur = NodeLink(root)
        while true {
            let next = cur.with { n -> NodeLink? in
                let next = n.visibleChild
                w.write(int: n.number)
                w.raw(next == nil ? UInt8(ascii: "]") : UInt8(ascii: ","))
                return next
            }
            guard let next else { break }
            cur = next
        }
    }

    /// The screen the user sees.
    public var visibleTop: Node? { visibleTopRef?.node }

    /// The screen the user sees, unretained (valid until the tree changes): the walk and its result
    /// cost no reference counting, where ``visibleTop``'s result is retained (atomically).
    @inline(__always)
    var visibleTopRef: NodeLink? { topScreen(from: NodeLink(root)) }

    /// The last screen on the path the user would see from `start` down (through the selected tab,
    /// the top of each stack and flow, what a screen presents), unretained.
    @inline(__always)
    func topScreen(from start: NodeLink) -> NodeLink? {
        var n = start
        var top: NodeLink? = nil
        while true {
            let (isScreen, next) = n.with { ($0.kind == .screen, $0.visibleChild) }
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
    public func writeSnapshot(into w: inout JSONWriter, extra: ((inout JSONWriter) -> Void)? = nil) {
        w.raw("{\"session\":")
        w.write(string: name)
        w.raw(",\"version\":")
        w.write(int: version)
        w.raw(",\"root\":")
        root.write(into: &w, graph)
        w.raw(",\"visible\":")
        writeVisible(into: &w)
        extra?(&w)
        w.raw(UInt8(ascii: "}"))
    }

    // MARK: keys

    /// Takes over `other`'s remembered keys, as they are (a session rebuilt for a new graph keeps
    /// answering retries of navigations made before the reload).
    public func adoptKeys(of other: Session) {
        (keyed, keyRing, keyHead, keyBytes, keySeq) = (other.keyed, other.keyRing, other.keyHead, other.keyBytes, other.keySeq)
    }

    /// The number of the oldest key kept (``keySeq`` when none is).
    public var oldestKeySeq: Int { keySeq - keyed.count }

    /// Remembers a keyed reply, then forgets the oldest while more than ``maxKeys`` or
    /// ``maxKeyBytes`` are kept.
    public func remember(key: String, _ reply: Result<JSONText, NavError>) {
        guard keyed.updateValue(reply, forKey: key) == nil else { return }  // a key again (a replay): its reply replaced
        let bytes: Int
        switch reply {
        case .success(let t): bytes = key.utf8.count + t.bytes.count
        case .failure(let e): bytes = key.utf8.count + e.message.utf8.count + 64
        }
        keyRing.append((key, bytes))
        keyBytes += bytes
        keySeq += 1
        while keyed.count > Session.maxKeys || (keyBytes > Session.maxKeyBytes && keyed.count > 1) { forgetOldestKey() }
    }

    /// Forgets the oldest key kept; the bytes it took (0: none was kept).
    @discardableResult
    public func forgetOldestKey() -> Int {
        guard keyHead < keyRing.count else { return 0 }
        let (key, bytes) = keyRing[keyHead]
        keyed[key] = nil
        keyBytes -= bytes
        keyHead += 1
        if keyHead >= 1024 && keyHead * 2 >= keyRing.count {
            keyRing.removeFirst(keyHead)
            keyHead = 0
        }
        return bytes
    }
}
