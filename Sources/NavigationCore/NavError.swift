import JSON
import RPC

/// A navigation error: a JSON-RPC error code, a stable `kind`, a message a developer can act on,
/// and extra data (`pointer`, `precondition`, …). The server sends it as the JSON-RPC error.
public struct NavError: Error, Sendable, Equatable {
    public let code: Int
    public let kind: Kind
    public let message: String
    public var data: JSONObject

    /// The kinds and codes of every error are defined once, in ``ErrorKind``.
    public typealias Kind = ErrorKind

    /// What it echoes of the request is bounded (``ErrorText``): the message here, `data` as sent.
    public init(_ kind: Kind, _ message: String, data: JSONObject = [:]) {
        self.code = kind.code
        self.kind = kind
        self.message = ErrorText.message(message)
        self.data = data
    }

    /// A param given wrongly (`data.param` names it, as the methods layer does).
    public static func invalidParams(_ message: String, data: JSONObject = [:]) -> NavError { NavError(.invalidParams, message, data: data) }
    public static func accessDenied(_ message: String, data: JSONObject = [:]) -> NavError { NavError(.accessDenied, message, data: data) }
    /// A documented limit was reached: `limit` names it (the option that sets it), `max` gives it.
    public static func limitExceeded(_ message: String, limit: String, max: Int) -> NavError {
        NavError(.limitExceeded, message, data: ["limit": .string(limit), "max": .int(max)])
    }

    /// `data` with `kind` first, as sent on the wire.
    public var wireData: JSONObject {
        var o: JSONObject = ["kind": .string(kind.rawValue)]
        for (k, v) in ErrorText.data(data) { o.append(k, v) }
        return o
    }
}
