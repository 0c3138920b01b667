import JSON
import NavTesting
import Testing
@testable import NavGraph

/// A command's argument template: one scan of placeholders serves the expansion at run time and
/// `navd check`'s reading of `{with.FIELD}`, so the two cannot disagree on what a placeholder is.
@Suite struct ArgvTemplateTests {
    /// The template's meaning written the plain way, each `{` looking for its `}` afresh: the
    /// reference the scan is checked against.
    static func plainExpand(_ template: String, to: String, session: String, field: (String) -> String?) -> (String, [String]) {
        let t = Array(template.utf8)
        var out: [UInt8] = []
        var fields: [String] = []
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
                fields.append(String(name.dropFirst(5)))
                value = field(String(name.dropFirst(5))) ?? ""
            } else {
                value = nil
            }
            guard let value else {
                out.append(t[i])
                i += 1
                continue
            }
            out.append(contentsOf: value.utf8)
            i = close + 1
        }
        return (String(decoding: out, as: UTF8.self), fields)
    }

    @Test(arguments: [
        ("scripts/check.sh {to} {session} {with.id}", "scripts/check.sh app.X s1 <id>", ["id"]),
        ("--id={with.id}/{with.page}", "--id=<id>/<page>", ["id", "page"]),
        ("{{with.id}}", "{<id>}", ["id"]),
        ("{x {with.id}", "{x <id>", ["id"]),
        ("{with.}", "<>", [""]),
        ("{with.a{b}", "<a{b>", ["a{b"]),
        ("{tox} {sessions} {with", "{tox} {sessions} {with", []),
        ("no placeholders", "no placeholders", []),
    ])
    func placeholdersAreFilledOnce(template: String, expanded: String, fields: [String]) throws {
        let out = try ArgvTemplate.expand(template, to: "app.X", session: "s1") { "<\($0)>" }
        #expect(out == expanded)
        #expect(ArgvTemplate.fields(in: template) == fields)
    }

    @Test func aValueShapedLikeAPlaceholderStaysText() throws {
        let out = try ArgvTemplate.expand("{with.a} {with.b}", to: "t", session: "s") { $0 == "a" ? "{with.b}" : "B" }
        #expect(out == "{with.b} B")
    }

    @Test func aValueWithANulByteIsRefusedByName() {
        #expect(throws: ArgvTemplate.Refusal(placeholder: "with.id", reason: "the value of {with.id} holds a NUL byte, which cannot be passed in a command argument")) {
            try ArgvTemplate.expand("x {with.id}", to: "t", session: "s") { _ in "a\0b" }
        }
    }

    /// Random templates over the characters that matter: the scan expands as the plain reading
    /// does and finds the same fields.
    @Test(arguments: 0..<4) func theScanAgreesWithThePlainReading(seed: UInt64) throws {
        var rng = SplitMix64(seed: 0xA76 + seed)
        let pieces = ["{", "}", "to", "session", "with.", "id", "x", " ", "{with.id}", "{to}", "é"]
        for _ in 0..<2_000 {
            let template = (0..<Int.random(in: 0...12, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
            let field: (String) -> String? = { $0 == "id" ? "ID" : ($0.isEmpty ? nil : "[\($0)]") }
            let (plain, plainFields) = Self.plainExpand(template, to: "T", session: "S", field: field)
            #expect(try ArgvTemplate.expand(template, to: "T", session: "S", field: field) == plain, "\(template)")
            #expect(ArgvTemplate.fields(in: template) == plainFields, "\(template)")
        }
    }

    /// A template of `{` without a `}` is read in one pass (the plain reading looks for the `}`
    /// again from every `{`).
    @Test func aLongTemplateOfOpeningBracesIsText() throws {
        let template = String(repeating: "{", count: 200_000)
        #expect(try ArgvTemplate.expand(template, to: "t", session: "s") { _ in "v" } == template)
        #expect(ArgvTemplate.fields(in: template).isEmpty)
    }

    /// `{with.FIELD}` reads a member named FIELD, else FIELD as a dotted path through nested
    /// objects and arrays (as `$source.a.b` reads); a missing step is nothing.
    @Test func aDottedFieldReadsNestedParams() throws {
        let params: JSONValue = ["address": ["city": "Paris", "lines": ["1 rue", "2e"]], "a.b": "flat", "n": 3]
        #expect(ArgvTemplate.value(of: "address.city", in: params) == "Paris")
        #expect(ArgvTemplate.value(of: "address.lines.1", in: params) == "2e")
        #expect(ArgvTemplate.value(of: "a.b", in: params) == "flat", "a member named with a dot comes first")
        #expect(ArgvTemplate.value(of: "address", in: params) == ["city": "Paris", "lines": ["1 rue", "2e"]])
        for missing in ["address.zip", "address.lines.2", "address.lines.-1", "address.lines.x", "n.x", "address..city", "zip"] {
            #expect(ArgvTemplate.value(of: missing, in: params) == nil, "\(missing)")
        }
    }
}

