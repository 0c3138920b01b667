import JSON

/// A navigation coverage report (`coverage.report`'s JSON) as a value, for Swift test suites:
/// totals by kind, per module, and what was never exercised.
///
///     let report = try CoverageSummary(client.call(.coverageReport()))
///     #expect(report.percent(of: .edges) >= 90, "\(report.missed)")
public struct CoverageSummary: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case coordinators, edges, routes, links, preconditions, flows, tabBacks
    }
    public struct Count: Sendable, Equatable {
        public let covered: Int
        public let total: Int
        /// `covered` out of `total` as a percentage (100 when there is nothing to cover).
        public var percent: Double { total == 0 ? 100 : Double(covered) * 100 / Double(total) }
    }
    /// The run reported (`all` or a named run).
    public let run: String
    /// Navigations committed in the run.
    public let commits: Int
    public let totals: [Kind: Count]
    /// Module → kind → count.
    public let modules: [String: [Kind: Count]]
    /// What was never exercised, each `file:line: kind name`.
    public let missed: [String]
    /// The report as navd gave it.
    public let report: JSONValue

    /// Reads `report`; throws ``NavClientError`` when it is not a coverage report.
    public init(_ report: JSONValue) throws {
        guard let run = report["run"]?.stringValue, let totals = report["totals"]?.objectValue else {
            throw NavClientError.protocolError("not a coverage report (no run and totals): \(JSONWriter.string(report).prefix(80))")
        }
        func counts(_ o: JSONObject) -> [Kind: Count] {
            var out: [Kind: Count] = [:]
            for k in Kind.allCases {
                if let c = o[k.rawValue] { out[k] = Count(covered: c["covered"]?.intValue ?? 0, total: c["total"]?.intValue ?? 0) }
            }
            return out
        }
        self.run = run
        commits = report["commits"]?.intValue ?? 0
        self.totals = counts(totals)
        var modules: [String: [Kind: Count]] = [:]
        for m in report["modules"]?.arrayValue ?? [] {
            if let name = m["module"]?.stringValue, let o = m.objectValue { modules[name] = counts(o) }
        }
        self.modules = modules
        missed = (report["missed"]?.arrayValue ?? []).compactMap(\.stringValue)
        self.report = report
    }

    /// The percentage of `kind` covered in the whole graph.
    public func percent(of kind: Kind) -> Double { totals[kind]?.percent ?? 100 }
}

extension NavCall {
    /// `coverage.report {run?}` as JSON (read it with ``CoverageSummary``).
    public static func coverageReport(run: String? = nil) -> NavCall {
        NavCall("coverage.report", run.map { ["run": .string($0)] } ?? [:])
    }
    /// `coverage.start {run}`: counts afresh in a run of its own until ``coverageStop(run:)``.
    public static func coverageStart(run: String) -> NavCall { NavCall("coverage.start", ["run": .string(run)]) }
    public static func coverageStop(run: String) -> NavCall { NavCall("coverage.stop", ["run": .string(run)]) }
}

extension NavClient {
    /// The coverage report of `run` (default: `all`) as a value.
    public func coverage(run: String? = nil) throws -> CoverageSummary {
        try CoverageSummary(call(.coverageReport(run: run)))
    }
}
