import Foundation
import JSON
import NavTesting
import Testing

/// Sessions, trees, versions, facts and ids survive restarts and `kill -9`.
@Suite struct DurableStateTests {
    func build(_ c: TestClient) throws {
        try c.call("context.set", ["facts": ["loggedIn": true, "cart.items": 2]])
        let p = try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"]])["node"]!
        try c.call("navigate", ["to": "shop.Reviews", "from": p])
        try c.call("session.open", ["name": "kiosk"])
        try c.call("navigate", ["session": "kiosk", "to": "account.Account", "by": "select"])
        try c.call("context.set", ["session": "kiosk", "facts": ["kiosk": "hall-3"]])
    }

    func snapshot(_ c: TestClient) throws -> [JSONValue] {
        var out: [JSONValue] = []
        for name in try c.call("session.list")["sessions"]?.arrayValue ?? [] {
            out.append(try c.call("tree", ["session": name]))
            out.append(try c.call("context.get", ["session": name]))
        }
        return out
    }

    @Test(arguments: [SIGTERM, SIGKILL])
    func stateSurvivesARestart(signal: Int32) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let sock = dir.file("d.sock")
        var before: [JSONValue] = []
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            try build(c)
            before = try snapshot(c)
            d.stop(signal: signal)
        }
        let d2 = try Daemon(arguments: ["--state", state], socketPath: sock)
        let c2 = try d2.client()
        #expect(try snapshot(c2) == before)
        // Ids are never reused after a restart.
        let r = try c2.call("navigate", ["to": "shop.Home", "by": "root"])
        let ids = before.map { JSONWriter.string($0) }.joined()
        #expect(!ids.contains("\"\(r["node"]!.stringValue!)\""))
        #expect(r["version"] == 3)
    }

    /// A flow `Wizard` pushed from `Home`, declaring `then: Done`, that may also go on to `Other`
    /// (which needs an `id`).
    static let flowWithThenGraph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Wizard]}
          Wizard: {flow: {steps: [Step]}, opens: [Done, Other], then: Done}
          Step: {}
          Done: {}
          Other: {setup: {type: object, properties: {id: {type: string}}, required: [id]}}
        """

    /// The `then` a `navigate` gave a flow is kept with the flow's node: `tree` and both forms of
    /// `stackChanged` show it, and after a restart (the snapshot after a stop, the log after
    /// `kill -9`) completing the flow goes where it said, not to the flow's declared `then`. It
    /// lived in memory only: the restarted navd went to `Done`.
    @Test(arguments: [SIGTERM, SIGKILL])
    func aThenGivenByNavigateSurvivesARestart(signal: Int32) throws {
        let graph = Self.flowWithThenGraph
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let sock = dir.file("d.sock")
        let then: JSONValue = ["to": "app.Other", "by": "replace", "with": ["id": "$result.id"]]
        var flow: JSONValue = .null
        do {
            let d = try Daemon(graph: graph, arguments: ["--state", state], socketPath: sock)
            let c = try d.client(), compact = try d.client()
            try c.call("subscribe")
            try compact.call("subscribe", ["notifications": "compact"])
            flow = try c.call("navigate", ["to": "Wizard", "then": then])["node"] ?? .null
            let full = try c.notification("stackChanged")["params"]?["changes"]?.arrayValue?.first?["node"]
            #expect(full?["id"] == flow && full?["then"] == then, "\(String(describing: full))")
            let short = try compact.notification("stackChanged")["params"]?.arrayValue?[2].arrayValue?.first?.arrayValue?[2]
            #expect(short?["th"] == then, "\(String(describing: short))")
            d.stop(signal: signal)
        }
        let d2 = try Daemon(graph: graph, arguments: ["--state", state], socketPath: sock)
        let c2 = try d2.client()
        let shown = try c2.call("tree")["root"]?["children"]?.arrayValue?.last
        #expect(shown?["id"] == flow && shown?["then"] == then, "\(String(describing: shown))")
        let r = try c2.call("flowComplete", ["flow": flow, "result": ["id": "o7"]])
        #expect(r["then"]?["version"] != nil, "\(r)")
        let top = try c2.call("tree")["root"]?["children"]?.arrayValue?.last
        #expect(top?["coordinator"] == "app.Other" && top?["params"] == ["id": "o7"], "\(String(describing: top))")
    }

    /// A recovery flow goes with the navigation it was presented for, and that navigation ends with
    /// the navd that ran it (a stop or `kill -9`): the restarted navd closes the flow (ended
    /// `cancelled`, removed in a commit of its own). It used to stay on top, its steps opening
    /// nothing of the app and its completion setting no facts; the same navigation asked again
    /// recovers afresh, and completing that flow sets its facts.
    @Test(arguments: [SIGTERM, SIGKILL])
    func aRecoveryFlowLeftByTheLastRunIsClosed(signal: Int32) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let sock = dir.file("d.sock")
        var flow = "", version = 0
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            try c.call("subscribe")
            try c.call("navigate", ["route": "account"])
            _ = try c.notification("stackChanged")
            let app = try d.client()
            try app.send("navigate", ["route": "orders", "detach": true])
            let presented = try c.notification("stackChanged")["params"]?["changes"]?.arrayValue?.first?["node"]?["children"]?.arrayValue?.first
            #expect(presented?["recovery"] == true, "the flow is marked: \(String(describing: presented))")
            flow = try #require(presented?["id"]?.stringValue)
            _ = try c.notification("navigationPending")
            version = try #require(c.call("tree")["version"]?.intValue)
            d.stop(signal: signal)
        }
        let d2 = try Daemon(arguments: ["--state", state], socketPath: sock)
        let c2 = try d2.client()
        let t = try c2.call("subscribe")
        #expect(t["version"] == .int(version + 1), "one commit closed it: \(t)")
        #expect(!JSONWriter.string(t).contains("\"\(flow)\""), "\(t)")
        #expect(d2.stderr.contains("recovery flows closed"), "\(d2.stderr)")
        let id = try c2.send("navigate", ["route": "orders"])
        let again = try c2.notification("stackChanged")["params"]?["changes"]?.arrayValue?.first?["node"]?["children"]?.arrayValue?.first?["id"]
        try c2.call("flowComplete", ["flow": again ?? .null, "result": ["user": "ann"]])
        #expect(try c2.reply(to: id)["result"]?["version"] != nil)
        #expect(try c2.call("context.get")["facts"]?["loggedIn"] == true)
    }

    /// A client whose reply was lost to a crash retries with its `key` and gets the first reply:
    /// keys and their replies are saved with the commit (a refused navigation leaves no key: its
    /// retry is refused again, as it was).
    @Test func aKeyedRetryAfterKillNineGetsTheFirstReply() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock")
        let pushed: JSONValue, refused: JSONValue, other: JSONValue
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            try c.call("session.open", ["name": "other"])
            pushed = try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"], "key": "tap-1"])
            refused = try c.callError("navigate", ["to": "shop.Nowhere", "key": "tap-2"])
            other = try c.call("navigate", ["session": "other", "to": "shop.Product", "with": ["id": "p2"], "key": "tap-1"])
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(arguments: ["--state", state], socketPath: sock)
        let c = try d.client()
        #expect(try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"], "key": "tap-1"]) == pushed)
        #expect(try c.callError("navigate", ["to": "shop.Nowhere", "key": "tap-2"]) == refused)
        #expect(try c.call("navigate", ["session": "other", "to": "shop.Product", "with": ["id": "p2"], "key": "tap-1"]) == other)
        #expect(try c.call("tree")["version"] == 1, "the retry navigated again")
        // New navigations are numbered after the ones the saved replies name.
        let next = try c.call("navigate", ["to": "shop.Product", "with": ["id": "p3"]])
        #expect(next["navigation"] != pushed["navigation"] && next["navigation"] != other["navigation"], "\(next)")
        // A closed session's keys go with it.
        try c.call("session.close", ["name": "other"])
        try c.call("session.open", ["name": "other"])
        #expect(try c.call("navigate", ["session": "other", "to": "shop.Product", "with": ["id": "p2"], "key": "tap-1"])["version"] == 1)
    }

    @Test func acknowledgedNavigationsSurviveKillNineUnderLoad() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let sock = dir.file("d.sock")
        var acknowledged: [String: (version: Int, node: String)] = [:]
        for round in 0..<3 {
            let d = try Daemon(arguments: ["--state", state], socketPath: sock)
            let clients = try (0..<4).map { _ in try d.client() }
            for (i, c) in clients.enumerated() { try c.call("session.open", ["name": .string("w\(i)")]) }
            // Each client pushes in its own session as fast as it can; navd is killed meanwhile.
            let killer = Thread { usleep(UInt32(100_000 + round * 50_000)); kill(d.pid, SIGKILL) }
            killer.start()
            var running = true
            while running {
                for (i, c) in clients.enumerated() {
                    guard let r = try? c.call("navigate", ["session": .string("w\(i)"), "to": "shop.Home", "by": "root"]),
                          let v = r["version"]?.intValue, let n = r["node"]?.stringValue else { running = false; break }
                    acknowledged["w\(i)"] = (v, n)
                }
            }
            _ = d.waitForExit()
            let check = try Daemon(arguments: ["--state", state], socketPath: sock)
            let c = try check.client()
            for (name, ack) in acknowledged {
                let tree = try c.call("tree", ["session": .string(name)])
                let version = try #require(tree["version"]?.intValue)
                #expect(version >= ack.version, "\(name): acknowledged version \(ack.version) lost (restored \(version))")
                if version == ack.version {
                    #expect(tree["visible"]?.arrayValue?.last == .string(ack.node))
                }
            }
            check.stop()
        }
        #expect(acknowledged.count == 4)
    }

    @Test func refusesForeignCorruptAndFutureFiles() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // Corrupt: not SQLite at all.
        try String(repeating: "not a database ", count: 100).write(toFile: dir.file("corrupt.sqlite"), atomically: true, encoding: .utf8)
        var r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("a.sock"), "--state", dir.file("corrupt.sqlite")])
        #expect(r.status == 1 && r.stderr.contains("corrupt.sqlite"), "\(r.stderr)")
        // Foreign: an SQLite file another program made.
        _ = try runCommand("/usr/bin/sqlite3", [dir.file("foreign.sqlite"), "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('x');"])
        r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("b.sock"), "--state", dir.file("foreign.sqlite")])
        #expect(r.status == 1 && r.stderr.contains("navd did not create"), "\(r.stderr)")
        // Future: written by a newer navd.
        _ = try runCommand("/usr/bin/sqlite3", [dir.file("future.sqlite"), "PRAGMA application_id=1851881060; PRAGMA user_version=99; CREATE TABLE x (a);"])
        r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("c.sock"), "--state", dir.file("future.sqlite")])
        #expect(r.status == 1 && r.stderr.contains("newer navd"), "\(r.stderr)")
        // A file navd refuses is left as it was: its mode too (a --state that names another file,
        // such as /etc/passwd, must not turn it private before it is found not to be navd's).
        for name in ["corrupt.sqlite", "foreign.sqlite", "future.sqlite"] {
            let path = dir.file(name)
            chmod(path, 0o644)
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("d.sock"), "--state", path])
            #expect(r.status == 1, "\(name): \(r.stderr)")
            var st = stat()
            #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o644, "\(name): mode \(String(st.st_mode & 0o777, radix: 8))")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "\(name) changed")
        }
        // One navd made is made private (0600) when it is opened, before anything is written to it.
        let own = dir.file("own.sqlite")
        _ = try Daemon(arguments: ["--state", own], socketPath: dir.file("e.sock")).stop()
        var st = stat()
        #expect(stat(own, &st) == 0 && st.st_mode & 0o777 == 0o600, "mode \(String(st.st_mode & 0o777, radix: 8))")
        chmod(own, 0o640)
        _ = try Daemon(arguments: ["--state", own], socketPath: dir.file("e.sock")).stop()
        #expect(stat(own, &st) == 0 && st.st_mode & 0o777 == 0o600, "mode \(String(st.st_mode & 0o777, radix: 8))")
    }

    /// Saves a session under `graph` (after `act`), then starts navd over that state on `graph`
    /// changed by `edit`: what the refused start answered.
    func restartOnChangedGraph(_ graph: String, act: (TestClient) throws -> Void, edit: (String) -> String, signal: Int32 = SIGTERM) throws
        -> (state: String, status: Int32, stderr: String) {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("graph"), withIntermediateDirectories: true)
        try graph.write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let state = dir.file("state.sqlite")
        do {
            let d = try Daemon(arguments: ["--graph", dir.file("graph"), "--state", state])
            try act(try d.client())
            _ = d.stop(signal: signal)
        }
        try edit(graph).write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("b.sock"), "--graph", dir.file("graph"), "--state", state])
        return (state, r.status, r.stderr)
    }

    /// A `then` is kept with its flow and saved with the tree, so it is bounded as `hints` are: at
    /// most 4 KiB of JSON in the form navd writes (its target's name qualified), else
    /// `limitExceeded` and nothing changes. One of exactly 4,096 bytes so written is taken.
    @Test func aThenIsBoundedInTheFormItIsSavedIn() throws {
        let d = try Daemon(graph: Self.flowWithThenGraph)
        let c = try d.client()
        // {"to":"app.Other","with":{"id":"…"}}: 35 bytes around the id.
        func then(_ idBytes: Int, to: String) -> JSONValue { ["to": .string(to), "with": ["id": .string(String(repeating: "x", count: idBytes))]] }
        let big = try c.callError("navigate", ["to": "Wizard", "then": then(4096 - 35 + 1, to: "Other")])
        #expect(big["data"]?["kind"] == "limitExceeded" && big["data"]?["limit"] == "then" && big["data"]?["max"] == 4096, "\(big)")
        #expect(try c.call("tree")["version"] == 0)
        let flow = try c.call("navigate", ["to": "Wizard", "then": then(4096 - 35, to: "Other")])["node"]
        let shown = try c.call("tree")["root"]?["children"]?.arrayValue?.last
        #expect(shown?["id"] == flow && shown?["then"].map { JSONWriter.string($0).utf8.count } == 4096, "\(String(describing: shown))")
    }

    /// A flow whose navigate's `then` names a coordinator the graph no longer declares is refused at
    /// a restart as a node showing one would be (stopped: the snapshot; killed: the log).
    @Test(arguments: [SIGTERM, SIGKILL])
    func refusesStateSavedWithAFlowWhoseThenTheGraphLacks(signal: Int32) throws {
        let r = try restartOnChangedGraph(Self.flowWithThenGraph, act: { c in
            let node = try c.call("navigate", ["to": "Wizard", "then": "Other"])["node"]
            #expect(node != nil)
        }, edit: { $0.replacingOccurrences(of: "opens: [Done, Other]", with: "opens: [Done]").replacingOccurrences(of: "  Other: {setup", with: "  Gone: {setup") },
           signal: signal)
        #expect(r.status == 1 && r.stderr.contains("goes on to `app.Other`"), "\(r.stderr)")
    }

    @Test func refusesStateSavedWithAGraphThatLacksItsCoordinators() throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Detail]}
              Detail: {}
            """
        // The same state with a graph that no longer declares Detail: refused, saying what to do.
        let r = try restartOnChangedGraph(graph, act: { c in
            let node = try c.call("navigate", ["to": "app.Detail"])["node"]
            #expect(node != nil)
        },
                                          edit: { $0.replacingOccurrences(of: "{opens: [Detail]}\n  Detail: {}", with: "{}") })
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("`app.Detail`") && r.stderr.contains("move \(r.state) aside"), "\(r.stderr)")
    }

    /// A saved node is made for its coordinator's kind, and a flow holds its steps only: a graph that
    /// made a screen a flow, or took a step out of a flow, cannot take the saved tree.
    @Test(arguments: [("A: {}", "A: {flow: {start: S1, steps: [S1]}}", "saved node n3 is a screen of `app.A`, which the graph declares as a flow"),
                      ("steps: [S1, S2]", "steps: [S1]", "(`app.S2`), which is not one of its steps in the graph")])
    func refusesStateSavedWithACoordinatorOfAnotherKind(_ was: String, _ now: String, _ message: String) throws {
        // Stopped (the tree is in the snapshot) or killed (its commits are replayed from the log).
        for signal in [SIGTERM, SIGKILL] { try refusesStateSavedWithACoordinatorOfAnotherKind(was, now, message, signal: signal) }
    }

    func refusesStateSavedWithACoordinatorOfAnotherKind(_ was: String, _ now: String, _ message: String, signal: Int32) throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [A, F]}
              A: {}
              F: {flow: {start: S1, steps: [S1, S2]}}
              S1: {opens: [S2]}
              S2: {}
            """
        let r = try restartOnChangedGraph(graph, act: { c in
            try c.call("navigate", ["to": "app.A"])
            try c.call("navigate", ["to": "app.F", "from": "n1"])
            try c.call("navigate", ["to": "app.S2"])
        },
                                          edit: { $0.replacingOccurrences(of: was, with: now) }, signal: signal)
        #expect(r.status == 1 && r.stderr.contains(message), "\(r.stderr)")
        #expect(r.stderr.contains("--repair") && (signal == SIGTERM || r.stderr.contains("aside to start from the snapshot")), "\(r.stderr)")
    }

    /// After `kill -9` and a graph change, a session whose logged records the graph no longer takes
    /// (a commit of a coordinator it lacks, or a replayed tree that breaks a rule) is set aside by
    /// `--repair`: the others are served as acknowledged, the set_aside table says why (holding what
    /// the snapshot had of it), and the log is kept whole beside the state. Then navd starts without
    /// --repair.
    @Test(arguments: [(["  Detail: {}\n": "", "[A, Detail, Other, F]": "[A, Other, F]"], "cannot be replayed", "`app.Detail`"),
                      (["A: {}": "A: {flow: {start: Detail, steps: [Detail]}}"], "cannot be replayed", "which the graph declares as a flow"),
                      (["steps: [S1, S2]": "steps: [S1]"], "breaks a rule", "which is not one of its steps")])
    func repairSetsAsideASessionWhoseLogTheGraphNoLongerTakes(_ edits: [String: String], _ how: String, _ why: String) throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [A, Detail, Other, F]}
              A: {}
              Detail: {}
              Other: {}
              F: {flow: {start: S1, steps: [S1, S2]}}
              S1: {opens: [S2]}
              S2: {}
            """
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("graph"), withIntermediateDirectories: true)
        try graph.write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let state = dir.file("state.sqlite")
        var kept: JSONValue = .null
        do {
            let d = try Daemon(arguments: ["--graph", dir.file("graph"), "--state", state])
            let c = try d.client()
            try c.call("session.open", ["name": "early"])
            _ = d.stop()  // "early" is in the snapshot; "late" is opened in the log only
        }
        do {
            let d = try Daemon(arguments: ["--graph", dir.file("graph"), "--state", state])
            let c = try d.client()
            try c.call("navigate", ["to": "app.Other"])
            try c.call("context.set", ["facts": ["kept": true]])
            kept = try c.call("tree")
            try c.call("session.open", ["name": "late"])
            for name in ["early", "late"] {
                // (The keys of a session set aside go with it.)
                try c.call("navigate", ["session": .string(name), "to": "app.Other", "key": "k1"])
                for to in ["app.Detail", "app.A", "app.F", "app.S2"] {
                    try c.call("navigate", ["session": .string(name), "to": .string(to), "from": to == "app.S2" ? nil : "n1"])
                }
            }
            _ = d.stop(signal: SIGKILL)
        }
        let changed = edits.reduce(graph) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
        try changed.write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let args = ["--graph", dir.file("graph"), "--state", state]
        let refused = try runCommand(Repo.binary("navd"), ["--socket", dir.file("r.sock")] + args)
        #expect(refused.status == 1 && refused.stderr.contains(why) && refused.stderr.contains("--repair"), "\(refused.stderr)")
        do {
            let d = try Daemon(arguments: args + ["--repair"], socketPath: dir.file("p.sock"))
            #expect(d.stderr.contains("session set aside") && d.stderr.contains("navd.session=early") && d.stderr.contains("navd.session=late"), "\(d.stderr)")
            let c = try d.client()
            #expect(try c.call("session.list")["sessions"] == ["main"])
            #expect(try c.call("tree") == kept)
            #expect(try c.call("context.get")["facts"] == ["kept": true])
            _ = d.stop()
        }
        let rows = try runCommand("/usr/bin/sqlite3", [state, "SELECT name, tree IS NOT NULL, reason FROM set_aside ORDER BY name"])
        let lines = rows.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[0].hasPrefix("early|1|") && lines[1].hasPrefix("late|0|"), "\(rows.stdout)")
        #expect(lines.allSatisfy { $0.contains(how) && $0.contains(why) && $0.contains("\(state).log.set-aside-") }, "\(rows.stdout)")
        let keys = try runCommand("/usr/bin/sqlite3", [state, "SELECT count(*) FROM keys"])
        #expect(keys.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(keys.stdout)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("state.sqlite.log.set-aside-") }
        #expect(aside.count == 1, "\(aside)")
        // What was set aside is not read again: navd starts without --repair.
        let d = try Daemon(arguments: args, socketPath: dir.file("q.sock"))
        #expect(try d.client().call("tree") == kept)
    }

    /// A tab is known by its place: a saved session whose root tabs the graph changed is refused as
    /// one showing a coordinator the graph lacks, naming the tabs it declares now; a graph that moved
    /// them (as many as before) is refused too, naming the tabs as saved and as declared now, whether
    /// the session is in the snapshot (a clean stop) or in the log (`kill -9`).
    @Test(arguments: [("[Search, Home]", "hold 3 tabs; the graph's root declares 2 (app.Search, app.Home)", SIGTERM),
                      ("[Search, Home, Settings]", "hold the tabs app.Home, app.Search, app.Settings, as the graph it was saved under declared them; the graph's root declares app.Search, app.Home, app.Settings now", SIGTERM),
                      ("[Search, Home, Settings]", "hold the tabs app.Home, app.Search, app.Settings, as the graph it was saved under declared them; the graph's root declares app.Search, app.Home, app.Settings now", SIGKILL)])
    func refusesStateSavedWithOtherRootTabs(_ tabs: String, _ message: String, _ signal: Int32) throws {
        let graph = """
            root: {tabs: [Home, Search, Settings]}
            coordinators: {Home: {}, Search: {}, Settings: {}}
            """
        let r = try restartOnChangedGraph(graph, act: { c in
            let version = try c.call("navigate", ["to": "app.Search", "by": "select"])["version"]
            #expect(version == 1)
        },
                                          edit: { $0.replacingOccurrences(of: "[Home, Search, Settings]", with: tabs) }, signal: signal)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains(message) && r.stderr.contains("--repair"), "\(r.stderr)")
    }

    /// The same for a tab container a session navigated to, whether the session is in the snapshot
    /// (a clean stop) or in the log alone (`kill -9`): `--repair` sets that session aside and serves
    /// the others; a graph that moved the tabs of a container no session holds is taken as it is.
    @Test(arguments: [SIGTERM, SIGKILL])
    func aContainersMovedTabsAreRefusedAndRepairSetsTheSessionAside(signal: Int32) throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [T, U]}
              T: {tabs: [A, B]}
              U: {tabs: [A, B]}
              A: {}
              B: {}
            """
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("graph"), withIntermediateDirectories: true)
        try graph.write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let state = dir.file("state.sqlite")
        let args = ["--graph", dir.file("graph"), "--state", state]
        var kept: JSONValue = .null
        do {
            let d = try Daemon(arguments: args)
            let c = try d.client()
            try c.call("session.open", ["name": "tabbed"])
            try c.call("navigate", ["session": "tabbed", "to": "app.T"])
            try c.call("navigate", ["session": "tabbed", "to": "app.B", "by": "select"])
            try c.call("navigate", ["to": "app.U"])
            kept = try c.call("tree")
            _ = d.stop(signal: signal)
        }
        // T's tabs moved ("tabbed" holds T; "main" holds U, whose tabs stay).
        try graph.replacingOccurrences(of: "T: {tabs: [A, B]}", with: "T: {tabs: [B, A]}")
            .write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let refused = try runCommand(Repo.binary("navd"), ["--socket", dir.file("r.sock")] + args)
        #expect(refused.status == 1 && refused.stderr.contains("session \"tabbed\"") && refused.stderr.contains("--repair")
                && refused.stderr.contains("hold the tabs app.A, app.B, as the graph it was saved under declared them; its container `app.T` declares app.B, app.A now"),
                "\(refused.stderr)")
        do {
            let d = try Daemon(arguments: args + ["--repair"], socketPath: dir.file("p.sock"))
            let c = try d.client()
            #expect(try c.call("session.list")["sessions"] == ["main"])
            #expect(try c.call("tree") == kept)
            _ = d.stop()
        }
        let rows = try runCommand("/usr/bin/sqlite3", [state, "SELECT name FROM set_aside"])
        #expect(rows.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "tabbed", "\(rows.stdout)")
        // T's tabs moved back: no session holds T now, and navd starts.
        try graph.write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: args, socketPath: dir.file("q.sock"))
        #expect(try d.client().call("tree") == kept)
    }

    /// Each graph a row was written under keeps its tabs in the state file; graph reloads add one
    /// each, and past a few those no row names are removed, so the table stays small however
    /// often the graph is reloaded, and a restart still checks the rows.
    @Test func theTabsOfGraphsNoRowNamesAreNotKeptForever() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("graph"), withIntermediateDirectories: true)
        func graph(_ i: Int) -> String { "root: {tabs: [Home, Search]}\ncoordinators: {Home: {}, Search: {}, X\(i): {}}\n" }
        try graph(0).write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let state = dir.file("state.sqlite")
        // A small log and sessions enough that each reload's records start a compaction, which
        // writes the rows under its graph.
        let args = ["--graph", dir.file("graph"), "--state", state, "--log-compact-bytes", "4096", "--log-compact-ratio", "0"]
        do {
            let d = try Daemon(arguments: args)
            let c = try d.client()
            for i in 0..<20 { try c.call("session.open", ["name": .string("s\(i)")]) }
            for i in 1...40 {
                try graph(i).write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
                #expect(try c.call("graph.reload")["ok"] == true)
                try c.call("navigate", ["to": "app.Search", "by": "select"])
            }
            _ = d.stop()
        }
        let rows = try runCommand("/usr/bin/sqlite3", [state, "SELECT count(*) FROM graph_tabs"])
        let count = Int(rows.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        #expect((1...17).contains(count), "\(rows.stdout)")
        // Still checked: the saved tabs moved by the graph are refused.
        try graph(40).replacingOccurrences(of: "[Home, Search]", with: "[Search, Home]").write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("r.sock")] + args)
        #expect(r.status == 1 && r.stderr.contains("hold the tabs app.Home, app.Search"), "\(r.stderr)")
    }
}
