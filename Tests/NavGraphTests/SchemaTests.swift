import JSON
import NavTesting
import Testing
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

    static let typeCases: [Case] = [
        Case(schema: ["type": "string"], value: "x", fails: nil),
        Case(schema: ["type": "string"], value: 1, fails: ("", "type")),
        Case(schema: ["type": "integer"], value: 3, fails: nil),
        Case(schema: ["type": "integer"], value: 3.0, fails: nil),
        Case(schema: ["type": "integer"], value: 3.5, fails: ("", "type")),
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

/// Property: the name table answers exactly what a dictionary of the same entries answers.
@Suite struct NameIndexTests {
    @Test func agreesWithADictionary() {
        var rng = SplitMix64(seed: 0x1DE)
        let alphabet = Array("abcé.XY_1")
        for size in [0, 1, 2, 7, 8, 9, 100, 1000] {
            var entries: [String: Int] = [:]
            func name() -> String { String((0..<Int(rng.next() % 8)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }) }
            for i in 0..<size { entries[name()] = i }
            let table = NameIndex(entries)
            for (k, v) in entries { #expect(table[k] == v) }
            for _ in 0..<200 {
                let probe = name()
                #expect(table[probe] == entries[probe], "\(probe)")
            }
            #expect(Set(table.keys) == Set(entries.keys))
        }
    }
}
