import JSON
import NavTesting
import Testing

/// Values kept as the text the writer writes (``WrittenJSON``): made from a value or straight from
/// where it lies in a document, the same text either way; read back, the same value.
@Suite struct WrittenJSONTests {
    private static let keys = ["a", "b", "id", "with", "é", "", "k\"q", "tab\t"]

    private static func randomValue(_ rng: inout SplitMix64, depth: Int) -> JSONValue {
        switch rng.next() % (depth > 3 ? 7 : 9) {
        case 0: return .null
        case 1: return .bool(rng.next() % 2 == 0)
        case 2: return .int(Int(bitPattern: UInt(rng.next())) >> Int(rng.next() % 64))
        case 3: return .uint(UInt64(Int.max) + 1 + rng.next() % 1000)
        case 4:
            let doubles: [Double] = [0.5, -2.25, 3.0, -0.0, 1e15, 1e20, -1.5e-7, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 123456.789]
            return .double(doubles[Int(rng.next() % UInt64(doubles.count))])
        case 5: return .string(String(repeating: "xé\n\"\\\u{1}", count: Int(rng.next() % 3)))
        case 6: return .string(["42", "", "p1", "a longer string than fifteen bytes"][Int(rng.next() % 4)])
        case 7: return .array((0..<Int(rng.next() % 4)).map { _ in randomValue(&rng, depth: depth + 1) })
        default:
            // Repeated and non-ASCII keys on purpose: the text from the bytes is refused for them.
            let members = (0..<Int(rng.next() % 5)).map { _ in
                (key: keys[Int(rng.next() % UInt64(keys.count))], value: randomValue(&rng, depth: depth + 1))
            }
            return .object(JSONObject(uniqueMembers: members))
        }
    }

    /// Whether the bytes tell the text: every object's keys ASCII, distinct, at most the limit.
    private static func bytesTellTheText(_ v: JSONView) -> Bool {
        switch v.kind {
        case .array: return v.elements.allSatisfy(bytesTellTheText)
        case .object:
            var seen: [[UInt8]] = []
            var ok = v.count <= JSONView.maxDistinctMembers
            v.forEachMember { k, m in
                let key = Array(k)
                if key.contains(where: { $0 >= 0x80 }) || seen.contains(key) || !bytesTellTheText(m) { ok = false }
                seen.append(key)
            }
            return ok
        default: return true
        }
    }

    @Test func theTextFromTheBytesIsTheValuesTextAndReadsBackAsTheValue() throws {
        var rng = SplitMix64(seed: 0x7E47)
        let parser = JSONParser()
        var fromBytes = 0, refused = 0
        for round in 0..<3000 {
            var written = Self.randomValue(&rng, depth: 0)
            if round % 2 == 0 { written = .object(JSONObject(uniqueMembers: [(key: "id", value: written)])) }
            let bytes = JSONWriter.encode(written)
            let view = try bytes.withUnsafeBytes { b throws(JSONParseError) in try parser.view(b) }
            let value = view.value
            let expected = JSONWriter.string(value)
            let text = WrittenJSON(value)
            #expect(text.string == expected)
            #expect(text.count == expected.utf8.count)
            #expect(text.value == value, "\(expected)")
            #expect(text.isEmptyObject == (expected == "{}"))
            if let inPlace = WrittenJSON(view) {
                fromBytes += 1
                #expect(inPlace.string == expected)
                #expect(Self.bytesTellTheText(view), "\(expected)")
            } else {
                refused += 1
                #expect(!Self.bytesTellTheText(view), "\(expected)")
            }
            var w = JSONWriter()
            w.raw("[")
            w.write(text)
            w.raw("]")
            #expect(String(decoding: w.bytes, as: UTF8.self) == "[\(expected)]")
        }
        #expect(fromBytes > 1000 && refused > 100, "\(fromBytes) made from the bytes, \(refused) refused")
    }

    @Test func anObjectWithMoreMembersThanTheLimitIsLeftToTheValue() throws {
        let parser = JSONParser()
        for n in [JSONView.maxDistinctMembers, JSONView.maxDistinctMembers + 1] {
            let o = JSONObject(uniqueMembers: (0..<n).map { (key: "k\($0)", value: .int($0)) })
            let bytes = JSONWriter.encode(.object(o))
            let view = try bytes.withUnsafeBytes { b throws(JSONParseError) in try parser.view(b) }
            #expect((WrittenJSON(view) != nil) == (n <= JSONView.maxDistinctMembers))
        }
    }

    @Test func theReaderRefusesWhatTheWriterDoesNotWrite() {
        let bad = ["", " 1", "1 ", "{", "}", "{\"a\":}", "{\"a\" :1}", "{\"a\":1,}", "[1,]", "[1 2]", "nul", "truex", "\"abc", "\"\\x\"",
                   "\"\\u12\"", "--1", "1e", "{a:1}", "[\"a\":1]", "{\"a\":1}}", String(repeating: "[", count: 3000) + String(repeating: "]", count: 3000)]
        for text in bad {
            var s = text
            let v = s.withUTF8 { JSONValue(written: UnsafeRawBufferPointer($0)) }
            #expect(v == nil, "\(text.prefix(40)) read as \(String(describing: v))")
        }
        let good: [(String, JSONValue)] = [
            ("{}", .object([:])), ("[]", .array([])), ("-0.0", .double(0)), ("18446744073709551615", .uint(.max)),
            ("-9223372036854775808", .int(.min)), ("\"\\u00e9\\/\"", .string("é/")), ("[[[1]]]", .array([.array([.array([.int(1)])])])),
        ]
        for (text, value) in good {
            var s = text
            #expect(s.withUTF8 { JSONValue(written: UnsafeRawBufferPointer($0)) } == value, "\(text)")
        }
    }
}
