import JSON
import Logging
import NavGraph
import NavigationCore
import RPC
import UV

/// Subscribers on this node of a session another node owns. They hear its commits through the
/// store's notifications, in version order; after a gap they get a fresh snapshot (a `reset`).
final class Mirror {
    let name: String
    var subscribers: Listeners
    /// The last version its subscribers were sent.
    var version: Int
    /// A snapshot is being read: notifications wait in `buffered`.
    var fetching = false
    /// A snapshot is owed: notifications to the subscribers were dropped (a commit of this node was
    /// not stored), so they may lack versions up to ``version``. Until one is sent no change is
    /// forwarded (it would apply to a tree they do not have), and the next snapshot read at
    /// ``version`` or later is sent even at ``version``; a read older than that is read again.
    var resend = false
    /// Reads again for an owed snapshot that came back older than ``version`` (bounded).
    var rereads = 0
    static let maxRereads = 8
    var buffered: [(version: Int, payload: String)] = []
    /// The most notifications kept while a snapshot is read; past it they are dropped and another
    /// snapshot is read.
    static let maxBuffered = 1_024
    /// The navigations waiting on the owner whose `navigationPending` this node forwarded, with
    /// its params and the subscribers it went to. The owner announces what waits again when a
    /// subscriber joins on some node (``Navigator/pendingAsked(_:)``); the same announcement again
    /// goes only to the subscribers here that have not heard it, so that none hears it twice. An
    /// entry goes with the navigation's `navigationEnded`.
    var announced: [String: (params: JSONValue, heard: Set<Int>)] = [:]
    /// The most entries of ``announced`` (a navigation whose end was never relayed, its owner gone,
    /// stays until then): past it they are forgotten, and a subscriber may hear one again.
    static let maxAnnounced = 1_024
    /// An audience nobody joins: a notification for one subscriber goes to it, with `also:`.
    let nobody: any Audience

    init(name: String, version: Int, audience: any Audience, nobody: any Audience) {
        self.name = name
        self.version = version
        self.subscribers = Listeners(audience)
        self.nobody = nobody
    }
}

/// Cluster mode (`--store postgres://…`), the navigator's side: sessions that arrive (takeover)
/// and leave (another node took them, or a commit could not be stored), and subscribers of
/// sessions other nodes own.
extension Navigator {
    func sessionsClaimed(_ claimed: [Session], own: Bool) {
        var names = Set<String>()
        for s in claimed {
            names.insert(s.name)
            numberNavigations(afterThoseOf: s)
            if let st = sessions[s.name] {
                guard st.session.version != s.version || st.session.idCounter != s.idCounter else { continue }
                cancelPending(of: st, "session \"\(s.name)\" was read again from PostgreSQL")
                sessions.removeValue(forKey: s.name)  // counted again under the owner read
                st.session = s
                sessions[s.name] = st
                sendSnapshot(of: s, to: st.audience)
                closeOrphanedRecoveryFlows(of: st)
                continue
            }
            let st = makeState(s)
            sessions[s.name] = st
            if let m = mirrors.removeValue(forKey: s.name) {
                for c in m.subscribers.clients.values where !c.isClosed {
                    st.subscribers.insert(c)
                    watch(c)
                }
                if m.version != s.version { sendSnapshot(of: s, to: st.audience) }
            }
            // Taken over: the navigations its recovery flows were presented for ended on the node
            // that ran them.
            closeOrphanedRecoveryFlows(of: st)
        }
        if own {
            for name in Array(sessions.keys) where !names.contains(name) {
                evict(name, because: NavError(.cancelled, "session \"\(name)\" is now owned by another navd node"))
            }
        }
    }

    func sessionsLost(_ names: [String]) {
        for name in names {
            evict(name, because: NavError(.cancelled, "session \"\(name)\" left this navd node (another node owns it, or its last change could not be stored)"))
        }
    }

    // MARK: Subscribers of other nodes' sessions

    func changeNotified(_ payload: String) {
        guard !mirrors.isEmpty, let p = try? JSONParser(maxDepth: config.writtenDepth).parse(payload),
              let (name, version) = Self.notifiedSession(p), sessions[name] == nil, let m = mirrors[name] else { return }
        if m.fetching {
            if m.buffered.count < Mirror.maxBuffered { m.buffered.append((version, payload)) }
            return
        }
        forward(version, payload, p, to: m)
    }

