import JSON
import Yams

/// A parsed graph file: YAML (or JSON, which Yams reads as YAML) with the position of every
/// node, so that every diagnostic can point at the exact line and column.
struct Doc {
    enum Value {
        case scalar(String, plain: Bool)
        case map([(key: String, keyLocation: SourceLocation, value: Doc)])
        case seq([Doc])
    }
    let value: Value
    let location: SourceLocation

    static func parse(_ text: String, file: String, diagnostics: inout Diagnostics) -> Doc? {
        do {
            guard let node = try Yams.compose(yaml: text) else { return nil }
            return Doc(node, file: file)
        } catch let e as YamlError {
            let (mark, message) = describe(e)
            diagnostics.error(SourceLocation(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1), message)
            return nil
        } catch {
            diagnostics.error(SourceLocation(file: file, line: 1, column: 1), "cannot read the file: \(error)")
            return nil
        }
    }

    private static func describe(_ e: YamlError) -> (Mark?, String) {
        switch e {
        case let .scanner(context, problem, mark, _),
             let .parser(context, problem, mark, _),
             let .composer(context, problem, mark, _):
            let ctx = context.map { " (\($0.text) at line \($0.mark.line), column \($0.mark.column))" } ?? ""
            return (mark, "syntax error: \(problem)\(ctx)")
        case let .duplicatedKeysInMapping(duplicates, context):
            let key = duplicates.first ?? "?"
            return (context.mark, "duplicate key `\(key)`: each name may appear once in a mapping; rename or merge the two entries")
        case let .reader(problem, _, _, _):
            return (nil, "the file cannot be read as UTF-8 text: \(problem)")
        default:
            return (nil, "cannot parse: \(e)")
        }
    }

    init(_ node: Node, file: String) {
        let m = node.mark
        location = SourceLocation(file: file, line: m?.line ?? 1, column: m?.column ?? 1)
        switch node {
        case .scalar(let s):
            value = .scalar(s.string, plain: s.style == .plain || s.style == .any)
        case .mapping(let map):
            value = .map(map.map { pair in
                let k = Doc(pair.key, file: file)
                return (k.text ?? k.description, k.location, Doc(pair.value, file: file))
            })
        case .sequence(let seq):
            value = .seq(seq.map { Doc($0, file: file) })
        case .alias:
            value = .scalar("", plain: true)
        }
    }

    var text: String? {
        if case .scalar(let s, _) = value { return s }
        return nil
    }
    var mapping: [(key: String, keyLocation: SourceLocation, value: Doc)]? {
        if case .map(let m) = value { return m }
        return nil
    }
    var sequence: [Doc]? {
        if case .seq(let s) = value { return s }
        return nil
    }
    var isNull: Bool {
        if case .scalar(let s, let plain) = value { return plain && (s.isEmpty || s == "~" || s == "null" || s == "Null" || s == "NULL") }
        return false
    }
    var typeName: String {
        switch value {
        case .scalar: return isNull ? "null" : "a scalar"
        case .map: return "a mapping"
        case .seq: return "a list"
        }
    }
    var description: String {
        switch value {
        case .scalar(let s, _): return s
        case .map: return "{…}"
        case .seq: return "[…]"
        }
    }

    subscript(key: String) -> Doc? { mapping?.first { $0.key == key }?.value }

    /// The value as JSON, resolving plain scalars the YAML 1.2 core way (null, booleans,
    /// integers, floats); quoted scalars stay strings.
    var json: JSONValue {
        switch value {
        case .scalar(let s, let plain):
            guard plain else { return .string(s) }
            switch s {
            case "", "~", "null", "Null", "NULL": return .null
            case "true", "True", "TRUE": return .bool(true)
            case "false", "False", "FALSE": return .bool(false)
            default: break
            }
            if let i = Int(s) { return .int(i) }
            if let first = s.first, first.isNumber || first == "-" || first == "+" || first == ".",
               let d = Double(s), d.isFinite { return .double(d) }
            return .string(s)
        case .map(let m):
            return .object(JSONObject(uniqueMembers: m.map { ($0.key, $0.value.json) }))
        case .seq(let a):
            return .array(a.map(\.json))
        }
    }

    /// Location of the value at a JSON pointer inside this node (for schema errors), or this node's.
    func location(at pointer: String, key atKey: Bool = false) -> SourceLocation {
        var node = self
        let parts = pointer.split(separator: "/", omittingEmptySubsequences: true)
        for (i, raw) in parts.enumerated() {
            let key = raw.replacingTilde
            if let m = node.mapping, let next = m.first(where: { $0.key == key }) {
                if atKey && i == parts.count - 1 { return next.keyLocation }
                node = next.value
            } else if let s = node.sequence, let i = Int(key), i < s.count {
                node = s[i]
            } else {
                break
            }
        }
        return node.location
    }
}

extension Substring {
    var replacingTilde: String {
        var out = ""
        var it = makeIterator()
        while let c = it.next() {
            if c == "~" {
                let n = it.next()
                out.append(n == "1" ? "/" : "~")
            } else {
                out.append(c)
            }
        }
        return out
    }
}
