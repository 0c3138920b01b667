import JSON
import Logging
import NavGraph
import NavServer
import NavigationCore
import RPC
import UV


/// Sessions in PostgreSQL, shared by several navd nodes (`--store postgres://…`). Each session is
/// owned by one node at a time; see Protocol/CLUSTER.md for the model. Everything runs on the loop:
/// commits, lease renewals and takeovers are queries of one ``PGConnection``.
public final class PostgresStore: Store, SharedStore {
    public let node: String
    let socket: String
    let leaseMs: Int
    /// The most sessions one takeover claims (the rest are claimed by the next sweeps).
    static let claimBatch = 1_000
    /// The keys one takeover claims at most (with its sessions; at least one session is claimed):
    /// a session keeps up to ``Session/maxKeys``, and PostgreSQL gathers ~4,000 in ~12 ms, so one
    /// claim stays well within the lease and navd reads it between requests.
    static let claimKeyBudget = 16_384
    /// The keys a session may hold in `navd_keys` past ``Session/maxKeys`` before a commit trims it
    /// back: the trim reads the session's newest 4,096 keys, so it runs once per this many keys
    /// rather than at every commit.
    static let keyTrimSlack = 1_024
    let connection: PGConnection
    let loop: EventLoop
    private let logger: Logger
    public weak var events: ClusterEvents?
    private(set) var incarnation = 0
    var graph: NavigationGraph? {
        didSet { if let graph { tabs = GraphIdentity.tabs(of: graph) } }
    }
    /// The tabs the graph served declares, as rows name them (``GraphIdentity/tabs(of:)``).
    private(set) var tabs = (id: "", text: "")
    /// Whether the next commit records ``tabs`` in `navd_tab_layouts` (after a graph reload, or a
    /// commit that failed to): the rows it writes name them.
    private var tabsUnrecorded = false
    /// Layouts read from PostgreSQL, by id (a handful: one per graph the cluster served).
    private var layouts: [String: TabLayout] = [:]

    /// Sessions this node owns, by their epoch (absent: created here, not yet stored).
    private var epochs: [String: Int] = [:]
    /// The most keys `navd_keys` may hold for each session this node owns: those claimed with it,
    /// plus those its commits wrote since; set back to ``Session/maxKeys`` by a commit that trims it.
    private var keysHeld: [String: Int] = [:]
    /// The version of each session this node owns as PostgreSQL holds it (``storedVersion(of:)``).
    private var versions: [String: Int] = [:]
    /// Every session of the cluster and its owner node, kept current by `navd_owners` notifications.
    var owners: [String: String] = [:]
    /// Every node: its socket and when its lease ends (loop time, ms), as of the last renewal.
    var nodes: [String: (socket: String, until: UInt64)] = [:]

    /// What was told since the last commit began.
    private var pending = PendingWrites()
    /// Sessions whose close is in a group commit PostgreSQL has not answered yet.
    private var closing: Set<String> = []
    /// Whether this node closed `name` and PostgreSQL has not stored the close yet: the session is
    /// still listed as this node's, and a request for it waits for the close (not a resync).
    func isClosing(_ name: String) -> Bool { pending.closed.contains(name) || closing.contains(name) }
    /// `stackChanged` params of this flush's commits, by session, for subscribers on other nodes
    /// (and the other notifications relayed after them).
    private var bodies: [String: [String]] = [:]
    /// Notifications relayed of sessions without a change in this flush, by session, sent by
    /// ``scheduleRelays()`` (at most ``maxRelays``; past it they are not relayed).
    private var relays: [String: [String]] = [:]
    private var relayCount = 0
    private var relayTimer: Timer?
    static let maxRelays = 10_000
    private var timer: Timer?
    private var sweeping = false
    private var renewing = false
    /// Set when PostgreSQL went away or a commit failed: changes wait until the node's sessions were
    /// read again.
    private(set) var needsResync = false
    private var resyncing = false
    /// When ``reclaimStranded(_:)`` last read the node's sessions again (loop time, ms).
    private var lastReclaim: UInt64 = 0
    private(set) var commits = 0
    /// Names found in no row of PostgreSQL, and when (loop time): requests naming them within a
    /// second are answered at once.
    var absent: [String: UInt64] = [:]
    /// Requests waiting for a look-up, by session name.
    var lookingUp: [String: [() -> Void]] = [:]
    /// The most requests that may wait for look-ups; more are answered `unavailable`.
    static let maxLookUps = 10_000
    var waitingLookUps = 0
    /// Sessions whose owner is read again because the directory names a node whose lease expired
    /// (at most ``maxLookUps`` at a time).
    var refreshing: Set<String> = []
    /// While the directory is read again (after a reconnection): owners notified meanwhile, which
    /// are newer than what that read answers.
    private var notifiedDuringRead: [String: String?]?