    /// The notifications of a session that other nodes relay besides `stackChanged`
    /// (``notifySubscribers(_:_:of:also:)``).
    static let relayed: Set<String> = ["navigationPending", "navigationEnded", "flowCompleted", "screenResult"]

    /// The session and version a store notification names: a commit's `stackChanged` params
    /// (`session`, `version`), or another notification relayed (`s`, and `v` the version it follows).
    private static func notifiedSession(_ p: JSONValue) -> (String, Int)? {
        if p["r"] != nil {
            guard let name = p["s"]?.stringValue, let version = p["v"]?.intValue else { return nil }
            return (name, version)
        }
        guard let name = p["session"]?.stringValue, let version = p["version"]?.intValue else { return nil }
        return (name, version)
    }

    /// Sends a relayed notification to the mirror's subscribers once they heard the version it
    /// follows; before that (a change not forwarded yet: too large, or missed) it waits for the
    /// snapshot read for them, and after it (`replayed`) it is dropped if that snapshot is older.
    private func forwardRelayed(_ version: Int, _ payload: String, _ p: JSONValue, to m: Mirror, replayed: Bool) {
        guard let method = p["r"]?.stringValue, Self.relayed.contains(method), let params = p["p"], case .object = params else { return }
        if version > m.version {
            if replayed { return }
            if m.buffered.count < Mirror.maxBuffered { m.buffered.append((version, payload)) }
            return refetch(m)
        }
        if method == "navigationPending" || method == "navigationEnded", let id = params["navigation"]?.stringValue {
            if method == "navigationEnded" {
                m.announced[id] = nil
            } else if let (said, heard) = m.announced[id], said == params, p["a"]?.boolValue ?? true {
                // Announced again for a subscriber that joined (here or on another node). A
                // notification sent anew with the same params (a link's two screens that show one
                // precondition, each asked about) says `a: false` and goes to every subscriber; one
                // from a navd before `a` says neither, and is taken as announced again.
                let newcomers = m.subscribers.clients.values.filter { !heard.contains($0.id) }
                for c in newcomers { publisher.notify(method, params, to: m.nobody, also: c) }
                m.announced[id]?.heard.formUnion(newcomers.map(\.id))
                return
            } else {
                if m.announced.count >= Mirror.maxAnnounced { m.announced = [:] }
                m.announced[id] = (params, Set(m.subscribers.clients.keys))
            }
        }
        publisher.notify(method, params, to: m.subscribers.audience)
    }

    /// Another node closed a session subscribers here follow: they are told (`sessionClosed`, at the
    /// last version they heard) and their subscription ends, as on the node that closed it.
    func sessionClosedElsewhere(_ name: String) {
        guard sessions[name] == nil, let m = mirrors.removeValue(forKey: name) else { return }
        announceClosed(name, version: m.version, to: &m.subscribers)
    }

    private func forward(_ version: Int, _ payload: String, _ p: JSONValue, to m: Mirror, replayed: Bool = false) {
        if p["r"] != nil { return forwardRelayed(version, payload, p, to: m, replayed: replayed) }
        if version <= m.version && !m.resend { return }
        guard version == m.version + 1, p["changes"] != nil, !m.resend else {
            refetch(m)
            return
        }
        m.version = version
        publisher.notify("stackChanged", JSONText(Array(payload.utf8)), to: m.subscribers.audience)
    }

    /// Reads the session from the store and sends its subscribers a snapshot, then the notifications
    /// that arrived meanwhile.
    func refetch(_ m: Mirror, resend: Bool = false) {
        if resend { m.resend = true }
        guard !m.fetching else { return }
        m.fetching = true
        placement.read(m.name) { [unowned self] r in
            m.fetching = false
            if case .success(let found) = r {
                // A read that failed keeps `resend` for the next (after the store is back).
                // (Past the rereads, the snapshot read is sent as it is; the next change's gap reads again.)
                if let s = found, s.version > m.version || (m.resend && (s.version == m.version || m.rereads >= Mirror.maxRereads)) {
                    m.version = s.version
                    m.resend = false
                    m.rereads = 0
                    sendSnapshot(of: s, to: m.subscribers.audience)
                } else if m.resend, found != nil {
                    // Read before the versions the subscribers may lack were stored: read again.
                    m.rereads += 1
                    m.buffered = []
                    return refetch(m)
                } else {
                    m.resend = false
                    m.rereads = 0
                }
            }
            // By version, and in the order they came within one (a change, then what followed it).
            let waiting = m.buffered.enumerated().sorted { ($0.element.version, $0.offset) < ($1.element.version, $1.offset) }
            m.buffered = []
            let parser = JSONParser(maxDepth: config.writtenDepth)
            for (_, (v, payload)) in waiting {
                if m.fetching {
                    // Another snapshot is read (a gap among them): the rest wait for it, as they came.
                    if m.buffered.count < Mirror.maxBuffered { m.buffered.append((v, payload)) }
                    continue
                }
                guard let p = try? parser.parse(payload) else { continue }
                forward(v, payload, p, to: m, replayed: true)
            }
        }
    }

