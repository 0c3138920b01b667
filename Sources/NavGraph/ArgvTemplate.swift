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

    /// Expands `template`. `field` answers the text of `{with.FIELD}` (nil: the empty string). A value
    /// holding a NUL byte is refused: an argument ends at its first NUL, so it would be cut silently.
    public static func expand(_ template: String, to: String, session: String,
                              field: (String) -> String?) throws(Refusal) -> String {
        let t = Array(template.utf8)
        guard t.contains(UInt8(ascii: "{")) else { return template }
        var out: [UInt8] = []
        out.reserveCapacity(t.count)
        var i = 0
        while i < t.count {
            guard t[i] == UInt8(ascii: "{"), let close = t[i...].firstIndex(of: UInt8(ascii: "}")) else {
                out.append(t[i])
                i += 1
                continue
            }
            let name = String(decoding: t[(i + 1)..<close], as: UTF8.self)
            let value: String?
            if name == "to" {
                value = to
            } else if name == "session" {
                value = session
            } else if name.hasPrefix("with.") {
                value = field(String(name.dropFirst(5))) ?? ""
            } else {
                value = nil  // not a placeholder: kept as written
            }
            guard let value else {
                out.append(t[i])
                i += 1
                continue
            }
            if value.utf8.contains(0) {
                throw Refusal(placeholder: name, reason: "the value of {\(name)} holds a NUL byte, which cannot be passed in a command argument")
            }
            out.append(contentsOf: value.utf8)
            i = close + 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
