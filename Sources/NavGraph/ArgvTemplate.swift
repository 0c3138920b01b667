import JSON

/// The argument template of a `command` precondition: `{to}`, `{session}` and `{with.FIELD}`
/// placeholders filled in one pass over the template. Substituted text is copied to the output and
/// never scanned again, so a value shaped like a placeholder stays that text (no loop, no growth, no
/// injection of another field). The output's size is the template's plus the values' it names.
public enum ArgvTemplate {
    /// A value that cannot become an argument.
    public struct Refusal: Error, Sendable, Equatable {
        /// The placeholder whose value was refused (`with.x`, `session`, `to`).
        public let placeholder: String
        public let reason: String
    }

    /// A placeholder of a template.
    public enum Placeholder: Equatable, Sendable {
        case to, session
        /// `{with.FIELD}`: FIELD (it may be empty).
        case field(String)
    }

    /// The FIELDs of the template's `{with.FIELD}` placeholders, in order, as ``expand(_:to:session:field:)`` reads them.
    public static func fields(in template: String) -> [String] {
        var fields: [String] = []
        forEachPlaceholder(in: Array(template.utf8)) { (_, p) throws(Never) in
            if case .field(let name) = p { fields.append(name) }
        }
        return fields
    }

    /// Calls `body` with each placeholder of `t` and the bytes it takes, in order. A `{` starts a
    /// placeholder when the text up to the next `}` names one; otherwise it is text, and the scan
    /// goes on from the byte after it. Each byte is looked at a bounded number of times (once to
    /// find the next `}` from a `{`, which the next `{` before it reuses).
    static func forEachPlaceholder<E: Error>(in t: [UInt8], _ body: (Range<Int>, Placeholder) throws(E) -> Void) throws(E) {
        var i = 0
        var nextClose: Int? = nil  // the first `}` at or after i, once looked for
        while i < t.count {
            guard t[i] == UInt8(ascii: "{") else { i += 1; continue }
            if nextClose.map({ $0 < i }) ?? true { nextClose = t[i...].firstIndex(of: UInt8(ascii: "}")) }
            guard let close = nextClose else { return }  // no `}` after this `{`: the rest is text
            let name = t[(i + 1)..<close]
            let placeholder: Placeholder?
            if name.elementsEqual("to".utf8) {
                placeholder = .to
            } else if name.elementsEqual("session".utf8) {
                placeholder = .session
            } else if name.starts(with: "with.".utf8) {
                placeholder = .field(String(decoding: name.dropFirst(5), as: UTF8.self))
            } else {
                placeholder = nil  // not a placeholder: its `{` is text
            }
            guard let placeholder else { i += 1; continue }
            try body(i..<(close + 1), placeholder)
            i = close + 1
        }
    }

    /// Expands `template`. `field` answers the text of `{with.FIELD}` (nil: the empty string). A value
    /// holding a NUL byte is refused: an argument ends at its first NUL, so it would be cut silently.
    public static func expand(_ template: String, to: String, session: String,
                              field: (String) -> String?) throws(Refusal) -> String {
        let t = Array(template.utf8)
        guard t.contains(UInt8(ascii: "{")) else { return template }
        var out: [UInt8] = []
        out.reserveCapacity(t.count)
        var copied = 0
        try forEachPlaceholder(in: t) { (range, placeholder) throws(Refusal) in
            let value: String
            let name: String
            switch placeholder {
            case .to: (name, value) = ("to", to)
            case .session: (name, value) = ("session", session)
            case .field(let f): (name, value) = ("with." + f, field(f) ?? "")
            }
            if value.utf8.contains(0) {
                throw Refusal(placeholder: name, reason: "the value of {\(name)} holds a NUL byte, which cannot be passed in a command argument")
            }
            out.append(contentsOf: t[copied..<range.lowerBound])
            out.append(contentsOf: value.utf8)
            copied = range.upperBound
        }
        out.append(contentsOf: t[copied...])
        return String(decoding: out, as: UTF8.self)
    }

    /// The value `{with.FIELD}` names in `params`: the member named FIELD; else, when FIELD is a
    /// dotted path (`address.city`, `items.0`), the value it leads to through nested objects (a
    /// member at each step) and arrays (an index), as `$source.a.b` and `$result.a.b` read. Nil
    /// when a step is missing. Its length is bounded by the graph's template, its steps by the
    /// params' depth.
    public static func value(of field: String, in params: JSONValue) -> JSONValue? {
        if let v = params[field] { return v }
        guard field.utf8.contains(UInt8(ascii: ".")) else { return nil }
        var cur = params
        for part in field.split(separator: ".", omittingEmptySubsequences: false) {
            switch cur {
            case .object:
                guard let next = cur[String(part)] else { return nil }
                cur = next
            case .array(let items):
                guard let i = Int(part), i >= 0, i < items.count else { return nil }
                cur = items[i]
            default:
                return nil
            }
        }
        return cur
    }
}
