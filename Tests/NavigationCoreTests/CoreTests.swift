import JSON
import NavGraph
import NavTesting
import Testing
import Unchecked
@testable import NavigationCore

/// A small graph with every feature the core handles.
let coreGraphYAML = """
    root: {tabs: [Home, Settings]}
    coordinators:
      Home: {opens: [Product, Search, Checkout, Login]}
      Settings: {opens: [Admin]}
      Search: {opens: [Product], presentations: [present]}
      Product:
        setup: {type: object, required: [id], properties: {id: {type: string, minLength: 1}}, additionalProperties: false}
        opens: [Reviews, Product, Search, Checkout]
      Reviews:
        setup: {type: object, required: [productId], properties: {productId: {type: string}}}
        mediation: {productId: "$source.id"}
      Checkout:
        flow:
          start: Address
          steps: [Address, Payment]
          result: {type: object, required: [orderId], properties: {orderId: {type: string}}}
      Address: {opens: [Payment]}
      Payment: {}
      Login:
        flow: {start: Credentials}
      Credentials: {}
      Admin: {access: [staff]}
    routes:
      showProduct: {to: Product, by: push}
      search: {to: Search, by: present}
    """

func coreGraph() -> NavigationGraph {
    let (g, d) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: coreGraphYAML)], baseDirectory: "/")
    precondition(!d.hasErrors, d.sorted.map(\.description).joined(separator: "\n"))
    return g!
}

@Suite struct CoreTests {
    let graph = coreGraph()
    let anyone = Caller()

    func session() -> Session { Session(name: "t", graph: graph) }

    @discardableResult
    func go(_ s: Session, _ r: NavigateRequest, caller: Caller = Caller()) throws -> Commit {
        try s.commit(try s.plan(r, caller: caller))
    }

    func kind(_ body: () throws -> Void) -> NavError.Kind? {
        do { try body(); return nil } catch let e as NavError { return e.kind } catch { return nil }
    }

    func names(_ s: Session) -> [String] {
        s.visible.compactMap { s.node($0) }.filter { $0.kind == .screen }.map { graph.coordinators[$0.coordinator].localName }
    }

    @Test(arguments: [0, 7, 10, 99, 12345, Int.max, -1, Int.min])
    func idsAreThePrefixAndTheNumberInDecimal(n: Int) {
        #expect(prefixedDecimal("n", n) == "n\(n)")
        #expect(prefixedDecimal("nav-", n) == "nav-\(n)")
    }

    @Test func nodeIndexKnowsOnlyTheIdsSessionsMake() {
        #expect(NodeIndex.number("n1") == 1)
        #expect(NodeIndex.number("n10") == 10)
        #expect(NodeIndex.number("n0") == 0)
        for bad in ["n01", "n", "", "x1", "n1a", "n-1", "N1", "n 1", "n12345678901234567890"] {
            #expect(NodeIndex.number(bad) == nil, "\(bad)")
        }
        let s = session()
        #expect(s.node(s.visible.last!) === s.visibleTop)
        #expect(s.node("n01") == nil)
    }

    /// Property: the index answers what a dictionary of the same inserts and removals answers.
    @Test func nodeIndexAgreesWithADictionary() {
        var rng = SplitMix64(seed: 0x1D7)
        let index = NodeIndex()
        var model: [Int: Node] = [:]
        for step in 0..<20_000 {
            let k = Int(rng.next() % (step < 10_000 ? 3000 : 200))
            if rng.next() % 3 == 0, let n = model[k] {
                index.remove(n)
                model[k] = nil
            } else {
                let n = Node(number: k, kind: .screen)
                index.insert(n)
                model[k] = n
            }
            if step % 97 == 0 {
                #expect(index.count == model.count)
                for probe in 0..<3000 where index["n\(probe)"] !== model[probe] {
                    Issue.record("n\(probe) after step \(step)")
                    return
                }
            }
        }
    }

    @Test func initialTreeFollowsTheRoot() {
        let s = session()
        #expect(s.version == 0)
        #expect(s.root.kind == .tabs && s.root.children.count == 2)
        #expect(names(s) == ["Home"])
    }

    @Test func pushAddsOnTopOfTheSourcesStack() throws {
        let s = session()
        let c = try go(s, NavigateRequest(to: "Product", with: ["id": "p1"]))
        #expect(c.version == 1 && s.version == 1)
        #expect(names(s) == ["Product"])
        #expect(s.root.children[0].children.count == 2)
        #expect(c.changes.first?["op"] == "push")
        #expect(c.node?.params == ["id": "p1"])
    }

