import JSON
import NavGraph
import NavigationCore
import RPC

/// `session.list`, declared in `Protocol/methods/session.list.json`: its spec and param enum are
/// generated from that file.
enum SessionListMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.sessionList, SessionListParam.self) { call in
            call.answer { () throws(RPCError) -> SessionPage in
                let p = try Params<SessionListParam>(call)
                try p.acceptUnused(.session)
                let limit = try p.int(.limit) ?? Navigator.sessionListPage
                guard (1...Navigator.sessionListPage).contains(limit) else {
                    throw .invalidParams("`session.list`'s \"limit\" is \(limit); give 1 to \(Navigator.sessionListPage) names per page",
                                         data: ["param": "limit"])
                }
                var after = 0
                if let cursor = try p.string(.after) {
                    guard let c = Int(cursor), c >= 0 else {
                        throw .invalidParams("`session.list`'s \"after\" is \"\(cursor.prefix(40))\", not a cursor; pass the \"next\" of the previous answer",
                                             data: ["param": "after"])
                    }
                    after = c
                }
                return n.sessionList(SessionListRequest(after: after, limit: limit))
            }
        }
    }
}
