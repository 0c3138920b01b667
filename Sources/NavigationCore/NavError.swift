import JSON

/// A navigation error: a JSON-RPC error code, a stable `kind`, a message a developer can act on,
/// and extra data (`pointer`, `precondition`, …). The server sends it as the JSON-RPC error.
public struct NavError: Error, Sendable, Equatable {
    public let code: Int
    public let kind: Kind
    public let message: String
    public var data: JSONObject

    public enum Kind: String, Sendable {
        case unknownTarget, invalidSetup, notAllowed, accessDenied, preconditionFailed, preconditionTimeout
        case conflict, cancelled, unknownNode, flowNotActive, noMatchingLink, invalidParams, limitExceeded

        public var code: Int {
            switch self {
            case .unknownTarget: return -32001
            case .invalidSetup: return -32002
            case .notAllowed: return -32003
            case .accessDenied: return -32004
            case .preconditionFailed: return -32005
            case .preconditionTimeout: return -32006
            case .conflict: return -32007
            case .cancelled: return -32008
            case .unknownNode: return -32009
            case .flowNotActive: return -32010
            case .noMatchingLink: return -32011
            case .invalidParams: return -32602
            case .limitExceeded: return -32012
            }
        }
    }

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
