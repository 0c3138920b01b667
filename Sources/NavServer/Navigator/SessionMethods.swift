import JSON
import NavGraph
import NavigationCore
import RPC
#if canImport(Glibc)
import Glibc
#endif

/// The navigator's side of the methods that read a session, change its params or facts, open and
/// close sessions, provide preconditions and cancel navigations: each decoded by the methods layer.
extension Navigator {
    /// `update {node, with, push?}`: merges `with` into a live screen's params, published as an
    /// `update`; `push` keeps the params it had for `dismiss` to restore.
    func update(_ r: UpdateRequest, by client: some Client) throws(NavError) -> Updated {
        let c = try r.state.session.update(r.node, with: r.with, push: r.push, caller: Caller(lending: client.roleHolder), maxBytes: config.maxMessage)
        publish(c, in: r.state)
        return Updated(version: c.version, node: c.node.map { $0.json(graph) } ?? .null)
    }

    /// `link.resolve {node?}`: the URL of the visible path (or of `node`).
    func resolveLink(_ r: LinkResolveRequest) throws(NavError) -> ResolvedLink {
        let (url, pattern) = try r.state.session.resolveLink(r.node)
        return ResolvedLink(url: url, link: pattern)
    }

    /// `context.set {facts}`: checked whole before anything changes (a refused request sets no fact).
    func setFacts(_ r: ContextSetRequest, by client: some Client) throws(NavError) -> Facts {
        try requireOwner(client, r.state.session, "`context.set`")
        for (k, _) in r.facts {
            if k.isEmpty {
                throw .invalidParams("a fact name in \"facts\" is empty; name each fact, such as \"loggedIn\" or \"cart.items\"", data: ["param": "facts"])
            }
            try config.checkName(k, "the fact name \"\(k.prefix(40))\"", param: "facts")
        }
        try r.state.session.setFacts(r.facts)
        r.state.session.syncAccount()
        store.factsChanged(r.state.session, changes: r.facts)
        return Facts(facts: r.state.session.sortedFacts)
    }

    /// `context.get {facts?}`: every fact, or those named.
    func facts(_ r: ContextGetRequest) -> Facts {
        guard let names = r.names else { return Facts(facts: r.state.session.sortedFacts) }
        var o = JSONObject()
        for n in names { if let v = r.state.session.facts[n] { o.append(n, v) } }
        return Facts(facts: o)
    }

    /// `session.open {name}`: the session, made (and owned by `client`'s uid) if it is not there,
    /// within `--max-sessions` and the uid's share.
    func openSession(_ r: SessionNameRequest, by client: some Client) throws(NavError) -> SessionState {
        let name = r.name
        guard !name.isEmpty else {
            throw .invalidParams("`session.open`'s \"name\" is empty; give the session a name such as \"test-1\"", data: ["param": "name"])
        }
        try config.checkName(name, "the session name", param: "name")
        if let s = sessions[name] { return s }
        if let bad = firstUnplainCharacter(name, dots: true) {
            throw .invalidParams("the session name \"\(name.unicodeScalars.count > 64 ? String(name.prefix(64)) + "…" : name)\" holds \(bad); session names are letters, digits, `_`, `-` and `.`, such as user-42 or a3f9.c1 (front-ends, shells and terminals show them as they are)",
                                 data: ["param": "name"])
        }
        let uid = client.uid ?? getuid()
        let verdict = config.sessions.verdict(for: uid, in: sessions.byUid)
        if verdict != .admitted {
            throw config.sessions.refusal(verdict, uid: uid, in: sessions.byUid, what: "sessions",
                                          advice: "close sessions you no longer need with session.close")
        }
        let session = Session(name: name, graph: graph)
        if uid != getuid() { session.owner = uid }
        let state = makeState(session)
        sessions[name] = state
        store.sessionOpened(session)
        coverage.forEachActive { $0.sessionStarted() }
        return state
    }

    /// `session.close {name}`: its pending navigations are cancelled; its subscribers are told
    /// (`sessionClosed`, their mirrors hold a tree that no longer exists) and forget it.
    @discardableResult
    func closeSession(_ r: SessionNameRequest, by client: some Client) throws(NavError) -> Done {
        let name = r.name
        guard name != "main" else {
            throw NavError(.notAllowed, "session \"main\" always exists and cannot be closed", data: ["session": "main"])
        }
        let state = try self.state(name)
        try requireOwner(client, state.session, "`session.close`")
        for p in state.pending.values {
            finish(p, .failure(NavError(.cancelled, "the navigation was cancelled: its session \"\(name)\" was closed", data: ["navigation": .string(p.id)])))
        }
        // The state may outlive the session (a client's last-session cache): it keeps no one.
        announceClosed(name, version: state.session.version, to: &state.subscribers)
        keyBudget.closed(state)
        state.isClosed = true
        sessions[name] = nil
        store.sessionClosed(name)
        return Done()
    }

    /// Tells `listeners` that session `name` closed at `version` (`sessionClosed`) and ends their
    /// subscription to it.
    func announceClosed(_ name: String, version: Int, to listeners: inout Listeners) {
        guard !listeners.isEmpty else { return }
        publisher.notify("sessionClosed", JSONValue.object(["session": .string(name), "version": .int(version)]), to: listeners.audience)
        for c in listeners.clients.values {
            noteUnsubscribed(c, from: name)
            listeners.remove(c.id)
        }
    }

    /// `session.list {after?, limit?}`: the sessions, a page at a time (`limit`, at most
    /// ``sessionListPage``): names of sessions opened after the cursor `after`, each page sorted by
    /// name, with `next` when there may be more. In cluster mode every session of the cluster, and
    /// its owner, in one answer.
    func sessionList(_ r: SessionListRequest) -> SessionPage {
        placement.list(r, served: sessions)
    }

    /// The most names one `session.list` answers (10,000 names of at most `--max-name` bytes stay
    /// well within `--max-output`).
    static let sessionListPage = 10_000

    /// `provide {preconditions}` (the caller checked the role): answers the names as kept
    /// (preconditions qualified, other names, recovery providers, as given).
    func provide(_ r: ProvideRequest, by client: some Client) throws(NavError) -> Done {
        let names = r.names
        guard !names.isEmpty else {
            throw .invalidParams("`provide` needs \"preconditions\": the names of the provider preconditions (or recovery providers) this client evaluates", data: ["param": "preconditions"])
        }
        for n in names { try config.checkName(n, "the provided name \"\(n.prefix(40))\"", param: "preconditions") }
        guard names.count <= config.maxBatch else {
            throw .limitExceeded("`provide` names \(names.count) preconditions; one call may name at most \(config.maxBatch) (the --max-batch limit)",
                                 limit: "--max-batch", max: config.maxBatch)
        }
        let resolved = names.map { graph.precondition(named: $0)?.name ?? $0 }
        try checkProvidedRoom(client, adding: resolved)
        addProvider(resolved, client)
        let notAsked = resolved.filter { !graph.providerNames.contains($0) }
        return Done(preconditions: resolved, notAsked: notAsked.isEmpty ? nil : notAsked)
    }

    /// `cancel {navigation}`: whether a pending navigation of that id was cancelled.
    func cancel(_ r: CancelRequest) -> Cancelled {
        guard let p = pending[r.navigation] else { return Cancelled(cancelled: false) }
        finish(p, .failure(NavError(.cancelled, "the navigation was cancelled by a `cancel` request", data: ["navigation": .string(r.navigation)])))
        return Cancelled(cancelled: true)
    }
}
