import JSON

/// A JSON-RPC error object. Every error navd sends carries `data.kind`, a stable machine-readable name,
/// and a message that says what was wrong and what would be right.
public struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var data: JSONObject

    /// An error of one of the kinds navd defines (``ErrorKind``: its code comes from there).
    /// What it echoes of the request is bounded (``ErrorText``).
    public init(_ kind: ErrorKind, _ message: String, data: JSONObject = [:]) {
        self.code = kind.code
        self.message = ErrorText.message(message)
        var d = JSONObject(uniqueMembers: [(key: "kind", value: .string(kind.rawValue))])
        for (k, v) in ErrorText.data(data) where k != "kind" { d.append(k, v) }
        self.data = d
    }

    /// Decodes an error object received from a peer.
    public init?(json: JSONValue) {
        guard let code = json["code"]?.intValue, let message = json["message"]?.stringValue else { return nil }
        self.code = code
        self.message = message
        self.data = json["data"]?.objectValue ?? [:]
    }

    public var kind: String { data["kind"]?.stringValue ?? "" }

    /// As sent: the message and data bounded again (both may have been changed since the start).
    public var json: JSONValue {
        .object(JSONObject(uniqueMembers: [("code", .int(code)), ("message", .string(ErrorText.message(message))),
                                           ("data", .object(ErrorText.data(data)))]))
    }

    public var description: String { "\(kind) (\(code)): \(message)" }

    // MARK: The standard JSON-RPC 2.0 errors

    public static func parseError(_ message: String, kind: ErrorKind = .parseError, data: JSONObject = [:]) -> RPCError {
        RPCError(kind, message, data: data)
    }
    public static func invalidRequest(_ message: String, kind: ErrorKind = .invalidRequest, data: JSONObject = [:]) -> RPCError {
        RPCError(kind, message, data: data)
    }
    /// `likely`: the method the client probably meant (a near name), named in the message.
    public static func methodNotFound(_ method: String, likely: String? = nil) -> RPCError {
        let hint = likely.map { "did you mean '\($0)'? " } ?? ""
        var data: JSONObject = ["method": .string(method)]
        if let likely { data["likely"] = .string(likely) }
        return RPCError(.methodNotFound, "unknown method '\(method)'; \(hint)call rpc.discover for the list of methods", data: data)
    }
    public static func invalidParams(_ message: String, data: JSONObject = [:]) -> RPCError {
        RPCError(.invalidParams, message, data: data)
    }
    public static func accessDenied(_ message: String, data: JSONObject = [:]) -> RPCError {
        RPCError(.accessDenied, message, data: data)
    }
    /// A documented limit was reached: `limit` names it (the flag that sets it), `max` gives it.
    public static func limitExceeded(_ message: String, limit: String, max: Int) -> RPCError {
        RPCError(.limitExceeded, message, data: ["limit": .string(limit), "max": .int(max)])
    }
    public static func internalError(_ message: String) -> RPCError {
        RPCError(.internalError, message)
    }
}
