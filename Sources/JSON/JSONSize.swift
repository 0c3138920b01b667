extension JSONValue {
    /// The number of bytes ``JSONWriter`` writes for this value, counted without writing it: what
    /// navd's size limits measure (a session's setup models and facts, hints, results). Every new
    /// screen's setup model is counted, so strings are scanned in place, without iterating a view.
    public var encodedSize: Int {
        switch self {
        case .null: return 4
        case .bool(let b): return b ? 4 : 5
        case .int(let i): return JSONValue.decimalDigits(i)
        case .uint(let u): return String(u).utf8.count
        case .double(let d):
            if !d.isFinite { return 4 }
            if d.rounded() == d && abs(d) < 1e15 { return JSONValue.decimalDigits(Int(d)) + 2 }
            return d.description.utf8.count
        case .string(let s): return JSONValue.encodedSize(of: s)
        case .array(let a):
            var n = 2 + max(0, a.count - 1)
            for v in a { n += v.encodedSize }
            return n
        case .object(let o): return o.encodedSize
        }
    }

    /// The bytes of `s` written as a JSON string, quotes and escapes counted.
    @inline(__always)
    public static func encodedSize(of s: String) -> Int {
        if let n = s.utf8.withContiguousStorageIfAvailable({ escapedSize($0) }) { return n }
        var copy = s
        return copy.withUTF8 { escapedSize($0) }
    }

    @inline(__always)
    static func escapedSize(_ b: UnsafeBufferPointer<UInt8>) -> Int {
        guard let p = b.baseAddress else { return 2 }
        return escapedSize(p, b.count)
    }

    /// Quotes, the bytes, and what escaping adds: one byte for `\"`, `\\` and the named controls,
    /// five for `\u00XX`.
    @inline(__always)
    static func escapedSize(_ p: UnsafePointer<UInt8>, _ count: Int) -> Int {
        var n = 2 + count
        var i = 0
        while i < count {
            let c = p[i]
            i += 1
            if c >= 0x20 && c != 0x22 && c != 0x5C { continue }
            switch c {
            case 0x22, 0x5C, 0x0A, 0x0D, 0x09, 0x08, 0x0C: n += 1
            default: n += 5
            }
        }
        return n
    }

    static func decimalDigits(_ i: Int) -> Int {
        var v = i.magnitude
        var n = i < 0 ? 2 : 1
        while v >= 10 {
            v /= 10
            n += 1
        }
        return n
    }
}

extension JSONObject {
    /// The number of bytes ``JSONWriter`` writes for this object (see ``JSONValue/encodedSize``).
    public var encodedSize: Int {
        var n = 2 + Swift.max(0, count - 1)
        for m in members {
            n += JSONValue.encodedSize(of: m.key) + 1
            // The common member: a string (a setup model's id, a fact's flag).
            if case .string(let s) = m.value { n += JSONValue.encodedSize(of: s) } else { n += m.value.encodedSize }
        }
        return n
    }
}
