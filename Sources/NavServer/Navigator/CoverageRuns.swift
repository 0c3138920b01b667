import JSON
import NavGraph
import NavigationCore
import Unchecked

/// What navigations exercised of the graph (``Coverage``): the run `all` since navd started (or
/// since the graph was reloaded: coverage is of one graph), and named runs a test suite starts and
/// stops (`coverage.start {name}`, `coverage.stop {name}`), so that one navd serves several suites.
/// Every commit and precondition outcome is counted in each active run. A run's size is fixed by
/// the graph; at most ``maxRuns`` named runs are kept (stopped ones until started again or the
/// graph changes).
struct CoverageRuns {
    static let maxRuns = 16
    private(set) var all: Coverage
    private(set) var named: [String: Coverage] = [:]
    /// The named runs counting now (started and not stopped); `all` always counts.
    private(set) var started: [Coverage] = []
    /// Calls `body` with every run counting now: `all`, then ``started`` (no array is made).
    @inline(__always)
    func forEachActive(_ body: (Coverage) -> Void) {
        body(all)
        for run in started { body(run) }
    }

    init(graph: NavigationGraph) {
        all = Coverage(name: "all", graph: graph)
    }

    /// Starts run `name` afresh (its earlier counts, if any, are dropped); false past ``maxRuns``.
    mutating func start(_ name: String, graph: NavigationGraph) -> Bool {
        if named[name] == nil && named.count >= CoverageRuns.maxRuns { return false }
        started.removeAll { $0 === named[name] }
        let run = Coverage(name: name, graph: graph)
        named[name] = run
        started.append(run)
        return true
    }

    /// Stops run `name` (kept for reports); false when there is none.
    mutating func stop(_ name: String) -> Bool {
        guard let run = named[name] else { return false }
        started.removeAll { $0 === run }
        return true
    }

    func run(_ name: String?) -> Coverage? { name.map { $0 == "all" ? all : named[$0] } ?? all }

    /// Changes when anything is counted (what ``CoverageFile`` compares before writing).
    var mark: Int { all.commits &+ all.events }

    /// Every run as its JSON report, for the file beside the state file.
    func saved(graph: NavigationGraph) -> JSONValue {
        var runs: [JSONValue] = [["run": "all", "counting": true, "report": CoverageReport(all, graph: graph).json]]
        for (name, run) in named.sorted(by: { $0.key < $1.key }) {
            runs.append(["run": .string(name), "counting": .bool(started.contains { $0 === run }), "report": CoverageReport(run, graph: graph).json])
        }
        return ["navdCoverage": 1, "runs": .array(runs)]
    }

    /// Adds the runs of `saved` (``saved(graph:)``'s form) to these, by name; a named run saved as
    /// counting counts again. At most ``maxRuns`` named runs are taken. Answers the runs read and
    /// the items skipped (not in the graph).
    mutating func restore(_ saved: JSONValue, graph: NavigationGraph) -> (runs: Int, skipped: Int) {
        var count = 0, skipped = 0
        for entry in saved["runs"]?.arrayValue ?? [] {
            guard let name = entry["run"]?.stringValue, let report = entry["report"] else { continue }
            let run: Coverage
            if name == "all" {
                run = all
            } else {
                guard name.utf8.count <= 128, named.count < CoverageRuns.maxRuns || named[name] != nil else { continue }
                if named[name] == nil { named[name] = Coverage(name: name, graph: graph) }
                run = named[name]!
                if entry["counting"]?.boolValue == true && !started.contains(where: { $0 === run }) { started.append(run) }
            }
            skipped += run.add(report: report, graph: graph).skipped
            count += 1
        }
        return (count, skipped)
    }

    func isActive(_ name: String) -> Bool { named[name].map { r in started.contains { $0 === r } } ?? false }
}

extension Navigator {
    /// Counts a committed navigation in every active run: its edge (from `source`'s coordinator,
    /// found before the commit since it may remove the source), its route and link, what a link
    /// built. Out of line: the navigation path pays a call, not the code.
    @inline(never)
    func covered(_ plan: Plan, source: Int) {
        // Read without counting a reference: the navigator holds its coverage, which only a graph
        // reload replaces, never a commit.
        Unretained(coverage.all).with { $0.committed(plan, source: source) }
        if !coverage.started.isEmpty {
            for run in coverage.started { run.committed(plan, source: source) }
        }
    }

    /// Counts the screens a deep link built (those before its last, which ``covered(_:source:)`` counts).
    func covered(built steps: [LinkStep], target: Int, link: Int) {
        let built = steps.map(\.coordinator)
        coverage.forEachActive {
            $0.shownToo(built, but: target)
            $0.flowsMade(built, but: target)
            $0.built(built, link: link)
        }
    }

    /// Counts how the evaluation of precondition `p` ended, in every active run.
    func covered(_ p: Precondition, _ outcome: Coverage.Outcome) {
        coverage.forEachActive { $0.precondition(p.index, outcome) }
    }
}