    /// `stackChanged` with one `reset` change: the subscriber's tree becomes `s`'s.
    func sendSnapshot(of s: Session, to audience: any Audience, except: (any Client)? = nil) {
        var w = JSONWriter(capacity: 1024)
        w.raw("[{\"op\":\"reset\",\"root\":")
        s.root.write(into: &w, s.graph)
        w.raw(",\"removed\":[]}]")
        var c = JSONWriter(capacity: 512)
        c.raw("[[\"reset\",")
        s.root.writeCompact(into: &c, s.graph)
        c.raw(",[]]]")
        let ref = sessions[s.name]?.ref ?? 0
        publisher.notifyStackChanged({ StackChanged(session: s.name, ref: ref, version: s.version, changes: LentText(w.buffer),
                                                    compactChanges: LentText(c.buffer), visible: .current(s)) },
                                     to: audience, except: except)
    }

    /// `subscribe` to a session another node owns: answered with its tree as PostgreSQL holds it.
    func subscribeRemote(_ name: String, _ call: some Responder) {
        let c = call.client
        readStored(name, for: call) { [unowned self] s, reply in
            if let local = sessions[name] {
                // It arrived here meanwhile (a takeover): an ordinary subscription.
                subscribe(c, to: local)
                return reply.succeed(Snapshot(session: local.session, subscription: (.full, local.ref)))
            }
            let m = mirrors[name] ?? Mirror(name: name, version: s.version, audience: publisher.makeAudience(), nobody: publisher.makeAudience())
            mirrors[name] = m
            if !c.isClosed && m.subscribers.insert(c) {
                noteSubscribed(c, to: name)
                watch(c)
                // Subscribed again: it hears what waits again, after its snapshot.
                for id in m.announced.keys { m.announced[id]?.heard.remove(c.id) }
            }
            reply.succeed(Snapshot(session: s, subscription: (.full, nil)))
            // The navigations waiting there: their owner announces them again (`navigationPending`),
            // after the snapshot, through the store.
            placement.askPending(name)
            if s.version > m.version {
                m.version = s.version
                sendSnapshot(of: s, to: m.subscribers.audience, except: c)
            } else if s.version < m.version {
                refetch(m)
            }
        }
    }

    /// How often a session's waiting navigations are announced again for other nodes' new
    /// subscribers, at most: asks within it are answered together at its end, so that subscribing
    /// again and again elsewhere does not multiply what this node relays.
    static let pendingAskInterval: UInt64 = 100

    /// Another node asked for the navigations waiting in `name` (a subscriber joined there): if
    /// this node owns it, each one's last `navigationPending` goes to the store again, oldest
    /// first, after what was relayed before, so that the new subscriber hears what waits after the
    /// snapshot it got and before the end of each.
    func pendingAsked(_ name: String) {
        guard let st = sessions[name], !st.pending.isEmpty else { return }
        let now = loop.now
        if now >= st.pendingAnnouncedAgainAt &+ Self.pendingAskInterval {
            announcePendingAgain(st, at: now)
        } else {
            pendingAsks.insert(name)
            if pendingAskTimer == nil { answerPendingAsks(after: st.pendingAnnouncedAgainAt &+ Self.pendingAskInterval - now) }
        }
    }

    /// In `milliseconds`, the asks waiting whose session's interval has passed are answered; the
    /// others wait for the end of theirs.
    private func answerPendingAsks(after milliseconds: UInt64) {
        let t = Timer(loop: loop).labelled("cluster: waiting asks answered")
        pendingAskTimer = t
        t.start(milliseconds: max(1, milliseconds)) { [unowned self] in
            pendingAskTimer?.close()
            pendingAskTimer = nil
            let now = loop.now
            var next: UInt64?
            for name in pendingAsks {
                guard let st = sessions[name] else { pendingAsks.remove(name); continue }
                let due = st.pendingAnnouncedAgainAt &+ Self.pendingAskInterval
                if now >= due {
                    pendingAsks.remove(name)
                    announcePendingAgain(st, at: now)
                } else {
                    next = min(next ?? due, due)
                }
            }
            if let next { answerPendingAsks(after: next - now) }
        }
    }

