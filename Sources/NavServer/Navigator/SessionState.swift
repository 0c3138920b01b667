import JSON
import NavGraph
import NavigationCore
import Unchecked

#if canImport(Glibc)
import Glibc
#endif

/// A session as the server holds it: the core's tree plus who listens to it.
final class SessionState {
    /// A session that replaces another (a graph reload, a session read again) takes over its
    /// account (``SessionTable`` gives one while the navigator holds the state).
    var session: Session {
        didSet {
            if oldValue !== session {
                let account = oldValue.account
                oldValue.account = nil
                session.account = account
            }
            recordsWhatIsHeard()
        }
    }
    /// Whether commits build their `changes` even without subscribers here, and in which form
    /// (cluster mode: other nodes' subscribers hear the full form through the store; a log store
    /// keeps either).
    var recordsAlways: AlwaysRecorded { didSet { recordsWhatIsHeard() } }
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
    /// When (the loop's milliseconds) its waiting navigations were last announced again for
    /// another node's new subscribers (``Navigator/pendingAsked(_:)``).
    var pendingAnnouncedAgainAt: UInt64 = 0
    var pendingCount: Int { pending.count }
    /// The session's name as bytes, to match a request's `session` without making a string (a
    /// session's name never changes).
    private let nameBytes: [UInt8]

    @inline(__always)
    func isNamed(_ name: ByteView) -> Bool { name.equals(nameBytes) }

    /// Runs `body` with the session, counting no reference: the state holds it, and only a graph
    /// reload or a cluster claim replaces it, each between requests, never while a request is
    /// answered or its commit published.
    @inline(__always)
    func withSession<T>(_ body: (Session) -> T) -> T { Unretained(session).with(body) }
    /// The client that started each live flow (it hears `flowCompleted` even unsubscribed).
    var flowStarters: [String: any Client] = [:]

    init(_ session: Session, ref: Int, audience: any Audience, recordsAlways: AlwaysRecorded) {
        self.session = session
        self.ref = ref
        self.subscribers = Listeners(audience)
        self.recordsAlways = recordsAlways
        nameBytes = Array(session.name.utf8)
        recordsWhatIsHeard()
    }

    /// The forms commits build: each form a subscriber hears, and for `recordsAlways` the full
    /// form, or for `.either` the form already built (the compact one when none is: about half the
    /// bytes of the full one).
    private func recordsWhatIsHeard() {
        let full = recordsAlways == .full || subscribers.wantsFull
        session.recordsChanges = full
        session.recordsCompactChanges = subscribers.wantsCompact || (recordsAlways == .either && !full)
    }
}

/// The changes a session's commits build for readers other than its subscribers here.
enum AlwaysRecorded {
    /// None: only what subscribers hear.
    case nothing
    /// The full form (other nodes' subscribers, a store that takes only that form).
    case full
    /// Either form (a log store).
    case either
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