    /// Every PostgreSQL notification payload is at most this long; a larger change is announced
    /// without its body and read by subscribers' nodes from the table.
    static let maxPayload = 7_900

    /// How sessions read from PostgreSQL are parsed and checked.
    let saved: SavedSessions

    public init(conninfo: String, node: String, socket: String, leaseMs: Int, saved: SavedSessions, loop: EventLoop, logger: Logger) {
        self.saved = saved
        self.node = node
        self.socket = socket
        self.leaseMs = leaseMs
        self.loop = loop
        self.logger = logger
        connection = PGConnection(loop: loop, conninfo: conninfo, logger: logger)
        // Past the lease the node's sessions may be another's anyway: wait no longer than it.
        connection.queryTimeoutMs = UInt64(max(leaseMs, 500))
    }

    var isUp: Bool { connection.isUp && !needsResync && !resyncing }

    /// Sessions this node reads from PostgreSQL from now on (another node's, for a subscriber
    /// here; those it takes over) are read with the graph it now serves.
    public func graphReloaded(_ graph: NavigationGraph, sessions: Int) {
        let before = tabs.id
        self.graph = graph
        if tabs.id != before { tabsUnrecorded = true }
    }

    // MARK: Start (blocking: before navd serves)

    public func load(graph: NavigationGraph) throws(StateError) -> [Session] {
        self.graph = graph
        try connection.connectNow()
        for sql in PostgresSchema.setup { _ = try connection.runNow(sql) }
        _ = try connection.runNow(PostgresSchema.saveLayout, [tabs.id, tabs.text])
        let reg = try connection.runNow(PostgresSchema.register, [node, socket, String(leaseMs)])
        guard let inc = reg.rows.first?[0].flatMap({ Int($0) }) else { throw StateError(description: "PostgreSQL did not register node \(node)") }
        incarnation = inc
        let renewed = try connection.runNow(PostgresSchema.renew, [node, String(incarnation), String(leaseMs)])
        readNodes(renewed.rows.first?[0] ?? nil)
        var sessions = try claimNow(own: true)
        // Sessions whose owner's lease already expired (a node that crashed while none other ran).
        sessions += try claimNow(own: false)
        let dir = try connection.runNow(PostgresSchema.directory)
        for row in dir.rows { if let n = row[0], let o = row[1] { owners[n] = o } }
        if owners["main"] == nil {
            // "main" always exists: the first node to start makes it, now, so that nodes starting
            // together do not each make their own.
            let main = Session(name: "main", graph: graph)
            var tree = JSONWriter(capacity: 1024)
            main.root.write(into: &tree, graph)
            let made = try connection.runNow(PostgresSchema.createSession,
                                             ["main", String(main.version), String(main.idCounter), String(decoding: tree.bytes, as: UTF8.self), node, tabs.id])
            if made.rows.isEmpty {
                let row = try connection.runNow(PostgresSchema.owner, ["main"])
                owners["main"] = row.rows.first?[0] ?? nil
            } else {
                epochs["main"] = 1
                versions["main"] = main.version
                owners["main"] = node
                sessions.append(main)
                _ = try connection.runNow("SELECT pg_notify('navd_owners', $1)", [JSONWriter.string(["s": "main", "n": .string(node)])])
            }
        }
        _ = try connection.runNow("LISTEN navd_changes")
        _ = try connection.runNow("LISTEN navd_owners")
        connection.onNotification = { [unowned self] channel, payload in self.notified(channel, payload) }
        connection.onDown = { [unowned self] why in self.wentDown(why) }
        connection.onUp = { [unowned self] in self.cameBack() }
        try connection.startAsync()
        startTimer()
        logger.notice("cluster node registered", metadata: ["navd.node": "\(node)", "navd.incarnation": "\(incarnation)",
                                                           "navd.sessions": "\(sessions.count)"])
        return sessions
    }

