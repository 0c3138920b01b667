import CSimdJSON

#if canImport(Glibc)
import Glibc
#endif

/// A value of the document a ``JSONParser`` parsed last, read in place: strings, numbers and members are
/// read from the parser's buffers and nothing is allocated unless asked for (``string``, ``value``).
/// This is how navd reads requests: a `navigate` needs five short strings of its params, not a tree.
///
/// A view is valid until the same parser parses again (checked in debug builds); keep ``value`` for
/// anything that must outlive the current message.
public struct JSONView {
    @usableFromInline let events: UnsafePointer<navjson_event>
    @usableFromInline let index: Int
    @usableFromInline unowned(unsafe) let parser: JSONParser
    @usableFromInline let generation: Int

    @usableFromInline
    init(events: UnsafePointer<navjson_event>, index: Int, parser: JSONParser, generation: Int) {
        self.events = events
        self.index = index
        self.parser = parser
        self.generation = generation
    }

    @inlinable @inline(__always) var event: navjson_event {
        assert(parser.generation == generation, "a JSONView was read after its parser parsed another document")
        return events[index]
    }

    @inlinable @inline(__always) func at(_ i: Int) -> JSONView {
        JSONView(events: events, index: i, parser: parser, generation: generation)
    }

    public enum Kind: Sendable, Equatable { case null, bool, int, double, string, array, object }

    @inlinable
    public var kind: Kind {
        switch Int32(event.type) {
        case Int32(NAVJSON_NULL): return .null
        case Int32(NAVJSON_TRUE), Int32(NAVJSON_FALSE): return .bool
        case Int32(NAVJSON_INT): return .int
        case Int32(NAVJSON_DOUBLE): return .double
        case Int32(NAVJSON_STRING): return .string
        case Int32(NAVJSON_ARRAY): return .array
        default: return .object
        }
    }

    @inlinable
    public var isNull: Bool { event.type == UInt32(NAVJSON_NULL) }
    @inlinable
    public var isObject: Bool { event.type == UInt32(NAVJSON_OBJECT) }
    @inlinable
    public var isArray: Bool { event.type == UInt32(NAVJSON_ARRAY) }

    /// The JSON type name used in messages, as ``JSONValue/typeName``.
    public var typeName: String {
        switch kind {
        case .null: return "null"
        case .bool: return "boolean"
        case .int: return "integer"
        case .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    @inlinable
    public var string: String? {
        let e = event
        guard e.type == UInt32(NAVJSON_STRING) else { return nil }
        return JSONParser.string(e)
    }

    /// The UTF-8 bytes of a string value, in the parser's buffer (empty for anything else).
    @inlinable
    public var stringBytes: UnsafeRawBufferPointer {
        let e = event
        guard e.type == UInt32(NAVJSON_STRING), e.len > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: e.v.s, count: Int(e.len))
    }

    @inlinable
    public var bool: Bool? {
        switch Int32(event.type) {
        case Int32(NAVJSON_TRUE): return true
        case Int32(NAVJSON_FALSE): return false
        default: return nil
        }
    }

    /// An integer value; doubles with no fractional part count as integers (as ``JSONValue/intValue``).
    @inlinable
    public var int: Int? {
        let e = event
        switch Int32(e.type) {
        case Int32(NAVJSON_INT): return Int(e.v.i)
        case Int32(NAVJSON_DOUBLE): return JSONValue.double(e.v.d).intValue
        default: return nil
        }
    }

    /// Elements of an array or members of an object; 0 for anything else.
    @inlinable
    public var count: Int {
        let e = event
        return e.type == UInt32(NAVJSON_ARRAY) || e.type == UInt32(NAVJSON_OBJECT) ? Int(e.len) : 0
    }

    /// The index of the event after this value.
    @inlinable @inline(__always) var end: Int {
        let e = event
        return e.type == UInt32(NAVJSON_ARRAY) || e.type == UInt32(NAVJSON_OBJECT) ? Int(e.v.i) : index + 1
    }

    /// The elements of an array (empty for anything else).
    public var elements: [JSONView] {
        guard isArray else { return [] }
        var out: [JSONView] = []
        out.reserveCapacity(count)
        var i = index + 1
        for _ in 0..<count {
            let v = at(i)
            out.append(v)
            i = v.end
        }
        return out
    }

    /// Calls `body` with each member of an object, in document order: the key's UTF-8 bytes and the value.
    @inlinable
    public func forEachMember<E: Error>(_ body: (UnsafeRawBufferPointer, JSONView) throws(E) -> Void) throws(E) {
        guard isObject else { return }
        var i = index + 1
        for _ in 0..<count {
            let k = events[i]
            let v = at(i + 1)
            try body(UnsafeRawBufferPointer(start: k.v.s, count: k.len > 0 ? Int(k.len) : 0), v)
            i = v.end
        }
    }

    /// The member `key` of an object (the last one when the key repeats, as ``JSONParser`` does), or nil.
    @inlinable
    public func member(_ key: String) -> JSONView? {
        guard isObject else { return nil }
        let length = key.utf8.count
        var found: JSONView?
        var i = index + 1
        for _ in 0..<count {
            let k = events[i]
            let v = at(i + 1)
            if Int(k.len) == length && JSONView.bytes(UnsafeRawBufferPointer(start: k.v.s, count: length), equal: key) {
                found = v
            }
            i = v.end
        }
        return found
    }

    /// The member `key` of an object, named by a literal (the fastest lookup), or nil.
    @inlinable
    public func member(_ key: StaticString) -> JSONView? {
        guard isObject else { return nil }
        let length = key.utf8CodeUnitCount
        var found: JSONView?
        var i = index + 1
        for _ in 0..<count {
            let k = events[i]
            let v = at(i + 1)
            if Int(k.len) == length && (length == 0 || memcmp(k.v.s, key.utf8Start, length) == 0) {
                found = v
            }
            i = v.end
        }
        return found
    }

    /// Whether `raw` holds exactly the UTF-8 of `name`.
    @inlinable @inline(__always) public static func bytes(_ raw: UnsafeRawBufferPointer, equal name: StaticString) -> Bool {
        raw.count == name.utf8CodeUnitCount && (raw.count == 0 || memcmp(raw.baseAddress!, name.utf8Start, raw.count) == 0)
    }

    /// Whether `raw` (a key or string read in place) holds exactly the UTF-8 of `name`.
    @inlinable @inline(__always) public static func bytes(_ raw: UnsafeRawBufferPointer, equal name: String) -> Bool {
        var n = name
        return n.withUTF8 { b in
            guard raw.count == b.count else { return false }
            guard let pa = raw.baseAddress, let pb = b.baseAddress else { return raw.count == 0 }
            return memcmp(pa, pb, raw.count) == 0
        }
    }

    /// The value as a `JSONValue` tree, which outlives the parser's buffers.
    public var value: JSONValue {
        assert(parser.generation == generation, "a JSONView was read after its parser parsed another document")
        var i = index
        return JSONParser.build(events, &i)
    }
}
