import CSimdJSON
import Unchecked

#if canImport(Glibc)
import Glibc
#endif

/// A value of the document a ``JSONParser`` parsed last, read in place: strings, numbers and members are
/// read from the parser's buffers and nothing is allocated unless asked for (``string``, ``value``).
/// This is how navd reads requests: a `navigate` needs five short strings of its params, not a tree.
///
/// The view reads simdjson's tape, its documented DOM layout: one 64-bit word per value with the
/// type in the top byte; an array or object holds the index past its closing word and its element
/// count; a string points into the string buffer (a 32-bit length, then the bytes); a number takes
/// a second word. An object's members are a key (a string word) then the value.
///
/// A view is valid until the same parser parses again (checked in debug builds); keep ``value`` for
/// anything that must outlive the current message.
public struct JSONView {
    @usableFromInline let tape: UnsafePointer<UInt64>
    @usableFromInline let strings: UnsafePointer<UInt8>
    @usableFromInline let index: Int
    #if DEBUG
    /// Debug builds check that the parser has not parsed again since (release builds keep a view to
    /// three words: it is copied on every read of a request).
    @usableFromInline let parserRef: Unretained<JSONParser>
    @usableFromInline let generation: Int
    #endif

    @usableFromInline
    init(tape: UnsafePointer<UInt64>, strings: UnsafePointer<UInt8>, index: Int, parser: JSONParser, generation: Int) {
        self.tape = tape
        self.strings = strings
        self.index = index
        #if DEBUG
        self.parserRef = Unretained(parser)
        self.generation = generation
        #endif
    }

    #if !DEBUG
    @usableFromInline @inline(__always)
    init(tape: UnsafePointer<UInt64>, strings: UnsafePointer<UInt8>, index: Int) {
        self.tape = tape
        self.strings = strings
        self.index = index
    }
    #endif

    @inlinable @inline(__always) func word(_ i: Int) -> UInt64 {
        #if DEBUG
        assert(parserRef.object.generation == generation, "a JSONView was read after its parser parsed another document")
        #endif
        return tape[i]
    }

    @inlinable @inline(__always) func at(_ i: Int) -> JSONView {
        #if DEBUG
        JSONView(tape: tape, strings: strings, index: i, parser: parserRef.object, generation: generation)
        #else
        JSONView(tape: tape, strings: strings, index: i)
        #endif
    }

    /// The tape's type character of the word at `i`.
    @inlinable @inline(__always) func type(_ i: Int) -> UInt8 { UInt8(truncatingIfNeeded: word(i) >> 56) }

    /// The bytes of the string whose word is at `i` (a value or a key).
    @inlinable @inline(__always) func stringBytes(at i: Int) -> UnsafeRawBufferPointer {
        let offset = Int(truncatingIfNeeded: word(i) & 0x00FF_FFFF_FFFF_FFFF)
        let length = UnsafeRawPointer(strings + offset).loadUnaligned(as: UInt32.self)
        return UnsafeRawBufferPointer(start: strings + offset + 4, count: Int(UInt32(littleEndian: length)))
    }

    /// The index of the word after the value at `i`.
    @inlinable @inline(__always) func after(_ i: Int) -> Int {
        switch type(i) {
        case UInt8(ascii: "{"), UInt8(ascii: "["): return Int(truncatingIfNeeded: UInt32(truncatingIfNeeded: word(i)))
        case UInt8(ascii: "l"), UInt8(ascii: "u"), UInt8(ascii: "d"): return i + 2
        default: return i + 1
        }
    }

    public enum Kind: Sendable, Equatable {
        case null, bool, int, double, string, array, object

        /// The JSON type name used in messages and schemas: `null`, `boolean`, `integer`, `number`, ….
        public var typeName: String {
            switch self {
            case .null: return "null"
            case .bool: return "boolean"
            case .int: return "integer"
            case .double: return "number"
            case .string: return "string"
            case .array: return "array"
            case .object: return "object"
            }
        }
    }