    /// At start: its own sessions, all of them (in bounded claims); others', one bounded claim
    /// (sweeps claim the rest).
    private func claimNow(own: Bool) throws(StateError) -> [Session] {
        var rows = PGRows()
        if own {
            var after = ""
            while true {
                let (sql, params) = claimOwn(after: after)
                let batch = try connection.runNow(sql, params)
                if batch.rows.isEmpty { break }
                rows.rows += batch.rows
                after = Self.lastName(batch)
            }
        } else {
            let (sql, params) = claimOthers()
            rows = try connection.runNow(sql, params)
        }
        do {
            return try restore(rows)
        } catch {
            throw StateError(description: "\(error)")
        }
    }

    /// Sessions rebuilt from claimed rows (`navd_claim`'s columns); their epochs are noted.
    private func restore(_ rows: PGRows) throws(StateError) -> [Session] {
        guard let graph else { return [] }
        let parser = saved.parser(), listParser = saved.parser()
        var out: [Session] = []
        for row in rows.rows {
            let name = row[0] ?? ""
            do {
                guard let version = row[1].flatMap({ Int($0) }), let nextId = row[2].flatMap({ Int($0) }),
                      let tree = row[3], let facts = row[4], let epoch = row[6].flatMap({ Int($0) }) else {
                    throw NavError(.corruptState, "a column navd writes is NULL or not a number")
                }
                let s = try saved.session(name, graph: graph, version: version, nextId: nextId, tree: tree, facts: facts, parser: parser)
                try checkTabs(of: s, savedUnder: row.count > 9 ? row[8] : nil, layout: row.count > 9 ? row[9] : nil, graph: graph)
                if let uid = row[5].flatMap({ UInt32($0) }) { s.owner = uid }
                keysHeld[name] = try rememberKeys(row[7] ?? "[]", in: s, listParser, parser)
                epochs[name] = epoch
                versions[name] = version
                owners[name] = node
                out.append(s)
            } catch let e as NavError {
                throw StateError(description: "cannot restore session \"\(name)\" from PostgreSQL: \(e.message); start navd with the graph it was saved with")
            } catch {
                throw StateError(description: "session \"\(name)\" in PostgreSQL is corrupt: \(error)")
            }
        }
        return out
    }

    /// Checks that the tab shells of `s`, read from a row written under the tabs `id` names
    /// (`layout`: their JSON text), hold the tabs they held there where the graph served declares
    /// them now: a tab is known by its place, so a graph that moved tabs would show one as another.
    /// A row that names no layout, or one PostgreSQL no longer holds, is checked by count alone (as
    /// it was read).
    func checkTabs(of s: Session, savedUnder id: String?, layout text: String?, graph: NavigationGraph) throws(NavError) {
        guard let id, id != tabs.id, let text else { return }
        let layout: TabLayout
        if let known = layouts[id] {
            layout = known
        } else {
            guard let parsed = (try? saved.parse(saved.parser(), text, "a graph's tab layout")).flatMap(TabLayout.init(json:)) else {
                throw NavError(.corruptState, "the tab layout \(id) its row names is not one navd writes")
            }
            if layouts.count >= 64 { layouts.removeAll() }
            layouts[id] = parsed
            layout = parsed
        }
        try Session.checkTabs(of: s.root, graph: graph, savedUnder: layout)
    }

