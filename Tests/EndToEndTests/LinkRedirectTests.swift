import Foundation
import JSON
import NavTesting
import Testing

/// A declared `redirect:` that fires while `open` or `reset {to}` builds a stack: the redirect's
/// target takes the redirecting screen's place in that stack (issue 37's bug: it was pushed on
/// whatever screen was visible, in another tab, and the link's stack was lost).
@Suite struct LinkRedirectTests {
    static let graph = """
        root: {tabs: [Home, Other, Secure]}
        coordinators:
          Home: {opens: [Family, Person]}
          Other: {opens: [Deep]}
          Deep: {}
          Family:
            opens: [Person]
            setup: {type: object, properties: {id: {type: string}}}
          Person:
            opens: [Album]
            preconditions: [signedIn]
            setup: {type: object, properties: {pid: {type: string}}}
          Album: {}
          Secure: {preconditions: [signedIn]}
          Vault: {preconditions: [signedIn]}
          Login: {}
        preconditions:
          signedIn: {check: {fact: signedIn, equals: true}, redirect: Login}
        links:
          "/family/:id/person/:pid": [Home, {to: Family, with: {id: ":id"}}, {to: Person, with: {pid: ":pid"}}]
          "/family/:id": [Home, {to: Family, with: {id: ":id"}}]
          "/person/:pid/album": [Home, {to: Person, with: {pid: ":pid"}}, Album]
          "/secure": [Secure]
          "/vault": [Vault]
        """

    /// The coordinators of the visible path's innermost stack, bottom first, and the selected tab.
    static func stack(_ c: TestClient) throws -> (tab: Int, screens: [String]) {
        let tree = try c.call("tree")
        let tab = tree["root"]?["selected"]?.intValue ?? -1
        let stack = tree["root"]?["children"]?.arrayValue?[tab]["children"]?.arrayValue ?? []
        return (tab, stack.compactMap { $0["coordinator"]?.stringValue })
    }

    /// Starts in the other tab, with a screen pushed there: the link must not build anything in it.
    static func elsewhere(_ c: TestClient) throws {
        try c.call("navigate", ["to": "Other", "by": "select"])
        try c.call("navigate", ["to": "Deep"])
    }

    @Test func theLastScreenOfALinkRedirectsInItsPlace() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try Self.elsewhere(c)
        let dry = try c.call("open", ["url": "/family/f1/person/p1", "dryRun": true])
        let r = try c.call("open", ["url": "/family/f1/person/p1"])
        #expect(r["redirected"] == [["from": "app.Person", "precondition": "app.signedIn", "to": "app.Login"]], "\(r)")
        let s = try Self.stack(c)
        #expect(s.tab == 0 && s.screens == ["app.Home", "app.Family", "app.Login"], "\(s)")
        // The reply agrees with the dry run up to the screen that redirected: the same tab and the
        // same screens below it (ids included), then the redirect's target.
        let visible = r["visible"]?.arrayValue ?? []
        let dryVisible = dry["visible"]?.arrayValue ?? []
        #expect(visible.count == dryVisible.count && Array(visible.dropLast()) == Array(dryVisible.dropLast()), "reply \(visible), dry run \(dryVisible)")
        #expect(try Self.stack(c).screens.count == 3)
        // The other tab kept what it had.
        let other = try c.call("tree")["root"]?["children"]?.arrayValue?[1]["children"]?.arrayValue?.compactMap { $0["coordinator"]?.stringValue }
        #expect(other == ["app.Other", "app.Deep"])
    }

    @Test func aMiddleScreenRedirectsInItsPlaceAndTheRestIsDropped() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try Self.elsewhere(c)
        let r = try c.call("open", ["url": "/person/p7/album"])
        #expect(r["redirected"]?.arrayValue?.first?["to"] == "app.Login", "\(r)")
        #expect(try Self.stack(c) == (0, ["app.Home", "app.Login"]))
        // reset {to} through a screen that redirects, with screens after it: they are dropped.
        try c.call("navigate", ["to": "Other", "by": "select"])
        let reset = try c.call("reset", ["to": ["app.Home", ["to": "app.Person", "with": ["pid": "p8"]], "app.Album"]])
        #expect(reset["redirected"]?.arrayValue?.first?["from"] == "app.Person", "\(reset)")
        #expect(try Self.stack(c) == (0, ["app.Home", "app.Login"]))
    }

    @Test func theFirstScreenRedirectsFromTheRootOfItsStack() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try Self.elsewhere(c)
        // /secure's screen starts a tab: that tab is selected and the target placed on its first
        // screen (which is always there).
        let secure = try c.call("open", ["url": "/secure"])
        #expect(secure["redirected"]?.arrayValue?.first?["from"] == "app.Secure", "\(secure)")
        #expect(try Self.stack(c) == (2, ["app.Secure", "app.Login"]))
        // /vault's only screen is guarded and starts no tab: the target starts the new stack.
        let r = try c.call("open", ["url": "/vault"])
        #expect(r["redirected"]?.arrayValue?.first?["to"] == "app.Login", "\(r)")
        let tree = try c.call("tree")
        #expect(tree["root"]?["kind"] == "stack" && tree["root"]?["children"]?.arrayValue?.compactMap { $0["coordinator"]?.stringValue } == ["app.Login"], "\(tree)")
    }

    @Test func signedInTheLinkIsBuiltWhole() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try Self.elsewhere(c)
        try c.call("context.set", ["facts": ["signedIn": true]])
        let r = try c.call("open", ["url": "/family/f1/person/p1"])
        #expect(r["redirected"] == nil)
        #expect(try Self.stack(c) == (0, ["app.Home", "app.Family", "app.Person"]))
    }
}
