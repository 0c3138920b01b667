import JSON
import NavGraph

/// Values that satisfy a setup or result schema, made for exploration and for the test plan: the
/// schema's own `examples`, `default` or first `enum` value when it gives one, else the smallest
/// value of its type that meets its bounds, every required property filled. A `pattern` is met
/// by a string made from it (``PatternSample``), a value the schema names or one of a few common
/// shapes; when none matches, the schema cannot be sampled and exploration says so (name one
/// with `examples: [...]`).
public enum SampleValues {
    /// Nesting explored at most: a schema deeper than this is not sampled.
    public static let maxDepth = 16
    /// The longest string made for a `minLength` (a message to navd is at most 1 MiB): a schema
    /// asking for more is not sampled by length.
    public static let maxStringLength = 64 * 1024

    /// A value `schema` accepts, or nil when none can be made (nil schema: any object, `{}`).
    public static func value(for schema: Schema?) -> JSONValue? {
        guard let schema else { return .object(JSONObject()) }
        return value(schema, depth: 0)
    }

    /// A value for `schema` whose string form a URL carries (a deep link's parameter): the first
    /// value ``value(for:)`` would try that is a string, number or boolean, and with `inPath` one
    /// whose text is not empty (a path segment cannot carry an empty text: `open` skips it).
    public static func urlValue(for schema: Schema?, inPath: Bool = false) -> String? {
        // An array field takes a URL's value as a list of one (`open`): a sample of its items.
        if let schema, schema.takesList { return schema.items?.takesList == true ? nil : urlValue(for: schema.items, inPath: inPath) }
        guard let schema else { return "x" }
        func text(_ v: JSONValue) -> String? {
            switch v {
            case .string(let s): return s
            case .int(let i): return String(i)
            case .double(let d): return String(d)
            case .bool(let b): return String(b)
            default: return nil
            }
        }
        return value(schema, depth: 0) { v in text(v).map { !inPath || !$0.isEmpty } ?? false }.flatMap(text)
    }

    /// The first value `s` accepts that `wanted` takes: the schema's own values first, then the
    /// candidates of its types.
    static func value(_ s: Schema, depth: Int, where wanted: (JSONValue) -> Bool = { _ in true }) -> JSONValue? {
        guard depth < maxDepth else { return nil }
        var named: [JSONValue] = []
        if let examples = s.source["examples"]?.arrayValue { named += examples }
        if let d = s.source["default"] { named.append(d) }
        if let e = s.enumValues { named += e }
        for v in named where wanted(v) && s.validate(v) == nil { return v }
        for candidate in candidates(s, depth: depth) where wanted(candidate) && s.validate(candidate) == nil { return candidate }
        return nil
    }

    /// Values of each type the schema allows, in order of preference.
    static func candidates(_ s: Schema, depth: Int) -> [JSONValue] {
        let types = s.types ?? (s.properties.isEmpty ? .any : .object)
        var out: [JSONValue] = []
        if types.contains(.object) { out.append(object(s, depth: depth)) }
        if types.contains(.string) { out += strings(s).map(JSONValue.string) }
        if types.contains(.integer) || types.contains(.number) {
            let lo = s.minimum ?? (s.maximum.map { min(1, $0) } ?? 1)
            let i = lo.rounded(.up)
            // A bound past Int's range (`minimum: 1e300`) is kept as the double it is.
            if types.contains(.integer) || i == lo { out.append(Int(exactly: i).map(JSONValue.int) ?? .double(i)) } else { out.append(.double(lo)) }
            out.append(.double(lo))
        }
        if types.contains(.boolean) { out += [.bool(true), .bool(false)] }
        if types.contains(.array) {
            if let items = s.items, let v = value(items, depth: depth + 1) { out.append(.array([v])) }
            out.append(.array([]))
        }
        if types.contains(.null) { out.append(.null) }
        return out
    }

    static func object(_ s: Schema, depth: Int) -> JSONValue {
        var o = JSONObject()
        for name in s.required {
            let field = s.properties.first { $0.name == name }?.schema
            if let field { if let v = value(field, depth: depth + 1) { o.append(name, v) } } else { o.append(name, .string("x")) }
        }
        return .object(o)
    }

    /// Strings of the allowed lengths: a few common shapes first (an id, a slug, an e-mail address,
    /// a 6-digit code), which also meet most patterns.
    static func strings(_ s: Schema) -> [String] {
        let n = max(s.minLength ?? 1, 1)
        let shapes = ["x", "x1", "ord-1", "a@b.c", "123456", "abc", "1", "A", "x-1", "x_1"]
        let fits = { (t: String) in t.count >= n && t.count <= (s.maxLength ?? .max) }
        var out = (s.pattern.map { PatternSample.strings($0.source) } ?? []).filter(fits)
        out += shapes.filter(fits)
        if s.minLength ?? 0 > 1 || out.isEmpty, n <= maxStringLength {
            out.append(String(repeating: "x", count: n))
            out.append(String(repeating: "1", count: n))
        }
        if s.maxLength == 0 { out.append("") }
        return out
    }
}
