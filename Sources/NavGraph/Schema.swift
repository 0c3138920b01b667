import JSON
import RPC
import Unchecked

/// A setup-model or flow-result schema: the JSON Schema subset of the graph format, compiled
/// once when the graph loads (patterns compiled, `required` and `enum` turned into sets) so that
/// validating a value allocates nothing unless it fails.
public final class Schema: Sendable {
    public struct Types: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let object = Types(rawValue: 1)
        public static let string = Types(rawValue: 2)
        public static let number = Types(rawValue: 4)
        public static let integer = Types(rawValue: 8)
        public static let boolean = Types(rawValue: 16)
        public static let array = Types(rawValue: 32)
        public static let null = Types(rawValue: 64)
        public static let any: Types = [.object, .string, .number, .integer, .boolean, .array, .null]

        static let names: [(String, Types)] = [
            ("object", .object), ("string", .string), ("number", .number), ("integer", .integer),
            ("boolean", .boolean), ("array", .array), ("null", .null),
        ]
        public var names: [String] { Types.names.filter { contains($0.1) }.map(\.0) }
    }

    public enum Additional: Sendable {
        case allowed
        case forbidden
        case schema(Schema)
    }

    /// `nil` when the schema does not say (any type).
    public let types: Types?
    public let properties: [(name: String, schema: Schema)]
    public let required: [String]
    public let additional: Additional
    public let enumValues: [JSONValue]?
    public let minLength: Int?
    public let maxLength: Int?
    public let pattern: Pattern?
    public let minimum: Double?
    public let maximum: Double?
    public let items: Schema?
    /// The schema as written, for `graph.describe`.
    public let source: JSONValue

    /// What validation needs, laid out once so that checking a value copies and retains nothing:
    /// flags for the rules present, the properties as parallel arrays.
    private let hasEnum: Bool
    /// `enum`'s string members as a set, where it has more than a few (a check then does not walk
    /// thousands), and its other members; nil for a short `enum`, checked member by member.
    private let enumStrings: Set<String>?
    private let enumOthers: [JSONValue]
    private let hasPattern: Bool
    private let hasBounds: Bool
    /// 0: no length rule; 1: only `minLength: 1` (a non-empty check counts nothing); 2: other bounds.
    private let lengthRule: UInt8
    private let propertyNames: [String]
    private let propertySchemas: [Schema]
    /// Whether an object needs a walk of its members at all.
    private let checksMembers: Bool
    /// ``propertyNames`` found by the bytes a request carries (``accepts(inPlace:)``), and by a
    /// built value's keys (``propertyIndex(of:)``).
    private let propertyTable: NameTable
    /// The properties an unknown key's "did you mean" looks among, where they are many (an error
    /// then does not walk thousands); nil where a walk is short.
    private let propertySuggestions: SuggestionIndex?
    /// For each property, what ``accepts(inPlace:)`` checks without walking into its schema: the
    /// kinds of value its `type` admits (``Schema/inPlaceKind(_:)`` bits) and, with
    /// ``InPlace/nonEmpty``, a non-empty string; ``InPlace/walk`` when its schema says more (enum,
    /// pattern, bounds, other lengths, items, properties, additionalProperties, an integer that
    /// may come as a whole double).
    private let propertyInPlace: [UInt8]
    /// The properties `required` names, as bits of their indices, when every required name is one
    /// of the first 64 properties (`requiredAsBits`); otherwise ``accepts(inPlace:)`` builds the value.
    private let requiredBits: UInt64
    private let requiredAsBits: Bool

    /// The bits of ``propertyInPlace``.
    private enum InPlace {
        static let string: UInt8 = 1, int: UInt8 = 2, double: UInt8 = 4, bool: UInt8 = 8, null: UInt8 = 16
        static let object: UInt8 = 32, array: UInt8 = 64
        /// Checked by its schema's own ``accepts(inPlace:)``.
        static let walk: UInt8 = 128
        /// A non-empty string (the string bit with the walk bit: a value of its own, not a walk).
        static let nonEmpty: UInt8 = 128 | 1
    }

    /// The keywords this subset understands.
    public static let keywords: Set<String> = [
        "type", "properties", "required", "additionalProperties", "enum", "minLength", "maxLength",
        "pattern", "minimum", "maximum", "items",
        // Annotations, accepted and ignored (as are extensions, keys starting with x-).
        "description", "title", "default", "examples", "$comment",
    ]

    /// A problem in a schema itself, found while compiling it.
    public struct CompileError: Error, Sendable {
        /// JSON pointer, inside the schema, of the keyword at fault.
        public let pointer: String
        public let message: String
        /// Whether the problem is the keyword itself (an unknown one) rather than its value.
        public var atKey = false
    }

    /// Compiles `value`; every problem found is appended to `errors` (compilation goes on so
    /// that all of them are reported at once). Returns nil only when `value` is not an object.
    public static func compile(_ value: JSONValue, pointer: String = "", errors: inout [CompileError]) -> Schema? {
        guard case .object(let o) = value else {
            errors.append(CompileError(pointer: pointer, message: "a schema must be an object such as {type: string}, not \(value.typeName)"))
            return nil
        }
        return Schema(o, source: value, pointer: pointer, errors: &errors)
    }

    private init(_ o: JSONObject, source: JSONValue, pointer: String, errors: inout [CompileError]) {
        self.source = source
        for (key, _) in o where !Schema.keywords.contains(key) && !Builder.isExtension(key) {
            let hint = suggestion(for: key, among: Schema.keywords).map { "; did you mean `\($0)`?" } ?? ""
            errors.append(CompileError(pointer: pointer + "/" + escapePointer(key),
                                       message: "`\(key)` is not a keyword of the setup schema subset (type, properties, required, additionalProperties, enum, minLength, maxLength, pattern, minimum, maximum, items)\(hint)",
                                       atKey: true))
        }
        func number(_ key: String) -> Double? {
            guard let v = o[key] else { return nil }
            if let d = v.doubleValue { return d }
            errors.append(CompileError(pointer: pointer + "/" + key, message: "`\(key)` must be a number, not \(v.typeName)"))
            return nil
        }
        func count(_ key: String) -> Int? {
            guard let v = o[key] else { return nil }
            if let i = v.intValue, i >= 0 { return i }
            errors.append(CompileError(pointer: pointer + "/" + key, message: "`\(key)` must be a non-negative integer, not \(JSONWriter.string(v))"))
            return nil
        }

        types = Schema.compileTypes(o, pointer: pointer, errors: &errors)
        properties = Schema.compileProperties(o, pointer: pointer, errors: &errors)
        required = Schema.compileRequired(o, declared: properties.map(\.name), pointer: pointer, errors: &errors)
        additional = Schema.compileAdditional(o, pointer: pointer, errors: &errors)
        enumValues = Schema.compileEnum(o, pointer: pointer, errors: &errors)
        minLength = count("minLength")
        maxLength = count("maxLength")
        minimum = number("minimum")
        maximum = number("maximum")
        if let a = minLength, let b = maxLength, a > b {
            errors.append(CompileError(pointer: pointer + "/minLength", message: "minLength \(a) is greater than maxLength \(b): no string can match"))
        }
        if let a = minimum, let b = maximum, a > b {
            errors.append(CompileError(pointer: pointer + "/minimum", message: "minimum \(formatNumber(a)) is greater than maximum \(formatNumber(b)): no number can match"))
        }

        pattern = Schema.compilePattern(o, pointer: pointer, errors: &errors)
        // items
        if let i = o["items"] {
            items = Schema.compile(i, pointer: pointer + "/items", errors: &errors)
        } else {
            items = nil
        }

        hasEnum = enumValues != nil
        if let members = enumValues, members.count > Schema.enumScanned {
            enumStrings = Set(members.compactMap(\.stringValue))
            enumOthers = members.filter { $0.stringValue == nil }
        } else {
            enumStrings = nil
            enumOthers = []
        }
        hasPattern = pattern != nil
        hasBounds = minimum != nil || maximum != nil
        lengthRule = minLength == nil && maxLength == nil ? 0 : (minLength == 1 && maxLength == nil ? 1 : 2)
        propertyNames = properties.map(\.name)
        propertySchemas = properties.map(\.schema)
        if case .allowed = additional { checksMembers = !properties.isEmpty } else { checksMembers = true }
        propertyTable = NameTable(propertyNames)
        propertySuggestions = propertyNames.count > Schema.propertiesWalked ? SuggestionIndex(propertyNames) : nil
        var bits: UInt64 = 0, asBits = true
        for name in required {
            if let p = Schema.index(of: name, in: propertyTable), p < 64 { bits |= 1 << UInt64(p) } else { asBits = false }
        }
        requiredBits = bits
        requiredAsBits = asBits
        propertyInPlace = propertySchemas.map(Schema.inPlaceCheck)
    }

    /// What ``accepts(inPlace:)`` checks of a member whose property has schema `s` (``propertyInPlace``).
    private static func inPlaceCheck(_ s: Schema) -> UInt8 {
        guard !s.hasEnum, !s.hasPattern, !s.hasBounds, s.items == nil, s.properties.isEmpty, s.required.isEmpty,
              case .allowed = s.additional, s.lengthRule != 2 else { return InPlace.walk }
        let t = s.types ?? .any
        // An integer-only type admits a double that is whole (3.0): that takes the value's walk.
        if t.contains(.integer) && !t.contains(.number) { return InPlace.walk }
        var bits: UInt8 = 0
        if t.contains(.string) { bits |= InPlace.string }
        if t.contains(.integer) || t.contains(.number) { bits |= InPlace.int }
        if t.contains(.number) { bits |= InPlace.double }
        if t.contains(.boolean) { bits |= InPlace.bool }
        if t.contains(.null) { bits |= InPlace.null }
        if t.contains(.object) { bits |= InPlace.object }
        if t.contains(.array) { bits |= InPlace.array }
        if s.lengthRule == 1 {
            // Only a string has a length: a schema that admits other kinds too takes the walk.
            return bits == InPlace.string ? InPlace.nonEmpty : InPlace.walk
        }
        return bits
    }

    /// The ``InPlace`` bit of a value's kind.
    @inline(__always)
    private static func inPlaceKind(_ v: JSONView) -> UInt8 {
        switch v.kind {
        case .string: return InPlace.string
        case .int: return InPlace.int
        case .double: return InPlace.double
        case .bool: return InPlace.bool
        case .null: return InPlace.null
        case .object: return InPlace.object
        case .array: return InPlace.array
        }
    }

    // MARK: Compiling, keyword by keyword

    private static func compileTypes(_ o: JSONObject, pointer: String, errors: inout [CompileError]) -> Types? {
        guard let t = o["type"] else { return nil }
        var set: Types = []
        let names: [JSONValue] = t.arrayValue ?? [t]
        for n in names {
            if let s = n.stringValue, let found = Types.names.first(where: { $0.0 == s }) {
                set.insert(found.1)
            } else {
                let text = n.stringValue.map { "`\($0)`" } ?? JSONWriter.string(n)
                let hint = n.stringValue.flatMap { suggestion(for: $0, among: Types.names.map(\.0)) }.map { "; did you mean `\($0)`?" } ?? ""
                errors.append(CompileError(pointer: pointer + "/type",
                                           message: "\(text) is not a type; use object, string, number, integer, boolean, array or null\(hint)"))
            }
        }
        return set.isEmpty ? nil : set
    }

    private static func compileProperties(_ o: JSONObject, pointer: String, errors: inout [CompileError]) -> [(name: String, schema: Schema)] {
        guard let p = o["properties"] else { return [] }
        guard case .object(let po) = p else {
            errors.append(CompileError(pointer: pointer + "/properties", message: "`properties` must map field names to schemas, not be \(p.typeName)"))
            return []
        }
        var props: [(name: String, schema: Schema)] = []
        for (name, sub) in po {
            if let s = Schema.compile(sub, pointer: pointer + "/properties/" + escapePointer(name), errors: &errors) {
                props.append((name, s))
            }
        }
        return props
    }

    /// `required`, each name checked against the declared properties when there are some.
    private static func compileRequired(_ o: JSONObject, declared: [String], pointer: String, errors: inout [CompileError]) -> [String] {
        guard let r = o["required"] else { return [] }
        guard let items = r.arrayValue, items.allSatisfy({ $0.stringValue != nil }) else {
            errors.append(CompileError(pointer: pointer + "/required", message: "`required` must be a list of field names"))
            return []
        }
        let req = items.compactMap(\.stringValue)
        if o["properties"] != nil {
            for (i, name) in req.enumerated() where !declared.contains(name) {
                let hint = suggestion(for: name, among: declared).map { "; did you mean `\($0)`?" } ?? ""
                errors.append(CompileError(pointer: pointer + "/required/\(i)",
                                           message: "required field `\(name)` is not among the declared properties\(hint)"))
            }
        }
        return req
    }

    private static func compileAdditional(_ o: JSONObject, pointer: String, errors: inout [CompileError]) -> Additional {
        switch o["additionalProperties"] {
        case nil, .bool(true)?: return .allowed
        case .bool(false)?: return .forbidden
        case let v?:
            return Schema.compile(v, pointer: pointer + "/additionalProperties", errors: &errors).map { .schema($0) } ?? .allowed
        }
    }

    private static func compileEnum(_ o: JSONObject, pointer: String, errors: inout [CompileError]) -> [JSONValue]? {
        guard let e = o["enum"] else { return nil }
        if let items = e.arrayValue, !items.isEmpty { return items }
        errors.append(CompileError(pointer: pointer + "/enum", message: "`enum` must be a non-empty list of the allowed values"))
        return nil
    }

    private static func compilePattern(_ o: JSONObject, pointer: String, errors: inout [CompileError]) -> Pattern? {
        guard let p = o["pattern"] else { return nil }
        guard let s = p.stringValue else {
            errors.append(CompileError(pointer: pointer + "/pattern", message: "`pattern` must be a regular expression string"))
            return nil
        }
        do {
            return try Pattern(s)
        } catch {
            errors.append(CompileError(pointer: pointer + "/pattern", message: "`\(s)` is not a valid regular expression: \(error)"))
            return nil
        }
    }

    // MARK: Validation

    /// Why a value does not match: where (`pointer`, into the value), which keyword, and a message.
    public struct Violation: Error, Sendable, Equatable {
        public let pointer: String
        public let rule: String
        public let message: String
    }

    /// The first violation found, depth first in declaration order, or nil when `value` matches.
    public func validate(_ value: JSONValue) -> Violation? {
        // Most values match: a yes/no walk first, which builds nothing; `check` then finds and
        // describes the first violation of a value that does not.
        if accepts(value) { return nil }
        guard let f = check(value) else { return nil }
        let pointer = f.reversedPath.isEmpty ? "" : "/" + f.reversedPath.reversed().map(escapePointer).joined(separator: "/")
        let at = pointer.isEmpty ? "the value" : "`\(pointer)`"
        return Violation(pointer: pointer, rule: f.rule, message: "\(at) \(f.message)")
    }

    /// A violation on its way up: the path is collected only when something failed, innermost first.
    struct Failure {
        let rule: String
        let message: String
        var reversedPath: [String] = []
    }

    private func fail(_ rule: String, _ message: String) -> Failure { Failure(rule: rule, message: message) }

    /// How many `enum` members a check compares one by one; past it, strings are looked up in a set.
    static let enumScanned = 8

    /// Whether `value` is a member of `enum` (a string equals only a string; numbers by value).
    private func enumContains(_ value: JSONValue) -> Bool {
        guard let strings = enumStrings else { return enumValues!.contains { Schema.equal($0, value) } }
        if case .string(let s) = value { return strings.contains(s) }
        return enumOthers.contains { Schema.equal($0, value) }
    }

    func check(_ value: JSONValue) -> Failure? {
        if let types, !Schema.matches(value, types) {
            return fail("type", "must be \(types.names.joined(separator: " or ")), not \(Schema.describe(value))")
        }
        if hasEnum, !enumContains(value) {
            let members = enumValues!
            let allowed = briefList(members.prefix(20).map { JSONWriter.string($0) }, none: "", total: members.count)
            return fail("enum", "must be one of \(allowed), not \(JSONWriter.string(value))")
        }
        switch value {
        case .string(let s):
            if lengthRule == 1 {
                // Counting characters walks the string: a non-empty check needs none.
                if s.isEmpty { return fail("minLength", "must not be empty") }
            } else if lengthRule == 2 {
                let n = s.unicodeScalars.count
                if let minLength, n < minLength {
                    return fail("minLength", minLength == 1 ? "must not be empty" : "must be at least \(minLength) characters long, not \(n)")
                }
                if let maxLength, n > maxLength {
                    return fail("maxLength", "must be at most \(maxLength) characters long, not \(n)")
                }
            }
            if hasPattern {
                switch pattern!.check(s) {
                case .matches: break
                case .doesNotMatch:
                    return fail("pattern", "must match the pattern `\(pattern!.source)`; \(JSONWriter.string(value)) does not")
                case .tooCostly:
                    return fail("pattern", "is too long (\(s.unicodeScalars.count) characters) to be checked against the pattern `\(pattern!.source)`: navd stops a check after \(Pattern.maxSteps) steps (the string's length times the states the pattern keeps); send a shorter string, or give the field a simpler pattern")
                }
            }
        case .int, .uint, .double:
            guard hasBounds else { break }
            let d = value.doubleValue!
            if let minimum, d < minimum {
                return fail("minimum", "must be at least \(formatNumber(minimum)), not \(JSONWriter.string(value))")
            }
            if let maximum, d > maximum {
                return fail("maximum", "must be at most \(formatNumber(maximum)), not \(JSONWriter.string(value))")
            }
        case .object(let o):
            return checkMembers(o)
        case .array(let a):
            if let items {
                for (i, v) in a.enumerated() {
                    if var f = items.check(v) {
                        f.reversedPath.append(String(i))
                        return f
                    }
                }
            }
        default: break
        }
        return nil
    }

    /// Whether `s` matches `pattern` (in time linear in `s`, bounded: ``Pattern``). Out of line:
    /// the check is rare on the navigation path.
    @inline(never)
    private func matchesPattern(_ s: String) -> Bool {
        guard let pattern else { return true }
        return pattern.matches(s)
    }

    /// Whether `value` matches: the same rules as ``check(_:)``, answered yes or no.
    func accepts(_ value: JSONValue) -> Bool {
        if let types, !Schema.matches(value, types) { return false }
        if hasEnum, !enumContains(value) { return false }
        switch value {
        case .string(let s):
            if lengthRule == 1 {
                if s.isEmpty { return false }
            } else if lengthRule == 2 {
                let n = s.unicodeScalars.count
                if let minLength, n < minLength { return false }
                if let maxLength, n > maxLength { return false }
            }
            if hasPattern, !matchesPattern(s) { return false }
        case .int, .uint, .double:
            guard hasBounds else { return true }
            let d = value.doubleValue!
            if let minimum, d < minimum { return false }
            if let maximum, d > maximum { return false }
        case .object(let o):
            let members = o.members
            if missingRequired(members) != nil { return false }
            guard checksMembers else { return true }
            for m in members.indices {
                if let p = propertyIndex(of: members[m].key) {
                    if !propertySchemas[p].accepts(members[m].value) { return false }
                    continue
                }
                switch additional {
                case .allowed: break
                case .forbidden: return false
                case .schema(let s): if !s.accepts(members[m].value) { return false }
                }
            }
            return true
        case .array(let a):
            if let items {
                for v in a where !items.accepts(v) { return false }
            }
        default: break
        }
        return true
    }

    /// Whether the value `view` reads as matches, answered where it lies (a request's `with`, in the
    /// parser's buffer) without building it: `true` only when ``accepts(_:)`` would accept the
    /// value built from it (``JSONView/value(keys:)``); `false` when it would not, and where it
    /// leaves the answer to the full check: a string with a `pattern` (so that a pattern is matched
    /// no more often than before), an object or a list with an `enum`, an object whose `required`
    /// names one that is not among its first 64 properties. A scalar's `enum` and a number's bounds
    /// it asks of the scalar's value (built without an allocation). A key given twice is checked at
    /// each place, where the value built keeps its last: a yes holds for that value, a no may not.
    public func accepts(inPlace view: JSONView) -> Bool {
        switch view.kind {
        case .object:
            if hasEnum || !requiredAsBits { return false }
            if let types, !types.contains(.object) { return false }
            return membersAccepted(inPlace: view)
        case .array:
            if hasEnum || !requiredAsBits { return false }
            if let types, !types.contains(.array) { return false }
            guard let items else { return true }
            var ok = true
            view.forEachElement { e in if ok && !items.accepts(inPlace: e) { ok = false } }
            return ok
        case .string:
            // A pattern is matched by the full check alone: matching it here too would match a
            // value it refuses twice more (a costly pattern is an attack; see `make attacks`).
            if hasPattern { return false }
            if hasEnum { return accepts(view.value(keys: nil)) }
            if let types, !types.contains(.string) { return false }
            let bytes = view.stringBytes
            if lengthRule == 1 { return bytes.count > 0 }
            if lengthRule == 2 {
                // The parser checked the UTF-8: each scalar has one byte that is not a continuation byte.
                var n = 0
                for b in bytes where b & 0xC0 != 0x80 { n += 1 }
                if let minLength, n < minLength { return false }
                if let maxLength, n > maxLength { return false }
            }
            return true
        case .null, .bool, .int, .double:
            return accepts(view.value(keys: nil))  // built without an allocation
        }
    }

    /// The members of an object read in place: each against its property's schema (or
    /// `additionalProperties`), then `required` from the properties seen.
    private func membersAccepted(inPlace view: JSONView) -> Bool {
        var seen: UInt64 = 0
        var ok = true
        let table = propertyTable, scan = propertySchemas.count <= 4
        view.forEachMember { key, value in
            guard ok else { return }
            var p = -1
            if scan {
                var i = 0
                while i < propertySchemas.count && !table.matches(i, key) { i += 1 }
                if i < propertySchemas.count { p = i }
            } else if let i = table.index(of: key) {
                p = i
            }
            if p >= 0 {
                if p < 64 { seen |= 1 << UInt64(p) }
                let check = propertyInPlace[p]
                if check & InPlace.walk == 0 {
                    if check & Schema.inPlaceKind(value) == 0 { ok = false }
                } else if check == InPlace.nonEmpty {
                    if value.kind != .string || value.stringBytes.count == 0 { ok = false }
                } else if !propertySchemas[p].accepts(inPlace: value) {
                    ok = false
                }
                return
            }
            switch additional {
            case .allowed: break
            case .forbidden: ok = false
            case .schema(let s): if !s.accepts(inPlace: value) { ok = false }
            }
        }
        return ok && seen & requiredBits == requiredBits
    }

    /// The first `required` field `members` lacks, or nil: an index loop for a few of each (nothing
    /// copied per member), else the members' keys in a set (a check never costs the required fields
    /// times the members: thousands of each were seconds).
    @inline(__always)
    private func missingRequired(_ members: [JSONObject.Member]) -> String? {
        if required.isEmpty { return nil }
        if required.count * members.count <= 256 {
            for name in required where !members.indices.contains(where: { members[$0].key == name }) { return name }
            return nil
        }
        let keys = Set(members.lazy.map(\.key))
        return required.first { !keys.contains($0) }
    }

    /// Properties few enough to be looked for one by one (by name, and for "did you mean").
    static let propertiesWalked = 16

    /// The index of the declared property named `key`, or nil: a scan of a few, else the table
    /// (a check never costs the members times the properties).
    @inline(__always)
    private func propertyIndex(of key: String) -> Int? {
        let names = propertyNames
        if names.count <= 4 {
            var p = 0
            while p < names.count && names[p] != key { p += 1 }
            return p < names.count ? p : nil
        }
        return Schema.index(of: key, in: propertyTable)
    }

    /// The index of the name `key`'s bytes are in `table`, or nil.
    private static func index(of key: String, in table: NameTable) -> Int? {
        var k = key
        return k.withUTF8 { table.index(of: ByteView(UnsafeRawBufferPointer($0))) }
    }

    /// `required`, then each member against its property's schema (or `additionalProperties`), in the
    /// object's order; index loops over the arrays, so nothing is copied or retained per member.
    private func checkMembers(_ o: JSONObject) -> Failure? {
        let members = o.members
        if let name = missingRequired(members) {
            var f = fail("required", "is required but missing")
            f.reversedPath.append(name)
            return f
        }
        guard checksMembers else { return nil }
        for m in members.indices {
            if let p = propertyIndex(of: members[m].key) {
                if var f = propertySchemas[p].check(members[m].value) {
                    f.reversedPath.append(members[m].key)
                    return f
                }
                continue
            }
            switch additional {
            case .allowed: break
            case .forbidden:
                let key = members[m].key
                let names = briefList(propertyNames.prefix(20).map { "`\($0)`" }, none: "none", total: propertyNames.count)
                let near = propertySuggestions.map { $0.suggestion(for: key) } ?? suggestion(for: key, among: propertyNames)
                let hint = near.map { "did you mean `\($0)`? " } ?? ""
                var f = fail("additionalProperties", "is not allowed here; \(hint)the fields are \(names)")
                f.reversedPath.append(key)
                return f
            case .schema(let s):
                if var f = s.check(members[m].value) {
                    f.reversedPath.append(members[m].key)
                    return f
                }
            }
        }
        return nil
    }

    static func matches(_ v: JSONValue, _ t: Types) -> Bool {
        switch v {
        case .null: return t.contains(.null)
        case .bool: return t.contains(.boolean)
        case .int, .uint: return t.contains(.integer) || t.contains(.number)
        case .double(let d): return t.contains(.number) || (t.contains(.integer) && d.rounded() == d && d.isFinite)
        case .string: return t.contains(.string)
        case .array: return t.contains(.array)
        case .object: return t.contains(.object)
        }
    }

    static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
        if case .uint = a { return a == b }  // exact: a double near it is not it
        if case .uint = b { return a == b }
        if let x = a.doubleValue, let y = b.doubleValue { return x == y }
        return a == b
    }

    static func describe(_ v: JSONValue) -> String {
        switch v {
        case .int, .uint: return "an integer (\(JSONWriter.string(v)))"
        case .double: return "a number (\(JSONWriter.string(v)))"
        case .string: return "a string (\(JSONWriter.string(v)))"
        case .bool: return "a boolean (\(JSONWriter.string(v)))"
        case .null: return "null"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    // MARK: Coercion (deep links)

    /// The type a URL string should become for the property `name`, as the schema declares it.
    public func coerce(_ text: String, forProperty name: String) -> JSONValue {
        guard let sub = property(name) else { return .string(text) }
        return sub.coerce(text)
    }

    /// The value the URL strings `texts` (a query key's values, in order; a path parameter's one; a
    /// wildcard's segments) should become for the property `name`: for an array property (one not
    /// declared a string too), an array of them all, each typed by the property's `items`, as
    /// `?tag=a&tag=b` is read by forms and routers; for any other, one text typed as
    /// ``coerce(_:forProperty:)`` types it: the texts joined by `separator` when given (a
    /// wildcard's segments by `/`), else the last (a repeated query key's).
    public func coerce(_ texts: [String], forProperty name: String, joinedBy separator: String? = nil) -> JSONValue {
        let one = separator.map { texts.joined(separator: $0) } ?? texts.last ?? ""
        guard let sub = property(name) else { return .string(one) }
        if sub.takesList { return .array(texts.map { sub.items?.coerce($0) ?? .string($0) }) }
        return sub.coerce(one)
    }

    /// Whether a URL's values for this property are read as a list (an array, and not a string).
    public var takesList: Bool {
        guard let t = types else { return false }
        return t.contains(.array) && !t.contains(.string)
    }

    /// The type a URL string should become for a value of this schema.
    func coerce(_ text: String) -> JSONValue {
        guard let t = types else {
            // No `type`, but an `enum` names the values: the member written as this text (`enum: [1, 2]`
            // takes "2" as the number 2; a string member "2" is preferred when there is one).
            guard let members = enumValues, !members.contains(.string(text)) else { return .string(text) }
            return members.first { m in
                switch m {
                case .int, .uint, .double, .bool, .null: return JSONWriter.string(m) == text
                default: return false
                }
            } ?? .string(text)
        }
        if t.contains(.string) { return .string(text) }
        if t.contains(.integer), let i = Int(text) { return .int(i) }
        if t.contains(.number), isDecimal(text), let d = Double(text), d.isFinite { return Int(text).map(JSONValue.int) ?? .double(d) }
        if t.contains(.boolean) {
            switch text.lowercased() {
            case "true", "1", "yes": return .bool(true)
            case "false", "0", "no": return .bool(false)
            default: break
            }
        }
        if t.contains(.null), text.isEmpty || text == "null" { return .null }
        return .string(text)  // left as text: validation then says what was expected
    }

    /// Whether `text` is a number written in decimal (`-1.5`, `2e3`), not one of the other spellings
    /// `Double` reads (`0x1p3`, `nan`, `infinity`).
    private func isDecimal(_ text: String) -> Bool {
        text.utf8.contains { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            && text.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || "+-.eE".utf8.contains($0) }
    }

    /// Whether the schema (an object schema) declares `name`.
    public func declares(_ name: String) -> Bool { properties.contains { $0.name == name } }

    /// Whether a value of this schema may hold something at `path` (the parts of a dotted
    /// `{with.a.b}`, the first a property of this object schema): each part a property the schema
    /// at that step declares, or an index where it is an array's `items`; a step whose schema
    /// declares no properties (any object) or no `items` admits any rest.
    public func declaresPath(_ path: [Substring]) -> Bool {
        var cur = self
        for part in path {
            if let t = cur.types, t.contains(.array), !t.contains(.object) {
                guard Int(part) != nil else { return false }
                guard let items = cur.items else { return true }
                cur = items
            } else {
                if cur.properties.isEmpty { return cur.types.map { $0.contains(.object) || $0.contains(.array) } ?? true }
                guard let next = cur.property(String(part)) else { return false }
                cur = next
            }
        }
        return true
    }

    /// The schema of property `name` (an object schema's), if it declares one.
    public func property(_ name: String) -> Schema? { propertyIndex(of: name).map { propertySchemas[$0] } }
}

/// `s` as a JSON Pointer's reference token (`~` as `~0`, `/` as `~1`), byte by byte: a key of
/// 800 KB read as characters took 20 ms.
func escapePointer(_ s: String) -> String {
    let tilde = UInt8(ascii: "~"), slash = UInt8(ascii: "/")
    guard s.utf8.contains(where: { $0 == tilde || $0 == slash }) else { return s }
    var out: [UInt8] = []
    out.reserveCapacity(s.utf8.count + 16)
    for b in s.utf8 {
        switch b {
        case tilde: out += [tilde, UInt8(ascii: "0")]
        case slash: out += [tilde, UInt8(ascii: "1")]
        default: out.append(b)
        }
    }
    return String(decoding: out, as: UTF8.self)
}

func formatNumber(_ d: Double) -> String {
    d.rounded() == d && abs(d) < 1e15 ? String(Int(d)) : String(d)
}
