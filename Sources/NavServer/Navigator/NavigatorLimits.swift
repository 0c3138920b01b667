import NavigationCore
import RPC

/// The limits the navigator keeps to: the part of navd's options about sessions and pending work
/// (``ServerConfiguration`` makes it). The navigator knows no other configuration.
struct NavigatorLimits: Sendable {
    /// Every session's bounds (tree, params, facts).
    var session = SessionLimits()
    var maxSessions = 10_000
    var maxSessionsPerUid = 1_000
    var maxPending = 16_384
    var maxPendingPerUid = 1_024
    var maxPendingPerConnection = 256
    var maxPendingPerSession = 4_096
    var maxChildren = 64
    var maxChildrenPerUid = 16
    var maxProviderRequestsPerUid = 32
    /// Keyed replies kept for one uid's sessions together (the oldest forgotten past either).
    var maxKeysPerUid = 262_144
    var maxKeyBytesPerUid = 64 << 20
    /// The most items of one list a request may give (`provide`'s names, `reset`'s screens).
    var maxBatch = 1_000
    /// The largest message: one screen's params may not be larger.
    var maxMessage = 1 << 20
    /// The longest name a client may give (a session, a fact, a key).
    var maxName = 256
    /// The deepest JSON nesting of anything navd writes (what the navigator reads back of it).
    var writtenDepth = SessionLimits.writtenDepth(treeDepth: 64, valueDepth: 64)

    /// Refuses a name a client gives (a session, a fact, a key…) that is longer than `--max-name` or
    /// holds a control character (it would garble logs and commands).
    func checkName(_ name: String, _ what: String, param: String) throws(RPCError) {
        if name.utf8.count > maxName {
            throw .limitExceeded("\(what) is \(name.utf8.count) bytes long; names may be at most \(maxName) bytes (the --max-name limit)",
                                 limit: "--max-name", max: maxName)
        }
        if name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw .invalidParams("\(what) holds a control character (a NUL, a newline, …); names are printable text", data: ["param": .string(param)])
        }
    }
}
