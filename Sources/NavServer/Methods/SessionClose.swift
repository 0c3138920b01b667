import JSON
import NavGraph
import NavigationCore
import RPC

/// `session.close`, declared in `Protocol/methods/session.close.json`: its spec and param enum are
/// generated from that file.
enum SessionCloseMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.sessionClose, SessionCloseParam.self) { call in
            call.answer { () throws(RPCError) -> Done in
                let p = try Params<SessionCloseParam>(call)
                let given = try p.string(.name), alias = try p.string(.session)
                guard let name = given ?? alias else {
                    throw .invalidParams("`session.close` needs \"name\": the session's name", data: ["param": "name"])
                }
                let r = SessionNameRequest(name: name)
                return try asRPC { () throws(NavError) in try n.closeSession(r, by: call.client) }
            }
        }
    }
}
