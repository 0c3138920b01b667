import Foundation
import JSON
import NavTesting
import Testing

@Suite struct JSONParserTests {
    let parser = JSONParser(maxDepth: 64)

    @Test func parsesEveryKindOfValue() throws {
        let v = try parser.parse(#"{"a":[1,-2,3.5,true,false,null],"b":{"c":"d\n\u00e9"},"e":1e3,"big":18446744073709551615}"#)
        #expect(v["a"] == [1, -2, 3.5, true, false, nil])
        #expect(v["b"]?["c"] == "d\né")
        #expect(v["e"] == .double(1000))
        #expect(v["big"]?.doubleValue == 18446744073709551615.0)
    }

    @Test func keepsMemberOrderAndLastDuplicateWins() throws {
        let v = try parser.parse(#"{"z":1,"a":2,"z":3}"#)
        #expect(v.objectValue?.keys == ["z", "a"])
        #expect(v["z"] == 3)
    }

    @Test(arguments: [
        ("", JSONParseError.Kind.empty), ("   ", .empty), ("{", .syntax), ("[1,]", .syntax),
        ("{\"a\" 1}", .syntax), ("nul", .syntax), ("\"\u{1}\"", .syntax),
    ])
    func rejectsMalformedInput(text: String, kind: JSONParseError.Kind) {
        #expect(throws: JSONParseError.self) { try parser.parse(text) }
        do { _ = try parser.parse(text) } catch { #expect(error.kind == kind) }
    }

    @Test func rejectsInvalidUTF8() {
        let bytes: [UInt8] = Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        do {
            _ = try parser.parse(bytes)
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.kind == .invalidUTF8)
        }
    }

    @Test func depthLimitIsExact() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        _ = try parser.parse(ok)
        do {
            _ = try parser.parse(deep)
            Issue.record("accepted 65 levels")
        } catch {
            #expect(error.kind == .tooDeep)
        }
        let veryDeep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParseError.self) { try parser.parse(veryDeep) }
    }
}

@Suite struct JSONWriterTests {
    @Test func writesCompactJSON() {
        let v: JSONValue = ["a": [1, 2.5, "x", nil, true], "b": [:]]
        #expect(JSONWriter.string(v) == #"{"a":[1,2.5,"x",null,true],"b":{}}"#)
        #expect(JSONWriter.string(.double(3)) == "3.0")
        #expect(JSONWriter.string(.int(Int.min)) == "\(Int.min)")
    }

    /// A document may nest `deepestNesting` arrays and objects, one more is refused as too deep
    /// (simdjson does not count an empty one innermost: `[]` there is a value, not a level).
    @Test func deepestNestingIsWhatTheParserTakes() throws {
        for depth in [2, 8, 64] {
            let parser = JSONParser(maxDepth: depth)
            let n = parser.deepestNesting
            func nested(_ k: Int) -> [UInt8] { Array((String(repeating: "[", count: k) + "1" + String(repeating: "]", count: k)).utf8) }
            #expect(throws: Never.self) { _ = try parser.parse(nested(n)) }
            #expect { _ = try parser.parse(nested(n + 1)) } throws: { ($0 as? JSONParseError)?.kind == .tooDeep }
        }
    }

    /// Integers past `Int.max` (to `UInt64.max`) stay exact integers: read, compared, measured and
    /// written back as they came (a JSON-RPC id must come back as it was sent).
    @Test func integersPastIntMaxStayExact() throws {
        let parser = JSONParser(maxDepth: 8)
        for text in ["9223372036854775808", "12345678901234567890", "18446744073709551615"] {
            let v = try parser.parse(Array("[\(text)]".utf8))
            #expect(v == .array([.uint(UInt64(text)!)]), "\(v)")
            #expect(JSONWriter.string(v) == "[\(text)]")
            #expect(v.encodedSize == text.count + 2)
            #expect(v.arrayValue?.first?.typeName == "integer" && v.arrayValue?.first?.intValue == nil)
            let view = try Array(text.utf8).withUnsafeBytes { raw throws(JSONParseError) in try parser.view(raw) }
            var w = JSONWriter()
            w.write(view)
            #expect(String(decoding: w.bytes, as: UTF8.self) == text)
        }
        #expect(try parser.parse(Array("9223372036854775807".utf8)) == .int(Int.max))
        #expect(JSONValue.uint(18_446_744_073_709_551_615) != .uint(18_446_744_073_709_551_614))
    }

