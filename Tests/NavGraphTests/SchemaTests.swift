import JSON
import NavTesting
import Testing
import Unchecked
@testable import NavGraph

/// Table-driven tests of the setup-schema subset, one table per keyword.
@Suite struct SchemaTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let schema: JSONValue
        let value: JSONValue
        /// nil when the value must pass; else the pointer and rule of the expected violation.
        let fails: (pointer: String, rule: String)?
        var testDescription: String { "\(JSONWriter.string(schema)) ⊢ \(JSONWriter.string(value))" }
    }

    static func compile(_ v: JSONValue) throws -> Schema {
        var errors: [Schema.CompileError] = []
        let s = Schema.compile(v, errors: &errors)
        #expect(errors.isEmpty, "\(errors)")
        return try #require(s)
    }

    @Test func aLongEnumAdmitsItsMembersAndNothingElse() throws {
        // Strings, integers, doubles, booleans and null; equal by JSON value (1 is 1.0, "1" is not 1).
        var members: [JSONValue] = (0..<1_000).map { .string("v\($0)") }
        members += [1, 2.5, .uint(UInt64.max), true, nil, "1"]
        for count in [3, 9, members.count] {
            let listed = count == members.count ? members : Array(members.suffix(count))
            let schema = try Self.compile(["enum": .array(listed)])
            let candidates: [JSONValue] = members + ["v1000", "V1", "", 1.0, 2, 2.5, .uint(UInt64.max - 1), false, "true", "null", [1], ["a": 1]]
            for v in candidates {
                let member = listed.contains { Schema.equal($0, v) }
                #expect((schema.validate(v) == nil) == member, "\(count) members: \(JSONWriter.string(v))")
            }
        }
        // The message names the first 20 and how many there are.
        let schema = try Self.compile(["enum": .array(members)])
        let message = try #require(schema.validate("nope")).message
        #expect(message.contains("\"v19\"") && !message.contains("\"v20\"") && message.contains("(1006 in all)"), "\(message)")
    }

    /// A schema of 10,000 properties against wide and hostile values: each member is found by its
    /// name's hash, `required` against a set of the keys, an unknown key's message names 20 fields
    /// and the count, and a key too long to be a typo gets no "did you mean" (a key of 800 KB once
    /// held the loop 90 s, 50,000 members with one wrong 3 s, each a walk of every property).
    @Test func aWideSchemaChecksWideValuesByNameAndNamesTwentyFields() throws {
        let names = (0..<10_000).map { "p\($0)" }
        let properties = JSONObject(uniqueMembers: names.map { (key: $0, value: ["type": "string"] as JSONValue) })
        let open = try Self.compile(["type": "object", "properties": .object(properties)])
        var wide = JSONObject(uniqueMembers: (0..<50_000).map { (key: "m\($0)", value: JSONValue.int($0)) })
        #expect(open.validate(.object(wide)) == nil)
        wide.append("p9999", 5)
        #expect(open.validate(.object(wide))?.pointer == "/p9999")

        let closed = try Self.compile(["type": "object", "properties": .object(properties), "additionalProperties": false])
        let typo = try #require(closed.validate(["p5000x": "v"]))
        #expect(typo.pointer == "/p5000x" && typo.message.contains("did you mean `p5000`?"), "\(typo.message)")
        #expect(typo.message.contains("`p19`") && !typo.message.contains("`p20`") && typo.message.contains("(10000 in all)"), "\(typo.message)")
        let long = "p5000" + String(repeating: "y", count: 800_000)
        let far = try #require(closed.validate(.object(JSONObject(uniqueMembers: [(key: long, value: "v")]))))
        #expect(far.rule == "additionalProperties" && !far.message.contains("did you mean"))

        let required = try Self.compile(["type": "object", "properties": .object(properties), "required": .array(names.map { .string($0) })])
        var all = JSONObject(uniqueMembers: names.map { (key: $0, value: "v" as JSONValue) })
        #expect(required.validate(.object(all)) == nil)
        all = JSONObject(uniqueMembers: names.filter { $0 != "p7777" }.map { (key: $0, value: "v" as JSONValue) })
        let missing = try #require(required.validate(.object(all)))
        #expect(missing.rule == "required" && missing.pointer == "/p7777", "\(missing)")
    }

    static let typeCases: [Case] = [
        Case(schema: ["type": "string"], value: "x", fails: nil),
        Case(schema: ["type": "string"], value: 1, fails: ("", "type")),
        Case(schema: ["type": "integer"], value: 3, fails: nil),
        Case(schema: ["type": "integer"], value: 3.0, fails: nil),
        Case(schema: ["type": "integer"], value: 3.5, fails: ("", "type")),
        Case(schema: ["type": "integer"], value: .uint(UInt64.max), fails: nil),
        Case(schema: ["type": "string"], value: .uint(UInt64.max), fails: ("", "type")),
        Case(schema: ["type": "integer", "maximum": 100], value: .uint(UInt64.max), fails: ("", "maximum")),
        Case(schema: ["enum": [.uint(UInt64.max)]], value: .uint(UInt64.max), fails: nil),
        Case(schema: ["enum": [.uint(UInt64.max)]], value: .uint(UInt64.max - 1), fails: ("", "enum")),
        Case(schema: ["type": "number"], value: 3, fails: nil),
        Case(schema: ["type": "number"], value: 3.5, fails: nil),
        Case(schema: ["type": "number"], value: "3", fails: ("", "type")),
        Case(schema: ["type": "boolean"], value: false, fails: nil),
        Case(schema: ["type": "boolean"], value: 0, fails: ("", "type")),
        Case(schema: ["type": "null"], value: nil, fails: nil),
        Case(schema: ["type": "null"], value: "", fails: ("", "type")),
        Case(schema: ["type": "array"], value: [1], fails: nil),
        Case(schema: ["type": "array"], value: ["a": 1], fails: ("", "type")),
        Case(schema: ["type": "object"], value: ["a": 1], fails: nil),
        Case(schema: ["type": "object"], value: [1], fails: ("", "type")),
        Case(schema: ["type": ["string", "null"]], value: nil, fails: nil),
        Case(schema: ["type": ["string", "null"]], value: 2, fails: ("", "type")),
        Case(schema: [:], value: ["anything": [1, 2]], fails: nil),
    ]

    static let objectCases: [Case] = [
        Case(schema: ["type": "object", "required": ["id"], "properties": ["id": ["type": "string"]]], value: ["id": "p1"], fails: nil),
        Case(schema: ["type": "object", "required": ["id"], "properties": ["id": ["type": "string"]]], value: [:], fails: ("/id", "required")),
        Case(schema: ["type": "object", "properties": ["id": ["type": "string"]]], value: ["id": 5], fails: ("/id", "type")),
        Case(schema: ["type": "object", "properties": ["id": ["type": "string"]]], value: ["other": 5], fails: nil),
        Case(schema: ["type": "object", "properties": ["id": ["type": "string"]], "additionalProperties": false], value: ["other": 5], fails: ("/other", "additionalProperties")),
        Case(schema: ["type": "object", "additionalProperties": ["type": "integer"]], value: ["a": 1, "b": "x"], fails: ("/b", "type")),
        Case(schema: ["type": "object", "properties": ["a": ["type": "object", "properties": ["b~/c": ["type": "integer"]]]]], value: ["a": ["b~/c": "x"]], fails: ("/a/b~0~1c", "type")),
        Case(schema: ["type": "object", "required": ["id"]], value: ["id": 1], fails: nil),
        Case(schema: ["type": "object", "required": ["id"]], value: ["other": 1], fails: ("/id", "required")),
        // A setup model's usual shape: fields of one type, a non-empty id.
        Case(schema: ["type": "object", "required": ["id"], "properties": ["id": ["type": "string", "minLength": 1], "n": ["type": "integer"]]],
             value: ["id": "p1", "n": 2], fails: nil),
        Case(schema: ["type": "object", "required": ["id"], "properties": ["id": ["type": "string", "minLength": 1], "n": ["type": "integer"]]],
             value: ["id": ""], fails: ("/id", "minLength")),
        Case(schema: ["type": "object", "required": ["id"], "properties": ["id": ["type": "string", "minLength": 1], "n": ["type": "integer"]]],
             value: ["id": "p1", "n": 2.0], fails: nil),
        Case(schema: ["type": "object", "required": ["id"], "properties": ["id": ["type": "string", "minLength": 1], "n": ["type": "integer"]]],
             value: ["id": "p1", "n": 2.5], fails: ("/n", "type")),
        Case(schema: ["type": "object", "properties": ["f": ["type": ["boolean", "null"]], "p": ["type": "number"]]],
             value: ["f": nil, "p": 3], fails: nil),
        Case(schema: ["type": "object", "properties": ["f": ["type": ["boolean", "null"]], "p": ["type": "number"]]],
             value: ["f": 0], fails: ("/f", "type")),
    ]

    static let stringCases: [Case] = [
        Case(schema: ["type": "string", "minLength": 1], value: "", fails: ("", "minLength")),
        Case(schema: ["type": "string", "minLength": 2], value: "é!", fails: nil),
        Case(schema: ["type": "string", "maxLength": 3], value: "abcd", fails: ("", "maxLength")),
        Case(schema: ["type": "string", "maxLength": 3], value: "abc", fails: nil),
        Case(schema: ["type": "string", "pattern": "^ord-[0-9]+$"], value: "ord-12", fails: nil),
        Case(schema: ["type": "string", "pattern": "^ord-[0-9]+$"], value: "ord-x", fails: ("", "pattern")),
        Case(schema: ["type": "string", "pattern": "[0-9]"], value: "abc1def", fails: nil),  // not anchored
        Case(schema: ["enum": ["FR", "DE"]], value: "DE", fails: nil),
        Case(schema: ["enum": ["FR", "DE"]], value: "GB", fails: ("", "enum")),
        Case(schema: ["enum": [1, "1", nil]], value: nil, fails: nil),
        Case(schema: ["enum": [1]], value: 1.0, fails: nil),
    ]

    static let numberCases: [Case] = [
        Case(schema: ["type": "integer", "minimum": 1], value: 0, fails: ("", "minimum")),
        Case(schema: ["type": "integer", "minimum": 1], value: 1, fails: nil),
        Case(schema: ["type": "number", "maximum": 5], value: 5.5, fails: ("", "maximum")),
        Case(schema: ["type": "number", "maximum": 5], value: 5, fails: nil),
        Case(schema: ["type": "number", "minimum": -1.5], value: -1.5, fails: nil),
    ]

    static let arrayCases: [Case] = [
        Case(schema: ["type": "array", "items": ["type": "string"]], value: ["a", "b"], fails: nil),
        Case(schema: ["type": "array", "items": ["type": "string"]], value: ["a", 2], fails: ("/1", "type")),
        Case(schema: ["type": "array", "items": ["type": "object", "required": ["sku"], "properties": ["sku": ["type": "string"]]]],
             value: [["sku": "a"], [:]], fails: ("/1/sku", "required")),
    ]

    @Test(arguments: typeCases + objectCases + stringCases + numberCases + arrayCases)
    func validates(_ c: Case) throws {
        let s = try Self.compile(c.schema)
        let v = s.validate(c.value)
        if let f = c.fails {
            let violation = try #require(v, "expected a \(f.rule) violation")
            #expect(violation.pointer == f.pointer)
            #expect(violation.rule == f.rule)
            #expect(!violation.message.isEmpty)
        } else {
            #expect(v == nil)
        }
        // Checked where it lies in a request, the same value gets the same answer.
        let text = JSONWriter.encode(c.value), parser = JSONParser()
        let inPlace = try SchemaInPlaceTests.view(text, parser).withSchema(s)
        if SchemaInPlaceTests.leftToTheFullCheck(c.schema) {
            #expect(!inPlace || c.fails == nil)
        } else {
            #expect(inPlace == (c.fails == nil))
        }
    }

    @Test func messagesSayWhatWouldBeRight() throws {
        let s = try Self.compile(["type": "object", "required": ["id"],
                                  "properties": ["id": ["type": "string", "minLength": 1], "rating": ["type": "integer", "maximum": 5]],
                                  "additionalProperties": false])
        #expect(s.validate([:])?.message == "`/id` is required but missing")
        #expect(s.validate(["id": ""])?.message == "`/id` must not be empty")
        #expect(s.validate(["id": 7])?.message == "`/id` must be string, not an integer (7)")
        #expect(s.validate(["id": "a", "rating": 9])?.message == "`/rating` must be at most 5, not 9")
        #expect(s.validate(["id": "a", "raitng": 3])?.message == "`/raitng` is not allowed here; did you mean `rating`? the fields are `id`, `rating`")
    }

    @Test func invalidSchemasAreReportedWithPointers() {
        var errors: [Schema.CompileError] = []
        _ = Schema.compile(["type": "strng", "minLength": -1, "properties": ["a": ["pattern": "("]], "requird": ["a"]], errors: &errors)
        let byPointer = Dictionary(errors.map { ($0.pointer, $0.message) }, uniquingKeysWith: { a, _ in a })
        #expect(byPointer["/type"] == "`strng` is not a type; use object, string, number, integer, boolean, array or null; did you mean `string`?")
        #expect(byPointer["/minLength"] == "`minLength` must be a non-negative integer, not -1")
        #expect(byPointer["/properties/a/pattern"]?.hasPrefix("`(` is not a valid regular expression") == true)
        #expect(byPointer["/requird"]?.contains("did you mean `required`?") == true)
        #expect(errors.count == 4)
    }

    @Test func contradictoryBoundsAreInvalid() {
        var errors: [Schema.CompileError] = []
        _ = Schema.compile(["minimum": 5, "maximum": 1, "minLength": 3, "maxLength": 2], errors: &errors)
        #expect(errors.map(\.pointer).sorted() == ["/minLength", "/minimum"])
    }

    @Test func deepLinkValuesAreConvertedToTheDeclaredType() throws {
        let s = try Self.compile(["type": "object", "properties": [
            "page": ["type": "integer"], "price": ["type": "number"], "gift": ["type": "boolean"], "id": ["type": "string"],
        ]])
        #expect(s.coerce("3", forProperty: "page") == 3)
        #expect(s.coerce("x", forProperty: "page") == "x")
        #expect(s.coerce("2.5", forProperty: "price") == 2.5)
        #expect(s.coerce("true", forProperty: "gift") == true)
        #expect(s.coerce("0042", forProperty: "id") == "0042")
        #expect(s.coerce("7", forProperty: "undeclared") == "7")
    }
}

