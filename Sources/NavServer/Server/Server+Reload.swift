import JSON
import NavGraph
import NavigationCore

/// One reload asked and not yet answered (``Server/reloadGraph(path:force:then:)``).
struct WaitingReload {
    let path: String?
    let force: Bool
    let done: (JSONValue) -> Void
}

/// `graph.reload`, `--watch-graph` and SIGHUP: the graph is loaded and checked on libuv's thread
/// pool, one load at a time, while the loop serves every client; the new graph is swapped in on
/// the loop. What happens to the sessions is the navigator's (``Navigator/swapGraph(to:force:)``).
extension Server {
    /// The most reloads that may wait for the one loading (those asking the same are answered by
    /// one load, so only a client naming many directories gets near it).
    static let maxWaitingReloads = 64

    /// Whether another reload may wait (``maxWaitingReloads``).
    var mayWaitForReload: Bool { waitingReloads.count < Server.maxWaitingReloads }

    /// Reloads from `path` (default: where the graph came from) and answers `{ok, errors, …}` to
    /// `done`, on the loop, once the graph is loaded and swapped in (or refused). A reload asked
    /// while another loads waits for it; those waiting that ask the same (path and force) are
    /// answered by one load, which reads the files as they are after the one before.
    public func reloadGraph(path: String? = nil, force: Bool = false, then done: @escaping (JSONValue) -> Void) {
        guard graphLoader != nil else {
            return done(["ok": false, "errors": ["this navd has no graph loader"]])
        }
        waitingReloads.append(WaitingReload(path: path, force: force, done: done))
        startNextReload()
    }

    private func startNextReload() {
        guard !reloadLoading, let first = waitingReloads.first, let loader = graphLoader else { return }
        let same = { (r: WaitingReload) in r.path == first.path && r.force == first.force }
        let answered = waitingReloads.filter(same)
        waitingReloads.removeAll(where: same)
        reloadLoading = true
        let source = first.path ?? graphPath
        // `--watch-graph` reloads only what changed since this load (its files as they are now).
        if let w = graphWatch, let source, source == w.path { w.fingerprint = GraphLoader.fingerprint(directory: source) }
        loop.runInBackground("graph loaded, swapped in", { loader(source) }, then: { [self] loaded in
            reloadLoading = false
            let r: JSONValue
            if !phase.isServing {
                r = ["ok": false, "errors": ["navd is stopping; the graph in force stays"]]
            } else if let (graph, diagnostics) = loaded {
                r = swapIn(graph, diagnostics, path: first.path, source: source, force: first.force)
            } else {
                r = ["ok": false, "errors": ["the graph could not be loaded: libuv's thread pool did not run the load"]]
            }
            for w in answered { w.done(r) }
            if phase.isServing { startNextReload() }
        })
    }

    /// The graph a load made swapped in, or why not.
    private func swapIn(_ loaded: NavigationGraph?, _ diagnostics: Diagnostics, path: String?, source: String?, force: Bool) -> JSONValue {
        guard let newGraph = loaded else {
            logger.warning("graph reload refused: the new graph has errors", metadata: ["navd.errors": "\(diagnostics.errors.count)"])
            return refused(diagnostics.errors.map(\.description), hint: nil)
        }
        if let problem = config.session.problem(with: newGraph) {
            return refused(["the new graph cannot be served within navd's limits: \(problem)"], hint: nil)
        }
        let removed: Int
        switch navigator.swapGraph(to: newGraph, force: force) {
        case .refused(let problems):
            return refused(problems, hint: "dismiss those nodes first, or reload with force: true to remove them (a session whose tabs changed is reset to the new root)")
        case .swapped(let n):
            removed = n
        }
        dispatcher.decoding = dispatcher.decoding.with(graph: newGraph)
        if let path, path != graphPath {
            graphPath = path
            // `--watch-graph` follows the graph to its new directory.
            if graphWatch != nil {
                do { try watchGraph() } catch { logger.warning("the new graph's directory cannot be watched", metadata: ["navd.graph": "\(path)", "navd.error": "\(error)"]) }
            }
        }
        graphVersion += 1
        // A notification to subscribers, as the contract lists it: each connection subscribed to some
        // session hears it once; the others (the caller included) are not sent what they did not ask for.
        transport.broadcast(method: "graphReloaded", params: ["version": .int(graphVersion)], to: subscribedConnections)
        logger.info("graph reloaded", metadata: ["navd.graph": "\(source ?? "embedded example")", "navd.coordinators": "\(newGraph.coordinators.count)"])
        var answer: JSONObject = ["ok": true, "errors": [], "version": .int(graphVersion), "removedNodes": .int(removed)]
        Server.list(diagnostics.warnings.map(\.description), as: "warnings", counted: "warningCount", into: &answer)
        return .object(answer)
    }

    /// The most errors, and the most warnings, a reload's answer lists (`errorCount` and
    /// `warningCount` say how many there were when there were more): a graph of thousands of
    /// screens no link reaches has a warning for each, and the answer must fit in `--max-output`.
    static let diagnosticsAnswered = 100

    /// `items` as the array `key` of `answer`, its first ``diagnosticsAnswered``, and their number
    /// as `countKey` when there were more.
    private static func list(_ items: [String], as key: String, counted countKey: String, into answer: inout JSONObject) {
        answer[key] = .array(items.prefix(diagnosticsAnswered).map(JSONValue.string))
        if items.count > diagnosticsAnswered { answer[countKey] = .int(items.count) }
    }

    /// A reload that leaves the graph in force: told to those who hear reloads, and answered.
    private func refused(_ errors: [String], hint: String?) -> JSONValue {
        announceRefusal(errors, hint: hint)
        var answer: JSONObject = ["ok": false]
        Server.list(errors, as: "errors", counted: "errorCount", into: &answer)
        if let hint { answer["hint"] = .string(hint) }
        return .object(answer)
    }

    /// Each connection subscribed to some session, once: who hears the graph's reloads.
    private var subscribedConnections: some Sequence<Connection> {
        dispatcher.peers.values.lazy.filter { !$0.subscriptions.isEmpty }.map(\.connection)
    }

    /// The most diagnostics a `graphReloadRefused` carries (`count` says how many there were).
    static let refusalErrorsSent = 20

    /// A reload that left the graph in force, told to those who hear reloads (`graphReloadRefused`):
    /// a front-end shows a developer why the graph they saved is not served (under `--watch-graph`,
    /// or a SIGHUP, nobody else is told), as a language server publishes diagnostics.
    private func announceRefusal(_ errors: [String], hint: String?) {
        var params: JSONObject = ["errors": .array(errors.prefix(Server.refusalErrorsSent).map(JSONValue.string)), "count": .int(errors.count)]
        if let hint { params["hint"] = .string(hint) }
        transport.broadcast(method: "graphReloadRefused", params: .object(params), to: subscribedConnections)
    }
}

