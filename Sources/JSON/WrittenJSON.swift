import Unchecked

#if canImport(Glibc)
import Glibc
#endif

/// A JSON value kept as the text ``JSONWriter`` writes for it: compact, an object's members in
/// order and each key once. Where a value is mostly written again as it is (a node's setup model:
/// in `tree`, in notifications, in the log and in saved trees) and seldom read field by field, the
/// text is the cheaper form to keep: it is made straight from where the value lies in a request
/// (``init(_:)-(JSONView)``), written by a copy, and freed without a walk. ``value`` reads it back.
/// A text of at most 15 bytes (`{"id":"42"}`, most setup models) is kept as the two words of a
/// small `String`, a value with no reference: copying and dropping it (a plan's model into its
/// node, a node taken from the spares) calls nothing, where a `String` is retained and released
/// through the runtime even when it is small.
public struct WrittenJSON: Sendable {
    @usableFromInline enum Text: Sendable {
        /// The words of a small `String` (``SmallStringBytes``).
        case small(UInt64, UInt64)
        case large(String)
    }

    @usableFromInline let text: Text

    /// The text. Equal texts are equal values; equal values may have other texts (`1` and `1.0`),
    /// so a comparison that must hold for values compares ``value``.
    public var string: String {
        switch text {
        case .small(let low, let high): SmallStringBytes.string(words: (low, high))
        case .large(let s): s
        }
    }

    @inlinable
    init(verbatim string: String) {
        if let small = SmallStringBytes(string) { text = .small(small.low, small.high) } else { text = .large(string) }
    }

    @inlinable
    init(smallWords words: (UInt64, UInt64)) { text = .small(words.0, words.1) }

    /// `{}`.
    public static let emptyObject = WrittenJSON(verbatim: "{}")

    /// The text of `value`.
    public init(_ value: JSONValue) {
        if case .object(let o) = value, o.isEmpty { self = .emptyObject; return }
        var w = JSONWriter(into: ScratchBuffers.borrow(.written, capacity: 256))
        w.write(value)
        self.init(verbatim: w.buffer.withUnsafeBytes(WrittenJSON.string(_:)))
    }

    /// The text of `view`'s ``JSONView/value``, made without the value, or nil when the bytes cannot
    /// tell it (see ``JSONView/write(distinctInto:)``): the caller takes the value's way.
    public init?(_ view: JSONView) {
        if let small = view.smallObjectWords() {
            self.init(smallWords: small)
            return
        }
        var w = JSONWriter(into: ScratchBuffers.borrow(.written, capacity: 256))
        guard view.write(distinctInto: &w) else { return nil }
        self.init(verbatim: w.buffer.withUnsafeBytes(WrittenJSON.string(_:)))
    }

    /// Written bytes as a `String`: a short ASCII text made straight in its two words.
    @usableFromInline
    static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        SmallStringBytes.asciiString(bytes) ?? String(decoding: bytes, as: UTF8.self)
    }

    /// The text's length in bytes (what it adds to a session's setup models).
    @inlinable public var count: Int {
        switch text {
        case .small(_, let high): Int(truncatingIfNeeded: (high >> 56) & 0xF)
        case .large(let s): s.utf8.count
        }
    }

    /// Whether the text is `{}`.
    @inlinable public var isEmptyObject: Bool {
        switch text {
        case .small(let low, let high): (high >> 56) & 0xF == 2 && low == 0x7D7B  // `{` `}`, the bytes past them zero
        case .large(let s): s == "{}"
        }
    }

    /// The value the text was written from.
    public var value: JSONValue {
        var s = string
        let v = s.withUTF8 { JSONValue(written: UnsafeRawBufferPointer($0)) }
        assert(v != nil, "not text JSONWriter wrote: \(string)")
        return v ?? .null
    }
}

extension JSONWriter {
    /// Writes the text as it is.
    @inlinable @inline(__always)
    public mutating func write(_ text: WrittenJSON) {
        switch text.text {
        case .small(let low, let high):
            buffer.reserve(16)
            let small = SmallStringBytes(words: (low, high))
            small.store(to: buffer.base + buffer.used)
            buffer.used += small.count
        case .large(let s):
            write(largeText: s)
        }
    }

    @usableFromInline @inline(never)
    mutating func write(largeText string: String) {
        var s = string
        s.withUTF8 { buffer.append(contentsOf: UnsafeRawBufferPointer($0)) }
    }
}

extension JSONView {
    /// The most members an object may have for ``write(distinctInto:)``: each key is compared with
    /// the ones before it.
    public static let maxDistinctMembers = 32

    /// Whether the key at tape position `i` of this object is one of the keys before it (their
    /// bytes compared).
    @inline(__always)
    private func keyRepeats(at i: Int) -> Bool {
        let key = stringBytes(at: i)
        var j = index + 1
        while j < i {
            let other = stringBytes(at: j)
            if other.count == key.count && (key.isEmpty || memcmp(other.baseAddress!, key.baseAddress!, key.count) == 0) { return true }
            j = after(j + 1)
        }
        return false
    }

