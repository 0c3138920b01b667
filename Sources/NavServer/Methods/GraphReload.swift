import JSON
import NavGraph
import RPC

/// `graph.reload {path?, force?}` (also SIGHUP): load and validate the graph again (on libuv's
    /// thread pool: every client is served meanwhile) and swap it in between two commits. An invalid graph changes nothing. Live nodes whose coordinator the
    /// new graph lacks refuse the reload, unless `force`, which removes them with ordinary
    /// `stackChanged` notifications. Pending navigations fail with `conflict`.
///
/// Declared in `Protocol/methods/graph.reload.json` (its spec and param enum are generated from it).
enum GraphReloadMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.graphReload, GraphReloadParam.self) { [server] call in
            do throws(RPCError) {
                let p = try Params<GraphReloadParam>(call)
                try p.acceptUnused(.session)
                let path = try p.string(.path)
                if path != nil && !server.policy.allowReloadPath {
                    throw .accessDenied("`graph.reload` reloads the graph navd was started with; naming a directory (\"path\") needs `allowReloadPath: true` in the policy file. Send graph.reload without \"path\", or restart navd with --graph DIR",
                                        data: ["param": "path"])
                }
                let force = try p.bool(.force) ?? false
                guard server.mayWaitForReload else {
                    throw .limitExceeded("\(Server.maxWaitingReloads) reloads already wait for the graph being loaded; ask again once they are answered (reloads of the same directory wait as one)",
                                         limit: "waiting reloads", max: Server.maxWaitingReloads)
                }
                let reply = call.deferred()
                server.reloadGraph(path: path, force: force) { reply.succeed($0) }
            } catch {
                call.fail(error)
            }
        }
    }
}
