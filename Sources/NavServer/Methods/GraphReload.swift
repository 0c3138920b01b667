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
        let removed: Int
        switch navigator.swapGraph(to: newGraph, force: force) {
        case .refused(let problems):
            return ["ok": false, "errors": .array(problems.map(JSONValue.string)),
                    "hint": "dismiss those nodes first, or reload with force: true to remove them"]
        case .swapped(let n):
            removed = n
        }
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
