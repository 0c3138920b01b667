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
            call.answer { () throws(RPCError) -> Facts in
                let p = try Params<ContextGetParam>(call)
                return n.facts(ContextGetRequest(state: try call.session(p), names: try p.stringArray(.facts)))
            }
        }
    }
}
