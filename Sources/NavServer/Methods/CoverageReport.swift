import JSON
import NavigationCore
import RPC

/// `coverage.report`, declared in `Protocol/methods/coverage.report.json`: its spec and param enum are
/// generated from that file.
enum CoverageReportMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.coverageReport, CoverageReportParam.self) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<CoverageReportParam>(call)
                try p.acceptUnused(.session)
                let name = try p.string(.run)
                guard let run = n.coverage.run(name) else { throw CoverageRunParams.unknownRun(name ?? "", n) }
                let report = CoverageReport(run, graph: n.graph)
                switch try p.string(.format) ?? "json" {
                case "json":
                    // A graph at its bounds has half a million edges: its report (~95 MB) took a second
                    // to write before it was refused; it is refused first, by a bound of its size.
                    let least = report.jsonSizeAtLeast
                    if least > server.dispatcher.limits.maxOutput { throw call.peer.tooLarge(least, atLeast: true, method: call.entry.spec) }
                    return report.json
                case "text": return ["format": "text", "report": .string(report.text)]
                case "lcov": return ["format": "lcov", "report": .string(report.lcov)]
                case let other:
                    throw .invalidParams("\"format\" is \"\(other.prefix(40))\"; coverage.report writes \"json\" (the default), \"text\" or \"lcov\"", data: ["param": "format"])
                }
            }
        }
    }
}
