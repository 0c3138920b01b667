import JSON
import NavGraph
import NavTesting
import Testing
@testable import NavigationCore

/// A graph from one module file `app.yaml`, which must load without errors.
func loadTestGraph(_ yaml: String) -> NavigationGraph {
    let (g, d) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: yaml)], baseDirectory: "/")
    precondition(!d.hasErrors, d.sorted.map(\.description).joined(separator: "\n"))
    return g!
}

/// Flow steps follow `opens`; tabs keep the identity the graph declared for them.
@Suite struct SemanticsTests {
    static let yaml = """
        root: {tabs: [Home, Cart, Account]}
        coordinators:
          Home: {opens: [Wizard, Checkout, Item]}
          Item: {}
          Cart: {}
          Account: {}
          Wizard: {flow: {start: One, steps: [One, Two, Three]}}
          One: {}
          Two: {}
          Three: {}
          Checkout: {flow: {start: Address, steps: [Address, Payment, Confirm]}}
          Address: {opens: [Payment]}
          Payment: {opens: [Confirm]}
          Confirm: {}
        """
    let graph = loadTestGraph(SemanticsTests.yaml)

    @discardableResult
    func go(_ s: Session, _ to: String, by: Presentation? = nil) throws -> Commit {
        try s.commit(try s.plan(NavigateRequest(to: to, by: by), caller: Caller()))
    }

    func refusal(_ s: Session, _ to: String, by: Presentation? = nil) -> NavError.Kind? {
        do { try go(s, to, by: by); return nil } catch let e as NavError { return e.kind } catch { return nil }
    }

    func top(_ s: Session) -> String { s.visibleTop.map { graph.coordinators[$0.coordinator].localName } ?? "" }

