import Foundation
import JSON
import NavTesting
import Testing
@testable import NavGraph
#if canImport(Glibc)
import Glibc
#endif

/// Hostile graph files: bounded, reported without their content.
@Suite struct HostileGraphFileTests {
    private func dir(_ files: [String: String]) throws -> TempDir {
        let d = TempDir()
        for (name, text) in files { try text.write(toFile: d.file(name), atomically: true, encoding: .utf8) }
        return d
    }

    /// `x0: &a0 [lol ×10]`, then `x{i}: &a{i} [*a{i-1} ×10]`: 500 bytes that expand to 10^10 nodes.
    @Test func aYAMLAliasBombIsStoppedAtTheNodeLimit() throws {
        var lines = ["x0: &a0 [" + Array(repeating: "lol", count: 10).joined(separator: ",") + "]"]
        for i in 1..<10 { lines.append("x\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 10).joined(separator: ",") + "]") }
        let d = try dir(["app.yaml": lines.joined(separator: "\n") + "\n"])
        defer { d.remove() }
        let (g, diags) = GraphLoader.load(directory: d.path)
        #expect(g == nil)
        #expect(diags.errors.map(\.message).contains { $0.contains("more than \(GraphLimits().maxNodes) YAML nodes (the --max-graph-nodes limit)") }, "\(diags.errors)")
    }

    /// Nesting past libyaml's 1000 levels is named as a depth, not as libyaml's own function.
    @Test func nestingPastTheReadersDepthIsNamedAsSuch() throws {
        let d = try dir(["app.yaml": "root: {stack: A}\ncoordinators:\n  A: {setup: " + String(repeating: "[", count: 1200) + "]\n"])
        defer { d.remove() }
        let (g, diags) = GraphLoader.load(directory: d.path)
        #expect(g == nil)
        let m = diags.errors.map(\.message)
        #expect(m.contains { $0.contains("more than 1000 levels deep") }, "\(m)")
        #expect(!m.contains { $0.contains("yaml_set_max_nest_level") }, "\(m)")
    }

    /// A timeout too long for any clock (`1e31s`, found by the graph fuzz target) is a diagnostic,
    /// not a crash.
    @Test func aTimeoutTooLongToHoldIsAnError() throws {
        let d = try dir(["app.yaml": """
            root: {stack: Home}
            coordinators:
              Home: {opens: [P]}
              P: {preconditions: [c]}
            preconditions:
              c: {command: [echo], timeout: 10000000000000000000000000000000s}
            """])
        defer { d.remove() }
        let (g, diags) = GraphLoader.load(directory: d.path)
        #expect(g == nil && diags.errors.contains { $0.message.contains("is not a duration") }, "\(diags.errors)")
        #expect(parseDuration("1e300s") == nil && parseDuration(.double(1e30)) == nil && parseDuration("1.5s") == 1_500)
    }

    /// 3,000 unknown coordinator names: each is an error, the first 20 with a hint (a hint compares
    /// the name with every coordinator), so checking stays linear in the graph.
    @Test func thousandsOfUnknownNamesGetHintsOnlyAtFirst() throws {
        let n = 3_000
        var lines = ["root: {stack: Home}", "coordinators:", "  Home: {opens: [\((0..<n).map { "C\($0)" }.joined(separator: ", "))]}"]
        lines += (0..<n).map { "  C\($0): {opens: [Nowhere\($0)]}" }
        let d = try dir(["app.yaml": lines.joined(separator: "\n") + "\n"])
        defer { d.remove() }
        let (g, diags) = GraphLoader.load(directory: d.path)
        #expect(g == nil && diags.errors.count == n)
        #expect(diags.errors.filter { $0.message.contains("did you mean") || $0.message.contains("declares") }.count == 20)
    }

    /// Names are names: a coordinator, route or module name holding shell or terminal code is
    /// refused, naming the character.
    @Test func namesHoldingShellOrTerminalCodeAreRefused() throws {
        let d = try dir(["app.yaml": """
            root: {stack: Home}
            coordinators:
              Home: {opens: ["$(id>/tmp/x)"]}
              "$(id>/tmp/x)": {}
              "a`b`": {}
              "Bell\\u0007": {}
              "Two words": {}
            routes:
              "go$(id)": Home
            """, "m.yaml": "module: \"m\\e[31m\"\nroot: {stack: X}\ncoordinators:\n  X: {}\n"])
        defer { d.remove() }
        let (g, diags) = GraphLoader.load(directory: d.path)
        let messages = diags.errors.map(\.message)
        #expect(g == nil)
        #expect(messages.contains { $0.contains("`$(id>/tmp/x)` is not a valid coordinator name (it holds `$`)") }, "\(messages)")
        #expect(messages.contains { $0.contains("is not a valid coordinator name (it holds `` ` ``)") || $0.contains("a`b`") }, "\(messages)")
        #expect(messages.contains { $0.contains("\\u{7}") }, "\(messages)")
        #expect(messages.contains { $0.contains("is not a valid route name") }, "\(messages)")
        #expect(messages.contains { $0.contains("`Two words` is not a valid coordinator name (it holds a space)") }, "\(messages)")
        #expect(messages.contains { $0.contains("is not a valid module name (it holds \\u{1b})") }, "\(messages)")
    }

    @Test func aFileOverTheSizeLimitIsNotRead() throws {
        let d = try dir(["app.yaml": "root: {stack: Home}\ncoordinators:\n  Home: {}\n" + String(repeating: "# padding\n", count: 500)])
        defer { d.remove() }
        var limits = GraphLimits()
        limits.maxFileBytes = 2048
        let (g, diags) = GraphLoader.load(directory: d.path, limits: limits)
        #expect(g == nil)
        #expect(diags.errors.first?.message.contains("may be at most 2048 (the --max-graph-file limit)") == true, "\(diags.errors)")
    }

    /// Each file within `--max-graph-file` and `--max-graph-nodes` alone, 10,000 of them could be
    /// 40 GB of text and billions of nodes, all held before the check: the files of a graph are
    /// bounded together, in bytes (the file that would pass the bound is not read) and in nodes.
    /// The graph is refused with that one error, not with what the files left out would have named.
    @Test func theModuleFilesAreBoundedTogether() throws {
        // Four modules of 20 screens, each opening the next module's first screen.
        var files: [String: String] = [:]
        for (i, m) in ["a", "b", "c", "d"].enumerated() {
            var text = i == 0 ? "root: {stack: a.S0}\n" : ""
            text += "coordinators:\n"
            for j in 0..<20 { text += "  S\(j): {opens: [S\((j + 1) % 20)\(i < 3 ? ", \(["a", "b", "c", "d"][i + 1]).S0" : "")]}\n" }
            files["\(m).yaml"] = text
        }
        let d = try dir(files)
        defer { d.remove() }
        let sizes = ["a", "b", "c", "d"].map { files["\($0).yaml"]!.utf8.count }
        var limits = GraphLimits()
        limits.maxTotalBytes = sizes.reduce(0, +)
        let whole = GraphLoader.load(directory: d.path, limits: limits)
        #expect(whole.graph?.coordinators.count == 80, "\(whole.diagnostics.errors)")

        limits.maxTotalBytes = sizes[0] + sizes[1] + sizes[2] - 1
        let (g, diags) = GraphLoader.load(directory: d.path, limits: limits)
        #expect(g == nil)
        #expect(diags.errors.count == 1 && diags.errors.first?.location.file.hasSuffix("/c.yaml") == true, "\(diags.errors)")
        #expect(diags.errors.first?.message.contains("the graph's module files would be \(sizes[0] + sizes[1] + sizes[2]) bytes together; a graph may be at most \(limits.maxTotalBytes) (the --max-graph-bytes limit)") == true, "\(diags.errors)")
        // The same bound for files given as text (navd's embedded example, tests).
        let sources = ["a", "b", "c", "d"].map { GraphSource(file: "\($0).yaml", text: files["\($0).yaml"]!) }
        let given = GraphLoader.load(sources: sources, baseDirectory: "/", limits: limits)
        #expect(given.graph == nil && given.diagnostics.errors.count == 1 && given.diagnostics.errors.first?.location.file == "c.yaml", "\(given.diagnostics.errors)")

        // Nodes: each file alone is far within the bound; the four together are not.
        limits = GraphLimits()
        var one = Diagnostics()
        var spent = Doc.NodeBudget(1_000_000)
        _ = Doc.parse(files["a.yaml"]!, file: "a.yaml", budget: &spent, diagnostics: &one)
        let perFile = spent.max - spent.left
        limits.maxNodes = perFile * 4 - 40
        let nodes = GraphLoader.load(directory: d.path, limits: limits)
        #expect(nodes.graph == nil && nodes.diagnostics.errors.count == 1, "\(nodes.diagnostics.errors)")
        #expect(nodes.diagnostics.errors.first?.location.file.hasSuffix("/d.yaml") == true, "\(nodes.diagnostics.errors)")
        #expect(nodes.diagnostics.errors.first?.message.contains("YAML nodes of the module files read before it, the file expands the graph to more than \(limits.maxNodes) (the --max-graph-nodes limit, over every module file)") == true, "\(nodes.diagnostics.errors)")
        limits.maxNodes = perFile * 4 + 40
        #expect(GraphLoader.load(directory: d.path, limits: limits).graph != nil)
    }

    /// A set in `opens` brings each of its coordinators, and a guard is checked against every
    /// coordinator: a few words can describe millions of edges (10,000 screens each opening a set of
    /// all 10,000 took 7.7 GB and 25 s). `--max-graph-edges` bounds them: a graph at the bound loads,
    /// one edge past it is refused where it passes, by a set or by a guard.
    @Test func setsAndGuardsAreBoundedByTheEdgesTheyBring() throws {
        func graph(screens: Int, opensAll: Int, guards: Int) -> [GraphSource] {
            var y = "root: {stack: S0}\nabilities:\n  all: [" + (0..<screens).map { "S\($0)" }.joined(separator: ", ") + "]\ncoordinators:\n"
            for i in 0..<screens { y += "  S\(i): {opens: \(i < opensAll ? "[all]" : "[]")}\n" }
            y += "preconditions:\n" + (0..<max(guards, 1)).map { "  p\($0): {check: {fact: f\($0), exists: true}}\n" }.joined()
            if guards > 0 { y += "guards:\n" + (0..<guards).map { "  - p\($0)\n" }.joined() }
            return [GraphSource(file: "app.yaml", text: y)]
        }
        var limits = GraphLimits()
        limits.maxEdges = 10_000
        // 100 screens: 90 open the set of 100 (9,000 edges), and 10 guards check each of them (1,000).
        let atTheBound = GraphLoader.load(sources: graph(screens: 100, opensAll: 90, guards: 10), baseDirectory: "/", limits: limits)
        #expect(atTheBound.graph != nil && !atTheBound.diagnostics.hasErrors, "\(atTheBound.diagnostics.errors)")
        #expect(atTheBound.graph?.coordinators[0].opens.count == 100 && atTheBound.graph?.coordinators[0].preconditions.count == 10)
        // One more screen that opens the set, or one more guard, passes it: said where.
        for (screens, opensAll, guards, says, line) in [(100, 91, 10, "the guard `p9` (checked against each of 100 coordinators)", 126),
                                                        (101, 100, 0, "`opens: [all]` of `app.S99` (a set of 101)", 104)] {
            let past = GraphLoader.load(sources: graph(screens: screens, opensAll: opensAll, guards: guards), baseDirectory: "/", limits: limits)
            let errors = past.diagnostics.errors
            #expect(past.graph == nil && errors.count == 1, "\(errors)")
            #expect(errors.first?.message.hasPrefix("\(says) brings the graph past 10000 edges (the --max-graph-edges limit)") == true, "\(errors)")
            #expect(errors.first?.location.line == line, "\(errors)")
        }
    }

    /// Thousands of errors cost each its own: a "did you mean" looks at every candidate, so only the
    /// first 20 errors of a graph get one (2,000 unknown precondition names among 2,000 took seconds,
    /// 20,000 minutes); a name list in an error names its first 20 (a tab container's 2,000 tabs in
    /// each of 2,000 errors would be 4,000,000 names).
    @Test func thousandsOfErrorsEachCostTheirOwn() {
        var y = "root: {stack: C0}\ncoordinators:\n"
        for i in 0..<2_000 { y += "  C\(i): {preconditions: [pp\(i)]}\n" }
        y += "  T: {tabs: [" + (0..<2_000).map { "C\($0)" }.joined(separator: ", ") + "]}\n"
        y += "  X: {}\n"
        y += "preconditions:\n" + (0..<2_000).map { "  p\($0): {check: {fact: f, exists: true}}\n" }.joined()
        y += "routes:\n" + (0..<2_000).map { "  r\($0): {to: X, by: select}\n" }.joined()
        let diagnostics = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: y)], baseDirectory: "/").diagnostics
        let errors = diagnostics.errors.map(\.message)
        let selects = diagnostics.warnings.map(\.message).filter { $0.contains("selects `app.X`") }
        #expect(selects.count == 2_000 && selects.allSatisfy { $0.contains("the tabs start with app.C0, app.C1, ") && $0.contains(" … (2000 in all))") },
                "\(selects.first ?? "")")
        let unknown = errors.filter { $0.contains("is not a precondition") }
        #expect(unknown.count == 2_000)
        #expect(unknown.filter { $0.contains("did you mean") }.count == 20, "\(unknown.prefix(3))")
        #expect(unknown.first == "`app.pp0` is not a precondition; did you mean `app.p0`?", "\(unknown.first ?? "")")
    }

    @Test func aFIFONamedLikeAModuleIsNotOpened() throws {
        let d = try dir(["app.yaml": "root: {stack: Home}\ncoordinators:\n  Home: {}\n"])
        defer { d.remove() }
        mkfifo(d.file("pipe.yaml"), 0o600)
        let (g, diags) = GraphLoader.load(directory: d.path)
        #expect(g == nil)
        #expect(diags.errors.first?.message.contains("not a regular file") == true, "\(diags.errors)")
    }

    /// A graph says what navd runs: one every user may change (its directory, a module file, a
    /// command's program or a directory on its way there) is refused, sticky directory or not; a
    /// group's write is left to the owner.
    @Test func aGraphEveryUserMayChangeIsRefused() throws {
        let app = "root: {stack: Home}\ncoordinators:\n  Home: {opens: [A]}\n  A: {preconditions: [ok]}\npreconditions:\n  ok: {command: [tools/bin/ok.sh, \"{to}\"]}\n"
        let d = try dir(["app.yaml": app])
        defer { d.remove() }
        try FileManager.default.createDirectory(atPath: d.file("tools/bin"), withIntermediateDirectories: true)
        try "#!/bin/sh\nexit 0\n".write(toFile: d.file("tools/bin/ok.sh"), atomically: true, encoding: .utf8)
        for path in [d.path, d.file("tools"), d.file("tools/bin")] { chmod(path, 0o755) }
        chmod(d.file("tools/bin/ok.sh"), 0o755)
        chmod(d.file("app.yaml"), 0o644)
        #expect(GraphLoader.load(directory: d.path).graph != nil)
        for (path, mode, says) in [(d.path, 0o777, "the graph's directory is writable by every user (mode 0777)"),
                                   (d.path, 0o1777, "the graph's directory is writable by every user (mode 01777)"),
                                   (d.file("app.yaml"), 0o666, "the module file is writable by every user (mode 0666)"),
                                   (d.file("tools"), 0o777, "`tools/bin/ok.sh`, which precondition `app.ok` runs: \(d.file("tools")) is writable by every user"),
                                   (d.file("tools/bin/ok.sh"), 0o757, "\(d.file("tools/bin/ok.sh")) is writable by every user (mode 0757)")] {
            var st = stat()
            stat(path, &st)
            chmod(path, mode_t(mode))
            let (g, diags) = GraphLoader.load(directory: d.path)
            #expect(g == nil, "\(path) \(String(mode, radix: 8))")
            #expect(diags.errors.contains { $0.message.contains(says) && $0.message.contains("chmod o-w") }, "\(diags.errors)")
            chmod(path, st.st_mode & 0o7777)
        }
        chmod(d.path, 0o775)
        chmod(d.file("app.yaml"), 0o664)
        #expect(GraphLoader.load(directory: d.path).graph != nil, "a group's write is the owner's choice")
    }

    /// A link to some other file (a secret, say) is reported without a word of its content.
    @Test func aFileThatIsNotAModuleIsReportedWithoutItsContent() throws {
        let d = try dir(["app.yaml": "root: {stack: Home}\ncoordinators:\n  Home: {}\n",
                         "secret.yaml": "api_token_x9: hunter2-very-secret\npassword: swordfish\n"])
        defer { d.remove() }
        let (g, diags) = GraphLoader.load(directory: d.path)
        #expect(g == nil)
        let text = diags.all.map(\.description).joined(separator: "\n")
        #expect(text.contains("not a module file"), "\(text)")
        for secret in ["api_token_x9", "hunter2", "password", "swordfish"] { #expect(!text.contains(secret), "\(text)") }
    }

    /// Found by the graph fuzz target: an empty file gave no graph and no diagnostic at all.
    @Test func anEmptyFileIsReported() throws {
        let (g, diags) = GraphLoader.load(sources: [GraphSource(file: "empty.yaml", text: "# nothing\n")], baseDirectory: "/g")
        #expect(g == nil)
        #expect(diags.errors.first?.message.contains("the file is empty") == true, "\(diags.errors)")
    }

    /// A near miss of a module key is still named, with the key it resembles.
    @Test func aMisspeltModuleKeyIsStillNamed() throws {
        let d = try dir(["app.yaml": "root: {stack: Home}\ncoordinator:\n  Home: {}\n"])
        defer { d.remove() }
        let (_, diags) = GraphLoader.load(directory: d.path)
        #expect(diags.errors.map(\.message).contains { $0.contains("unknown key `coordinator`") && $0.contains("did you mean `coordinators`") }, "\(diags.errors)")
    }
}

