import JSON
import RPC

/// `state.backup`: a copy of the state files as they are now, written beside them while navd goes
/// on serving (``Server/backupState(_:)``); answered when it is on disk.
///
/// Declared in `Protocol/methods/state.backup.json` (its spec and param enum are generated from it).
enum StateBackupMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.stateBackup, StateBackupParam.self) { [server] call in
            do throws(RPCError) {
                let p = try Params<StateBackupParam>(call)
                try p.acceptUnused(.session)
            } catch {
                return call.fail(error)
            }
            server.backupState(call.deferred())
        }
    }
}