    @Test func aStepWithoutOpensOpensOnlyTheNextStep() throws {
        let s = Session(name: "t", graph: graph)
        try go(s, "Wizard")
        #expect(refusal(s, "Three") == .notAllowed, "One may not skip Two")
        try go(s, "Two")
        #expect(refusal(s, "One") == .notAllowed, "nor go back by navigating")
        try go(s, "Three")
        #expect(top(s) == "Three")
        // The refusal says why: a step's opens are not empty, they are the next step.
        let s2 = Session(name: "t2", graph: graph)
        try go(s2, "Wizard")
        #expect(message(s2, "Three").contains("as a step of flow `app.Wizard` that declares no opens, it opens only the next step, `app.Two`"),
                "\(message(s2, "Three"))")
        #expect(message(s, "Item").contains("it is the last step of flow `app.Wizard` and declares no opens: complete the flow with flowComplete"),
                "\(message(s, "Item"))")
    }

    /// Replace works among a flow's steps: a step is replaced by another step of its flow, not by
    /// a screen it may open that is not one, and the refusal names the flow.
    @Test func aStepIsReplacedOnlyByAStepOfItsFlow() throws {
        let g = loadTestGraph("""
            root: {stack: Home}
            coordinators:
              Home: {opens: [Wizard]}
              Wizard: {flow: {start: One, steps: [One, Two]}}
              One: {opens: [Two, Help]}
              Two: {}
              Help: {}
            """)
        let s = Session(name: "t", graph: g)
        _ = try s.commit(try s.plan(NavigateRequest(to: "Wizard"), caller: Caller()))
        var refusal: NavError?
        do throws(NavError) {
            _ = try s.plan(NavigateRequest(to: "Help", by: .replace), caller: Caller())
        } catch {
            refusal = error
        }
        #expect(refusal?.kind == .notAllowed)
        #expect(refusal?.message.contains("`app.Help` cannot replace a step of flow `app.Wizard`: it is not one of its steps") == true,
                "\(refusal?.message ?? "no refusal")")
        _ = try s.commit(try s.plan(NavigateRequest(to: "Two", by: .replace), caller: Caller()))
        #expect(s.visibleTop.map { g.coordinators[$0.coordinator].localName } == "Two")
    }

    func message(_ s: Session, _ to: String) -> String {
        do { try go(s, to); return "" } catch let e as NavError { return e.message } catch { return "\(error)" }
    }

    @Test func aStepWithOpensFollowsThem() throws {
        let s = Session(name: "t", graph: graph)
        try go(s, "Checkout")
        #expect(refusal(s, "Confirm") == .notAllowed, "Address → Confirm would skip Payment and its preconditions")
        #expect(refusal(s, "Confirm", by: .replace) == .notAllowed)
        try go(s, "Payment")
        try go(s, "Confirm")
        #expect(top(s) == "Confirm")
    }

    @Test func aTabIsFoundByItsDeclarationWhateverItsStackHolds() throws {
        let s = Session(name: "t", graph: graph)
        try go(s, "Item", by: .replace)  // Home's tab now starts with Item
        try go(s, "Cart", by: .select)
        #expect(top(s) == "Cart")
        try go(s, "Home", by: .select)
        #expect(s.root.selected == 0 && top(s) == "Item", "the first tab, though Home is no longer in it")
        #expect(refusal(s, "Item", by: .select) == .notAllowed, "Item is not a declared tab")
    }

    /// Dismissing the first screen of a tab of a tab container dismisses the container; when the
    /// container is the first screen of a root tab that cannot be, and the refusal says so of the
    /// screen asked about, naming the container.
    @Test func aRefusedDismissInATabContainerNamesTheScreenAskedAbout() throws {
        let g = loadTestGraph("""
            root: {tabs: [Home, Shell]}
            coordinators:
              Home: {}
              Shell: {tabs: [A, B]}
              A: {}
              B: {}
            """)
        let s = Session(name: "t", graph: g)
        _ = try s.commit(try s.plan(NavigateRequest(to: "Shell", by: .select), caller: Caller()))
        _ = try s.commit(try s.plan(NavigateRequest(to: "B", by: .select), caller: Caller()))
        let b = try #require(s.visibleTop)
        do {
            _ = try s.dismiss(nil)
            Issue.record("the dismiss was made")
        } catch {
            #expect(error.kind == .unknownNode)
            #expect(error.data["node"] == .string(b.id) && error.data["container"] != nil, "\(error.data)")
            #expect(error.message.hasPrefix("nothing to dismiss: `\(b.id)` (app.B) is the first screen of a tab of `"), "\(error.message)")
            #expect(error.message.contains("(app.Shell) is the first screen of a tab"), "\(error.message)")
        }
    }

    @Test func selectingATabAfterARootNavigationBringsTheTabsBack() throws {
        let s = Session(name: "t", graph: graph)
        try go(s, "Item", by: .root)
        #expect(s.root.kind == .stack)
        let before = s.version
        let c = try go(s, "Account", by: .select)
        #expect(s.version == before + 1, "one commit")
        #expect(s.root.kind == .tabs && s.root.children.count == 3 && s.root.selected == 2 && top(s) == "Account")
        let ops = (try JSONParser(maxDepth: 64).parse(try #require(c.changeText).bytes)).arrayValue?.compactMap { $0["op"]?.stringValue }
        #expect(ops == ["reset", "select"], "\(String(describing: ops))")
    }
}

/// Pop to a destination, live params and reset, on the core alone.
@Suite struct RouterCoreTests {
    static let yaml = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [List, Admin]}
          List: {opens: [Item]}
          Item:
            setup: {type: object, required: [id], properties: {id: {type: string}, note: {type: string, maxLength: 5}}}
            opens: [Item]
          Admin: {access: [staff], setup: {type: object, properties: {mode: {type: string}}}}
        """
    let graph = loadTestGraph(RouterCoreTests.yaml)

    @discardableResult
    func go(_ s: Session, _ to: String, with: JSONObject = JSONObject(), caller: Caller = Caller()) throws -> Commit {
        try s.commit(try s.plan(NavigateRequest(to: to, with: with), caller: caller))
    }

    func names(_ s: Session) -> [String] { s.root.children.map { graph.coordinators[$0.coordinator].localName } }

    @Test func popToFindsTheNearestMatchFromTheTop() throws {
        let s = Session(name: "t", graph: graph)
        try go(s, "List")
        let first = try go(s, "Item", with: ["id": "1"]).node!
        try go(s, "Item", with: ["id": "2"])
        try go(s, "Item", with: ["id": "3"])
        #expect(try s.popTarget("Item").params["id"] == "3", "the top one matches first")
        let c = try s.dismiss(to: "Item", inclusive: true)
        #expect(names(s) == ["Home", "List", "Item", "Item"] && c.removed.count == 1)
        #expect(throws: NavError.self, "nothing above the top to dismiss") { try s.dismiss(to: "Item", inclusive: false) }
        _ = try s.dismiss(to: first.id, inclusive: false)
        #expect(s.visibleTop === first)
        _ = try s.dismiss(to: "List", inclusive: false)
        #expect(names(s) == ["Home", "List"])
        #expect(throws: NavError.self) { try s.dismiss(to: "List", inclusive: false) }
    }

    @Test func popUpToPopsThenPushesInOneCommit() throws {
        let s = Session(name: "t", graph: graph)
        let list = try go(s, "List").node!
        try go(s, "Item", with: ["id": "1"])
        try go(s, "Item", with: ["id": "2"])
        let v = s.version
        var plan = try s.plan(NavigateRequest(to: "Item", with: ["id": "9"]), caller: Caller())
        plan.popUpTo = (list.number, false)
        let c = try s.commit(plan)
        #expect(s.version == v + 1 && names(s) == ["Home", "List", "Item"] && s.visibleTop?.params == ["id": "9"])
        #expect(c.removed.count == 2)
        let ops = (try JSONParser(maxDepth: 64).parse(try #require(c.changeText).bytes)).arrayValue?.compactMap { $0["op"]?.stringValue }
        #expect(ops == ["pop", "push"], "\(String(describing: ops))")
        #expect(throws: NavError.self, "List cannot open Admin, whatever the pop leaves") { try s.plan(NavigateRequest(to: "Admin", from: list.id), caller: Caller(roles: ["staff"])) }
        _ = try s.dismiss(to: "List", inclusive: false)
        var inclusive = try s.plan(NavigateRequest(to: "Item", with: ["id": "3"]), caller: Caller())
        inclusive.popUpTo = (list.number, true)
        _ = try s.commit(inclusive)
        #expect(names(s) == ["Home", "Item"], "List went too; Item is pushed on Home's stack")
    }

    @Test func updateValidatesMergesAndChecksAccess() throws {
        let s = Session(name: "t", graph: graph)
        try go(s, "List")
        let item = try go(s, "Item", with: ["id": "1"]).node!
        let v = s.version
        _ = try s.update(item.id, with: ["note": "hi"], caller: Caller())
        #expect(item.params == ["id": "1", "note": "hi"] && s.version == v + 1)
        _ = try s.update(item.id, with: ["note": .null], caller: Caller())
        #expect(item.params == ["id": "1"])
        #expect(throws: NavError.self) { try s.update(item.id, with: ["note": "too long"], caller: Caller()) }
        #expect(item.params == ["id": "1"] && s.version == v + 2, "a refused update changes nothing")
        _ = try s.dismiss(to: "Home", inclusive: false)
        let admin = try go(s, "Admin", caller: Caller(roles: ["staff"])).node!
        let refused = Result { () throws(NavError) in try s.update(admin.id, with: ["mode": "x"], caller: Caller()) }
        #expect(refused.kindOfFailure == .accessDenied, "a client without the staff role may not change Admin's params")
        _ = try s.update(admin.id, with: ["mode": "x"], caller: Caller(roles: ["staff"]))
        #expect(admin.params == ["mode": "x"])
    }

    @Test func resetBuildsTheStackInOneCommitOrRefusesWhole() throws {
        let s = Session(name: "t", graph: graph)
        try go(s, "List")
        let v = s.version
        #expect(throws: NavError.self) { try s.planReset([ResetStep(to: "Home"), ResetStep(to: "Item")], caller: Caller(), ifVersion: nil) }
        #expect(throws: NavError.self) { try s.planReset([ResetStep(to: "Home")], caller: Caller(), ifVersion: v + 7) }
        let plan = try s.planReset([ResetStep(to: "Home"), ResetStep(to: "List"), ResetStep(to: "Item", with: ["id": "9"])], caller: Caller(), ifVersion: v)
        _ = try s.commit(plan)
        #expect(s.version == v + 1 && names(s) == ["Home", "List", "Item"])
        _ = s.resetToRoot()
        #expect(s.version == v + 2 && names(s) == ["Home"])
    }
}

extension Result where Failure == NavError {
    var kindOfFailure: NavError.Kind? {
        if case .failure(let e) = self { return e.kind }
        return nil
    }
}

/// Optional and wildcard link segments, and reverse routing (`link.resolve`).
@Suite struct LinkSegmentTests {
    static let yaml = """
        root: {tabs: [Home, Files]}
        coordinators:
          Home: {opens: [Search, Product]}
          Search: {setup: {type: object, properties: {q: {type: string}, page: {type: integer}}}}
          Product: {setup: {type: object, required: [id], properties: {id: {type: string}, tab: {type: string}}}, opens: [Reviews]}
          Reviews: {setup: {type: object, properties: {sort: {type: string}}}, presentations: [push, present]}
          Files: {opens: [File]}
          File: {setup: {type: object, required: [path], properties: {path: {type: string}}}}
        links:
          "/search/:q?": [Home, {to: Search, with: {q: ":q"}}]
          "/product/:id/reviews": [Home, {to: Product, with: {id: ":id"}}, {to: Reviews, with: {sort: "new"}}]
          "/product/:id?tab=:tab": [Home, {to: Product, with: {id: ":id", tab: ":tab"}}]
          "/files/*path": [Files, {to: File, with: {path: ":path"}}]
        """
    let graph = loadTestGraph(LinkSegmentTests.yaml)

    @discardableResult func open(_ s: Session, _ url: String) throws -> Commit { try s.commit(try s.planLink(url, caller: Caller())) }

    @Test func optionalAndWildcardSegmentsMatch() throws {
        let s = Session(name: "t", graph: graph)
        try open(s, "/search")
        #expect(s.visibleTop?.params == [:], "an absent optional segment leaves its field out")
        try open(s, "/search/shoes")
        #expect(s.visibleTop?.params == ["q": "shoes"])
        try open(s, "/files/docs/2026/report%20final.pdf")
        #expect(s.visibleTop?.params == ["path": "docs/2026/report final.pdf"])
        #expect(throws: NavError.self, "a wildcard takes one segment or more") { try open(s, "/files") }
        #expect(throws: NavError.self, "one optional segment at most") { try open(s, "/search/a/b") }
    }

    @Test func resolveGivesTheURLThatOpensTheSameStack() throws {
        let s = Session(name: "t", graph: graph)
        for url in ["/search/red%20shoes", "/search", "/files/a/b%3Fc.txt", "/product/p%2F1?tab=specs", "/product/p1/reviews"] {
            try open(s, url)
            #expect(try s.resolveLink(nil).url == url, "round trip of \(url)")
        }
        let reviews = try #require(s.visibleTop)
        _ = try s.update(reviews.id, with: ["sort": "old"], caller: Caller())
        #expect(throws: NavError.self, "no link gives Reviews a sort other than new") { try s.resolveLink(nil) }
        let product = try #require(reviews.parent?.children[1])
        #expect(try s.resolveLink(product.id).url == "/product/p1", "a node below the top, by its id")
        #expect(throws: NavError.self) { try s.resolveLink("n999") }
    }

    /// Values a URL carries only one way (found by the fuzz target `link`): each opens again as it was.
    @Test func awkwardValuesGoBackAsTheyCame() throws {
        let s = Session(name: "t", graph: graph)
        func reopened(_ url: String) throws -> (url: String, params: JSONValue?) {
            try open(s, url)
            let resolved = try s.resolveLink(nil).url
            let again = Session(name: "again", graph: graph)
            try open(again, resolved)
            #expect(again.visibleTop?.params == s.visibleTop?.params, "\(url) resolves to \(resolved), which opens other params")
            return (resolved, again.visibleTop?.params)
        }
        // A wildcard's value with an empty part (a slash escaped at its start, end or beside another)
        // goes as one segment, its slashes escaped: open skips empty segments.
        #expect(try reopened("/files/%2Fetc/x").url == "/files/%2Fetc%2Fx")
        #expect(try reopened("/files/a%2F/b").params == ["path": "a//b"])
        #expect(try reopened("/files/a/b").url == "/files/a/b", "a plain path keeps its segments")
        // An optional segment cannot carry an empty text (a query value of the field's name can):
        // a link that carries it is preferred, as for any value a link leaves out.
        let withQuery = loadTestGraph(LinkSegmentTests.yaml + "\n  \"/find\": [Home, Search]")
        let t = Session(name: "q", graph: withQuery)
        _ = try t.commit(try t.planLink("/search?q", caller: Caller()))
        #expect(t.visibleTop?.params == ["q": ""])
        #expect(try t.resolveLink(nil).url == "/find?q=")
    }

    @Test func badSegmentsAreCheckErrors() {
        func errors(_ links: String) -> [String] {
            let text = "root: {stack: Home}\ncoordinators: {Home: {setup: {type: object, properties: {a: {type: string}, b: {type: string}}}}}\nlinks:\n" + links
            return GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: text)], baseDirectory: "/").diagnostics.sorted.map(\.description)
                .filter { $0.contains(": error: ") }
        }
        #expect(errors("  \"/x/:a?/:b\": [{to: Home, with: {a: \":a\", b: \":b\"}}]\n").first?.contains("must come after every required segment") == true)
        #expect(errors("  \"/x/*a/:b\": [{to: Home, with: {a: \":a\", b: \":b\"}}]\n").first?.contains("must be the last segment") == true)
        #expect(errors("  \"/x/:a?/*b\": [{to: Home, with: {a: \":a\", b: \":b\"}}]\n").first?.contains("ambiguous") == true)
        #expect(errors("  \"/x/*\": [Home]\n").first?.contains("is not a parameter") == true)
        #expect(errors("  \"/x/:a?/:b?\": [{to: Home, with: {a: \":a\", b: \":b\"}}]\n") == [], "several trailing optionals are fine")
    }
}

/// What the server's precondition machine reads from the core: leave guards of a dismiss, result
/// references of recover facts and thens, tab containers.
@Suite struct GuardAndContainerCoreTests {
    static let yaml = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Editor, Box]}
          Editor: {opens: [Editor], leave: [saved, asked]}
          Box: {tabs: [One, Two], presentations: [push, present]}
          One: {opens: [Editor]}
          Two: {}
        preconditions:
          saved: {check: {fact: saved, equals: true}}
          asked: {provider: true}
        """
    let graph = loadTestGraph(GuardAndContainerCoreTests.yaml)

    @discardableResult
    func go(_ s: Session, _ to: String, by: Presentation? = nil) throws -> Commit {
        try s.commit(try s.plan(NavigateRequest(to: to, by: by), caller: Caller()))
    }

    @Test func leaveGuardsAreThoseOfWhatADismissRemovesTopFirst() throws {
        let s = Session(name: "t", graph: graph)
        #expect(graph.hasLeaveGuards && graph.leaveGuarded.filter { $0 }.count == 1)
        let first = try go(s, "Editor").node!
        let second = try go(s, "Editor").node!
        let top = try s.leaveGuards(node: nil, to: nil, inclusive: false)
        #expect(top.guarded === second && top.guards.map { graph.preconditions[$0.precondition].localName } == ["saved", "asked"])
        #expect(top.guards.allSatisfy { $0.node == second.number }, "each guard is about the screen it protects")
        let both = try s.leaveGuards(node: first.id, to: nil, inclusive: false)
        #expect(both.guarded === second, "the top screen's guards come first")
        let toHome = try s.leaveGuards(node: nil, to: "Home", inclusive: false).guards
        #expect(toHome.map(\.node) == [second.number, second.number, first.number, first.number], "dismiss {to} runs the guards of each guarded screen it removes, top first")
        #expect(toHome.preconditions.count == 2)
        #expect(throws: NavError.self) { try s.leaveGuards(node: "n1", to: nil, inclusive: false) }
        #expect(s.version == 2, "asking changes nothing")
    }

    @Test func resultReferencesAreReadOnceFromTheResult() {
        let facts: JSONObject = ["signedIn": true, "user": "$result.user.name", "all": "$result", "gone": "$result.nope", "text": "$results"]
        let out = resolveResultReferences(facts, in: ["user": ["name": "$result.user.name"]])
        #expect(out == ["signedIn": true, "user": "$result.user.name", "all": ["user": ["name": "$result.user.name"]], "text": "$results"])
        #expect(isResultReference("$result") == true && isResultReference("$result.a.b") == true)
        #expect(isResultReference("$result..a") == false && isResultReference("$resultx") == false && isResultReference("plain") == nil)
    }

    @Test func aTabContainerIsATabsNodeAnywhereAndItsFirstScreenTakesItAway() throws {
        let s = Session(name: "t", graph: graph)
        let box = try go(s, "Box", by: .present).node!
        #expect(box.kind == .tabs && box.coordinator >= 0 && box.children.count == 2 && box.parent?.kind == .stack)
        try go(s, "Two", by: .select)
        #expect(box.selected == 1)
        try go(s, "One", by: .select)
        try go(s, "Editor")
        #expect(s.visible.count == 6, "root stack, Home, the modal, the tab bar, its tab, Editor")
        _ = try s.dismiss(nil)
        let c = try s.dismiss(nil)
        #expect(c.removed.contains(box.id) && s.visible.count == 2, "the first screen of a container's tab takes the container (and its modal)")
        try go(s, "Box", by: .push)
        let restored = try Session(restoring: "t", graph: graph, root: s.root.json(graph), version: s.version, nextId: s.idCounter, facts: [:], limits: SessionLimits())
        #expect(JSONWriter.string(restored.root.json(graph)) == JSONWriter.string(s.root.json(graph)))
    }

    /// A saved tree is refused, naming the rule, when a node holds a kind of child navd never puts
    /// there, or when an id repeats (checked after the walk, by sorting the ids).
    @Test func aSavedTreeOfAShapeNavdDoesNotMakeIsRefused() throws {
        let s = Session(name: "t", graph: graph)
        try go(s, "Editor")
        let tree = s.root.json(graph)
        guard case .array(let screens) = tree["children"] else { Issue.record("no children in \(tree)"); return }
        func restore(_ root: JSONValue) -> String {
            do {
                _ = try Session(restoring: "t", graph: graph, root: root, version: s.version, nextId: s.idCounter, facts: [:], limits: SessionLimits())
                return "restored"
            } catch { return error.message }
        }
        func with(_ v: JSONValue, _ key: String, _ new: JSONValue?) -> JSONValue {
            guard case .object(var o) = v else { return v }
            o[key] = new
            return .object(o)
        }
        #expect(restore(tree) == "restored")
        // The second screen given the first one's id.
        let twice = with(tree, "children", .array([screens[0], with(screens[1], "id", screens[0]["id"])]))
        #expect(restore(twice).contains("appears twice"), "\(restore(twice))")
        // A screen holding a screen.
        let screenInScreen = with(tree, "children", .array([with(screens[0], "children", .array([screens[1]]))]))
        #expect(restore(screenInScreen).contains("holds a screen"), "\(restore(screenInScreen))")
        // A stack holding a stack.
        let stackInStack = with(tree, "children", .array([screens[0], tree]))
        #expect(restore(stackInStack).contains("holds a stack"), "\(restore(stackInStack))")
    }

    /// A saved tree read in place from its parsed text (as a snapshot's trees are) restores to the
    /// same tree, or is refused with the same message, as the tree read from its value.
    @Test func aSavedTreeReadInPlaceRestoresAsItsValueDoes() throws {
        let s = Session(name: "t", graph: graph)
        try go(s, "Box", by: .present)
        try go(s, "Editor")
        try go(s, "Two", by: .select)
        let text = JSONWriter.string(s.root.json(graph))
        let parser = JSONParser(maxDepth: 256)
        func outcome(_ read: () throws(NavError) -> Session) -> String {
            do throws(NavError) { return "restored " + JSONWriter.string(try read().root.json(graph)) } catch { return error.message }
        }
        func replacing(_ old: String, _ new: String) -> String {
            guard let r = text.range(of: old) else { Issue.record("no \(old) in \(text)"); return text }
            return text.replacingCharacters(in: r, with: new)
        }
        let variants = [
            text,
            replacing("\"kind\":\"stack\"", "\"kind\":\"heap\""),
            replacing("\"id\":", "\"idx\":"),
            replacing("\"kind\":\"stack\"", "\"kind\":\"screen\",\"kind\":\"stack\""),  // the last member counts
            replacing("\"params\":{}", "\"params\":[]"),
            replacing("\"selected\":1", "\"selected\":\"1\""),
            replacing("\"selected\":1", "\"selected\":7"),
            replacing("\"coordinator\":\"", "\"coordinator\":\"zz"),
            replacing("\"children\":[", "\"children\":7,\"x\":["),
            replacing("\"id\":\"n", "\"id\":\"n0"),  // not navd's form: named in the refusal
            replacing("\"id\":\"n", "\"id\":7,\"x\":\"n"),
            replacing("\"coordinator\":\"", "\"coordinator\":7,\"x\":\""),
        ]
        for v in variants {
            let fromValue = outcome { () throws(NavError) in
                try Session(restoring: "t", graph: graph, root: try! parser.parse(v), version: s.version, nextId: s.idCounter, facts: [:],
                            limits: SessionLimits())
            }
            let fromView = outcome { () throws(NavError) in
                var t = v
                return try t.withUTF8 { b in
                    Result { () throws(NavError) -> Session in
                        try Session(restoring: "t", graph: graph, root: try! parser.view(UnsafeRawBufferPointer(b)), version: s.version,
                                    nextId: s.idCounter, facts: [:], limits: SessionLimits(), keys: parser.keys)
                    }
                }.get()
            }
            #expect(fromView == fromValue, "\(v)")
            if v.contains("\"id\":\"n0") { #expect(fromView.contains("saved node id `n0") && fromView.contains("is not one navd makes"), "\(fromView)") }
            if v.contains("\"coordinator\":7") { #expect(fromView.contains("shows ``, which the graph does not declare"), "\(fromView)") }
        }
        #expect(outcome { () throws(NavError) in
            try Session(restoring: "t", graph: graph, root: try! parser.parse(text), version: s.version, nextId: s.idCounter, facts: [:],
                        limits: SessionLimits())
        } == "restored " + text)
    }
}
