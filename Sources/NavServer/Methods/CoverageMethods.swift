import JSON
import NavigationCore
import RPC

/// `coverage.start`, `coverage.stop`, `coverage.report`: what navigations exercised of the graph
/// (``CoverageRuns``), for test suites. None changes a session, so none is refused while the store
/// cannot write, and a read-only front-end may ask for a report.
enum CoverageMethods {
    static func register(in methods: MethodTable, _ n: Navigator) {
        methods.register("coverage.start", CoverageRunParam.self, changes: false, session: .none) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<CoverageRunParam>(call)
                let name = try runName(p, n)
                guard n.coverage.start(name, graph: n.graph) else {
                    throw .limitExceeded("navd keeps at most \(CoverageRuns.maxRuns) named coverage runs; start \"\(name.prefix(40))\" again under the name of one you no longer need (starting a run again empties it)",
                                         limit: "coverage runs", max: CoverageRuns.maxRuns)
                }
                return ["run": .string(name), "started": true]
            }
        }
        methods.register("coverage.stop", CoverageRunParam.self, changes: false, session: .none) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<CoverageRunParam>(call)
                let name = try runName(p, n)
                guard n.coverage.stop(name) else { throw unknownRun(name, n) }
                return ["run": .string(name), "stopped": true]
            }
        }
        methods.register("coverage.report", CoverageParam.self, changes: false, session: .none) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<CoverageParam>(call)
                let name = try p.string(.run)
                guard let run = n.coverage.run(name) else { throw unknownRun(name ?? "", n) }
                let report = CoverageReport(run, graph: n.graph)
                switch try p.string(.format) ?? "json" {
                case "json": return report.json
                case "text": return ["format": "text", "report": .string(report.text)]
                case "lcov": return ["format": "lcov", "report": .string(report.lcov)]
                case let other:
                    throw .invalidParams("\"format\" is \"\(other.prefix(40))\"; coverage.report writes \"json\" (the default), \"text\" or \"lcov\"", data: ["param": "format"])
                }
            }
        }
    }

    static func runName(_ p: Params<CoverageRunParam>, _ n: Navigator) throws(RPCError) -> String {
        let name = try p.requiredString(.run, "the run's name, such as \"checkout-suite\"")
        guard name != "all" else {
            throw .invalidParams("\"all\" is the run navd always counts (since it started or the graph was reloaded); name your run otherwise", data: ["param": "run"])
        }
        try n.config.checkName(name, "the run name", param: "run")
        return name
    }

    static func unknownRun(_ name: String, _ n: Navigator) -> RPCError {
        let known = ["all"] + n.coverage.named.keys.sorted()
        return .invalidParams("no coverage run \"\(name.prefix(40))\"; the runs are \(known.joined(separator: ", ")) (coverage.start {run} starts one)", data: ["param": "run"])
    }
}

enum CoverageParam: Int, ParamName {
    case session, run, format
    static let table = ParamTable(Self.self)
}

enum CoverageRunParam: Int, ParamName {
    case session, run
    static let table = ParamTable(Self.self)
}
