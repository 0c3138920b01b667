import JSON

/// A request or notification received from a peer (`id == nil` for a notification).
public struct RPCRequest: Sendable {
    public var id: JSONValue?
    public var method: String
    public var params: JSONValue?

    public init(id: JSONValue?, method: String, params: JSONValue?) {
        self.id = id
        self.method = method
        self.params = params
    }

    public var isNotification: Bool { id == nil }
}

/// A message that is not valid JSON-RPC, with the id to answer with (`null` when unreadable).
public struct RPCDecodeFailure: Error, Sendable {
    public let id: JSONValue
    public let error: RPCError
}

/// A reply received from a peer to a request navd sent it.
public struct RPCResponse: Sendable {
    public var id: JSONValue
    public var result: Result<JSONValue, RPCError>
}

/// One decoded JSON-RPC message.
public enum RPCMessage: Sendable {
    case request(RPCRequest)
    case response(RPCResponse)

    /// Validates one JSON-RPC 2.0 message. On failure the error comes with the id to answer with
    /// (`null` when the id itself could not be read).
    public static func decode(_ value: JSONValue) -> Result<RPCMessage, RPCDecodeFailure> {
        guard case .object(let o) = value else {
            return .failure(RPCDecodeFailure(id: .null, error: .invalidRequest("a JSON-RPC message must be an object, not \(value.typeName)")))
        }
        var id: JSONValue? = nil
        var method: JSONValue? = nil
        var params: JSONValue? = nil
        var result: JSONValue? = nil
        var error: JSONValue? = nil
        var version: JSONValue? = nil
        for (k, v) in o.members {
            switch k {
            case "id": id = v
            case "method": method = v
            case "params": params = v
            case "result": result = v
            case "error": error = v
            case "jsonrpc": version = v
            default: break
            }
        }
        let replyId: JSONValue
        switch id {
        case nil, .null?, .string?, .int?, .double?: replyId = id ?? .null
        default:
            return .failure(RPCDecodeFailure(id: .null, error: .invalidRequest("\"id\" must be a string, a number or null, not \(id!.typeName)")))
        }
        guard version == .string("2.0") else {
            return .failure(RPCDecodeFailure(id: replyId, error: .invalidRequest("\"jsonrpc\" must be \"2.0\"")))
        }
        if let method {
            guard case .string(let name) = method else {
                return .failure(RPCDecodeFailure(id: replyId, error: .invalidRequest("\"method\" must be a string, not \(method.typeName)")))
            }
            switch params {
            case nil, .array?, .object?: break
            default:
                return .failure(RPCDecodeFailure(id: replyId, error: .invalidRequest("\"params\" must be an object or an array, not \(params!.typeName)")))
            }
            return .success(.request(RPCRequest(id: id, method: name, params: params)))
        }
        if let id, result != nil || error != nil {
            if let error {
                guard let e = RPCError(json: error) else {
                    return .failure(RPCDecodeFailure(id: .null, error: .invalidRequest("\"error\" must be an object with \"code\" and \"message\"")))
                }
                return .success(.response(RPCResponse(id: id, result: .failure(e))))
            }
            return .success(.response(RPCResponse(id: id, result: .success(result!))))
        }
        return .failure(RPCDecodeFailure(id: replyId, error: .invalidRequest("a request needs \"method\"; a response needs \"id\" and \"result\" or \"error\"")))
    }
}

/// Encoders for outgoing messages, writing straight into a byte buffer.
public enum RPCEncoder {
    public static func response(id: JSONValue, result: JSONValue, into w: inout JSONWriter) {
        w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
        w.write(id)
        w.raw(",\"result\":")
        w.write(result)
        w.raw("}")
    }

    public static func error(id: JSONValue, error: RPCError, into w: inout JSONWriter) {
        w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
        w.write(id)
        w.raw(",\"error\":")
        w.write(error.json)
        w.raw("}")
    }

    public static func notification(method: String, params: JSONValue, into w: inout JSONWriter) {
        w.raw("{\"jsonrpc\":\"2.0\",\"method\":")
        w.write(string: method)
        w.raw(",\"params\":")
        w.write(params)
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