    /// Remembers a claimed session's keys: up to ``Session/maxKeys`` pairs `[key, reply text]`, read
    /// as views, each reply's bytes kept (``KeyedReply/decode(text:parser:)``). Returns how many
    /// PostgreSQL held.
    private func rememberKeys(_ text: String, in s: Session, _ listParser: JSONParser, _ parser: JSONParser) throws(NavError) -> Int {
        var text = text
        var held = 0
        let problem: NavError? = text.withUTF8 { b in
            let list: JSONView
            do throws(NavError) { list = try saved.view(listParser, UnsafeRawBufferPointer(b), "the remembered keys") } catch { return error }
            guard list.isArray else { return NavError(.corruptState, "the remembered keys are not an array") }
            for kv in list.elements {
                let pair = kv.elements
                guard pair.count == 2, let key = pair[0].string, pair[1].kind == .string,
                      let reply = KeyedReply.decode(text: pair[1].stringBytes.raw, parser: parser) else {
                    return NavError(.corruptState, "a remembered key is corrupt")
                }
                s.remember(key: key, reply)
                held += 1
            }
            return nil
        }
        if let problem { throw problem }
        return held
    }

    private func readNodes(_ json: String?) {
        guard let json, let list = try? JSONParser(maxDepth: 8).parse(json).arrayValue else { return }
        let now = loop.now
        nodes = [:]
        for entry in list {
            let e = entry.arrayValue ?? []
            guard e.count == 3, let name = e[0].stringValue, let sock = e[1].stringValue, let left = e[2].intValue else { continue }
            nodes[name] = (sock, now + UInt64(max(0, left)))
        }
    }

    // MARK: Leases

    private func startTimer() {
        let t = Timer(loop: loop).labelled("cluster: leases renewed")
        timer = t
        let every = UInt64(max(leaseMs / 3, 10))
        t.start(milliseconds: every, repeat: every) { [unowned self] in self.tick() }
    }

    /// Renews this node's lease, then takes over sessions of nodes whose lease expired.
    private func tick() {
        guard connection.isUp, !renewing else { return }
        renewing = true
        connection.query(PostgresSchema.renew, [node, String(incarnation), String(leaseMs)]) { [unowned self] r in
            renewing = false
            switch r {
            case .success(let rows):
                // Renewed after its lease had ended (the node was paused, or the renewal slow):
                // others may have taken its sessions, and their notifications may be lost; what it
                // holds is read again before it writes.
                if let mine = nodes[node], loop.now > mine.until, !needsResync {
                    logger.warning("this node's lease had expired before it was renewed; reading its sessions again",
                                   metadata: ["navd.node": "\(node)", "navd.lateMs": "\(loop.now - mine.until)"])
                    needsResync = true
                    events?.storeAvailabilityChanged(false, reason: "this node's lease had expired; its sessions are read again")
                }
                readNodes(rows.rows.first?[0] ?? nil)
                if needsResync { resync() } else { sweep() }
            case .failure(let f) where f.sqlState == "NV001":
                events?.leaseLost(f.message)
            case .failure: break  // the connection failed: it is opened again, then the node resyncs
            }
        }
    }

    /// Claims the sessions of nodes whose lease expired (at most ``claimBatch`` per sweep).
    func sweep() {
        guard connection.isUp, !sweeping, !needsResync, !resyncing else { return }
        sweeping = true
        let (sql, params) = claimOthers()
        connection.query(sql, params) { [unowned self] r in
            sweeping = false
            switch r {
            case .success(let rows) where !rows.rows.isEmpty:
                do {
                    let sessions = try restore(rows)
                    logger.notice("took over sessions whose owner's lease expired", metadata: ["navd.sessions": "\(sessions.count)"])
                    events?.sessionsClaimed(sessions, own: false)
                    // A batch ends at claimBatch sessions or claimKeyBudget keys: more may wait.
                    sweep()
                } catch {
                    logger.error("cannot restore sessions taken over", metadata: ["navd.error": "\(error)"])
                }
            case .failure(let f) where f.sqlState == "NV001": events?.leaseLost(f.message)
            default: break
            }
        }
    }

