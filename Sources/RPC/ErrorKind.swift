/// Every error navd answers, defined once: its `data.kind` (the case's name) and its JSON-RPC
/// code. Protocol/PROTOCOL.md's error table lists the same kinds and codes (a test compares them).
public enum ErrorKind: String, Sendable, CaseIterable {
    // The message itself (-32700, -32600).
    case parseError, invalidUTF8, emptyMessage
    case invalidRequest, emptyBatch, messageTooLarge, tooDeep, badHeader, tooManyConnections, messageTimeout
    /// Another client closed this connection (`client.kill`); sent with `id` null before it closes.
    case disconnected
    // JSON-RPC's standard errors.
    case methodNotFound, invalidParams, internalError
    // navd's own (-32001 …).
    case unknownTarget, invalidSetup, notAllowed, accessDenied, preconditionFailed, preconditionTimeout
    case conflict, cancelled, unknownNode, flowNotActive, noMatchingLink, limitExceeded
    /// The store of record (PostgreSQL) cannot be reached, or the session is being taken over: nothing
    /// was done; retry later (`data.retryAfterMs`).
    case unavailable
    /// The session is owned by another navd node (`data.node`, `data.socket`): ask that node.
    case moved
    /// A request navd sent to a client (a provider) ended without an answer: the client went away
    /// or did not answer in time. Internal: it becomes a precondition's reason, never a reply.
    case clientGone, timeout
    /// Saved state (a state file, a store) that navd could not have written: it refuses to start
    /// on it, naming what is wrong. Internal: never a reply.
    case corruptState

    public var code: Int {
        switch self {
        case .parseError, .invalidUTF8, .emptyMessage: return -32700
        case .invalidRequest, .emptyBatch, .messageTooLarge, .tooDeep, .badHeader, .tooManyConnections, .messageTimeout, .disconnected: return -32600
        case .methodNotFound: return -32601
        case .invalidParams: return -32602
        case .internalError, .clientGone, .timeout, .corruptState: return -32603
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
        case .limitExceeded: return -32012
        case .unavailable: return -32013
        case .moved: return -32014
        }
    }

    /// Kinds that never reach a client (see ``clientGone`` and ``corruptState``).
    public var isInternal: Bool { self == .clientGone || self == .timeout || self == .corruptState }
}
