extension JSONValue {
    /// The number of bytes ``JSONWriter`` writes for this value, counted without writing it: what
    /// navd's size limits measure (a session's setup models and facts, hints, results).
    public var encodedSize: Int {
        switch self {
        case .null: return 4
        case .bool(let b): return b ? 4 : 5
        case .int(let i): return JSONValue.decimalDigits(i)
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
    public static func encodedSize(of s: String) -> Int {
        var n = 2
        for c in s.utf8 {
            if c >= 0x20 && c != 0x22 && c != 0x5C {
                n += 1
            } else {
                switch c {
                case 0x22, 0x5C, 0x0A, 0x0D, 0x09, 0x08, 0x0C: n += 2
                default: n += 6
                }
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
        for m in members { n += JSONValue.encodedSize(of: m.key) + 1 + m.value.encodedSize }
        return n
    }
}
