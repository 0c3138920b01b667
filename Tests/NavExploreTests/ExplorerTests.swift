import Foundation
import JSON
import NavExplore
import NavGraph
import NavTesting
import NavigationCore
import Testing

/// `navd explore` on the graph with planted defects (each named at its line) and on the example.
@Suite struct ExplorerTests {
    static let planted = Repo.file("Tests/Fixtures/planted").path

    static func load(_ dir: String) throws -> NavigationGraph {
        let (g, d) = GraphLoader.load(directory: dir)
        let graph = try #require(g, "\(d.errors)")
        return graph
    }

    /// The line of the fixture holding `marker` (the comment that plants a defect there).
    static func line(of marker: String) throws -> Int {
        let text = try String(contentsOfFile: planted + "/app.yaml", encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let at = try #require(lines.firstIndex { $0.contains(marker) }, "no line holds \(marker)")
        return at + 1
    }

    @Test func eachPlantedDefectIsNamedAtItsLine() throws {
        let result = Explorer(graph: try Self.load(Self.planted)).run()
        #expect(!result.truncated)
        let found = result.defects.map { "\($0.kind.rawValue)@\($0.location.line)" }
        let expected: [(Finding.Kind, String)] = [
            (.unreachable, "unreachable: nothing opens it"),
            (.deadEnd, "dead end: it replaces Home"),
            (.incompleteFlow, "flow that cannot be completed"),
            (.route, "never resolves: only Orphan"),
            (.brokenLink, "unbuildable: Vault's preconditions"),
            (.cycle, "redirect cycle: Gate -> Door"),
            (.recovery, "its recovery sets the fact"),
        ]
        for (kind, marker) in expected {
            let line = try Self.line(of: marker)
            #expect(found.contains("\(kind.rawValue)@\(line)"), "no \(kind) at line \(line): \(found)")
        }
        // Nothing reported on the healthy part of the graph.
        let home = try Self.line(of: "  Home:")
        #expect(!found.contains { $0.hasSuffix("@\(home)") })
        // The cycle's message names its coordinators in order.
        let cycle = try #require(result.defects.first { $0.kind == .cycle })
        #expect(cycle.message.contains("app.Door → app.Gate → app.Door") || cycle.message.contains("app.Gate → app.Door → app.Gate"))
    }

    @Test func theCheapPartWarnsInCheck() throws {
        let warnings = GraphLint.warnings(try Self.load(Self.planted)).map { "\($0.location.line): \($0.message)" }
        let flowLine = try Self.line(of: "flow that cannot be completed"), cycleLine = try Self.line(of: "redirect cycle")
        #expect(warnings.contains { $0.hasPrefix("\(flowLine): flow `app.Wizard` cannot be completed") })
        #expect(warnings.contains { $0.hasPrefix("\(cycleLine): `app.toDoor` redirects in a cycle") })
        #expect(warnings.contains { $0.contains("no declaration leads to `app.Deep`") })
        // The example graph is clean.
        #expect(GraphLint.warnings(try Self.load(Repo.file("Examples/shop").path)).isEmpty)
    }

    @Test func theExampleHasNoDefectAndEveryEdgeIsReachable() throws {
        let graph = try Self.load(Repo.file("Examples/shop").path)
        let result = Explorer(graph: graph, options: ExploreOptions(depth: 8, maxStates: 4000)).run()
        #expect(result.defects.isEmpty, "\(result.defects.map(\.message))")
        #expect(result.reachedEdges.count == result.declaredEdges.count)
        // The plan takes every edge reachable by facts alone, each sequence from the root.
        let planned = Set(result.plan.sequences.flatMap { $0.steps.compactMap(\.edge) })
        #expect(planned == Set(result.plan.edges))
        #expect(result.plan.edges.count == result.plainEdges.count)
        #expect(result.plan.sequences.filter { $0.name.hasPrefix("edge-") }.count < result.plan.edges.count)
        // Then one sequence per route and per deep link a test can take.
        #expect(result.plan.sequences.filter { $0.name.hasPrefix("route-") }.count == graph.routes.count)
        #expect(result.plan.sequences.filter { $0.name.hasPrefix("link-") }.count == graph.links.count)
    }

    @Test func explorationStopsAtItsBoundsAndSaysSo() throws {
        let graph = try Self.load(Repo.file("Examples/shop").path)
        let result = Explorer(graph: graph, options: ExploreOptions(depth: 10, maxStates: 50)).run()
        #expect(result.stateCount == 50)
        #expect(result.truncated)
        #expect(result.text.contains("stopped at a bound"))
        let shallow = Explorer(graph: graph, options: ExploreOptions(depth: 1, maxStates: 1000)).run()
        #expect(!shallow.truncated)
        #expect(shallow.reachedEdges.allSatisfy { graph.coordinators[$0.source].name == "shop.Home" })
    }

    @Test func sampleValuesMeetEverySchemaOfTheExample() throws {
        let graph = try Self.load(Repo.file("Examples/shop").path)
        for c in graph.coordinators {
            if let s = c.setup {
                let v = try #require(SampleValues.value(for: s), "no sample for \(c.name)")
                #expect(s.validate(v) == nil, "\(c.name): \(JSONWriter.string(v))")
            }
            if let r = c.flow?.result {
                let v = try #require(SampleValues.value(for: r), "no result sample for \(c.name)")
                #expect(r.validate(v) == nil, "\(c.name): \(JSONWriter.string(v))")
            }
        }
        // A pattern no common shape meets is met by the schema's own example, or not at all.
        var errors: [Schema.CompileError] = []
        let odd = try #require(Schema.compile(["type": "string", "pattern": "^Q{3}[0-9]{4}$"], errors: &errors))
        #expect(SampleValues.value(for: odd) == nil)
        let named = try #require(Schema.compile(["type": "string", "pattern": "^Q{3}[0-9]{4}$", "examples": ["QQQ1234"]], errors: &errors))
        #expect(SampleValues.value(for: named) == .string("QQQ1234"))
        #expect(errors.isEmpty)
    }
}
