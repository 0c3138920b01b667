import Foundation
import JSON
import NavTesting
import Testing

/// A parse error names the line, column and byte of the first bad byte and what was expected there.
@Suite struct JSONSyntaxLocatorTests {
    func error(_ text: String) -> JSONParseError? {
        do {
            _ = try JSONParser(maxDepth: 64).parse(Array(text.utf8))
            return nil
        } catch { return error }
    }

    static let cases: [(String, Int, Int, String, String)] = [
        (#"{"jsonrpc":"2.0","id":1,"method":"ping",}"#, 1, 41, "a member name in double quotes", "'}'"),
        (#"{"jsonrpc":"2.0","id":1 "method":"ping"}"#, 1, 25, "',' or '}' after a member", "'\"'"),
        (#"{"a":[1,2,]}"#, 1, 11, "a value", "']'"),
        ("{\"a\":\n  [1 2]}", 2, 6, "',' or ']' after an element", "'2'"),
        (#"{"a":tru}"#, 1, 9, "`true`", "'}'"),
        (#"{"a" 1}"#, 1, 6, "':' after the member name", "'1'"),
        (#"{"a":"x\q"}"#, 1, 9, "an escape", "'q'"),
        (#"{"a":"\u12G4"}"#, 1, 11, "four hex digits after \\u", "'G'"),
        (#"{"a":01}"#, 1, 7, "',' or '}' after a member", "'1'"),
        (#"{"a":-}"#, 1, 7, "a digit", "'}'"),
        (#"{"a":1.}"#, 1, 8, "a digit after the decimal point", "'}'"),
        (#"{"a":1}x"#, 1, 8, "the end of the document", "'x'"),
        (#"{"a":"open"#, 1, 11, "'\"' closing the string", "the end of the message"),
        (#"[[[[1]]]"#, 1, 9, "',' or ']'", "the end of the message"),
        ("{\"a\":\"x\ty\"}", 1, 8, "a character of the string", "byte 0x9"),
        // Well formed, and still refused by simdjson: named too, with what navd can hold.
        (#"{"a":18446744073709551616}"#, 1, 6, "an integer from -9223372036854775808 to 18446744073709551615", "18446744073709551616"),
        (#"{"a":-9223372036854775809}"#, 1, 6, "an integer from", "-9223372036854775809"),
        (#"{"a":[1e400]}"#, 1, 7, "a number within a double's range", "1e400"),
        (#"{"a":"x\uDC00"}"#, 1, 8, "an escape other than a lone low surrogate", #"\uDC00"#),
        (#"{"a":"\ud800\u0041"}"#, 1, 13, #"a low surrogate (\uDC00 to \uDFFF) right after the high surrogate \ud800"#, #"'\'"#),
        (#"{"a":"\uD83D"}"#, 1, 13, "a low surrogate", "'\"'"),
        // A byte order mark before the document is named as one (a lone 0xEF is a byte).
        ("\u{FEFF}{\"a\":1}", 1, 1, "a value", "a UTF-8 byte order mark (EF BB BF), which JSON texts do not carry; send the JSON without it"),
    ]

    @Test(arguments: cases)
    func namesTheFirstBadByte(text: String, line: Int, column: Int, expected: String, found: String) throws {
        let e = try #require(error(text), "\(text) was accepted")
        #expect(e.kind == .syntax)
        let at = try #require(e.location, "no location for \(text): \(e.detail)")
        #expect(at.line == line && at.column == column, "\(text): \(at)")
        #expect(at.expected.hasPrefix(expected) && at.found == found, "\(text): \(at)")
        #expect(e.detail == at.description && e.detail.contains("line \(line), column \(column)"))
    }

    /// Property: a document the writer wrote is well formed to the locator too, and cutting it
    /// anywhere gives a location within it, at or after where simdjson's refusal can be seen.
    @Test func validDocumentsHaveNoLocationAndTruncatedOnesOneInside() throws {
        var rng = SplitMix64(seed: 0x10C)
        for _ in 0..<2_000 {
            let v = JSONSizeTests().random(0, &rng)
            let text = JSONWriter.encode(v)
            #expect(text.withUnsafeBytes { JSONSyntaxLocator.locate($0) } == nil, "\(String(decoding: text, as: UTF8.self))")
            guard text.count > 1 else { continue }
            // (A cut through a multi-byte character is read as U+FFFD.)
            let cut = String(decoding: text.prefix(Int(rng.next() % UInt64(text.count - 1)) + 1), as: UTF8.self)
            if let e = error(cut), e.kind == .syntax {
                let at = try #require(e.location, "\(cut)")
                #expect(at.offset <= cut.utf8.count, "\(cut): \(at)")
            }
        }
    }

    /// What the locator accepts at the edges of what simdjson holds: the largest integers, a pair of
    /// surrogates, an underflowing double.
    @Test func theEdgesOfWhatIsHeldParse() throws {
        for text in [#"[18446744073709551615,-9223372036854775808,1e-400,1.7976931348623157e308]"#, #"["\ud83d\ude00"]"#] {
            #expect(error(text) == nil, "\(text)")
            #expect(Array(text.utf8).withUnsafeBytes { JSONSyntaxLocator.locate($0) } == nil, "\(text)")
        }
    }

    /// Nesting does not recurse: a hundred thousand open brackets are located at the end.
    @Test func deepNestingIsScannedWithoutRecursion() {
        let text = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        let at = text.withUnsafeBytes { JSONSyntaxLocator.locate($0) }
        #expect(at?.offset == 100_000 && at?.found == "the end of the message")
    }
}
