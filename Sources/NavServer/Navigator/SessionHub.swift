import JSON
import NavGraph
import NavigationCore
import RPC
import UV

#if canImport(Glibc)
import Glibc
#endif

/// A session as the server holds it: the core's tree plus who listens to it.
final class SessionState {
    var session: Session { didSet { session.recordsChanges = recordsAlways || !subscribers.isEmpty } }
    /// Commits build their `changes` even without subscribers here (cluster mode: other nodes'
    /// subscribers hear them through the store).
    let recordsAlways: Bool
    /// Subscribed clients. Commits build their `changes` only while there are some.
    var subscribers: Listeners { didSet { session.recordsChanges = recordsAlways || !subscribers.isEmpty } }
    /// The subscribers as the publisher delivers to them.
    var audience: any Audience { subscribers.audience }
    /// Set when the session is closed (connections may still remember this state).
    var isClosed = false
    /// The session's name as bytes, to match a request's `session` without making a string (a
    /// session's name never changes).
    private let nameBytes: [UInt8]

    @inline(__always)
    func isNamed(_ raw: UnsafeRawBufferPointer) -> Bool {
        nameBytes.count == raw.count
            && (raw.count == 0 || nameBytes.withUnsafeBytes { bytesEqual($0.baseAddress!, raw.baseAddress!, count: raw.count) })
    }
    /// The client that started each live flow (it hears `flowCompleted` even unsubscribed).
    var flowStarters: [String: any Client] = [:]
    /// Where navigation continues after each live flow whose navigate gave `then` (in memory only).
    var flowThens: [String: NavigationSpec] = [:]

    init(_ session: Session, audience: any Audience, recordsAlways: Bool) {
        self.session = session
        self.subscribers = Listeners(audience)
        self.recordsAlways = recordsAlways
        nameBytes = Array(session.name.utf8)
        session.recordsChanges = recordsAlways
    }
}

/// A navigation accepted and waiting for its preconditions, then its commit.
final class PendingNavigation {
    let number: Int
    /// "nav-" and the number.
    let id: String

    static func id(_ number: Int) -> String { prefixedDecimal("nav-", number) }
    /// The number in an id made by ``id(_:)``, or nil.
    static func number(ofId id: String) -> Int? { id.hasPrefix("nav-") ? Int(id.dropFirst(4)) : nil }
    let state: SessionState
    /// What it navigates to; a precondition's redirect replaces it.
    var plan: Plan
    /// Redirects taken so far: the target left, the precondition that redirected, the new target.
    var redirects: [(from: Int, precondition: String, to: Int)] = []
    /// The navigation's `key` (idempotency), if it has one.
    let key: String?
    let caller: Caller
    var replies: [Reply]
    /// The client that asked.
    let client: any Client
    /// The client that asked gets `navigationPending` too (`navigate {progress: true}`).
    var reportsProgress = false
    /// Index of the precondition being evaluated.
    var step = 0
    /// Recovery already tried for the current precondition.
    var recovered = false
    var finished = false
    /// Entered in the hub's pending tables (it waits on preconditions); a navigation that commits at
    /// once never is, and finishing it skips their lookups.
    var registered = false
    /// Cancels whatever task runs now (a process, a provider request, a recovery flow).
    var cancelTask: (() -> Void)?
    /// Called with the outcome after the replies (a flow's `then` navigation answers in the reply
    /// to `flowComplete`).
    var onFinish: ((Result<JSONValue, NavError>) -> Void)?
    /// A dismiss waiting on leave guards: the node it leaves, and the dismiss it makes once they pass
    /// (instead of committing the plan, which only carries the guards).
    var leaving: String?
    var commitInstead: (() -> Result<JSONValue, NavError>)?

    init(number: Int, state: SessionState, plan: Plan, key: String?, caller: Caller, replies: [Reply], client: any Client) {
        self.number = number
        self.id = Self.id(number)
        self.state = state
        self.plan = plan
        self.key = key
        self.caller = caller
        self.replies = replies
        self.client = client
    }

    /// A navigation whose requester waits for its reply.
    convenience init(number: Int, state: SessionState, plan: Plan, key: String?, caller: Caller, reply: Reply) {
        self.init(number: number, state: state, plan: plan, key: key, caller: caller, replies: [reply], client: reply.connection)
    }

    /// A navigation nobody waits a navigate reply for: `onFinish` hears its outcome.
    convenience init(number: Int, state: SessionState, plan: Plan, caller: Caller, client: any Client) {
        self.init(number: number, state: state, plan: plan, key: nil, caller: caller, replies: [], client: client)
    }
}

