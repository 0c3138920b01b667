import Foundation
import JSON
import NavTesting
import Testing
@testable import NavGraph

#if canImport(Glibc)
import Glibc
#endif

/// Each diagnostic the loader gives, with its exact file, line, column and message.
@Suite struct DiagnosticTests {
    /// Loads inline module files; returns every diagnostic as printed.
    func check(_ files: [(String, String)]) -> [String] {
        GraphLoader.load(sources: files.map { GraphSource(file: $0.0, text: $0.1) }, baseDirectory: "/g").diagnostics.sorted.map(\.description)
    }

    func errors(_ files: [(String, String)]) -> [String] { check(files).filter { $0.contains(": error: ") } }

    static let app = """
        root: {stack: Home}
        coordinators:
          Home:
            opens: [Product]
          Product:
            setup: {type: object, required: [id], properties: {id: {type: string}}}
        """

    @Test func aValidGraphHasNoDiagnostics() {
        #expect(check([("app.yaml", Self.app)]) == [])
    }

    @Test func syntaxError() {
        #expect(errors([("app.yaml", "root: {stack: Home\ncoordinators: {}\n")]).first?.hasPrefix("app.yaml:2:") == true)
        let e = errors([("bad.yaml", "coordinators:\n  Home: [\n")])
        #expect(e.count == 1 && e[0].hasPrefix("bad.yaml:3:1: error: syntax error:"), "\(e)")
    }

    @Test func unknownKeyWithSuggestion() {
        let e = errors([("app.yaml", Self.app + "\n    presentaions: [push]\n")])
        #expect(e == ["app.yaml:7:5: error: unknown key `presentaions` in coordinator `app.Product`; did you mean `presentations`? allowed keys: setup, opens, presentations, preconditions, leave, access, mediation, identity, flow, tabs, back, description, title"])
    }