/// Property: the yes/no check validation tries first (`accepts`) agrees with the full check on random
/// schemas of every keyword and random values, so a value passes exactly when no violation is found.
@Suite struct SchemaAcceptsTests {
    private static func randomValue(_ rng: inout SplitMix64, depth: Int = 0) -> JSONValue {
        switch rng.next() % (depth > 2 ? 6 : 8) {
        case 0: return .null
        case 1: return .bool(rng.next() % 2 == 0)
        case 2: return .int(Int(rng.next() % 21) - 5)
        case 3: return .double([2.5, -1.0, 7.0, 0.5][Int(rng.next() % 4)])
        case 4, 5: return .string(["", "a", "ab", "abc@d", "FR", "ord-12", "ünï"][Int(rng.next() % 7)])
        case 6: return .array((0..<Int(rng.next() % 3)).map { _ in randomValue(&rng, depth: depth + 1) })
        default:
            var o = JSONObject()
            for k in ["id", "n", "x"] where rng.next() % 2 == 0 { o.append(k, randomValue(&rng, depth: depth + 1)) }
            return .object(o)
        }
    }

    static func randomSchema(_ rng: inout SplitMix64, depth: Int = 0) -> JSONValue {
        var o = JSONObject()
        let types = ["string", "integer", "number", "boolean", "null", "array", "object"]
        if rng.next() % 3 != 0 { o.append("type", .string(types[Int(rng.next() % UInt64(depth > 1 ? 5 : 7))])) }
        if rng.next() % 6 == 0 { o.append("enum", ["a", 1, "FR"]) }
        if rng.next() % 4 == 0 { o.append("minLength", .int(Int(rng.next() % 3))) }
        if rng.next() % 5 == 0 { o.append("maxLength", 2) }
        if rng.next() % 6 == 0 { o.append("pattern", "^[a-z]+$") }
        if rng.next() % 4 == 0 { o.append("minimum", 0) }
        if rng.next() % 5 == 0 { o.append("maximum", 5) }
        if depth < 2 && rng.next() % 2 == 0 {
            var props = JSONObject()
            for k in ["id", "n"] where rng.next() % 2 == 0 { props.append(k, randomSchema(&rng, depth: depth + 1)) }
            o.append("properties", .object(props))
            if rng.next() % 2 == 0 { o.append("required", .array(props.keys.prefix(1).map(JSONValue.string))) }
            switch rng.next() % 3 {
            case 0: o.append("additionalProperties", false)
            case 1: o.append("additionalProperties", randomSchema(&rng, depth: depth + 1))
            default: break
            }
        }
        if depth < 2 && rng.next() % 4 == 0 { o.append("items", randomSchema(&rng, depth: depth + 1)) }
        return .object(o)
    }

