import JSON
import Unchecked

/// A request or notification received from a peer, read in place from the parser's buffers: valid
/// until that parser parses the next message. Made only of views, so it is copied as plain words.
public struct RPCRequest {
    /// The id as given (a view of `null` for a null id), or nil for a notification.
    public var id: JSONView?
    /// The method name as read (a string view): handlers are found by its bytes.
    public var methodName: JSONView
    public var params: JSONView?

    @inlinable
    public init(id: JSONView?, methodName: JSONView, params: JSONView?) {
        self.id = id
        self.methodName = methodName
        self.params = params
    }

    public var method: String { methodName.string ?? "" }

    public var isNotification: Bool { id == nil }
}

/// A message that is not valid JSON-RPC, with the id to answer with (`null` when unreadable).
public struct RPCDecodeFailure: Error, Sendable {
    public let id: JSONValue
    public let error: RPCError

    public init(id: JSONValue, error: RPCError) {
        self.id = id
        self.error = error
    }
}

/// A reply received from a peer to a request navd sent it.
public struct RPCResponse: Sendable {
    public var id: JSONValue
    public var result: Result<JSONValue, RPCError>
}

/// One decoded JSON-RPC message.
public enum RPCMessage {
    case request(RPCRequest)
    case response(RPCResponse)
    case invalid(RPCDecodeFailure)

    /// Validates one JSON-RPC 2.0 message, reading it in place (a request is only views; a response's
    /// result or error is copied out). An invalid message comes with the id to answer with (`null`
    /// when the id itself could not be read).
    public static func decode(_ message: JSONView) -> RPCMessage {
        guard message.isObject else {
            return .invalid(RPCDecodeFailure(id: .null, error: .invalidRequest("a JSON-RPC message must be an object, not \(message.typeName)")))
        }
        var id: JSONView? = nil
        var method: JSONView? = nil
        var params: JSONView? = nil
        var result: JSONView? = nil
        var error: JSONView? = nil
        var version: JSONView? = nil
        message.forEachMember { k, v in
            switch k.count {
            case 2 where k[0] == UInt8(ascii: "i") && k[1] == UInt8(ascii: "d"): id = v
            case 5 where Self.key(k, "error"): error = v
            case 6 where Self.key(k, "method"): method = v
            case 6 where Self.key(k, "params"): params = v
            case 6 where Self.key(k, "result"): result = v
            case 7 where Self.key(k, "jsonrpc"): version = v
            default: break
            }
        }
        if let id {
            switch id.kind {
            case .null, .string, .int, .double: break
            default:
                return .invalid(RPCDecodeFailure(id: .null, error: .invalidRequest("\"id\" must be a string, a number or null, not \(id.typeName)")))
            }
        }
        guard let version, version.kind == .string, Self.key(version.stringBytes, "2.0") else {
            let said = version.map { "\"jsonrpc\" must be \"2.0\", not \(ErrorText.cut(JSONWriter.string($0.value(keys: nil)), toBytes: 64))" }
                ?? "\"jsonrpc\" is missing; every JSON-RPC 2.0 message carries \"jsonrpc\": \"2.0\""
            return .invalid(RPCDecodeFailure(id: id?.value ?? .null, error: .invalidRequest(said)))
        }
        if let method {
            guard method.kind == .string else {
                return .invalid(RPCDecodeFailure(id: id?.value ?? .null, error: .invalidRequest("\"method\" must be a string, not \(method.typeName)")))
            }
            if let params, !params.isArray && !params.isObject {
                return .invalid(RPCDecodeFailure(id: id?.value ?? .null, error: .invalidRequest("\"params\" must be an object or an array, not \(params.typeName)")))
            }
            return .request(RPCRequest(id: id, methodName: method, params: params))  // no id: a notification
        }
        let replyId = id?.value ?? .null
        if id != nil, result != nil || error != nil {
            if result != nil && error != nil {
                return .invalid(RPCDecodeFailure(id: .null, error: .invalidRequest("a response carries \"result\" or \"error\", not both")))
            }
            if let error {
                guard let e = RPCError(json: error.value) else {
                    return .invalid(RPCDecodeFailure(id: .null, error: .invalidRequest("\"error\" must be an object with \"code\" and \"message\"")))
                }
                return .response(RPCResponse(id: replyId, result: .failure(e)))
            }
            return .response(RPCResponse(id: replyId, result: .success(result!.value)))
        }
        return .invalid(RPCDecodeFailure(id: replyId, error: .invalidRequest("a request needs \"method\"; a response needs \"id\" and \"result\" or \"error\"")))
    }

