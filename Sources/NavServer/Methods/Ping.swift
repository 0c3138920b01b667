import JSON
import RPC

/// `ping`, declared in `Protocol/methods/ping.json`: its spec and param enum are
/// generated from that file.
enum PingMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.ping, PingParam.self) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                try Params<PingParam>(call).acceptUnused(.session)
                return "pong"
            }
        }
    }
}