/// `abilities:`: named lists of coordinators that `opens` uses by name, across modules too.
@Suite struct AbilityTests {
    func load(_ files: [(String, String)]) -> (NavigationGraph?, [String]) {
        let (g, d) = GraphLoader.load(sources: files.map { GraphSource(file: $0.0, text: $0.1) }, baseDirectory: "/g")
        return (g, d.sorted.map(\.description).filter { $0.contains(": error: ") })
    }

    @Test func opensTakesAbilitySetsFromItsModuleAndOthers() throws {
        let (g, e) = load([
            ("app.yaml", """
                root: {stack: Home}
                abilities:
                  browse: [Product, Search]
                coordinators:
                  Home: {opens: [browse, Search, shop.buy]}
                  Product: {opens: [browse]}
                  Search: {}
                """),
            ("shop.yaml", "abilities: {buy: [Cart]}\ncoordinators: {Cart: {opens: [app.browse]}}\n"),
        ])
        #expect(e == [])
        let graph = try #require(g)
        func opens(_ name: String) -> [String] {
            let c = graph.coordinators.first { $0.name == name }!
            return c.opens.map { graph.coordinators[$0].name }
        }
        #expect(opens("app.Home") == ["app.Product", "app.Search", "shop.Cart"], "a set's member listed again is not a duplicate")
        #expect(opens("app.Product") == ["app.Product", "app.Search"])
        #expect(opens("shop.Cart") == ["app.Product", "app.Search"])
    }