    /// The request or notification `message` is, when it is a valid one (nearly every message): read
    /// in one pass into positions, building nothing. Nil for anything else — a response, an invalid
    /// message — which ``decode(_:)`` then tells apart, with the precise error.
    @inlinable @inline(__always)
    public static func request(_ message: JSONView) -> RPCRequest? {
        guard message.isObject else { return nil }
        var id = 0, method = 0, params = 0, version = 0
        message.forEachMember { k, v in
            switch k.count {
            case 2 where k[0] == UInt8(ascii: "i") && k[1] == UInt8(ascii: "d"): id = v.position
            case 6 where k[0] == UInt8(ascii: "m") && Self.key(k, "method"): method = v.position
            case 6 where k[0] == UInt8(ascii: "p") && Self.key(k, "params"): params = v.position
            case 7 where Self.key(k, "jsonrpc"): version = v.position
            default: break
            }
        }
        guard version != 0, method != 0 else { return nil }
        let v = message.view(at: version), m = message.view(at: method)
        guard v.kind == .string, Self.key(v.stringBytes, "2.0"), m.kind == .string else { return nil }
        var idView: JSONView? = nil
        if id != 0 {
            let i = message.view(at: id)
            guard !i.isObject && !i.isArray && i.bool == nil else { return nil }
            idView = i
        }
        var paramsView: JSONView? = nil
        if params != 0 {
            let p = message.view(at: params)
            guard p.isObject || p.isArray else { return nil }
            paramsView = p
        }
        return RPCRequest(id: idView, methodName: m, params: paramsView)
    }

    @inlinable @inline(__always) static func key(_ k: ByteView, _ name: StaticString) -> Bool {
        k.equals(name)
    }
}

/// Encoders for outgoing messages, writing straight into a byte buffer.
public enum RPCEncoder {
    public static func response(id: JSONValue, result: some JSONEncodable, into w: inout JSONWriter) {
        w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
        w.write(id)
        w.raw(",\"result\":")
        result.encode(into: &w)
        w.raw("}")
    }

    /// A response to a request whose id is still read in place.
    @inline(__always)
    public static func response(id: JSONView, result: some JSONEncodable, into w: inout JSONWriter) {
        if let i = id.exactInteger {  // most ids are integers
            w.reserving(64) { o in  // 32 bytes of envelope, an integer of at most 20 digits
                o.raw("{\"jsonrpc\":\"2.0\",\"id\":")
                o.int(i)
                o.raw(",\"result\":")
            }
        } else {
            w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
            w.write(id)
            w.raw(",\"result\":")
        }
        result.encode(into: &w)
        w.raw("}")
    }

    public static func error(id: JSONView, error: RPCError, into w: inout JSONWriter) {
        self.error(error, into: &w) { $0.write(id) }
    }

    public static func error(id: JSONValue, error: RPCError, into w: inout JSONWriter) {
        self.error(error, into: &w) { $0.write(id) }
    }

    private static func error(_ error: RPCError, into w: inout JSONWriter, id writeId: (inout JSONWriter) -> Void) {
        w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
        writeId(&w)
        w.raw(",\"error\":")
        w.write(error.json)
        w.raw("}")
    }

    public static func notification(method: String, params: JSONValue, into w: inout JSONWriter) {
        notification(method: method, encodable: params, into: &w)
    }

    public static func notification(method: String, encodable params: some JSONEncodable, into w: inout JSONWriter) {
        notification(method: method, into: &w) { params.encode(into: &$0) }
    }

    /// A notification whose params `params` writes.
    @inlinable
    public static func notification(method: String, into w: inout JSONWriter, params: (inout JSONWriter) -> Void) {
        w.raw("{\"jsonrpc\":\"2.0\",\"method\":")
        w.write(string: method)
        w.raw(",\"params\":")
        params(&w)
        w.raw("}")
    }

    public static func request(id: JSONValue, method: String, params: JSONValue, into w: inout JSONWriter) {
        w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
        w.write(id)
        w.raw(",\"method\":")
        w.write(string: method)
        w.raw(",\"params\":")
        w.write(params)
        w.raw("}")
    }

    /// Encodes one complete message with `framing`.
    public static func framed(_ framing: Framing, _ body: (inout JSONWriter) -> Void) -> [UInt8] {
        var w = JSONWriter()
        body(&w)
        return Framing.frame(w.bytes, framing)
    }
}
