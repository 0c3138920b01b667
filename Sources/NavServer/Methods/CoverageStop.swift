import JSON
import NavigationCore
import RPC

/// `coverage.stop`, declared in `Protocol/methods/coverage.stop.json`: its spec and param enum are
/// generated from that file.
enum CoverageStopMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.coverageStop, CoverageStopParam.self) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<CoverageStopParam>(call)
                let name = try CoverageRunParams.runName(p.requiredString(.run, CoverageRunParams.runHint), call.decoding)
                guard n.coverage.stop(name) else { throw CoverageRunParams.unknownRun(name, n) }
                return ["run": .string(name), "stopped": true]
            }
        }
    }
}
