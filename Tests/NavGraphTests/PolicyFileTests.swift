import Foundation
import JSON
import NavGraph
import Testing

/// The policy file (`--policy`): what it grants, and every problem reported at once with its file,
/// line and column.
@Suite struct PolicyFileTests {
    @Test(arguments: [
        """
        uids: {"1000": [customer, staff], 0: admin}
        tokens: {"s3cret": [auditor]}
        allowReloadPath: true
        """,
        #"{"uids": {"1000": ["customer", "staff"], "0": ["admin"]}, "tokens": {"s3cret": ["auditor"]}, "allowReloadPath": true}"#,
    ])
    func aValidFileGrantsItsRoles(text: String) throws {
        let (p, d) = PolicyFile.parse(text, file: "policy.yaml")
        #expect(!d.hasErrors, "\(d.sorted)")
        #expect(p == PolicyFile(uids: [1000: ["customer", "staff"], 0: ["admin"]], tokens: ["s3cret": ["auditor"]], allowReloadPath: true))
    }

    /// A token short enough to guess is granted, with a warning where it is; 16 bytes or more are not warned of.
    @Test func aShortTokenIsWarnedOf() {
        let (p, d) = PolicyFile.parse("tokens:\n  s3cret: [auditor]\n  9f86d081884c7d659a2feaa0c55ad015: [staff]\n", file: "policy.yaml")
        #expect(!d.hasErrors && p?.tokens.count == 2)
        #expect(p?.warnings.count == 1, "\(p?.warnings ?? [])")
        let w = p?.warnings.first ?? ""
        #expect(w.hasPrefix("policy.yaml:2:3: warning: a token of 6 bytes is easy to guess") && w.contains("openssl rand -hex 16"), "\(w)")
    }

    @Test func absentOrNullSectionsGrantNothing() {
        #expect(PolicyFile.parse("uids:\ntokens: {}\n", file: "p").policy == PolicyFile())
        #expect(PolicyFile.parse("allowReloadPath: false\n", file: "p").policy == PolicyFile())
    }

