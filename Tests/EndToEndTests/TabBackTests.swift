import Foundation
import JSON
import NavClient
import NavTesting
import Testing

/// `back:` of a tabs container: what `dismiss` does at the first screen of the selected tab
/// (React Navigation's `backBehavior`), and the tab history `back: history` keeps in the session.
@Suite struct TabBackTests {
    static func graph(rootBack: String, containerBack: String = "order") -> String {
        """
        root: {tabs: [A, B, C], back: \(rootBack)}
        coordinators:
          A: {opens: [Detail, Settings]}
          B: {opens: [Detail]}
          C: {opens: [Detail]}
          Detail: {}
          Settings: {tabs: [General, Privacy, Advanced], back: \(containerBack)}
          General: {}
          Privacy: {}
          Advanced: {}
        """
    }

    static func selected(_ c: TestClient) throws -> (Int, [Int]?) {
        let root = try c.call("tree")["root"]
        return (root?["selected"]?.intValue ?? -1, root?["history"]?.arrayValue?.compactMap(\.intValue))
    }

    @Test func historyGoesBackThroughTheTabsSelectedBeforeAndSurvivesKillNine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock")
        do {
            let d = try Daemon(graph: Self.graph(rootBack: "history"), arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            let watcher = try d.client()
            try watcher.call("subscribe")
            for tab in ["B", "C", "B"] { try c.call("navigate", ["to": .string(tab), "by": "select"]) }
            // Each tab once, the most recent last, never the selected one.
            #expect(try Self.selected(c) == (1, [0, 2]))
            // A screen above the tab's first is dismissed as usual; at the first, back to C.
            try c.call("navigate", ["to": "Detail"])
            try c.call("dismiss")
            #expect(try Self.selected(c) == (1, [0, 2]))
            let back = try c.call("dismiss")
            #expect(back["removed"] == [], "\(back)")
            #expect(try Self.selected(c) == (2, [0]))
            // The change carries the history, so a subscriber's copy stays the tree.
            var changes: [JSONValue] = []
            for _ in 0..<6 { changes += try watcher.notification("stackChanged")["params"]?["changes"]?.arrayValue ?? [] }
            #expect(changes.last?["op"] == "select" && changes.last?["history"] == [0], "\(changes)")
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(graph: Self.graph(rootBack: "history"), arguments: ["--state", state], socketPath: sock)
        let c = try d.client()
        #expect(try Self.selected(c) == (2, [0]), "the history is saved with the session")
        try c.call("dismiss")
        #expect(try Self.selected(c) == (0, nil))
        // Nothing left to go back to: the root's first tab keeps its screen.
        let e = try c.callError("dismiss")
        #expect(e["data"]?["kind"] == "unknownNode", "\(e)")
    }

    /// NavClient's mirror follows the history the select changes carry.
    /// A history kept under a graph whose `back:` was history, reloaded with another `back:`, goes
    /// at the next select (its change says so): navd never writes a history holding the selected
    /// tab, which it could not read back after `kill -9` (found by the random walk, seed 834).
    @Test func aHistoryLeftByAReloadToAnotherBackGoesAtTheNextSelectAndTheLogReadsBack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock"), graphDir = dir.file("graph")
        try FileManager.default.createDirectory(atPath: graphDir, withIntermediateDirectories: true)
        try Self.graph(rootBack: "history").write(toFile: graphDir + "/app.yaml", atomically: true, encoding: .utf8)
        do {
            let d = try Daemon(arguments: ["--graph", graphDir, "--state", state], socketPath: sock)
            let c = try d.client()
            let watcher = try d.client()
            try watcher.call("subscribe")
            for tab in ["B", "C"] { try c.call("navigate", ["to": .string(tab), "by": "select"]) }
            #expect(try Self.selected(c) == (2, [0, 1]))
            try Self.graph(rootBack: "none").write(toFile: graphDir + "/app.yaml", atomically: true, encoding: .utf8)
            #expect(try c.call("graph.reload")["ok"] == true)
            try c.call("navigate", ["to": "A", "by": "select"])
            #expect(try Self.selected(c) == (0, nil))
            var last: JSONValue?
            for _ in 0..<3 { last = try watcher.notification("stackChanged")["params"]?["changes"]?.arrayValue?.last }
            #expect(last?["op"] == "select" && last?["index"] == 0 && last?["history"] == nil, "\(last ?? .null)")
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(arguments: ["--graph", graphDir, "--state", state], socketPath: sock)
        #expect(try Self.selected(try d.client()) == (0, nil))
    }

    @Test func aMirrorStaysTheTree() throws {
        let d = try Daemon(graph: Self.graph(rootBack: "history"))
        let c = try NavClient(socketPath: d.socketPath)
        let watcher = try NavClient(socketPath: d.socketPath)
        var mirror = try watcher.subscribe()
        for tab in ["B", "C", "A"] { try c.navigate(to: tab, by: .select) }
        for expected in [[1], nil] as [JSONValue?] {
            try c.dismiss()
            let tree = try c.tree()
            while mirror.version < tree.version { try watcher.apply(to: &mirror) }
            #expect(mirror.root == tree.root && tree.root["history"] == expected, "\(mirror.root)")
        }
    }

    @Test func firstTabAndOrder() throws {
        var d = try Daemon(graph: Self.graph(rootBack: "firstTab"))
        var c = try d.client()
        try c.call("navigate", ["to": "C", "by": "select"])
        try c.call("dismiss")
        #expect(try Self.selected(c) == (0, nil))
        d = try Daemon(graph: Self.graph(rootBack: "order"))
        c = try d.client()
        try c.call("navigate", ["to": "C", "by": "select"])
        try c.call("dismiss")
        #expect(try Self.selected(c) == (1, nil))
        try c.call("dismiss")
        #expect(try Self.selected(c) == (0, nil))
        #expect(try c.callError("dismiss")["data"]?["kind"] == "unknownNode")
    }

    /// A tab container navigated to: back goes through its tabs, then the container goes (as a
    /// dismiss of its first tab's first screen does without `back:`).
    @Test func aTabContainerGoesBackThenLeaves() throws {
        let d = try Daemon(graph: Self.graph(rootBack: "none", containerBack: "order"))
        let c = try d.client()
        let settings = try c.call("navigate", ["to": "Settings"])["node"]!
        try c.call("navigate", ["to": "Privacy", "by": "select"])
        try c.call("dismiss")
        let shell = try c.call("tree")["root"]?["children"]?.arrayValue?[0]["children"]?.arrayValue?[1]
        #expect(shell?["id"] == settings && shell?["selected"] == 0, "\(String(describing: shell))")
        let r = try c.call("dismiss")
        #expect(r["removed"]?.arrayValue?.first == settings, "\(r)")
        // Coverage counts the container's back: once (the second dismiss removed it instead).
        let report = try c.call("coverage.report")
        let backs = report["tabBacks"]?.arrayValue ?? []
        #expect(backs.count == 1 && backs.first?["container"] == "app.Settings" && backs.first?["back"] == "order" && backs.first?["used"] == 1, "\(backs)")
        #expect(report["totals"]?["tabBacks"] == ["covered": 1, "total": 1])
    }

    /// The root's `back:` is an item of its own, declared where `root:` is.
    @Test func theRootsBackIsCountedWhereItIsDeclared() throws {
        let d = try Daemon(graph: Self.graph(rootBack: "firstTab", containerBack: "order"))
        let c = try d.client()
        var root = try c.call("coverage.report")["tabBacks"]?.arrayValue?.first { $0["container"] == "root" }
        #expect(root?["used"] == 0 && root?["at"]?.stringValue?.hasSuffix(":1") == true, "\(String(describing: root))")
        try c.call("navigate", ["to": "C", "by": "select"])
        try c.call("dismiss")
        root = try c.call("coverage.report")["tabBacks"]?.arrayValue?.first { $0["container"] == "root" }
        #expect(root?["used"] == 1 && root?["back"] == "firstTab", "\(String(describing: root))")
    }

    @Test func aBackThatIsNoneOfTheChoicesIsAGraphError() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try "root: {tabs: [A], back: previous}\ncoordinators:\n  A: {back: order}\n".write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["check", dir.path])
        let out = r.stdout + r.stderr
        #expect(out.contains("app.yaml:1:25: error: `back` must be one of none, firstTab, order, history, not `previous`"), "\(out)")
        #expect(out.contains("app.yaml:3:13: error: `back` says what dismiss does at the first screen of a tab, and `app.A` declares no `tabs`"), "\(out)")
    }
}
