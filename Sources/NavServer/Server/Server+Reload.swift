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
        graphAnswers = GraphAnswers()
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

/// The JSON text of answers that depend on the graph alone (`graph.describe`, `graph.export`),
/// written the first time one is asked for and kept until the graph is replaced (a reload starts
/// anew): a graph of 5,000 screens describes itself in 1.2 MB, and writing that held the loop
/// about 4 ms at each call. The graph is held strongly: a weak reference would give it a side
/// table and slow every retain and release of it on the request path.
struct GraphAnswers {
    private var texts: [String: JSONText] = [:]
    private var graph: NavigationGraph?

    /// The text of the answer `key` for `graph`, from `make` the first time.
    mutating func text(_ key: String, for graph: NavigationGraph, _ make: () -> JSONValue) -> JSONText {
        if self.graph !== graph {
            texts = [:]
            self.graph = graph
        }
        if let t = texts[key] { return t }
        let t = JSONText(make())
        texts[key] = t
        return t
    }
}

extension Server {
    /// The text of `graph.describe`'s or `graph.export`'s answer `key` for the graph served now.
    func graphAnswer(_ key: String, _ make: (NavigationGraph) -> JSONValue) -> JSONText {
        let g = graph
        return graphAnswers.text(key, for: g) { make(g) }
    }
}