    /// Reads this node's sessions again (after PostgreSQL came back, or a commit failed), raising
    /// their epochs: what navd holds in memory becomes what PostgreSQL holds. They are read in
    /// bounded claims (``claimOwn(after:)``), kept until the last, then taken at once: nothing is
    /// committed meanwhile (``isUp`` is false while resyncing).
    private func resync() {
        guard connection.isUp, !resyncing else { return }
        resyncing = true
        needsResync = false
        resyncBatch(after: "", read: PGRows())
    }

    private func resyncBatch(after: String, read: PGRows) {
        let (sql, params) = claimOwn(after: after)
        connection.query(sql, params) { [unowned self] r in
            switch r {
            case .success(let rows) where !rows.rows.isEmpty:
                var read = read
                read.rows += rows.rows
                resyncBatch(after: Self.lastName(rows), read: read)
            case .success:
                resyncing = false
                do {
                    let mine = Set(epochs.keys)
                    epochs = [:]
                    keysHeld = [:]
                    let sessions = try restore(read)
                    for name in mine where epochs[name] == nil && owners[name] == node { owners[name] = nil }
                    events?.sessionsClaimed(sessions, own: true)
                    for name in mine where epochs[name] == nil { versions[name] = nil }
                    events?.storeAvailabilityChanged(true, reason: "PostgreSQL is reachable again")
                    sweep()
                } catch {
                    logger.error("cannot restore this node's sessions", metadata: ["navd.error": "\(error)"])
                    needsResync = true
                }
            case .failure(let f) where f.sqlState == "NV001":
                resyncing = false
                events?.leaseLost(f.message)
            case .failure:
                resyncing = false
                needsResync = true
            }
        }
    }

    /// The claim of this node's own sessions named after `after` (in bytes' order): at most
    /// ``claimBatch`` sessions and ``claimKeyBudget`` keys, so that each is one query well within the
    /// lease however many sessions and keys the node holds.
    private func claimOwn(after: String) -> (String, [String?]) {
        (PostgresSchema.claim, [node, String(incarnation), String(Self.claimBatch), "true", String(Self.claimKeyBudget), after])
    }

    /// The claim of sessions whose owner's lease expired: at most ``claimBatch`` sessions and
    /// ``claimKeyBudget`` keys, skipping rows another node is claiming.
    private func claimOthers() -> (String, [String?]) {
        (PostgresSchema.claim, [node, String(incarnation), String(Self.claimBatch), "false", String(Self.claimKeyBudget), ""])
    }

    /// The greatest session name of claimed rows, in bytes' order (as the claim orders them).
    static func lastName(_ rows: PGRows) -> String {
        var last = ""
        for row in rows.rows {
            if let name = row[0], last.utf8.lexicographicallyPrecedes(name.utf8) { last = name }
        }
        return last
    }

    /// A request named a session the directory says is this node's, which it does not hold while
    /// it is not reading its sessions again (a claim that missed it): they are read again, at most
    /// once per lease.
    func reclaimStranded(_ name: String) {
        guard connection.isUp, !needsResync, !resyncing, loop.now >= lastReclaim + UInt64(leaseMs) else { return }
        lastReclaim = loop.now
        logger.warning("session \"\(name)\" is this node's in PostgreSQL but not held here; reading the node's sessions again")
        needsResync = true
        tick()
    }

    private func wentDown(_ why: String) {
        logger.error("lost the connection to PostgreSQL; changes are refused until it is back", metadata: ["navd.error": "\(why)"])
        needsResync = true
        events?.storeAvailabilityChanged(false, reason: "PostgreSQL cannot be reached: \(why)")
    }

    private func cameBack() {
        Array(["LISTEN navd_changes", "LISTEN navd_owners"]).forEach { connection.query($0) { _ in } }
        notifiedDuringRead = [:]
        connection.query(PostgresSchema.directory) { [unowned self] r in
            if case .success(let rows) = r {
                absent = [:]
                owners = [:]
                for row in rows.rows { if let n = row[0], let o = row[1] { owners[n] = o } }
                for (n, o) in notifiedDuringRead ?? [:] { owners[n] = o }
            }
            notifiedDuringRead = nil
        }
        tick()
    }

