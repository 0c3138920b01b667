import JSON
import NavGraph
import RPC

/// `graph.describe`: the resolved graph, as `navd graph --format json` prints it.
///
/// Declared in `Protocol/methods/graph.describe.json` (its spec and param enum are generated from it).
enum GraphDescribeMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.graphDescribe, GraphDescribeParam.self) { [server] call in
            call.answer { () throws(RPCError) -> JSONText in
                try Params<GraphDescribeParam>(call).acceptUnused(.session)
                return server.graphAnswer("describe") { $0.describe() }
            }
        }
    }
}
