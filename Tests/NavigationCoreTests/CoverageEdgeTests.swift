import JSON
import NavGraph
import Testing
@testable import NavigationCore

/// A commit finds the `opens` entry it took among its source's entries, however many: a hub that
/// opens screens in no particular order counts each edge on its own entry, by style, and a
/// navigation no entry declares apart.
@Suite struct CoverageEdgeTests {
    @Test func aHubCountsEachEdgeItTookOnItsOwnEntry() throws {
        let n = 300
        // The hub declares its screens shuffled (a permutation by a stride prime to n), so that
        // declaration order and index order differ; Side declares three of them.
        let order = (0..<n).map { ($0 * 37 + 11) % n }
        let yaml = """
            root: {stack: Hub}
            coordinators:
              Hub: {opens: [\(order.map { "S\($0)" }.joined(separator: ", ")), Side]}
              Side: {opens: [S5, S0, S\(n - 1)]}
            \((0..<n).map { "  S\($0): {}" }.joined(separator: "\n"))
            """
        let graph = loadTestGraph(yaml)
        let hub = graph.coordinator(named: "app.Hub")!.index
        let side = graph.coordinator(named: "app.Side")!.index
        let screens = (0..<n).map { graph.coordinator(named: "app.S\($0)")!.index }
        let coverage = Coverage(name: "t", graph: graph)
        var model: [[Int]: Int] = [:]  // [source, target, style] → count
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let source = Int.random(in: 0..<4, using: &rng) == 0 ? side : hub
            let target = screens[Int.random(in: 0..<n, using: &rng)]
            let by: Presentation = [.push, .present, .replace, .root, .select].randomElement(using: &rng)!
            coverage.committed(source: source, target: target, by: by)
            model[[source, target, Coverage.styleIndex(by)], default: 0] += 1
        }
        // Each entry's counters, where the graph declares it: the entries of all coordinators one
        // after the other, five styles each.
        var firstEntry = 0
        for c in graph.coordinators {
            for (k, target) in c.opens.enumerated() {
                for by in [Presentation.push, .present, .replace, .root, .select] {
                    let counted = coverage.counts[coverage.opensAt + (firstEntry + k) * 5 + Coverage.styleIndex(by)]
                    #expect(counted == model[[c.index, target, Coverage.styleIndex(by)]] ?? 0, "\(c.name) → \(graph.coordinators[target].name) by \(by)")
                }
            }
            firstEntry += c.opens.count
        }
        for source in [hub, side] {
            for target in screens {
                let counted = coverage.edge(source, target)
                let expected = [Presentation.push, .present, .replace, .root, .select].compactMap { by in
                    model[[source, target, Coverage.styleIndex(by)]].map { (by, $0) }
                }
                #expect(counted.map(\.0) == expected.map(\.0) && counted.map(\.1) == expected.map(\.1),
                        "\(graph.coordinators[source].name) → \(graph.coordinators[target].name): \(counted) against \(expected)")
            }
        }
        // The edges Side declares are its own entries; the rest of its navigations are not edges.
        let declared = Set(graph.coordinators[side].opens)
        // The bound of the JSON report's size, found before it is written, is below its size.
        let whole = CoverageReport(coverage, graph: graph)
        let written = JSONWriter.encode(whole.json).count
        #expect(whole.jsonSizeAtLeast <= written && whole.jsonSizeAtLeast > written / 3, "\(whole.jsonSizeAtLeast) against \(written)")
        let example = try #require(GraphLoader.loadEmbeddedExample().graph)
        let exampleReport = CoverageReport(Coverage(name: "all", graph: example), graph: example)
        #expect(exampleReport.jsonSizeAtLeast <= JSONWriter.encode(exampleReport.json).count)
        let report = CoverageReport(coverage, graph: graph)
        let sideEdges = report.items.filter { $0.kind == .edge && report.name(of: $0).hasPrefix("app.Side ") }
        #expect(sideEdges.count == 3)
        for item in sideEdges {
            let target = graph.coordinator(named: String(report.name(of: item).split(separator: " ").last!))!.index
            #expect(declared.contains(target))
            #expect(item.hits == coverage.edge(side, target).reduce(0) { $0 + $1.1 })
            #expect(item.hits == coverage.taken(side, target))
        }
    }
}