    /// A node taken out of the tree links to no parent and is gone from the index; what stays keeps
    /// its links (the rules of TreeLinks.swift).
    @Test func aNodeTakenOutOfTheTreeLinksToNothing() throws {
        let s = session()
        try go(s, NavigateRequest(to: "Search", by: .present))
        try go(s, NavigateRequest(to: "Product", with: ["id": "x"]))
        let product = try #require(s.visibleTop), modal = try #require(product.parent)
        #expect(modal.kind == .stack && s.linkProblems().isEmpty)
        _ = try s.dismiss(modal.children[0].id)
        #expect(modal.parent == nil && product.parent == nil && modal.children.allSatisfy { $0.parent == nil })
        #expect(s.node(product.id) == nil && s.node(modal.id) == nil)
        #expect(s.linkProblems().isEmpty && names(s) == ["Home"])
    }

    @Test func presentShowsAModalAndModalsStack() throws {
        let s = session()
        try go(s, NavigateRequest(to: "Search", by: .present))
        #expect(names(s) == ["Home", "Search"])
        let search = s.visibleTop!
        #expect(search.parent?.kind == .stack && search.parent?.parent?.coordinator == s.root.children[0].children[0].coordinator)
        // A modal on a modal.
        try go(s, NavigateRequest(to: "Product", with: ["id": "x"]))
        try go(s, NavigateRequest(to: "Search", by: .present))
        #expect(names(s) == ["Home", "Product", "Search"], "Product went onto the modal stack, then presented")
        // The source may present only once.
        let home = s.root.children[0].children[0].id
        #expect(kind { try go(s, NavigateRequest(to: "Search", by: .present, from: home)) } == .notAllowed)
    }

    @Test func replaceTakesTheSourcesPlace() throws {
        let s = session()
        try go(s, NavigateRequest(to: "Product", with: ["id": "a"]))
        let first = s.visibleTop!.id
        let c = try go(s, NavigateRequest(to: "Product", by: .replace, with: ["id": "b"]))
        #expect(c.removed == [first])
        #expect(names(s) == ["Product"])
        #expect(s.root.children[0].children.count == 2)
        #expect(s.visibleTop!.params == ["id": "b"])
        #expect(s.node(first) == nil)
    }

    @Test func rootResetsTheTree() throws {
        let s = session()
        try go(s, NavigateRequest(to: "Product", with: ["id": "a"]))
        let c = try go(s, NavigateRequest(to: "Settings", by: .root))
        #expect(s.root.kind == .stack && s.root.children.count == 1)
        #expect(names(s) == ["Settings"])
        #expect(c.changes.first?["op"] == "reset")
        #expect(c.removed.count == 6)
    }

    @Test func selectSwitchesTabs() throws {
        let s = session()
        let c = try go(s, NavigateRequest(to: "Settings", by: .select))
        #expect(s.root.selected == 1 && names(s) == ["Settings"])
        #expect(c.changes == [["op": "select", "parent": .string(s.root.id), "index": 1]])
        #expect(kind { try go(s, NavigateRequest(to: "Product", by: .select, with: ["id": "a"])) } == .notAllowed)
        // Pushing a tab is refused with the way that works.
        do {
            try go(s, NavigateRequest(to: "Home"))
            Issue.record("expected notAllowed: Settings does not open Home")
        } catch let e as NavError {
            #expect(e.message == "`app.Settings` cannot open `app.Home`: its opens are app.Admin; `app.Home` is a tab: show it with by: select (select and root are always available)")
        }
    }

    @Test func abilitiesAndPresentationsAreEnforced() throws {
        let s = session()
        #expect(kind { try go(s, NavigateRequest(to: "Reviews")) } == .notAllowed, "Home does not open Reviews")
        do {
            try go(s, NavigateRequest(to: "Search", by: .push))
            Issue.record("expected notAllowed: Search is present-only")
        } catch let e as NavError {
            #expect(e.kind == .notAllowed)
            // The refusal names the source it judged: here the visible top, as no `from` was given.
            #expect(e.data["from"] == s.visibleTop.map { .string($0.id) } && e.data["by"] == "push")
        }
        #expect(s.version == 0, "failed commands change nothing")
    }

