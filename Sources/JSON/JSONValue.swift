/// A JSON value as navd handles it: the one representation shared by the codec, the graph and the core.
///
/// Objects keep their members in insertion order (see ``JSONObject``) so that what navd writes is stable
/// and readable. Integers that fit 64 bits stay integers (``uint(_:)`` past `Int.max`, as a JSON-RPC id
/// or a field may be); every other number is a `Double`.
public enum JSONValue: Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    /// An integer above `Int.max` and at most `UInt64.max`: only those (a smaller one is ``int(_:)``).
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The member `key` of an object, or `nil` (also for non-objects).
    @inlinable
    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var objectValue: JSONObject? { if case .object(let o) = self { return o } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// An integer value; doubles with no fractional part count as integers.
    public var intValue: Int? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9.0e15: return Int(d)
        default: return nil
        }
    }

    /// A numeric value of either representation.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .uint(let u): return Double(u)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The JSON type name used in messages and schemas: `null`, `boolean`, `integer`, `number`, ….
    public var typeName: String {
        switch self {
        case .null: return JSONView.Kind.null.typeName
        case .bool: return JSONView.Kind.bool.typeName
        case .int, .uint: return JSONView.Kind.int.typeName
        case .double: return JSONView.Kind.double.typeName
        case .string: return JSONView.Kind.string.typeName
        case .array: return JSONView.Kind.array.typeName
        case .object: return JSONView.Kind.object.typeName
        }
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)): return Double(a) == b
        case (.uint(let a), .uint(let b)): return a == b
        case (.uint(let a), .double(let b)), (.double(let b), .uint(let a)): return Double(a) == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)): return a == b
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(b)
        case .int(let i): hasher.combine(Double(i))
        case .uint(let u): hasher.combine(Double(u))
        case .double(let d): hasher.combine(d)
        case .string(let s): hasher.combine(s)
        case .array(let a): hasher.combine(a)
        case .object(let o): hasher.combine(o)
        }
    }
}

/// A JSON object whose members keep their order. Lookups are linear, which is fastest for the small
/// objects of a protocol message; ``JSONObject/index`` builds a dictionary when a large one is searched often.
public struct JSONObject: Sendable, Hashable, Sequence {
    /// One member. A struct, not a tuple: an array of tuples is destroyed through the runtime's
    /// generic tuple witnesses, an array of structs through the struct's own (every dismissed
    /// screen frees its setup model).
    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue

        @inlinable
        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    public var members: [Member]

    public init() { members = [] }
    /// A repeated key keeps its first place and takes its last value.
    public init(_ members: [(String, JSONValue)]) {
        self.members = []
        merge(JSONObject(uniqueMembers: members.map { (key: $0.0, value: $0.1) }), nullRemoves: false)
    }
    /// Builds an object from members already known to have distinct keys.
    public init(uniqueMembers: [(key: String, value: JSONValue)]) { members = uniqueMembers.map { Member(key: $0.key, value: $0.value) } }
    /// Builds an object from members already known to have distinct keys.
    @inlinable
    public init(members: [Member]) { self.members = members }

    @inlinable public var count: Int { members.count }
    @inlinable public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    @inlinable
    public subscript(key: String) -> JSONValue? {
        get {
            for m in members where m.key == key { return m.value }
            return nil
        }
        set {
            if let i = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[i].value = newValue } else { members.remove(at: i) }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
        }
    }

    /// Appends a member without checking for an existing key (the caller knows it is new).
    public mutating func append(_ key: String, _ value: JSONValue) { members.append(Member(key: key, value: value)) }

    /// Iterates `(key, value)` pairs in order.
    public struct Iterator: IteratorProtocol {
        @usableFromInline var base: IndexingIterator<[Member]>
        @inlinable init(base: IndexingIterator<[Member]>) { self.base = base }
        @inlinable public mutating func next() -> (key: String, value: JSONValue)? {
            guard let m = base.next() else { return nil }
            return (m.key, m.value)
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(base: members.makeIterator()) }

    /// The most members an object looks a key up among by comparing each (``subscript(_:)``); past
    /// it, ``merge(_:nullRemoves:)`` and ``==(_:_:)`` look keys up by hash, so that what a request's
    /// object costs grows with its members, not with their square.
    public static let keysComparedInTurn = 16

    /// The index of each key's first member.
    private var positions: [String: Int] {
        var at = [String: Int](minimumCapacity: members.count)
        for (i, m) in members.enumerated() where at[m.key] == nil { at[m.key] = i }
        return at
    }

    /// Sets each of `other`'s members in turn, as the subscript does: a new key goes last, a key
    /// there takes the new value in its place; with `nullRemoves`, a null removes the key instead.
    public mutating func merge(_ other: JSONObject, nullRemoves: Bool) {
        if members.count + other.count <= JSONObject.keysComparedInTurn {
            for m in other.members {
                if nullRemoves && m.value.isNull { members.removeAll { $0.key == m.key } } else { self[m.key] = m.value }
            }
            return
        }
        var keys = members.map(\.key)
        var values: [JSONValue?] = members.map(\.value)
        var at = positions
        for m in other.members {
            if nullRemoves && m.value.isNull {
                if let i = at.removeValue(forKey: m.key) { values[i] = nil }
            } else if let i = at[m.key] {
                values[i] = m.value
            } else {
                at[m.key] = keys.count
                keys.append(m.key)
                values.append(m.value)
            }
        }
        members = zip(keys, values).compactMap { k, v in v.map { Member(key: k, value: $0) } }
    }

    /// Objects are equal when they have the same members, in any order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.count <= keysComparedInTurn {
            for m in lhs.members where rhs[m.key] != m.value { return false }
            return true
        }
        let at = rhs.positions
        for m in lhs.members {
            guard let i = at[m.key], rhs.members[i].value == m.value else { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent, like equality.
        var acc = 0
        for (k, v) in self {
            var h = Hasher()
            h.combine(k)
            h.combine(v)
            acc ^= h.finalize()
        }
        hasher.combine(acc)
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(literal: elements)) }
    public init(nilLiteral: ()) { self = .null }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self.init(literal: elements) }

    /// A literal's members are taken as written, without the duplicate search of ``init(_:)`` (a literal
    /// with a key twice is a programming error, caught in debug builds). Replies and notifications are
    /// built from literals on the hot path.
    init(literal elements: [(String, JSONValue)]) {
        assert(Set(elements.map(\.0)).count == elements.count, "duplicate key in a JSON object literal")
        self.init(uniqueMembers: elements.map { (key: $0.0, value: $0.1) })
    }
}
