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
                #expect(inPlace.count == expected.utf8.count, "\(expected)")
                #expect(inPlace.isEmptyObject == (expected == "{}"))
                var w = JSONWriter()
                w.write(inPlace)
                #expect(String(decoding: w.bytes, as: UTF8.self) == expected)
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

/// Objects of many members cost what their members do: made from a document, merged and compared
/// by hash past ``JSONObject/keysComparedInTurn`` keys, with the results of comparing in turn.
@Suite struct LargeObjectTests {
    private static func randomObject(_ rng: inout SplitMix64, members: Int, keys: Int) -> JSONObject {
        var o = JSONObject()
        for _ in 0..<members {
            let k = "k\(rng.next() % UInt64(keys))"
            let v: JSONValue = rng.next() % 5 == 0 ? .null : .int(Int(rng.next() % 4))
            o.members.append(JSONObject.Member(key: k, value: v))  // repeated keys on purpose
        }
        return o
    }

    /// The merge as the subscript does it, one key at a time.
    private static func mergedInTurn(_ base: JSONObject, _ other: JSONObject, nullRemoves: Bool) -> [JSONObject.Member] {
        var o = base
        for m in other.members {
            if nullRemoves && m.value.isNull { o.members.removeAll { $0.key == m.key } } else { o[m.key] = m.value }
        }
        return o.members
    }

    private static func unique(_ o: JSONObject) -> JSONObject {
        var u = JSONObject()
        for m in o.members where u[m.key] == nil { u.append(m.key, m.value) }
        return u
    }

    @Test func mergingByHashIsMergingInTurn() {
        var rng = SplitMix64(seed: 0x4E46)
        var large = 0
        for round in 0..<2000 {
            let size = Int(rng.next() % 60), keys = 1 + Int(rng.next() % 80)
            let base = Self.unique(Self.randomObject(&rng, members: size, keys: keys))
            let other = Self.randomObject(&rng, members: Int(rng.next() % 60), keys: keys)
            let nullRemoves = round % 2 == 0
            var merged = base
            merged.merge(other, nullRemoves: nullRemoves)
            #expect(merged.members == Self.mergedInTurn(base, other, nullRemoves: nullRemoves))
            if base.count + other.count > JSONObject.keysComparedInTurn { large += 1 }
        }
        #expect(large > 500)
    }

    @Test func comparingByHashIsComparingInTurn() {
        var rng = SplitMix64(seed: 0xC0AE)
        var equal = 0, unequal = 0
        for _ in 0..<2000 {
            let a = Self.unique(Self.randomObject(&rng, members: Int(rng.next() % 50), keys: 40))
            var b = JSONObject(members: a.members.shuffled(using: &rng))
            if rng.next() % 2 == 0, !b.members.isEmpty {
                let i = Int(rng.next() % UInt64(b.members.count))
                if rng.next() % 2 == 0 { b.members[i].value = .string("changed") } else { b.members[i].key += "x" }
            }
            let inTurn = a.count == b.count && a.members.allSatisfy { m in b.members.first { $0.key == m.key }?.value == m.value }
            #expect((a == b) == inTurn)
            if inTurn { equal += 1 } else { unequal += 1 }
        }
        #expect(equal > 500 && unequal > 500)
    }

    @Test func aDocumentsLargeObjectKeepsEachKeyOnceInItsFirstPlace() throws {
        var rng = SplitMix64(seed: 0xD0C5)
        let parser = JSONParser()
        for _ in 0..<200 {
            let written = Self.randomObject(&rng, members: Int(rng.next() % 200), keys: 1 + Int(rng.next() % 150))
            var expected = JSONObject()
            for m in written.members { expected[m.key] = m.value }  // the last value, in the first one's place
            let bytes = JSONWriter.encode(.object(written))
            let view = try bytes.withUnsafeBytes { b throws(JSONParseError) in try parser.view(b) }
            #expect(view.value.objectValue?.members == expected.members)
        }
    }
}
