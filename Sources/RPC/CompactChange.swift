import JSON
import Unchecked

/// The compact form of a commit's changes (PROTOCOL.md, "Compact notifications"), read back into
/// the full form: what a client's mirror applies, and what navd replays from its log, whose commit
/// records keep this form. Defined once here, where navd and the client library both reach it.
public enum CompactChange {
    /// Why a value is not in the compact form.
    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    /// A full change's fields after its op, in the order both forms write them.
    private enum Field {
        case parent, index, node, root, removed, history

        var key: String {
            switch self {
            case .parent: "parent"
            case .index: "index"
            case .node: "node"
            case .root: "root"
            case .removed: "removed"
            case .history: "history"
            }
        }
    }

    private static let parentNode: [Field] = [.parent, .node]
    private static let pop: [Field] = [.parent, .index, .removed]
    private static let dismiss: [Field] = [.parent, .removed]
    private static let replace: [Field] = [.parent, .index, .node, .removed]
    private static let select: [Field] = [.parent, .index, .history]
    private static let reset: [Field] = [.root, .removed]
    private static let update: [Field] = [.node]

    /// A compact change (`[op, …]`: the full change's fields in its order, ids as numbers) in the
    /// full form (`{"op": …, "parent": "n3", …}`).
    public static func expand(change c: JSONValue) throws(Malformed) -> JSONValue {
        guard case .array(let a) = c, let op = a.first?.stringValue else {
            throw Malformed(description: "a compact change is [op, …], not \(JSONWriter.string(c))")
        }
        let fields: [Field]
        switch op {
        case "push", "present": fields = parentNode
        case "pop": fields = pop
        case "dismiss": fields = dismiss
        case "replace": fields = replace
        case "select": fields = select
        case "reset": fields = reset
        case "update": fields = update
        default: throw Malformed(description: "unknown op \(op) in \(JSONWriter.string(c))")
        }
        // Every field is given, but a select's history (given only when its tabs keep one).
        guard a.count - 1 <= fields.count, a.count - 1 >= (op == "select" ? 2 : fields.count) else {
            throw Malformed(description: "a compact \(op) is [\(([op] + fields.map(\.key)).joined(separator: ", "))], not \(JSONWriter.string(c))")
        }
        var o = JSONObject()
        o.members.reserveCapacity(a.count)
        o.append("op", .string(op))
        for i in 1..<a.count {
            let f = fields[i - 1], v = a[i]
            switch f {
            case .parent: o.append(f.key, try id(v))
            case .node, .root: o.append(f.key, try expand(node: v))
            case .removed:
                guard case .array(let r) = v else { throw Malformed(description: "removed is a list of node numbers, not \(JSONWriter.string(v))") }
                var ids: [JSONValue] = []
                ids.reserveCapacity(r.count)
                for n in r { ids.append(try id(n)) }
                o.append(f.key, .array(ids))
            case .index, .history: o.append(f.key, v)
            }
        }
        return .object(o)
    }

    /// A compact node (`{i, k?, c?, w?, ph?, ch?, sel?, hi?, pr?}`) in the full form. Its depth is
    /// the parsed value's, which the parser bounded.
    public static func expand(node v: JSONValue) throws(Malformed) -> JSONValue {
        guard case .object(let c) = v, let number = c["i"] else {
            throw Malformed(description: "a compact node is {i, …}, not \(JSONWriter.string(v))")
        }
        let kind = c["k"]?.stringValue ?? "screen"
        var o = JSONObject()
        o.members.reserveCapacity(c.count + 2)
        o.append("id", try id(number))
        o.append("kind", .string(kind))
        var list: [JSONValue] = []
        if let given = c["ch"] {
            guard case .array(let compact) = given else { throw Malformed(description: "ch is a list of nodes, not \(JSONWriter.string(given))") }
            list.reserveCapacity(compact.count)
            for n in compact { list.append(try expand(node: n)) }
        }
        let children = JSONValue.array(list)
        if kind == "stack" { o.append("children", children) }
        if let coordinator = c["c"] {
            o.append("coordinator", coordinator)
            o.append("params", c["w"] ?? .object([:]))
        }
        if let h = c["ph"] { o.append("paramsHistory", h) }
        if let r = c["rc"] { o.append("recovery", r) }
        if let t = c["th"] { o.append("then", t) }
        if kind == "flow" || kind == "tabs" { o.append("children", children) }
        if kind == "tabs" {
            o.append("selected", c["sel"] ?? 0)
            if let h = c["hi"] { o.append("history", h) }
        }
        if let p = c["pr"] { o.append("presented", try expand(node: p)) }
        return .object(o)
    }

    /// A node number as its id (`8` → `"n8"`).
    public static func id(_ v: JSONValue) throws(Malformed) -> JSONValue {
        guard let n = v.intValue else { throw Malformed(description: "a node number, not \(JSONWriter.string(v))") }
        return .string(prefixedDecimal("n", n))
    }
}
