import NavigationCore
import RPC

/// The limits the navigator keeps to: the part of navd's options about sessions and pending work
/// (``ServerConfiguration`` makes it). The navigator knows no other configuration.
struct NavigatorLimits: Sendable {
    /// Every session's bounds (tree, params, facts).
    var session = SessionLimits()
    /// What uids share (``FairShare``): sessions, pending navigations, running command children and
    /// one provider's requests in flight.
    var sessions = FairShare(limit: Limit.maxSessions.defaultValue, option: "--max-sessions", capOption: "--max-sessions-per-uid")
    var pending = FairShare(limit: Limit.maxPending.defaultValue, option: "--max-pending", capOption: "--max-pending-per-uid")
    /// 0 for none.
    var maxPendingPerConnection = Limit.maxPendingPerConnection.defaultValue
    var maxPendingPerSession = Limit.maxPendingPerSession.defaultValue
    var maxSubscriptionsPerConnection = Limit.maxSubscriptionsPerConnection.defaultValue
    /// Subscriptions of all connections together, shared by the connections' uids (no per-uid cap).
    var subscriptions = FairShare(limit: Limit.maxSubscriptions.defaultValue, option: "--max-subscriptions", capOption: "--max-subscriptions")
    var maxProvidedPerConnection = Limit.maxProvidedPerConnection.defaultValue
    var children = FairShare(limit: Limit.maxChildren.defaultValue, option: "--max-children", capOption: "--max-children-per-uid")
    var providerRequests = FairShare(limit: Limit.maxProviderRequests.defaultValue, option: "--max-provider-requests", capOption: "--max-provider-requests-per-uid")
    /// How long a navigation may wait for command and provider slots in all.
    var maxQueueWaitMs = UInt64(Limit.maxQueueWait.defaultValue)
    /// Keyed replies kept for one uid's sessions together (the oldest forgotten past either).
    var maxKeysPerUid = Limit.maxKeysPerUid.defaultValue
    var maxKeyBytesPerUid = Limit.maxKeyBytesPerUid.defaultValue
    /// The most items of one list a request may give (`provide`'s names, `reset`'s screens).
    var maxBatch = Limit.maxBatch.defaultValue
    /// The largest message: one screen's params may not be larger.
    var maxMessage = Limit.maxMessage.defaultValue
    /// The longest name a client may give (a session, a fact, a key).
    var maxName = Limit.maxName.defaultValue
    /// The deepest JSON nesting of anything navd writes (what the navigator reads back of it).
    var writtenDepth = SessionLimits.writtenDepth(treeDepth: Limit.maxTreeDepth.defaultValue, valueDepth: Limit.maxDepth.defaultValue)

    /// Refuses a name a client gives (a session, a fact, a key…) that is longer than `--max-name` or
    /// holds a control character (it would garble logs and commands).
    func checkName(_ name: String, _ what: @autoclosure () -> String, param: String) throws(NavError) {
        if name.utf8.count > maxName {
            throw .limitExceeded("\(what()) is \(name.utf8.count) bytes long; names may be at most \(maxName) bytes (the --max-name limit)",
                                 limit: "--max-name", max: maxName)
        }
        if name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw .invalidParams("\(what()) holds a control character (a NUL, a newline, …); names are printable text", data: ["param": .string(param)])
        }
    }
}
