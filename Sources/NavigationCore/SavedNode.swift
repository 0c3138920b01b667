import JSON

/// A saved node's members as ``Session/node(from:graph:depth:count:limits:keys:)`` reads them: from a
/// `JSONValue` tree (a log record, a graph reload) or in place from a parsed document (a snapshot's
/// tree), read in one pass over its members. A repeated member: the last counts, as in the parser.
struct SavedNode<Child> {
    var id: String?
    var kind: String?
    /// Whether a `coordinator` member is there (a tabs node names its container only when declared).
    var hasCoordinator = false
    var coordinator: String?
    var params: JSONValue?
    var paramsHistory: JSONValue?
    var selected: Int?
    var history: JSONValue?
    /// The `children` member's elements (none when it is not an array).
    var children: [Child] = []
    var presented: Child?
}

/// What a saved tree can be read from (``Session/init(restoring:graph:root:version:nextId:facts:limits:)``).
protocol SavedNodeSource {
    /// The node's members; values copied out take their object keys from `keys`.
    func savedNode(keys: StringCache?) -> SavedNode<Self>
    /// The node as JSON, for messages.
    var savedJSON: JSONValue { get }
}

extension JSONValue: SavedNodeSource {
    /// One pass over the members, from the last, so that a key a built object repeats counts
    /// first, as its subscript reads it (a parsed object's keys are unique: the parser keeps the last).
    @inline(__always)
    func savedNode(keys: StringCache?) -> SavedNode<JSONValue> {
        var n = SavedNode<JSONValue>()
        guard case .object(let o) = self else { return n }
        for m in o.members.reversed() {
            switch m.key {
            case "id": n.id = m.value.stringValue
            case "kind": n.kind = m.value.stringValue
            case "params": n.params = m.value
            case "history": n.history = m.value
            case "selected": n.selected = m.value.intValue
            case "children": n.children = m.value.arrayValue ?? []
            case "presented": n.presented = m.value
            case "coordinator":
                n.hasCoordinator = true
                n.coordinator = m.value.stringValue
            case "paramsHistory": n.paramsHistory = m.value
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
    func savedNode(keys: StringCache?) -> SavedNode<JSONView> {
        var n = SavedNode<JSONView>()
        forEachMember { k, v in
            switch k.count {
            case 2 where k.equals("id"): n.id = v.string
            case 4 where k.equals("kind"): n.kind = v.string
            case 6 where k.equals("params"): n.params = v.value(keys: keys)
            case 7 where k.equals("history"): n.history = v.value(keys: keys)
            case 8 where k.equals("selected"): n.selected = v.int
            case 8 where k.equals("children"): n.children = v.elements
            case 9 where k.equals("presented"): n.presented = v
            case 11 where k.equals("coordinator"):
                n.hasCoordinator = true
                n.coordinator = v.string
            case 13 where k.equals("paramsHistory"): n.paramsHistory = v.value(keys: keys)
            default: break
            }
        }
        return n
    }

    var savedJSON: JSONValue { value }
}
