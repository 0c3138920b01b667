import CSimdJSON

/// Why a byte sequence is not an acceptable JSON document.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable { case syntax, invalidUTF8, tooDeep, empty }
    public let kind: Kind
    public let detail: String
    public var description: String {
        switch kind {
        case .syntax: return "invalid JSON: \(detail)"
        case .invalidUTF8: return "the message is not valid UTF-8"
        case .tooDeep: return "JSON nested deeper than allowed"
        case .empty: return "the message is empty"
        }
    }
}

/// The parser seam: every JSON document navd reads goes through here. It is backed by simdjson
/// (through the CSimdJSON shim) and reuses its buffers, so one instance per thread should be kept.
public final class JSONParser {
    private let raw: OpaquePointer
    /// The deepest nesting of arrays and objects accepted.
    public var maxDepth: Int

    public init(maxDepth: Int = 64) {
        raw = navjson_parser_new()
        self.maxDepth = maxDepth
    }

    deinit { navjson_parser_free(raw) }

    /// Counts parses, so that a ``JSONView`` of an earlier document can be caught (debug builds).
    @usableFromInline private(set) var generation = 0

    /// Parses a complete document held in `bytes` and returns a view of it, read in place. The view
    /// (and every view taken from it) is valid until this parser parses again.
    public func view(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONView {
        generation &+= 1
        var events: UnsafePointer<navjson_event>? = nil
        var count = 0
        let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
        let rc = navjson_parse(raw, base, bytes.count, UInt32(clamping: maxDepth), &events, &count)
        guard rc == Int32(NAVJSON_OK), let events else {
            let detail = String(cString: navjson_last_error(raw))
            switch rc {
            case Int32(NAVJSON_ERR_UTF8): throw JSONParseError(kind: .invalidUTF8, detail: detail)
            case Int32(NAVJSON_ERR_DEPTH): throw JSONParseError(kind: .tooDeep, detail: detail)
            case Int32(NAVJSON_ERR_EMPTY): throw JSONParseError(kind: .empty, detail: detail)
            default: throw JSONParseError(kind: .syntax, detail: detail)
            }
        }
        return JSONView(events: events, index: 0, parser: self, generation: generation)
    }

    /// Parses a complete document held in `bytes` into a tree.
    public func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONValue {
        try view(bytes).value
    }

    public func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        let r: Result<JSONValue, JSONParseError> = bytes.withUnsafeBytes { b in
            do throws(JSONParseError) { return .success(try parse(b)) } catch { return .failure(error) }
        }
        return try r.get()
    }

    public func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    @inlinable @inline(__always)
    static func string(_ e: navjson_event) -> String {
        guard e.len > 0, let p = e.v.s else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: Int(e.len)), as: UTF8.self)
    }

    static func build(_ ev: UnsafePointer<navjson_event>, _ i: inout Int) -> JSONValue {
        let e = ev[i]
        i += 1
        switch Int32(e.type) {
        case Int32(NAVJSON_NULL): return .null
        case Int32(NAVJSON_TRUE): return .bool(true)
        case Int32(NAVJSON_FALSE): return .bool(false)
        case Int32(NAVJSON_INT): return .int(Int(e.v.i))
        case Int32(NAVJSON_DOUBLE): return .double(e.v.d)
        case Int32(NAVJSON_STRING): return .string(string(e))
        case Int32(NAVJSON_ARRAY):
            var a: [JSONValue] = []
            a.reserveCapacity(Int(e.len))
            for _ in 0..<e.len { a.append(build(ev, &i)) }
            return .array(a)
        default:  // object
            var members: [(key: String, value: JSONValue)] = []
            members.reserveCapacity(Int(e.len))
            for _ in 0..<e.len {
                let key = string(ev[i])
                i += 1
                let value = build(ev, &i)
                // Duplicate keys: the last one wins, as in most parsers.
                if let j = members.firstIndex(where: { $0.key == key }) {
                    members[j].value = value
                } else {
                    members.append((key, value))
                }
            }
            return .object(JSONObject(uniqueMembers: members))
        }
    }
}
