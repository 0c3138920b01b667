import JSON
import RPC

/// `stats`, declared in `Protocol/methods/stats.json`: its spec and param enum are
/// generated from that file.
enum StatsMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.stats, StatsParam.self) { [server] call in
            call.answer { () throws(RPCError) -> JSONValue in
                try Params<StatsParam>(call).acceptUnused(.session)
                return .object(server.statsObject())
            }
        }
    }
}
