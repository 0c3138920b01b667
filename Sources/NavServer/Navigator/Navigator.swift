import JSON
import Logging
import NavGraph
import NavigationCore
import RPC
import UV
#if canImport(Glibc)
import Glibc
#endif

/// The navigator: every session and pending navigation of the daemon, who listens to each session
/// and who provides each precondition; the navigation methods, preconditions, recovery, dismissal
/// and flows (its extensions in this folder). It knows nothing of sockets: it reaches clients only
/// as ``Client``s and through its ``Publisher``, and keeps sessions through a ``Store``.
final class Navigator: SessionSource {
    let config: NavigatorLimits
    let logger: Logger
    /// The loop its tasks (timers, child processes) run on.
    let loop: EventLoop
    /// The navigation graph every navigation is checked against (replaced by `graph.reload`).
    var graph: NavigationGraph
    /// Field names of the setup models requests carry (`with`), made into strings once.
    /// Precondition tasks started (commands and provider requests), for `stats`.
    var tasksStarted = 0
    /// Where notifications go (the server). Strong: the two live as long as the server, and reading a
    /// strong `let` costs nothing, where an unchecked `unowned` reference costs an atomic retain at
    /// each use.
    let publisher: any Publisher
    /// Where sessions are kept; told about every change.
    var store: any Store = EphemeralStore()
    /// What each uid's sessions hold (``DataPool``), by which `--max-data-bytes` is shared.
    let data: DataPool
    var sessions: SessionTable
    var pending: [String: PendingNavigation] = [:]
    /// Pending navigations by session and source node (a newer one from the same source supersedes).
    var pendingBySource: [SessionKey: PendingNavigation] = [:]
    /// Pending keyed navigations, so a repeated key joins the first.
    var pendingByKey: [SessionKey: PendingNavigation] = [:]
    /// Navigations waiting for a recovery flow, by session and flow node id.
    var recoveries: [SessionKey: PendingNavigation] = [:]
    /// Pending navigations by the uid they count against, and by the client that asked (by its id:
    /// cancelled when it goes, but the detached ones).
    var pendingByUid = UidCounts()
    /// Subscriptions (a connection's to a session, once) by the connection's uid: `--max-subscriptions`' shares.
    var subscriptionsByUid = UidCounts()
    /// Keyed replies kept, counted per uid (``KeyBudget``).
    var keyBudget = KeyBudget()
    var pendingByClient: [Int: [Int: PendingNavigation]] = [:]
    /// Clients the navigator hears the going of (``watch(_:)``): one hook each, however many
    /// subscriptions, provisions and navigations they make.
    var watched: Set<Int> = []
    private var navigationCounter = 0
    /// The last ``SessionState/ref`` given.
    private var lastSessionRef = 0
    /// Commands waiting to be spawned, by uid in turn, and the handles that spawn the next few per
    /// iteration while a uid with room has some.
    var spawnQueue = FairQueue<() -> Void>()
    /// Command processes running, by the uid of their navigation (`--max-children`, shared).
    var childrenByUid = UidCounts()
    var spawnCheck: Check?
    var spawnIdle: Idle?
    var commits = 0
    /// What navigations exercised of the graph (`coverage.report`).
    var coverage: CoverageRuns
    /// Cluster mode: subscribers here of sessions other nodes own.
    var mirrors: [String: Mirror] = [:]
    /// Sessions whose waiting navigations another node asked for within
    /// ``pendingAskInterval`` of the last answer: answered together when `pendingAskTimer` fires.
    var pendingAsks: Set<String> = []
    var pendingAskTimer: Timer?
    /// Where the sessions live: this node alone, or a store several nodes share (the seam
    /// cluster mode goes through: ``SessionPlacement``).
    var placement: any SessionPlacement = OneNode() { didSet { placementRecordsAlways = placement.recordsAlways } }
    /// `placement.recordsAlways`, read without a call: a commit of a session nobody here subscribes
    /// to skips the placement when it is false.
    private(set) var placementRecordsAlways = false

