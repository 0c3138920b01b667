import ArgumentParser
import Foundation
import JSON
import NavExplore
import NavGraph
import NavigationCore

/// Loads `dir`, or the embedded example when nil; prints diagnostics to stderr.
func loadGraph(_ dir: String?, limits: GraphLimits = GraphLimits(), printWarnings: Bool = true) -> (NavigationGraph?, Diagnostics) {
    let (g, d) = dir.map { GraphLoader.load(directory: $0, limits: limits) } ?? GraphLoader.loadEmbeddedExample(baseDirectory: materializeExampleScripts())
    for x in d.sorted where x.severity == .error || printWarnings {
        StandardError.write(x.description, priority: x.severity == .error ? 3 : 4)
    }
    return (g, d)
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a graph directory like a compiler: print every problem as FILE:LINE:COLUMN: error: MESSAGE.",
        discussion: "Exits 1 when there is any error, 0 otherwise (warnings alone do not fail).")

    @Argument(help: "Directory of module files (default: the embedded example app).")
    var directory: String?

    @Flag(help: "Treat warnings as errors.")
    var strict = false

    @Option(help: ArgumentHelp("Also check this policy file as navd's --policy reads it (before a SIGHUP, say).", valueName: "file"))
    var policy: String?

    @OptionGroup var graphLimits: GraphLimitOptions

    func run() throws {
        var policyErrors = 0
        if let policy {
            guard let text = try? String(contentsOfFile: policy, encoding: .utf8) else {
                FileHandle.standardError.write(Data("navd check: cannot read the policy file \(policy) (missing, unreadable or not UTF-8)\n".utf8))
                throw ExitCode(1)
            }
            let problems = PolicyFile.parse(text, file: policy, maxNodes: graphLimits.limits.maxNodes).diagnostics.errors
            for e in problems { FileHandle.standardError.write(Data((e.description + "\n").utf8)) }
            policyErrors = problems.count
            FileHandle.standardError.write(Data("\(policy): \(policyErrors) error\(policyErrors == 1 ? "" : "s")\n".utf8))
        }
        let (graph, d) = loadGraph(directory, limits: graphLimits.limits)
        // What the declarations alone show of reachability (`navd explore` walks the trees).
        let known = Set(d.warnings.map(\.location))
        let lint = (graph.map(GraphLint.warnings) ?? []).filter { !known.contains($0.location) }
        for w in lint.sorted(by: { $0.location < $1.location }) { FileHandle.standardError.write(Data((w.description + "\n").utf8)) }
        let errors = d.errors.count, warnings = d.warnings.count + lint.count
        let summary = "\(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")"
        FileHandle.standardError.write(Data("\(directory ?? "embedded example"): \(summary)\n".utf8))
        // The process ends here: a large graph is left for the kernel to free, not taken apart.
        withExtendedLifetime(graph) { Foundation.exit(errors + policyErrors > 0 || (strict && warnings > 0) ? 1 : 0) }
    }
}

struct GraphCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "graph",
        abstract: "Print the resolved graph: DOT for Graphviz (`navd graph DIR | dot -Tpng -o graph.png`) or JSON.")

    enum Format: String, ExpressibleByArgument, CaseIterable { case dot, json }

    @Argument(help: "Directory of module files (default: the embedded example app).")
    var directory: String?

    @Option(help: "dot or json.")
    var format: Format = .dot

    func run() throws {
        let (g, _) = loadGraph(directory, printWarnings: false)
        guard let g else { throw ExitCode(1) }
        switch format {
        case .dot: print(g.dot(), terminator: "")
        case .json: print(String(decoding: JSONWriter.encode(g.describe()), as: UTF8.self))
        }
    }
}

struct Explore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Walk every navigation a graph allows, in-process from its root, and report what no user can reach or finish.",
        discussion: """
        Each precondition's outcome is a choice (a check by the facts it reads, a command or provider passing or \
        failing, a recovery flow completed or cancelled, a redirect followed), breadth first within --depth steps \
        and --max-states distinct trees. Reports, each at FILE:LINE: screens never shown, screens with no way back \
        but reset, flows that cannot be completed, deep links whose stack cannot be built, recoveries that cannot \
        make their precondition pass, redirect cycles, routes that never resolve. With --plan DIR, writes a test \
        plan taking every edge reachable with facts alone: navd-plan.json and test_navd_plan.py (for navd's pytest \
        plugin). Exits 1 with --strict when there is a defect, 2 when the graph does not load.
        """)

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json }

    @Argument(help: "Directory of module files (default: the embedded example app).")
    var directory: String?

    @Option(help: "The most steps from the root explored (1...\(ExploreOptions.maxDepthLimit)).")
    var depth = ExploreOptions().depth

    @Option(help: "The most distinct trees explored (1...\(ExploreOptions.maxStatesLimit)).")
    var maxStates = ExploreOptions().maxStates

    @Option(help: "text or json.")
    var format: Format = .text

    @Option(help: "Write the test plan into this directory: navd-plan.json and test_navd_plan.py.")
    var plan: String?

    @Option(help: "The graph directory the generated pytest names in navd_graph (default: DIRECTORY as given).")
    var planGraph: String?

    @Flag(help: "Exit 1 when exploration finds a defect (notes do not count).")
    var strict = false

    @OptionGroup var graphLimits: GraphLimitOptions

    func validate() throws {
        guard (1...ExploreOptions.maxDepthLimit).contains(depth) else { throw ValidationError("--depth must be 1...\(ExploreOptions.maxDepthLimit), not \(depth)") }
        guard (1...ExploreOptions.maxStatesLimit).contains(maxStates) else { throw ValidationError("--max-states must be 1...\(ExploreOptions.maxStatesLimit), not \(maxStates)") }
    }

    func run() throws {
        let (g, _) = loadGraph(directory, limits: graphLimits.limits, printWarnings: false)
        guard let g else { throw ExitCode(2) }
        let result = Explorer(graph: g, options: ExploreOptions(depth: depth, maxStates: maxStates)).run()
        switch format {
        case .text: print(result.text, terminator: "")
        case .json: print(String(decoding: JSONWriter.encode(result.json), as: UTF8.self))
        }
        if let dir = plan {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let json = Data(JSONWriter.encode(result.plan.json)) + Data("\n".utf8)
            try json.write(to: URL(fileURLWithPath: dir + "/navd-plan.json"))
            try Data(result.plan.pytest(graph: planGraph ?? directory).utf8).write(to: URL(fileURLWithPath: dir + "/test_navd_plan.py"))
            FileHandle.standardError.write(Data("navd explore: wrote \(dir)/navd-plan.json and \(dir)/test_navd_plan.py (\(result.plan.sequences.count) sequences)\n".utf8))
        }
        if strict && !result.defects.isEmpty { throw ExitCode(1) }
    }
}