    @Test func everyErrorKind() throws {
        let s = session()
        #expect(kind { try go(s, NavigateRequest(to: "Nope")) } == .unknownTarget)
        #expect(kind { try go(s, NavigateRequest(route: "nope")) } == .unknownTarget)
        #expect(kind { try go(s, NavigateRequest(to: "Product", with: ["id": ""])) } == .invalidSetup)
        #expect(kind { try go(s, NavigateRequest(to: "Reviews")) } == .notAllowed)
        try go(s, NavigateRequest(to: "Settings", by: .select))
        #expect(kind { try go(s, NavigateRequest(to: "Admin")) } == .accessDenied)
        try go(s, NavigateRequest(to: "Admin"), caller: Caller(roles: ["staff"]))
        #expect(kind { try go(s, NavigateRequest(to: "Product", with: ["id": "a"], from: "n999")) } == .unknownNode)
        #expect(kind { _ = try s.dismiss("n999") } == .unknownNode)
        #expect(kind { _ = try s.flowComplete("n1", .cancelled) } == .flowNotActive)
        #expect(kind { try go(s, NavigateRequest(to: "Settings", by: .select, ifVersion: 0)) } == .conflict)
    }

    /// A caller lent by its client reads the client's roles when a check needs them (not when it
    /// is made); a kept one holds those of the moment it was kept, whatever the client holds later.
    @Test func aLentCallerReadsItsClientsRolesAndAKeptOneHoldsThem() throws {
        let holder = RoleHolder()
        let s = session()
        try go(s, NavigateRequest(to: "Settings", by: .select))
        let lent = Caller(lending: holder)
        #expect(kind { try go(s, NavigateRequest(to: "Admin"), caller: lent) } == .accessDenied)
        holder.roles = ["staff"]
        let kept = lent.kept
        holder.roles = []
        #expect(kind { try go(s, NavigateRequest(to: "Admin"), caller: lent) } == .accessDenied)
        try go(s, NavigateRequest(to: "Admin"), caller: kept)
        #expect(names(s).last == "Admin")
        holder.roles = ["staff"]
        let other = session()
        try go(other, NavigateRequest(to: "Settings", by: .select))
        try go(other, NavigateRequest(to: "Admin"), caller: lent)
        #expect(names(other).last == "Admin")
        #expect(kept.roles == ["staff"] && lent.kept.roles == ["staff"])
    }