    // MARK: Notifications

    private func notified(_ channel: String, _ payload: String) {
        if channel == "navd_changes" {
            if payload.utf8.starts(with: UnsafeRawBufferPointer(start: Self.askPrefix.utf8Start, count: Self.askPrefix.utf8CodeUnitCount)) {
                if let j = try? JSONParser(maxDepth: 8).parse(payload), j["ask"]?.stringValue == "pending", let s = j["s"]?.stringValue {
                    events?.pendingAsked(s)
                }
                return
            }
            events?.changeNotified(payload)
            return
        }
        guard channel == "navd_owners", let j = try? JSONParser(maxDepth: 8).parse(payload), let s = j["s"]?.stringValue else { return }
        let newOwner = j["n"]?.stringValue
        owners[s] = newOwner
        notifiedDuringRead?[s] = .some(newOwner)
        absent[s] = nil
        if newOwner != node, epochs.removeValue(forKey: s) != nil {
            keysHeld[s] = nil
            events?.sessionsLost([s])
            versions[s] = nil
        }
        // No owner: the session was closed (navd_commit's closes notify so).
        if newOwner == nil { events?.sessionClosedElsewhere(s) }
    }

    public func storedVersion(of name: String) -> Int? { versions[name] }

    /// `stats.cluster`: this node, its incarnation, whether it can write, what it knows of others.
    public func stats(mirrors: Int) -> (key: String, value: JSONObject)? {
        ("cluster", [
            "node": .string(node), "incarnation": .int(incarnation), "available": .bool(isUp),
            "commits": .int(commits), "owned": .int(epochs.count), "known": .int(owners.count),
            "nodes": .int(nodes.count), "mirrored": .int(mirrors), "queries": .int(connection.queuedQueries),
        ])
    }

    // MARK: Store

    public func sessionChanged(_ s: Session) { pending.change(s) }
    public func sessionOpened(_ s: Session) { pending.change(s) }
    public func factsChanged(_ s: Session, changes: JSONObject) { pending.change(s) }
    public func sessionClosed(_ name: String) {
        pending.close(name)
        bodies[name] = nil
    }
    public func keyRemembered(_ s: Session, key: String, reply: Result<JSONText, NavError>) { pending.remember(s, key: key, reply: reply) }
    public func changePublished(_ s: Session, body: [UInt8]) {
        appendBody(s.name, body.count <= Self.maxPayload
            ? String(decoding: body, as: UTF8.self)
            : JSONWriter.string(["session": .string(s.name), "version": .int(s.version)]))
    }

    /// Sent in the commit of the session's changes of this iteration when there are some (after
    /// them), else at once: either way after the changes published before it, which PostgreSQL
    /// delivers in the order of its queries. Too large for a notification, it goes without its
    /// `result` and its error's `data`, marked `truncated`.
    public func notificationPublished(_ s: Session, method: String, params: JSONValue, again: Bool) {
        guard !pending.closed.contains(s.name), !closing.contains(s.name) else { return }
        var payload = Self.relayPayload(method, s, params, again: again)
        if payload.count > Self.maxPayload, case .object(var o) = params {
            o["result"] = nil
            if case .object(var e)? = o["error"] {
                e["data"] = nil
                o["error"] = .object(e)
            }
            o["truncated"] = true
            payload = Self.relayPayload(method, s, .object(o), again: again)
            guard payload.count <= Self.maxPayload else { return }
        }
        let text = String(decoding: payload, as: UTF8.self)
        if pending.changed[s.name] != nil || bodies[s.name] != nil {
            appendBody(s.name, text)
        } else if isUp, relayCount < Self.maxRelays {
            relays[s.name, default: []].append(text)
            relayCount += 1
            if relayCount == 1 { scheduleRelays() }
        }
    }

    /// Adds `text` to what the next commit notifies for session `name`, after its relayed
    /// notifications still waiting (they came first).
    private func appendBody(_ name: String, _ text: String) {
        if let waiting = relays.removeValue(forKey: name) {
            relayCount -= waiting.count
            bodies[name, default: []].append(contentsOf: waiting)
        }
        bodies[name, default: []].append(text)
    }

