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