    @Test func acceptsAgreesWithTheFullCheck() {
        var rng = SplitMix64(seed: 0xACCE)
        var passed = 0, failed = 0
        for _ in 0..<3000 {
            var errors: [Schema.CompileError] = []
            guard let schema = Schema.compile(Self.randomSchema(&rng), errors: &errors), errors.isEmpty else { continue }
            for _ in 0..<10 {
                let v = Self.randomValue(&rng)
                let violation = schema.check(v)  // the full check, not validate (which asks accepts first)
                #expect(schema.accepts(v) == (violation == nil), "\(JSONWriter.string(schema.source)) ⊢ \(JSONWriter.string(v))")
                if violation == nil { passed += 1 } else { failed += 1 }
            }
        }
        #expect(passed > 1000 && failed > 1000, "both outcomes exercised (\(passed) pass, \(failed) fail)")
    }
}

extension JSONView {
    fileprivate func withSchema(_ s: Schema) -> Bool { s.accepts(inPlace: self) }
}

/// Property: the check of a value where it lies in a request (`accepts(inPlace:)`, which builds
/// nothing) gives the full check's answer for the value built from it; a key given twice (the value
/// built keeps its last) may make it say no where the full check says yes, never the reverse.
@Suite struct SchemaInPlaceTests {
    /// A random value as JSON text, its objects' keys sometimes given twice; and whether they were.
    private static func randomText(_ rng: inout SplitMix64, depth: Int = 0, repeated: inout Bool) -> String {
        switch rng.next() % (depth > 2 ? 6 : 8) {
        case 0: return "null"
        case 1: return rng.next() % 2 == 0 ? "true" : "false"
        case 2: return String(Int(rng.next() % 21) - 5)
        case 3: return ["2.5", "-1.0", "7.0", "0.5", "1e2", "18446744073709551615"][Int(rng.next() % 6)]
        case 4, 5: return JSONWriter.string(.string(["", "a", "ab", "abc@d", "FR", "ord-12", "ünï", "a\"b"][Int(rng.next() % 8)]))
        case 6: return "[" + (0..<Int(rng.next() % 3)).map { _ in randomText(&rng, depth: depth + 1, repeated: &repeated) }.joined(separator: ",") + "]"
        default:
            var members: [String] = []
            for k in ["id", "n", "x"] where rng.next() % 2 == 0 {
                members.append("\"\(k)\":" + randomText(&rng, depth: depth + 1, repeated: &repeated))
                if rng.next() % 8 == 0 {
                    members.append("\"\(k)\":" + randomText(&rng, depth: depth + 1, repeated: &repeated))
                    repeated = true
                }
            }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    /// `text` parsed; the view lies in `parser`'s buffers, valid until it parses again.
    static func view(_ text: [UInt8], _ parser: JSONParser) throws -> JSONView {
        try text.withUnsafeBytes { raw in try parser.view(raw) }
    }

    /// A setup model's usual schema: an object whose fields each name their types, some of them
    /// strings that must not be empty, some required, others refused or allowed.
    private static func randomSetupSchema(_ rng: inout SplitMix64) -> JSONValue {
        let types = ["string", "integer", "number", "boolean", "null", "array", "object"]
        var props = JSONObject()
        for k in ["id", "n", "x"] where rng.next() % 3 != 0 {
            var p = JSONObject()
            if rng.next() % 5 == 0 {
                p.append("type", .array([.string(types[Int(rng.next() % 7)]), .string(types[Int(rng.next() % 7)])]))
            } else if rng.next() % 6 != 0 {
                p.append("type", .string(types[Int(rng.next() % 7)]))
            }
            if rng.next() % 3 == 0 { p.append("minLength", 1) }
            props.append(k, .object(p))
        }
        // Required fields among the declared ones, or (with no properties declared) any.
        if rng.next() % 8 == 0 { return ["type": "object", "required": .array(["id", "x"].prefix(Int(rng.next() % 3)).map(JSONValue.string))] }
        var o: JSONObject = ["type": "object", "properties": .object(props)]
        let required = props.keys.filter { _ in rng.next() % 2 == 0 }
        if !required.isEmpty { o.append("required", .array(required.map(JSONValue.string))) }
        if rng.next() % 2 == 0 { o.append("additionalProperties", false) }
        return .object(o)
    }

    /// Whether the in-place check may leave a value that passes to the full check: a pattern, an
    /// enum, or `required` without properties anywhere in the schema.
    static func leftToTheFullCheck(_ source: JSONValue) -> Bool {
        let text = JSONWriter.string(source)
        return text.contains("\"pattern\"") || text.contains("\"enum\"") || (text.contains("\"required\"") && !text.contains("\"properties\""))
    }

    @Test func inPlaceNeverPassesWhatTheFullCheckRefuses() throws {
        var rng = SplitMix64(seed: 0x1A51)
        var agreed = 0, passedInPlace = 0, refusedOnlyInPlace = 0
        let parser = JSONParser()
        for _ in 0..<3000 {
            var errors: [Schema.CompileError] = []
            let source = rng.next() % 2 == 0 ? SchemaAcceptsTests.randomSchema(&rng) : Self.randomSetupSchema(&rng)
            guard let schema = Schema.compile(source, errors: &errors), errors.isEmpty else { continue }
            for _ in 0..<10 {
                var repeated = false
                let text = Array(Self.randomText(&rng, repeated: &repeated).utf8)
                let view = try Self.view(text, parser)
                let inPlace = schema.accepts(inPlace: view), full = schema.check(view.value) == nil
                let what = "\(JSONWriter.string(schema.source)) ⊢ \(String(decoding: text, as: UTF8.self))"
                #expect(!inPlace || full, "passed in place, refused in full: \(what)")
                if !repeated && !Self.leftToTheFullCheck(schema.source) { #expect(inPlace == full, "\(what)") }
                if inPlace == full { agreed += 1 }
                if inPlace { passedInPlace += 1 }
                if full && !inPlace { refusedOnlyInPlace += 1 }
            }
        }
        #expect(passedInPlace > 1000 && agreed > 20000, "both outcomes exercised (\(passedInPlace) passed in place, \(agreed) agreed)")
        #expect(refusedOnlyInPlace > 0, "a repeated key made the in-place check say no at least once")
    }
}

/// Property: the name table answers exactly what a dictionary of the same entries answers, looked
/// up by name and by the name's bytes.
@Suite struct NameIndexTests {
    @Test func agreesWithADictionary() {
        var rng = SplitMix64(seed: 0x1DE)
        let alphabet = Array("abcé.XY_1")
        for size in [0, 1, 2, 7, 8, 9, 100, 1000] {
            var entries: [String: Int] = [:]
            func name() -> String { String((0..<Int(rng.next() % 8)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }) }
            for i in 0..<size { entries[name()] = i }
            let table = NameIndex(entries)
            func byBytes(_ s: String) -> Int? { ByteView.of(s) { table[bytes: $0] } }
            for (k, v) in entries {
                #expect(table[k] == v)
                #expect(byBytes(k) == v, "\(k)")
            }
            for _ in 0..<200 {
                let probe = name()
                #expect(table[probe] == entries[probe], "\(probe)")
                #expect(byBytes(probe) == entries[probe], "\(probe)")
            }
            #expect(Set(table.keys) == Set(entries.keys))
        }
    }
}
