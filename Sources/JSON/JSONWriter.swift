/// Writes JSON text straight into a byte buffer: no intermediate strings, correct escaping of every
/// string (control characters, quotes, backslashes; UTF-8 passes through unchanged).
public struct JSONWriter {
    public var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

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

    @inline(__always) public mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    @inline(__always) public mutating func raw(_ b: UInt8) { bytes.append(b) }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let b): b ? raw("true") : raw("false")
        case .int(let i): write(int: i)
        case .double(let d): write(double: d)
        case .string(let s): write(string: s)
        case .array(let a):
            bytes.append(UInt8(ascii: "["))
            var first = true
            for v in a {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                write(v)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let o):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for (k, v) in o.members {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                write(string: k)
                bytes.append(UInt8(ascii: ":"))
                write(v)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    public mutating func write(int: Int) {
        if int == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var v = int.magnitude
        if int < 0 { bytes.append(UInt8(ascii: "-")) }
        var tmp: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                  UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &tmp) { buf in
            while v > 0 {
                buf[19 - n] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                n += 1
            }
            bytes.append(contentsOf: buf[(20 - n)...])
        }
    }

    public mutating func write(double: Double) {
        if !double.isFinite {
            raw("null")  // JSON has no NaN or infinity.
        } else if double.rounded() == double && abs(double) < 1e15 {
            write(int: Int(double))
            raw(".0")
        } else {
            bytes.append(contentsOf: double.description.utf8)
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    public mutating func write(string: String) {
        bytes.append(UInt8(ascii: "\""))
        var s = string
        s.withUTF8 { utf8 in
            var start = 0
            var i = 0
            let n = utf8.count
            while i < n {
                let c = utf8[i]
                if c >= 0x20 && c != 0x22 && c != 0x5C {
                    i += 1
                    continue
                }
                if start < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i])) }
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
                    bytes.append(Self.hex[Int(c >> 4)])
                    bytes.append(Self.hex[Int(c & 0xF)])
                }
                i += 1
                start = i
            }
            if start < n { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<n])) }
        }
        bytes.append(UInt8(ascii: "\""))
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

extension JSONWriter {
    /// Writes an array of strings.
    public mutating func write(strings: [String]) {
        bytes.append(UInt8(ascii: "["))
        for (i, s) in strings.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            write(string: s)
        }
        bytes.append(UInt8(ascii: "]"))
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text of the value.
    public var description: String { JSONWriter.string(self) }
}