    @Test func unknownReferenceWithSuggestion() {
        let e = errors([("shop.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Prodcut]}
              Product: {}
            """)])
        #expect(e == ["shop.yaml:3:18: error: `shop.Prodcut` is not a coordinator; did you mean `shop.Product`?"])
    }

    @Test func unknownModule() {
        let e = errors([("shop.yaml", "root: {stack: Home}\ncoordinators:\n  Home: {opens: [acount.Login]}\n"),
                        ("account.yaml", "coordinators:\n  Login: {}\n")])
        #expect(e == ["shop.yaml:3:18: error: `acount.Login` refers to module `acount`, which does not exist; did you mean `account`?"])
    }

    @Test func duplicateNamesInAFileAndDuplicateModules() {
        let e = errors([("app.yaml", "root: {stack: Home}\ncoordinators:\n  Home: {}\n  Home: {}\n")])
        #expect(e == ["app.yaml:4:3: error: duplicate key `Home` (first at line 3): each name may appear once in a mapping; rename or merge the two entries"])
        let m = errors([("a.yaml", "module: shop\nroot: {stack: Home}\ncoordinators: {Home: {}}\n"),
                        ("b.yaml", "module: shop\ncoordinators: {Other: {}}\n")])
        #expect(m == ["b.yaml:1:9: error: module `shop` is declared twice (also by a.yaml); give each file its own `module:` name"])
    }

    @Test func theRestOfAYAMLFileIsCheckedAfterADuplicateKey() {
        let e = errors([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home:
                opens:
                - Nope
              "Home":
                opens:
                - Other
              Other: {opens: [Zip]}
            coordinators:
              Extra: {}
            routes:
              r: {to: Missing}
              r: {to: Home}
            """)])
        #expect(e.map { $0.prefix { $0 != " " } } == ["app.yaml:5:7:", "app.yaml:6:3:", "app.yaml:9:19:", "app.yaml:10:1:", "app.yaml:13:11:", "app.yaml:14:3:"], "\(e)")
        #expect(e[1].contains("duplicate key `Home` (first at line 3)") && e[3].contains("duplicate key `coordinators` (first at line 2)")
                && e[5].contains("duplicate key `r` (first at line 13)"), "\(e)")
        // In JSON too, the later key is reported and the rest checked.
        #expect(errors([("app.json", "{\"root\": {\"stack\": \"Home\"}, \"coordinators\": {\"Home\": {}, \"Home\": {}}}")])
                == ["app.json:1:58: error: duplicate key `Home` (first at line 1): each name may appear once in a mapping; rename or merge the two entries"])
    }

    @Test func noRootAndTwoRoots() {
        #expect(errors([("a.yaml", "coordinators: {Home: {}}\n")])
                == ["a.yaml:1:1: error: no module declares `root`; add `root: {stack: Home}` or `root: {tabs: [Home, cart.Cart]}` to one module file"])
        #expect(errors([("a.yaml", "root: {stack: Home}\ncoordinators: {Home: {}}\n"), ("b.yaml", "root: {stack: a.Home}\n")])
                == ["b.yaml:1:7: error: a second `root`: only one module may declare the root (the first is at a.yaml:1:7)"])
    }

    @Test func flowStepsMustBelongToTheFlowsModule() {
        let e = errors([
            ("cart.yaml", """
                root: {stack: Cart}
                coordinators:
                  Cart: {opens: [Checkout]}
                  Checkout:
                    flow: {start: Address, steps: [Address, account.Login]}
                  Address: {}
                """),
            ("account.yaml", "coordinators: {Login: {}}\n"),
        ])
        #expect(e == ["cart.yaml:5:45: error: flow step `account.Login` is not a coordinator of module `cart`: a flow's steps must be declared in the flow's own module"])
    }

    @Test func flowStartMustBeAStep() {
        let e = errors([("cart.yaml", """
            root: {stack: Cart}
            coordinators:
              Cart: {opens: [Checkout]}
              Checkout:
                flow: {start: Payment, steps: [Address]}
              Address: {}
              Payment: {}
            """)])
        #expect(e == ["cart.yaml:5:19: error: flow start `cart.Payment` is not among the flow's steps; add it to `steps`"])
    }

    @Test func invalidSchema() {
        let e = errors([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home:
                setup:
                  type: object
                  properties:
                    page: {type: integr}
            """)])
        #expect(e == ["app.yaml:7:22: error: invalid setup schema at `/properties/page/type`: `integr` is not a type; use object, string, number, integer, boolean, array or null; did you mean `integer`?"])
    }

    @Test func linkParameters() {
        let e = errors([("app.yaml", Self.app + """

            links:
              "/product/:id/:tab": [Home, {to: Product, with: {id: ":id"}}]
              "/p/:id": [Home, {to: Product, with: {id: ":pid"}}]
            """)])
        #expect(e == [
            "app.yaml:8:3: error: link `/product/:id/:tab` declares `:tab` but no entry uses it; fill a setup field with \":tab\" or remove it from the pattern",
            "app.yaml:9:3: error: link `/p/:id` declares `:id` but no entry uses it; fill a setup field with \":id\" or remove it from the pattern",
            "app.yaml:9:45: error: link `/p/:id` fills `id` with `:pid`, which the pattern does not declare; declare it in the path (/…/:pid) or the query (?pid=:pid)",
        ])
    }

    /// A link that gives a screen no field its setup requires: an error before the last screen (no
    /// URL can ever open it), a warning on the last (only an undeclared query value can give it).
    @Test func linkScreensMissingARequiredField() {
        let app = """
            root: {stack: Home}
            coordinators:
              Home:
                opens: [Product, Note]
              Product:
                opens: [Note]
                setup: {type: object, required: [id], properties: {id: {type: string}}}
              Note:
                setup: {type: object, required: [id, title], properties: {id: {type: string}, title: {type: string}}}
            links:
              "/p/new/note/:id": [Home, Product, {to: Note, with: {id: ":id"}}]
              "/notes/new": [Home, Note]
              "/p/:id": [Home, {to: Product, with: {id: ":id"}}]
            """
        #expect(check([("app.yaml", app)]) == [
            "app.yaml:11:29: error: link `/p/new/note/:id` gives `app.Product` no `id`, which its setup requires, so the link can never open; fill it in the entry's `with` from the pattern (id: \":id\") or with a constant",
            "app.yaml:11:38: warning: link `/p/new/note/:id` gives `app.Note` no `title`, which its setup requires: only a query value the pattern does not declare (?title=…) can; fill it in the entry's `with` from the pattern (title: \":title\") or with a constant",
            "app.yaml:12:24: warning: link `/notes/new` gives `app.Note` no `id`, `title`, which its setup requires: only a query value the pattern does not declare (?id=…) can; fill them in the entry's `with` from the pattern (id: \":id\", title: \":title\") or with a constant",
        ])
    }

    @Test func routesAndLinksToNowhere() {
        let e = errors([("app.yaml", Self.app + """

            routes:
              lost: {by: push}
              gone: {to: Missing}
            links:
              "/nowhere": []
            """)])
        #expect(e == [
            "app.yaml:8:3: error: route `app.lost` leads nowhere: add `to:` naming a coordinator",
            "app.yaml:9:14: error: `app.Missing` (target of route `app.gone`) is not a coordinator; module `app` declares Home, Product",
            "app.yaml:11:15: error: link `/nowhere` leads nowhere: map it to the stack it opens, such as [shop.Home, {to: shop.Product, with: {id: \":id\"}}]",
        ])
    }

    @Test func mediationMustReadADeclaredField() {
        let files = [("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home:
                opens: [Product]
              Product:
                setup: {type: object, required: [id], properties: {id: {type: string}}}
                opens: [Reviews]
              Reviews:
                mediation: {productId: "$source.Id"}
            """)]
        #expect(errors(files) == ["app.yaml:9:28: error: `app.Reviews` fills `productId` from `$source.Id`, but the setup of its source `app.Product` does not declare `Id`; did you mean `$source.id`?"])
    }

    @Test func recoveryByAFlowThatDoesNotExist() {
        let e = errors([("app.yaml", Self.app + """

                preconditions: [loggedIn]
            preconditions:
              loggedIn:
                check: {fact: loggedIn, equals: true}
                recover: {flow: Loginn}
            """)])
        #expect(e == ["app.yaml:11:21: error: `app.loggedIn` recovers with flow `app.Loginn`, which does not exist; no flow is declared"])
    }

    @Test func recoveryCycleDirectAndIndirect() {
        let direct = errors([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Login]}
              Login:
                flow: {start: Credentials}
                preconditions: [online]
              Credentials: {}
            preconditions:
              online:
                check: {fact: online, equals: true}
                recover: {flow: Login}
            """)])
        #expect(direct == ["app.yaml:11:14: error: recovery cycle: precondition `app.online` recovers with flow `app.Login`, which that precondition (directly or through other flows) guards (app.Login → app.Login); recover with a flow it does not guard"])
        let indirect = errors([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {opens: [A, B]}
              A:
                flow: {start: A1}
                preconditions: [p]
              A1: {}
              B:
                flow: {start: B1}
              B1:
                preconditions: [q]
            preconditions:
              p:
                check: {fact: p, exists: true}
                recover: {flow: B}
              q:
                check: {fact: q, exists: true}
                recover: {flow: A}
            """)])
        #expect(indirect.count == 2 && indirect.allSatisfy { $0.contains("recovery cycle") }, "\(indirect)")
        #expect(indirect.first?.hasPrefix("app.yaml:15:14: error: recovery cycle: precondition `app.p`") == true)
    }

    @Test func preconditionKindsWithMissingFields() {
        let e = errors([("app.yaml", Self.app + """

                preconditions: [a, b, c, d]
            preconditions:
              a: {check: {fact: x}}
              b: {check: {equals: 1}}
              c: {command: []}
              d: {timeout: 2s}
            """)])
        #expect(e == [
            "app.yaml:9:14: error: the check of `app.a` is missing its test: add one of `equals: VALUE`, `notEquals: VALUE` or `exists: true`",
            "app.yaml:10:14: error: the check of `app.b` is missing `fact`: the name of the session fact to test",
            "app.yaml:11:16: error: the command of `app.c` is empty; give the program and its arguments as a list, such as [scripts/in-stock.sh, \"{with.id}\"]",
            "app.yaml:12:3: error: precondition `app.d` has no kind; give it one of `check: {fact: …, equals: …}`, `command: [argv…]` or `provider: true`",
        ])
    }

    @Test func unknownPrecondition() {
        let e = errors([("app.yaml", Self.app + "\n    preconditions: [logedIn]\npreconditions:\n  loggedIn: {check: {fact: loggedIn, equals: true}}\n")])
        #expect(e == ["app.yaml:7:21: error: `app.logedIn` is not a precondition; did you mean `app.loggedIn`?"])
    }

    @Test func warningsForUnreachedCoordinatorsAndUnusedPreconditions() {
        let d = check([("app.yaml", Self.app + "\n  Orphan: {}\npreconditions:\n  unused: {provider: true}\n")])
        #expect(d == [
            "app.yaml:7:3: warning: coordinator `app.Orphan` cannot be reached: nothing opens it and no root, route or link leads to it",
            "app.yaml:9:3: warning: precondition `app.unused` guards no coordinator; use it in some `preconditions:` list or remove it",
        ])
    }

    @Test func everyProblemIsReportedInOnePassSortedByFileAndLine() {
        let d = errors([
            ("b.yaml", "coordinators:\n  X: {opens: [Nope]}\n  Y: {bogus: 1}\n"),
            ("a.yaml", "root: {stack: Home}\ncoordinators:\n  Home: {opens: [Missing]}\n"),
        ])
        #expect(d.count == 3)
        #expect(d.map { String($0.prefix(8)) } == ["a.yaml:3", "b.yaml:2", "b.yaml:3"])
    }

    @Test func jsonModuleFilesWork() {
        let d = check([("app.json", #"{"root": {"stack": "Home"}, "coordinators": {"Home": {"opens": ["Product"]}, "Product": {}}}"#)])
        #expect(d == [])
    }

    @Test func qualifiedAndUnqualifiedNamesResolve() throws {
        let (g, d) = GraphLoader.load(sources: [
            GraphSource(file: "shop.yaml", text: "root: {tabs: [Home, cart.Cart]}\ncoordinators:\n  Home: {opens: [cart.Cart, shop.Home]}\n"),
            GraphSource(file: "cart.yaml", text: "coordinators:\n  Cart: {opens: [shop.Home]}\n"),
        ], baseDirectory: "/")
        #expect(!d.hasErrors)
        let graph = try #require(g)
        let home = try #require(graph.coordinator(named: "shop.Home"))
        #expect(graph.coordinator(named: "Home") === home, "unique unqualified names resolve too")
        #expect(home.opens.map { graph.coordinators[$0].name } == ["cart.Cart", "shop.Home"])
        guard case .tabs(let tabs) = graph.root else { Issue.record("tabs root expected"); return }
        #expect(tabs.map { graph.coordinators[$0].name } == ["shop.Home", "cart.Cart"])
    }
}

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
        #expect(diags.errors.map(\.message).contains { $0.contains("more than 200000 YAML nodes") }, "\(diags.errors)")
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

    @Test func aFIFONamedLikeAModuleIsNotOpened() throws {
        let d = try dir(["app.yaml": "root: {stack: Home}\ncoordinators:\n  Home: {}\n"])
        defer { d.remove() }
        mkfifo(d.file("pipe.yaml"), 0o600)
        let (g, diags) = GraphLoader.load(directory: d.path)
        #expect(g == nil)
        #expect(diags.errors.first?.message.contains("not a regular file") == true, "\(diags.errors)")
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
