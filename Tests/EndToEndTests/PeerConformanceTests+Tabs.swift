import Foundation
import JSON
import NavTesting
import Testing

/// React Navigation's TabRouter and exit tests, the same conformance suite.
extension PeerConformanceTests {
    // MARK: TabRouter.test.tsx

    /// React Navigation, `packages/routers/src/__tests__/TabRouter.test.tsx`: tabs bar, baz, qux
    /// (the root's tabs), with the router's `backBehavior` as the tabs' `back:`.
    static func tabGraph(back: String) -> String {
        """
        root: {tabs: [bar, baz, qux], back: \(back)}
        coordinators:
          bar: {setup: {type: object, properties: {answer: {type: integer}, fruit: {type: string}, color: {type: string}}}}
          baz: {setup: {type: object, properties: {answer: {type: integer}, fruit: {type: string}, color: {type: string}}}}
          qux: {}
        """
    }

    /// The selected tab's coordinator (without module), or what the dismiss answered.
    static func tab(_ c: TestClient) -> String {
        guard let root = try? c.call("tree")["root"], let i = root["selected"]?.intValue,
              let name = root["children"]?.arrayValue?[i]["children"]?.arrayValue?.first?["coordinator"]?.stringValue else { return "?" }
        return name.replacingOccurrences(of: "app.", with: "")
    }

    /// Presses back (`dismiss`) and answers the tab then selected, or "null" when navd refused
    /// (the peer's router answering null: nothing to go back to).
    static func back(_ c: TestClient) throws -> String {
        let id = try c.send("dismiss")
        let r = try c.reply(to: id)
        if let e = r["error"] { return e["data"]?["kind"] == "unknownNode" ? "null" : "error \(e)" }
        return tab(c)
    }

    /// TabRouter.test.tsx, "handles back action with backBehavior: history", "… order", "…
    /// initialRoute" (navd's `firstTab`: the first tab is the initial one), "… none": the peer
    /// jumps from tab to tab and asks, after each jump, what back would give (without going
    /// back); here each question is a fresh session given the same jumps, then one `dismiss`.
    /// "null" is the router's null: navd refuses (nothing to go back to).
    @Test(arguments: [
        ("history", ["qux", "baz", "bar"], ["null", "bar", "qux", "baz"]),
        ("order", ["qux", "baz", "bar"], ["null", "baz", "bar", "null"]),
        ("firstTab", ["qux", "baz", "bar"], ["null", "bar", "bar", "null"]),
        ("none", ["baz"], ["-", "null"]),
    ])
    func handlesBackAction(back: String, jumps: [String], expected: [String]) throws {
        for (n, answer) in expected.enumerated() where answer != "-" {
            let d = try Daemon(graph: Self.tabGraph(back: back))
            let c = try d.client()
            for t in jumps.prefix(n) { try c.call("navigate", ["to": .string(t), "by": "select"]) }
            #expect(try Self.back(c) == answer, "back: \(back), after \(jumps.prefix(n))")
        }
    }

    /// TabRouter.test.tsx, "updates route key history on navigate and jump to": after jumps to baz,
    /// qux, bar and baz, back goes to bar, then qux (navd's history leaves out the selected tab).
    @Test func tabHistoryFollowsNavigateAndJumpTo() throws {
        let d = try Daemon(graph: Self.tabGraph(back: "history"))
        let c = try d.client()
        for t in ["baz", "qux", "bar", "baz"] { try c.call("navigate", ["to": .string(t), "by": "select"]) }
        #expect(try c.call("tree")["root"]?["history"] == [2, 0])
        #expect(try Self.back(c) == "bar")
        #expect(try Self.back(c) == "qux")
    }

    /// A press on the tab already selected (React Navigation's `tabPress` on the focused tab): a
    /// commit of its own, a `select` of the same index that subscribers see, the tab's stack and
    /// its history left as they are.
    @Test func selectingTheSelectedTabIsACommitThatChangesNoNode() throws {
        let d = try Daemon(graph: Self.tabGraph(back: "history"))
        let c = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        try c.call("navigate", ["to": "baz", "by": "select"])
        _ = try watcher.notification("stackChanged")
        let before = try c.call("tree")
        let again = try c.call("navigate", ["to": "baz", "by": "select"])
        #expect(again["version"] == 2 && again["node"] == before["visible"]?.arrayValue?.last, "\(again)")
        let seen = try watcher.notification("stackChanged")
        #expect(seen["params"]?["changes"] == [["op": "select", "parent": before["root"]?["id"] ?? .null, "index": 1, "history": [0]]], "\(seen)")
        let after = try c.call("tree")
        #expect(after["root"] == before["root"] && after["version"] == 2, "\(after)")
    }

