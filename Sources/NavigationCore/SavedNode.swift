import JSON
import NavGraph
import Unchecked

/// A saved node's members as ``Session/node(from:graph:depth:count:limits:keys:)`` reads them: from a
/// `JSONValue` tree (a graph reload) or in place from a parsed document (a snapshot's tree, a log
/// record), read in one pass over its members. A repeated member: the last counts, as in the
/// parser. The id, kind and coordinator are kept as what they mean (a number, a kind, an index),
/// their text only when it means nothing (for the message that refuses it): a restart reads a
/// hundred thousand trees, and makes no string for them.
struct SavedNode<Child> {
    /// Whether the `id` member is a string; its number when it has navd's form ("n" and digits),
    /// else its text.
    var idIsString = false
    var number: Int?
    var idText: String?
    /// The kind (nil: none, or not one navd makes).
    var kind: Node.Kind?
    /// Whether a `coordinator` member is there (a tabs node names its container only when declared).
    var hasCoordinator = false
    /// The coordinator's index in the graph, else the name it gives when that is a string.
    var coordinator: Int?
    var coordinatorName: String?
    var params: JSONValue?
    var paramsHistory: JSONValue?
    /// `recovery: true` (a recovery flow); anything else is no mark.
    var recovery = false
    /// A flow's `then` given by `navigate` (``Session/restoredThen(_:of:graph:)`` reads it).
    var then: JSONValue?
    var selected: Int?
    var history: JSONValue?
    /// The `children` member's elements (none when it is not an array).
    var children: [Child] = []
    var presented: Child?

    /// The id as it reads, for messages.
    var id: String { idText ?? Node.id(number ?? 0) }

    /// The `id` member: whether it is a string, the number it gives, and its text (asked for only
    /// when it gives none).
    @inline(__always)
    mutating func readId(isString: Bool, number: Int?, text: () -> String?) {
        idIsString = isString
        self.number = isString ? number : nil
        idText = isString && number == nil ? text() : nil
    }

    /// The `coordinator` member: its index in `graph` when `index` found it, else its text.
    @inline(__always)
    mutating func readCoordinator(_ index: Int?, text: () -> String?) {
        hasCoordinator = true
        coordinator = index
        coordinatorName = index == nil ? text() : nil
    }
}

/// What a saved tree can be read from (``Session/init(restoring:graph:root:version:nextId:facts:limits:)``).
protocol SavedNodeSource {
    /// The node's members, its coordinator found in `graph`; values copied out take their object
    /// keys from `keys`.
    func savedNode(keys: StringCache?, graph: NavigationGraph) -> SavedNode<Self>
    /// The node as JSON, for messages.
    var savedJSON: JSONValue { get }
}

extension JSONValue: SavedNodeSource {
    /// One pass over the members, from the last, so that a key a built object repeats counts
    /// first, as its subscript reads it (a parsed object's keys are unique: the parser keeps the last).
    @inline(__always)
    func savedNode(keys: StringCache?, graph: NavigationGraph) -> SavedNode<JSONValue> {
        var n = SavedNode<JSONValue>()
        guard case .object(let o) = self else { return n }
        for m in o.members.reversed() {
            switch m.key {
            case "id":
                let text = m.value.stringValue
                n.readId(isString: text != nil, number: text.flatMap(NodeIndex.number)) { text }
            case "kind": n.kind = m.value.stringValue.flatMap(Node.Kind.init(rawValue:))
            case "params": n.params = m.value
            case "history": n.history = m.value
            case "selected": n.selected = m.value.intValue
            case "children": n.children = m.value.arrayValue ?? []
            case "presented": n.presented = m.value
            case "coordinator":
                let text = m.value.stringValue
                n.readCoordinator(text.flatMap { graph.coordinator(named: $0)?.index }) { text }
            case "paramsHistory": n.paramsHistory = m.value
            case "recovery": n.recovery = m.value == true
            case "then": n.then = m.value
            default: break
            }
        }
        return n
    }

    var savedJSON: JSONValue { self }
}

extension JSONView: SavedNodeSource {
    /// One pass over the members, each key told by its length first: a restart reads a hundred
    /// thousand trees, and looking each member up alone walks the members once per lookup.
    @inline(__always)
    func savedNode(keys: StringCache?, graph: NavigationGraph) -> SavedNode<JSONView> {
        var n = SavedNode<JSONView>()
        forEachMember { k, v in
            let isString = v.kind == .string
            switch k.count {
            case 2 where k.equals("id"): n.readId(isString: isString, number: isString ? NodeIndex.number(bytes: v.stringBytes.raw) : nil) { v.string }
            case 4 where k.equals("kind"): n.kind = isString ? Node.Kind(v.stringBytes) : nil
            case 4 where k.equals("then"): n.then = v.value(keys: keys)
            case 6 where k.equals("params"): n.params = v.value(keys: keys)
            case 7 where k.equals("history"): n.history = v.value(keys: keys)
            case 8 where k.equals("selected"): n.selected = v.int
            case 8 where k.equals("children"): n.children = v.elements
            case 8 where k.equals("recovery"): n.recovery = v.bool == true
            case 9 where k.equals("presented"): n.presented = v
            case 11 where k.equals("coordinator"): n.readCoordinator(isString ? graph.coordinatorIndex(named: v.stringBytes) : nil) { v.string }
            case 13 where k.equals("paramsHistory"): n.paramsHistory = v.value(keys: keys)
            default: break
            }
        }
        return n
    }

    var savedJSON: JSONValue { value }
}

extension Node.Kind {
    /// The kind whose name is `name`'s bytes, or nil.
    init?(_ name: ByteView) {
        switch name.count {
        case 4 where name.equals("tabs"): self = .tabs
        case 4 where name.equals("flow"): self = .flow
        case 5 where name.equals("stack"): self = .stack
        case 6 where name.equals("screen"): self = .screen
        default: return nil
        }
    }
}