    init(config: NavigatorLimits, graph: NavigationGraph, logger: Logger, loop: EventLoop, publisher: any Publisher) {
        self.config = config
        self.graph = graph
        self.logger = logger
        self.loop = loop
        self.publisher = publisher
        let data = DataPool()
        self.data = data
        sessions = SessionTable(data: data)
        coverage = CoverageRuns(graph: graph)
        sessions["main"] = makeState(Session(name: "main", graph: graph))
        coverage.all.sessionStarted()
    }

    /// `session` as the navigator holds it, with an audience of its own.
    func makeState(_ session: Session) -> SessionState {
        session.limits = config.session
        lastSessionRef += 1
        return SessionState(session, ref: lastSessionRef, audience: publisher.makeAudience(),
                            recordsAlways: alwaysRecorded)
    }

    /// The changes every session records for the placement and the store, whoever subscribes.
    var alwaysRecorded: AlwaysRecorded {
        if placement.recordsAlways { return .full }
        guard store.wantsChanges else { return .nothing }
        return store.takesCompactChanges ? .either : .full
    }

    /// Numbers navigations after `n` from now on (ids in replies restored from a state file).
    func numberNavigations(after n: Int) { navigationCounter = max(navigationCounter, n) }

    /// Restored keyed replies name navigations ("nav-7"): new ones are numbered after them.
    func numberNavigations(afterThoseOf session: Session) {
        guard !session.keyed.isEmpty else { return }  // no parser made for none (a restart restores many)
        let parser = JSONParser(maxDepth: config.writtenDepth)
        for reply in session.keyed.values {
            let id: String? = switch reply {
            case .success(let t): t.bytes.withUnsafeBytes { (try? parser.view($0))?.member("navigation")?.string }
            case .failure(let e): e.data["navigation"]?.stringValue
            }
            if let n = id.flatMap(PendingNavigation.number(ofId:)) { numberNavigations(after: n) }
        }
    }

    /// The next navigation's number (its id is ``PendingNavigation/id(_:)`` of it).
    func nextNavigation() -> Int {
        navigationCounter += 1
        return navigationCounter
    }

    /// Up to this many sessions, an unknown session's error suggests a near name (a developer's few
    /// sessions; a backend's thousands would make each such error walk them all).
    static let suggestAmongSessions = 64

    func session(named name: String) throws(NavError) -> SessionState { try state(name) }
    func serves(_ name: String) -> Bool { sessions[name] != nil }

    func state(_ name: String) throws(NavError) -> SessionState {
        guard let s = sessions[name] else {
            if name.isEmpty {
                throw NavError(.unknownTarget, "\"session\" is empty; name an open session, or leave \"session\" out for `main` (session.list lists them)",
                               data: ["session": ""])
            }
            // A near name is looked for only among few sessions: a request never costs a walk of them all.
            let hint = sessions.count > Navigator.suggestAmongSessions ? ""
                : suggestion(for: name, among: sessions.keys).map { " (did you mean \"\($0)\"?)" } ?? ""
            throw NavError(.unknownTarget, "no session \"\(name)\"\(hint); open it with session.open {name: \"\(name)\"} (session.list lists them)",
                           data: ["session": .string(name)])
        }
        return s
    }

    /// Clients providing each precondition (or recovery) name; the latest is asked first. A name
    /// nobody provides any more has no entry.
    var providers: [String: [any Client]] = [:]
    /// The names each client provides, by its id (bounded by `--max-provided-per-connection`).
    var providedBy: [Int: Set<String>] = [:]
    /// The requests waiting for and in flight at each provider, by its client id.
    var providerSlots: [Int: ProviderSlots] = [:]

    func provider(for name: String) -> (any Client)? {
        providers[name]?.last { !$0.isClosed }
    }

    /// Refuses names that would leave `c` providing more than `--max-provided-per-connection`.
    func checkProvidedRoom(_ c: any Client, adding names: [String]) throws(NavError) {
        let have = providedBy[c.id] ?? []
        let total = have.count + Set(names).subtracting(have).count
        guard total > config.maxProvidedPerConnection else { return }
        throw NavError(.limitExceeded, "with these names this connection would provide \(total) preconditions and recoveries, more than one connection may (the --max-provided-per-connection limit, \(config.maxProvidedPerConnection)); provide the graph's names only, or from another connection",
                       data: ["limit": "--max-provided-per-connection", "max": .int(config.maxProvidedPerConnection)])
    }

