import JSON
import NavGraph
import NavigationCore
import RPC

/// `context.get`, declared in `Protocol/methods/context.get.json`: its spec and param enum are
/// generated from that file.
enum ContextGetMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.contextGet, ContextGetParam.self) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ContextGetParam>(call)
                let state = try n.state(p.given(.session), for: call.client)
                return n.facts(try p.stringArray(.facts), in: state)
            }
        }
    }
}
