import JSON
import NavigationCore
import RPC

/// What `coverage.start`, `coverage.stop` and `coverage.report` read alike: a run's name. (None of
/// the three changes a session, so none is refused while the store cannot write, and a read-only
/// front-end may ask for a report.)
enum CoverageRunParams {
    static let runHint = "the run's name, such as \"checkout-suite\""

    static func runName(_ name: String, _ context: DecodingContext) throws(RPCError) -> String {
        guard !name.isEmpty else {
            throw .invalidParams("the run name is empty; name the run, such as \"checkout-suite\"", data: ["param": "run"])
        }
        guard name != "all" else {
            throw .invalidParams("\"all\" is the run navd always counts (since it started or the graph was reloaded); name your run otherwise", data: ["param": "run"])
        }
        try context.checkName(name, "the run name", param: "run")
        return name
    }

    static func unknownRun(_ name: String, _ n: Navigator) -> RPCError {
        let known = ["all"] + n.coverage.named.keys.sorted()
        return .invalidParams("no coverage run \"\(name.prefix(40))\"; the runs are \(known.joined(separator: ", ")) (coverage.start {run} starts one)", data: ["param": "run"])
    }
}


