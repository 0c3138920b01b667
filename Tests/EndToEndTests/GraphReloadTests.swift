import Foundation
import JSON
import NavTesting
import Testing

/// `graph.reload` and SIGHUP on a running navd.
@Suite struct GraphReloadTests {
    let v1 = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Product, Old]}
          Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}}
          Old: {}
        """

    func write(_ text: String, _ dir: TempDir) throws {
        try text.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
    }

    @Test func invalidGraphIsRefusedWithDiagnosticsAndNothingChanges() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try write(v1, dir)
        let d = try Daemon(arguments: ["--graph", dir.path])
        let c = try d.client()
        try c.call("navigate", ["to": "Product", "with": ["id": "a"]])
        let before = try c.call("tree")
        try write("root: {stack: Hom}\ncoordinators: {Home: {}}\n", dir)
        let r = try c.call("graph.reload")
        #expect(r["ok"] == false)
        let message = r["errors"]?.arrayValue?.first?.stringValue ?? ""
        #expect(message.contains("app.yaml:1:15: error: `app.Hom`"), "\(r)")
        #expect(try c.call("tree") == before)
        #expect(try c.call("graph.describe")["coordinators"]?["app.Product"] != nil)
    }

    @Test func validGraphIsAppliedAndSubscribersHearIt() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try write(v1, dir)
        let d = try Daemon(arguments: ["--graph", dir.path])
        let c = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        try c.call("navigate", ["to": "Product", "with": ["id": "a"]])
        try write(v1 + "\n  New: {}\n", dir)
        #expect(try c.call("graph.reload")["ok"] == true)
        #expect(try watcher.notification("graphReloaded")["params"]?["version"] == 2)
        #expect(try c.call("graph.describe")["coordinators"]?["app.New"] != nil)
        // The caller subscribed to nothing: its reply, and no notification before or after it (the
        // describe's reply came after anything navd sent it then).
        #expect(!c.notifications.contains { $0["method"] == "graphReloaded" }, "\(c.notifications)")
        #expect(!watcher.notifications.contains { $0["method"] == "graphReloaded" }, "heard once: \(watcher.notifications)")
        #expect(try c.call("tree")["version"] == 1, "the tree is unchanged")
        // Navigation goes on against the new graph.
        try c.call("dismiss")
        #expect(try c.call("navigate", ["to": "Product", "with": ["id": "b"]])["version"] == 3)
    }

    @Test func liveNodesMissingFromTheNewGraphRefuseUnlessForced() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try write(v1, dir)
        let d = try Daemon(arguments: ["--graph", dir.path])
        let c = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        let old = try c.call("navigate", ["to": "Old"])["node"]!
        _ = try watcher.notification("stackChanged")
        try write("""
            root: {stack: Home}
            coordinators:
              Home: {opens: [Product]}
              Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}}
            """, dir)
        let refused = try c.call("graph.reload")
        #expect(refused["ok"] == false)
        let message = refused["errors"]?.arrayValue?.first?.stringValue ?? ""
        #expect(message.contains("node \(old.stringValue!) shows `app.Old`"))
        #expect(try c.call("tree")["version"] == 1)
        let forced = try c.call("graph.reload", ["force": true])
        #expect(forced["ok"] == true && forced["removedNodes"] == 1)
        let change = try watcher.notification("stackChanged")
        #expect(change["params"]?["changes"]?.arrayValue?.first?["op"] == "pop")
        #expect(try c.call("tree")["version"] == 2)
    }

    @Test func sighupReloads() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try write(v1, dir)
        let d = try Daemon(arguments: ["--graph", dir.path])
        let c = try d.client()
        try c.call("subscribe", ["session": "main"])
        try c.call("session.open", ["name": "other"])
        try c.call("subscribe", ["session": "other"])
        try write(v1 + "\n  New: {}\n", dir)
        kill(d.pid, SIGHUP)
        #expect(try c.notification("graphReloaded")["params"]?["version"] == 2)
        #expect(try c.call("graph.describe")["coordinators"]?["app.New"] != nil)
        // Subscribed to two sessions, it hears the reload once.
        #expect(!c.notifications.contains { $0["method"] == "graphReloaded" }, "\(c.notifications)")
    }
}