    /// TabRouter.test.tsx, "handles navigate action", "handles jump to action", "merges params on
    /// navigate to an existing screen", "merges params on jump to an existing screen": navigate or
    /// jumpTo a tab selects it; params given replace its screen's (after {color: "tomato"},
    /// navigating with {answer: 42} leaves exactly {answer: 42}), and are merged only with
    /// `merge: true`; an unknown tab is refused. navd: `navigate {by: select, with, merge?}`.
    @Test func selectingATabReplacesItsParamsOrMergesThem() throws {
        let d = try Daemon(graph: Self.tabGraph(back: "none"))
        let c = try d.client()
        func baz() throws -> JSONValue? { try c.call("tree")["root"]?["children"]?.arrayValue?[1]["children"]?.arrayValue?.first?["params"] }
        try c.call("navigate", ["to": "baz", "by": "select", "with": ["color": "tomato"]])
        #expect(Self.tab(c) == "baz")
        try c.call("navigate", ["to": "bar", "by": "select"])
        try c.call("navigate", ["to": "baz", "by": "select", "with": ["answer": 42]])
        #expect(try baz() == ["answer": 42], "replaced, as React Navigation does")
        try c.call("navigate", ["to": "bar", "by": "select"])
        try c.call("navigate", ["to": "baz", "by": "select"])
        #expect(try baz() == ["answer": 42], "no params given: the screen keeps its own")
        try c.call("navigate", ["to": "baz", "by": "select", "with": ["fruit": "orange"], "merge": true])
        #expect(try baz() == ["answer": 42, "fruit": "orange"], "merged with merge: true")
        #expect(try c.callError("navigate", ["to": "non-existent", "by": "select"])["data"]?["kind"] == "unknownTarget")
    }

    // MARK: go_router on_exit_test.dart

    /// flutter/packages, `packages/go_router/test/on_exit_test.dart`: a route's `onExit` is navd's
    /// `leave:` guard; `pop` is `dismiss`, `go` is `open` (a link replacing the stack). `allowed`
    /// answers at once (a fact), `asked` asynchronously (a provider).
    static let exitGraph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [P1, Q1]}
          P1: {opens: [P2], leave: [allowed], setup: {type: object, properties: {id: {type: string}}}}
          P2: {opens: [P3], leave: [asked], setup: {type: object, properties: {id: {type: string}}}}
          P3: {leave: [asked], setup: {type: object, properties: {id: {type: string}}}}
          Q1: {leave: [asked]}
        links:
          "/": [Home]
          "/1": [Home, P1]
        preconditions:
          allowed: {check: {fact: allow, equals: true}}
          asked: {provider: true, timeout: 10s}
        """

    /// on_exit_test.dart, "back button works synchronously", "context.go works synchronously",
    /// "pop is cancelled when onExit returns false", "pop does not call restore with stale config
    /// when route has onExit": a guard that says no keeps the screen (for `dismiss` and for a link
    /// that replaces the stack); once it says yes, the screen goes.
    @Test(arguments: [("dismiss", [:] as JSONValue), ("open", ["url": "/"] as JSONValue)])
    func onExitAnsweredAtOnce(method: String, params: JSONValue) throws {
        let d = try Daemon(graph: Self.exitGraph)
        let c = try d.client()
        try c.call("open", ["url": "/1"])
        #expect(try c.callError(method, params)["data"]?["precondition"] == "app.allowed")
        #expect(Self.stack(c) == ["Home", "P1"])
        try c.call("context.set", ["facts": ["allow": true]])
        try c.call(method, params)
        #expect(Self.stack(c) == ["Home"])
    }

    /// on_exit_test.dart, "back button works asynchronously", "context.go works asynchronously":
    /// while the guard's answer is awaited the screen stays; false keeps it, true lets it go.
    @Test(arguments: [("dismiss", [:] as JSONValue), ("reset", ["to": ["Home"]] as JSONValue)])
    func onExitAnsweredLater(method: String, params: JSONValue) throws {
        let d = try Daemon(graph: Self.exitGraph)
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        let c = try d.client()
        try c.call("navigate", ["to": "Q1"])
        for answer in [false, true] {
            let id = try c.send(method, params)
            let ask = try provider.serverRequest("precondition.evaluate")
            #expect(Self.stack(c) == ["Home", "Q1"], "the screen stays while the guard is asked")
            try provider.respond(to: ask, result: ["passed": .bool(answer)])
            let r = try c.reply(to: id)
            #expect((r["error"] == nil) == answer, "\(r)")
            #expect(Self.stack(c) == (answer ? ["Home"] : ["Home", "Q1"]))
        }
    }

    /// on_exit_test.dart, "It should provide the correct uri to the onExit callback", "It should
    /// provide the correct path parameters to the onExit callback": popping one screen at a time,
    /// each guard is told which screen it is leaving, its coordinator and its params.
    @Test func onExitIsToldTheScreenItLeaves() throws {
        let d = try Daemon(graph: Self.exitGraph)
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        let c = try d.client()
        try c.call("context.set", ["facts": ["allow": true]])
        try c.call("reset", ["to": [["to": "Home"], ["to": "P1", "with": ["id": "1"]], ["to": "P2", "with": ["id": "2"]], ["to": "P3", "with": ["id": "3"]]]])
        let ids = try c.call("tree")["root"]?["children"]?.arrayValue?.map { $0["id"] ?? .null } ?? []
        for (i, name) in [(3, "app.P3"), (2, "app.P2")] {
            let id = try c.send("dismiss")
            let ask = try provider.serverRequest("precondition.evaluate")
            let nav = ask["params"]?["navigation"]
            #expect(nav?["leaving"] == ids[i] && nav?["coordinator"] == .string(name) && nav?["with"] == ["id": .string(String(i))], "\(ask)")
            try provider.respond(to: ask, result: ["passed": true])
            #expect(try c.reply(to: id)["error"] == nil)
        }
        try c.call("dismiss")
        #expect(Self.stack(c) == ["Home"])
    }
}
