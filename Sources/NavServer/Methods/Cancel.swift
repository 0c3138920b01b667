import JSON
import NavGraph
import NavigationCore
import RPC

/// `cancel`, declared in `Protocol/methods/cancel.json`: its spec and param enum are
/// generated from that file.
enum CancelMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.cancel, CancelParam.self) { call in
            call.answer { () throws(RPCError) -> Cancelled in
                let p = try Params<CancelParam>(call)
                return n.cancel(CancelRequest(navigation: try p.requiredString(.navigation, "the id a navigate reply or navigationPending notification gave")))
            }
        }
    }
}
