import JSON
import NavGraph

/// The changes a commit records, built only when someone will read them: in the full form (the
/// store, subscribers who asked for it) and in the compact one (subscribers who asked for that).
/// Noncopyable: the compiler refuses any copy of it on the commit path (a copy costs a value
/// witness call and a retain per writer).
struct ChangeLog: ~Copyable {
    /// Whether anything is recorded (either form).
    let enabled: Bool
    private let full: Bool
    private let compact: Bool
    /// Unretained: the session holds its graph, and a log lives only while its commit is made.
    private let graph: GraphLink
    /// The changes so far as JSON text: `[`, then each change written when it happens (a node as
    /// it is then: a later change of the same commit may change it again). nil while empty.
    private var w: JSONWriter? = nil
    /// The same changes in the compact form.
    private var c: JSONWriter? = nil
    /// A navigation's presentation hints, written into the next change recorded (its own).
    var hints: JSONValue? = nil

    /// A log of `session`'s next commit, in the forms its readers want.
    @inline(__always)
    init(_ session: Session) {
        self.init(full: session.recordsChanges, compact: session.recordsCompactChanges, session.graph)
    }

    @inline(__always)
    init(full: Bool, compact: Bool = false, _ graph: NavigationGraph) {
        self.full = full
        self.compact = compact
        enabled = full || compact
        self.graph = GraphLink(graph)
    }

    /// What a commit keeps of the log, with the flows it ended: the list in each form, `[…]`, or
    /// nil where nothing was recorded; nil when there is none of them. Read once, when the log is
    /// done (nothing is recorded after). Inlined down to the `enabled` check and the flows' (the
    /// usual commit has neither, and nothing is copied for it).
    @inline(__always)
    func extras(endedFlows: [EndedFlow]?) -> Commit.Extras? {
        if enabled { return closed(endedFlows: endedFlows) }
        if endedFlows == nil { return nil }
        return Commit.Extras(changeText: nil, compactText: nil, endedList: endedFlows)
    }

    @inline(never)
    private func closed(endedFlows: [EndedFlow]?) -> Commit.Extras? {
        let changeText = full ? Self.close(w) : nil, compactText = compact ? Self.close(c) : nil
        // (A literal nil where no flow ended: storing the argument retained it, nil or not.)
        guard let endedFlows else { return Commit.Extras(changeText: changeText, compactText: compactText, endedList: nil) }
        return Commit.Extras(changeText: changeText, compactText: compactText, endedList: endedFlows)
    }

    /// The list `w` wrote, closed, in the buffer it was written in (lent by the thread's
    /// ``ScratchBuffers`` slot, which lends it to a later commit's log once the text is dropped).
    private static func close(_ w: JSONWriter?) -> LentText? {
        guard let buffer = w?.buffer else { return nil }  // one reference taken, no copy of the writer
        buffer.append(UInt8(ascii: "]"))
        return LentText(buffer)
    }

    /// Records `{"op":…,"parent":…,"index":…,"node"|"root":…,"removed":[…]}` with the fields given,
    /// in that order: push and present (parent, node), replace (parent, index, node, removed), reset
    /// (root, removed), select (parent, index, and the tabs' history when they keep one), dismiss (parent, removed), pop (parent, index,
    /// removed). The compact form is the array of the same fields in the same order, ids as numbers
    /// (`["push",3,{"i":8,…}]`), and no hints (the notification carries them once). Inlined down to
    /// the `enabled` check; the writing is out of line.
    @inline(__always)
    mutating func record(_ op: StaticString, parent: Node? = nil, index: Int? = nil, node: Node? = nil, root: Node? = nil,
                         removed: NodeNumbers? = nil, tabHistory: [Int]? = nil) {
        if enabled { write(op, parent: parent, index: index, node: node, root: root, removed: removed, tabHistory: tabHistory) }
    }

    @inline(never)
    private mutating func write(_ op: StaticString, parent: Node?, index: Int?, node: Node?, root: Node?, removed: NodeNumbers?,
                                tabHistory: [Int]?) {
        let more = node != nil || root != nil || removed != nil || tabHistory != nil
        if full {
            let lead = Self.startChange(in: &w, .changes, capacity: 256)
            Self.writeFull(op, lead: lead, parent: parent, index: index, node: node, root: root, removed: removed, tabHistory: tabHistory,
                           hints: hints, graph: graph, into: &w!)
        }
        if compact {
            let lead = Self.startChange(in: &c, .compactChanges, capacity: 128)
            Self.writeCompact(op, lead: lead, more: more, parent: parent, index: index, node: node, root: root, removed: removed,
                              tabHistory: tabHistory, graph: graph, into: &c!)
        }
        hints = nil
    }

    /// Makes the writer of the list on the first change, in a buffer borrowed from `slot`. Returns
    /// what the change starts with: `[` opening the list, or `,` after the change before.
    @inline(__always)
    private static func startChange(in w: inout JSONWriter?, _ slot: ScratchBuffers.Slot, capacity: Int) -> UInt8 {
        if w != nil { return UInt8(ascii: ",") }
        w = JSONWriter(into: ScratchBuffers.borrow(slot, capacity: capacity))
        return UInt8(ascii: "[")
    }

