import JSON
import RPC

/// `stats`, declared in `Protocol/methods/stats.json`: its spec and param enum are
/// generated from that file.
enum StatsMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.stats) { [server] call in
            call.succeed(.object(server.statsObject()))
        }
    }
}