    /// The text of this object when it is a short one (most setup models, such as `{"id":"42"}`):
    /// at most 15 bytes, its keys distinct, its keys and string values ASCII with nothing to escape,
    /// its other values integers, booleans or null. Made in the two words of a small `String`, with
    /// no buffer. Nil for anything else (the writer's way).
    @usableFromInline
    func smallObjectWords() -> (UInt64, UInt64)? {
        guard isObject else { return nil }
        var bytes: (UInt64, UInt64) = (0, 0)
        let n = withUnsafeMutableBytes(of: &bytes) { out -> Int in
            let o = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var n = 0
            // Appends `b`, or says no when the text would pass 15 bytes.
            @inline(__always) func put(_ b: UInt8) -> Bool {
                guard n < 15 else { return false }
                o[n] = b
                n += 1
                return true
            }
            // A string with nothing to escape, quoted; ASCII only.
            @inline(__always) func quoted(_ s: UnsafeRawBufferPointer) -> Bool {
                guard n + s.count + 2 <= 15 else { return false }
                o[n] = UInt8(ascii: "\"")
                for (k, c) in s.enumerated() {
                    guard c >= 0x20 && c < 0x80 && c != 0x22 && c != 0x5C else { return false }
                    o[n + 1 + k] = c
                }
                o[n + 1 + s.count] = UInt8(ascii: "\"")
                n += s.count + 2
                return true
            }
            guard put(UInt8(ascii: "{")) else { return -1 }
            var i = index + 1
            let end = after(index) - 1
            while i < end {
                if i > index + 1 { guard put(UInt8(ascii: ",")) else { return -1 } }
                let key = stringBytes(at: i)
                guard !keyRepeats(at: i), quoted(key), put(UInt8(ascii: ":")) else { return -1 }
                let v = i + 1
                switch type(v) {
                case UInt8(ascii: "\""): guard quoted(stringBytes(at: v)) else { return -1 }
                case UInt8(ascii: "t"): for c in "true".utf8 { guard put(c) else { return -1 } }
                case UInt8(ascii: "f"): for c in "false".utf8 { guard put(c) else { return -1 } }
                case UInt8(ascii: "n"): for c in "null".utf8 { guard put(c) else { return -1 } }
                case UInt8(ascii: "l"):
                    let x = Int64(bitPattern: word(v + 1))
                    guard x > -1_000_000_000_000, x < 1_000_000_000_000 else { return -1 }
                    if x < 0 { guard put(UInt8(ascii: "-")) else { return -1 } }
                    var m = x.magnitude, digits = 1
                    while m >= 10 { m /= 10; digits += 1 }
                    guard n + digits <= 15 else { return -1 }
                    m = x.magnitude
                    for k in stride(from: n + digits - 1, through: n, by: -1) {
                        o[k] = UInt8(ascii: "0") + UInt8(m % 10)
                        m /= 10
                    }
                    n += digits
                default: return -1
                }
                i = after(v)
            }
            guard put(UInt8(ascii: "}")) else { return -1 }
            return n
        }
        guard n >= 0 else { return nil }
        return SmallStringBytes.asciiWords(bytes, count: n)
    }

    /// Writes this value as ``JSONWriter/write(_:)-(JSONValue)`` writes its ``value``, byte for byte,
    /// without making the value, when the bytes tell it: every object's keys are ASCII (so equal
    /// bytes are equal strings), distinct, and at most ``maxDistinctMembers``. Otherwise returns false
    /// with part of it written: the value keeps a repeated key once, and the caller writes that.
    public func write(distinctInto w: inout JSONWriter) -> Bool {
        switch kind {
        case .object:
            guard count <= JSONView.maxDistinctMembers else { return false }
            w.raw(UInt8(ascii: "{"))
            var i = index + 1
            let end = after(index) - 1
            while i < end {
                let key = stringBytes(at: i)
                for b in key where b >= 0x80 { return false }
                guard !keyRepeats(at: i) else { return false }
                if i > index + 1 { w.raw(UInt8(ascii: ",")) }
                w.write(utf8: key)
                w.raw(UInt8(ascii: ":"))
                guard at(i + 1).write(distinctInto: &w) else { return false }
                i = after(i + 1)
            }
            w.raw(UInt8(ascii: "}"))
            return true
        case .array:
            w.raw(UInt8(ascii: "["))
            var i = index + 1
            let end = after(index) - 1
            while i < end {
                if i > index + 1 { w.raw(UInt8(ascii: ",")) }
                guard at(i).write(distinctInto: &w) else { return false }
                i = after(i)
            }
            w.raw(UInt8(ascii: "]"))
            return true
        default:
            w.write(self)
            return true
        }
    }
}

extension JSONValue {
    /// The deepest nesting ``init(written:)`` reads (JSONParser's limit is lower: every text navd
    /// writes from a value it parsed or built fits).
    public static let maxWrittenDepth = 1024

