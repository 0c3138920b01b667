import Foundation
import JSON
import NavTesting
import Testing

/// The one-pass scanner writes, for every document it takes on, the tape and strings simdjson
/// writes (compared word for word and byte for byte by `checkScanner`), and leaves every other
/// document, every malformed one among them, to simdjson.
@Suite struct JSONScannerTests {
    func check(_ text: String, maxDepth: Int = 64) -> JSONParser.ScannerCheck { check(Array(text.utf8), maxDepth: maxDepth) }

    func check(_ bytes: [UInt8], maxDepth: Int = 64) -> JSONParser.ScannerCheck {
        let parser = JSONParser(maxDepth: maxDepth)
        return bytes.withUnsafeBytes { parser.checkScanner($0) }
    }

    /// Requests, and every kind of value the scanner reads itself.
    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":1,"method":"navigate","params":{"session":"s1","to":"shop.Product","with":{"id":"42"}}}"#,
        #"{"jsonrpc":"2.0","id":2,"method":"dismiss","params":{"session":"s1"}}"#,
        #"{"a":[1,-2,0,true,false,null,[],{},[[]],{"b":{}}],"c":""}"#, "42", "-7", "0", #""s""#, "true", "false", "null",
        "[]", "{}", " \t\r\n[ 1 , 2 ]\n ", #"{"esc":"q\"b\\s\/b\bf\fn\nr\rt\t"}"#, #"{"é":"日本 😀 ß"}"#,
        #"{"dup":1,"dup":2}"#, "999999999999999999", "-999999999999999999",
        #"{"long":"a string of more than eight bytes, and more than sixteen, to run the loop a few times"}"#,
        #"["12345678","1234567","123456789","","\"","\\\\"]"#,
    ])
    func takesPlainDocuments(text: String) {
        #expect(check(text) == .same, "\(text)")
    }

    /// What simdjson decides: numbers other than plain 64-bit integers, `\u` escapes, deep nesting,
    /// and every error.
    @Test(arguments: [
        "1.5", "-1.5e3", "1e3", "1E3", "-0", "1000000000000000000", "18446744073709551615", #""\u00e9""#,
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", "", "  ", "{", "[1,]", "{\"a\" 1}", "nul",
        "\"\u{1}\"", "01", "-", "--1", "+1", "[1 2]", "{\"a\":1,}", "{} x", "1 2", "tru", "truex", "[true\"a\"]", "\"abc",
        "\"a\\x\"", "\"a\\", "{\"a\":}", "{1:2}", "[\"a\":1]", "}", "]", "[}", "{]", "\u{7f}",
        // The last closing bracket read while a container is still open.
        "[[1]", "[[1]  ", "{\"a\":[1}", "[{}", "[1,2", "{\"a\":\"}\"",
    ])
    func leavesTheRestToSimdjson(text: String) {
        #expect(check(text) == .left, "\(text.debugDescription)")
    }

    @Test func leavesInvalidUTF8ToSimdjson() {
        for bad: [UInt8] in [[0xC3, 0x28], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xFF], [0x80],
                             [0xF0, 0x8F, 0xBF, 0xBF], [0xE0, 0x9F, 0xBF]] {
            #expect(check(Array(#"{"a":""#.utf8) + bad + Array(#""}"#.utf8)) == .left, "\(bad)")
        }
        #expect(check(Array(#"{"a":""#.utf8) + [0xF0, 0x9F, 0x98, 0x80] + Array(#""}"#.utf8)) == .same)
    }

    /// Nesting: the scanner takes on no more than `maxDepth - 2` levels (simdjson judges the rest).
    @Test func nestingNearTheLimitIsSimdjsons() {
        func nested(_ n: Int) -> String { String(repeating: "[", count: n) + String(repeating: "]", count: n) }
        #expect(check(nested(6), maxDepth: 8) == .same)
        #expect(check(nested(7), maxDepth: 8) == .left)
        #expect(check(nested(32), maxDepth: 64) == .same)
        #expect(check(nested(33), maxDepth: 64) == .left)
    }

    func randomValue(_ depth: Int, _ rng: inout SplitMix64) -> JSONValue {
        let strings = ["", "a", "é\u{1}\n\"\\/", "\u{7f}\t\u{8}\u{c}\r", String(repeating: "x", count: 40), "日本", "😀", "12345678"]
        switch Int.random(in: 0..<(depth > 3 ? 6 : 8), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int([0, -1, 9, 10, -10, Int.max, Int.min, 123_456, 999_999_999_999_999_999].randomElement(using: &rng)!)
        case 3: return .double([0.5, -2.0, 1e20, 3.25e-7].randomElement(using: &rng)!)
        case 4, 5: return .string(strings.randomElement(using: &rng)!)
        case 6: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in randomValue(depth + 1, &rng) })
        default:
            return .object(JSONObject((0..<Int.random(in: 0...4, using: &rng)).map { i in
                (strings.randomElement(using: &rng)! + "\(i)", randomValue(depth + 1, &rng))
            }))
        }
    }

    /// Property: random documents, and the same documents with bytes changed, cut, or spaced out,
    /// are never read differently (each is taken on and read as simdjson reads it, or left).
    @Test func randomDocumentsAndTheirMutationsAreReadAsSimdjsonReadsThem() {
        var rng = SplitMix64(seed: 0x5CA7)
        let parser = JSONParser(maxDepth: 16)
        let specials: [UInt8] = Array(#"{}[]:,"\ 0-9.eE+tfnu"#.utf8) + [0x0A, 0x09, 0x0D, 0x00, 0x1F, 0x80, 0xC3, 0xFF]
        var taken = 0, left = 0
        for round in 0..<4000 {
            var bytes = JSONWriter.encode(randomValue(0, &rng))
            if round % 2 == 1 {
                for _ in 0...Int(rng.next() % 3) where !bytes.isEmpty {
                    let at = Int(rng.next() % UInt64(bytes.count))
                    switch rng.next() % 4 {
                    case 0: bytes[at] = specials[Int(rng.next() % UInt64(specials.count))]
                    case 1: bytes.removeSubrange(at...)
                    case 2: bytes.insert(specials[Int(rng.next() % UInt64(specials.count))], at: at)
                    default: bytes.insert(0x20, at: at)
                    }
                }
            }
            let result = bytes.withUnsafeBytes { parser.checkScanner($0) }
            #expect(result != .different, "\(String(decoding: bytes, as: UTF8.self).debugDescription)")
            if result == .same { taken += 1 } else { left += 1 }
        }
        // Both ways were exercised.
        #expect(taken > 1000 && left > 1000, "taken \(taken), left \(left)")
    }

    /// A request is parsed by the scanner (not by simdjson), to the same values.
    @Test func requestsAreScanned() throws {
        let parser = JSONParser()
        let before = parser.scannedDocuments
        let v = try parser.parse(#"{"jsonrpc":"2.0","id":7,"method":"navigate","params":{"session":"s1","to":"a.B","with":{"n":-3}}}"#)
        #expect(parser.scannedDocuments == before + 1)
        #expect(v["id"] == 7)
        #expect(v["params"]?["with"]?["n"] == -3)
        _ = try parser.parse("[1.5]")
        #expect(parser.scannedDocuments == before + 1)
    }
}
