import JSON
import NavGraph
import NavigationCore
import RPC

/// `unsubscribe`, declared in `Protocol/methods/unsubscribe.json`: its spec and param enum are
/// generated from that file.
enum UnsubscribeMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        let remote: MethodTable.Handler = { call in
            call.answerOrRun { () throws(RPCError) in n.unsubscribeRemote(try Params<UnsubscribeParam>(call).string(.session) ?? "main", call) }
        }
        methods.register(.unsubscribe, UnsubscribeParam.self, remote: remote) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<UnsubscribeParam>(call)
                let state = try call.session(p)
                n.unsubscribe(call.client, from: state)
                call.succeed(Snapshot(session: state.session))
            }
        }
    }
}
