import JSON
import NavGraph
import NavigationCore
import RPC

/// `tree`, declared in `Protocol/methods/tree.json`: its spec and param enum are
/// generated from that file.
enum TreeMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.tree, TreeParam.self) { call in
            call.answer { () throws(RPCError) -> Snapshot in
                let p = try Params<TreeParam>(call)
                return Snapshot(session: try call.session(p).session)
            }
        }
    }
}