    /// Sends the relayed notifications of sessions without a change, in one query, at the start of
    /// the loop's next iteration: after the commit of this one, before any of the next (a session
    /// that changes meanwhile takes its own into its commit, first).
    private func scheduleRelays() {
        let t = relayTimer ?? Timer(loop: loop).labelled("cluster: notifications relayed")
        relayTimer = t
        t.start(milliseconds: 0) { [unowned self] in
            let waiting = relays.values.flatMap { $0 }
            relays.removeAll(keepingCapacity: true)
            relayCount = 0
            guard isUp, !waiting.isEmpty else { return }
            var w = JSONWriter(capacity: 256 * waiting.count)
            w.write(strings: waiting)
            connection.query("SELECT pg_notify('navd_changes', x) FROM json_array_elements_text($1::json) AS x",
                             [String(decoding: w.bytes, as: UTF8.self)]) { _ in }
        }
    }

    /// A node's question to the owner of session `s` (`{"ask": "pending", "s": …}` on
    /// `navd_changes`): nodes that know no `ask` read neither `session` nor `version` in it, and
    /// ignore it.
    static let askPrefix: StaticString = "{\"ask\":"

    public func askPending(_ name: String) {
        guard isUp else { return }
        var w = JSONWriter(capacity: 64)
        w.raw(Self.askPrefix)
        w.raw("\"pending\",\"s\":")
        w.write(string: name)
        w.raw("}")
        guard w.bytes.count <= Self.maxPayload else { return }
        connection.query("SELECT pg_notify('navd_changes', $1)", [String(decoding: w.bytes, as: UTF8.self)]) { _ in }
    }