    /// Reads back text ``JSONWriter`` wrote (``WrittenJSON``): the value it was written from. Nil
    /// for anything else (whitespace, a malformed or truncated text, nesting past
    /// ``maxWrittenDepth``): this reads navd's own text, not a client's.
    public init?(written text: UnsafeRawBufferPointer) {
        guard let base = text.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        var r = WrittenReader(p: base, n: text.count)
        guard let v = r.value(depth: 0), r.i == r.n else { return nil }
        self = v
    }
}

/// The reader of ``JSONValue/init(written:)``: one pass, no lookahead past the value it reads.
struct WrittenReader {
    let p: UnsafePointer<UInt8>
    let n: Int
    var i = 0

    init(p: UnsafePointer<UInt8>, n: Int) {
        self.p = p
        self.n = n
    }

    private func peek() -> UInt8? { i < n ? p[i] : nil }

    private mutating func literal(_ s: StaticString, _ v: JSONValue) -> JSONValue? {
        let k = s.utf8CodeUnitCount
        guard n - i >= k, memcmp(p + i, s.utf8Start, k) == 0 else { return nil }
        i += k
        return v
    }

    mutating func value(depth: Int) -> JSONValue? {
        guard let c = peek() else { return nil }
        switch c {
        case UInt8(ascii: "n"): return literal("null", .null)
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "\""): return string().map(JSONValue.string)
        case UInt8(ascii: "["):
            guard depth < JSONValue.maxWrittenDepth else { return nil }
            i += 1
            var a: [JSONValue] = []
            if peek() == UInt8(ascii: "]") { i += 1; return .array(a) }
            while true {
                guard let v = value(depth: depth + 1) else { return nil }
                a.append(v)
                guard let d = peek() else { return nil }
                i += 1
                if d == UInt8(ascii: "]") { return .array(a) }
                guard d == UInt8(ascii: ",") else { return nil }
            }
        case UInt8(ascii: "{"):
            guard depth < JSONValue.maxWrittenDepth else { return nil }
            i += 1
            var members: [JSONObject.Member] = []
            if peek() == UInt8(ascii: "}") { i += 1; return .object(JSONObject(members: members)) }
            while true {
                guard peek() == UInt8(ascii: "\""), let k = string(), peek() == UInt8(ascii: ":") else { return nil }
                i += 1
                guard let v = value(depth: depth + 1) else { return nil }
                members.append(JSONObject.Member(key: k, value: v))
                guard let d = peek() else { return nil }
                i += 1
                if d == UInt8(ascii: "}") { return .object(JSONObject(members: members)) }
                guard d == UInt8(ascii: ",") else { return nil }
            }
        default: return number()
        }
    }

    /// A number as the writer writes one: an integer (`uint` past `Int.max`), or a double with a
    /// fraction or an exponent.
    private mutating func number() -> JSONValue? {
        let start = i
        var isDouble = false
        while let c = peek() {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"): break
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): isDouble = true
            default:
                guard i > start else { return nil }
                return number(start, isDouble)
            }
            i += 1
        }
        guard i > start else { return nil }
        return number(start, isDouble)
    }

    private func number(_ start: Int, _ isDouble: Bool) -> JSONValue? {
        let text = String(decoding: UnsafeRawBufferPointer(start: p + start, count: i - start), as: UTF8.self)
        if !isDouble {
            if let v = Int(text) { return .int(v) }
            if let v = UInt64(text) { return .uint(v) }
        }
        guard let d = Double(text), d.isFinite else { return nil }
        return .double(d)
    }

    /// A string, its escapes undone (the writer's: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f` and
    /// `\u00XX`; any `\uXXXX` too).
    private mutating func string() -> String? {
        i += 1  // the opening quote
        let start = i
        while i < n && p[i] != UInt8(ascii: "\"") && p[i] != UInt8(ascii: "\\") { i += 1 }
        guard i < n else { return nil }
        if p[i] == UInt8(ascii: "\"") {
            let bytes = UnsafeRawBufferPointer(start: p + start, count: i - start)
            i += 1
            return SmallStringBytes.asciiString(bytes) ?? String(decoding: bytes, as: UTF8.self)
        }
        var out = Array(UnsafeBufferPointer(start: p + start, count: i - start))
        while i < n {
            let c = p[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return String(decoding: out, as: UTF8.self)
            }
            guard c == UInt8(ascii: "\\") else { out.append(c); i += 1; continue }
            guard i + 1 < n else { return nil }
            let e = p[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "u"):
                guard n - i >= 4, let u = UInt32(String(decoding: UnsafeRawBufferPointer(start: p + i, count: 4), as: UTF8.self), radix: 16)
                else { return nil }
                i += 4
                out.append(contentsOf: String(Character(Unicode.Scalar(u) ?? "\u{FFFD}")).utf8)
            default: return nil
            }
        }
        return nil
    }
}
