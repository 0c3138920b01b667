import NavTesting
import Testing
@testable import NavGraph

/// The setup schemas' `pattern` matcher: the strings it matches are those Swift's own (backtracking)
/// `Regex` matches, for random patterns of the syntax it reads; it refuses what needs
/// backtracking with a message and a position; and a pattern that takes a backtracking matcher
/// exponential time takes it one pass.
@Suite struct PatternTests {
    /// Random patterns over a small alphabet (so that random strings often match), compared with
    /// `Regex` on random strings. Nested quantifiers are drawn too, with strings short enough for
    /// `Regex` to answer. (`\b` and `\B` are left to ``examples()``: `Regex`'s simple word
    /// boundary does not count digits as word characters, where ECMA-262's does.)
    @Test(arguments: [1, 2, 3, 4])
    func matchesWhatRegexMatches(seed: UInt64) throws {
        var rng = SplitMix64(seed: 0x9A77 &+ seed)
        let atoms = ["a", "b", "c", ".", "[ab]", "[^a]", "[a-c]", "\\d", "\\w", "\\s", "\\D", "[\\d-]", "x", "1", " ", "\\."]
        let quantifiers = ["", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,}", "*?", "+?"]
        var groups = 0
        func pattern(_ depth: Int) -> String {
            var out = ""
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                var atom: String
                if depth < 3 && Int.random(in: 0..<5, using: &rng) == 0 {
                    groups += 1
                    let open = ["(", "(?:", "(?<g\(groups)>"][Int.random(in: 0..<3, using: &rng)]
                    atom = open + pattern(depth + 1) + (Bool.random(using: &rng) ? "|" + pattern(depth + 1) : "") + ")"
                } else {
                    atom = atoms[Int.random(in: 0..<atoms.count, using: &rng)]
                }
                atom += quantifiers[Int.random(in: 0..<quantifiers.count, using: &rng)]
                out += atom
            }
            if depth == 0 {
                if Int.random(in: 0..<3, using: &rng) == 0 { out = "^" + out }
                if Int.random(in: 0..<3, using: &rng) == 0 { out += "$" }
            }
            return out
        }
        let letters: [Character] = ["a", "b", "c", "x", "1", " ", "-", ".", "é"]
        var compared = 0
        for _ in 0..<200 {
            let source = pattern(0)
            let mine = try Pattern(source)
            // ECMA-262's classes and boundaries are ASCII, and it reads Unicode scalars.
            let theirs = try Regex(source).asciiOnlyWordCharacters().asciiOnlyDigits().wordBoundaryKind(.simple).matchingSemantics(.unicodeScalar)
            for _ in 0..<20 {
                let s = String((0..<Int.random(in: 0...6, using: &rng)).map { _ in letters[Int.random(in: 0..<letters.count, using: &rng)] })
                let expected = (try theirs.firstMatch(in: s)) != nil
                #expect(mine.matches(s) == expected, "`\(source)` on \"\(s)\": Regex says \(expected)")
                compared += 1
            }
        }
        #expect(compared == 4_000)
    }

    @Test func examples() throws {
        let cases: [(String, String, Bool)] = [
            ("^ord-[0-9]+$", "ord-12", true), ("^ord-[0-9]+$", "ord-x", false), ("[0-9]", "abc1def", true),
            ("^$", "", true), ("", "anything", true), ("^a{3}$", "aaa", true), ("^a{3}$", "aaaa", false),
            ("^a{2,}$", "a", false), ("^a{2,}$", "aaaaa", true), ("^(?:ab|cd){1,2}$", "abcd", true), ("^(?:ab|cd){1,2}$", "abcdab", false),
            ("^\\u00e9\\x41\\u{1F600}$", "éA😀", true), ("^[\\u0041-\\u0043]+$", "ABC", true), ("^[\\u0041-\\u0043]+$", "ABD", false),
            ("a.c", "a\nc", false), ("a.c", "a-c", true), ("^[^]$", "\n", true), ("^[]$", "x", false),
            ("\\bcat\\b", "a cat!", true), ("\\bcat\\b", "concat", false), ("\\Bcat", "concat", true),
            ("x{,3}", "x{,3}", true), ("a{", "a{", true), ("]}", "]}", true), ("^\\s+$", "\u{00A0}\t", true),
            ("^[\\w.-]+@[\\w-]+\\.[a-z]{2,}$", "jo.doe@mail.e", false), ("^[\\w.-]+@[\\w-]+\\.[a-z]{2,}$", "jo.doe@mail.io", true),
        ]
        for (source, s, expected) in cases {
            #expect(try Pattern(source).matches(s) == expected, "`\(source)` on \"\(s)\"")
        }
    }

    /// Patterns whose backtracking takes exponential or high polynomial time answer in one pass:
    /// each would take `Regex` longer than the test run on these strings.
    @Test func nestedQuantifiersTakeOnePass() throws {
        let long = String(repeating: "a", count: 5_000) + "!"
        for source in ["^(a+)+$", "^(a|a)*$", "^(a*)*b", "^((a+)+)+[-._a-z\\d]$", "(\\w+\\s?)+$x", "^(a?){40}a{40}$"] {
            #expect(try !Pattern(source).matches(long), "`\(source)`")
        }
        #expect(try Pattern("^(a?){40}a{40}$").matches(String(repeating: "a", count: 40)))
    }

    /// A check is bounded however long the string: one that would pass ``Pattern/maxSteps`` stops
    /// and says so, and the schema refuses the value with a message that says why.
    @Test func aCheckStopsAfterItsSteps() throws {
        let wide = try Pattern(".{0,400}x")  // about 400 states alive at each character
        let long = String(repeating: "a", count: 20_000)
        #expect(wide.check(long) == .tooCostly)
        #expect(wide.check(String(repeating: "a", count: 500) + "x") == .matches)
        #expect(try Pattern("^[a-z]+$").check(long) == .matches)
        var errors: [Schema.CompileError] = []
        let schema = try #require(Schema.compile(["type": "string", "pattern": ".{0,400}x"], errors: &errors))
        let v = try #require(schema.validate(.string(long)))
        #expect(v.rule == "pattern" && v.message.contains("is too long (20000 characters) to be checked against the pattern"), "\(v)")
    }

    @Test func whatNeedsBacktrackingOrIsMalformedIsRefusedWithItsPlace() {
        let refused: [(String, String, Int)] = [
            ("^(?=.*Z)Q{3}$", "lookahead", 2), ("(?!x)", "lookahead", 1), ("(?<=a)b", "lookbehind", 1), ("(?<!a)b", "lookbehind", 1),
            ("(a)\\1", "backreferences", 4), ("(?<n>a)\\k<n>", "backreferences", 8), ("*a", "repeats nothing", 1), ("a**", "already repeated", 3),
            ("(ab", "not closed", 1), ("[ab", "not closed", 1), ("ab)", "closes no group", 3), ("[z-a]", "out of order", 3),
            ("a{1001}", "above 1000", 3), ("a{3,2}", "below the smallest", 2), ("\\p{L}", "not an escape", 1), ("^*", "cannot be repeated", 1),
            ("a\\", "ends in", 2), ("(?i)a", "other groups", 1), ("(?<>a)", "named group", 1),
            (String(repeating: "(", count: 101) + String(repeating: ")", count: 101), "nested more than 100", 101),
            ("[a-z]{600}[0-9]{600}x", "more than 1000 instructions", 1),
        ]
        for (source, says, at) in refused {
            do {
                _ = try Pattern(source)
                Issue.record("`\(source)` was compiled")
            } catch {
                #expect(error.message.contains(says), "`\(source)`: \(error)")
                #expect(error.offset + 1 == at, "`\(source)`: \(error)")
            }
        }
    }

    /// A schema with such a pattern is a compile error naming it (`navd check` shows where).
    @Test func aSchemaWithARefusedPatternIsACompileError() {
        var errors: [Schema.CompileError] = []
        _ = Schema.compile(["type": "string", "pattern": "^(?=x)"], errors: &errors)
        #expect(errors.map(\.pointer) == ["/pattern"])
        #expect(errors.first?.message.contains("lookahead (`(?=`) is not supported: navd matches patterns without backtracking (at character 2)") == true, "\(errors)")
    }
}
