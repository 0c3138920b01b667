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
        #expect(e == ["app.yaml:7:5: error: unknown key `presentaions` in coordinator `app.Product`; did you mean `presentations`? allowed keys: setup, opens, presentations, preconditions, leave, access, mediation, identity, flow, then, tabs, back, description, title (and extensions, ignored: keys starting with x-)"])
    }

    /// Keys starting with `x-` are extensions, ignored wherever the format's own words are the keys
    /// (a module's top level, a coordinator, a flow, a precondition, its check and recovery, a
    /// route, a link entry, `root`, a guard, a setup schema): a file keeps YAML anchors there. Where
    /// the keys are names (coordinators, fields), such a key is a name as any other. A module file's
    /// `$schema` (a JSON file naming its schema for editors) is read past too.
    @Test func extensionKeysAreIgnoredWhereKeysAreTheFormatsWords() throws {
        let text = """
            x-shared: &shared
              opens: [Product]
            x-id: &id {type: object, required: [id], properties: {id: {type: string}}, x-ui: {order: 1}}
            root: {stack: Home, x-note: the storefront}
            guards: [{precondition: ready, except: [Home], x-why: maintenance}]
            coordinators:
              Home:
                <<: *shared
                x-owner: catalogue team
              Product:
                setup: *id
                x-figma: "https://example.invalid/frame/1"
              Wizard:
                flow: {steps: [Step], x-analytics: wizard}
                then: {to: Product, with: {id: "$result.id"}, x-note: after}
              Step: {}
              x-later: {}
            routes:
              product: {to: Product, x-deprecated: true}
            links:
              "/p/:id": [Home, {to: Product, with: {id: ":id"}, x-note: the product}]
            preconditions:
              ready:
                check: {fact: ready, notEquals: false, x-note: set by the backend}
                recover: {command: ["true"], x-note: warms the cache}
                x-owner: ops
            """
        let (g, d) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: text)], baseDirectory: "/")
        #expect(d.all.filter { $0.severity == .error }.map(\.description) == [])
        let graph = try #require(g)
        let home = try #require(graph.coordinator(named: "app.Home"))
        let product = try #require(graph.coordinator(named: "app.Product"))
        #expect(home.opensSet.contains(product.index), "the anchor's opens were merged into Home")
        #expect(product.setup?.required == ["id"])
        // Under `coordinators:` the key is a name: x-later is a coordinator.
        #expect(graph.coordinator(named: "app.x-later") != nil)
        // A JSON module file that names its schema for editors.
        let json = #"{"$schema": "../Protocol/navgraph.schema.json", "root": {"stack": "Home"}, "coordinators": {"Home": {}}}"#
        #expect(check([("app.json", json)]) == [])
        // An x- key is never taken for a misspelling, and a key without the prefix still is an error.
        let e = errors([("app.yaml", Self.app + "\n    xnote: 1\n")])
        #expect(e.count == 1 && e[0].contains("unknown key `xnote` in coordinator `app.Product`"), "\(e)")
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

    /// Without `start` a flow starts with the first of its `steps`; with neither it is an error.
    @Test func aFlowWithoutStartStartsWithItsFirstStep() throws {
        let graph = GraphLoader.load(sources: [GraphSource(file: "cart.yaml", text: """
            root: {stack: Cart}
            coordinators:
              Cart: {opens: [Checkout]}
              Checkout:
                flow: {steps: [Address, Payment]}
              Address: {}
              Payment: {}
            """)], baseDirectory: "/g")
        #expect(graph.diagnostics.sorted.map(\.description) == [])
        let g = try #require(graph.graph)
        let checkout = try #require(g.coordinator(named: "cart.Checkout"))
        #expect(checkout.flowStart == g.coordinator(named: "cart.Address")?.index)
        let e = errors([("cart.yaml", """
            root: {stack: Cart}
            coordinators:
              Cart: {opens: [Checkout]}
              Checkout:
                flow: {result: {type: object}}
            """)])
        #expect(e == ["cart.yaml:5:11: error: flow `cart.Checkout` has neither `start` nor `steps`; add `steps:` listing its screens in order (the first is where it starts), or `start:` naming its first step"])
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
              "/o/:id?": [Home, {to: Product, with: {id: ":id?"}}]
              "/r/*id": [Home, {to: Product, with: {id: ":*id", ref: ":ref?"}}]
            """)])
        #expect(e == [
            "app.yaml:8:3: error: link `/product/:id/:tab` declares `:tab` but no entry uses it; fill a setup field with \":tab\" or remove it from the pattern",
            "app.yaml:9:3: error: link `/p/:id` declares `:id` but no entry uses it; fill a setup field with \":id\" or remove it from the pattern",
            "app.yaml:9:45: error: link `/p/:id` fills `id` with `:pid`, which the pattern does not declare; declare it in the path (/…/:pid) or the query (?pid=:pid)",
            // The pattern's marks written in `with` too: one error each, saying how to write it.
            "app.yaml:10:46: error: link `/o/:id?` fills `id` with `:id?`; `with` names a parameter without the pattern's marks: write `:id`",
            "app.yaml:11:45: error: link `/r/*id` fills `id` with `:*id`; `with` names a parameter without the pattern's marks: write `:id`",
            "app.yaml:11:58: error: link `/r/*id` fills `ref` with `:ref?`, which the pattern does not declare; declare it in the path (/…/:ref?) or the query (?ref=:ref), and write `:ref` in `with`",
        ])
    }

    /// `by: select` of a route or a `then` to a coordinator no tab starts with always fails at run
    /// time: an error that names the tabs (a redirect's, a warning). A tab of a tab container counts.
    /// `by: select` of a route, a `then` or a redirect to a coordinator no tab starts with always
    /// fails at run time (a redirect's, except in links): a warning that names the tabs. A tab of a
    /// tab container counts; a route without `by` to a target that allows only select selects it.
    @Test func selectingWhatNoTabStartsWith() {
        let all = check([("app.yaml", """
            root: {tabs: [Home, Shop]}
            coordinators:
              Home: {opens: [Product, Inner, Wizard]}
              Shop: {preconditions: [p]}
              Product: {}
              Inner: {tabs: [Deep]}
              Deep: {}
              Wizard: {flow: {steps: [Step], then: {to: Product, by: select}}}
              Step: {}
              Kiosk: {presentations: [select]}
            routes:
              toProduct: {to: Product, by: select}
              toDeep: {to: Deep, by: select}
              toShop: {to: Shop, by: select}
              toKiosk: Kiosk
            preconditions:
              p: {check: {fact: a, exists: true}, redirect: {to: Product, by: select}}
            """)])
        let tabs = "(select shows the tab whose stack starts with its target; the tabs start with app.Home, app.Shop, app.Deep)"
        let always = ": navigating by it always fails (notAllowed); show it by push or present, or name a tab"
        #expect(all == [
            "app.yaml:8:58: warning: the `then` of flow `app.Wizard` selects `app.Product`, but no tab starts with it \(tabs)\(always)",
            "app.yaml:10:3: warning: `app.Kiosk` may only be selected (presentations: [select]), but no tab starts with it: no navigation can show it (only a deep link whose first screen it is); add push or present to its presentations, or make it a tab",
            "app.yaml:12:32: warning: route `app.toProduct` selects `app.Product`, but no tab starts with it \(tabs)\(always)",
            "app.yaml:15:12: warning: route `app.toKiosk` selects `app.Kiosk`, but no tab starts with it \(tabs)\(always)",
            "app.yaml:17:67: warning: the `redirect` of precondition `app.p` selects `app.Product`, but no tab starts with it \(tabs): a navigation it redirects fails (a link it redirects pushes it); show it by push or present, or name a tab",
        ], "\(all)")
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

    /// A required field a link fills from a parameter a URL may leave out (an optional segment, a
    /// query parameter) fails every URL without it: a warning. One mediation fills is not warned of.
    @Test func linkRequiredFieldsFromParametersAURLMayLeaveOut() {
        let all = check([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Thread, Search]}
              Thread: {setup: {type: object, required: [t], properties: {t: {type: string}}}, opens: [Message]}
              Message:
                setup: {type: object, required: [m, t], properties: {m: {type: integer}, t: {type: string}}}
                mediation: {t: "$source.t"}
              Search: {setup: {type: object, required: [q], properties: {q: {type: string}}}}
            links:
              "/t/:t/m/:m?": [Home, {to: Thread, with: {t: ":t"}}, {to: Message, with: {m: ":m"}}]
              "/t/:t/n/:m": [Home, {to: Thread, with: {t: ":t"}}, {to: Message, with: {m: ":m", t: ":t"}}]
              "/search?q=:q": [Home, {to: Search, with: {q: ":q"}}]
            """)])
        let tail = "which a URL may leave out: such a URL matches the link and always fails (invalidSetup); make the parameter required, or declare a second link without it"
        #expect(all == [
            "app.yaml:10:80: warning: link `/t/:t/m/:m?` fills `m`, which the setup of `app.Message` requires, from the optional segment `:m?`, \(tail)",
            "app.yaml:12:49: warning: link `/search?q=:q` fills `q`, which the setup of `app.Search` requires, from the query parameter `?q=:q`, \(tail)",
        ], "\(all)")
    }

    /// A flow's `then` and a redirect are navigations nobody adds `with` to: a field their target
    /// requires that they do not give (nor mediation fills) fails them every time. Warnings, with the
    /// `$result` reference to write when the flow's result declares the field.
    @Test func thenAndRedirectWithoutARequiredField() {
        let all = check([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Compose, Thread, Note], preconditions: [p], setup: {type: object, properties: {id: {type: string}}}}
              Thread: {setup: {type: object, required: [id], properties: {id: {type: string}}}}
              Note:
                setup: {type: object, required: [id], properties: {id: {type: string}}}
                mediation: {id: "$source.id"}
              Compose: {setup: {type: object, properties: {id: {type: string}}}, flow: {steps: [Write], result: {type: object, properties: {id: {type: string}}}, then: Thread}}
              Other: {flow: {steps: [Write2], then: {to: Thread, with: {id: "$result.id"}}}}
              Mediated: {flow: {steps: [Write3], then: Note}}
              Write: {}
              Write2: {}
              Write3: {}
            routes:
              other: Other
              mediated: Mediated
            preconditions:
              p: {check: {fact: a, exists: true}, redirect: Thread}
            """)])
        #expect(all == [
            "app.yaml:8:157: warning: the `then` of flow `app.Compose` goes to `app.Thread` without `id`, which its setup requires: continuing after the flow always fails (invalidSetup); take it from the flow's result: with: {id: \"$result.id\"}",
            "app.yaml:18:49: warning: the `redirect` of precondition `app.p` goes to `app.Thread` without `id`, which its setup requires: every navigation it redirects fails (invalidSetup); give it in its `with` (a constant)",
        ], "\(all)")
    }

    /// The root's screens start with no params: a setup that refuses that is warned of (every
    /// session would start with params that do not match it).
    @Test func rootScreensWhoseSetupRefusesNoParams() {
        let stack = check([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {setup: {type: object, required: [user], properties: {user: {type: string}}}}
            """)])
        #expect(stack == ["app.yaml:1:7: warning: the root's `app.Home` starts every session with no params, and its setup refuses that: `/user` is required but missing; make its fields optional, or start with a screen that needs none"], "\(stack)")
        let tabs = check([("app.yaml", """
            root: {tabs: [Home, Other]}
            coordinators:
              Home: {setup: {type: object, properties: {user: {type: string}}}}
              Other: {setup: {type: object, required: [id], properties: {id: {type: integer}}}}
            """)])
        #expect(tabs == ["app.yaml:1:7: warning: the root's `app.Other` starts every session with no params, and its setup refuses that: `/id` is required but missing; make its fields optional, or start with a screen that needs none"], "\(tabs)")
    }

    /// A command's `{with.FIELD}` that no coordinator it is about declares (all of them declaring a
    /// setup) is most likely misspelt: a warning with the likely name. A coordinator without a setup
    /// (any field) and a graph-level guard (every coordinator) are not warned of.
    @Test func placeholderFieldsNoGuardedCoordinatorDeclares() {
        let all = check([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Product, Wiz, Note]}
              Product: {setup: {type: object, properties: {id: {type: string}}}, preconditions: [inStock], leave: [saved]}
              Wiz: {flow: {steps: [W1]}, setup: {type: object, properties: {plan: {type: string}}}}
              W1: {setup: {type: object, properties: {x: {type: string}}}, preconditions: [planOk]}
              Note: {preconditions: [free]}
            guards: [everywhere]
            preconditions:
              inStock: {command: [test, -n, "{with.idd}"]}
              saved: {command: [test, -n, "{with.id}"]}
              planOk: {command: [test, -n, "{with.plan}"]}
              free: {command: [test, -n, "{with.anything}"]}
              everywhere: {command: [test, -n, "{with.whatever}"]}
            """)])
        #expect(all == ["app.yaml:10:3: warning: precondition `app.inStock` passes `{with.idd}`, a field none of the coordinators it is about declares (app.Product: it declares id): it is empty unless a navigation gives that undeclared field; did you mean `{with.id}`?"], "\(all)")
    }

    /// A dotted `{with.a.b}` reads nested params: declared when a setup declares the path (objects'
    /// properties, arrays' items by index; an object of undeclared properties admits any rest);
    /// a misspelt step is warned of like a misspelt field.
    @Test func dottedPlaceholderFieldsFollowNestedSchemas() {
        let all = check([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Ship]}
              Ship:
                setup:
                  type: object
                  properties:
                    address: {type: object, properties: {city: {type: string}}}
                    lines: {type: array, items: {type: object, properties: {sku: {type: string}}}}
                    extra: {type: object}
                preconditions: [city, sku, extra, typo, notIndex]
            preconditions:
              city: {command: [test, -n, "{with.address.city}"]}
              sku: {command: [test, -n, "{with.lines.0.sku}"]}
              extra: {command: [test, -n, "{with.extra.anything.at.all}"]}
              typo: {command: [test, -n, "{with.address.citty}"]}
              notIndex: {command: [test, -n, "{with.lines.first}"]}
            """)])
        #expect(all.count == 2 && all.allSatisfy { $0.contains("a field none of the coordinators it is about declares") }, "\(all)")
        #expect(all.contains { $0.contains("`{with.address.citty}`") } && all.contains { $0.contains("`{with.lines.first}`") }, "\(all)")
    }

    /// Of many coordinators a precondition is about, the warning names the first 20 and how many
    /// in all; an unknown recovery flow names at most 20 flows too.
    @Test func diagnosticsNameManyCoordinatorsBriefly() {
        let screens = (0..<30).map { "  C\($0): {setup: {type: object, properties: {id: {type: string}}}, preconditions: [p]}" }
        let flows = (0..<25).map { "  F\($0): {flow: {steps: [S]}}" } + ["  S: {}"]
        let all = check([("app.yaml", "root: {stack: C0}\ncoordinators:\n" + (screens + flows).joined(separator: "\n")
                          + "\npreconditions:\n  p: {command: [test, -n, \"{with.idd}\"], recover: {flow: Nope}}")])
        let warning = all.first { $0.contains("passes `{with.idd}`") } ?? ""
        #expect(warning.contains("(app.C0, app.C1, ") && warning.contains("app.C19 … (30 in all): they declare id)") && !warning.contains("app.C20"), "\(warning)")
        let error = all.first { $0.contains("recovers with flow") } ?? ""
        #expect(error.hasSuffix("the flows are app.F0, app.F1, app.F2, app.F3, app.F4, app.F5, app.F6, app.F7, app.F8, app.F9, app.F10, app.F11, app.F12, app.F13, app.F14, app.F15, app.F16, app.F17, app.F18, app.F19 … (25 in all)"), "\(error)")
    }

    /// A `$result.FIELD` (of a `then`'s `with`, of a recovery's `facts`) that the flow's result
    /// schema does not declare is never there: a warning with the likely name. A result schema that
    /// declares no fields says nothing of them.
    @Test func resultReferencesTheResultSchemaDoesNotDeclare() {
        let all = check([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Wiz, Open, Item], preconditions: [signedIn]}
              Item: {setup: {type: object, properties: {n: {type: integer}}}}
              Wiz: {flow: {steps: [W1], result: {type: object, properties: {num: {type: integer}}}, then: {to: Item, with: {n: "$result.nm"}}}}
              Open: {flow: {steps: [W2], result: {type: object}, then: {to: Item, with: {n: "$result.anything"}}}}
              Login: {flow: {steps: [W3], result: {type: object, properties: {user: {type: object}}}}}
              W1: {}
              W2: {}
              W3: {}
            preconditions:
              signedIn: {check: {fact: signedIn, equals: true}, recover: {flow: Login, facts: {signedIn: true, who: "$result.usr.name", all: "$result", user: "$result.user.id"}}}
            """)])
        #expect(all == [
            "app.yaml:5:116: warning: the `then` of flow `app.Wiz` reads `$result.nm`, but the result schema of flow `app.Wiz` declares no `nm` (it declares num): the value is left out whenever the result has no such part; did you mean `$result.num`?",
            "app.yaml:12:105: warning: `recover.facts` of precondition `app.signedIn` reads `$result.usr.name`, but the result schema of flow `app.Login` declares no `usr` (it declares user): the value is left out whenever the result has no such part; did you mean `$result.user`?",
        ], "\(all)")
    }

    /// A redirect's and a flow's `then` constants are checked against the target's setup, as a
    /// route's are; a `then`'s `$result` reference is not (the result comes when the flow completes).
    @Test func redirectAndThenConstantsTheSetupNeverAccepts() {
        let e = errors([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Item, Wizard], preconditions: [moved]}
              Item: {setup: {type: object, properties: {id: {type: integer}}, additionalProperties: false}}
              Wizard: {flow: {start: W1, steps: [W1], then: {to: Item, with: {id: "$result.n", extra: 1}}}}
              W1: {}
            preconditions:
              moved: {check: {fact: moved, exists: false}, redirect: {to: Item, with: {id: "zz"}}}
            """)])
        #expect(e == [
            "app.yaml:5:91: error: the `then` of flow `app.Wizard` gives `app.Item` the constant extra: 1, which its setup never accepts: the setup of `app.Item` declares no field `extra` and allows no others (it declares id)",
            "app.yaml:8:80: error: the `redirect` of precondition `app.moved` gives `app.Item` the constant id: \"zz\", which its setup never accepts: the value must be integer, not a string (\"zz\")",
        ], "\(e)")
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

    /// A setup schema or a flow with errors is reported once, where it is written: the checks that
    /// read it (a mediation from it, its identity fields, a recovery by the flow) do not report it
    /// again as missing, or as a screen.
    @Test func aBrokenSetupOrFlowIsReportedOnceNotAgainByWhatReadsIt() {
        let e = errors([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home:
                opens: [Product, Login]
              Product:
                setup: {type: object, required: [id], properties: {id: {type: strin}}}
                identity: [id]
                opens: [Reviews]
                preconditions: [loggedIn]
              Reviews:
                mediation: {productId: "$source.id"}
              Login:
                flow: {start: Step, steps: [Step, Missing]}
              Step: {}
            preconditions:
              loggedIn:
                check: {fact: loggedIn, equals: true}
                recover: {flow: Login}
            """)])
        #expect(e == [
            "app.yaml:6:67: error: invalid setup schema at `/properties/id/type`: `strin` is not a type; use object, string, number, integer, boolean, array or null; did you mean `string`?",
            "app.yaml:13:39: error: `app.Missing` (a step of flow `app.Login`) is not a coordinator; module `app` declares Home, Login, Product, Reviews, Step",
        ])
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

    /// A chain of 2,000 flows, each guarded by a precondition that recovers with the next: closed
    /// into a ring it is one cycle, and every one of its preconditions is an error (the first 20
    /// naming the cycle, from the flow the recovery presents around to it again); left open, none
    /// is. (A search from every flow, copying its path, took seconds here and minutes at 20,000.)
    @Test func aLongChainOfRecoveryFlowsIsOneCycleOrNone() {
        func chain(_ n: Int, closed: Bool) -> [String] {
            var y = "root: {stack: Home}\ncoordinators:\n  Home: {opens: [F0]}\n"
            for i in 0..<n { y += "  F\(i): {flow: {start: S\(i)}, preconditions: [p\(i)]}\n  S\(i): {}\n" }
            y += "preconditions:\n"
            for i in 0..<n where closed || i + 1 < n { y += "  p\(i): {check: {fact: f, exists: true}, recover: {flow: F\((i + 1) % n)}}\n" }
            if !closed { y += "  p\(n - 1): {check: {fact: f, exists: true}}\n" }
            return errors([("app.yaml", y)])
        }
        #expect(chain(2_000, closed: false) == [])
        let ring = chain(2_000, closed: true)
        #expect(ring.count == 2_000 && ring.allSatisfy { $0.contains("recovery cycle") })
        let named = ring.filter { $0.contains("→") }
        #expect(named.count == 20, "\(named.count)")
        // p0 recovers with F1; the cycle goes from F1 around the ring to F0, then to F1 again.
        let first = ring.first { $0.contains("precondition `app.p0` ") } ?? ""
        #expect(first.contains("(app.F1 → app.F2 → ") && first.contains(" → app.F1999 → app.F0 → app.F1); recover with"), "\(first.prefix(300))")
    }

    /// Two links of the same segments match the same URLs: the second is an error naming the
    /// first, wherever they are declared; the same words with a parameter elsewhere are another link.
    @Test func aLinkThatMatchesTheSameURLsAsAnotherIsNamed() {
        let e = errors([("app.yaml", """
            root: {stack: Home}
            coordinators:
              Home: {opens: [P]}
              P: {setup: {type: object, properties: {id: {type: string}}}}
            links:
              "/p/:id": [Home, {to: P, with: {id: ":id"}}]
              "/p/id": [Home, P]
            """), ("more.yaml", """
            module: more
            links:
              "/p/:id": [app.Home, {to: app.P, with: {id: ":id"}}]
              "/:id/p": [app.Home, {to: app.P, with: {id: ":id"}}]
            """)])
        #expect(e == ["more.yaml:3:3: error: link `/p/:id` matches the same URLs as `/p/:id` (app.yaml:6:3); keep one of them"], "\(e)")
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

    @Test func aPlaceholderInsideShellCodeIsWarnedAbout() {
        let guarded = Self.app + "\n    preconditions: [a, b, c, d]\npreconditions:\n"
            + "  a: {command: [sh, -c, 'test -n \"{with.id}\"']}\n"  // the value becomes shell code
            + "  b: {command: [/bin/bash, -ec, 'echo $1', bash, '{with.id}']}\n"  // passed as an argument: fine
            + "  c: {command: [python3, -c, 'print(1)'], timeout: 2s, }\n"  // no placeholder
            + "  d: {command: [scripts/x.sh, -c, '{with.id}']}\n"  // not an interpreter
        let d = check([("app.yaml", guarded)])
        #expect(d == [
            "app.yaml:9:25: warning: the command of `app.a` fills `{with.…}` into the code `sh -c` runs, so a value such as $(…) would run as code; "
                + "pass it as an argument after the code and read it there, as [sh, -c, 'echo \"$1\"', sh, \"{with.id}\"]",
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
