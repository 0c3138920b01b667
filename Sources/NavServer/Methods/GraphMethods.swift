import JSON
import NavGraph
import RPC

/// `graph.describe` and `graph.reload`.
enum GraphMethods {
    static func register(in methods: MethodTable, _ server: Server) {
        /// `graph.describe`: the resolved graph, as `navd graph --format json` prints it.
        methods.register("graph.describe", params: [], changes: false, session: .none) { [server] call in
            call.succeed(server.graph.describe())
        }
        /// `graph.export {format?}`: the graph navd serves now, drawn as `navd graph` draws a
        /// directory's (`dot`, graphviz's language, the only format so far): what front-ends draw,
        /// so that their picture is the live graph, also after a reload.
        methods.register("graph.export", ExportParam.self, changes: false, session: .none) { [server] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ExportParam>(call)
                let format = try p.string(.format) ?? "dot"
                guard format == "dot" else {
                    throw .invalidParams("`graph.export` writes the graph as \"dot\" (graphviz); \"\(format.prefix(40))\" is not a format it knows",
                                         data: ["param": "format"])
                }
                return ["format": "dot", "graph": .string(server.graph.dot())]
            }
        }
        /// `graph.reload {path?, force?}` (also SIGHUP): load and validate the graph again and swap it
        /// in between two commits. An invalid graph changes nothing. Live nodes whose coordinator the
        /// new graph lacks refuse the reload, unless `force`, which removes them with ordinary
        /// `stackChanged` notifications. Pending navigations fail with `conflict`.
        methods.register("graph.reload", ReloadParam.self, changes: true, session: .none, roles: [adminRole]) { [server] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ReloadParam>(call)
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

enum ReloadParam: Int, ParamName {
    case path, force
    static let table = ParamTable(Self.self)
}

enum ExportParam: Int, ParamName {
    case format
    static let table = ParamTable(Self.self)
}
