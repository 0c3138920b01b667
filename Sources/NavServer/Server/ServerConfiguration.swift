import Logging
import NavigationCore
import RPC

/// Every limit and setting of a running navd, with the reason for it. The limits' defaults and
/// bounds are declared once, in `Protocol/limits.json` (``Limit``), and listed in PROTOCOL.md §5.
public struct ServerConfiguration: Sendable {
    /// Path of the listening Unix socket (created 0600).
    public var socketPath: String
    /// Connections beyond this are answered with an error and closed, so a runaway client cannot exhaust
    /// descriptors (`--max-connections`). Sized at start from the descriptor limit (``sizedToMachine(_:)``):
    /// what is left of it after the command children's pipes and navd's own files, at most 65,536.
    public var maxConnections: Int = Limit.maxConnections.defaultValue
    /// The listening socket's queue of connections not yet accepted (`listen()`'s backlog): as
    /// many as navd serves, at least 511 (Redis's and nginx's default) and at most 65,535; the
    /// kernel caps it at `net.core.somaxconn` (4,096 by default). A Unix socket's queue that is full
    /// answers a client's non-blocking connect at once with EAGAIN, so a burst of clients (a backend
    /// whose workers start together) needs room for all of them, not Redis's 511.
    public var listenBacklog: Int32 { Int32(min(max(maxConnections, 511), 65_535)) }
    /// A client whose unsent output exceeds this many bytes is disconnected (it is not reading); others
    /// never notice. (8 MiB by default, as sway's and Redis's pub/sub limits.)
    public var maxOutput: Int = Limit.maxOutput.defaultValue
    /// The largest message accepted, in bytes. Larger ones get `messageTooLarge` and the connection
    /// closes, since the stream cannot be resynchronised.
    public var maxMessage: Int = Limit.maxMessage.defaultValue
    /// The deepest JSON nesting accepted: no navd message needs more than the default, and it bounds the stack.
    public var maxDepth: Int = Limit.maxDepth.defaultValue
    /// While this many bytes of output wait for a client, navd stops reading its requests
    /// (back-pressure), so a client that pipelines without reading cannot grow navd's memory.
    public var readPauseThreshold: Int = 1024 * 1024
    /// The most requests in one batch (`--max-batch`). A larger batch is refused whole with
    /// `limitExceeded`; a batch is handled a few milliseconds' worth per loop iteration, so others
    /// are served meanwhile.
    public var maxBatch: Int = Limit.maxBatch.defaultValue
    /// With a state file: the size of its log (`STATE.log`) at which the snapshot is rewritten and
    /// the log starts again (`--log-compact-bytes`).
    public var logCompactBytes: Int = Limit.logCompactBytes.defaultValue
    /// The log is compacted only once it is also this many times the snapshot's size
    /// (`--log-compact-ratio`; 0 leaves `logCompactBytes` alone), so that a large snapshot is not
    /// rewritten for a few commits, as Redis grows its rewrite threshold with the file.
    public var logCompactRatio: Int = Limit.logCompactRatio.defaultValue
    /// The most sessions (`--max-sessions`); `session.open` of one more is refused. An empty
    /// session costs about 2 KB, so a navd full at the default holds about 2 GB (BENCHMARKS.md).
    public var maxSessions: Int = Limit.maxSessions.defaultValue
    /// The bounds of every session: its tree's depth (`--max-tree-depth`), nodes
    /// (`--max-tree-nodes`) and setup models (`--max-params-bytes`); its facts
    /// (`--max-facts`; `--max-fact-value` each; `--max-facts-bytes` in all).
    /// A command that would pass one changes nothing and is answered `limitExceeded`.
    public var session = SessionLimits()
    /// Hard per-uid caps (`--max-sessions-per-uid`, `--max-connections-per-uid`,
    /// `--max-pending-per-uid`, `--max-children-per-uid`, `--max-provider-requests-per-uid`), 0 for
    /// none, the default: uids share every capacity by ``FairShare`` (one alone takes all but a 10 %
    /// reserve kept for others), so the usual deployment, one backend uid serving every end user's
    /// session, needs no option. An operator who wants a cap sets one.
    public var maxSessionsPerUid: Int = Limit.maxSessionsPerUid.defaultValue
    public var maxConnectionsPerUid: Int = Limit.maxConnectionsPerUid.defaultValue
    /// Pending navigations and guarded dismisses (waiting on preconditions): in all (`--max-pending`,
    /// each a few KB), in one session (`--max-pending-per-session`), and optionally
    /// of one connection (`--max-pending-per-connection`, 0 for none). One more is refused with
    /// `limitExceeded` before anything runs.
    public var maxPending: Int = Limit.maxPending.defaultValue
    /// Replies of keyed navigations remembered for one uid's sessions, all of them together
    /// (`--max-keys-per-uid` and `--max-key-bytes-per-uid`), beside each session's
    /// own 4,096 keys and 1 MiB: past either, the uid's oldest key is forgotten (its retry then
    /// navigates again).
    public var maxKeysPerUid: Int = Limit.maxKeysPerUid.defaultValue
    public var maxKeyBytesPerUid: Int = Limit.maxKeyBytesPerUid.defaultValue
    public var maxPendingPerUid: Int = Limit.maxPendingPerUid.defaultValue
    public var maxPendingPerConnection: Int = Limit.maxPendingPerConnection.defaultValue
    public var maxPendingPerSession: Int = Limit.maxPendingPerSession.defaultValue
    /// Sessions one connection may subscribe to (`--max-subscriptions-per-connection`).
    public var maxSubscriptionsPerConnection: Int = Limit.maxSubscriptionsPerConnection.defaultValue
    /// Subscriptions of all connections together, shared between uids.
    public var maxSubscriptions: Int = Limit.maxSubscriptions.defaultValue
    /// Names one connection may provide (`--max-provided-per-connection`).
    public var maxProvidedPerConnection: Int = Limit.maxProvidedPerConnection.defaultValue
    /// Command preconditions running at once (`--max-children`). Checks mostly wait on the network,
    /// not the CPU, so the default is large, lowered where the process or descriptor limit is
    /// low (``sizedToMachine(_:)``). More wait their turn, uid by uid; the wait does not count against
    /// a precondition's timeout.
    public var maxChildren: Int = Limit.maxChildren.defaultValue
    public var maxChildrenPerUid: Int = Limit.maxChildrenPerUid.defaultValue
    /// Provider requests (`precondition.evaluate`, `precondition.recover`) in flight at one provider
    /// (`--max-provider-requests`). More wait in navd, not in the provider's output, and are
    /// sent in turn, uid by uid: one user flooding a provider delays only itself, and the provider is
    /// never disconnected for requests it was sent.
    public var maxProviderRequests: Int = Limit.maxProviderRequests.defaultValue
    public var maxProviderRequestsPerUid: Int = Limit.maxProviderRequestsPerUid.defaultValue
    /// How long a navigation may wait for a command slot or a provider slot in all
    /// (`--max-queue-wait`, ms): waiting is not failing (the precondition's own timeout starts when
    /// it runs), but a wait past this fails the navigation with `preconditionTimeout`.
    public var maxQueueWaitMs = UInt64(Limit.maxQueueWait.defaultValue)
    /// The longest name a client may give (session names, fact names, navigation keys, tokens,
    /// client names), in bytes (`--max-name`).
    public var maxName: Int = Limit.maxName.defaultValue
    /// Unsent output of all clients together (`--max-total-output`): past it, the client holding the
    /// most is disconnected, as one past `maxOutput` is.
    public var maxTotalOutput: Int = Limit.maxTotalOutput.defaultValue
    /// Bytes of unfinished messages of all clients together past which the uid holding the most loses
    /// its connections holding the most (`--max-total-input`).
    public var maxTotalInput: Int = Limit.maxTotalInput.defaultValue
    /// What every session's setup models and facts may hold together, as JSON (`--max-data-bytes`):
    /// past it requests that may add data are refused. Sized at start (``sizedToMachine(_:)``).
    public var maxDataBytes: Int = Limit.maxDataBytes.defaultValue
    /// How long part of a message may wait for the rest (`--message-timeout`, ms): a client that
    /// sends half a message and stops is told and disconnected.
    public var messageTimeoutMs = UInt64(Limit.messageTimeout.defaultValue)
    /// `--slowlog-threshold` and `--slowlog-max-len` (``SlowLog``).
    public var slowlogThresholdMs = UInt64(Limit.slowlogThreshold.defaultValue)
    public var slowlogMaxLen = Limit.slowlogMaxLen.defaultValue
    /// How long a request from navd to a client (`precondition.evaluate`) may wait for its reply.
    public var clientRequestTimeoutMs: UInt64 = 10_000
    public var logLevel: Logger.Level = .info

