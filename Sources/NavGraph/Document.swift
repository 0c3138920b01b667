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

    /// Thrown when a file expands to more nodes than its budget.
    struct TooManyNodes: Error {}

    static func parse(_ text: String, file: String, maxNodes: Int = GraphLimits().maxNodes, diagnostics: inout Diagnostics) -> Doc? {
        var text = text
        // Yams stops at a duplicate key. In a YAML file's block mapping the later entry is found,
        // reported and blanked out (lines kept, so positions stay true), and the file is parsed
        // again, so that one pass still reports the file's other problems. Each round blanks a
        // line that was not blank, so the rounds end.
        while true {
            do {
                guard let node = try Yams.compose(yaml: text) else {
                    diagnostics.error(SourceLocation(file: file, line: 1, column: 1),
                                      "the file is empty (or holds only comments); a module file is a mapping with keys such as `coordinators:` and `routes:`")
                    return nil
                }
                var budget = maxNodes
                do { return try Doc(node, file: file, budget: &budget) } catch {
                    diagnostics.error(SourceLocation(file: file, line: 1, column: 1),
                                      "the file expands to more than \(maxNodes) YAML nodes (the --max-graph-nodes limit); YAML aliases (*name) repeat what they name, so a few of them can multiply a small file: write the values out, or raise the limit")
                    return nil
                }
            } catch {
                if !file.hasSuffix(".json"), case let YamlError.duplicatedKeysInMapping(duplicates, context) = error,
                   let later = DuplicateEntry.find(key: duplicates.first ?? "?", firstLine: context.mark.line, column: context.mark.column, in: text) {
                    diagnostics.error(SourceLocation(file: file, line: later.line, column: context.mark.column),
                                      duplicateKey(duplicates.first ?? "?", firstLine: context.mark.line))
                    text = later.blanked
                    continue
                }
                let (mark, message) = (error as? YamlError).map(describe) ?? (nil, "cannot read the file: \(error)")
                diagnostics.error(SourceLocation(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1), message)
                return nil
            }
        }
    }

    private static func duplicateKey(_ key: String, firstLine: Int? = nil) -> String {
        "duplicate key `\(key)`\(firstLine.map { " (first at line \($0))" } ?? ""): each name may appear once in a mapping; rename or merge the two entries"
    }

    private static func describe(_ e: YamlError) -> (Mark?, String) {
        switch e {
        case let .scanner(context, problem, mark, _),
             let .parser(context, problem, mark, _),
             let .composer(context, problem, mark, _):
            let ctx = context.map { " (\($0.text) at line \($0.mark.line), column \($0.mark.column))" } ?? ""
            return (mark, "syntax error: \(problem)\(ctx)")
        case let .duplicatedKeysInMapping(duplicates, context):
            return (context.mark, duplicateKey(duplicates.first ?? "?"))
        case let .reader(problem, _, _, _):
            return (nil, "the file cannot be read as UTF-8 text: \(problem)")
        default:
            return (nil, "cannot parse: \(e)")
        }
    }

    /// Converts a composed YAML node, counting every node it makes against `budget` (an alias is
    /// composed as the node it names, so it is counted each time it is used).
    init(_ node: Node, file: String, budget: inout Int) throws(TooManyNodes) {
        budget -= 1
        guard budget >= 0 else { throw TooManyNodes() }
        let m = node.mark
        location = SourceLocation(file: file, line: m?.line ?? 1, column: m?.column ?? 1)
        switch node {
        case .scalar(let s):
            value = .scalar(s.string, plain: s.style == .plain || s.style == .any)
        case .mapping(let map):
            var pairs: [(key: String, keyLocation: SourceLocation, value: Doc)] = []
            pairs.reserveCapacity(map.count)
            for pair in map {
                let k = try Doc(pair.key, file: file, budget: &budget)
                pairs.append((k.text ?? k.description, k.location, try Doc(pair.value, file: file, budget: &budget)))
            }
            value = .map(pairs)
        case .sequence(let seq):
            var items: [Doc] = []
            items.reserveCapacity(seq.count)
            for item in seq { items.append(try Doc(item, file: file, budget: &budget)) }
            value = .seq(items)
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

/// The later entry of a key that a YAML block mapping holds twice: the first entry's key is at
/// `firstLine`:`column` (1-based, as Yams marks them); the later one is the next line at the same
/// indentation that starts with the same key, and its entry runs until the indentation comes back
/// to the key's (sequence items at the key's indentation still belong to it).
struct DuplicateEntry {
    let line: Int
    let blanked: String

    static func find(key: String, firstLine: Int, column: Int, in text: String) -> DuplicateEntry? {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let indent = column - 1
        func indentation(_ l: Substring) -> Int? {  // nil: a blank or comment line
            let n = l.prefix { $0 == " " }.count
            let rest = l.dropFirst(n)
            return rest.isEmpty || rest.first == "#" || rest == "\r" ? nil : n
        }
        func startsWithKey(_ l: Substring) -> Bool {
            let rest = l.dropFirst(indent)
            for form in [key, "\"\(key)\"", "'\(key)'"] where rest.hasPrefix(form) {
                if rest.dropFirst(form.count).drop(while: { $0 == " " }).first == ":" { return true }
            }
            return false
        }
        var j = firstLine  // the line after the first entry's key (0-based index)
        while j < lines.count {
            if let n = indentation(lines[j]) {
                if n < indent { return nil }
                if n == indent && startsWithKey(lines[j]) { break }
            }
            j += 1
        }
        guard j < lines.count else { return nil }
        var end = j + 1
        while end < lines.count {
            if let n = indentation(lines[end]), n < indent || (n == indent && !lines[end].dropFirst(n).hasPrefix("- ")) { break }
            end += 1
        }
        for i in j..<end { lines[i] = "" }
        return DuplicateEntry(line: j + 1, blanked: lines.joined(separator: "\n"))
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
