import Foundation
import JSON
import NavClient
import NavTesting
import Testing
import UV

#if canImport(Glibc)
import Glibc
#endif

/// Cluster mode: several navd nodes sharing sessions through a real PostgreSQL (started here in a
/// temporary directory). Skipped, with the reason printed, where PostgreSQL is not installed.
@Suite(.serialized, .enabled(if: postgresCanRun)) struct ClusterTests {
    /// A navd node of the cluster on `pg`, with a short lease so that takeovers are quick.
    static func node(_ name: String, _ pg: PostgresServer, socket: String? = nil, lease: String = "1s", graph: String? = nil) throws -> Daemon {
        try Daemon(graph: graph, arguments: ["--store", pg.conninfo, "--node", name, "--lease", lease], socketPath: socket)
    }

    /// `body` given nodes A and B of a cluster on a PostgreSQL of their own, both serving
    /// ``preconditionGraph(_:)``; all three stop, and the graph goes, when it returns.
    static func onTwoNodes(_ body: (Daemon, Daemon) throws -> Void) throws {
        let pg = try PostgresServer()
        let dir = TempDir()
        defer { dir.remove() }
        let graph = try preconditionGraph(dir)
        let a = try Daemon(arguments: ["--store", pg.conninfo, "--node", "A", "--lease", "1s", "--graph", graph])
        let b = try Daemon(arguments: ["--store", pg.conninfo, "--node", "B", "--lease", "1s", "--graph", graph])
        try withExtendedLifetime(pg) { try body(a, b) }
    }

    /// Cluster mode: a node's coverage (what it committed) is kept on its machine, where its state
    /// file would be, and read back when it restarts under its socket.
    @Test func aNodesCoverageSurvivesItsRestart() throws {
        let pg = try PostgresServer()
        let home = TempDir()
        defer { home.remove() }
        var env = ProcessInfo.processInfo.environment
        env["XDG_STATE_HOME"] = home.path
        let sock = home.file("a.sock")
        let args = ["--store", pg.conninfo, "--node", "A", "--lease", "1s"]
        do {
            let a = try Daemon(arguments: args, socketPath: sock, environment: env)
            let c = try a.client()
            try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"]])
            #expect(a.stop(signal: SIGTERM) == 0)
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: home.file("navd"))) ?? []
        #expect(files.contains { $0.hasSuffix(".coverage") }, "\(files)")
        let a = try Daemon(arguments: args, socketPath: sock, environment: env)
        let c = try a.client()
        try c.call("dismiss")
        try c.call("navigate", ["to": "shop.Product", "with": ["id": "p2"]])
        let report = try c.call("coverage.report")
        #expect(report["commits"] == 2, "\(report["commits"] ?? nil)")
    }

    @Test func aSessionOwnedByAnotherNodeIsMovedAndClientsFollowIt() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        let b = try Self.node("B", pg)
        let ca = try a.client()
        try ca.call("session.open", ["name": "s1"])
        try ca.call("navigate", ["session": "s1", "to": "cart.Cart", "by": "select"])

        // B names the owner and where it listens.
        // B learns of s1 from A's notification, which may come just after A's reply.
        let cb = try b.client()
        var moved: JSONValue = .null
        try waitUntil(timeout: 5) {
            moved = try cb.callError("tree", ["session": "s1"])
            return moved["data"]?["kind"]?.stringValue != "unknownTarget"
        }
        #expect(moved["code"]?.intValue == -32014)
        #expect(moved["data"]?["kind"]?.stringValue == "moved")
        #expect(moved["data"]?["node"]?.stringValue == "A")
        #expect(moved["data"]?["socket"]?.stringValue == a.socketPath)

        // NavClient follows it once, and stays with the owner.
        let client = try NavClient(socketPath: b.socketPath)
        let tree = try client.call("tree", ["session": "s1"])
        #expect(tree["version"]?.intValue == 1)
        #expect(client.socketPath == a.socketPath)

        // So does navctl (it uses NavClient).
        let out = try runCommand(Repo.binary("navctl"), ["--socket", b.socketPath, "--json", "tree", "--session", "s1"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(try JSONParser(maxDepth: 64).parse(out.stdout)["version"]?.intValue == 1)

        // And the Python client.
        let py = "import json, sys; sys.path.insert(0, sys.argv[1]); import navd_client as n; c = n.Client(sys.argv[2]); "
            + "t = c.call('tree', session='s1'); print(json.dumps({'version': t['version'], 'socket': c.socket_path}))"
        let pyOut = try runCommand("/usr/bin/python3", ["-c", py, Repo.file("Clients/python").path, b.socketPath])
        #expect(pyOut.status == 0, "\(pyOut.stderr)")
        let pyResult = try JSONParser(maxDepth: 8).parse(pyOut.stdout)
        #expect(pyResult["version"]?.intValue == 1)
        #expect(pyResult["socket"]?.stringValue == a.socketPath)

        // NavLoopClient (nav-tui's) sends the request once more, over a connection of its own, to
        // the owner; its own connection stays with B.
        let loop = EventLoop()
        let loopClient = NavLoopClient(loop: loop, socketPath: b.socketPath)
        var answer: Result<JSONValue, NavClientError>?
        loopClient.connect { error in
            if let error {
                answer = .failure(error)
                return
            }
            loopClient.call(NavCall("navigate", ["session": "s1", "to": "shop.Home", "by": "select"])) { answer = $0 }
        }
        while answer == nil { loop.runOnce(wait: true) }
        #expect((try? answer?.get())?["version"]?.intValue == 2, "\(String(describing: answer))")
        #expect(loopClient.socketPath == b.socketPath && loopClient.isConnected)
        loopClient.close()
        loop.runOnce(wait: false)

        // session.list on any node lists the cluster's sessions and their owners.
        let list = try cb.call("session.list")
        #expect(list["sessions"] == ["main", "s1"])
        #expect(list["owners"]?["s1"]?.stringValue == "A")

        // stats names the node and what it owns.
        let stats = try ca.call("stats")["cluster"]
        #expect(stats?["node"]?.stringValue == "A")
        #expect(stats?["available"] == true)
        #expect(stats?["owned"]?.intValue == 2)  // main (A started first) and s1

        // A session nobody has is still unknown, on any node.
        #expect(try b.client().callError("tree", ["session": "nope"])["data"]?["kind"]?.stringValue == "unknownTarget")
        // And one another node owns cannot be opened here.
        #expect(try b.client().callError("session.open", ["name": "s1"])["data"]?["kind"]?.stringValue == "moved")
    }

    @Test func aSubscriberOnOneNodeSeesEveryChangeMadeThroughAnother() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        let b = try Self.node("B", pg)
        let owner = try a.client()
        try owner.call("session.open", ["name": "shared"])
        let watcher = try b.client()
        // Another node's session is heard in the full form, whatever the subscriber asks.
        let snapshot = try watcher.call("subscribe", ["session": "shared", "notifications": "compact"])
        #expect(snapshot["notifications"] == "full")
        var mirror = TreeMirror(snapshot: snapshot)
        #expect(mirror.version == 0)
        // A subscriber on the owner's node hears the compact form (published beside the store's).
        let local = try a.client()
        let localSnapshot = try local.call("subscribe", ["session": "shared", "notifications": "compact"])
        #expect(localSnapshot["notifications"] == "compact")
        var localMirror = TreeMirror(snapshot: localSnapshot)

        // Commits through A, some pipelined (several per group commit), some one by one.
        var expected = 0
        for round in 0..<10 {
            for i in 0..<4 {
                let tab = (round * 4 + i) % 2 == 0 ? "cart.Cart" : "shop.Home"
                try owner.send("navigate", ["session": "shared", "to": .string(tab), "by": "select"], id: .int(1000 + i))
            }
            for i in 0..<4 { _ = try owner.reply(to: .int(1000 + i)) }
            try owner.call("navigate", ["session": "shared", "to": "shop.Product", "with": ["id": .string("p\(round)")]])
            try owner.call("dismiss", ["session": "shared"])
            expected += 6
        }
        // Every version, in order, no gap; the changes rebuild A's tree exactly.
        for v in 1...expected {
            let n = try watcher.notification("stackChanged")
            #expect(n["params"]?["session"]?.stringValue == "shared")
            #expect(n["params"]?["version"]?.intValue == v)
            #expect(n["params"]?["changes"]?.arrayValue?.first?["op"]?.stringValue != "reset", "version \(v) came as a snapshot")
            try mirror.apply(n["params"]!)
        }
        let truth = try owner.call("tree", ["session": "shared"])
        #expect(mirror.version == expected)
        #expect(mirror.root == truth["root"])
        for v in 1...expected {
            let p = try #require(try local.notification("stackChanged")["params"])
            #expect(p.arrayValue?[1].intValue == v, "version \(v) in the compact form")
            try localMirror.apply(p)
        }
        #expect(localMirror.version == expected && localMirror.root == truth["root"])
    }

    /// A subscriber on another node hears every notification of the session that a subscriber on
    /// the owner's node hears, in the same order and with the same params: `navigationPending` and
    /// `navigationEnded` of a navigation that waits for a provider, `screenResult` of a dismiss,
    /// `flowCompleted` of a recovery flow, each among the `stackChanged` around it.
    @Test func aSubscriberOnAnotherNodeHearsWhatTheOwnersSubscribersHearInTheirOrder() throws {
        try Self.onTwoNodes { a, b in
            let owner = try a.client()
            try owner.call("session.open", ["name": "shared"])
            let local = try a.client()
            try local.call("subscribe", ["session": "shared"])
            let watcher = try b.client()
            try watcher.call("subscribe", ["session": "shared"])
            let provider = try a.client()
            try provider.call("provide", ["preconditions": ["asked"]])

            // A navigation that waits for its provider, then commits (version 1).
            let asked = try owner.send("navigate", ["session": "shared", "to": "app.Asked"])
            try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": true])
            #expect(try owner.reply(to: asked)["result"]?["version"] == 1)
            // A result handed back to the screen below (version 2).
            try owner.call("dismiss", ["session": "shared", "result": ["picked": 7]])
            // A navigation whose precondition presents a recovery flow (version 3), which is cancelled
            // (version 4): the flow completes, cancelled, and the navigation fails.
            let guarded = try owner.send("navigate", ["session": "shared", "to": "app.Protected"])
            let flow = try Self.peek(local) { $0["params"]?["flow"]?["node"]?.stringValue }
            try owner.call("flowComplete", ["session": "shared", "flow": .string(flow), "cancelled": true])
            let failed = try owner.reply(to: guarded)
            #expect(failed["error"]?["data"]?["kind"] == "preconditionFailed", "\(failed)")
            // A last change marks the end.
            let last = try owner.call("navigate", ["session": "shared", "to": "app.Hub"])["version"]?.intValue ?? 0

            let here = try Self.heard(by: local, through: last)
            let there = try Self.heard(by: watcher, through: last)
            let methods = here.compactMap { $0["method"]?.stringValue }
            for m in ["navigationPending", "navigationEnded", "screenResult", "flowCompleted"] {
                #expect(methods.contains(m), "the owner's subscriber heard no \(m): \(methods)")
            }
            #expect(there.count == here.count, "heard on the owner's node: \(methods); on the other: \(there.compactMap { $0["method"]?.stringValue })")
            for (h, t) in zip(here, there) { #expect(h == t) }
        }
    }

    /// A subscriber that joins on another node while a navigation of the session waits on its
    /// owner hears, after its snapshot, that navigation's `navigationPending` with the params the
    /// owner's own `subscribe` answers in `pending`, then its commit and its `navigationEnded`; each
    /// subscriber hears the announcement once, however many others join meanwhile.
    @Test func aSubscriberOnAnotherNodeHearsWhatWasAlreadyWaiting() throws {
        try Self.onTwoNodes { a, b in
            let owner = try a.client()
            try owner.call("session.open", ["name": "shared"])
            let provider = try a.client()
            try provider.call("provide", ["preconditions": ["asked"]])
            let asked = try owner.send("navigate", ["session": "shared", "to": "app.Asked"])
            let evaluate = try provider.serverRequest("precondition.evaluate")
            let local = try a.client()
            let waiting = try #require(try local.call("subscribe", ["session": "shared"])["pending"]?.arrayValue)
            #expect(waiting.count == 1)

            let watcher = try b.client()
            let snapshot = try watcher.call("subscribe", ["session": "shared"])
            #expect(snapshot["version"] == 0)
            let again = try Self.nextNotification(watcher)
            #expect(again["method"] == "navigationPending" && again["params"] == waiting[0], "\(again)")
            // A second subscriber right after (within the owner's 100 ms between two announcements):
            // it hears it too, from the announcement that answers both.
            let second = try b.client()
            try second.call("subscribe", ["session": "shared"])
            let alsoHeard = try Self.nextNotification(second)
            #expect(alsoHeard["method"] == "navigationPending" && alsoHeard["params"] == waiting[0], "\(alsoHeard)")
            try provider.respond(to: evaluate, result: ["passed": true])
            #expect(try owner.reply(to: asked)["result"]?["version"] == 1)
            // Each heard it once: the announcement made again for the second subscriber goes to
            // neither the first (which heard it) nor, a second time, the second.
            for c in [watcher, second] {
                let committed = try Self.nextNotification(c)
                let ended = try Self.nextNotification(c)
                #expect(committed["method"] == "stackChanged" && committed["params"]?["version"] == 1, "\(committed)")
                #expect(ended["method"] == "navigationEnded" && ended["params"]?["status"] == "committed", "\(ended)")
                #expect(ended["params"]?["navigation"] == waiting[0]["navigation"])
            }
        }
    }

    /// A subscriber on another node that heard a navigation's `navigationPending` as it happened
    /// does not hear it again when another subscriber joins there while it waits (the owner
    /// announces it again for the newcomer, who hears it after its snapshot).
    @Test func aWaitingNavigationIsHeardOnceWhenAnotherSubscriberJoins() throws {
        try Self.onTwoNodes { a, b in
            let owner = try a.client()
            try owner.call("session.open", ["name": "shared"])
            let watcher = try b.client()
            try watcher.call("subscribe", ["session": "shared"])
            let provider = try a.client()
            try provider.call("provide", ["preconditions": ["asked"]])
            let asked = try owner.send("navigate", ["session": "shared", "to": "app.Asked"])
            let evaluate = try provider.serverRequest("precondition.evaluate")
            let pending = try Self.nextNotification(watcher)
            #expect(pending["method"] == "navigationPending", "\(pending)")
            let newcomer = try b.client()
            try newcomer.call("subscribe", ["session": "shared"])
            let toNewcomer = try Self.nextNotification(newcomer)
            #expect(toNewcomer == pending, "\(toNewcomer)")
            try provider.respond(to: evaluate, result: ["passed": true])
            #expect(try owner.reply(to: asked)["result"]?["version"] == 1)
            for c in [watcher, newcomer] {
                let methods = try Self.heard(by: c, through: 1).compactMap { $0["method"]?.stringValue }
                #expect(methods == ["stackChanged"], "after the navigationPending: \(methods)")
                #expect(try Self.nextNotification(c)["method"] == "navigationEnded")
            }
        }
    }

    /// A navigation asked twice about one precondition (a link whose two screens show it, each asked
    /// about) sends two `navigationPending` with the same params: a subscriber on another node hears
    /// both, as the owner's subscriber does. They are sent anew, not announced again for a
    /// subscriber that joined (which those that heard it do not hear twice).
    @Test func aNotificationSentTwiceWithTheSameParamsIsRelayedTwice() throws {
        let pg = try PostgresServer()
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Item]}
              Item: {opens: [Item], preconditions: [asked]}
            preconditions:
              asked: {provider: true, timeout: 5s}
            links:
              "/two": [Home, Item, Item]
            """
        let a = try Self.node("A", pg, graph: graph), b = try Self.node("B", pg, graph: graph)
        try withExtendedLifetime((a, b)) {
            let owner = try a.client()
            try owner.call("session.open", ["name": "shared"])
            let local = try a.client(), watcher = try b.client()
            try local.call("subscribe", ["session": "shared"])
            try watcher.call("subscribe", ["session": "shared"])
            let provider = try a.client()
            try provider.call("provide", ["preconditions": ["asked"]])
            let opened = try owner.send("open", ["session": "shared", "url": "/two"])
            for _ in 0..<2 { try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": true]) }
            #expect(try owner.reply(to: opened)["result"]?["version"] == 1)
            let here = try Self.heard(by: local, through: 1) + [try Self.nextNotification(local)]
            let there = try Self.heard(by: watcher, through: 1) + [try Self.nextNotification(watcher)]
            let methods = here.compactMap { $0["method"]?.stringValue }
            #expect(methods == ["navigationPending", "navigationPending", "stackChanged", "navigationEnded"], "\(methods)")
            #expect(here[0] == here[1], "the same params twice: \(here)")
            #expect(there == here, "heard on the other node: \(there.compactMap { $0["method"]?.stringValue })")
        }
    }

    /// Many navigations that wait at once, in many sessions (sent in one write: one loop iteration):
    /// a subscriber on another node hears each one's `navigationPending`, then its `navigationEnded`
    /// and `stackChanged` in the order the owner's subscribers do.
    @Test func aBurstOfWaitingNavigationsIsRelayedInOrder() throws {
        try Self.onTwoNodes { a, b in
            let owner = try a.client()
            let names = (0..<40).map { "burst\($0)" }
            for n in names { try owner.call("session.open", ["name": .string(n)]) }
            let local = try a.client()
            let watcher = try b.client()
            for n in names {
                try local.call("subscribe", ["session": .string(n)])
                try watcher.call("subscribe", ["session": .string(n)])
            }
            let provider = try a.client()
            try provider.call("provide", ["preconditions": ["asked"]])
            var burst = ""
            for (i, n) in names.enumerated() {
                burst += #"{"jsonrpc":"2.0","id":\#(9000 + i),"method":"navigate","params":{"session":"\#(n)","to":"app.Asked"}}"# + "\n"
            }
            try owner.sendRaw(burst)
            for _ in names { try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": true]) }
            for i in names.indices { #expect(try owner.reply(to: .int(9000 + i))["result"]?["version"] == 1) }
            // Each session's notifications, in order, as each side heard them.
            func bySession(_ c: TestClient) throws -> [String: [JSONValue]] {
                var out: [String: [JSONValue]] = [:]
                while out.values.reduce(0, { $0 + $1.count }) < names.count * 3 {
                    let m = try Self.nextNotification(c)
                    out[m["params"]?["session"]?.stringValue ?? "?", default: []].append(m)
                }
                return out
            }
            let here = try bySession(local), there = try bySession(watcher)
            for n in names {
                #expect(here[n]?.compactMap { $0["method"]?.stringValue } == ["navigationPending", "stackChanged", "navigationEnded"], "\(n): \(here[n] ?? [])")
                #expect(there[n] == here[n], "\(n)")
            }
        }
    }

    /// A relayed notification too large for a PostgreSQL notification (a flow's result of 9,000
    /// bytes) reaches subscribers on other nodes without its result, marked `truncated`.
    @Test func aRelayedNotificationTooLargeForPostgreSQLComesWithoutItsResult() throws {
        try Self.onTwoNodes { a, b in
            let owner = try a.client()
            let local = try a.client()
            try local.call("subscribe", [:])
            let watcher = try b.client()
            try watcher.call("subscribe", [:])
            _ = try owner.send("navigate", ["to": "app.Protected"])
            let flow = try Self.peek(local) { $0["params"]?["flow"]?["node"]?.stringValue }
            let user = String(repeating: "u", count: 9_000)
            try owner.call("flowComplete", ["flow": .string(flow), "result": ["user": .string(user)]])
            let here = try local.notification("flowCompleted")["params"]
            let there = try watcher.notification("flowCompleted")["params"]
            #expect(here?["result"]?["user"]?.stringValue == user)
            #expect(there?["result"] == nil && there?["truncated"] == true, "\(String(describing: there))")
            for key in ["session", "flow", "coordinator", "status"] { #expect(here?[key] != nil && here?[key] == there?[key]) }
        }
    }

    /// What `find` reads in the first notification `c` heard that it reads something in; the
    /// notifications stay where they are, to be taken in order.
    static func peek<T>(_ c: TestClient, _ find: (JSONValue) -> T?) throws -> T {
        var seen = 0
        while true {
            for n in c.notifications.dropFirst(seen) { if let t = find(n) { return t } }
            seen = c.notifications.count
            guard let m = try c.readMessage() else { throw TestFailure("the connection closed; heard \(c.notifications)") }
            if m["id"] == nil { c.notifications.append(m) }
        }
    }

    /// The notifications `c` hears up to the `stackChanged` of `version`, in order.
    static func heard(by c: TestClient, through version: Int) throws -> [JSONValue] {
        var out: [JSONValue] = []
        while true {
            let m = try nextNotification(c)
            out.append(m)
            if m["method"] == "stackChanged" && m["params"]?["version"]?.intValue == version { return out }
        }
    }

    /// The next notification `c` receives (replies to its requests skipped).
    static func nextNotification(_ c: TestClient) throws -> JSONValue {
        if !c.notifications.isEmpty { return c.notifications.removeFirst() }
        while true {
            guard let m = try c.readMessage() else { throw TestFailure("the connection closed") }
            if m["id"] == nil { return m }
        }
    }

    /// A session closed on its node: subscribers through another node hear `sessionClosed` too, at
    /// the last version they heard, and their subscription ends.
    @Test func aSessionClosedOnItsNodeIsToldToSubscribersOfAnother() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        let b = try Self.node("B", pg)
        let owner = try a.client()
        try owner.call("session.open", ["name": "brief"])
        let watcher = try b.client()
        try watcher.call("subscribe", ["session": "brief"])
        try owner.call("navigate", ["session": "brief", "to": "shop.Product", "with": ["id": "p1"]])
        #expect(try watcher.notification("stackChanged")["params"]?["version"] == 1)
        try owner.call("session.close", ["name": "brief"])
        let closed = try watcher.notification("sessionClosed")
        #expect(closed["params"] == ["session": "brief", "version": 1], "\(closed)")
        #expect(try watcher.call("stats", [:])["subscriptions"]?.intValue == 0)
    }

    /// A session closed and at once opened again (the two requests sent together): until
    /// PostgreSQL stored the close, the open is answered `unavailable` with a retry delay, not by
    /// reading the node's sessions again (which failed the commits under way and disconnected
    /// their clients); retried, it opens a new session, without the closed one's keys.
    @Test func aSessionOpenedWhileItsCloseIsStoredIsRetriedNotResynced() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        let c = try a.client()
        let other = try a.client()
        try c.call("session.open", ["name": "x"])
        try c.call("navigate", ["session": "x", "to": "shop.Product", "with": ["id": "p1"], "key": "k1"])
        try other.call("session.open", ["name": "y"])
        try c.sendRaw("{\"jsonrpc\":\"2.0\",\"id\":100,\"method\":\"session.close\",\"params\":{\"name\":\"x\"}}\n"
                      + "{\"jsonrpc\":\"2.0\",\"id\":101,\"method\":\"session.open\",\"params\":{\"name\":\"x\"}}\n")
        var replies: [JSONValue: JSONValue] = [:]
        for _ in 0..<2 {
            let m = try #require(try c.readMessage())
            replies[m["id"] ?? .null] = m
        }
        #expect(replies[100]?["result"] != nil, "\(replies)")
        let opened = try #require(replies[101])
        if let e = opened["error"] {
            #expect(e["data"]?["kind"] == "unavailable" && e["data"]?["retryAfterMs"] != nil, "\(e)")
            try c.call("session.open", ["name": "x"])
        }
        #expect(try c.call("tree", ["session": "x"])["version"] == 0)
        let r = try c.call("navigate", ["session": "x", "to": "shop.Product", "with": ["id": "p2"], "key": "k1"])
        #expect(r["version"] == 1 && (r["visible"]?.arrayValue?.count ?? 0) == 3, "\(r)")
        // Nobody else was disturbed.
        #expect(try other.call("navigate", ["session": "y", "to": "shop.Product", "with": ["id": "p3"]])["version"] == 1)
        #expect(!a.stderr.contains("reading the node's sessions again"), "\(a.stderr)")
        #expect(try pg.psql("SELECT count(*) FROM navd_keys WHERE session = 'x'").trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    }

    /// A change as deep as a request may be reaches the other node's subscribers (the notification
    /// reader reads what navd writes, not only what a request may hold), and a subscription to a
    /// session another node owns counts in that node's `stats.subscriptions`.
    @Test func aDeepChangeReachesTheOtherNodeAndItsSubscriberIsCounted() throws {
        let pg = try PostgresServer()
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Deep]}
              Deep: {setup: {type: object}}

            """
        let a = try Self.node("A", pg, graph: graph)
        let b = try Self.node("B", pg, graph: graph)
        let owner = try a.client()
        try owner.call("session.open", ["name": "deep"])
        let watcher = try b.client()
        try waitUntil(timeout: 5, "B knows the session") {
            (try? watcher.call("subscribe", ["session": "deep"])) != nil
        }
        #expect(try watcher.call("stats", [:])["subscriptions"]?.intValue == 1, "a subscriber of another node's session counts")
        // 58 levels of setup model: the request nests 61 deep (its limit is 64), the notification
        // that carries it past 64.
        var deep: JSONValue = ["leaf": true]
        for _ in 0..<57 { deep = ["d": deep] }
        let r = try owner.call("navigate", ["session": "deep", "to": "app.Deep", "with": deep])
        #expect(r["version"]?.intValue == 1)
        let n = try watcher.notification("stackChanged")
        #expect(n["params"]?["version"]?.intValue == 1 && n["params"]?["session"]?.stringValue == "deep")
        var p = n["params"]?["changes"]?.arrayValue?.first?["node"]?["params"]
        var levels = 0
        while let next = p?["d"] {
            p = next
            levels += 1
        }
        #expect(levels == 57 && p?["leaf"] == true, "the whole setup model arrived (\(levels) levels)")
    }

    /// A `moved` error names a socket from the cluster's directory, which whoever can write to
    /// PostgreSQL can rewrite: every client follows it only to a server of its own uid (or root's).
    @Test func clientsFollowMovedOnlyToAServerOfTheirOwnUser() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        try a.client().call("session.open", ["name": "s1"])
        // Another user's server, where the directory will say A listens.
        let dir = TempDir()
        defer { dir.remove() }
        chmod(dir.path, 0o777)
        let evil = dir.file("evil.sock")
        let listener = Process()
        listener.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        listener.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/socat", "UNIX-LISTEN:\(evil),fork", "EXEC:/bin/cat"]
        // socat forks a child per connection: none may hold this process's output open.
        listener.standardInput = FileHandle.nullDevice
        listener.standardOutput = FileHandle.nullDevice
        listener.standardError = FileHandle.nullDevice
        try listener.run()
        defer { _ = try? runCommand("/usr/bin/pkill", ["-KILL", "-f", "UNIX-LISTEN:\(evil)"]) }
        try waitUntil(timeout: 5, "the other user's server listens") { FileManager.default.fileExists(atPath: evil) }
        _ = try pg.psql("UPDATE navd_nodes SET socket = '\(evil)' WHERE node = 'A'")
        let b = try Self.node("B", pg)
        let moved = try b.client().callError("tree", ["session": "s1"])
        #expect(moved["data"]?["socket"]?.stringValue == evil, "\(moved)")

        // nav-tui's loop client.
        let loop = EventLoop()
        let loopClient = NavLoopClient(loop: loop, socketPath: b.socketPath)
        var answer: Result<JSONValue, NavClientError>?
        loopClient.connect { error in
            if let error { answer = .failure(error); return }
            loopClient.call(NavCall("tree", ["session": "s1"])) { answer = $0 }
        }
        while answer == nil { loop.runOnce(wait: true) }
        guard case .failure(let e)? = answer else { Issue.record("followed to another user's server: \(String(describing: answer))"); return }
        #expect(e.message.contains("served by uid 65534"), "\(e.message)")
        loopClient.close()
        loop.runOnce(wait: false)
        // NavClient (navctl) and the Python client refuse it too.
        #expect(throws: NavClientError.self) { _ = try NavClient(socketPath: b.socketPath).call("tree", ["session": "s1"]) }
        let py = "import sys; sys.path.insert(0, sys.argv[1]); import navd_client as n; c = n.Client(sys.argv[2]); c.call('tree', session='s1')"
        let pyOut = try runCommand("/usr/bin/python3", ["-c", py, Repo.file("Clients/python").path, b.socketPath])
        #expect(pyOut.status != 0 && pyOut.stderr.contains("65534"), "\(pyOut.stderr)")
    }

    @Test func subscribersFollowASessionThroughATakeoverAndLargeChangesComeAsSnapshots() throws {
        let pg = try PostgresServer()
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Note]}
              Note: {setup: {type: object, properties: {text: {type: string}}}}
            """
        let a = try Self.node("A", pg, graph: graph)
        let b = try Self.node("B", pg, graph: graph)
        let owner = try a.client()
        try owner.call("session.open", ["name": "t"])
        let watcher = try b.client()
        var mirror = TreeMirror(snapshot: try watcher.call("subscribe", ["session": "t"]))
        try owner.call("navigate", ["session": "t", "to": "Note", "with": ["text": "short"]])
        try owner.call("dismiss", ["session": "t"])
        // A change too large for a notification (its params over 7,900 bytes) reaches B's subscriber
        // as a snapshot of the same version.
        try owner.call("navigate", ["session": "t", "to": "Note", "with": ["text": .string(String(repeating: "x", count: 9_000))]])
        for v in 1...3 {
            let n = try watcher.notification("stackChanged")
            #expect(n["params"]?["version"]?.intValue == v)
            let isReset = n["params"]?["changes"]?.arrayValue?.first?["op"]?.stringValue == "reset"
            #expect(isReset == (v == 3), "version \(v)")
            try mirror.apply(n["params"]!)
        }
        #expect(mirror.root == (try owner.call("tree", ["session": "t"]))["root"])

        // A dies; B takes t over, and its subscriber goes on from where it was, without a gap.
        _ = a.stop(signal: SIGKILL)
        let client = try NavClient(socketPath: b.socketPath)
        let served = try callOnceServed(client, "dismiss", ["session": "t"], "B serves t")
        #expect(served["version"]?.intValue == 4)
        let n = try watcher.notification("stackChanged")
        #expect(n["params"]?["version"]?.intValue == 4)
        try mirror.apply(n["params"]!)
        #expect(mirror.root == (try client.call("tree", ["session": "t"]))["root"])
    }

    /// A recovery flow goes with its navigation; a navigation waiting on one ends with the node that
    /// ran it. The node that takes the session over closes the flow (one commit), so its user is not
    /// left in a flow that completes to no effect.
    @Test func aTakeoverClosesTheRecoveryFlowsOfNavigationsThatEndedWithTheirNode() throws {
        let pg = try PostgresServer()
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Gated]}
              Gated: {preconditions: [ok]}
              Fix: {flow: {steps: [FixStep]}}
              FixStep: {}
            preconditions:
              ok: {check: {fact: ok, equals: true}, recover: {flow: Fix, facts: {ok: true}}}
            """
        let a = try Self.node("A", pg, graph: graph)
        let b = try Self.node("B", pg, graph: graph)
        let owner = try a.client()
        try owner.call("session.open", ["name": "t"])
        let watcher = try b.client()
        _ = try watcher.call("subscribe", ["session": "t"])
        try owner.send("navigate", ["session": "t", "to": "Gated", "detach": true])
        let presented = try watcher.notification("stackChanged")
        let flow = try #require(presented["params"]?["changes"]?.arrayValue?.first?["node"]?["children"]?.arrayValue?.first)
        #expect(flow["recovery"] == true && presented["params"]?["version"] == 1, "\(presented)")
        _ = a.stop(signal: SIGKILL)
        // B takes t over (the watcher's session is asked for there) and closes the flow.
        let client = try NavClient(socketPath: b.socketPath)
        try waitUntil(timeout: 20, "B serves t") { (try? client.call("tree", ["session": "t"]))?["version"]?.intValue == 2 }
        let closed = try watcher.notification("stackChanged")
        #expect(closed["params"]?["version"] == 2 && closed["params"]?["changes"]?.arrayValue?.first?["op"] == "dismiss", "\(closed)")
        #expect(closed["params"]?["changes"]?.arrayValue?.first?["removed"]?.arrayValue?.contains(flow["id"] ?? .null) == true, "\(closed)")
    }

    /// The `then` a `navigate` gave a flow is stored with the flow's node: the node that takes the
    /// session over completes the flow so, not by the flow's declared `then`.
    @Test func aTakeoverCompletesAFlowByTheThenItsNavigateGave() throws {
        let pg = try PostgresServer()
        let graph = DurableStateTests.flowWithThenGraph
        let a = try Self.node("A", pg, graph: graph)
        let b = try Self.node("B", pg, graph: graph)
        let owner = try a.client()
        try owner.call("session.open", ["name": "t"])
        let flow = try owner.call("navigate", ["session": "t", "to": "Wizard", "then": ["to": "Other", "with": ["id": "$result.id"]]])["node"] ?? .null
        _ = a.stop(signal: SIGKILL)
        let client = try NavClient(socketPath: b.socketPath)
        try waitUntil(timeout: 20, "B serves t") { (try? client.call("tree", ["session": "t"]))?["version"]?.intValue == 1 }
        let r = try client.call("flowComplete", ["session": "t", "flow": flow, "result": ["id": "o7"]])
        #expect(r["then"]?["version"] == 3, "\(r)")
        let top = try client.call("tree", ["session": "t"])["root"]?["children"]?.arrayValue?.last
        #expect(top?["coordinator"] == "app.Other" && top?["params"] == ["id": "o7"], "\(String(describing: top))")
    }

    /// After `graph.reload` on every node, a node reads other nodes' sessions from PostgreSQL with
    /// the graph it now serves (not the one it started with): a subscriber's snapshot, a takeover.
    @Test func aNodeReadsOtherNodesSessionsWithTheGraphItReloaded() throws {
        let pg = try PostgresServer()
        let before = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Note]}
              Note: {}
            """
        let a = try Self.node("A", pg, graph: before)
        let b = try Self.node("B", pg, graph: before)
        // Every node reloads a graph whose root is tabs: the sessions made now hold them.
        for node in [a, b] {
            try before.replacingOccurrences(of: "root: {stack: Home}", with: "root: {tabs: [Home, Note]}")
                .write(toFile: node.dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
            #expect(try node.client().call("graph.reload", ["force": true])["ok"] == true)
        }
        let owner = try a.client()
        try owner.call("session.open", ["name": "r"])
        try owner.call("navigate", ["session": "r", "to": "Note", "by": "select"])
        let truth = try owner.call("tree", ["session": "r"])
        #expect(truth["root"]?["kind"] == "tabs")

        // B's subscriber gets the session as PostgreSQL holds it, read with B's graph.
        let watcher = try b.client()
        var snapshot: JSONValue = .null
        try waitUntil(timeout: 5, "B knows the session") {
            do {
                snapshot = try watcher.call("subscribe", ["session": "r"])
                return true
            } catch let e as NavClientError where e.kind == "unknownTarget" {
                return false
            }
        }
        #expect(snapshot["root"] == truth["root"] && snapshot["version"] == truth["version"])

        // A dies; B takes r over with its graph and goes on from it.
        _ = a.stop(signal: SIGKILL)
        let client = try NavClient(socketPath: b.socketPath)
        let served = try callOnceServed(client, "navigate", ["session": "r", "to": "Home", "by": "select"], "B serves r")
        #expect(served["version"] == 2)
        #expect(try client.call("tree", ["session": "r"])["root"]?["selected"] == 0)
    }

    /// A tab is known by its place: rows name the tabs of the graph they were written under, so a
    /// node whose graph moved the tabs a session holds (as many as before) refuses that session,
    /// naming the tabs as saved and as declared now, as a restart on a state file does: a subscriber
    /// on such a node is answered the rule, and the owner restarted on that graph refuses to start,
    /// instead of showing one tab as another.
    @Test func aNodeOnAGraphThatMovedTabsRefusesTheSessionsHoldingThem() throws {
        let pg = try PostgresServer()
        let graph = """
            root: {tabs: [Home, Search, Settings]}
            coordinators: {Home: {}, Search: {}, Settings: {}}
            """
        let moved = graph.replacingOccurrences(of: "[Home, Search, Settings]", with: "[Search, Home, Settings]")
        let said = "hold the tabs app.Home, app.Search, app.Settings, as the graph it was saved under declared them; the graph's root declares app.Search, app.Home, app.Settings now"
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("graph"), withIntermediateDirectories: true)
        try graph.write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let args = ["--graph", dir.file("graph"), "--store", pg.conninfo, "--node", "A", "--lease", "1s"]
        let a = try Daemon(arguments: args, socketPath: dir.file("a.sock"))
        let owner = try a.client()
        try owner.call("session.open", ["name": "r"])
        #expect(try owner.call("navigate", ["session": "r", "to": "Search", "by": "select"])["version"] == 1)

        // A node serving the moved tabs: its subscriber of r is told why r cannot be read.
        do {
            let b = try Self.node("B", pg, graph: moved)
            let watcher = try b.client()
            var refused: JSONValue = .null
            try waitUntil(timeout: 5, "B knows the session") {
                refused = try watcher.callError("subscribe", ["session": "r"])
                return refused["data"]?["kind"]?.stringValue != "unknownTarget"
            }
            #expect(refused["data"]?["kind"] == "internalError" && (refused["message"]?.stringValue ?? "").contains(said), "\(refused)")
            #expect(b.stop(signal: SIGTERM) == 0)
        }

        // The owner, restarted on the moved tabs, refuses to start, saying what to do.
        #expect(a.stop(signal: SIGTERM) == 0)
        try moved.write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("a2.sock")] + args)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains(said) && r.stderr.contains("start navd with the graph it was saved with"), "\(r.stderr)")

        // On the graph it was saved with, it serves r as it was.
        try graph.write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let again = try Daemon(arguments: args, socketPath: dir.file("a3.sock"))
        #expect(try again.client().call("tree", ["session": "r"])["root"]?["selected"] == 1)
    }

    /// Sessions `PREFIX0`, `PREFIX1`… (`count` copies of `main`) of a node whose lease ended an hour
    /// ago, with `keys` keyed replies each (`k1`…, navigation `nav-(i × 10,000 + j)`, version `j`),
    /// written in one transaction (a node running meanwhile sweeps them).
    static func sessionsOfAGoneNode(_ pg: PostgresServer, _ prefix: String, count: Int, keys: Int) throws {
        _ = try pg.psql("""
            INSERT INTO navd_nodes VALUES ('gone', '/nonexistent/gone.sock', 1, clock_timestamp() - interval '1 hour');
            INSERT INTO navd_sessions (name, version, next_id, tree, facts, uid, node, epoch)
                SELECT '\(prefix)' || i, version, next_id, tree, facts, uid, 'gone', 1 FROM navd_sessions, generate_series(0, \(count - 1)) i
                WHERE name = 'main';
            INSERT INTO navd_keys (session, key, reply)
                SELECT '\(prefix)' || i, 'k' || j, '{"result":{"navigation":"nav-' || (i * 10000 + j) || '","version":' || j || '}}'
                FROM generate_series(0, \(count - 1)) i, generate_series(1, \(keys)) j ORDER BY i, j;
            """)
    }

    /// Sessions that each remember many keyed replies are taken over in batches of at most 16,384
    /// keys (each claim one PostgreSQL query well within the lease, read between requests), with
    /// every key: a retry is answered with the reply as stored, and new navigations are numbered
    /// after those the replies name.
    @Test func aTakeoverOfSessionsWithManyKeysComesInBoundedBatchesWithTheirKeys() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        try Self.sessionsOfAGoneNode(pg, "heavy-", count: 6, keys: 4_096)
        try waitUntil(timeout: 20, "A owns the six sessions") {
            Int(try pg.psql("SELECT count(*) FROM navd_sessions WHERE node = 'A' AND name LIKE 'heavy-%'")) == 6
        }
        try a.waitForLog("navd.sessions=2 [NavCluster] took over")
        let batches = a.stderr.split(separator: "\n").filter { $0.contains("took over sessions") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("navd.sessions=") }.flatMap { Int($0.dropFirst("navd.sessions=".count)) }
        }
        #expect(batches == [4, 2], "sessions per claim: \(batches)")

        var c = try a.client()
        // A node that a loaded machine kept past its lease reads its sessions again and answers
        // `unavailable` meanwhile: retried after the delay it asks for, as a client does. A commit
        // in flight when the store could not confirm it is not acknowledged and its client is
        // disconnected (CLUSTER.md): reconnected and retried, which a key makes safe.
        func navigate(_ params: JSONValue) throws -> JSONValue {
            let deadline = Date().addingTimeInterval(20)
            while true {
                do { return try c.call("navigate", params) } catch let f as RPCFailure where f.error["data"]?["kind"] == "unavailable" && Date() < deadline {
                    usleep(UInt32(f.error["data"]?["retryAfterMs"]?.intValue ?? 250) * 1_000)
                } catch let f as TestFailure where f.description.hasPrefix("connection closed") && Date() < deadline {
                    c = try a.client()
                }
            }
        }
        let replay = try navigate(["session": "heavy-5", "to": "cart.Cart", "by": "select", "key": "k4096"])
        #expect(replay == ["navigation": "nav-54096", "version": 4096])
        let fresh = try navigate(["session": "heavy-5", "to": "cart.Cart", "by": "select", "key": "fresh"])
        let number = fresh["navigation"]?.stringValue.flatMap { Int($0.dropFirst("nav-".count)) } ?? 0
        #expect(number > 54_096, "\(fresh)")
        #expect(Int(try pg.psql("SELECT count(*) FROM navd_keys WHERE session = 'heavy-0'")) == 4_096)

        // A's connection is ended: it reads its own seven sessions again, in claims of at most
        // 16,384 keys after the last name read, all of them (each epoch raised once more).
        // Under load the store may have been unavailable for a moment before (its line logged
        // already, the sessions read again, their epochs raised): this end's own line is the one
        // after those, and each epoch is raised from what it was.
        func epochs() throws -> [String: Int] {
            try pg.integersByName("SELECT name, epoch FROM navd_sessions WHERE node = 'A'")
        }
        let before = try epochs()
        #expect(before.keys.sorted() == ["heavy-0", "heavy-1", "heavy-2", "heavy-3", "heavy-4", "heavy-5", "main"], "\(before)")
        let acceptedBefore = a.stderr.components(separatedBy: "changes are accepted again").count
        _ = try pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
        try waitUntil(timeout: 20, "A accepts changes again") { a.stderr.components(separatedBy: "changes are accepted again").count > acceptedBefore }
        try waitUntil(timeout: 20, "A read its seven sessions again, each epoch raised once more") {
            let now = try epochs()
            return now.count == before.count && before.allSatisfy { name, epoch in (now[name] ?? 0) > epoch }
        }
        try waitUntil(timeout: 10, "A serves heavy-4 again") {
            (try? navigate(["session": "heavy-4", "to": "cart.Cart", "by": "select", "key": "k17"])) == ["navigation": "nav-40017", "version": 17]
        }
    }

    /// A session's keys in PostgreSQL are cut back to its newest 4,096 only once they pass 4,096 +
    /// 1,024 (the cut reads 4,096 index entries, so a cut at every commit made each commit's cost
    /// grow with the keys held): the count a node keeps starts from the keys it claimed.
    @Test func aSessionsKeysAreCutBackOncePastTheirSlack() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        try Self.sessionsOfAGoneNode(pg, "slack-", count: 1, keys: 5_119)
        try waitUntil(timeout: 20, "A owns the session") {
            try pg.psql("SELECT node FROM navd_sessions WHERE name = 'slack-0'") == "A"
        }
        let c = try a.client()
        let keys = { Int(try pg.psql("SELECT count(*) FROM navd_keys WHERE session = 'slack-0'")) }
        // The 5,120th key: within the slack, nothing is cut.
        _ = try c.call("navigate", ["session": "slack-0", "to": "cart.Cart", "by": "select", "key": "n1"])
        #expect(try keys() == 5_120)
        // The 5,121st passes it: the newest 4,096 are kept, the new one among them.
        _ = try c.call("navigate", ["session": "slack-0", "to": "shop.Home", "by": "select", "key": "n2"])
        #expect(try keys() == 4_096)
        #expect(try pg.psql("SELECT count(*) FROM navd_keys WHERE session = 'slack-0' AND key IN ('n1', 'n2', 'k1026', 'k1025')") == "3")
        // Then 1,024 more before the next cut.
        for i in 3...1_026 { _ = try c.call("navigate", ["session": "slack-0", "to": i % 2 == 1 ? "cart.Cart" : "shop.Home", "by": "select", "key": .string("n\(i)")]) }
        #expect(try keys() == 5_120)
        _ = try c.call("navigate", ["session": "slack-0", "to": "cart.Cart", "by": "select", "key": "n1027"])
        #expect(try keys() == 4_096)
        // A retry of a key the node still remembers is answered as before.
        #expect(try c.call("navigate", ["session": "slack-0", "to": "cart.Cart", "by": "select", "key": "n2"])["version"] != nil)
    }

    /// Several clients navigate their own sessions through node after node; the owner is killed
    /// with SIGKILL under that load, three times. Every navigation is keyed and retried with its key
    /// until answered, so each session's version must equal the number of acknowledged navigations,
    /// and the acknowledged versions must be 1, 2, 3, … (none lost, none applied twice).
    @Test func killingTheOwnerUnderLoadLosesNothingAndRepeatsNothing() throws {
        let pg = try PostgresServer()
        let dir = TempDir()
        defer { dir.remove() }
        let sockets = ["A", "B", "C"].map { dir.file("\($0).sock") }
        var nodes: [String: Daemon] = [:]
        for (i, name) in ["A", "B", "C"].enumerated() { nodes[name] = try Self.node(name, pg, socket: sockets[i]) }
        let sessions = (0..<4).map { "load-\($0)" }
        do {
            let c = try nodes["A"]!.client()
            for s in sessions { try c.call("session.open", ["name": .string(s)]) }
        }
        let stop = Flag()
        let results = Results()
        let threads = sessions.enumerated().map { (i, s) in
            Thread {
                results.record(s, driveSession(s, sockets: sockets, start: i, until: stop, results: results))
            }
        }
        for t in threads { t.start() }
        var owner = "A"
        for round in 1...3 {
            // Let navigations commit on the owner, then kill it.
            let before = try countAcknowledged(pg, sessions)
            try waitUntil(timeout: 20, "round \(round): 40 navigations on \(owner) (\(before) before, failures \(results.failures))") { (try? countAcknowledged(pg, sessions)) ?? 0 >= before + 40 }
            nodes[owner]!.stop(signal: SIGKILL)
            // Another node takes the sessions over; the load goes on there.
            try waitUntil(timeout: 20, "round \(round): takeover of \(owner)'s sessions") {
                let owners = try pg.psql("SELECT DISTINCT node FROM navd_sessions WHERE name LIKE 'load-%'")
                return !owners.isEmpty && !owners.contains(owner)
            }
            let next = try pg.psql("SELECT node FROM navd_sessions WHERE name = 'load-0'")
            let mark = try countAcknowledged(pg, sessions)
            do {
                try waitUntil(timeout: 20, "round \(round): 40 navigations after the takeover by \(next)") { (try? countAcknowledged(pg, sessions)) ?? 0 >= mark + 40 }
            } catch {
                stop.set()
                for t in threads { while !t.isFinished { usleep(10_000) } }
                Issue.record("\(error); failures: \(results.failures.prefix(5)); B: \(nodes["B"]!.stderr.suffix(3000)) C: \(nodes["C"]!.stderr.suffix(1500))")
                return
            }
            // The killed node comes back (a new incarnation) for the next round.
            let index = ["A", "B", "C"].firstIndex(of: owner)!
            nodes[owner] = try Self.node(owner, pg, socket: sockets[index])
            print("cluster kill round \(round): \(owner) killed, sessions taken over by \(next)")
            owner = next
        }
        stop.set()
        for t in threads { while !t.isFinished { usleep(10_000) } }
        let c = try NavClient(socketPath: sockets[0])
        for s in sessions {
            let acked = results.versions(s)
            #expect(acked.count >= 20, "session \(s): only \(acked.count) acknowledged navigations")
            #expect(acked == Array(1...acked.count), "session \(s): acknowledged versions are not 1…\(acked.count): \(acked.suffix(20))")
            let tree = try c.call("tree", ["session": .string(s)])
            #expect(tree["version"]?.intValue == acked.count, "session \(s): version \(tree["version"] ?? .null), acknowledged \(acked.count)")
        }
        #expect(results.failures.isEmpty, "\(results.failures.prefix(5))")
    }

    /// A second process started under the same `--node` while clients write: the first is fenced
    /// (its commits refused by PostgreSQL), says so, and stops with status 1 (not a crash); the second
    /// serves the node's sessions, with every acknowledged version there.
    @Test func aSecondProcessUnderTheSameNameStopsTheFirstCleanly() throws {
        let pg = try PostgresServer()
        let dir = TempDir()
        defer { dir.remove() }
        let sockets = [dir.file("first.sock"), dir.file("second.sock")]
        let first = try Self.node("X", pg, socket: sockets[0])
        do {
            let c = try first.client()
            for s in ["f-0", "f-1"] { try c.call("session.open", ["name": .string(s)]) }
        }
        let stop = Flag()
        let results = Results()
        let threads = ["f-0", "f-1"].enumerated().map { (i, s) in
            Thread { results.record(s, driveSession(s, sockets: sockets, start: i, until: stop, results: results)) }
        }
        for t in threads { t.start() }
        try waitUntil(timeout: 20, "20 navigations on the first process") { (try? countAcknowledged(pg, ["f-0", "f-1"])) ?? 0 >= 20 }
        let second = try Self.node("X", pg, socket: sockets[1])
        let status = first.waitForExit(timeout: 20)
        #expect(status == 1, "the first process ended with \(String(describing: status)): \(first.stderr.suffix(2000))")
        #expect(first.stderr.contains("lost its registration"), "\(first.stderr.suffix(2000))")
        let mark = try countAcknowledged(pg, ["f-0", "f-1"])
        try waitUntil(timeout: 20, "20 more navigations on the second process") { (try? countAcknowledged(pg, ["f-0", "f-1"])) ?? 0 >= mark + 20 }
        stop.set()
        for t in threads { while !t.isFinished { usleep(10_000) } }
        let c = try second.client()
        for s in ["f-0", "f-1"] {
            let acked = results.versions(s)
            #expect(acked == Array(1...max(1, acked.count)), "session \(s): acknowledged versions \(acked.suffix(10))")
            #expect(try c.call("tree", ["session": .string(s)])["version"]?.intValue == acked.count)
        }
        #expect(results.failures.isEmpty, "\(results.failures.prefix(5))")
    }

    @Test func aPostgreSQLThatStopsAnsweringIsGivenUpOnAfterTheLease() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        let c = try a.client()
        try c.call("navigate", ["to": "cart.Cart", "by": "select"])
        // Every PostgreSQL process stops (SIGSTOP): its socket stays open, nothing answers.
        try pg.signal(SIGSTOP)
        defer { try? pg.signal(SIGCONT) }
        // The commit waits at most the lease (1 s); then the navigation's client is disconnected
        // (nothing was acknowledged) and changes are answered `unavailable`.
        try c.send("navigate", ["to": "shop.Home", "by": "select"], id: 7)
        #expect(try c.waitForClose(timeout: 10))
        try waitUntil(timeout: 10, "unavailable while PostgreSQL hangs") {
            let e = try a.client().callError("navigate", ["to": "shop.Home", "by": "select"], timeout: 5)
            return e["data"]?["kind"]?.stringValue == "unavailable"
        }
        try pg.signal(SIGCONT)
        // Back: the session is read again and changes are accepted.
        var version = 0
        try waitUntil(timeout: 20, "changes accepted again") {
            guard let r = try? a.client().call("navigate", ["to": "shop.Home", "by": "select"], timeout: 5) else { return false }
            version = r["version"]?.intValue ?? 0
            return true
        }
        // Version 2 was never acknowledged; whether PostgreSQL stored it or not, the next commit
        // continues from what it holds.
        #expect(version == 2 || version == 3)
        #expect(a.stderr.contains("did not answer within"))
    }

    @Test func postgresRestartedUnderLoadIsReportedThenRecoveredFrom() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        try a.client().call("session.open", ["name": "quiet"])
        let stop = Flag()
        let results = Results()
        let t = Thread { results.record("main", driveSession("main", sockets: [a.socketPath], start: 0, until: stop, results: results)) }
        t.start()
        try waitUntil(timeout: 20) { results.acknowledged >= 30 }
        pg.stop()
        // Changes are refused with `unavailable`, reads are still served.
        let c = try a.client()
        try waitUntil(timeout: 10) {
            let e = try c.callError("navigate", ["to": "cart.Cart", "by": "select"])
            return e["data"]?["kind"]?.stringValue == "unavailable"
        }
        // A session whose last commit was stored is still read (the one whose commit failed when
        // PostgreSQL went away is read again from it once it is back).
        #expect(try c.call("tree", ["session": "quiet"])["session"]?.stringValue == "quiet")
        let during = results.acknowledged
        try pg.start()
        // navd reconnects by itself and the load goes on.
        try waitUntil(timeout: 20) { results.acknowledged >= during + 30 }
        stop.set()
        while !t.isFinished { usleep(10_000) }
        let acked = results.versions("main")
        #expect(acked == Array(1...acked.count), "acknowledged versions are not 1…\(acked.count)")
        #expect(try a.client().call("tree")["version"]?.intValue == acked.count)
        #expect(results.sawUnavailable)
        #expect(a.stderr.contains("connected to PostgreSQL again"))
    }
}