struct CoverageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coverage",
        abstract: "Merge navigation coverage reports (coverage.report's JSON) and print them as text, JSON or LCOV.",
        discussion: """
        Reports of several navds (navd's pytest plugin starts one per test) add up item by item, matched by \
        name against the graph; items the graph does not declare are skipped (and counted on stderr). \
        --fail-under N exits 2 when fewer than N % of the graph's opens edges were taken, as coverage.py's \
        --fail-under does.
        """)

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json, lcov }

    @Argument(help: "JSON reports to merge (coverage.report {format: json} or navctl coverage --format json).")
    var reports: [String] = []

    @Option(help: "Directory of module files the reports are of (default: the embedded example app).")
    var graph: String?

    @Option(help: "text, json or lcov.")
    var format: Format = .text

    @Option(name: .shortAndLong, help: "Write the report to this file instead of standard output.")
    var output: String?

    @Option(help: "Exit 2 when fewer than this percentage of opens edges were taken (0-100).")
    var failUnder: Double?

    /// The largest report read (a report's size is fixed by its graph).
    static let maxReportBytes = 64 << 20

    func validate() throws {
        if let f = failUnder, !(0...100).contains(f) { throw ValidationError("--fail-under must be 0-100, not \(f)") }
    }

    func run() throws {
        let (g, _) = loadGraph(graph, printWarnings: false)
        guard let g else { throw ExitCode(1) }
        let merged = Coverage(name: "merged", graph: g)
        var skipped = 0
        for path in reports {
            guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
            guard data.count <= Self.maxReportBytes else { throw ValidationError("\(path) is \(data.count) bytes; a report is at most \(Self.maxReportBytes)") }
            let value: JSONValue
            do { value = try JSONParser(maxDepth: 64).parse(Array(data)) } catch {
                throw ValidationError("\(path) is not a JSON report: \(error)")
            }
            // `coverage.report` over JSON-RPC gives the report itself; a saved reply holds it in `result`.
            skipped += merged.add(report: value["result"] ?? value, graph: g).skipped
        }
        if skipped > 0 { FileHandle.standardError.write(Data("navd coverage: \(skipped) items of the reports are not in the graph; skipped\n".utf8)) }
        let report = CoverageReport(merged, graph: g)
        let text: String
        switch format {
        case .text: text = report.text
        case .json: text = String(decoding: JSONWriter.encode(report.json), as: UTF8.self) + "\n"
        case .lcov: text = report.lcov
        }
        if let output { try Data(text.utf8).write(to: URL(fileURLWithPath: output)) } else { print(text, terminator: "") }
        if let failUnder {
            let edges = report.json["totals"]?["edges"]
            let covered = edges?["covered"]?.intValue ?? 0, total = edges?["total"]?.intValue ?? 0
            let percent = total == 0 ? 100 : Double(covered) * 100 / Double(total)
            if percent < failUnder {
                FileHandle.standardError.write(Data("navd coverage: \(covered)/\(total) opens edges taken (\(Int(percent)) %), under --fail-under \(failUnder)\n".utf8))
                throw ExitCode(2)
            }
        }
    }
}

/// The embedded example's command preconditions run scripts: write them to a private folder
/// (`/tmp/navd-example-<uid>`) so they exist whatever directory navd starts from.
func materializeExampleScripts() -> String {
    let dir = NSTemporaryDirectory() + "navd-example-\(getuid())"
    let fm = FileManager.default
    for (name, text) in EmbeddedExample.scripts {
        let path = dir + "/" + name
        try? fm.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                                attributes: [.posixPermissions: 0o700])
        if (try? String(contentsOfFile: path, encoding: .utf8)) != text + "\n" {
            try? (text + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
        try? fm.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
    }
    return dir
}
