import JSON
import Unchecked

/// The request line nearly every client writes, read without parsing its envelope:
///
///     {"jsonrpc":"2.0","id":N,"method":"NAME"}
///     {"jsonrpc":"2.0","id":N,"method":"NAME","params":VALUE}
///
/// with exactly these bytes around an id of digits (`0` or up to 18 digits without a leading zero),
/// a method of printable ASCII other than `"` and `\` (at most 64 bytes), and JSON whitespace only
/// after the last brace. The envelope is checked byte for byte by the parser's seam
/// (``JSON/JSONParser/request(line:padded:)``) and `VALUE` alone is parsed (in one pass when it is
/// plain), as one whole value nested at most one level less than the message may be. Anything else — other key orders, spaces, another id, escapes, a value that is
/// not exactly one value — is left to the parser and ``RPCMessage/request(_:)``, which answer it
/// exactly as before (errors included): this reads the same requests with the same meaning, with
/// less work.
extension RPCMessage {
    /// The request `line` holds when it has the form above (nil: parse it whole). `padded`: the
    /// line is followed by ``JSONParser/padding`` readable bytes (needed to parse `params` in place).
    @inline(__always)
    public static func scanRequest(_ line: ByteView, padded: Bool, parser: JSONParser) -> RPCRequest? {
        guard let r = parser.request(line: line, padded: padded) else { return nil }
        return RPCRequest(id: r.id, methodName: r.method, params: r.params)
    }
}