    public init(socketPath: String) { self.socketPath = socketPath }

    /// The deepest JSON nesting of anything navd writes (a tree within `--max-tree-depth` with values
    /// from requests within `--max-depth`): what readers of navd's own output accept (state files,
    /// other nodes' notifications, clients).
    public var writtenDepth: Int { SessionLimits.writtenDepth(treeDepth: session.maxDepth, valueDepth: maxDepth) }

    /// The default socket path, as the contract names it (``SocketPath/defaultPath(environment:uid:)``).
    /// Another user cannot take it over: navd binds it 0600 and refuses a file there that is not a
    /// socket of its own uid, and clients that found it by default check the server's uid.
    public static func defaultSocketPath(environment: [String: String]) -> String {
        SocketPath.defaultPath(environment: environment)
    }

    /// The longest socket path the platform accepts (`sun_path` less its terminating NUL).
    public static let maxSocketPath = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Why `path`, given as `option`, cannot name a file navd reads or creates; nil when it can.
    /// Every path option is checked by this one rule: not empty (an unset shell variable in
    /// `--socket "$X"` gives ""), no NUL byte, at most `PATH_MAX` bytes; a socket path also fits
    /// `sun_path` and is not an abstract name (a leading NUL, or `@` as other tools write one), which
    /// Linux would bind with no file permissions at all, open to every user.
    public static func pathProblem(_ path: String, option: String) -> String? {
        if path.isEmpty {
            return "\(option) is empty; give the path of a file (an unset shell variable in \(option) \"$X\" gives an empty one)"
        }
        if path.utf8.contains(0) { return "\(option) holds a NUL byte; give a plain file path" }
        if path.utf8.count > Int(PATH_MAX) { return "\(option) is \(path.utf8.count) bytes long; paths may be at most \(PATH_MAX) bytes" }
        guard option == "--socket" else { return nil }
        if path.hasPrefix("@") {
            return "\(option) \(path) looks like an abstract socket name, which has no file permissions and lets every user connect; navd listens only on a file (write ./\(path) for a file of that name)"
        }
        if path.utf8.count > maxSocketPath {
            return "the socket path \(path) is \(path.utf8.count) bytes long; Unix sockets allow at most \(maxSocketPath): choose a shorter \(option)"
        }
        return nil
    }
}

