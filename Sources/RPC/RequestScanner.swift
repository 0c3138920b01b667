import JSON
import Unchecked

/// The request line nearly every client writes, `{"jsonrpc":"2.0","id":N,"method":"NAME"` then
/// `}` or `,"params":VALUE}`, read without parsing its envelope: the parser's seam
/// (``JSON/JSONParser/request(line:padded:)``, which gives the form byte for byte) checks the
/// envelope and parses `VALUE` alone (in one pass when it is plain). Anything else — other key
/// orders, spaces, another id, escapes, a value that is not exactly one value — is left to the
/// parser and ``RPCMessage/request(_:)``, which answer it exactly as before (errors included): this
/// reads the same requests with the same meaning, with less work.
extension RPCMessage {
    /// The request `line` holds when it has the form above (nil: parse it whole). `padded`: the
    /// line is followed by ``JSONParser/padding`` readable bytes (needed to parse `params` in place).
    @inline(__always)
    public static func scanRequest(_ line: ByteView, padded: Bool, parser: JSONParser) -> RPCRequest? {
        guard let r = parser.request(line: line, padded: padded) else { return nil }
        return RPCRequest(id: r.id, methodName: r.method, params: r.params)
    }
}
