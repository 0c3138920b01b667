import Foundation
import JSON
import NavTesting
import Testing

/// Popping to a screen that presents a modal hidden by the screens above it in its stack (`navigate
/// {from, by: present}` from a screen not on top): `dismiss {to}`, `navigate {popUpTo}` and
/// `navigate {existing: pop}` show that screen, so its modal goes too, in the same commit, after its
/// leave guards; a subscriber is told both changes.
@Suite struct PopToAPresenterTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [List]}
          List: {opens: [Detail, Sheet]}
          Detail: {opens: [List, Detail]}
          Sheet: {leave: [clean]}
        preconditions:
          clean: {check: {fact: sheetDirty, exists: false}}
        """

    /// Home, List (presenting Sheet, hidden), Detail on top. Answers the ids of List, the modal
    /// stack, Sheet and Detail.
    static func presentUnderDetail(_ c: TestClient) throws -> (list: JSONValue, modal: JSONValue, sheet: JSONValue, detail: JSONValue) {
        let list = try #require(try c.call("navigate", ["to": "List"])["node"])
        let detail = try #require(try c.call("navigate", ["to": "Detail"])["node"])
        let sheet = try #require(try c.call("navigate", ["to": "Sheet", "by": "present", "from": list])["node"])
        let tree = try c.call("tree")
        #expect(tree["visible"]?.arrayValue?.last == detail, "the modal is hidden by Detail: \(tree)")
        let modal = try #require(tree["root"]?["children"]?.arrayValue?[1]["presented"]?["id"])
        return (list, modal, sheet, detail)
    }

    /// The tree shows List on top of the root stack, presenting nothing.
    static func expectListShownAlone(_ c: TestClient, _ list: JSONValue, then top: JSONValue? = nil) throws {
        let tree = try c.call("tree")
        let children = tree["root"]?["children"]?.arrayValue ?? []
        #expect(children.count == (top == nil ? 2 : 3), "\(tree)")
        #expect(children.count > 1 && children[1]["id"] == list && children[1]["presented"] == nil, "\(tree)")
        #expect(tree["visible"]?.arrayValue?.last == (top ?? list), "\(tree)")
    }

    @Test func dismissToTheScreenRemovesItsModalToo() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let s = try d.client()
        let (list, modal, sheet, detail) = try Self.presentUnderDetail(c)
        try s.call("subscribe")
        let removed = try c.call("dismiss", ["to": "List"])["removed"]?.arrayValue ?? []
        #expect(Set(removed) == [detail, modal, sheet], "\(removed)")
        try Self.expectListShownAlone(c, list)
        let changes = try s.notification("stackChanged")["params"]?["changes"]?.arrayValue ?? []
        #expect(changes.map { $0["op"] } == ["pop", "dismiss"], "\(changes)")
    }

    @Test func popUpToTheScreenRemovesItsModalToo() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let (list, _, sheet, _) = try Self.presentUnderDetail(c)
        let r = try c.call("navigate", ["to": "Detail", "popUpTo": ["to": "List"]])
        try Self.expectListShownAlone(c, list, then: r["node"])
        #expect(try c.callError("update", ["node": sheet, "with": [:]])["data"]?["kind"] == "unknownNode")
    }

    @Test func existingPopToTheScreenRemovesItsModalToo() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let (list, _, _, _) = try Self.presentUnderDetail(c)
        let r = try c.call("navigate", ["to": "List", "existing": "pop"])
        #expect(r["node"] == list, "\(r)")
        try Self.expectListShownAlone(c, list)
    }

    /// The hidden modal's leave guards run for each of them: while the sheet is dirty nothing is popped.
    @Test func theHiddenModalsLeaveGuardsRunFirst() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let (_, _, sheet, detail) = try Self.presentUnderDetail(c)
        try c.call("context.set", ["facts": ["sheetDirty": true]])
        let requests: [(String, JSONValue)] = [
            ("dismiss", ["to": "List"]),
            ("navigate", ["to": "Detail", "popUpTo": ["to": "List"]]),
            ("navigate", ["to": "List", "existing": "pop"]),
        ]
        for (method, params) in requests {
            let e = try c.callError(method, params)
            #expect(e["data"]?["kind"] == "preconditionFailed" && e["data"]?["precondition"] == "app.clean", "\(method) \(params): \(e)")
            #expect(e["data"]?["leaving"] == sheet, "\(method) \(params): \(e)")
        }
        let tree = try c.call("tree")
        #expect(tree["version"] == 3 && tree["visible"]?.arrayValue?.last == detail, "nothing popped: \(tree)")
    }
}
