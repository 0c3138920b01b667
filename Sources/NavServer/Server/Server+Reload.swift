import JSON
import NavGraph
import NavigationCore

/// `graph.reload` and SIGHUP: the graph is loaded and checked here; what happens to the sessions is
/// the navigator's (``Navigator/swapGraph(to:force:)``).
extension Server {
    /// Reloads from `path` (default: where the graph came from); answers `{ok, errors, …}`.
    public func reloadGraph(path: String? = nil, force: Bool = false) -> JSONValue {
        guard let loader = graphLoader else {
            return ["ok": false, "errors": ["this navd has no graph loader"]]
        }
        let source = path ?? graphPath
        // `--watch-graph` reloads only what changed since this load (its files as they are now).
        if let w = graphWatch, let source, source == w.path { w.fingerprint = GraphLoader.fingerprint(directory: source) }
        let (loaded, diagnostics) = loader(source)
        guard let newGraph = loaded else {
            let errors = diagnostics.errors.map { JSONValue.string($0.description) }
            logger.warning("graph reload refused: the new graph has errors", metadata: ["navd.errors": "\(errors.count)"])
            announceRefusal(errors, hint: nil)
            return ["ok": false, "errors": .array(errors)]
        }
        if let problem = config.session.problem(with: newGraph) {
            let errors: [JSONValue] = [.string("the new graph cannot be served within navd's limits: \(problem)")]
            announceRefusal(errors, hint: nil)
            return ["ok": false, "errors": .array(errors)]
        }
        let removed: Int
        switch navigator.swapGraph(to: newGraph, force: force) {
        case .refused(let problems):
            let errors = problems.map(JSONValue.string)
            let hint = "dismiss those nodes first, or reload with force: true to remove them (a session whose tabs changed is reset to the new root)"
            announceRefusal(errors, hint: hint)
            return ["ok": false, "errors": .array(errors), "hint": .string(hint)]
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
        return ["ok": true, "errors": [], "version": .int(graphVersion), "removedNodes": .int(removed),
                "warnings": .array(diagnostics.warnings.map { .string($0.description) })]
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
    private func announceRefusal(_ errors: [JSONValue], hint: String?) {
        var params: JSONObject = ["errors": .array(Array(errors.prefix(Server.refusalErrorsSent))), "count": .int(errors.count)]
        if let hint { params["hint"] = .string(hint) }
        transport.broadcast(method: "graphReloadRefused", params: .object(params), to: subscribedConnections)
    }
}

