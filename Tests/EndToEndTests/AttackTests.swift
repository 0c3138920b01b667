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

/// Depth and size are bounded in one place each (SessionLimits): refused before anything is
/// committed, and whatever navd wrote it reads back.
@Suite(.serialized) struct TreeLimitTests {
    /// Presents `shop.Product` over the top screen until navd refuses; answers how many it took.
    private func presentUntilRefused(_ c: TestClient) throws -> (presented: Int, refusal: JSONValue) {
        var n = 0
        while n < 10_000 {
            let id = try c.send("navigate", ["to": "shop.Product", "by": "present", "with": ["id": .string("p\(n)")]])
            let r = try c.reply(to: id)
            if let e = r["error"] { return (n, e) }
            n += 1
        }
        throw TestFailure("navd never refused a present")
    }

    /// The deepest tree allowed: 30 nested modals over the first tab (64 levels), the next one refused
    /// with `limitExceeded` naming --max-tree-depth; navctl prints the tree; after kill -9 navd
    /// restarts on its state file and serves the same tree.
    @Test func theDeepestTreeIsRefusedBeyondTheLimitAndSurvivesKillNine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock")
        let tree: JSONValue
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            let (presented, e) = try presentUntilRefused(c)
            #expect(presented == 30, "tabs, a tab's stack and Home are 3 levels; each modal adds 2: 30 modals make 63")
            #expect(e["code"] == -32012 && e["data"]?["kind"] == "limitExceeded" && e["data"]?["limit"] == "--max-tree-depth" && e["data"]?["max"] == 64, "\(e)")
            let said = e["message"]?.stringValue ?? ""
            #expect(said.contains("would be 65"), "\(e)")
            tree = try c.call("tree")
            #expect(tree["version"] == 30 && tree["visible"]?.arrayValue?.count == 63, "\(tree)")
            let printed = try runCommand(Repo.binary("navctl"), ["--socket", sock, "tree"])
            #expect(printed.status == 0 && printed.stdout.contains("p29"), "\(printed.stderr)")
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(arguments: ["--state", state], socketPath: sock)
        #expect(try d.client().call("tree") == tree)
    }

    /// Nodes and setup models of one session are bounded too; dismissing makes room again.
    @Test func nodesAndParamsBytesAreBoundedPerSession() throws {
        let d = try Daemon(arguments: ["--max-tree-nodes", "20", "--max-params-bytes", "4096"])
        let c = try d.client()
        var pushed = 0
        var refusal: JSONValue = .null
        for i in 0..<100 {
            let id = try c.send("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)")]])
            let r = try c.reply(to: id)
            if let e = r["error"] {
                refusal = e
                break
            }
            pushed += 1
        }
        // The root has 7 nodes (tabs, three stacks, three screens): 13 more fit.
        #expect(pushed == 13 && refusal["data"]?["limit"] == "--max-tree-nodes" && refusal["data"]?["max"] == 20, "\(pushed): \(refusal)")
        try c.call("reset")
        let big = String(repeating: "x", count: 1500)
        try c.call("navigate", ["to": "shop.Product", "with": ["id": "a", "ref": .string(big)]])
        try c.call("navigate", ["to": "shop.Product", "with": ["id": "b", "ref": .string(big)]])
        let e = try c.callError("navigate", ["to": "shop.Product", "with": ["id": "c", "ref": .string(big)]])
        #expect(e["data"]?["limit"] == "--max-params-bytes" && e["data"]?["max"] == 4096, "\(e)")
        let u = try c.callError("update", ["node": try c.call("tree")["visible"]!.arrayValue!.last!, "with": ["ref": .string(big + big)]])
        #expect(u["data"]?["limit"] == "--max-params-bytes", "an update counts too: \(u)")
        try c.call("dismiss")
        let made = try c.call("navigate", ["to": "shop.Product", "with": ["id": "c", "ref": .string(big)]])
        #expect(made["version"] == 18 && made["visible"]?.arrayValue?.last == made["node"], "dismissing made room: \(made)")
    }

    /// The facts of one session are bounded in total, not only one by one.
    @Test func factsBytesAreBoundedPerSession() throws {
        let d = try Daemon(arguments: ["--max-facts-bytes", "10000"])
        let c = try d.client()
        let value = String(repeating: "v", count: 3000)
        for i in 0..<3 { try c.call("context.set", ["facts": .object(JSONObject([("f\(i)", .string(value))]))]) }
        let e = try c.callError("context.set", ["facts": ["f3": .string(value)]])
        #expect(e["data"]?["limit"] == "--max-facts-bytes" && e["data"]?["max"] == 10000, "\(e)")
        #expect(try c.call("context.get")["facts"]?.objectValue?.count == 3, "a refused context.set sets nothing")
        try c.call("context.set", ["facts": ["f0": .null, "f3": .string(value)]])
        #expect(try c.call("context.get")["facts"]?.objectValue?.count == 3)
    }

    /// navd does not start when the graph's root alone would break a limit.
    @Test func aRootThatBreaksALimitStopsNavdAtStart() throws {
        let d = try Daemon(arguments: ["--max-tree-nodes", "5"], waitUntilServing: false)
        #expect(d.waitForExit(timeout: 10) == 1)
        #expect(d.stderr.contains("the graph's root has 7 nodes; --max-tree-nodes is 5"), "\(d.stderr)")
    }
}