    /// A notification relayed to other nodes: `r` its method, `s` the session, `v` the version it
    /// follows, `p` its params, and for a `navigationPending` `a`: whether it is announced again
    /// (for subscribers that joined) rather than sent anew. Nodes that know no `r` read neither
    /// `session` nor `version` in it, and ignore it.
    static func relayPayload(_ method: String, _ s: Session, _ params: JSONValue, again: Bool) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.raw("{\"r\":")
        w.write(string: method)
        w.raw(",\"s\":")
        w.write(string: s.name)
        w.raw(",\"v\":")
        w.write(int: s.version)
        if method == "navigationPending" { w.raw(again ? ",\"a\":true" : ",\"a\":false") }
        w.raw(",\"p\":")
        w.write(params)
        w.raw("}")
        return w.bytes
    }

    public var hasPendingWrites: Bool { !pending.isEmpty }
    public var flushesInBackground: Bool { true }

    public func flush(graph: NavigationGraph) throws(StateError) {
        guard hasPendingWrites else { return }
        throw StateError(description: "the PostgreSQL store writes in the background")
    }

    /// Sends this iteration's changes as one `navd_commit` call; `done` runs when PostgreSQL answered.
    public func beginFlush(graph: NavigationGraph, done: @escaping (StateError?) -> Void) {
        let batch = pending.changed, gone = pending.closed, keyed = pending.keys, changes = bodies
        pending.removeAll()
        bodies.removeAll(keepingCapacity: true)
        let names = Array(batch.keys) + Array(gone)
        var written: [(String, Int)] = []
        written.reserveCapacity(batch.count)
        guard isUp else {
            fail(names, "PostgreSQL cannot be reached", done)
            return
        }
        closing.formUnion(gone)
        var w = JSONWriter(capacity: 4096)
        let recordsTabs = tabsUnrecorded
        tabsUnrecorded = false
        if recordsTabs {
            w.raw("{\"l\":{\"id\":")
            w.write(string: tabs.id)
            w.raw(",\"layout\":")
            w.write(string: tabs.text)
            w.raw("},\"s\":[")
        } else {
            w.raw("{\"s\":[")
        }
        var first = true
        for (name, s) in batch {
            if !first { w.raw(",") }
            first = false
            let epoch = epochs[name]
            written.append((name, s.version))
            w.raw("{\"n\":")
            w.write(string: name)
            w.raw(",\"v\":")
            w.write(int: s.version)
            w.raw(",\"i\":")
            w.write(int: s.idCounter)
            w.raw(",\"e\":")
            w.write(int: epoch ?? 1)
            w.raw(epoch == nil ? ",\"new\":true,\"u\":" : ",\"new\":false,\"u\":")
            if let uid = s.owner { w.write(int: Int(uid)) } else { w.raw("null") }
            w.raw(",\"t\":")
            s.root.write(into: &w, graph)
            w.raw(",\"f\":")
            w.write(.object(s.sortedFacts))
            w.raw(",\"b\":")
            // (Relayed notifications still waiting came before this commit's changes.)
            if let waiting = relays.removeValue(forKey: name) {
                relayCount -= waiting.count
                w.write(strings: waiting + (changes[name] ?? []))
            } else {
                w.write(strings: changes[name] ?? [])
            }
            w.raw(",\"g\":")
            w.write(string: tabs.id)
            w.raw("}")
        }
        w.raw("],\"c\":")
        w.write(strings: Array(gone))
        w.raw(",\"k\":[")
        first = true
        var trimmed: [String] = []
        for k in keyed where !gone.contains(k.session) {
            if !first { w.raw(",") }
            first = false
            let held = (keysHeld[k.session] ?? 0) + 1
            if held > Session.maxKeys + Self.keyTrimSlack {
                trimmed.append(k.session)
                keysHeld[k.session] = Session.maxKeys
            } else {
                keysHeld[k.session] = held
            }
            w.raw("{\"s\":")
            w.write(string: k.session)
            w.raw(",\"k\":")
            w.write(string: k.key)
            w.raw(",\"r\":")
            w.write(string: k.reply)
            w.raw("}")
        }
        // The sessions whose keys passed the slack, trimmed back to their newest 4,096.
        w.raw("],\"x\":")
        w.write(strings: trimmed)
        w.raw("}")
        let doc = String(decoding: w.bytes, as: UTF8.self)
        connection.query(PostgresSchema.commit, [node, String(incarnation), doc]) { [unowned self] r in
            closing.subtract(gone)
            switch r {
            case .success:
                commits += 1
                for name in batch.keys where epochs[name] == nil {
                    epochs[name] = 1
                    owners[name] = node
                }
                for (name, version) in written { versions[name] = version }
                for name in gone {
                    epochs[name] = nil
                    keysHeld[name] = nil
                    versions[name] = nil
                    owners[name] = nil
                }
                done(nil)
            case .failure(let f):
                if recordsTabs { tabsUnrecorded = true }
                switch f.sqlState {
                case "NV001": events?.leaseLost(f.message)
                case "NV003":
                    logger.warning("this node's lease had expired in PostgreSQL (the node was paused, or PostgreSQL or the machine was slow): its commit was refused, not acknowledged; renewing the lease and reading its sessions again",
                                   metadata: ["navd.node": "\(node)", "navd.sessions": "\(names.count)"])
                default: break
                }
                fail(names, f.message, done)
            }
        }
    }

    /// A commit that was not stored: its sessions are dropped from memory and read again.
    private func fail(_ names: [String], _ why: String, _ done: (StateError?) -> Void) {
        let wasUp = isUp
        needsResync = true
        if wasUp { events?.storeAvailabilityChanged(false, reason: "a commit was not stored: \(why)") }
        for name in names {
            epochs[name] = nil
            keysHeld[name] = nil
        }
        // The sessions leave first: what the server then sends again (``Store/beginFlush(graph:done:)``)
        // must not be their unstored state.
        events?.sessionsLost(names)
        for name in names { versions[name] = nil }
        done(StateError(description: "PostgreSQL did not store the commit: \(why)"))
        if connection.isUp { tick() }
    }

    public func close() {
        timer?.close()
        timer = nil
        relayTimer?.close()
        relayTimer = nil
        connection.close()
    }
}
