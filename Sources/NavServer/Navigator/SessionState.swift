import JSON
import NavGraph
import NavigationCore
import Unchecked

#if canImport(Glibc)
import Glibc
#endif

/// A session as the server holds it: the core's tree plus who listens to it.
final class SessionState {
    var session: Session { didSet { recordsWhatIsHeard() } }
    /// Commits build their `changes` even without subscribers here (cluster mode: other nodes'
    /// subscribers hear them through the store; a log store keeps them).
    var recordsAlways: Bool { didSet { recordsWhatIsHeard() } }
    /// Subscribed clients. Commits build their `changes` only while there are some, in the forms
    /// they hear.
    var subscribers: Listeners { didSet { recordsWhatIsHeard() } }
    /// The number compact `stackChanged` notifications name the session by (unique on this node
    /// while it runs; `subscribe` answers it as `ref`).
    let ref: Int
    /// The subscribers as the publisher delivers to them.
    var audience: any Audience { subscribers.audience }
    /// Set when the session is closed (connections may still remember this state).
    var isClosed = false
    /// Its place in the order sessions were opened (``SessionTable``, `session.list` pages).
    var listSeq = 0
    /// Its pending navigations and guarded dismisses (`--max-pending-per-session`), by number: what
    /// closing or losing the session cancels, found without looking at any other session's.
    var pending: [Int: PendingNavigation] = [:]
    var pendingCount: Int { pending.count }
    /// The session's name as bytes, to match a request's `session` without making a string (a
    /// session's name never changes).
    private let nameBytes: [UInt8]

    @inline(__always)
    func isNamed(_ name: ByteView) -> Bool { name.equals(nameBytes) }
    /// The client that started each live flow (it hears `flowCompleted` even unsubscribed).
    var flowStarters: [String: any Client] = [:]
    /// Where navigation continues after each live flow whose navigate gave `then` (in memory only).
    var flowThens: [String: NavigationSpec] = [:]

    init(_ session: Session, ref: Int, audience: any Audience, recordsAlways: Bool) {
        self.session = session
        self.ref = ref
        self.subscribers = Listeners(audience)
        self.recordsAlways = recordsAlways
        nameBytes = Array(session.name.utf8)
        recordsWhatIsHeard()
    }

    private func recordsWhatIsHeard() {
        session.recordsChanges = recordsAlways || subscribers.wantsFull
        session.recordsCompactChanges = subscribers.wantsCompact
    }
}

/// A name within a session (a node id, a navigation key), as a table key.
struct SessionKey: Hashable {
    let session: String
    let name: String

    init(_ session: String, _ name: String) {
        self.session = session
        self.name = name
    }
}
