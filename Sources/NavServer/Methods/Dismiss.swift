import JSON
import NavGraph
import NavigationCore
import RPC

/// `dismiss`, declared in `Protocol/methods/dismiss.json`: its spec and param enum are
/// generated from that file.
enum DismissMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.dismiss, DismissParam.self) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<DismissParam>(call)
                let state = try call.session(p)
                // The usual dismiss (the visible top, nothing handed on) gives no param but its session.
                guard p.hasAny(~DismissParam.bit(.session)) else { return n.dismiss(DismissRequest(state: state), call) }
                let node = try p.string(.node), to = try p.string(.to)
                if node != nil && to != nil {
                    throw .invalidParams("`dismiss` takes \"node\" (that node and what is above it) or \"to\" (pop to a screen), not both", data: ["param": "to"])
                }
                let inclusive = try p.bool(.inclusive) ?? false
                if inclusive && to == nil {
                    throw .invalidParams("\"inclusive\" goes with \"to\": it says whether the screen \"to\" names goes too; without \"to\", dismiss removes \"node\" (default: the visible top) and what is above it",
                                         data: ["param": "inclusive"])
                }
                let result = p.value(.result)
                if let result { try NavigationParams.checkSize(result, "\"result\"", limit: Navigator.maxHintsBytes, param: "result") }
                let merge = try p.bool(.merge) ?? false
                if merge && result?.objectValue == nil {
                    throw .invalidParams("`merge: true` merges \"result\" into the params of the screen below, so \"result\" must be an object of its setup's fields, like {\"address\": \"…\"}", data: ["param": "result"])
                }
                n.dismiss(DismissRequest(state: state, node: node, to: to, inclusive: inclusive, result: result, merge: merge), call)
            }
        }
    }
}