    func addProvider(_ names: [String], _ c: any Client) {
        for n in names where providedBy[c.id, default: []].insert(n).inserted {
            providers[n, default: []].append(c)
        }
        watch(c)
    }

    /// Refuses a subscription to one more session past `--max-subscriptions-per-connection`, or past
    /// `--max-subscriptions` for all connections together, shared between their uids (a session `c`
    /// already follows may be subscribed to again, in another form).
    func checkSubscriptionRoom(_ c: any Client, for name: String) throws(NavError) {
        guard !c.subscriptions.contains(name) else { return }
        let count = c.subscriptions.count
        if count >= config.maxSubscriptionsPerConnection {
            throw NavError(.limitExceeded, "this connection is subscribed to \(count) sessions, the most one connection may (the --max-subscriptions-per-connection limit); unsubscribe from sessions it no longer shows, or subscribe on another connection",
                           data: ["limit": "--max-subscriptions-per-connection", "max": .int(config.maxSubscriptionsPerConnection)])
        }
        let uid = c.uid ?? getuid()
        let verdict = config.subscriptions.verdict(for: uid, in: subscriptionsByUid)
        if verdict != .admitted {
            throw config.subscriptions.refusal(verdict, uid: uid, in: subscriptionsByUid, what: "subscriptions",
                                               advice: "unsubscribe from sessions no front-end shows, or close connections you no longer use")
        }
    }

    /// `c` follows session `name` now (counted once per connection and session, by its uid).
    func noteSubscribed(_ c: any Client, to name: String) {
        if c.subscriptions.insert(name).inserted { subscriptionsByUid.add(c.uid ?? getuid()) }
    }

    /// `c` no longer follows session `name`.
    func noteUnsubscribed(_ c: any Client, from name: String) {
        if c.subscriptions.remove(name) != nil { subscriptionsByUid.remove(c.uid ?? getuid()) }
    }

    func subscribe(_ c: any Client, to state: SessionState, compact: Bool = false) {
        if state.subscribers.insert(c, compact: compact) {
            noteSubscribed(c, to: state.session.name)
            watch(c)
        }
    }

    /// Hears when `c` goes, once however often it is asked: its subscriptions end (here and for
    /// other nodes' sessions), it provides nothing more, and the navigations it waits for (but the
    /// detached ones) are cancelled. One hook per client, so a client that subscribes and
    /// unsubscribes, or navigates, over and over grows nothing.
    func watch(_ c: any Client) {
        guard watched.insert(c.id).inserted else { return }
        // By name, not by a weak reference: a weak reference would give the session's state a side
        // table and slow every retain and release of it on the request path.
        c.whenGone { [unowned self] gone in
            self.watched.remove(gone.id)
            for name in gone.subscriptions {
                self.sessions[name]?.subscribers.remove(gone.id)
                self.dropMirrorSubscriber(name, gone)
            }
            if !gone.subscriptions.isEmpty { self.subscriptionsByUid.remove(gone.uid ?? getuid(), gone.subscriptions.count) }
            gone.subscriptions = []
            for n in self.providedBy.removeValue(forKey: gone.id) ?? [] {
                self.providers[n]?.removeAll { $0 === gone }
                if self.providers[n]?.isEmpty == true { self.providers[n] = nil }
            }
            self.providerSlots[gone.id]?.providerGone()
            self.providerSlots[gone.id] = nil
            guard let navs = self.pendingByClient.removeValue(forKey: gone.id) else { return }
            for nav in navs.values.sorted(by: { $0.number < $1.number }) where !nav.detached {
                self.finish(nav, .failure(NavError(.cancelled, "the \(nav.leaving == nil ? "navigation" : "dismiss") was cancelled: the client that asked for it disconnected",
                                                   data: ["navigation": .string(nav.id)])))
            }
        }
    }

    func unsubscribe(_ c: any Client, from state: SessionState) {
        state.subscribers.remove(c.id)
        noteUnsubscribed(c, from: state.session.name)
    }
}
