import JSON
import NavTesting
import Testing

/// Property: a document read in place (``JSONView``) says exactly what the tree built from it says.
@Suite struct JSONViewTests {
    private static let keys = ["a", "b", "session", "to", "with", "é", "", "k\"q"]

    private static func randomValue(_ rng: inout SplitMix64, depth: Int) -> JSONValue {
        switch rng.next() % (depth > 3 ? 5 : 7) {
        case 0: return .null
        case 1: return .bool(rng.next() % 2 == 0)
        case 2: return .int(Int(bitPattern: UInt(rng.next())) >> Int(rng.next() % 60))
        case 3: return .double(Double(Int64(bitPattern: rng.next()) % 100_000) / 8)
        case 4: return .string(String(repeating: "xé\n", count: Int(rng.next() % 4)))
        case 5: return .array((0..<Int(rng.next() % 4)).map { _ in randomValue(&rng, depth: depth + 1) })
        default:
            // Repeated keys on purpose: the last one wins, in the tree and in the view.
            let members = (0..<Int(rng.next() % 5)).map { _ in
                (key: keys[Int(rng.next() % UInt64(keys.count))], value: randomValue(&rng, depth: depth + 1))
            }
            return .object(JSONObject(uniqueMembers: members))
        }
    }

    private static func check(_ view: JSONView, _ tree: JSONValue) {
        #expect(view.value == tree)
        #expect(view.typeName == tree.typeName)
        #expect(view.isNull == tree.isNull)
        #expect(view.string == tree.stringValue)
        #expect(view.bool == tree.boolValue)
        #expect(view.int == tree.intValue)
        switch tree {
        case .array(let a):
            #expect(view.count == a.count)
            let elements = view.elements
            #expect(elements.count == a.count)
            for (v, t) in zip(elements, a) { check(v, t) }
        case .object(let o):
            // The view lists members as written; the tree keeps each key once, where it first appears.
            var seen: [String] = []
            view.forEachMember { k, _ in seen.append(String(decoding: k, as: UTF8.self)) }
            #expect(view.count == seen.count)
            var firsts: [String] = []
            for k in seen where !firsts.contains(k) { firsts.append(k) }
            #expect(firsts == o.keys)
            for key in keys {
                let member = view.member(key)
                #expect(member?.value == tree[key], "member \(key)")
                if let member, let t = tree[key] { check(member, t) }
            }
        default:
            #expect(view.count == 0)
            #expect(view.member("a") == nil)
        }
    }

    /// What a parser must give back for a written value: each repeated key once, the last value.
    private static func deduplicated(_ v: JSONValue) -> JSONValue {
        switch v {
        case .array(let a): return .array(a.map(deduplicated))
        case .object(let o): return .object(JSONObject(o.members.map { ($0.key, deduplicated($0.value)) }))
        default: return v
        }
    }

    @Test func viewAgreesWithTheTree() throws {
        var rng = SplitMix64(seed: 0x71E3)
        let viewer = JSONParser(), builder = JSONParser()
        for _ in 0..<1500 {
            let written = Self.randomValue(&rng, depth: 0)
            let bytes = JSONWriter.encode(written)
            let tree = try builder.parse(bytes)
            #expect(tree == Self.deduplicated(written))
            let view = try bytes.withUnsafeBytes { b throws(JSONParseError) in try viewer.view(b) }
            Self.check(view, tree)
        }
    }

    @Test func stringBytesAreTheUnescapedUTF8() throws {
        let p = JSONParser()
        let bytes = Array(#"{"s":"a\"\u00e9\n","n":1}"#.utf8)
        let v = try bytes.withUnsafeBytes { b throws(JSONParseError) in try p.view(b) }
        #expect(Array(v.member("s")!.stringBytes) == Array("a\"é\n".utf8))
        #expect(v.member("n")!.stringBytes.isEmpty)
        #expect(v.member("s")!.stringBytes.equals("a\"é\n"))
        #expect(!v.member("s")!.stringBytes.equals("a\"é"))
    }
}
