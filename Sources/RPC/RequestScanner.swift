import JSON
import Unchecked

/// The request line nearly every client writes, read without parsing its envelope:
///
///     {"jsonrpc":"2.0","id":N,"method":"NAME"}
///     {"jsonrpc":"2.0","id":N,"method":"NAME","params":VALUE}
///
/// with exactly these bytes around an id of digits (`0` or up to 18 digits without a leading zero),
/// a method of printable ASCII other than `"` and `\` (at most 64 bytes), and JSON whitespace only
/// after the last brace. The envelope is checked byte for byte here and `VALUE` alone is parsed, as
/// one whole value nested at most one level less than the message may be. Anything else — other
/// key orders, spaces, another id, escapes, a value that is not exactly one value — is left to the
/// parser and ``RPCMessage/request(_:)``, which answer it exactly as before (errors included): this
/// reads the same requests with the same meaning, with less work.
extension RPCMessage {
    @usableFromInline static let head: StaticString = "{\"jsonrpc\":\"2.0\",\"id\":"
    @usableFromInline static let methodKey: StaticString = ",\"method\":\""
    @usableFromInline static let paramsKey: StaticString = ",\"params\":"
    /// simdjson's structural characters of the envelope before `VALUE`: `{`, the start of each of
    /// its six strings and of the id, three colons and three commas... (`,"params":` included).
    @usableFromInline static let structuralsBeforeParams = 15
    /// ...and of a whole line without params (its last brace included).
    @usableFromInline static let structuralsWithoutParams = 13

    /// The request `line` holds when it has the form above (nil: parse it whole). `padded`: the
    /// line is followed by ``JSONParser/padding`` readable bytes (needed to parse `params` in place).
    public static func scanRequest(_ line: ByteView, padded: Bool, parser: JSONParser) -> RPCRequest? {
        let n = line.count
        guard line.has(head, at: 0) else { return nil }
        var i = head.utf8CodeUnitCount
        let id = line.decimal(at: i, most: 18)
        guard id.end > i, id.end == i + 1 || line[i] != UInt8(ascii: "0") else { return nil }
        i = id.end
        guard line.has(methodKey, at: i) else { return nil }
        i += methodKey.utf8CodeUnitCount
        let methodStart = i
        i = line.plainTextEnd(at: i, most: JSONParser.madeStringMost)
        let methodEnd = i
        guard methodEnd > methodStart, i < n, line[i] == UInt8(ascii: "\"") else { return nil }
        i += 1
        var end = n
        while end > i, case let c = line[end - 1], c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { end -= 1 }
        guard end > i, line[end - 1] == UInt8(ascii: "}") else { return nil }
        end -= 1  // the envelope's own brace
        var params: JSONView? = nil
        if end == i {
            parser.skip(line: line, count: structuralsWithoutParams)
        } else {
            guard padded, line.has(paramsKey, at: i) else { return nil }
            let from = i + paramsKey.utf8CodeUnitCount
            guard from < end, line[from] == UInt8(ascii: "{") || line[from] == UInt8(ascii: "[") else { return nil }
            // Params nest one level less than the message may. A value nesting d levels takes at
            // least 2d bytes; a longer one is held to that by its brackets (quoted ones counted too:
            // a few lines more go the long way).
            let deepest = parser.deepestNesting - 1
            if end - from > 2 * deepest {
                var opened = 0
                for j in from..<end where line[j] == UInt8(ascii: "{") || line[j] == UInt8(ascii: "[") { opened += 1 }
                guard opened <= deepest else { return nil }
            }
            guard let p = parser.view(part: from..<end, of: line, before: structuralsBeforeParams) else { return nil }
            params = p
        }
        let made = parser.made(integer: id.value, string: line.bytes(methodStart..<methodEnd))
        return RPCRequest(id: made.integer, methodName: made.string, params: params)
    }
}
