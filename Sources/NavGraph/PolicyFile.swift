import JSON
import RPC

/// The policy file's format (`--policy FILE`, YAML or JSON; PROTOCOL.md section 6): roles per peer
/// uid and per `hello` token, and whether `graph.reload` may name a directory. Read with the
/// graph's YAML reader, so that every problem is reported at once with its file, line and column,
/// as a module file's are, and within the same bounds (``GraphLimits/maxNodes``: aliases cannot
/// multiply a small file). The server keeps what it grants.
public struct PolicyFile: Sendable, Equatable {
    public var uids: [UInt32: Set<String>] = [:]
    public var tokens: [String: Set<String>] = [:]
    public var allowReloadPath = false
    /// What the file's reader warns of (a token short enough to guess), each as
    /// `FILE:LINE:COLUMN: warning: MESSAGE`: navd logs them, `navd check --policy` prints them.
    /// Not part of what the policy grants (``==`` leaves them out).
    public var warnings: [String] = []

    /// The shortest token that is not warned of.
    public static let strongTokenBytes = 16

    public static func == (a: PolicyFile, b: PolicyFile) -> Bool {
        a.uids == b.uids && a.tokens == b.tokens && a.allowReloadPath == b.allowReloadPath
    }

    public init(uids: [UInt32: Set<String>] = [:], tokens: [String: Set<String>] = [:], allowReloadPath: Bool = false) {
        self.uids = uids
        self.tokens = tokens
        self.allowReloadPath = allowReloadPath
    }

    /// The keys a policy file may have.
    public static let keys = ["uids", "tokens", "allowReloadPath"]

    /// The longest token, in bytes. A token is a key of the file, and a YAML reader takes a key on
    /// one line of at most 1,024 characters: written as JSON (quotes and backslashes escaped, each
    /// then two characters) a token of this length still fits, so what is read reads back.
    /// `hello` also bounds the tokens it takes by `--max-name` (256 bytes by default).
    public static let maxTokenBytes = 500

    /// The policy `text` grants, or nil with every problem in the diagnostics.
    public static func parse(_ text: String, file: String, maxNodes: Int = GraphLimits().maxNodes) -> (policy: PolicyFile?, diagnostics: Diagnostics) {
        var d = Diagnostics()
        let example = "uids: {\"1000\": [customer]}, tokens: {\"s3cret\": [auditor]}"
        guard let doc = Doc.parse(text, file: file, maxNodes: maxNodes,
                                  empty: "the policy file is empty (or holds only comments); write the roles it grants, like \(example)",
                                  diagnostics: &d) else { return (nil, d) }
        guard let top = doc.mapping else {
            d.error(doc.location, "a policy file is a mapping with `uids:` and/or `tokens:` (and optionally `allowReloadPath:`), like \(example); not \(doc.typeName)")
            return (nil, d)
        }
        var p = PolicyFile()
        for e in top where !keys.contains(e.key) {
            let hint = suggestion(for: e.key, among: keys).map { " (did you mean `\($0)`?)" } ?? ""
            d.error(e.keyLocation, "unknown key `\(e.key)`\(hint); a policy file has uids, tokens and allowReloadPath")
        }
        if let a = doc["allowReloadPath"] {
            if case .bool(let b) = a.json { p.allowReloadPath = b } else { d.error(a.location, "`allowReloadPath` must be true or false, not \(a.description)") }
        }
        for (key, at, value) in entries(doc["uids"], "uids", what: "a uid (such as \"1000\") to its roles", &d) {
            guard let uid = UInt32(key) else {
                d.error(at, "`\(key)` under `uids` is not a numeric uid (0 to 4294967295; `id -u NAME` prints a user's)")
                continue
            }
            if let r = roles(value, of: "uid \(key)", &d) { p.uids[uid] = r }
        }
        for (key, at, value) in entries(doc["tokens"], "tokens", what: "a token (the string a client gives `hello`) to its roles", &d) {
            guard !key.isEmpty else {
                d.error(at, "a token under `tokens` is empty; a client could give it without knowing anything")
                continue
            }
            if let c = Self.unprintable(in: key) {
                d.error(at, "a token under `tokens` holds the character \(c) (a control, a line break or not text); a token is one line of printable text")
                continue
            }
            guard key.utf8.count <= maxTokenBytes else {
                d.error(at, "a token under `tokens` is \(key.utf8.count) bytes long; a token may be at most \(maxTokenBytes) bytes (and `hello` takes at most --max-name bytes, 256 by default)")
                continue
            }
            if key.utf8.count < strongTokenBytes {
                d.warning(at, "a token of \(key.utf8.count) bytes is easy to guess: navd takes ten unknown tokens a second from one user, so a word or a short code falls in hours, \(strongTokenBytes) random bytes never; make it \(strongTokenBytes) random bytes or more (`openssl rand -hex 16`)")
            }
            if let r = roles(value, of: "a token", &d) { p.tokens[key] = r }
        }
        p.warnings = d.warnings.map(\.description)
        return (d.hasErrors ? nil : p, d)
    }

    /// The entries of the mapping `node` (`name:` of the file); none when it is absent or null.
    private static func entries(_ node: Doc?, _ name: String, what: String, _ d: inout Diagnostics) -> [(String, SourceLocation, Doc)] {
        guard let node, !node.isNull else { return [] }
        guard let m = node.mapping else {
            d.error(node.location, "`\(name)` must map \(what), like \(name == "uids" ? "{\"1000\": [customer]}" : "{\"s3cret\": [auditor]}"); not \(node.typeName)")
            return []
        }
        return m.map { ($0.key, $0.keyLocation, $0.value) }
    }

    /// The first character of `s` that is not printable text on one line (C0 and C1 controls, DEL,
    /// U+2028, U+2029, the byte order mark U+FEFF, the non-characters U+FFFE and U+FFFF) as
    /// `U+XXXX`, or nil. YAML folds a line break inside a quoted string and does not take the rest
    /// as text, so a token or role holding one would not read back as written.
    static func unprintable(in s: String) -> String? {
        for u in s.unicodeScalars where u.value < 0x20 || (0x7F...0x9F).contains(u.value) || u.value == 0x2028 || u.value == 0x2029
            || u.value == 0xFEFF || u.value == 0xFFFE || u.value == 0xFFFF {
            let hex = String(u.value, radix: 16, uppercase: true)
            return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        return nil
    }

    /// A list of role names, or one name alone.
    private static func roles(_ node: Doc, of holder: String, _ d: inout Diagnostics) -> Set<String>? {
        let items = node.sequence ?? [node]
        var out: Set<String> = []
        var ok = true
        for item in items {
            guard case .string(let role) = item.json, !role.isEmpty, unprintable(in: role) == nil else {
                d.error(item.location, "the roles of \(holder) must be names, like [customer, admin]; not \(item.mapping != nil || item.sequence != nil ? item.typeName : "`\(item.description)`")")
                ok = false
                continue
            }
            out.insert(role)
        }
        return ok ? out : nil
    }
}
