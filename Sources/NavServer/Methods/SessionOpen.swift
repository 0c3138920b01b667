import JSON
import NavGraph
import NavigationCore
import RPC

/// `session.open`, declared in `Protocol/methods/session.open.json`: its spec and param enum are
/// generated from that file.
enum SessionOpenMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.sessionOpen, SessionOpenParam.self) { call in
            call.answer { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionOpenParam>(call)
                let given = try p.string(.name), alias = try p.string(.session)
                guard let name = given ?? alias else {
                    throw .invalidParams("`session.open` needs \"name\": the session's name", data: ["param": "name"])
                }
                let r = SessionNameRequest(name: name)
                return Snapshot(session: try asRPC { () throws(NavError) in try n.openSession(r, by: call.client) }.session)
            }
        }
    }
}
