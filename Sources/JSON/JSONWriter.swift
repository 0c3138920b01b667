import Unchecked

#if canImport(Glibc)
import Glibc
#endif

/// Writes JSON text straight into a ``ByteBuffer``: no intermediate strings, correct escaping of every
/// string (control characters, quotes, backslashes; UTF-8 passes through unchanged).
public struct JSONWriter {
    /// Where the text goes (shared by copies of the writer).
    public let buffer: ByteBuffer

    public init(capacity: Int = 256) {
        buffer = ByteBuffer(capacity: capacity)
    }

    /// A writer that appends to `buffer` (a connection's output, say).
    public init(into buffer: ByteBuffer) {
        self.buffer = buffer
    }

    /// A copy of what was written.
    public var bytes: [UInt8] { buffer.bytes }

    /// Serializes `value` into a fresh byte array.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var w = JSONWriter()
        w.write(value)
        return w.bytes
    }

    /// Serializes `value` into a `String`.
    public static func string(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    @inlinable @inline(__always) public mutating func raw(_ s: StaticString) {
        buffer.append(s.utf8Start, count: s.utf8CodeUnitCount)
    }

    @inlinable @inline(__always) public mutating func raw(_ b: UInt8) { buffer.append(b) }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let b): b ? raw("true") : raw("false")
        case .int(let i): write(int: i)
        case .uint(let u): buffer.append(String(u))
        case .double(let d): write(double: d)
        case .string(let s): write(string: s)
        case .array(let a):
            raw(UInt8(ascii: "["))
            var first = true
            for v in a {
                if !first { raw(UInt8(ascii: ",")) }
                first = false
                write(element: v)
            }
            raw(UInt8(ascii: "]"))
        case .object(let o):
            raw(UInt8(ascii: "{"))
            // By index over the members: the pair iterator copied each key and value out.
            let members = o.members
            var i = 0
            while i < members.count {
                if i > 0 { raw(UInt8(ascii: ",")) }
                write(string: members[i].key)
                raw(UInt8(ascii: ":"))
                write(element: members[i].value)
                i += 1
            }
            raw(UInt8(ascii: "}"))
        }
    }

    /// A member's or an element's value: a string, an integer or a boolean (most setup fields) is
    /// written here, anything else through ``write(_:)-(JSONValue)`` again.
    @inline(__always)
    private mutating func write(element v: JSONValue) {
        switch v {
        case .string(let s): write(string: s)
        case .int(let i): write(int: i)
        case .bool(let b): b ? raw("true") : raw("false")
        default: write(v)
        }
    }

    /// Writes a value read in place (a request's id, say) as ``write(_:)-(JSONValue)`` writes its ``JSONView/value``.
    public mutating func write(_ view: JSONView) {
        switch view.kind {
        case .null: raw("null")
        case .bool: view.bool! ? raw("true") : raw("false")
        case .int:
            if let i = view.exactInteger { write(int: i) } else if let n = view.number { write(n) }
        case .double:
            if case .double(let d)? = view.number { write(double: d) } else { raw("null") }
        case .string: write(utf8: view.stringBytes.raw)
        case .array:
            raw(UInt8(ascii: "["))
            var first = true
            for v in view.elements {
                if !first { raw(UInt8(ascii: ",")) }
                first = false
                write(v)
            }
            raw(UInt8(ascii: "]"))
        case .object:
            // Through the tree: a repeated key is written once, with its last value, as the tree keeps it.
            write(view.value)
        }
    }

    /// "00" to "99": integers are written two digits at a time.
    @usableFromInline static let digitPairs: StaticString = """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """

    /// Writes an integer (through ``ReservedOutput/int(_:)``, the one integer formatter). Inlined, so
    /// each call site keeps its own branch history: an id, a version and a node number each keep
    /// their number of digits from one request to the next, where one shared copy mispredicted its
    /// loop as the digit counts alternated (4 % of navd's time).
    @inlinable @inline(__always)
    public mutating func write(int: Int) {
        reserving(ReservedOutput.maxIntBytes) { $0.int(int) }
    }

    public mutating func write(double: Double) {
        if !double.isFinite {
            raw("null")  // JSON has no NaN or infinity.
        } else if double.rounded() == double && abs(double) < 1e15 {
            write(int: Int(double))
            raw(".0")
        } else {
            buffer.append(double.description)
        }
    }

    private static let hex: StaticString = "0123456789abcdef"

    /// Writes `string` as a JSON string. A small string without escapes (most names and keys) is
    /// written where it is called, its bytes copied as two words; any other out of line.
    @inlinable @inline(__always)
    public mutating func write(string: String) {
        if let small = SmallStringBytes(string), !small.needsEscape {
            reserving(SmallStringBytes.jsonBytes) { $0.string(small) }
            return
        }
        write(largeString: string)
    }

    @usableFromInline @inline(never)
    mutating func write(largeString string: String) {
        if let done = string.utf8.withContiguousStorageIfAvailable({ write(utf8: UnsafeRawBufferPointer($0)) }) {
            return done
        }
        var s = string
        s.withUTF8 { write(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// Writes UTF-8 text as a JSON string: runs that need no escape are copied at once.
    public mutating func write(utf8: UnsafeRawBufferPointer) {
        let n = utf8.count
        buffer.reserve(n + 2)
        // Common case: nothing to escape. Scan and copy in one pass, straight into the buffer.
        if let src = utf8.baseAddress?.assumingMemoryBound(to: UInt8.self) {
            let dst = buffer.base + buffer.used
            var k = 0
            while k < n {
                let c = src[k]
                if c < 0x20 || c == 0x22 || c == 0x5C { break }
                dst[k + 1] = c
                k += 1
            }
            if k == n {
                dst[0] = UInt8(ascii: "\"")
                dst[n + 1] = UInt8(ascii: "\"")
                buffer.used += n + 2
                return
            }
        } else {
            raw("\"\"")
            return
        }
        buffer.append(UInt8(ascii: "\""))
        var start = 0
        var i = 0
        while i < n {
            let c = utf8[i]
            if c >= 0x20 && c != 0x22 && c != 0x5C {
                i += 1
                continue
            }
            if start < i { buffer.append(utf8.baseAddress! + start, count: i - start) }
            switch c {
            case 0x22: raw("\\\"")
            case 0x5C: raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0x08: raw("\\b")
            case 0x0C: raw("\\f")
            default:
                raw("\\u00")
                Self.hex.withUTF8Buffer { h in
                    buffer.append(h[Int(c >> 4)])
                    buffer.append(h[Int(c & 0xF)])
                }
            }
            i += 1
            start = i
        }
        if start < n { buffer.append(utf8.baseAddress! + start, count: n - start) }
        buffer.append(UInt8(ascii: "\""))
    }
}

/// A value that writes its own JSON: replies of known shapes are written straight into the output
/// buffer this way, without building a ``JSONValue`` tree first.
public protocol JSONEncodable {
    func encode(into w: inout JSONWriter)
}

extension JSONValue: JSONEncodable {
    @inlinable public func encode(into w: inout JSONWriter) { w.write(self) }
}

/// JSON text written before (by a ``JSONWriter``, or read and checked), written again as it is.
public struct JSONText: JSONEncodable, Sendable, Equatable {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    /// The text of `value`.
    public init(_ value: JSONValue) { bytes = JSONWriter.encode(value) }
    /// The text of `value`.
    public init(encoding value: some JSONEncodable) {
        var w = JSONWriter(capacity: 128)
        value.encode(into: &w)
        bytes = w.bytes
    }
    public func encode(into w: inout JSONWriter) { w.buffer.append(contentsOf: bytes) }
}

extension JSONWriter {
    /// Writes an array of strings.
    public mutating func write(strings: [String]) {
        raw(UInt8(ascii: "["))
        for (i, s) in strings.enumerated() {
            if i > 0 { raw(UInt8(ascii: ",")) }
            write(string: s)
        }
        raw(UInt8(ascii: "]"))
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text of the value.
    public var description: String { JSONWriter.string(self) }
}

/// Output written piece by piece without a capacity check per piece: ``JSONWriter/reserving(_:_:)``
/// makes room for an upper bound of what the body writes, once. For replies of known shapes, whose
/// parts (punctuation, names, integers, node ids) have known maximum sizes.
public struct ReservedOutput {
    @usableFromInline var at: UnsafeMutablePointer<UInt8>
    @usableFromInline let end: UnsafeMutablePointer<UInt8>

    @inlinable init(_ start: UnsafeMutablePointer<UInt8>, capacity: Int) {
        at = start
        end = start + capacity
    }

    /// The most bytes ``int(_:)`` writes.
    public static let maxIntBytes = 20

    @inlinable @inline(__always)
    public mutating func raw(_ s: StaticString) {
        let n = s.utf8CodeUnitCount
        assert(at + n <= end, "ReservedOutput overflow")
        if n <= 16 { ByteBuffer.copySmall(UnsafeMutableRawPointer(at), s.utf8Start, n) } else { memcpy(at, s.utf8Start, n) }
        at += n
    }

    /// Copies `bytes` (text already JSON: a name written once, quoted).
    @inlinable @inline(__always)
    public mutating func raw(_ bytes: UnsafeRawBufferPointer) {
        let n = bytes.count
        assert(at + n <= end, "ReservedOutput overflow")
        guard let from = bytes.baseAddress else { return }
        if n <= 16 { ByteBuffer.copySmall(UnsafeMutableRawPointer(at), from, n) } else { memcpy(at, from, n) }
        at += n
    }

    @inlinable @inline(__always)
    public mutating func raw(_ b: UInt8) {
        assert(at < end, "ReservedOutput overflow")
        at.pointee = b
        at += 1
    }

    /// Sixteen zero bytes (room for a header filled in later).
    @inlinable @inline(__always)
    public mutating func zeros16() {
        assert(at + 16 <= end, "ReservedOutput overflow")
        UnsafeMutableRawPointer(at).storeBytes(of: 0 as UInt64, as: UInt64.self)
        UnsafeMutableRawPointer(at + 8).storeBytes(of: 0 as UInt64, as: UInt64.self)
        at += 16
    }

    /// A small string's bytes as a JSON string, when it needs no escape (``SmallStringBytes/needsEscape``
    /// false): at most ``SmallStringBytes/jsonBytes`` bytes of room.
    @inlinable @inline(__always)
    public mutating func string(_ small: SmallStringBytes) {
        assert(!small.needsEscape && at + SmallStringBytes.jsonBytes <= end, "ReservedOutput overflow")
        let n = small.count
        at.pointee = UInt8(ascii: "\"")
        small.store(to: at + 1)
        at[n + 1] = UInt8(ascii: "\"")
        at += n + 2
    }

    /// Writes `v` in decimal (at most ``maxIntBytes`` bytes).
    @inlinable @inline(__always)
    public mutating func int(_ v: Int) {
        assert(at + Self.maxIntBytes <= end, "ReservedOutput overflow")
        if v >= 0 && v < 10 {
            at.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v)
            at += 1
            return
        }
        var m = v.magnitude
        if v < 0 {
            at.pointee = UInt8(ascii: "-")
            at += 1
        }
        // Count the digits, then write them backwards two at a time into place.
        var digits = 1
        var t = m
        while t >= 100 { t /= 100; digits &+= 2 }
        if t >= 10 { digits &+= 1 }
        var p = at + digits
        let pairs = UnsafeRawPointer(JSONWriter.digitPairs.utf8Start)
        while m >= 100 {
            let q = m / 100
            let r = Int(truncatingIfNeeded: m &- q &* 100)
            m = q
            p -= 2
            UnsafeMutableRawPointer(p).storeBytes(of: pairs.loadUnaligned(fromByteOffset: r &* 2, as: UInt16.self), as: UInt16.self)
        }
        if m >= 10 {
            p -= 2
            UnsafeMutableRawPointer(p).storeBytes(of: pairs.loadUnaligned(fromByteOffset: Int(truncatingIfNeeded: m) &* 2, as: UInt16.self), as: UInt16.self)
        } else {
            (p - 1).pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: m)
        }
        at += digits
    }

    /// The id of node `number` as a JSON string ("\"n42\"": at most ``maxIntBytes`` + 3 bytes).
    @inlinable @inline(__always)
    public mutating func nodeId(_ number: Int) {
        raw("\"n")
        int(number)
        raw(UInt8(ascii: "\""))
    }
}

extension JSONWriter {
    /// Runs `body` with room for `bytes` bytes, then keeps what it wrote.
    @inlinable @inline(__always)
    public mutating func reserving(_ bytes: Int, _ body: (inout ReservedOutput) -> Void) {
        buffer.reserve(bytes)
        var out = ReservedOutput(buffer.base + buffer.used, capacity: bytes)
        let start = out.at
        body(&out)
        buffer.used += out.at - start
    }
}
