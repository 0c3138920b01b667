import JSON
import RPC

/// `rpc.discover`, declared in `Protocol/methods/rpc.discover.json`: its spec and param enum are
/// generated from that file.
enum RpcDiscoverMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.rpcDiscover, RpcDiscoverParam.self) { [server] call in
            call.answer { () throws(RPCError) -> JSONValue in
                try Params<RpcDiscoverParam>(call).acceptUnused(.session)
                return server.openRPCDocument
            }
        }
    }
}