    private func announcePendingAgain(_ st: SessionState, at now: UInt64) {
        st.pendingAnnouncedAgainAt = now
        for (_, p) in st.pending.sorted(by: { $0.key < $1.key }) {
            if let a = p.announcement { placement.relay("navigationPending", a, of: st.session, again: true) }
        }
    }

    private func cancelPending(of state: SessionState, _ why: String) {
        for p in state.pending.values {
            finish(p, .failure(NavError(.cancelled, "the navigation was cancelled: \(why)", data: ["navigation": .string(p.id)])))
        }
    }
}

extension Navigator {
    /// Stops serving `name` here: its pending navigations fail with `error`, its subscribers follow
    /// it through the store (as subscribers of a session another node owns).
    func evict(_ name: String, because error: NavError) {
        guard let state = sessions.removeValue(forKey: name) else { return }
        state.isClosed = true
        for p in state.pending.values {
            var e = error
            e.data["navigation"] = .string(p.id)
            finish(p, .failure(e))
        }
        guard !state.subscribers.isEmpty else { return }
        // Its subscribers were last told the version the store holds from this node (the session
        // in memory may be ahead: a commit refused), and may have missed what another node committed
        // meanwhile (its notifications are not forwarded while the session is held here): the
        // session is read from the store, and a snapshot sent if it is newer.
        let told = placement.storedVersion(of: name) ?? state.session.version
        let m = mirrors[name] ?? Mirror(name: name, version: told, audience: publisher.makeAudience(), nobody: publisher.makeAudience())
        mirrors[name] = m
        for c in state.subscribers.clients.values {
            if !c.isClosed {
                m.subscribers.insert(c)
                watch(c)
            }
            // The state may outlive its eviction (a client's last-session cache): it keeps no one.
            state.subscribers.remove(c.id)
        }
        refetch(m)
    }
}

extension Navigator {
    /// A commit was not stored and the notifications waiting for it were dropped, some that did not
    /// depend on it too (a snapshot, another node's change, a change made while it was written):
    /// every session that clients `ids` follow is sent to its subscribers again as a snapshot (from
    /// memory, or read from the store for other nodes' sessions). The version may be one a
    /// subscriber has; a snapshot of it changes nothing.
    func notificationsDropped(for ids: Set<Int>) {
        guard !ids.isEmpty else { return }
        for st in sessions.values where st.subscribers.clients.keys.contains(where: ids.contains) {
            sendSnapshot(of: st.session, to: st.audience)
        }
        for m in mirrors.values where m.subscribers.clients.keys.contains(where: ids.contains) {
            refetch(m, resend: true)
        }
    }

    /// The store is back (a reconnection, or its sessions read again): notifications sent
    /// meanwhile may be lost, so every session other nodes own that subscribers here follow is read
    /// again (a snapshot when it is newer).
    func refetchMirrors() {
        for m in mirrors.values { refetch(m) }
    }

    func dropMirrorSubscriber(_ name: String, _ c: any Client) {
        guard let m = mirrors[name] else { return }
        m.subscribers.remove(c.id)
        if m.subscribers.isEmpty && !m.fetching { mirrors[name] = nil }
    }
}

extension Navigator {
    /// `unsubscribe` from a session another node owns: answered with its tree as PostgreSQL holds it.
    func unsubscribeRemote(_ name: String, _ call: some Responder) {
        dropMirrorSubscriber(name, call.client)
        noteUnsubscribed(call.client, from: name)
        readStored(name, for: call) { s, reply in reply.succeed(Snapshot(session: s)) }
    }

    /// Reads `name` as PostgreSQL holds it and answers `call` later: its failure, or `unknownTarget`
    /// when no node has it, or what `then` does with the session.
    private func readStored(_ name: String, for call: some Responder, _ then: @escaping (Session, any Answer) -> Void) {
        let reply = call.deferred()
        placement.read(name) { r in
            switch r {
            case .failure(let e): reply.fail(e)
            case .success(nil):
                reply.fail(RPCError(.unknownTarget, "no session \"\(name)\"; open it with session.open {name: \"\(name)\"}", data: ["session": .string(name)]))
            case .success(let s?): then(s, reply)
            }
        }
    }
}
