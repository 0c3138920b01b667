import JSON
import NavGraph
import NavigationCore
import RPC

/// `context.set`, declared in `Protocol/methods/context.set.json`: its spec and param enum are
/// generated from that file.
enum ContextSetMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.contextSet, ContextSetParam.self) { call in
            call.answer { () throws(RPCError) -> Facts in
                let p = try Params<ContextSetParam>(call)
                let state = try call.session(p)
                guard let facts = try p.objectParam(.facts) else {
                    throw .invalidParams("`context.set` needs \"facts\": an object of fact name → JSON value (null removes a fact)", data: ["param": "facts"])
                }
                let r = ContextSetRequest(state: state, facts: facts)
                return try asRPC { () throws(NavError) in try n.setFacts(r, by: call.client) }
            }
        }
    }
}