    @Test func everyProblemIsReportedWhereItIs() {
        let (p, d) = PolicyFile.parse("""
            uids: {"1000": [customer], "abc": [x], "1001": 5, "1002": [{a: 1}]}
            tokens: {"s3cret": [auditor], "": [x]}
            tokenz: 1
            allowReloadPath: yes
            """, file: "policy.yaml")
        #expect(p == nil)
        #expect(d.errors.map(\.description) == [
            "policy.yaml:1:28: error: `abc` under `uids` is not a numeric uid (0 to 4294967295; `id -u NAME` prints a user's)",
            "policy.yaml:1:48: error: the roles of uid 1001 must be names, like [customer, admin]; not `5`",
            "policy.yaml:1:60: error: the roles of uid 1002 must be names, like [customer, admin]; not a mapping",
            "policy.yaml:2:31: error: a token under `tokens` is empty; a client could give it without knowing anything",
            "policy.yaml:3:1: error: unknown key `tokenz` (did you mean `tokens`?); a policy file has uids, tokens and allowReloadPath",
            "policy.yaml:4:18: error: `allowReloadPath` must be true or false, not yes",
        ])
    }

    /// Found by the `policy` fuzz target: a token holding `\L` (U+2028, a YAML escape) was read, and
    /// written as JSON it read back as another token (a YAML reader folds a line break inside a
    /// quoted string). Tokens and roles are one line of printable text; what is read, written as
    /// JSON, reads back the same.
    @Test func aTokenOrRoleWithALineBreakOrControlIsRefused() throws {
        let crash = try #require(Data(base64Encoded: "eyJ1aWRzIjogeyIwNTAxIjogWyJjdXN0/////yJdfSwgInRva2VucyI6IHsiTExMTExMTExMTFxMTExMTExMdCI6ICJhZG1TRkZGRkZGRkZGRkZGMEZGRkZGRkZGRkZpbiJ9fQo="))
        let (p, d) = PolicyFile.parse(String(decoding: crash, as: UTF8.self), file: "p")
        #expect(p == nil && d.errors.map(\.message) == ["a token under `tokens` holds the character U+2028 (a control, a line break or not text); a token is one line of printable text"], "\(d.sorted)")
        let roles = PolicyFile.parse("uids: {\"1\": [\"a\\tb\", \"c\\Pd\", \"e\\uFFFEf\"]}\n", file: "p")
        #expect(roles.policy == nil && roles.diagnostics.errors.count == 3, "\(roles.diagnostics.sorted)")
        // Printable text of any script is kept, and reads back the same from JSON.
        let fine = try #require(PolicyFile.parse("tokens: {\"s3cr\u{E9}t \u{2713}\": [\"r\u{F4}le\"]}\n", file: "p").policy)
        let again = PolicyFile.parse(#"{"tokens": {"s3cr\#u{E9}t \#u{2713}": ["r\#u{F4}le"]}}"#, file: "p").policy
        #expect(fine == again && fine.tokens.count == 1)
    }

    /// Found by the `policy` fuzz target: a token of more than 1,024 characters was read (a plain
    /// key in a flow mapping), and written as JSON it did not read back: a YAML reader takes a key
    /// of at most 1,024 characters on its line. Tokens are at most 500 bytes; the longest, all
    /// quotes and backslashes, reads back from JSON.
    @Test func aTokenLongerThanAKeyMayBeIsRefused() throws {
        let crash = try #require(Data(base64Encoded: Self.longTokenCrash))
        let (p, d) = PolicyFile.parse(String(decoding: crash, as: UTF8.self), file: "p")
        #expect(p == nil && d.errors.contains { $0.message.contains("bytes long; a token may be at most 500 bytes") }, "\(d.sorted)")
        let longest = String(repeating: "\"\\", count: PolicyFile.maxTokenBytes / 2)
        let written = JSONWriter.string(["tokens": .object(JSONObject(uniqueMembers: [(longest, .array(["r"]))]))])
        let read = try #require(PolicyFile.parse(written, file: "p.json").policy, "\(PolicyFile.parse(written, file: "p.json").diagnostics.sorted)")
        #expect(read.tokens == [longest: ["r"]])
        let tooLong = JSONWriter.string(["tokens": .object(JSONObject(uniqueMembers: [(longest + "x", .array(["r"]))]))])
        #expect(PolicyFile.parse(tooLong, file: "p.json").diagnostics.errors.map(\.message)
                    == ["a token under `tokens` is 501 bytes long; a token may be at most 500 bytes (and `hello` takes at most --max-name bytes, 256 by default)"])
    }

    @Test func theShapeOfTheFileItself() {
        #expect(PolicyFile.parse("", file: "p").diagnostics.errors.first?.message.hasPrefix("the policy file is empty") == true)
        #expect(PolicyFile.parse("[1]", file: "p").diagnostics.errors.first?.message.hasPrefix("a policy file is a mapping") == true)
        #expect(PolicyFile.parse("uids: [1000]", file: "p").diagnostics.errors.map(\.description)
                    == [#"p:1:7: error: `uids` must map a uid (such as "1000") to its roles, like {"1000": [customer]}; not a list"#])
        let dup = PolicyFile.parse("uids: {\"1000\": [a], \"1000\": [b]}", file: "p").diagnostics.errors
        #expect(dup.count == 1 && dup[0].message.hasPrefix("duplicate key `1000`"), "\(dup)")
        // Aliases cannot multiply a small file past the bound.
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nuids: {\"1\": [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]}\n"
        #expect(PolicyFile.parse(bomb, file: "p", maxNodes: 5_000).diagnostics.errors.first?.message.contains("more than 5000 YAML nodes") == true)
    }

    /// The `policy` fuzz target's input that found the long token (crash-b3ce77ad…), as base64.
    static let longTokenCrash = "eyJ0b2tlbnMiOiB7REybo7Oz2N7Xg1xcTExMTEx0Ijp1MSAiYdC93YpjdElkRkYiOnUwICL10FxcXFxcXFxcXGN0SWRGRkZGRkxMTExMdCI6dTAgImHQvd2K779cXFxeXFxcXFxcXFyz2N7Xg1xcTExMTEx0Ijp1MCAiYVxcXFxcXFxjdP////////////////////////////////////////////////9MTHQiOnUwICL10FxcXFxcXFxcY3RJZEZGRkZGTExMTEx0Ijp1MCAiYf///////////////////////////////9C93Yrvv70idWlkcyL/SWRGRkZGRkZGISh8XFxMTExMTFxcXFxcY3RJZCVGRkZGTkYhKHxcXExMTExMdDoidTAgIv//////fFxcTExMTExcXFxcXGN0SWQlRkZGRkZGISh8XFxMTEzY3teDXFxMTExMTHQiOnUwICKK779cXFxeXFxcXFxcXFyz2N7Xg1xcTExMTEx0Ijp1MCAiYdC93Yrvv1xcXF5cXFxcTFxcXFxMTHQ6InUwICL/////////XFxcXGNcXFxcXGN0SWTG779cXFxeXFxcXFxcXFyz2N7Xg1xcTExMTEx0Ijp1MCAi9dBcXFxcXFxcXGN0SWRGRkZGRkxMTExMdCI6dTAgImHQvd2K779cXFxeXFxcXFxcXFyz2N7Xg1xcTExMTEx0Ijp1MCAiYVxcXFxjdElkRkZGRkZGRiUofFxcTExMTExcXFxcXGN0SWRGRkZGRiFGRih8XFxMTExMTHQ6IkxMTEx0Ijp1MCAi9dBcXDpcXFxcXFxjdElkRkZGRkb//////////////////0xMTExMdCI6dTAgImHQvd2K779cXFxeXFxcXFxcXFyz2N7Xg1xcTExMTEx0Ijp1MCAiYVxcXFxjdElkRkZGRkZGRiUofFxcTExMTExcXFxcXGN0SWRGRkZGRkZGISh8XFxMTExMTHQ6InUwICL//////5z///////////////////9hXFxcXFxcXFxjdElkxkZGRkZ1MCAi////////////////////////////YVxcXFxcXFxcY3RJZMZGRkZGae5zOiBGRkZGRkY1XFxcTExMfX0K"
}
