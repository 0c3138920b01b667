import Foundation
import JSON
import NavClient
import NavTesting
import Testing

/// The coordinator tree over the socket, with several clients at once, on the embedded example.
@Suite struct NavigationTests {
    /// Brings a mirror up to `version` from the client's stackChanged notifications.
    func follow(_ c: TestClient, _ mirror: inout TreeMirror, to version: Int) throws {
        while mirror.version < version {
            let n = try c.notification("stackChanged")
            try mirror.apply(n["params"] ?? .null)
        }
    }

    /// A route's name given as `to` is refused with the way to give it (`route`), not with a guess
    /// at a coordinator of a similar name.
    @Test func aRouteNameGivenAsToSaysToGiveItAsRoute() throws {
        let d = try Daemon()
        let c = try d.client()
        let e = try c.callError("navigate", ["to": "showProduct", "with": ["id": "p1"]])
        #expect(e["data"]?["kind"] == "unknownTarget" && e["data"]?["to"] == "showProduct", "\(e)")
        #expect(e["message"]?.stringValue?.contains("but a route: give it as \"route\": \"showProduct\"") == true, "\(e)")
        #expect(try c.call("navigate", ["route": "showProduct", "with": ["id": "p1"]])["version"] == 1)
    }

    /// A navigation that names no style shows its target as the graph lets it be shown: a screen
    /// whose `presentations` leave push out is presented (or selected, or shown by root), as a deep
    /// link's entry without `by` is presented; each used to fail with "cannot be shown by push".
    @Test func withoutByATargetThatIsNeverPushedIsShownTheWayItAllows() throws {
        let d = try Daemon(graph: """
            root: {tabs: [Home, Other]}
            coordinators:
              Home: {opens: [Compose, Start]}
              Other: {presentations: [select]}
              Compose: {presentations: [present]}
              Start: {presentations: [root, present]}
            links:
              "/compose": [Home, Compose]
            """)
        let c = try d.client()
        _ = try c.call("subscribe")
        let presented = try c.call("navigate", ["to": "Compose"])
        #expect(try c.notification("stackChanged")["params"]?["changes"]?.arrayValue?.first?["op"] == "present", "\(presented)")
        try c.call("dismiss")
        _ = try c.notification("stackChanged")
        #expect(try c.call("navigate", ["to": "Other"])["visible"]?.arrayValue?.count == 3)
        #expect(try c.notification("stackChanged")["params"]?["changes"]?.arrayValue?.first?["op"] == "select")
        #expect(try c.call("navigate", ["to": "Home", "by": "select"])["version"] == 4)
        _ = try c.notification("stackChanged")
        _ = try c.call("navigate", ["to": "Start"])
        #expect(try c.notification("stackChanged")["params"]?["changes"]?.arrayValue?.first?["op"] == "present", "present comes before root")
        // A deep link's entry is presented too, and `navd check` accepts the link.
        #expect(try c.call("open", ["url": "/compose"])["version"] == 6)
        #expect(try c.call("tree")["root"]?["children"]?.arrayValue?.first?["children"]?.arrayValue?.first?["presented"]?["children"]?.arrayValue?.first?["coordinator"] == "app.Compose")
        // Asked for by name, a style the target does not allow is still refused.
        #expect(try c.callError("navigate", ["to": "Compose", "by": "push", "from": "n2"])["data"]?["kind"] == "notAllowed")
    }

    /// `dismiss {to}` pops within the stacks of the visible path; a screen in a tab not selected is
    /// not among them, and the error says which node it is and how to reach it.
    @Test func dismissToAScreenInATabNotSelectedSaysHowToReachIt() throws {
        let d = try Daemon()
        let c = try d.client()
        let product = try #require(c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"]])["node"]?.stringValue)
        try c.call("navigate", ["to": "cart.Cart", "by": "select"])
        let e = try c.callError("dismiss", ["to": "shop.Product"])
        #expect(e["data"]?["kind"] == "unknownNode", "\(e)")
        #expect(e["message"]?.stringValue?.contains("`\(product)` (shop.Product) is off it, in a tab not selected: dismiss {node: \"\(product)\"}") == true, "\(e)")
        #expect(try c.call("dismiss", ["node": .string(product)])["removed"] == [.string(product)])
    }

