import Foundation
import JSON
import NavTesting
import Testing

/// A leave guard protects one screen: it runs for each screen it guards that would be removed,
/// with that screen as its subject (`leaving`, `coordinator`, `with` for providers and on a
/// command's stdin, `{with.FIELD}` from that screen's params), not once for all of them with the
/// params of another screen or of the navigation's target.
@Suite struct LeaveGuardPerScreenTests {
    /// Each editor holds a draft, protected by `draftSaved`: a command that passes when that draft
    /// is not dirty, or a provider.
    static func graph(draftSaved: String) -> String {
        """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Editor, List]}
          Editor:
            setup: {type: object, properties: {draft: {type: string}}}
            opens: [Editor, List]
            leave: [draftSaved]
          List: {opens: [List]}
        preconditions:
          draftSaved: \(draftSaved)
        """
    }

    static let commandGraph = graph(draftSaved: #"{command: [sh, -c, 'test "$1" != dirty || { echo "draft $1 not saved"; exit 1; }', sh, "{with.draft}"]}"#)
    static let providerGraph = graph(draftSaved: "{provider: true}")

    /// Home, a dirty editor, a clean editor on top: a dismiss to Home would remove both.
    @Test func aDismissOfTwoGuardedScreensRunsTheGuardForEach() throws {
        let d = try Daemon(graph: Self.commandGraph)
        let c = try d.client()
        try c.call("navigate", ["to": "Editor", "with": ["draft": "dirty"]])
        try c.call("navigate", ["to": "Editor", "with": ["draft": "clean"]])
        let refused = try c.callError("dismiss", ["to": "Home"])
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.draftSaved", "\(refused)")
        let reason = refused["data"]?["reason"]?.stringValue ?? ""
        #expect(reason.contains("draft dirty not saved"), "\(refused)")
        #expect(try c.call("tree")["version"] == 2, "both editors stay")
    }

    /// A replacement's leave guard reads the params of the screen it protects, not the target's.
    @Test(arguments: [
        ["to": "List", "by": "replace"] as JSONValue,
        ["to": "Home", "by": "root"] as JSONValue,
        ["to": "List", "popUpTo": ["to": "Home"]] as JSONValue,
    ])
    func aReplacementsGuardReadsTheParamsOfTheScreenItProtects(params: JSONValue) throws {
        let d = try Daemon(graph: Self.commandGraph)
        let c = try d.client()
        try c.call("navigate", ["to": "Editor", "with": ["draft": "dirty"]])
        let refused = try c.callError("navigate", params)
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.draftSaved", "\(params) \(refused)")
        let reason = refused["data"]?["reason"]?.stringValue ?? ""
        #expect(reason.contains("draft dirty not saved"), "\(refused)")
        #expect(try c.call("tree")["version"] == 1, "the editor stays")
    }

    /// A provider is asked once per guarded screen, top first, each time about that screen.
    @Test(arguments: [
        ("dismiss", ["to": "Home"] as JSONValue),
        ("navigate", ["to": "Home", "by": "root"] as JSONValue),
        ("reset", [:] as JSONValue),
    ])
    func aProviderIsAskedAboutEachScreen(method: String, params: JSONValue) throws {
        let d = try Daemon(graph: Self.providerGraph)
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.draftSaved"]])
        let c = try d.client()
        let dirty = try c.call("navigate", ["to": "Editor", "with": ["draft": "dirty"]])["node"]!
        let clean = try c.call("navigate", ["to": "Editor", "with": ["draft": "clean"]])["node"]!
        let watcher = try d.client()
        try watcher.call("subscribe")
        let id = try c.send(method, params)
        let pending = try watcher.notification("navigationPending")
        #expect(pending["params"]?["leaving"] == clean && pending["params"]?["waitingFor"] == "app.draftSaved", "subscribers see which screen's guard waits: \(pending)")
        let first = try provider.serverRequest("precondition.evaluate")
        let firstNav = first["params"]?["navigation"]
        #expect(firstNav?["leaving"] == clean && firstNav?["coordinator"] == "app.Editor" && firstNav?["with"]?["draft"] == "clean", "\(first)")
        try provider.respond(to: first, result: ["passed": true])
        let second = try provider.serverRequest("precondition.evaluate")
        let secondNav = second["params"]?["navigation"]
        #expect(secondNav?["leaving"] == dirty && secondNav?["with"]?["draft"] == "dirty", "\(second)")
        try provider.respond(to: second, result: ["passed": false, "reason": "draft not saved"])
        let refused = try #require(try c.reply(to: id)["error"], "\(method)")
        #expect(refused["data"]?["kind"] == "preconditionFailed", "\(refused)")
        let message = refused["message"]?.stringValue ?? ""
        #expect(message.contains(try #require(dirty.stringValue)) && refused["data"]?["leaving"] == dirty, "the error names the screen: \(refused)")
        #expect(try c.call("tree")["version"] == 2, "both editors stay")
    }

    /// A guarded screen that came above the match while a `popUpTo` waited, guarded by the same
    /// precondition as one whose guard already ran for it, still makes it `conflict`: the guard ran
    /// for the other screen, not for this one.
    @Test func aScreenThatCameWithAGuardAlreadyRunForAnotherIsNotRemovedUnasked() throws {
        let d = try Daemon(graph: Self.providerGraph)
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.draftSaved"]])
        let c = try d.client()
        let first = try c.call("navigate", ["to": "Editor", "with": ["draft": "one"]])["node"]!
        try c.call("navigate", ["to": "List"])
        let id = try c.send("navigate", ["to": "List", "popUpTo": ["to": "Home"]])
        let asked = try provider.serverRequest("precondition.evaluate")
        #expect(asked["params"]?["navigation"]?["leaving"] == first, "\(asked)")
        // Meanwhile another editor comes on top, pushed from the first (lower in the stack).
        let other = try d.client()
        try other.call("navigate", ["to": "Editor", "with": ["draft": "two"], "from": first])
        try provider.respond(to: asked, result: ["passed": true])
        let refused = try #require(try c.reply(to: id)["error"])
        #expect(refused["data"]?["kind"] == "conflict" && refused["data"]?["preconditions"] == ["app.draftSaved"], "\(refused)")
        #expect(try c.call("tree")["version"] == 3, "the pop removed nothing")
    }
}
