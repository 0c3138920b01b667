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

    public init(_ kind: Kind, _ message: String, data: JSONObject = [:]) {
        self.code = kind.code
        self.kind = kind
        self.message = message
        self.data = data
    }

    /// `data` with `kind` first, as sent on the wire.
    public var wireData: JSONObject {
        var o: JSONObject = ["kind": .string(kind.rawValue)]
        for (k, v) in data { o.append(k, v) }
        return o
    }
}
