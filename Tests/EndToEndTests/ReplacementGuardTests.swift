import Foundation
import JSON
import NavTesting
import Testing

/// Navigations that replace screens (`replace`, `root`, a `select` bringing tabs back, `reset`,
/// `open`) run the `leave:` guards of
/// what they remove, unless `force: true` (go_router's `onExit` on `go()`).
@Suite struct ReplacementGuardTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Editor, List]}
          Editor: {opens: [List], leave: [saved]}
          List: {}
        links:
          "/list": [Home, List]
        preconditions:
          saved: {check: {fact: saved, equals: true}}
        """

    func daemonOnTheEditor() throws -> (Daemon, TestClient) {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try c.call("navigate", ["to": "Editor"])
        return (d, c)
    }

    @Test(arguments: [
        ("navigate", ["to": "List", "by": "replace"] as JSONValue),
        ("navigate", ["to": "Home", "by": "root"] as JSONValue),
        ("open", ["url": "/list"] as JSONValue),
        ("reset", ["to": ["Home", "List"]] as JSONValue),
        ("reset", [:] as JSONValue),
    ])
    func aReplacementRunsTheGuardsOfWhatItRemovesUnlessForced(method: String, params: JSONValue) throws {
        let (d, c) = try daemonOnTheEditor()
        _ = d
        let refused = try c.callError(method, params)
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(method) \(refused)")
        let tree = try c.call("tree")
        #expect(tree["version"] == 1, "nothing changed: \(tree)")
        guard case .object(var forced) = params else { return }
        forced["force"] = true
        let r = try c.call(method, .object(forced))
        #expect(r["version"] == 2, "\(method) with force: \(r)")
    }

    /// A `select` that brings back the declared tabs (a `root` navigation replaced them) removes
    /// what the root held: their leave guards run first, as a replacement's do.
    @Test func aSelectThatBringsTheTabsBackRunsTheGuardsOfWhatItRemoves() throws {
        let d = try Daemon(graph: """
            root: {tabs: [Home, Other]}
            coordinators:
              Home: {opens: [Editor]}
              Other: {}
              Editor: {leave: [saved]}
            preconditions:
              saved: {check: {fact: saved, equals: true}}
            """)
        let c = try d.client()
        try c.call("navigate", ["to": "Editor", "by": "root"])
        let refused = try c.callError("navigate", ["to": "Other", "by": "select"])
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(refused)")
        #expect(try c.call("tree")["version"] == 1, "the editor stays")
        #expect(try c.call("navigate", ["to": "Other", "by": "select", "force": true])["version"] == 2)
        #expect(try c.call("tree")["root"]?["kind"] == "tabs")
    }

    /// A leave guard lets what removes its screen go on or refuses it: a redirect a provider
    /// answers for it (or one the precondition declares) refuses the replacement, and never takes
    /// the place of the link's screens, whose own preconditions have not run yet.
    @Test(arguments: [
        ("open", ["url": "/list"] as JSONValue),
        ("navigate", ["to": "List", "by": "replace"] as JSONValue),
        ("navigate", ["to": "Home", "by": "root"] as JSONValue),
    ])
    func aLeaveGuardDoesNotRedirectWhatRemovesItsScreen(method: String, params: JSONValue) throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Editor, List, Elsewhere]}
              Editor: {opens: [List], leave: [asked, declared]}
              List: {preconditions: [never]}
              Elsewhere: {}
            links:
              "/list": [Home, List]
            preconditions:
              asked: {provider: true}
              declared: {check: {fact: kept, equals: true}, redirect: {to: Elsewhere}}
              never: {check: {fact: never, equals: true}}
            """)
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        let c = try d.client()
        try c.call("navigate", ["to": "Editor"])
        let id = try c.send(method, params)
        try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": false, "redirect": "app.Elsewhere"])
        let refused = try #require(try c.reply(to: id)["error"])
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.asked", "\(refused)")
        let reason = refused["data"]?["reason"]?.stringValue ?? ""
        #expect(reason.contains("a leave guard can only"), "\(refused)")
        #expect(try c.call("tree")["version"] == 1, "the editor stays")
        // The declared redirect of a guard that fails is not followed either.
        let id2 = try c.send(method, params)
        try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": true])
        let declared = try #require(try c.reply(to: id2)["error"])
        #expect(declared["data"]?["kind"] == "preconditionFailed" && declared["data"]?["precondition"] == "app.declared", "\(declared)")
        #expect(try c.call("tree")["version"] == 1, "the editor stays")
    }

    /// A redirect that replaces screens the navigation itself would not (`redirect: {to, by: root}`
    /// of a pushed target) runs the leave guards of what it removes, unless `force`.
    @Test func aRedirectThatReplacesScreensRunsTheirLeaveGuards() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Editor]}
              Editor: {opens: [Promo], leave: [saved]}
              Promo: {preconditions: [nope]}
              Landing: {}
            preconditions:
              saved: {check: {fact: saved, equals: true}}
              nope: {check: {fact: never, equals: true}, redirect: {to: Landing, by: root}}
            """)
        let c = try d.client()
        try c.call("navigate", ["to": "Editor"])
        let refused = try c.callError("navigate", ["to": "Promo"])
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(refused)")
        #expect(try c.call("tree")["version"] == 1, "the editor stays")
        let forced = try c.call("navigate", ["to": "Promo", "force": true])
        #expect(forced["version"] == 2 && forced["redirected"]?.arrayValue?.first?["to"] == "app.Landing", "\(forced)")
    }

    @Test func aGuardThatPassesLetsTheReplacementThrough() throws {
        let (d, c) = try daemonOnTheEditor()
        _ = d
        try c.call("context.set", ["facts": ["saved": true]])
        let r = try c.call("open", ["url": "/list"])
        #expect(r["version"] == 2)
        let stack = try c.call("tree")["root"]?["children"]?.arrayValue?.map { $0["coordinator"] }
        #expect(stack == ["app.Home", "app.List"])
    }
}