    @Test func integersAreWrittenAsSwiftPrintsThem() {
        var rng = SplitMix64(seed: 0x1A7)
        var samples = [0, 1, 9, 10, 11, 99, 100, 999_999, Int.max, Int.min, -1, -9, -10]
        for _ in 0..<2000 { samples.append(Int(bitPattern: UInt(rng.next())) >> Int(rng.next() % 64)) }
        for n in samples { #expect(JSONWriter.string(.int(n)) == String(n)) }
        // The reserved-room writer of known-shape replies writes them the same way, node ids too.
        for n in samples {
            var w = JSONWriter()
            w.reserving(ReservedOutput.maxIntBytes * 2 + 4) { o in
                o.int(n)
                o.raw(UInt8(ascii: " "))
                o.nodeId(n)
            }
            #expect(String(decoding: w.bytes, as: UTF8.self) == "\(n) \"n\(n)\"")
        }
    }

    @Test func escapesControlCharactersQuotesAndBackslashes() {
        let s = "q\"b\\n\n\r\t\u{8}\u{c}\u{1}\u{1f}é😀"
        #expect(JSONWriter.string(.string(s)) == #""q\"b\\n\n\r\t\b\f\u0001\u001fé😀""#)
    }

    /// Property: a string is written byte for byte as its UTF-8 bytes are (small strings take their
    /// own path, copied as two words; their neighbours in the buffer are left as they were).
    @Test func aStringIsWrittenAsItsBytesAre() {
        var rng = SplitMix64(seed: 0x57A1)
        let alphabet: [Unicode.Scalar] = ["a", "Z", "0", " ", "\"", "\\", "\u{0}", "\u{1f}", "\u{7f}", "é", "中", "😀"]
        for _ in 0..<3000 {
            var s = ""
            for _ in 0..<Int(rng.next() % 20) { s.unicodeScalars.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
            var fast = JSONWriter(capacity: Int(rng.next() % 4)), slow = JSONWriter(capacity: 1)
            fast.raw("[")
            fast.write(string: s)
            fast.raw("]")
            slow.raw("[")
            s.utf8.withContiguousStorageIfAvailable { slow.write(utf8: UnsafeRawBufferPointer($0)) } ?? {
                var copy = s
                copy.withUTF8 { slow.write(utf8: UnsafeRawBufferPointer($0)) }
            }()
            slow.raw("]")
            #expect(fast.bytes == slow.bytes, "string \(s.debugDescription)")
        }
    }

    /// Property: for random strings (including every control character and non-ASCII text), what the
    /// writer produces is read back by Foundation's decoder as the same string.
    @Test func stringsRoundTripThroughFoundation() throws {
        var rng = SplitMix64(seed: 0x5EED)
        let alphabet: [Unicode.Scalar] = (0..<0x80).compactMap(Unicode.Scalar.init) +
            ["é", "ß", "中", "😀", "\u{2028}", "\u{10FFFF}"]  // not U+FEFF: Foundation on Linux drops it
        for _ in 0..<2000 {
            let n = Int(rng.next() % 24)
            var s = ""
            for _ in 0..<n { s.unicodeScalars.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
            let encoded = Data(JSONWriter.encode(["s": .string(s), "n": .int(Int(bitPattern: UInt(rng.next())))]))
            let decoded = try JSONSerialization.jsonObject(with: encoded) as? [String: Any]
            #expect(decoded?["s"] as? String == s, "string \(s.debugDescription)")
            let back = try JSONParser().parse([UInt8](encoded))
            #expect(back["s"] == .string(s))
        }
    }

    @Test func doublesRoundTrip() throws {
        var rng = SplitMix64(seed: 7)
        let p = JSONParser()
        for _ in 0..<2000 {
            let d = Double(bitPattern: rng.next())
            guard d.isFinite else { continue }
            let back = try p.parse(JSONWriter.encode(.double(d)))
            #expect(back.doubleValue == d)
        }
    }
}


/// Lines indexed together (`beginBatch`) parse exactly as each line alone: the same value or the
/// same error, whatever the lines hold, including lines that are not one whole JSON document.
@Suite struct JSONBatchTests {
    /// Lines of every shape: documents, several values on a line, a document split across lines,
    /// unterminated strings, invalid UTF-8, blank lines, nesting over the limit, `\r` endings,
    /// request lines of the form the batch indexes only the params of.
    static let pool: [[UInt8]] = [
        #"{"jsonrpc": "2.0", "id": 1, "method": "navigate", "params": {"session": "s1", "to": "shop.Product", "with": {"id": "42"}}}"#,
        #"{"method":"dismiss","jsonrpc":"2.0","id":2,"params":{"session":"s1"}}"#,
        #"[{"a":1},{"b":[true,false,null]}]"#, #"{"s":"tab\there \"quoted\" \u00e9 \ud83d\ude00"}"#,
        "42", "-1.5e3", #""just a string""#, "true", "null", "[]", "{}", "1 2", #"{"a":1} {"b":2}"#, "{} x",
        #"{"a":"#, "1}", #"{"a":"unterminated"#, #"still"}"#, "", "   ", "\t", "{\"a\":1}\r", " [1, 2 ,3 ] ",
        "nul", "[1,]", "{\"a\" 1}", "\"\u{1}\"", String(repeating: "[", count: 9) + String(repeating: "]", count: 9),
        String(repeating: "[", count: 8) + String(repeating: "]", count: 8), "]", "}", "{\"k\":\"v\"}}",
        // Request lines of the form whose params alone are indexed: parsed whole, each ends the batch.
        #"{"jsonrpc":"2.0","id":1,"method":"navigate","params":{"session":"s1","to":"shop.Product","with":{"id":"42"}}}"#,
        #"{"jsonrpc":"2.0","id":2,"method":"dismiss"}"#,
    ].map { Array($0.utf8) } + [Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8), [0xFF]]

    /// (`NAVD_BATCH_ROUNDS=300000 swift test --filter batchedLines` runs more rounds than the default 3,000.)
    @Test func batchedLinesParseAsEachLineAlone() throws {
        var rng = SplitMix64(seed: 0xBA7C)
        let batched = JSONParser(maxDepth: 8)
        let alone = JSONParser(maxDepth: 8)
        for _ in 0..<(Int(ProcessInfo.processInfo.environment["NAVD_BATCH_ROUNDS"] ?? "") ?? 3000) {
            let count = 2 + Int(rng.next() % 14)
            var buffer: [UInt8] = []
            var lines: [Range<Int>] = []
            for _ in 0..<count {
                // Mostly whole documents (the first eleven), so that batches run on for a while.
                let line = Self.pool[Int(rng.next() % UInt64(rng.next() % 8 == 0 ? Self.pool.count : 11))]
                lines.append(buffer.count..<(buffer.count + line.count))
                buffer += line
                buffer.append(0x0A)
            }
            let interrupt = rng.next() % 4 == 0 ? Int(rng.next() % UInt64(count)) : -1
            buffer += [UInt8](repeating: 0x20, count: JSONParser.padding)
            buffer.withUnsafeBytes { all in
                let end = lines.last!.upperBound + 1
                batched.beginBatch(UnsafeRawBufferPointer(rebasing: all[0..<end]))
                defer { batched.endBatch() }
                for (i, r) in lines.enumerated() {
                    // Another document parsed in the middle ends the batch; the rest still parse right.
                    if i == interrupt { _ = try? batched.parse(Array("[1]".utf8)) }
                    let line = UnsafeRawBufferPointer(rebasing: all[r])
                    let expected = Result { () throws(JSONParseError) in try alone.view(line).value }
                    let got = Result { () throws(JSONParseError) in try batched.view(line, padded: true).value }
                    switch (expected, got) {
                    case (.success(let a), .success(let b)): #expect(a == b, "line \(i) of \(String(decoding: all[0..<end], as: UTF8.self))")
                    case (.failure(let a), .failure(let b)): #expect(a == b, "line \(i) of \(String(decoding: all[0..<end], as: UTF8.self))")
                    default: Issue.record("line \(i): alone \(expected), batched \(got) in \(String(decoding: all[0..<end], as: UTF8.self))")
                    }
                }
            }
        }
        // The index served many lines (the comparison is not only of lines parsed alone).
        #expect(batched.batchedDocuments > 10_000, "\(batched.batchedDocuments) lines parsed from a batch's index")
    }

    @Test func wholeDocumentsAreParsedFromTheIndex() throws {
        let parser = JSONParser(maxDepth: 64)
        let lines = (0..<16).map { #"{"jsonrpc": "2.0", "id": \#($0), "method": "dismiss", "params": {"session": "s\#($0)"}}"# }
        let buffer = Array((lines.joined(separator: "\n") + "\n").utf8) + [UInt8](repeating: 0, count: JSONParser.padding)
        let before = parser.batchedDocuments
        try buffer.withUnsafeBytes { all in
            parser.beginBatch(UnsafeRawBufferPointer(rebasing: all[0..<(all.count - JSONParser.padding)])); defer { parser.endBatch() }
            var start = 0
            for (i, l) in lines.enumerated() {
                let v = try parser.view(UnsafeRawBufferPointer(rebasing: all[start..<(start + l.utf8.count)]), padded: true).value
                #expect(v["id"] == .int(i))
                #expect(v["params"]?["session"] == .string("s\(i)"))
                start += l.utf8.count + 1
            }
        }
        #expect(parser.batchedDocuments - before == 16)
    }
}

/// `encodedSize` counts exactly what the writer writes (the size limits measure it).
@Suite struct JSONSizeTests {
    func random(_ depth: Int, _ rng: inout SplitMix64) -> JSONValue {
        let strings = ["", "a", "é\u{1}\n\"\\", "\u{7f}\t\u{8}\u{c}\r", String(repeating: "x", count: 40), "日本"]
        switch Int.random(in: 0..<(depth > 3 ? 6 : 8), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int([0, -1, 9, 10, -10, Int.max, Int.min, 123_456].randomElement(using: &rng)!)
        case 3: return .double([0.5, -2.0, 1e20, 3.25e-7, .nan, .infinity, 1e15, 999_999_999_999_999.0].randomElement(using: &rng)!)
        case 4, 5: return .string(strings.randomElement(using: &rng)!)
        case 6: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in random(depth + 1, &rng) })
        default:
            return .object(JSONObject((0..<Int.random(in: 0...4, using: &rng)).map { i in (strings.randomElement(using: &rng)! + "\(i)", random(depth + 1, &rng)) }))
        }
    }

    @Test func encodedSizeIsTheWrittenSize() throws {
        var rng = SplitMix64(seed: 7)
        for i in 0..<5_000 {
            let v = i % 2 == 0 ? random(0, &rng) : .object(JSONObject((0..<3).map { k in ("k\(k)", random(1, &rng)) }))
            let text = JSONWriter.encode(v)
            #expect(v.encodedSize == text.count, "\(JSONWriter.string(v))")
        }
    }
}
