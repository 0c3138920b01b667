import JSON
import NavigationCore
import RPC

/// `coverage.start`, declared in `Protocol/methods/coverage.start.json`: its spec and param enum are
/// generated from that file.
enum CoverageStartMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.coverageStart, CoverageStartParam.self) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<CoverageStartParam>(call)
                let name = try CoverageRunParams.runName(p.requiredString(.run, CoverageRunParams.runHint), call.decoding)
                guard n.coverage.start(name, graph: n.graph) else {
                    throw .limitExceeded("navd keeps at most \(CoverageRuns.maxRuns) named coverage runs; start \"\(name.prefix(40))\" again under the name of one you no longer need (starting a run again empties it)",
                                         limit: "coverage runs", max: CoverageRuns.maxRuns)
                }
                return ["run": .string(name), "started": true]
            }
        }
    }
}
