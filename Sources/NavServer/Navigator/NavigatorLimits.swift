import NavigationCore
import RPC

/// The limits the navigator keeps to: the part of navd's options about sessions and pending work
/// (``ServerConfiguration`` makes it). The navigator knows no other configuration.
struct NavigatorLimits: Sendable {
    /// Every session's bounds (tree, params, facts).
    var session = SessionLimits()
    /// What uids share (``FairShare``): sessions, pending navigations, running command children and
    /// one provider's requests in flight.
    var sessions = FairShare(limit: 1_000_000, option: "--max-sessions", capOption: "--max-sessions-per-uid")
    var pending = FairShare(limit: 65_536, option: "--max-pending", capOption: "--max-pending-per-uid")
    /// 0 for none.
    var maxPendingPerConnection = 0
    var maxPendingPerSession = 4_096
    var children = FairShare(limit: 256, option: "--max-children", capOption: "--max-children-per-uid")
    var providerRequests = FairShare(limit: 256, option: "--max-provider-requests", capOption: "--max-provider-requests-per-uid")
    /// How long a navigation may wait for command and provider slots in all.
    var maxQueueWaitMs: UInt64 = 60_000
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