    /// What a refusal lists of the graph is said when there is none, and of many, the first 20
    /// and how many in all: a message does not grow with the graph. A near name is still suggested
    /// among thousands.
    @Test func refusalsListWhatTheGraphDeclaresBriefly() throws {
        func message(_ yaml: String, _ r: NavigateRequest) -> String {
            let (g, d) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: yaml)], baseDirectory: "/")
            precondition(!d.hasErrors, d.sorted.map(\.description).joined(separator: "\n"))
            do { _ = try Session(name: "m", graph: g!).plan(r, caller: Caller()); return "" } catch { return error.message }
        }
        #expect(message("root: {stack: Home}\ncoordinators: {Home: {}}", NavigateRequest(route: "nope"))
                == "no route `nope`; the graph declares no routes (`routes:` in a module file)")
        let many = (0..<3_000).map { "  Screen\($0): {}" }.joined(separator: "\n")
        let routes = (0..<25).map { "  r\($0): {to: Screen\($0)}" }.joined(separator: "\n")
        let yaml = "root: {stack: Home}\ncoordinators:\n  Home: {opens: [\((0..<25).map { "Screen\($0)" }.joined(separator: ", "))]}\n\(many)\nroutes:\n\(routes)"
        let route = message(yaml, NavigateRequest(route: "nope"))
        #expect(route.hasSuffix("the routes are app.r0, app.r1, app.r2, app.r3, app.r4, app.r5, app.r6, app.r7, app.r8, app.r9, app.r10, app.r11, app.r12, app.r13, app.r14, app.r15, app.r16, app.r17, app.r18, app.r19 … (25 in all)"), "\(route)")
        let opens = message(yaml, NavigateRequest(to: "Screen2999"))
        #expect(opens.contains("its opens are app.Screen0, ") && opens.contains("app.Screen19 … (25 in all)") && !opens.contains("Screen20,"), "\(opens)")
        #expect(message(yaml, NavigateRequest(to: "Sreen2990")).hasSuffix("did you mean `Screen2990`?"))
    }

    @Test func invalidSetupNamesTheField() throws {
        let s = session()
        do {
            try go(s, NavigateRequest(to: "Product", with: ["id": "a", "colour": "red"]))
            Issue.record("expected invalidSetup")
        } catch let e as NavError {
            #expect(e.kind == .invalidSetup)
            #expect(e.data["pointer"] == "/colour")
            #expect(e.data["rule"] == "additionalProperties")
        }
    }

    @Test func commitFailsWhenTheSourceIsGoneOrTheVersionMoved() throws {
        let s = session()
        try go(s, NavigateRequest(to: "Product", with: ["id": "a"]))
        let product = s.visibleTop!.id
        let plan = try s.plan(NavigateRequest(to: "Reviews", from: product), caller: anyone)
        _ = try s.dismiss(product)
        #expect(kind { _ = try s.commit(plan) } == .conflict)
        let v = s.version
        let plan2 = try s.plan(NavigateRequest(to: "Product", with: ["id": "b"], ifVersion: v), caller: anyone)
        try go(s, NavigateRequest(to: "Settings", by: .select))
        #expect(kind { _ = try s.commit(plan2) } == .conflict)
    }

    @Test func mediationFillsFromTheSource() throws {
        let s = session()
        try go(s, NavigateRequest(to: "Product", with: ["id": "p7"]))
        let c = try go(s, NavigateRequest(to: "Reviews"))
        #expect(c.node?.params == ["productId": "p7"])
        // An explicit value wins.
        _ = try s.dismiss(nil)
        #expect(try go(s, NavigateRequest(to: "Reviews", with: ["productId": "other"])).node?.params == ["productId": "other"])
    }

    @Test func routesResolveToTargetAndStyle() throws {
        let s = session()
        try go(s, NavigateRequest(route: "search"))
        #expect(names(s) == ["Home", "Search"])
        try go(s, NavigateRequest(route: "showProduct", with: ["id": "r"]))
        #expect(names(s) == ["Home", "Product"])
        #expect(s.visibleTop!.parent!.children.count == 2, "pushed onto the modal's stack")
        #expect(kind { try go(s, NavigateRequest(to: "Product", route: "search")) } == .invalidParams)
    }

    @Test func flowsStartWithTheirStartStepAndStepsNavigate() throws {
        let s = session()
        let c = try go(s, NavigateRequest(to: "Checkout"))
        let flow = try #require(c.node)
        #expect(flow.kind == .flow && flow.children.count == 1)
        #expect(c.version == 1, "flow and start step in one commit")
        #expect(names(s) == ["Address"])
        try go(s, NavigateRequest(to: "Payment"))
        #expect(flow.children.count == 2 && names(s) == ["Payment"])
    }

    @Test func flowCompleteWithResultValidatesAndRemovesTheFlow() throws {
        let s = session()
        let flow = try go(s, NavigateRequest(to: "Checkout")).node!
        #expect(kind { _ = try s.flowComplete(flow.id, .result(["order": 1])) } == .invalidSetup)
        let c = try s.flowComplete(flow.id, .result(["orderId": "o1"]))
        #expect(c.endedFlows.count == 1 && c.endedFlows[0].status == .completed && c.endedFlows[0].result == ["orderId": "o1"])
        #expect(names(s) == ["Home"])
        #expect(kind { _ = try s.flowComplete(flow.id, .cancelled) } == .flowNotActive)
    }

    @Test func flowFailAndCancel() throws {
        let s = session()
        let f1 = try go(s, NavigateRequest(to: "Checkout")).node!
        #expect(try s.flowComplete(f1.id, .error(["message": "card declined"])).endedFlows.first?.status == .failed)
        let f2 = try go(s, NavigateRequest(to: "Checkout")).node!
        #expect(try s.flowComplete(f2.id, .cancelled).endedFlows.first?.status == .cancelled)
    }

    @Test func dismissingAFlowsFirstStepAbandonsIt() throws {
        let s = session()
        let flow = try go(s, NavigateRequest(to: "Checkout")).node!
        try go(s, NavigateRequest(to: "Payment"))
        let c = try s.dismiss(flow.children[0].id)
        #expect(c.endedFlows.map(\.status) == [.cancelled])
        #expect(c.removed.contains(flow.id))
        #expect(names(s) == ["Home"])
    }

    @Test func dismissRules() throws {
        let s = session()
        #expect(kind { _ = try s.dismiss(nil) } == .unknownNode, "the root stack's first child stays")
        try go(s, NavigateRequest(to: "Product", with: ["id": "a"]))
        let a = s.visibleTop!.id
        try go(s, NavigateRequest(to: "Product", with: ["id": "b"]))
        try go(s, NavigateRequest(to: "Product", with: ["id": "c"]))
        let c = try s.dismiss(a)
        #expect(c.removed.count == 3, "the node and everything above it")
        #expect(names(s) == ["Home"])
        // The first child of a presented stack dismisses the whole modal.
        try go(s, NavigateRequest(to: "Search", by: .present))
        try go(s, NavigateRequest(to: "Product", with: ["id": "m"]))
        let modalFirst = s.visibleTop!.parent!.children[0].id
        let d = try s.dismiss(modalFirst)
        #expect(d.changes.first?["op"] == "dismiss")
        #expect(names(s) == ["Home"])
    }

    @Test func dryRunChangesNothing() throws {
        let s = session()
        let before = JSONWriter.string(s.root.json(graph))
        let (plan, commit, visible) = try s.dryRun(NavigateRequest(to: "Checkout"), caller: anyone)
        #expect(plan.target == graph.coordinator(named: "Checkout")!.index)
        #expect(commit.node?.kind == .flow && visible.count == 4)
        #expect(JSONWriter.string(s.root.json(graph)) == before && s.version == 0)
        // The ids it showed are the ones a real commit then uses.
        let real = try go(s, NavigateRequest(to: "Checkout"))
        #expect(real.node?.id == commit.node?.id)
    }

    @Test func idsAreNeverReused() throws {
        let s = session()
        var seen = Set<String>()
        s.root.forEach { seen.insert($0.id) }
        for i in 0..<50 {
            let c = try go(s, NavigateRequest(to: "Product", with: ["id": .string("\(i)")]))
            c.node!.forEach { #expect(seen.insert($0.id).inserted) }
            _ = try s.dismiss(nil)
        }
    }

    @Test func checksOfFacts() {
        let s = session()
        s.facts["loggedIn"] = true
        s.facts["cart.items"] = 0
        #expect(s.evaluate(fact: "loggedIn", .equals(true)).passed)
        #expect(!s.evaluate(fact: "cart.items", .notEquals(0)).passed)
        #expect(s.evaluate(fact: "cart.items", .notEquals(0)).reason == "fact `cart.items` is 0, it must not be")
        #expect(!s.evaluate(fact: "user", .exists(true)).passed)
        #expect(s.evaluate(fact: "user", .exists(false)).passed)
        // Facts are named flat: an object under `user` is not looked into, and the reason says so.
        s.facts["user"] = ["plan": ["tier": "gold"]]
        let nested = s.evaluate(fact: "user.plan.tier", .equals("gold"))
        #expect(!nested.passed)
        #expect(nested.reason.hasPrefix("fact `user.plan.tier` is not set (fact `user` is set, but facts are named flat"), "\(nested.reason)")
        #expect(nested.reason.contains(#"context.set {facts: {"user.plan.tier": …}}"#), "\(nested.reason)")
        #expect(s.evaluate(fact: "account.id", .exists(true)).reason == "fact `account.id` is not set")
        s.facts["user.plan.tier"] = "gold"
        #expect(s.evaluate(fact: "user.plan.tier", .equals("gold")).passed)
    }

    @Test func keysRememberReplies() throws {
        let s = session()
        s.remember(key: "k", .success(JSONText(["version": 1])))
        #expect(try s.keyed["k"]?.get() == JSONText(Array(#"{"version":1}"#.utf8)))
    }

    @Test func theNewestKeysAreKeptOldestForgottenFirst() throws {
        let s = session()
        let n = Session.maxKeys
        for i in 0..<(n * 2 + 7) {
            s.remember(key: "k\(i)", .success(JSONText(.int(i))))
            if i == n + 2 { s.remember(key: "k\(n + 1)", .success(JSONText(.int(-1)))) }  // a key again: replaced, not added
            #expect(s.keyed.count == min(i + 1, n))
        }
        // Kept: the newest n, k(n+7) … k(2n+6); forgotten: everything older.
        #expect(s.keyed["k\(n + 6)"] == nil)
        #expect(try s.keyed["k\(n + 7)"]?.get() == JSONText(.int(n + 7)))
        #expect(try s.keyed["k\(2 * n + 6)"]?.get() == JSONText(.int(2 * n + 6)))
        #expect(s.keyed["k0"] == nil && s.keyed["k\(n + 1)"] == nil)
    }
}