/// Every session and pending navigation of the daemon, who listens to each session and who
/// provides each precondition. Reaches clients only as ``Client``s and through its ``Publisher``.
final class SessionHub {
    /// Where notifications go (the server). Strong: the two live as long as the server, and reading a
    /// strong `let` costs nothing, where an unchecked `unowned` reference costs an atomic retain at
    /// each use.
    let publisher: any Publisher
    /// Where sessions are kept; told about every change.
    var store: any Store = EphemeralStore()
    var sessions: [String: SessionState] = [:]
    var pending: [String: PendingNavigation] = [:]
    /// Pending navigations by session and source node (a newer one from the same source supersedes).
    var pendingBySource: [SessionKey: PendingNavigation] = [:]
    /// Pending keyed navigations, so a repeated key joins the first.
    var pendingByKey: [SessionKey: PendingNavigation] = [:]
    /// Navigations waiting for a recovery flow, by session and flow node id.
    var recoveries: [SessionKey: PendingNavigation] = [:]
    private var navigationCounter = 0
    /// Commands waiting to be spawned, and the handles that spawn the next few per iteration.
    var spawnQueue: [() -> Void] = []
    var spawnCheck: Check?
    var spawnIdle: Idle?
    var commits = 0
    /// Cluster mode: subscribers here of sessions other nodes own.
    var mirrors: [String: Mirror] = [:]
    /// Cluster mode: every commit's `stackChanged` goes to the store for other nodes' subscribers.
    var publishesChanges = false

    init(publisher: any Publisher, graph: NavigationGraph) {
        self.publisher = publisher
        sessions["main"] = makeState(Session(name: "main", graph: graph))
    }

    /// `session` as the hub holds it, with an audience of its own.
    func makeState(_ session: Session) -> SessionState {
        SessionState(session, audience: publisher.makeAudience(), recordsAlways: publishesChanges)
    }

    /// Numbers navigations after `n` from now on (ids in replies restored from a state file).
    func numberNavigations(after n: Int) { navigationCounter = max(navigationCounter, n) }

    /// The next navigation's number (its id is ``PendingNavigation/id(_:)`` of it).
    func nextNavigation() -> Int {
        navigationCounter += 1
        return navigationCounter
    }

    /// The session a request names (its `session` param, `session`; absent or null: "main"). Each
    /// connection remembers the last one it used, so a client that stays in one session is matched by
    /// bytes, not looked up by name.
    func state(_ session: JSONView?, for c: some Client) throws(RPCError) -> SessionState {
        if let cached = c.lastSession, !cached.isClosed {
            if let v = session {
                if v.kind == .string && cached.isNamed(v.stringBytes) { return cached }
            } else if cached.session.name == "main" {
                return cached
            }
        }
        var name = "main"
        if let v = session {
            guard let s = v.string else { throw Params<SessionParam>.wrong("session", "a string", v) }
            name = s
        }
        let s = try state(name)
        c.lastSession = s
        return s
    }

    func state(_ name: String) throws(RPCError) -> SessionState {
        guard let s = sessions[name] else {
            if let moved = store.missing(name) { throw moved }
            let hint = suggestion(for: name, among: sessions.keys).map { "; did you mean \"\($0)\"?" } ?? ""
            throw RPCError(.unknownTarget, "no session \"\(name)\"\(hint); open it with session.open {name: \"\(name)\"} (session.list lists them)",
                           data: ["session": .string(name)])
        }
        return s
    }

    /// Clients providing each precondition (or recovery) name; the latest is asked first.
    var providers: [String: [any Client]] = [:]

    func provider(for name: String) -> (any Client)? {
        providers[name]?.last { !$0.isClosed }
    }

    func provide(_ names: [String], by c: any Client) {
        for n in names where !(providers[n]?.contains { $0 === c } ?? false) {
            providers[n, default: []].append(c)
        }
        c.whenGone { [unowned self] gone in
            for n in names { self.providers[n]?.removeAll { $0 === gone } }
        }
    }

    func subscribe(_ c: any Client, to state: SessionState) {
        let name = state.session.name
        if state.subscribers.insert(c) {
            c.subscriptions.insert(name)
            // By name, not by a weak reference: a weak reference would give the session's state a side
            // table and slow every retain and release of it on the request path.
            c.whenGone { [unowned self] gone in self.sessions[name]?.subscribers.remove(gone.id) }
        }
    }

    func unsubscribe(_ c: any Client, from state: SessionState) {
        state.subscribers.remove(c.id)
        c.subscriptions.remove(state.session.name)
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
