import JSON
import NavGraph
import NavigationCore
import RPC

extension Server {
    /// `graph.reload {path?, force?}` (also SIGHUP): load and validate the graph again and swap it
    /// in between two commits. An invalid graph changes nothing. Live nodes whose coordinator the
    /// new graph lacks refuse the reload, unless `force`, which removes them with ordinary
    /// `stackChanged` notifications. Pending navigations fail with `conflict`.
    func registerReloadMethod() {
        methods.register("graph.reload", ReloadParam.self, changes: true, session: .none) { [self] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ReloadParam>(call)
                try Policy.requireAdmin(call.connection, "`graph.reload`")
                let path = try p.string(.path)
                if path != nil && !self.policy.allowReloadPath {
                    throw .accessDenied("`graph.reload` reloads the graph navd was started with; naming a directory (\"path\") needs `allowReloadPath: true` in the policy file. Send graph.reload without \"path\", or restart navd with --graph DIR",
                                        data: ["param": "path"])
                }
                return self.reloadGraph(path: path, force: try p.bool(.force) ?? false)
            }
        }
    }

    /// Reloads from `path` (default: where the graph came from); answers `{ok, errors, …}`.
    public func reloadGraph(path: String? = nil, force: Bool = false) -> JSONValue {
        guard let loader = graphLoader else {
            return ["ok": false, "errors": ["this navd has no graph loader"]]
        }
        let source = path ?? graphPath
        let (loaded, diagnostics) = loader(source)
        guard let newGraph = loaded else {
            let errors = diagnostics.errors.map { JSONValue.string($0.description) }
            logger.warning("graph reload refused: the new graph has errors", metadata: ["navd.errors": "\(errors.count)"])
            return ["ok": false, "errors": .array(errors)]
        }
        if let problem = config.session.problem(with: newGraph) {
            return ["ok": false, "errors": [.string("the new graph cannot be served within navd's limits: \(problem)")]]
        }
        // Live nodes the new graph cannot show: their coordinator is gone, or their params no longer
        // match its setup (a restored session is checked as a request is).
        var missing: [(SessionState, Node)] = []
        var problems: [String] = []
        for name in navigator.sessions.keys.sorted() {
            let state = navigator.sessions[name]!
            state.session.root.forEach { n in
                guard n.coordinator >= 0 else { return }
                let shown = graph.coordinators[n.coordinator].name
                guard let c = newGraph.coordinator(named: shown) else {
                    missing.append((state, n))
                    problems.append("session \"\(name)\": node \(n.id) shows `\(shown)`, which the new graph does not declare")
                    return
                }
                if let v = c.setup?.validate(n.params) {
                    missing.append((state, n))
                    problems.append("session \"\(name)\": the params of node \(n.id) do not match the new setup of `\(shown)`: \(v.message)")
                }
            }
        }
        if !missing.isEmpty && !force {
            let errors = problems.map(JSONValue.string)
            return ["ok": false, "errors": .array(errors),
                    "hint": "dismiss those nodes first, or reload with force: true to remove them"]
        }
        // Pending navigations were planned against the old graph.
        for nav in Array(navigator.pending.values) {
            navigator.finish(nav, .failure(NavError(.conflict, "the graph was reloaded while the navigation was pending; navigate again", data: ["navigation": .string(nav.id)])))
        }
        // Forced: remove the missing nodes with ordinary commits, against the old graph.
        var removed = 0
        for (state, node) in missing where state.session.node(node.id) != nil {
            let commit: Commit
            do throws(NavError) {
                commit = try state.session.dismiss(node.id)
            } catch {
                commit = state.session.resetToRoot()
            }
            removed += commit.removedNumbers.count
            navigator.publish(commit, in: state)
        }
        // Rebuild every session's nodes against the new graph (coordinator indices change).
        for state in navigator.sessions.values {
            let s = state.session
            let rebuilt: Session
            do throws(NavError) {
                rebuilt = try Session(restoring: s.name, graph: newGraph, root: s.root.json(graph), version: s.version,
                                      nextId: s.idCounter, facts: .object(s.sortedFacts), limits: config.session)
            } catch {
                logger.error("session could not be rebuilt after reload; it starts afresh",
                             metadata: ["navd.session": "\(s.name)", "navd.error": "\(error.message)"])
                rebuilt = Session(name: s.name, graph: newGraph)
                rebuilt.limits = config.session
            }
            rebuilt.owner = s.owner
            rebuilt.adoptKeys(of: s)
            state.session = rebuilt
            state.flowStarters = [:]
            // A navigate's `then` names its target by index: find it again by name (or drop it).
            state.flowThens = state.flowThens.compactMapValues { t in
                newGraph.coordinator(named: graph.coordinators[t.to].name).map { NavigationSpec(to: $0.index, by: t.by, with: t.with) }
            }
            store.sessionChanged(rebuilt)
        }
        navigator.graph = newGraph
        if path != nil { graphPath = path }
        graphVersion += 1
        broadcast(method: "graphReloaded", params: ["version": .int(graphVersion)], to: connections.values)
        logger.info("graph reloaded", metadata: ["navd.graph": "\(source ?? "embedded example")", "navd.coordinators": "\(newGraph.coordinators.count)"])
        return ["ok": true, "errors": [], "version": .int(graphVersion), "removedNodes": .int(removed),
                "warnings": .array(diagnostics.warnings.map { .string($0.description) })]
    }
}

enum ReloadParam: Int, ParamName {
    case path, force
    static let table = ParamTable(Self.self)
}
