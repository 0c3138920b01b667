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

    /// The walk of the graph `yaml` (one module file `app.yaml`, in a folder of its own) at depth 4.
    static func explored(_ yaml: String) throws -> Exploration {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("navd-explore-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try yaml.write(to: dir.appendingPathComponent("app.yaml"), atomically: true, encoding: .utf8)
        return Explorer(graph: try load(dir.path), options: ExploreOptions(depth: 4, maxStates: 200)).run()
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
        // A pattern no common shape meets is met by a string made from it, or by the schema's own
        // example (which comes first); one the sampler cannot read (`\u0051`, a character by its
        // code) only by an example.
        var errors: [Schema.CompileError] = []
        let odd = try #require(Schema.compile(["type": "string", "pattern": "^Q{3}[0-9]{4}$"], errors: &errors))
        #expect(SampleValues.value(for: odd) == .string("QQQ1111"))
        let named = try #require(Schema.compile(["type": "string", "pattern": "^Q{3}[0-9]{4}$", "examples": ["QQQ1234"]], errors: &errors))
        #expect(SampleValues.value(for: named) == .string("QQQ1234"))
        let unread = try #require(Schema.compile(["type": "string", "pattern": "^\\u0051{3}$"], errors: &errors))
        #expect(SampleValues.value(for: unread) == nil)
        #expect(errors.isEmpty)
    }

    /// Bounds a graph file may give that no `Int` or no memory holds: `navd explore` trapped on
    /// an integer's `minimum: 1e300` (and on `9223372036854775807`, which rounds up past `Int.max`
    /// as a double) and ran out of memory making a string for `minLength: 100000000000`.
    @Test func extremeBoundsAreSampledOrNotWithoutATrap() throws {
        var errors: [Schema.CompileError] = []
        for minimum in [1e300, 9223372036854775807.0, -1e300] {
            let s = try #require(Schema.compile(["type": "integer", "minimum": .double(minimum)], errors: &errors))
            let v = try #require(SampleValues.value(for: s), "no sample for minimum \(minimum)")
            #expect(s.validate(v) == nil, "\(JSONWriter.string(v))")
        }
        let huge = try #require(Schema.compile(["type": "string", "minLength": 100_000_000_000], errors: &errors))
        #expect(SampleValues.value(for: huge) == nil)
        let long = try #require(Schema.compile(["type": "string", "minLength": .int(SampleValues.maxStringLength)], errors: &errors))
        #expect(SampleValues.value(for: long)?.stringValue?.count == SampleValues.maxStringLength)
        #expect(errors.isEmpty)
    }

    /// An array field takes a URL's value as a list of one item (`open` reads it so): its URL sample
    /// is a sample of its items, typed as `open` reads it back; an array of arrays has none.
    @Test func anArrayFieldsURLSampleIsOneOfItsItems() throws {
        var errors: [Schema.CompileError] = []
        let tags = try #require(Schema.compile(["type": "array", "items": ["type": "integer", "minimum": 3]], errors: &errors))
        #expect(SampleValues.urlValue(for: tags) == "3")
        let any = try #require(Schema.compile(["type": "array"], errors: &errors))
        #expect(SampleValues.urlValue(for: any) == "x")
        let nested = try #require(Schema.compile(["type": "array", "items": ["type": "array"]], errors: &errors))
        #expect(SampleValues.urlValue(for: nested) == nil)
        #expect(errors.isEmpty)
    }

    /// A link with an optional segment or a query parameter is opened with them and without them:
    /// the plan takes the URL that builds its stack, and the URL that cannot is reported. Values
    /// made from a pattern are percent-encoded in the URL.
    @Test func linksAreOpenedWithAndWithoutWhatAURLMayLeaveOut() throws {
        let result = try Self.explored("""
            root: {stack: Home}
            coordinators:
              Home: {opens: [Thread]}
              Thread: {setup: {type: object, required: [t], properties: {t: {type: string, pattern: "^t [0-9]+$"}}}, opens: [Message]}
              Message: {setup: {type: object, required: [m], properties: {m: {type: integer}}}}
            links:
              "/t/:t/m/:m?": [Home, {to: Thread, with: {t: ":t"}}, {to: Message, with: {m: ":m"}}]
            """)
        let urls = result.plan.sequences.filter { $0.name.hasPrefix("link-") }.flatMap { $0.steps.compactMap { $0.params["url"]?.stringValue } }
        #expect(urls == ["/t/t%201/m/1"], "\(urls)")
        let broken = result.defects.filter { $0.kind == .brokenLink }.map(\.message)
        #expect(broken.count == 1 && broken[0].hasPrefix("deep link `/t/:t/m/:m?`: `/t/t%201/m` cannot build its stack"), "\(broken)")
    }

    /// A URL made for a link is written as `link.resolve` writes one: a wildcard's sample whose
    /// parts would leave an empty segment (which `open` skips) goes as one segment, `/` escaped,
    /// and a literal segment is percent-encoded; each opens its stack.
    @Test func sampleURLsAreWrittenAsResolveWritesThem() throws {
        let result = try Self.explored("""
            root: {stack: Home}
            coordinators:
              Home: {opens: [File, Sale]}
              File: {setup: {type: object, required: [path], properties: {path: {type: string, pattern: "^/", examples: ["/etc/hosts"]}}}}
              Sale: {}
            links:
              "/files/*path": [Home, {to: File, with: {path: ":path"}}]
              "/100%": [Home, Sale]
            """)
        let urls = result.plan.sequences.filter { $0.name.hasPrefix("link-") }.flatMap { $0.steps.compactMap { $0.params["url"]?.stringValue } }
        #expect(urls == ["/files/%2Fetc%2Fhosts", "/100%25"], "\(urls)")
        #expect(result.defects.filter { $0.kind == .brokenLink }.isEmpty, "\(result.defects.map(\.message))")
    }

    /// A path segment cannot carry an empty text (`open` skips empty segments), nor a field's
    /// sample that is not a string, number or boolean: a link's parameter in the path is sampled by
    /// the first value its field takes that a segment carries. A query value may be empty.
    @Test func pathSegmentsAreSampledByValuesTheyCarry() throws {
        let result = try Self.explored("""
            root: {stack: Home}
            coordinators:
              Home: {opens: [Tag, Note, Find]}
              Tag: {setup: {type: object, required: [name], properties: {name: {type: string, examples: [""]}}}}
              Note: {setup: {type: object, required: [body], properties: {body: {}}}}
              Find: {setup: {type: object, properties: {q: {type: string, examples: [""]}, page: {type: string, examples: [""]}}}}
            links:
              "/tags/:name": [Home, {to: Tag, with: {name: ":name"}}]
              "/notes/*body": [Home, {to: Note, with: {body: ":body"}}]
              "/find/:page??q=:q": [Home, {to: Find, with: {q: ":q", page: ":page"}}]
            """)
        let urls = result.plan.sequences.filter { $0.name.hasPrefix("link-") }.flatMap { $0.steps.compactMap { $0.params["url"]?.stringValue } }
        // (The plan takes each edge once: `/find` without its optional parts reaches the same one.)
        #expect(urls == ["/tags/x", "/notes/x", "/find/x?q="], "\(urls)")
        #expect(result.defects.filter { $0.kind == .brokenLink }.isEmpty, "\(result.defects.map(\.message))")
    }

    /// Strings made from the patterns graphs write match them, at the length the schema asks.
    @Test func patternsAreSampledByAStringMadeFromThem() throws {
        let patterns = [
            #"^t[0-9]+$"#, #"^[A-Z]{3}-\d{4}$"#, #"^(ord|inv)_[a-f0-9]{8}$"#, #"^[^@\s]+@[^@\s]+\.[a-z]{2,}$"#,
            #"^\w+(\.\w+)*$"#, #"^(?:[a-z]+-)*[a-z]+$"#, #"^v\d+\.\d+(\.\d+)?$"#, #"[-._a-z]"#, #"^\+?[1-9]\d{6,14}$"#,
            #"^(?<year>\d{4})-(?<month>0[1-9]|1[0-2])$"#, #"^\$\{[A-Z_]+\}$"#,
        ]
        // Each at its least length, and those that may grow at a length none of the common shapes has.
        for p in patterns {
            for minLength in p.contains("+") || p.contains("*") ? [1, 12] : [1] {
                var errors: [Schema.CompileError] = []
                let s = try #require(Schema.compile(["type": "string", "pattern": .string(p), "minLength": .int(minLength)], errors: &errors), "\(errors)")
                let v = try #require(SampleValues.value(for: s), "no sample for \(p) (minLength \(minLength))")
                #expect(s.validate(v) == nil, "\(p): \(JSONWriter.string(v))")
            }
        }
        // What it does not read makes nothing (and never a wrong string): lookaround, back references.
        for p in [#"^(?=x)x$"#, #"^(a)\1$"#, #"^\p{L}+$"#, #"^[a-"#, #"^[[:alpha:]]x$|^y[0-9]$"#] {
            #expect(PatternSample.strings(p).isEmpty, "\(p)")
        }
        // Bounded: nested repetitions stop at the length bound instead of growing without end.
        #expect(PatternSample.strings(#"^((a+)+)+$"#).allSatisfy { $0.count <= PatternSample.maxLength })
        #expect(PatternSample.strings(String(repeating: "(", count: 100) + "a" + String(repeating: ")", count: 100)).isEmpty)
        // Found by the graph fuzz target: `{-1,3}` was read as a count of -1 (Swift's `Int` takes a
        // sign), and writing it crashed `navd check` and `navd explore`. Counts are digits only.
        for p in [#"^[a-z]{-1,3}$"#, #"^a{+2}$"#, #"^a{1,-3}$"#, #"^a{ 2}$"#] {
            #expect(PatternSample.strings(p).isEmpty, "\(p)")
        }
        #expect(PatternSample.strings(#"^a{2,3}$"#).first == "aa")
        // Nested repetitions of nothing ended only after 64 writes at each level (`navd explore` on
        // a graph with this pattern ran for minutes): what writes nothing is written once.
        // Here 9 levels in a few hundred steps a string, the `a*` after them taken 0 to 64 times.
        let nested = "^" + String(repeating: "(", count: 8) + "()*" + String(repeating: ")*", count: 8) + "a*$"
        #expect(PatternSample.strings(nested, maxSteps: 200).map(\.count) == [0, 1, 2, 4, 8, 16, 32, 64])
        // And each string is bounded by its steps: here every `a` made costs a first option of 513
        // parts that fails at the length bound, so the longer strings (289 and 4,225 characters
        // asked) end at the step bound.
        #expect(PatternSample.strings(#"^((x{512}y|a)+)+$"#).map(\.count) == [1, 4, 9, 25, 81])
    }
}
