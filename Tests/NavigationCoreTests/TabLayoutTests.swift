import JSON
import NavGraph
import NavTesting
import Testing
@testable import NavigationCore

/// The tabs a graph declares, as the state file records them: written and read back the same, and
/// a saved tree checked against them by name and place.
@Suite struct TabLayoutTests {
    let graph = loadTestGraph("""
        root: {tabs: [Home, Cart]}
        coordinators:
          Home: {opens: [T]}
          Cart: {}
          T: {tabs: [A, B]}
          A: {}
          B: {}
        """)

    @Test func whatItWritesReadsBackTheSame() throws {
        let layout = TabLayout(graph)
        #expect(layout.root == ["app.Home", "app.Cart"])
        #expect(layout.containers == ["app.T": ["app.A", "app.B"]])
        let text = JSONWriter.string(layout.json)
        #expect(TabLayout(json: try JSONParser().parse(text)) == layout)
        let stack = loadTestGraph("root: {stack: Home}\ncoordinators: {Home: {}}")
        #expect(TabLayout(json: TabLayout(stack).json) == TabLayout(stack))
        #expect(TabLayout(stack).root == nil)
    }

    @Test(arguments: ["[]", "{}", #"{"root": null}"#, #"{"root": [1], "tabs": {}}"#, #"{"root": null, "tabs": {"a": "b"}}"#,
                      #"{"root": "x", "tabs": {}}"#, #"{"tabs": {}}"#])
    func whatIsNotALayoutIsRefused(_ text: String) throws {
        #expect(TabLayout(json: try JSONParser().parse(text)) == nil)
    }

    @Test func aTreeIsCheckedByTheNamesItsTabsWereSavedWith() throws {
        let s = Session(name: "s", graph: graph)
        _ = try s.commit(try s.plan(NavigateRequest(to: "app.T"), caller: Caller()))
        let same = TabLayout(graph)
        try Session.checkTabs(of: s.root, graph: graph, savedUnder: same)
        // The root's tabs saved in another order.
        var moved = same
        moved.root = ["app.Cart", "app.Home"]
        #expect(throws: NavError.self) { try Session.checkTabs(of: s.root, graph: graph, savedUnder: moved) }
        // The container's tabs saved in another order; a layout that does not name it is not checked.
        moved = same
        moved.containers["app.T"] = ["app.B", "app.A"]
        do {
            try Session.checkTabs(of: s.root, graph: graph, savedUnder: moved)
            Issue.record("a container whose tabs moved was taken")
        } catch {
            #expect(error.message.contains("saved tabs") && error.message.contains("its container `app.T` declares app.A, app.B now"), "\(error.message)")
        }
        moved.containers = [:]
        try Session.checkTabs(of: s.root, graph: graph, savedUnder: moved)
    }
}
