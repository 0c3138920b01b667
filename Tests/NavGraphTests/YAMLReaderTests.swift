import JSON
import Testing
@testable import NavGraph

/// The YAML reader behind graph loading: libyaml's events made into a ``Doc`` with positions,
/// aliases and merge keys, duplicate keys reported, every node counted against the budget.
@Suite struct YAMLReaderTests {
    func read(_ text: String, maxNodes: Int = 10_000) -> (doc: Doc?, diagnostics: [String]) {
        var d = Diagnostics()
        let doc = Doc.parse(text, file: "f.yaml", maxNodes: maxNodes, diagnostics: &d)
        return (doc, d.sorted.map(\.description))
    }

    @Test func scalarsKeepTheirStyleAndPosition() throws {
        let (doc, d) = read("a: 1\nb: \"1\"\nc: [x, 'y']\nd: |\n  two\n  lines\n")
        #expect(d.isEmpty)
        let m = try #require(doc?.mapping)
        #expect(m.map(\.key) == ["a", "b", "c", "d"])
        #expect(doc?["a"]?.json == 1 && doc?["b"]?.json == "1")
        #expect(doc?["c"]?.json == ["x", "y"])
        #expect(doc?["d"]?.json == "two\nlines\n")
        #expect(m[2].keyLocation.line == 3 && m[2].keyLocation.column == 1)
        #expect(doc?["c"]?.sequence?[1].location == SourceLocation(file: "f.yaml", line: 3, column: 8))
    }

    @Test func aliasesRepeatWhatTheyNameAndMergeKeysMerge() {
        let (doc, d) = read("""
            base: &b {x: 1, y: 2}
            copy: *b
            merged:
              <<: *b
              y: 3
            """)
        #expect(d.isEmpty, "\(d)")
        #expect(doc?["copy"]?.json == ["x": 1, "y": 2])
        #expect(doc?["merged"]?.json == ["y": 3, "x": 1], "a key given beside the merge wins")
        #expect(doc?["merged"]?.mapping?.map(\.key) == ["y", "x"])
    }

    @Test func eachLaterDuplicateKeyIsReportedAndTheFirstKept() {
        let (doc, d) = read("a: 1\nb: {k: 1, k: 2}\na: 3\n")
        #expect(d == ["f.yaml:2:11: error: duplicate key `k` (first at line 2): each name may appear once in a mapping; rename or merge the two entries",
                      "f.yaml:3:1: error: duplicate key `a` (first at line 1): each name may appear once in a mapping; rename or merge the two entries"])
        #expect(doc?["a"]?.json == 1 && doc?["b"]?.json == ["k": 1])
    }

    @Test func syntaxErrorsUndefinedAliasesAndSecondDocumentsAreReported() {
        #expect(read("a: [1, 2\nb: 3\n").diagnostics.first?.hasPrefix("f.yaml:2:") == true)
        #expect(read("a: *nowhere\n").diagnostics == ["f.yaml:1:4: error: syntax error: found undefined alias `nowhere`"])
        let two = read("a: 1\n---\nb: 2\n").diagnostics
        #expect(two == ["f.yaml:2:1: error: a second YAML document starts here (after `---`); navd reads one document per file (a graph: one module per file, each module a file of its own)"])
        let bad = read("a: \"\u{FFFD}\"\n" + String(decoding: [0x62, 0x3A, 0x20, 0xC3, 0x28, 0x0A], as: UTF8.self))
        #expect(bad.doc != nil || !bad.diagnostics.isEmpty)
    }

    /// A key of more than 1,024 characters on its line is refused by libyaml as a missing `,`, `}`
    /// or `:`; the message says what to change. JSON files are read the same way.
    @Test func aKeyLongerThanAYAMLReaderTakesIsNamedAsTheCause() {
        let key = String(repeating: "\u{E9}", count: 1100)
        for text in ["{\"tokens\": {\"\(key)\": [\"r\"]}}", "tokens:\n  \(key): [r]\n", "tokens: {\(key): [r]}\n"] {
            let d = read(text).diagnostics
            #expect(d.count == 1 && d[0].contains("is the key before this colon longer than 1024 characters?"), "\(d)")
        }
        // 1,024 characters are taken; a colon elsewhere on a long line is not blamed on a key.
        let fits = String(repeating: "a", count: 1020)
        #expect(read("{\"\(fits)\": 1}").diagnostics.isEmpty)
        let other = read("{\"a\": [" + String(repeating: "1, ", count: 400) + "1}").diagnostics
        #expect(other.count == 1 && !other[0].contains("longer than 1024"), "\(other)")
    }

    @Test func anEmptyFileHasNoDocument() {
        #expect(read("").diagnostics.first?.contains("the file is empty") == true)
        #expect(read("# only a comment\n").diagnostics.first?.contains("the file is empty") == true)
    }

    @Test func aliasesCountAgainstTheNodeBudget() {
        var text = "x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        for i in 1...9 { text += "x\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 10).joined(separator: ", ") + "]\n" }
        let (doc, d) = read(text, maxNodes: 100_000)
        #expect(doc == nil && d.count == 1 && d[0].contains("more than 100000 YAML nodes"), "\(d)")
        #expect(read("a: &x [1, 2, 3]\nb: [*x, *x]\n", maxNodes: 16).doc != nil)
        #expect(read("a: &x [1, 2, 3]\nb: [*x, *x]\n", maxNodes: 15).doc == nil)
    }

    @Test func deepNestingDoesNotExhaustTheStack() {
        let depth = 200_000
        let (doc, d) = read(String(repeating: "[", count: depth) + String(repeating: "]", count: depth), maxNodes: 1_000_000)
        #expect(doc != nil || !d.isEmpty)
    }
}