    /// A change's op, parent and index, in one reservation (an op is a short word) with the
    /// punctuation around them: `lead` (the list's `[` or the `,` after the change before), then
    /// `{"op":"push","parent":"n3","index":1` in the full form, `["push",3,1` in the compact one,
    /// there followed by `,` when `more` fields follow.
    @inline(__always)
    private static func writeHead(_ op: StaticString, lead: UInt8, more: Bool, parent: Node?, index: Int?, compact: Bool,
                                  into w: inout JSONWriter) {
        let parentNumber = parent?.number
        w.reserving(64 + op.utf8CodeUnitCount + 2 * ReservedOutput.maxIntBytes) { o in
            o.raw(lead)
            o.raw(compact ? "[\"" : "{\"op\":\"")
            o.raw(op)
            o.raw(UInt8(ascii: "\""))
            if let parentNumber {
                o.raw(compact ? "," : ",\"parent\":")
                if compact { o.int(parentNumber) } else { o.nodeId(parentNumber) }
            }
            if let index {
                o.raw(compact ? "," : ",\"index\":")
                o.int(index)
            }
            if more { o.raw(UInt8(ascii: ",")) }
        }
    }

    /// (Static, as ``writeCompact``: a method of the log writing into its own writer would copy the
    /// whole log for each change.)
    private static func writeFull(_ op: StaticString, lead: UInt8, parent: Node?, index: Int?, node: Node?, root: Node?,
                                  removed: NodeNumbers?, tabHistory: [Int]?, hints: JSONValue?, graph: GraphLink, into w: inout JSONWriter) {
        writeHead(op, lead: lead, more: false, parent: parent, index: index, compact: false, into: &w)
        if let node {
            w.raw(",\"node\":")
            graph.with { node.write(into: &w, $0) }
        }
        if let root {
            w.raw(",\"root\":")
            graph.with { root.write(into: &w, $0) }
        }
        if let removed {
            w.raw(",\"removed\":")
            w.write(nodeIds: removed)
        }
        if let tabHistory {
            w.raw(",\"history\":")
            w.write(.array(tabHistory.map(JSONValue.int)))
        }
        if let h = hints {
            w.raw(",\"hints\":")
            w.write(h)
        }
        w.raw(UInt8(ascii: "}"))
    }

    /// The fields after the head, the first without a separator (`writeHead` wrote it).
    private static func writeCompact(_ op: StaticString, lead: UInt8, more: Bool, parent: Node?, index: Int?, node: Node?, root: Node?,
                                     removed: NodeNumbers?, tabHistory: [Int]?, graph: GraphLink, into c: inout JSONWriter) {
        writeHead(op, lead: lead, more: more, parent: parent, index: index, compact: true, into: &c)
        var separate = false
        if let node {
            graph.with { node.writeCompact(into: &c, $0) }
            separate = true
        }
        if let root {
            if separate { c.raw(UInt8(ascii: ",")) }
            graph.with { root.writeCompact(into: &c, $0) }
            separate = true
        }
        if let removed {
            if separate { c.raw(UInt8(ascii: ",")) }
            c.write(nodeNumbers: removed)
            separate = true
        }
        if let tabHistory {
            if separate { c.raw(UInt8(ascii: ",")) }
            c.write(.array(tabHistory.map(JSONValue.int)))
        }
        c.raw(UInt8(ascii: "]"))
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
    /// The changes as JSON text (a list), written as they happened: stored and sent to subscribers
    /// as it is, from the buffer it was written in (a commit is published and dropped at once; one
    /// kept longer keeps its buffer). nil when none were recorded.
    @inlinable public var changeText: LentText? { extras?.changeText }
    /// The same changes in the compact form, when the session records them
    /// (``Session/recordsCompactChanges``).
    @inlinable public var compactText: LentText? { extras?.compactText }
    @inlinable public var endedList: [EndedFlow]? { extras?.endedList }
    /// The texts and the ended flows, nil when there are none (as usual: a session nobody reads
    /// changes of, no flow ended): dropping the commit then tests one tag, where three optional
    /// references would each be released, nil or not.
    @usableFromInline let extras: Extras?

    @usableFromInline struct Extras {
        @usableFromInline let changeText: LentText?
        @usableFromInline let compactText: LentText?
        @usableFromInline let endedList: [EndedFlow]?
    }

    /// A commit whose changes `log` recorded.
    @inline(__always)
    init(version: Int, log: borrowing ChangeLog, node: Node?, removedNumbers: NodeNumbers, endedFlows: [EndedFlow]?) {
        self.version = version
        extras = log.extras(endedFlows: endedFlows)
        self.node = node
        self.removedNumbers = removedNumbers
    }

    init(version: Int, changes: LentText?, compact: LentText? = nil, node: Node?, removedNumbers: NodeNumbers, endedFlows: [EndedFlow]?) {
        self.version = version
        extras = changes == nil && compact == nil && endedFlows == nil
            ? nil : Extras(changeText: changes, compactText: compact, endedList: endedFlows)
        self.node = node
        self.removedNumbers = removedNumbers
    }

    /// The ids of the nodes that left the tree.
    public var removed: [String] { removedNumbers.map(Node.id) }
}

/// Node numbers in order, the first kept inline: a commit usually removes one node or none, and
/// then no array is allocated.
public struct NodeNumbers: RandomAccessCollection, Sendable {
    @usableFromInline var first: Int = 0
    @usableFromInline var rest: [Int]? = nil  // nil, not empty: nothing to release
    public private(set) var count = 0

    public init() {}

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(i: Int) -> Int {
        precondition(i >= 0 && i < count, "index out of range")
        return i == 0 ? first : rest![i - 1]
    }

    public mutating func append(_ n: Int) {
        if count == 0 { first = n } else { rest.append(n) }
        count += 1
    }

    public mutating func append(contentsOf other: NodeNumbers) {
        other.forEachNumber { append($0) }
    }

    /// Calls `body` with each number in order, without the index checks of iterating the
    /// collection (a commit's removed list is written for the store, the subscribers and the reply).
    @inlinable @inline(__always)
    public func forEachNumber(_ body: (Int) -> Void) {
        guard count > 0 else { return }
        body(first)
        if let rest { for n in rest { body(n) } }
    }
}
