import JSON
import NavGraph
import NavTesting
import Testing
@testable import NavigationCore

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
    let graph: NavigationGraph = {
        let (g, d) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: SemanticsTests.yaml)], baseDirectory: "/")
        precondition(!d.hasErrors, d.sorted.map(\.description).joined(separator: "\n"))
        return g!
    }()

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
