import JSON
import NavGraph
import NavigationCore
import RPC

/// `subscribe`, declared in `Protocol/methods/subscribe.json`: its spec and param enum are
/// generated from that file.
enum SubscribeMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.subscribe, SubscribeParam.self) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<SubscribeParam>(call)
                // Cluster mode: a session another node owns is heard here through the store.
                if n.publishesChanges, n.isRemote(try p.string(.session) ?? "main") { return n.subscribeRemote(try p.string(.session) ?? "main", call) }
                let state = try n.state(p.given(.session), for: call.client)
                n.subscribe(call.client, to: state)
                call.succeed(Snapshot(session: state.session))
            }
        }
    }
}