#if canImport(Glibc)
import Glibc
#endif

extension ServerConfiguration {
    /// Refuses a name a client gives (a client name, a token) as the navigator refuses its names.
    func checkName(_ name: String, _ what: @autoclosure () -> String, param: String) throws(RPCError) {
        try navigator.checkParamName(name, what(), param: param)
    }
}

extension ServerConfiguration {
    /// What the navigator keeps to, of these options.
    /// What the transport keeps to.
    var transport: TransportLimits {
        TransportLimits(connections: FairShare(limit: maxConnections, cap: maxConnectionsPerUid, option: "--max-connections", capOption: "--max-connections-per-uid"),
                        maxMessage: maxMessage,
                        maxOutput: maxOutput, readPauseThreshold: readPauseThreshold, maxTotalOutput: maxTotalOutput,
                        maxTotalInput: maxTotalInput, messageTimeoutMs: messageTimeoutMs)
    }

    /// What dispatch keeps to.
    var dispatch: DispatchLimits {
        DispatchLimits(maxDepth: maxDepth, maxBatch: maxBatch, maxOutput: maxOutput,
                       slowlogThresholdNs: slowlogThresholdMs &* 1_000_000, slowlogMaxLen: slowlogMaxLen)
    }

    var navigator: NavigatorLimits {
        NavigatorLimits(session: session,
                        sessions: FairShare(limit: maxSessions, cap: maxSessionsPerUid, option: "--max-sessions", capOption: "--max-sessions-per-uid"),
                        pending: FairShare(limit: maxPending, cap: maxPendingPerUid, option: "--max-pending", capOption: "--max-pending-per-uid"),
                        maxPendingPerConnection: maxPendingPerConnection, maxPendingPerSession: maxPendingPerSession,
                        maxSubscriptionsPerConnection: maxSubscriptionsPerConnection,
                        subscriptions: FairShare(limit: maxSubscriptions, option: "--max-subscriptions", capOption: "--max-subscriptions"),
                        maxProvidedPerConnection: maxProvidedPerConnection,
                        children: FairShare(limit: maxChildren, cap: maxChildrenPerUid, option: "--max-children", capOption: "--max-children-per-uid"),
                        providerRequests: FairShare(limit: maxProviderRequests, cap: maxProviderRequestsPerUid,
                                                    option: "--max-provider-requests", capOption: "--max-provider-requests-per-uid"),
                        maxQueueWaitMs: maxQueueWaitMs, maxKeysPerUid: maxKeysPerUid,
                        maxKeyBytesPerUid: maxKeyBytesPerUid, maxBatch: maxBatch, maxMessage: maxMessage, maxName: maxName,
                        writtenDepth: writtenDepth)
    }
}
