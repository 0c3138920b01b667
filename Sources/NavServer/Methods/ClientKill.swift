import JSON
import RPC

/// `client.kill`, declared in `Protocol/methods/client.kill.json`: closes a connection, as Redis's
/// `CLIENT KILL`, telling it why first. Its role, `admin`, is declared with it: in the usual
/// deployment every client shares one uid, and a page of nav-web (which keeps no role) must not close
/// the backend's connections.
enum ClientKillMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.clientKill, ClientKillParam.self) { [server] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ClientKillParam>(call)
                try p.acceptUnused(.session)
                guard let id = try p.int(.connection) else {
                    throw .invalidParams("`client.kill` needs \"connection\": the number client.list gives as id (hello answers a client its own)", data: ["param": "connection"])
                }
                let caller = call.peer
                let callerUid = caller.connection.credentials.map { String($0.uid) } ?? "?"
                guard let target = server.transport.connections[id] else {
                    throw RPCError(.unknownTarget, "no connection \(id) is open; client.list lists the open ones", data: ["connection": .int(id)])
                }
                guard target !== caller.connection else {
                    throw .invalidParams("connection \(id) is the one asking; a client closes its own connection by closing its socket", data: ["param": "connection"])
                }
                server.logger.info("closing a connection at a client's request",
                                   metadata: ["navd.client": "\(id)", "navd.by": "\(caller.id)", "navd.uid": "\(callerUid)"])
                let why = RPCError(.disconnected, "connection \(caller.id) (uid \(callerUid)) closed this connection with client.kill",
                                   data: ["by": .int(caller.id)])
                target.close(telling: why)
                return ["closed": .int(id)]
            }
        }
    }
}