    @Test func badAbilitySetsAreErrorsWithTheirPlace() {
        let (_, e) = load([("app.yaml", """
            root: {stack: Home}
            abilities:
              Home: [Search]
              nested: [more]
              more: [Serch]
            coordinators:
              Home: {opens: [nested, nowhere]}
              Search: {}
            """)])
        #expect(e.contains { $0.hasPrefix("app.yaml:3:3: error: ability set `app.Home` has the name of a coordinator") }, "\(e)")
        #expect(e.contains { $0.hasPrefix("app.yaml:4:12: error: ability set `app.nested` lists the ability set `more`") }, "\(e)")
        #expect(e.contains { $0.hasPrefix("app.yaml:5:10: error: `app.Serch` (in ability set `app.more`) is not a coordinator; did you mean `app.Search`?") }, "\(e)")
        #expect(e.contains { $0.hasPrefix("app.yaml:7:26: error: `app.nowhere` is not a coordinator") }, "\(e.joined(separator: "\n"))")
    }
}

/// Constants of routes and links are checked against the target's setup, and a link's screens
/// against `opens`, when the graph is loaded (`navd check`).
@Suite struct ConstantCheckTests {
    func errors(_ text: String) -> [String] {
        GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: text)], baseDirectory: "/g").diagnostics.sorted.map(\.description)
            .filter { $0.contains(": error: ") }
    }

    static let base = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Product, Wizard]}
          Product:
            setup: {type: object, required: [id], properties: {id: {type: string, pattern: "^p[0-9]+$"}, count: {type: integer}}, additionalProperties: false}
            opens: [Reviews]
          Reviews: {}
          Wizard: {flow: {start: One, steps: [One, Two]}}
          One: {}
          Two: {}

        """

    @Test func constantsTheSetupNeverAcceptsAreErrors() {
        let e = errors(Self.base + """
            routes:
              bad: {to: Product, with: {id: "x1"}}
              unknown: {to: Product, with: {colour: red}}
              fine: {to: Product, with: {id: p1, count: 2}}
            links:
              "/p/:n": [Home, {to: Product, with: {id: ":n", count: "many"}}]
              "/q/:n": [Home, {to: Product, with: {id: ":n", count: "3"}}]
            """)
        #expect(e.count == 3, "\(e)")
        #expect(e.contains { $0.hasPrefix("app.yaml:12:33: error: route `app.bad` gives `app.Product` the constant id: \"x1\", which its setup never accepts") }, "\(e)")
        #expect(e.contains { $0.contains("route `app.unknown` gives `app.Product` the constant colour: \"red\"") && $0.contains("declares no field `colour` and allows no others") }, "\(e)")
        #expect(e.contains { $0.hasPrefix("app.yaml:16:57: error: link `/p/:n` gives `app.Product` the constant count: \"many\"") }, "\(e)")
    }

    @Test func aLinkWhoseScreensBreakOpensIsAnError() {
        let e = errors(Self.base + """
            links:
              "/r/:n": [Home, {to: Product, with: {id: ":n"}}, Reviews]
              "/skip": [Home, Reviews]
              "/wizard": [Home, Wizard, Two]
              "/wizard-skip": [Wizard, Home]
            """)
        #expect(e.count == 2, "\(e)")
        #expect(e.contains { $0.hasPrefix("app.yaml:13:19: error: link `/skip` puts `app.Reviews` above `app.Home`, which cannot open it: the opens of `app.Home` are app.Product, app.Wizard") }, "\(e)")
        #expect(e.contains { $0.contains("link `/wizard-skip` puts `app.Home` above `app.Wizard`, which cannot open it: the opens of `app.One` are empty") }, "\(e)")
    }
}

/// `redirect:` of a precondition and `then:` of a flow name real coordinators, with the shape checked.
@Suite struct NavigationSpecTests {
    @Test func redirectsAndThensAreResolvedOrReported() {
        let text = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Flow], preconditions: [a, b]}
              Flow: {flow: {start: Step, then: {to: Hme, with: {x: "$result..x"}}}}
              Step: {}
              SignIn: {presentations: [present]}
            preconditions:
              a: {check: {fact: a, equals: 1}, redirect: {to: SignIn, by: push}}
              b: {check: {fact: b, equals: 1}, redirect: {go: SignIn}}
            """
        let (g, d) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: text)], baseDirectory: "/g")
        let e = d.sorted.map(\.description).filter { $0.contains(": error: ") }
        #expect(g == nil && e.count == 5, "\(e)")
        #expect(e.contains { $0.hasPrefix("app.yaml:4:41: error: `app.Hme` (the `then` of flow `app.Flow`) is not a coordinator; did you mean `app.Home`?") }, "\(e)")
        #expect(e.contains { $0.contains("`$result..x` is not a result reference") }, "\(e)")
        #expect(e.contains { $0.contains("the `redirect` of precondition `app.a` shows `app.SignIn` by push, which its `presentations` do not allow") }, "\(e)")
        #expect(e.contains { $0.contains("unknown key `go` in the `redirect` of precondition `app.b`; did you mean `to`?") }, "\(e)")
    }

    /// `then:` written beside `flow:` (a key of the flow coordinator) is the flow's `then`; written on
    /// a screen, or in both places, it is reported where it stands.
    @Test func aThenBesideItsFlowIsTheFlows() throws {
        let good = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Flow]}
              Flow:
                flow: {start: Step}
                then: {to: Done, with: {x: "$result.x"}}
              Step: {}
              Done: {setup: {type: object, properties: {x: {type: string}}}}
            """
        let (g, d) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: good)], baseDirectory: "/g")
        let graph = try #require(g, "\(d.sorted.map(\.description))")
        let flow = try #require(graph.coordinators.first { $0.name == "app.Flow" }?.flow)
        #expect(flow.then.map { graph.coordinators[$0.to].name } == "app.Done")
        let bad = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Flow], then: Done}
              Flow:
                flow: {start: Step, then: Done}
                then: Done
              Step: {}
              Done: {}
            """
        let e = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: bad)], baseDirectory: "/g").diagnostics.sorted.map(\.description)
            .filter { $0.contains(": error: ") }
        #expect(e == ["app.yaml:3:31: error: `then` says where navigation continues when a flow completes, and `app.Home` is not a flow; declare `flow:` or remove `then`",
                      "app.yaml:6:11: error: flow `app.Flow` declares `then` twice, in its `flow` (line 5) and beside it; keep one"], "\(e)")
    }
}

/// `tabs:` on a coordinator (a tab container) is checked like the root's tabs, and more.
@Suite struct TabContainerDiagnosticTests {
    @Test func containersAreCheckedAtLoad() {
        let text = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Box, Both]}
              Box: {tabs: [One, Inner, Needs, One]}
              Inner: {tabs: [One]}
              One: {}
              Needs: {setup: {type: object, required: [id], properties: {id: {type: string}}}}
              Both: {tabs: [One], flow: {start: One}}
            """
        let e = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: text)], baseDirectory: "/g").diagnostics.sorted.map(\.description)
            .filter { $0.contains(": error: ") }
        #expect(e.contains { $0.contains("`app.One` is listed twice in the `tabs` of `app.Box`") }, "\(e)")
        #expect(e.contains { $0.contains("`app.Inner`, a tab of `app.Box`, is a tab container itself") }, "\(e)")
        #expect(e.contains { $0.contains("`app.Needs`, a tab of `app.Box`, starts with no params") }, "\(e)")
        #expect(e.contains { $0.contains("`app.Both` is a flow and a tab container") }, "\(e)")
    }
}