    @Test func threeClientsOneWriterTwoMirrorsAgreeWithTree() throws {
        let d = try Daemon()
        let writer = try d.client()
        let subs = [try d.client(), try d.client()]
        var mirrors = try subs.map { TreeMirror(snapshot: try $0.call("subscribe")) }
        try writer.call("context.set", ["facts": ["loggedIn": true, "cart.items": 1]])
        var rng = SplitMix64(seed: 42)  // seeded: the same sequence every run
        let targets: [(String, JSONValue)] = [
            ("shop.Product", ["id": "p1"]), ("shop.Reviews", [:]), ("shop.Search", [:]), ("shop.Category", ["slug": "shoes"]),
            ("account.Orders", [:]), ("account.Profile", [:]), ("cart.Cart", [:]), ("account.Account", [:]), ("shop.Home", [:]),
        ]
        let styles: [JSONValue] = ["push", "present", "replace", "select", .null]
        var ok = 0
        for _ in 0..<300 {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0:
                _ = try? writer.call("dismiss")
            default:
                let (to, with) = targets.randomElement(using: &rng)!
                var p: JSONObject = ["to": .string(to), "with": with]
                let by = styles.randomElement(using: &rng)!
                if by != .null { p["by"] = by }
                if (try? writer.call("navigate", .object(p))) != nil { ok += 1 }
            }
        }
        #expect(ok > 10, "enough navigations succeeded to mean something (\(ok))")
        let tree = try writer.call("tree")
        let version = try #require(tree["version"]?.intValue)
        for i in subs.indices {
            try follow(subs[i], &mirrors[i], to: version)
            #expect(mirrors[i].root == tree["root"], "subscriber \(i) diverged")
        }
    }

    @Test func aSubscribedWriterGetsStackChangedBeforeItsReply() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.call("subscribe")
        let id = try c.send("navigate", ["to": "shop.Product", "with": ["id": "p1"]])
        let first = try #require(try c.readMessage())
        #expect(first["method"] == "stackChanged")
        #expect(first["params"]?["version"] == 1)
        #expect(first["params"]?["changes"]?.arrayValue?.first?["op"] == "push")
        let second = try #require(try c.readMessage())
        #expect(second["id"] == id && second["result"]?["version"] == 1)
    }

    @Test func ifVersionConflictsBetweenTwoWriters() throws {
        let d = try Daemon()
        let a = try d.client(), b = try d.client()
        let v = try #require(try a.call("tree")["version"]?.intValue)
        try a.call("navigate", ["to": "shop.Product", "with": ["id": "a"], "ifVersion": .int(v)])
        let e = try b.callError("navigate", ["to": "shop.Product", "with": ["id": "b"], "ifVersion": .int(v)])
        #expect(e["code"] == -32007 && e["data"]?["kind"] == "conflict")
        #expect(e["data"]?["version"] == .int(v + 1))
        let said = e["message"]?.stringValue ?? ""
        #expect(said.contains("fetch `tree`"))
    }

    @Test func navigatingFromARemovedNodeConflictsOrFailsPrecisely() throws {
        let d = try Daemon()
        let a = try d.client()
        let product = try a.call("navigate", ["to": "shop.Product", "with": ["id": "a"]])["node"]!
        try a.call("dismiss", ["node": product])
        let e = try a.callError("navigate", ["to": "shop.Reviews", "from": product])
        #expect(e["data"]?["kind"] == "unknownNode")
    }

    @Test func keyMakesNavigationIdempotent() throws {
        let d = try Daemon()
        let a = try d.client(), b = try d.client()
        let r1 = try a.call("navigate", ["to": "shop.Product", "with": ["id": "a"], "key": "tap-1"])
        let r2 = try b.call("navigate", ["to": "shop.Product", "with": ["id": "a"], "key": "tap-1"])
        #expect(r1 == r2)
        #expect(try a.call("tree")["version"] == 1, "the second tap changed nothing")
        // Another session has its own keys.
        try a.call("session.open", ["name": "other"])
        #expect(try a.call("navigate", ["session": "other", "to": "shop.Product", "with": ["id": "a"], "key": "tap-1"])["version"] == 1)
        // A repeated key is answered before its target is looked at: the first reply, even for a name that does not exist.
        #expect(try b.call("navigate", ["to": "shop.Nowhere", "key": "tap-1"]) == r1)
        // A refused navigation changed nothing and leaves nothing: its key's retry runs again.
        let failed = try a.callError("navigate", ["to": "shop.Nowhere", "key": "tap-2"])
        #expect(failed["data"]?["kind"] == "unknownTarget")
        #expect(try b.call("navigate", ["to": "shop.Product", "with": ["id": "b"], "key": "tap-2"])["version"] == 2)
        #expect(try a.call("navigate", ["to": "shop.Nowhere", "key": "tap-2"])["version"] == 2, "then the key answers the navigation that committed")
        // An empty key is a client's unset variable, not an intent: refused, nothing remembered.
        let empty = try a.callError("navigate", ["to": "shop.Product", "with": ["id": "c"], "key": ""])
        #expect(empty["data"]?["kind"] == "invalidParams" && empty["data"]?["param"] == "key", "\(empty)")
        #expect(try a.call("tree")["version"] == 2)
    }

    /// A dry run of a navigation whose key was used answers what the navigation would do: nothing,
    /// but the first one's reply (`replays`), or wait for the pending one (`joins`).
    @Test func aDryRunWithAUsedKeyAnswersTheReplay() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Form, Waits]}
              Form: {}
              Waits: {preconditions: [asked]}
            preconditions:
              asked: {provider: asked}
            """)
        let c = try d.client(), provider = try d.client()
        let first = try c.call("navigate", ["to": "app.Form", "key": "tap-1"])
        // From Form, which opens nothing: without the key this dry run would be refused.
        let dry = try c.call("navigate", ["to": "app.Form", "key": "tap-1", "dryRun": true])
        #expect(dry["replays"] == first, "\(dry)")
        #expect(dry["node"] == .null && dry["changes"] == [] && dry["version"] == 1, "\(dry)")
        #expect(try c.call("navigate", ["to": "app.Form", "key": "tap-1"]) == dry["replays"])
        #expect(try c.callError("navigate", ["to": "app.Form", "key": "tap-2", "dryRun": true])["data"]?["kind"] == "notAllowed")
        // A pending navigation under a key: the dry run says which one it would wait for.
        try provider.call("provide", ["preconditions": ["app.asked"]])
        try c.call("dismiss")
        let id = try c.send("navigate", ["to": "app.Waits", "key": "tap-3"])
        let ask = try provider.serverRequest("precondition.evaluate")
        let joins = try c.call("navigate", ["to": "app.Waits", "key": "tap-3", "dryRun": true])
        #expect(joins["joins"] == ask["params"]?["navigation"]?["id"] && joins["joins"] != nil, "\(joins) \(ask)")
        try provider.respond(to: ask, result: ["passed": true])
        #expect(try c.reply(to: id)["result"]?["version"] == 3)
    }

    @Test func dryRunAnswersWithoutCommitting() throws {
        let d = try Daemon()
        let c = try d.client()
        let r = try c.call("navigate", ["to": "shop.Product", "with": ["id": "a"], "dryRun": true])
        #expect(r["dryRun"] == true && r["node"]?["coordinator"] == "shop.Product")
        #expect(r["visible"]?.arrayValue?.count == 3)
        #expect(try c.call("tree")["version"] == 0)
        let product = try c.call("navigate", ["to": "shop.Product", "with": ["id": "a"]])["node"]!
        let checkout = try c.call("navigate", ["to": "cart.Checkout", "by": "present", "dryRun": true, "from": product])
        #expect(checkout["preconditions"] == ["account.loggedIn", "cart.cartNotEmpty", "cart.inStock"])
        let e = try c.callError("navigate", ["to": "shop.Product", "dryRun": true])
        #expect(e["data"]?["kind"] == "invalidSetup" && e["data"]?["pointer"] == "/id")
    }

    @Test func sessionsAreIndependent() throws {
        let d = try Daemon()
        let c = try d.client()
        let opened = try c.call("session.open", ["name": "kiosk"])
        #expect(opened["version"] == 0 && opened["session"] == "kiosk")
        try c.call("navigate", ["session": "kiosk", "to": "shop.Product", "with": ["id": "k"]])
        #expect(try c.call("tree")["version"] == 0)
        #expect(try c.call("tree", ["session": "kiosk"])["version"] == 1)
        #expect(try c.call("session.list")["sessions"] == ["kiosk", "main"])
        #expect(try c.call("session.close", ["name": "kiosk"])["ok"] == true)
        let e = try c.callError("tree", ["session": "kiosk"])
        #expect(e["code"] == -32001 && (e["message"]?.stringValue ?? "").contains("session.open"))
        #expect(try c.callError("session.close", ["name": "main"])["data"]?["kind"] == "notAllowed")
        let empty = try c.callError("session.open", ["name": ""])
        #expect(empty["code"] == -32602 && (empty["message"]?.stringValue ?? "").contains("is empty"), "\(empty)")
    }

    /// `graph.export` draws the graph navd serves, as `navd graph` draws the directory, and the
    /// reloaded one after `graph.reload`; as JSON it is what `navd graph --format json` prints; an
    /// unknown format is refused, naming the formats.
    @Test func graphExportIsTheLiveGraph() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try "root: {stack: Home}\ncoordinators:\n  Home: {opens: [First]}\n  First: {}\n".write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--graph", dir.path])
        let c = try d.client()
        let before = try c.call("graph.export")
        let drawn = try runCommand(Repo.binary("navd"), ["graph", dir.path, "--format", "dot"])
        #expect(before["format"] == "dot" && before["graph"]?.stringValue == drawn.stdout, "\(before)")
        try "root: {stack: Home}\ncoordinators:\n  Home: {opens: [Second]}\n  Second: {}\n".write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        #expect(try c.call("graph.reload", ["force": true])["ok"] == true)
        let after = try c.call("graph.export")["graph"]?.stringValue ?? ""
        #expect(after.contains("app.Second") && !after.contains("app.First"), "\(after)")
        let json = try c.call("graph.export", ["format": "json"])
        let printed = try runCommand(Repo.binary("navd"), ["graph", dir.path, "--format", "json"])
        let parsed = try JSONParser().parse(printed.stdout)
        #expect(json["format"] == "json" && json["graph"] == parsed, "\(json)")
        #expect(json["graph"]?["coordinators"]?["app.Home"]?["opens"] == ["app.Second"], "\(json)")
        let described = try c.call("graph.describe")
        #expect(json["graph"] == described)
        let svg = try c.callError("graph.export", ["format": "svg"])
        #expect(svg["data"]?["param"] == "format" && (svg["message"]?.stringValue ?? "").contains("\"dot\" or \"json\""), "\(svg)")
    }

    /// `stats.methods`: each method's answers, errors and latency histogram (cumulative by upper
    /// bound, Prometheus's shape), counted as answers leave, pipelined or waiting on a precondition.
    @Test func statsCountRequestsErrorsAndLatencyPerMethod() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Slow, Plain]}
              Plain: {opens: [Slow]}
              Slow: {preconditions: [wait]}
            preconditions:
              wait: {command: [sh, -c, "cat >/dev/null; sleep 0.3"], timeout: 5s}
            """.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--graph", dir.path])
        let c = try d.client()
        // One read: five pings, a notification, two navigations (one refused), an unknown method.
        var lines = (1...5).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"ping"}"# }
        lines.append(#"{"jsonrpc":"2.0","method":"ping"}"#)
        lines.append(#"{"jsonrpc":"2.0","id":6,"method":"navigate","params":{"to":"app.Plain"}}"#)
        lines.append(#"{"jsonrpc":"2.0","id":7,"method":"navigate","params":{"to":"app.Nowhere"}}"#)
        lines.append(#"{"jsonrpc":"2.0","id":8,"method":"noSuchMethod"}"#)
        try c.sendRaw(lines.joined(separator: "\n") + "\n")
        for _ in 0..<8 { _ = try #require(try c.readLine(timeout: 10)) }
        try c.call("navigate", ["to": "app.Slow"])  // answered after its 0.3 s check
        let methods = try #require(try c.call("stats")["methods"])
        #expect(methods["noSuchMethod"] == nil, "a made-up name is not kept")
        #expect(methods["stats"] == nil, "the stats request itself is answered after it is read")
        let ping = try #require(methods["ping"]), navigate = try #require(methods["navigate"])
        #expect(ping["requests"] == 5 && ping["errors"] == 0, "\(ping)")
        #expect(navigate["requests"] == 3 && navigate["errors"] == 1, "\(navigate)")
        for m in [ping, navigate] {
            let buckets = m["latency"]?["buckets"]?.arrayValue ?? []
            let counts = buckets.compactMap { $0["count"]?.intValue }
            #expect(buckets.count == 22 && counts == counts.sorted(), "cumulative: \(buckets)")
            #expect(buckets.last?["le"] == "+Inf" && counts.last == m["requests"]?.intValue && m["latency"]?["count"] == m["requests"])
        }
        // The slow navigation took at least its 0.3 s check: above the 0.25 s bound, within 0.5 s's
        // unless the machine is very slow; the two answered at once are at or below it.
        let ladder = navigate["latency"]?["buckets"]?.arrayValue ?? []
        let at025 = try #require(ladder.first { $0["le"]?.doubleValue == 0.25 })
        #expect(at025["count"] == 2, "\(ladder)")
        #expect((navigate["latency"]?["sumSeconds"]?.doubleValue ?? 0) >= 0.3)
        let second = try #require(try c.call("stats")["methods"]?["stats"])
        #expect(second["requests"] == 1)
    }

    @Test func statsCountSubscriptionsAndProvidedNames() throws {
        let d = try Daemon()
        let a = try d.client(), b = try d.client(), provider = try d.client()
        func stat(_ name: String) throws -> Int { try a.call("stats")[name]?.intValue ?? -1 }
        #expect(try stat("subscriptions") == 0 && stat("provided") == 0)
        try a.call("session.open", ["name": "other"])
        try a.call("subscribe")
        try a.call("subscribe")  // again: still one subscription
        try a.call("subscribe", ["session": "other"])
        try b.call("subscribe")
        #expect(try stat("subscriptions") == 3)
        try a.call("unsubscribe")
        #expect(try stat("subscriptions") == 2)
        try provider.call("provide", ["preconditions": ["cart.paymentAuthorized", "account.Login"]])
        #expect(try stat("provided") == 2)
        b.close()
        provider.close()
        // Until navd has seen both close (their ends are read on the loop's next turns).
        let deadline = Date().addingTimeInterval(10)
        while try (stat("subscriptions"), stat("provided")) != (1, 0) && Date() < deadline { usleep(10_000) }
        #expect(try stat("subscriptions") == 1 && stat("provided") == 0)
        // Closing a session drops its subscribers from the count (kept as they come and go).
        try a.call("session.close", ["name": "other"])
        #expect(try stat("subscriptions") == 0)
    }

    @Test func subscribersOfAClosedSessionAreTold() throws {
        let d = try Daemon()
        let owner = try d.client(), watcher = try d.client(), compact = try d.client()
        try owner.call("session.open", ["name": "kiosk"])
        try watcher.call("subscribe", ["session": "kiosk"])
        try compact.call("subscribe", ["session": "kiosk", "notifications": "compact"])
        try owner.call("navigate", ["session": "kiosk", "to": "shop.Product", "with": ["id": "k"]])
        try owner.call("session.close", ["name": "kiosk"])
        for c in [watcher, compact] {
            let closed = try c.notification("sessionClosed")
            #expect(closed["params"] == ["session": "kiosk", "version": 1], "\(closed)")
            c.notifications.removeAll()  // the stackChanged of version 1, read while waiting
        }
        // The subscription ended with the session: the session opened again under the name starts
        // at version 0, and its changes reach no one who has not subscribed again.
        #expect(try owner.call("stats")["subscriptions"] == 0)
        try owner.call("session.open", ["name": "kiosk"])
        try owner.call("navigate", ["session": "kiosk", "to": "shop.Product", "with": ["id": "again"]])
        try watcher.call("ping")
        #expect(!watcher.notifications.contains { $0["method"] == "stackChanged" }, "\(watcher.notifications)")
    }

    @Test func contextFacts() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.call("context.set", ["facts": ["loggedIn": true, "cart.items": 3]])
        #expect(try c.call("context.get")["facts"] == ["cart.items": 3, "loggedIn": true])
        try c.call("context.set", ["facts": ["loggedIn": .null]])
        #expect(try c.call("context.get", ["facts": ["loggedIn", "cart.items"]])["facts"] == ["cart.items": 3])
        // An empty name is refused, and the request sets nothing.
        let empty = try c.callError("context.set", ["facts": ["": 1, "other": 2]])
        #expect(empty["data"]?["kind"] == "invalidParams" && empty["data"]?["param"] == "facts", "\(empty)")
        #expect(try c.call("context.get")["facts"] == ["cart.items": 3])
    }

    @Test func badParamsArePrecise() throws {
        let d = try Daemon()
        let c = try d.client()
        let e1 = try c.callError("navigate", ["to": 5])
        #expect(e1["code"] == -32602 && e1["data"]?["param"] == "to")
        let e2 = try c.callError("navigate", ["to": "shop.Product", "bogus": 1])
        #expect(e2["data"]?["param"] == "bogus")
        let e3 = try c.callError("navigate", ["to": "shop.Product", "by": "slide", "with": ["id": "a"]])
        let said = e3["message"]?.stringValue ?? ""
        #expect(said.contains("push, present, replace, root or select"))
        let e4 = try c.callError("flowComplete", ["flow": "n2"])
        #expect(e4["code"] == -32602)
    }

    @Test func paramsReadAsGivenRepeatedAndAllAtOnce() throws {
        let d = try Daemon()
        let c = try d.client()
        // A repeated name counts once, with its last value (as JSON parsers commonly read it).
        try c.sendRaw(#"{"jsonrpc":"2.0","id":1,"method":"navigate","params":{"to":"shop.Nowhere","with":{"id":"a"},"to":"shop.Product"}}"# + "\n")
        let r = try c.reply(to: 1)
        #expect(r["result"]?["version"] == 1, "\(r)")
        try c.sendRaw(#"{"jsonrpc":"2.0","id":2,"method":"navigate","params":{"to":"shop.Product","with":{"id":"b"},"to":5}}"# + "\n")
        #expect(try c.reply(to: 2)["error"]?["data"]?["param"] == "to")
        // Every param of navigate at once (more than are kept in place): each is still read.
        let all: JSONValue = ["session": "main", "to": "shop.Reviews", "route": .null, "by": "push", "with": ["productId": "p1"],
                              "from": .null, "ifVersion": 1, "key": "k-all", "dryRun": true]
        let dry = try c.call("navigate", all)
        #expect(dry["dryRun"] == true && dry["version"] == 1 && dry["node"]?["coordinator"] == "shop.Reviews", "\(dry)")
        let stale = try c.callError("navigate", ["session": "main", "to": "shop.Reviews", "route": .null, "by": "push",
                                                  "with": ["productId": "p1"], "from": .null, "ifVersion": 0, "key": "k-stale", "dryRun": false])
        #expect(stale["data"]?["kind"] == "conflict", "\(stale)")
        #expect(try c.call("tree")["version"] == 1)
    }

    @Test func accessDeniedAndGrantedWithPolicyAndToken() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try "uids: {}\ntokens: {\"s3cret\": [staff]}\n".write(toFile: dir.file("policy.yaml"), atomically: true, encoding: .utf8)
        chmod(dir.file("policy.yaml"), 0o600)  // it holds tokens
        let d = try Daemon(arguments: ["--policy", dir.file("policy.yaml")])
        let c = try d.client()
        try c.call("navigate", ["to": "account.Account", "by": "select"])
        let e = try c.callError("navigate", ["to": "account.Admin"])
        #expect(e["code"] == -32004 && e["data"]?["kind"] == "accessDenied")
        let said = e["message"]?.stringValue ?? ""
        #expect(said.contains("staff"))
        let wrong = try c.callError("hello", ["token": "wrong"])
        #expect(wrong["code"] == -32004 && (wrong["message"]?.stringValue ?? "").contains("the policy file \(dir.file("policy.yaml")) grants it no role"), "\(wrong)")
        #expect(try c.call("hello", ["token": "s3cret"])["roles"] == ["admin", "staff"])
        #expect(try c.call("navigate", ["to": "account.Admin"])["node"] != nil)
        // Without a policy file, the refusal says so and how to give one.
        let bare = try Daemon()
        let none = try bare.client().callError("hello", ["token": "s3cret"])
        #expect(none["code"] == -32004 && (none["message"]?.stringValue ?? "").contains("navd runs without a policy file"), "\(none)")
    }

    /// A flow is shown with its start step: the step's access applies to the navigation (by
    /// navigate, a deep link, a reset), and its preconditions run after the flow's.
    @Test func aFlowsStartStepKeepsItsAccessAndPreconditions() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try "uids: {}\ntokens: {\"s3cret\": [staff]}\n".write(toFile: dir.file("policy.yaml"), atomically: true, encoding: .utf8)
        chmod(dir.file("policy.yaml"), 0o600)  // it holds tokens
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Staffed, Guarded]}
              Staffed: {flow: {start: Desk, steps: [Desk]}}
              Desk: {access: [staff]}
              Guarded: {flow: {start: Gate, steps: [Gate]}, preconditions: [open]}
              Gate: {preconditions: [ready]}
            preconditions:
              open: {check: {fact: open, equals: true}}
              ready: {check: {fact: ready, equals: true}}
            links:
              "/desk": [Home, {to: Staffed}]
            """, arguments: ["--policy", dir.file("policy.yaml")])
        let c = try d.client()
        for (method, params) in [("navigate", ["to": "Staffed"] as JSONValue), ("open", ["url": "/desk"]), ("reset", ["to": ["Home", "Staffed"]])] {
            let e = try c.callError(method, params)
            #expect(e["data"]?["kind"] == "accessDenied" && e["data"]?["to"] == "app.Desk", "\(method): \(e)")
        }
        #expect(try c.call("tree")["version"] == 0, "nothing shown")
        #expect(try c.call("navigate", ["to": "Guarded", "dryRun": true])["preconditions"] == ["app.open", "app.ready"])
        // Each failure names the coordinator that declares the precondition: the flow, or its start step.
        let flows = try c.callError("navigate", ["to": "Guarded"])
        let flowsMessage = flows["message"]?.stringValue ?? ""
        #expect(flowsMessage.hasPrefix("precondition `app.open` of `app.Guarded` failed"), "\(flows)")
        try c.call("context.set", ["facts": ["open": true]])
        let e = try c.callError("navigate", ["to": "Guarded"])
        #expect(e["data"]?["kind"] == "preconditionFailed" && e["data"]?["precondition"] == "app.ready", "\(e)")
        let stepsMessage = e["message"]?.stringValue ?? ""
        #expect(stepsMessage.hasPrefix("precondition `app.ready` of `app.Gate` (the start of flow `app.Guarded`) failed"), "\(e)")
        try c.call("context.set", ["facts": ["ready": true]])
        #expect(try c.call("navigate", ["to": "Guarded"])["version"] == 1)
        try c.call("hello", ["token": "s3cret"])
        #expect(try c.call("navigate", ["to": "Staffed", "from": "n1"])["version"] == 2)
    }

    @Test func uidGrantsRoles() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try "uids: {\"\(getuid())\": [staff]}\n".write(toFile: dir.file("policy.yaml"), atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--policy", dir.file("policy.yaml")])
        let c = try d.client()
        #expect(try c.call("hello")["roles"] == ["admin", "staff"])
        try c.call("navigate", ["to": "account.Account", "by": "select"])
        #expect(try c.call("navigate", ["to": "account.Admin"])["node"] != nil)
    }

    @Test func walkTheShopWithSocatOnly() throws {
        let d = try Daemon()
        let sock = d.socketPath
        func rpc(_ lines: [String], wait: Double = 1) throws -> [JSONValue] {
            let out = try socat(lines.joined(separator: "\n") + "\n", socket: sock, wait: wait)
            return try out.split(separator: "\n").map { try JSONParser(maxDepth: 64).parse(String($0)) }
        }
        _ = try rpc([#"{"jsonrpc":"2.0","id":1,"method":"context.set","params":{"facts":{"loggedIn":true,"cart.items":2}}}"#])
        let product = try rpc([#"{"jsonrpc":"2.0","id":2,"method":"navigate","params":{"to":"shop.Product","with":{"id":"p42"}}}"#])[0]
        let productNode = try #require(product["result"]?["node"]?.stringValue)
        let checkout = try rpc([#"{"jsonrpc":"2.0","id":3,"method":"navigate","params":{"to":"cart.Checkout","by":"present","from":"\#(productNode)"}}"#], wait: 3)[0]
        let flow = try #require(checkout["result"]?["node"]?.stringValue, "\(checkout)")
        let out = try rpc([
            #"{"jsonrpc":"2.0","id":4,"method":"subscribe"}"#,
            #"{"jsonrpc":"2.0","id":5,"method":"flowComplete","params":{"flow":"\#(flow)","result":{"orderId":"ord-7","total":12.5}}}"#,
        ])
        let completed = try #require(out.first { $0["method"] == "flowCompleted" })
        #expect(completed["params"]?["status"] == "completed")
        #expect(completed["params"]?["result"]?["orderId"] == "ord-7")
        #expect(completed["params"]?["coordinator"] == "cart.Checkout")
        #expect(out.contains { $0["id"] == 5 && $0["result"]?["version"] != nil })
    }

    /// `flowCompleted` goes to subscribers and to the client that started the flow; selecting a tab
    /// whose first node is a flow starts nothing.
    @Test func onlyTheClientThatStartedAFlowHearsItEndWithoutSubscribing() throws {
        let d = try Daemon(graph: """
            root: {tabs: [Setup, Main]}
            coordinators:
              Setup: {flow: {start: A, steps: [A, B]}}
              A: {opens: [B]}
              B: {}
              Main: {opens: [Setup]}
            """)
        let selector = try d.client(), starter = try d.client()
        let tabFlow = try #require(try selector.call("navigate", ["to": "app.Setup", "by": "select"])["node"]?.stringValue)
        try selector.call("navigate", ["to": "app.Main", "by": "select"])
        let started = try #require(try starter.call("navigate", ["to": "app.Setup"])["node"]?.stringValue)
        #expect(started != tabFlow)
        // The tab's flow cannot be abandoned by dismissing its first step; the refusal says why.
        try selector.call("navigate", ["to": "app.Setup", "by": "select"])
        let refused = try selector.callError("dismiss")
        #expect(refused["data"]?["kind"] == "unknownNode" && (refused["message"]?.stringValue ?? "").contains("flow `\(tabFlow)` (app.Setup) is the first node of a tab"), "\(refused)")
        try selector.call("navigate", ["to": "app.Main", "by": "select"])
        // A root navigation ends both flows: the tab's and the one `starter` started.
        try selector.call("navigate", ["to": "app.Main", "by": "root"])
        try selector.call("ping")
        try starter.call("ping")
        #expect(selector.notifications.isEmpty, "\(selector.notifications)")
        let heard = starter.notifications.filter { $0["method"] == "flowCompleted" }
        #expect(heard.count == 1 && heard.first?["params"]?["flow"] == .string(started) && heard.first?["params"]?["status"] == "cancelled", "\(heard)")
    }
}