    @inlinable @inline(__always)
    public var kind: Kind {
        switch type(index) {
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "l"), UInt8(ascii: "u"): return .int
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "["): return .array
        default: return .object
        }
    }

    @inlinable @inline(__always)
    public var isNull: Bool { type(index) == UInt8(ascii: "n") }
    @inlinable @inline(__always)
    public var isObject: Bool { type(index) == UInt8(ascii: "{") }
    @inlinable @inline(__always)
    public var isArray: Bool { type(index) == UInt8(ascii: "[") }

    /// The JSON type name used in messages, as ``JSONValue/typeName``.
    public var typeName: String { kind.typeName }

    @inlinable
    public var string: String? {
        guard type(index) == UInt8(ascii: "\"") else { return nil }
        let bytes = stringBytes(at: index)
        return SmallStringBytes.asciiString(bytes) ?? String(decoding: bytes, as: UTF8.self)
    }

    /// The UTF-8 bytes of a string value, in the parser's buffer (empty for anything else).
    @inlinable @inline(__always)
    public var stringBytes: ByteView {
        guard type(index) == UInt8(ascii: "\"") else { return ByteView(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return ByteView(stringBytes(at: index))
    }

    @inlinable @inline(__always)
    public var bool: Bool? {
        switch type(index) {
        case UInt8(ascii: "t"): return true
        case UInt8(ascii: "f"): return false
        default: return nil
        }
    }

    /// The number as the tape holds it: an integer (``JSONValue/uint(_:)`` past `Int.max`), or a double.
    @inlinable @inline(__always) var number: JSONValue? {
        switch type(index) {
        case UInt8(ascii: "l"): return .int(Int(truncatingIfNeeded: Int64(bitPattern: word(index + 1))))
        case UInt8(ascii: "u"): return .uint(word(index + 1))
        case UInt8(ascii: "d"): return .double(Double(bitPattern: word(index + 1)))
        default: return nil
        }
    }

    /// The value when the document wrote an integer that fits 64 bits (no conversions), else nil.
    @inlinable @inline(__always)
    public var exactInteger: Int? {
        type(index) == UInt8(ascii: "l") ? Int(truncatingIfNeeded: Int64(bitPattern: word(index + 1))) : nil
    }

    /// An integer value; doubles with no fractional part count as integers (as ``JSONValue/intValue``).
    @inlinable @inline(__always)
    public var int: Int? { number?.intValue }

    /// Elements of an array or members of an object; 0 for anything else.
    @inlinable
    public var count: Int {
        guard isObject || isArray else { return 0 }
        let n = Int((word(index) >> 32) & 0xFF_FFFF)
        guard n == 0xFF_FFFF else { return n }
        // simdjson saturates the count: count the elements themselves.
        var c = 0
        var i = index + 1
        let end = after(index) - 1
        while i < end {
            if isObject { i += 1 }
            i = after(i)
            c += 1
        }
        return c
    }

    /// The elements of an array (empty for anything else).
    public var elements: [JSONView] {
        guard isArray else { return [] }
        var out: [JSONView] = []
        var i = index + 1
        let end = after(index) - 1
        while i < end {
            out.append(at(i))
            i = after(i)
        }
        return out
    }

    /// Calls `body` with each element of an array, in order (nothing for anything else).
    @inlinable @inline(__always)
    public func forEachElement(_ body: (JSONView) -> Void) {
        guard isArray else { return }
        var i = index + 1
        let end = after(index) - 1
        while i < end {
            body(at(i))
            i = after(i)
        }
    }

    /// Calls `body` with each member of an object, in document order: the key's UTF-8 bytes and the value.
    @inlinable @inline(__always)
    public func forEachMember<E: Error>(_ body: (ByteView, JSONView) throws(E) -> Void) throws(E) {
        guard isObject else { return }
        var i = index + 1
        let end = after(index) - 1
        while i < end {
            let v = i + 1
            try body(ByteView(stringBytes(at: i)), at(v))
            i = after(v)
        }
    }

    /// The member `key` of an object (the last one when the key repeats, as ``JSONParser`` does), or nil.
    @inlinable
    public func member(_ key: String) -> JSONView? {
        guard isObject else { return nil }
        var found: JSONView?
        forEachMember { k, v in
            if k.count == key.utf8.count && k.equals(key) { found = v }
        }
        return found
    }

    /// The member `key` of an object, named by a literal (the fastest lookup), or nil.
    @inlinable @inline(__always)
    public func member(_ key: StaticString) -> JSONView? {
        guard isObject else { return nil }
        var found: JSONView?
        forEachMember { k, v in
            if k.equals(key) { found = v }
        }
        return found
    }

    /// Where this value sits in its document (never 0, which is the document's root word): kept by a
    /// reader that found a member once and reads it later with ``view(at:)``.
    @inlinable public var position: Int { index }

    /// The value at `position` (from ``position``) of the same document.
    @inlinable public func view(at position: Int) -> JSONView { at(position) }

    /// The value as a `JSONValue` tree, which outlives the parser's buffers.
    public var value: JSONValue { value(keys: nil) }

    /// The value as a `JSONValue` tree; object keys come from `keys` when it has seen them before
    /// (a request's field names repeat from one message to the next; making a string costs more than
    /// finding it).
    public func value(keys: StringCache?) -> JSONValue {
        switch kind {
        case .null: return .null
        case .bool: return .bool(bool!)
        case .int, .double: return number!
        case .string: return .string(string!)
        case .array:
            var a: [JSONValue] = []
            a.reserveCapacity(count)
            var i = index + 1
            let end = after(index) - 1
            while i < end {
                a.append(at(i).value(keys: keys))
                i = after(i)
            }
            return .array(a)
        case .object:
            var members: [JSONObject.Member] = []
            members.reserveCapacity(count)
            _ = writeMembers(keys: keys, into: &members)
            return .object(JSONObject(members: members))
        }
    }

    /// Writes the members into `members` and returns how many there are. A repeated key: the last
    /// value wins, in the first one's place, as in most parsers.
    @inline(__always)
    private func writeMembers(keys: StringCache?, into members: inout [JSONObject.Member]) -> Int {
        var n = 0
        var byKey: [String: Int]?
        forEachMember { k, v in
            let key = keys?.string(k.raw) ?? k.string
            let value = v.value(keys: keys)
            if byKey != nil {
                if let j = byKey![key] {
                    members[j].value = value
                } else {
                    byKey![key] = n
                    members.append(JSONObject.Member(key: key, value: value))
                    n += 1
                }
                return
            }
            var j = 0
            while j < n && members[j].key != key { j += 1 }
            if j < n {
                members[j].value = value
            } else {
                members.append(JSONObject.Member(key: key, value: value))
                n += 1
                if n == JSONObject.keysComparedInTurn {  // past it, keys are looked up by hash
                    var index = [String: Int](minimumCapacity: max(2 * n, members.capacity))
                    for (i, m) in members.enumerated() { index[m.key] = i }
                    byKey = index
                }
            }
        }
        return n
    }
}

/// Strings made from bytes, kept for the next time the same bytes come: a small direct-mapped table
/// of short strings (object keys), in storage of its own so that a lookup counts no references. Not
/// thread-safe; one per parser's user.
public final class StringCache {
    @usableFromInline static let width = 32
    @usableFromInline let mask: Int
    /// Each slot's bytes (`width` each) and length (0: empty).
    @usableFromInline let keyBytes: UnsafeMutablePointer<UInt8>
    @usableFromInline let lengths: UnsafeMutablePointer<Int>
    @usableFromInline let strings: UnsafeMutablePointer<String>

    /// `slots` is rounded up to a power of two.
    public init(slots: Int = 64) {
        var n = 8
        while n < slots { n *= 2 }
        mask = n - 1
        keyBytes = .allocate(capacity: n * Self.width)
        lengths = .allocate(capacity: n)
        lengths.initialize(repeating: 0, count: n)
        strings = .allocate(capacity: n)
        strings.initialize(repeating: "", count: n)
    }

    deinit {
        keyBytes.deallocate()
        lengths.deallocate()
        strings.deinitialize(count: mask + 1)
        strings.deallocate()
    }

    /// The string of `utf8` (valid UTF-8), from the table when the same bytes were seen last in its slot.
    @inlinable @inline(__always)
    public func string(_ utf8: UnsafeRawBufferPointer) -> String {
        let n = utf8.count
        guard n > 0 && n <= Self.width else { return String(decoding: utf8, as: UTF8.self) }
        let slot = (n &* 31 &+ Int(utf8[0]) &* 7 &+ Int(utf8[n &- 1])) & mask
        if lengths[slot] == n && bytesEqual(keyBytes + slot &* Self.width, utf8.baseAddress!, count: n) { return strings[slot] }
        return remember(utf8, at: slot)
    }

    @usableFromInline
    func remember(_ utf8: UnsafeRawBufferPointer, at slot: Int) -> String {
        let s = String(decoding: utf8, as: UTF8.self)
        UnsafeMutableRawPointer(keyBytes + slot * Self.width).copyMemory(from: utf8.baseAddress!, byteCount: utf8.count)
        lengths[slot] = utf8.count
        strings[slot] = s
        return s
    }
}
