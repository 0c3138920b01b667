import JSON
import NavGraph
import RPC

/// `graph.reload {path?, force?}` (also SIGHUP): load and validate the graph again and swap it
    /// in between two commits. An invalid graph changes nothing. Live nodes whose coordinator the
    /// new graph lacks refuse the reload, unless `force`, which removes them with ordinary
    /// `stackChanged` notifications. Pending navigations fail with `conflict`.
///
/// Declared in `Protocol/methods/graph.reload.json` (its spec and param enum are generated from it).
enum GraphReloadMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.graphReload, GraphReloadParam.self) { [server] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<GraphReloadParam>(call)
                try p.acceptUnused(.session)
                let path = try p.string(.path)
                if path != nil && !server.policy.allowReloadPath {
                    throw .accessDenied("`graph.reload` reloads the graph navd was started with; naming a directory (\"path\") needs `allowReloadPath: true` in the policy file. Send graph.reload without \"path\", or restart navd with --graph DIR",
                                        data: ["param": "path"])
                }
                return server.reloadGraph(path: path, force: try p.bool(.force) ?? false)
            }
        }
    }
}
