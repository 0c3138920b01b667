import JSON
import NavGraph
import NavigationCore
import RPC

/// `provide`, declared in `Protocol/methods/provide.json`: its spec and param enum are
/// generated from that file.
enum ProvideMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.provide, ProvideParam.self) { call in
            call.answer { () throws(RPCError) -> Done in
                let r = ProvideRequest(names: try Params<ProvideParam>(call).stringArray(.preconditions) ?? [])
                return try asRPC { () throws(NavError) in try n.provide(r, by: call.client) }
            }
        }
    }
}
