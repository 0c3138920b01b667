import JSON
import NavGraph
import NavigationCore
import RPC

/// `subscribe`, declared in `Protocol/methods/subscribe.json`: its spec and param enum are
/// generated from that file.
enum SubscribeMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        // Cluster mode: a session another node owns is heard here through the store (dispatch
        // chooses the remote handler).
        let remote: MethodTable.Handler = { call in
            call.answerOrRun { () throws(RPCError) in
                let name = try Params<SubscribeParam>(call).string(.session) ?? "main"
                try asRPC { () throws(NavError) in try n.checkSubscriptionRoom(call.client, for: name) }
                n.subscribeRemote(name, call)
            }
        }
        methods.register(.subscribe, SubscribeParam.self, remote: remote) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<SubscribeParam>(call)
                let form = try NotificationForm(param: p.string(.notifications), method: "subscribe")
                    ?? (call.peer.prefersCompact ? .compact : .full)
                let state = try call.session(p)
                try asRPC { () throws(NavError) in try n.checkSubscriptionRoom(call.client, for: state.session.name) }
                n.subscribe(call.client, to: state, compact: form == .compact)
                // What waits now: a front-end subscribing meanwhile shows it before its next notification.
                let pending = state.pending.sorted { $0.key < $1.key }.compactMap { $0.value.announcement }
                call.succeed(Snapshot(session: state.session, subscription: (form, state.ref), pending: pending))
            }
        }
    }
}
