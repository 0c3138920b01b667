import JSON

/// A parsed graph file: YAML (or JSON, which YAML reads too) with the position of every
/// node, so that every diagnostic can point at the exact line and column.
struct Doc {
    enum Value {
        case scalar(String, plain: Bool)
        case map([(key: String, keyLocation: SourceLocation, value: Doc)])
        case seq([Doc])
    }
    let value: Value
    let location: SourceLocation

    /// The YAML nodes several files may expand to together (`--max-graph-nodes`): each file read
    /// spends what it expands to.
    struct NodeBudget {
        let max: Int
        var left: Int
        init(_ max: Int) {
            self.max = max
            left = max
        }
        var isSpent: Bool { left < 0 }
    }

    /// `empty`: what to say of a file that holds nothing (by default, a module file's words).
    static func parse(_ text: String, file: String, maxNodes: Int = GraphLimits().maxNodes, empty: String? = nil,
                      diagnostics: inout Diagnostics) -> Doc? {
        var budget = NodeBudget(maxNodes)
        return parse(text, file: file, budget: &budget, empty: empty, diagnostics: &diagnostics)
    }

    /// The file's document, its nodes spent from `budget` (one the files before it spent from).
    static func parse(_ text: String, file: String, budget: inout NodeBudget, empty: String? = nil,
                      diagnostics: inout Diagnostics) -> Doc? {
        var reader = YAMLReader(file: file, maxNodes: budget.left)
        let before = budget.left
        defer { budget.left = reader.budget }
        let doc: Doc?
        do throws(YAMLReader.Failure) {
            doc = try reader.read(text)
        } catch {
            switch error {
            case .tooManyNodes:
                let aliases = "YAML aliases (*name) repeat what they name, so a few of them can multiply a small file"
                diagnostics.error(SourceLocation(file: file, line: 1, column: 1), before < budget.max
                    ? "with the \(budget.max - before) YAML nodes of the module files read before it, the file expands the graph to more than \(budget.max) (the --max-graph-nodes limit, over every module file); raise the limit for a graph this large (\(aliases))"
                    : "the file expands to more than \(budget.max) YAML nodes (the --max-graph-nodes limit); \(aliases): write the values out, or raise the limit")
            case .syntax(let line, let column, let message):
                diagnostics.error(SourceLocation(file: file, line: line, column: column), message)
            }
            return nil
        }
        // A later entry of a key already in its mapping is reported and left out; the rest of the
        // file is still checked.
        for dup in reader.duplicates {
            diagnostics.error(dup.at, duplicateKey(dup.key, firstLine: dup.firstLine))
        }
        guard let doc else {
            diagnostics.error(SourceLocation(file: file, line: 1, column: 1),
                              empty ?? "the file is empty (or holds only comments); a module file is a mapping with keys such as `coordinators:` and `routes:`")
            return nil
        }
        return doc
    }

    private static func duplicateKey(_ key: String, firstLine: Int? = nil) -> String {
        "duplicate key `\(key)`\(firstLine.map { " (first at line \($0))" } ?? ""): each name may appear once in a mapping; rename or merge the two entries"
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

    /// Whether two nodes hold the same data (scalars, their style, keys and order), wherever they are.
    func sameData(as other: Doc) -> Bool {
        switch (value, other.value) {
        case (.scalar(let a, let pa), .scalar(let b, let pb)): return pa == pb && a == b
        case (.map(let a), .map(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value.sameData(as: $1.value) }
        case (.seq(let a), .seq(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.sameData(as: $1) }
        default: return false
        }
    }

    /// Feeds the node's data (not its location) to `hasher`, consistently with ``sameData(as:)``.
    func hashData(into hasher: inout Hasher) {
        switch value {
        case .scalar(let s, let plain):
            hasher.combine(plain)
            hasher.combine(s)
        case .map(let m):
            hasher.combine(m.count)
            for e in m {
                hasher.combine(e.key)
                e.value.hashData(into: &hasher)
            }
        case .seq(let a):
            hasher.combine(a.count &+ 1_000_003)
            for e in a { e.hashData(into: &hasher) }
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