/// A state file is read back as a request is checked: a session that breaks a schema, the facts'
/// shape or a limit is refused with the session and the rule named, or set aside with --repair.
@Suite(.serialized) struct RestoreValidationTests {
    /// A state file with sessions a, b, c, d (a product screen in each, presented in `d`: 5 levels)
    /// and facts in `a`, edited by
    /// `sql`; answers the file and navd's stderr when it starts on it with `arguments`.
    private func restart(after sql: String, _ arguments: [String] = [], expectStart: Bool = false,
                         _ check: (Daemon?, String, String) throws -> Void) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock")
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            for name in ["a", "b", "c", "d"] {
                try c.call("session.open", ["name": .string(name)])
                try c.call("navigate", ["session": .string(name), "to": "shop.Product", "with": ["id": "p1"], "by": name == "d" ? "present" : "push"])
            }
            try c.call("context.set", ["session": "a", "facts": ["loggedIn": true]])
            d.stop()
        }
        if !sql.isEmpty {
            let r = try runCommand("/usr/bin/sqlite3", [state, sql])
            guard r.status == 0 else { throw TestFailure("sqlite3: \(r.stderr)") }
        }
        let d = try Daemon(arguments: ["--state", state] + arguments, socketPath: sock, waitUntilServing: expectStart)
        if expectStart {
            try check(d, d.stderr, state)
        } else {
            #expect(d.waitForExit(timeout: 10) == 1, "navd must refuse the file: \(d.stderr)")
            try check(nil, d.stderr, state)
        }
    }

    @Test func paramsThatBreakTheirSchemaAreRefused() throws {
        try restart(after: "UPDATE sessions SET tree = replace(tree, '\"id\":\"p1\"', '\"id\":7') WHERE name = 'b'") { _, err, _ in
            #expect(err.contains("session \"b\"") && err.contains("`/id` must be string") && err.contains("--repair"), "\(err)")
        }
    }

    @Test func factsThatAreNotAnObjectAreRefused() throws {
        try restart(after: "UPDATE sessions SET facts = '[1,2]' WHERE name = 'a'") { _, err, _ in
            #expect(err.contains("session \"a\"") && err.contains("not an object"), "\(err)")
        }
    }

    @Test func moreSessionsThanTheLimitAreRefused() throws {
        try restart(after: "", ["--max-sessions", "3"]) { _, err, _ in
            #expect(err.contains("--max-sessions (3)"), "\(err)")
        }
    }

    @Test func aTreeDeeperThanTheLimitIsRefused() throws {
        try restart(after: "", ["--max-tree-depth", "4"]) { _, err, _ in
            #expect(err.contains("session \"d\"") && err.contains("deeper than 4 nodes (the --max-tree-depth limit)"), "\(err)")
        }
    }

    /// --repair: the offending session is set aside (kept in the file, reported), the others served.
    @Test func repairSetsTheOffendingSessionAsideAndServesTheOthers() throws {
        try restart(after: "UPDATE sessions SET tree = replace(tree, '\"id\":\"p1\"', '\"id\":7') WHERE name = 'b'", ["--repair"],
                    expectStart: true) { d, _, state in
            let d = try #require(d)
            #expect(d.stderr.contains("session set aside") && d.stderr.contains("navd.session=b"), "\(d.stderr)")
            let c = try d.client()
            #expect(try c.call("session.list")["sessions"] == ["a", "c", "d", "main"])
            #expect(try c.call("context.get", ["session": "a"])["facts"] == ["loggedIn": true])
            let kept = try runCommand("/usr/bin/sqlite3", [state, "SELECT name, reason FROM set_aside"])
            #expect(kept.stdout.hasPrefix("b|") && kept.stdout.contains("`/id` must be string"), "\(kept.stdout)")
        }
    }
}

/// No answer can exceed what a client may hold unread: one larger than --max-output is replaced by
/// a `limitExceeded` error, and the client stays connected.
@Suite struct ReplySizeTests {
    @Test func anAnswerLargerThanMaxOutputIsAnErrorNotADisconnection() throws {
        let d = try Daemon(arguments: ["--max-output", "4096"])
        let c = try d.client()
        try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1", "ref": .string(String(repeating: "r", count: 5000))]])
        let e = try c.callError("tree")
        #expect(e["code"] == -32012 && e["data"]?["limit"] == "--max-output" && e["data"]?["max"] == 4096, "\(e)")
        #expect(e["message"]?.stringValue?.contains("the session's tree is that large, or ask whoever runs navd to raise --max-output") == true, "\(e)")
        #expect(try c.call("ping") == "pong")
        // The message says how to ask each method for less.
        // context.set answers every fact: its answer is left out, what it set is not.
        let set = try c.callError("context.set", ["facts": ["big": .string(String(repeating: "f", count: 5000))]])
        #expect(set["message"]?.stringValue?.contains("(the request was carried out: only its answer is left out); ask for the facts needed") == true, "\(set)")
        let facts = try c.callError("context.get")
        #expect(facts["message"]?.stringValue?.contains("ask for the facts needed (context.get {facts: [names]})") == true, "\(facts)")
        let graph = try c.callError("graph.describe")
        #expect(graph["message"]?.stringValue?.contains("this answer is as large as the graph itself") == true, "\(graph)")
        try c.call("dismiss")
        #expect(try c.call("tree")["version"] == 2)
    }
}
