import Foundation
import JSON
import NavTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The attacks of a hostile local client on depth, size, count and fairness (SECURITY.md), each
/// reproduced through the socket: navd refuses or survives it with a clear error, and every other
/// client goes on being served.
@Suite(.serialized) struct CommittedReplyTests {
    /// A graph whose `Waits` screen waits on a command before it commits, and may replace, reset or
    /// pop the screen it is navigated from.
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Form, Waits]}
          Form: {opens: [Waits]}
          Waits: {preconditions: [pause], opens: [Waits]}
        preconditions:
          pause: {command: [sh, -c, "cat >/dev/null; sleep 0.1"]}
        """

    /// A navigation that waits, then removes its own source (`replace`, `root`, `popUpTo` inclusive)
    /// commits, and is answered as committed: with its version and node, the node on top. A retry
    /// with the same key gets that same answer.
    @Test(arguments: [
        ["by": "replace"] as JSONObject,
        ["by": "root"],
        ["by": "push", "popUpTo": ["to": "app.Form", "inclusive": true]],
    ])
    func aNavigationThatRemovesItsSourceIsAnsweredAsCommitted(_ how: JSONObject) throws {
        let d = try Daemon(graph: CommittedReplyTests.graph)
        let c = try d.client()
        let form = try c.call("navigate", ["to": "app.Form"])
        var params: JSONObject = ["to": "app.Waits", "from": form["node"]!, "key": "k1"]
        for (k, v) in how { params[k] = v }
        let r = try c.call("navigate", .object(params), timeout: 10)
        #expect(r["version"] == 2, "the navigation committed, so it is answered with its version: \(r)")
        let tree = try c.call("tree")
        #expect(tree["version"] == 2)
        #expect(tree["visible"]?.arrayValue?.last == r["node"], "the node it answered is on top: \(tree)")
        let again = try c.call("navigate", .object(params))
        #expect(again == r, "a keyed retry answers exactly the first reply")
    }

    /// A dismiss held by a leave guard that passes removes the guarded screen and answers it.
    @Test func aGuardedDismissThatPassesIsAnsweredWithWhatItRemoved() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Draft]}
              Draft: {leave: [pause]}
            preconditions:
              pause: {command: [sh, -c, "cat >/dev/null; sleep 0.1"]}
            """)
        let c = try d.client()
        let draft = try c.call("navigate", ["to": "app.Draft"])
        let r = try c.call("dismiss", ["node": draft["node"]!])
        #expect(r["version"] == 2 && r["removed"] == [draft["node"]!], "\(r)")
    }
}
