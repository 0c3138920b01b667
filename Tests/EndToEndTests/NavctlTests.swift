import Foundation
import JSON
import NavTesting
import Testing

/// navctl against a live navd, as a user runs it.
@Suite struct NavctlTests {
    func navctl(_ d: Daemon, _ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = d.socketPath
        return try runCommand(Repo.binary("navctl"), args, environment: env)
    }

    func json(_ s: String) throws -> JSONValue { try JSONParser(maxDepth: 256).parse(s) }

    /// ESC, BEL and CSI sequences in params, facts and results reach the terminal as text
    /// (`\u{1B}`), never as sequences; --json keeps them JSON-escaped. So does a right-to-left
    /// override (U+202E), which a terminal that lays out bidirectional text obeys: `\u{202E}gnp.exe`
    /// would show as `exe.png`.
    @Test func controlCharactersFromNavdAreShownNotObeyed() throws {
        let d = try Daemon()
        let evil = "\u{1b}]0;pwned\u{07}\u{1b}[2J\u{9b}31m\u{202E}gnp.exe"
        let c = try d.client()
        try c.call("navigate", ["to": "shop.Product", "with": ["id": .string(evil)]])
        try c.call("context.set", ["facts": ["note": .string(evil)]])
        func raw(_ text: String) -> Bool {
            text.unicodeScalars.contains(where: { (u: Unicode.Scalar) -> Bool in u.value == 0x1B || u.value == 0x07 || u.value == 0x9B || u.value == 0x202E })
        }
        // Params and facts are shown as JSON, which escapes them.
        for args in [["tree"], ["set", "other=1"], ["stats"]] {
            let r = try navctl(d, args)
            let out: String = r.stdout
            #expect(r.status == 0, "\(args) \(r.stderr)")
            #expect(!raw(out), "\(args): \(out.debugDescription)")
            if args != ["stats"] {
                let shown = out.contains("\\u001b]0;pwned\\u0007") && out.contains("\\u{202E}gnp.exe")
                #expect(shown, "\(args): \(out)")
            }
        }
        // --json: still JSON (the same string read back), with C1 controls (CSI as U+009B) escaped too.
        for args in [["tree", "--json"], ["set", "other=2", "--json"], ["navigate", "shop.Nope\u{9b}2J", "--json"]] {
            let r = try navctl(d, args)
            #expect(!raw(r.stdout), "\(args): \(r.stdout.debugDescription)")
            #expect(r.stdout.contains("\\u009B") && (args[1] != "--json" || r.stdout.contains("\\u202Egnp.exe")), "\(args): \(r.stdout)")
        }
        let tree = try json(try navctl(d, ["tree", "--json"]).stdout)
        #expect(tree["root"].map(JSONWriter.string)?.contains("\\u001b]0;pwned") == true)
        // A message of navd's that quotes what the client sent shows it as \u{1B}, not as a sequence.
        let refused = try navctl(d, ["navigate", "shop.Nope\u{1b}[31m\u{07}"])
        let err: String = refused.stderr
        #expect(refused.status == 1 && !raw(err) && err.contains("\\u{1B}[31m\\u{7}"), "\(err.debugDescription)")
    }

    /// What issue 49 added, through navctl: `update --push` (the tree shows the earlier params,
    /// `dismiss` restores them), `open --push --pop-up-to`, `navigate --by select --merge`.
    @Test func pushedParamsPopUpToLinksAndMergedSelects() throws {
        let d = try Daemon()
        var r = try navctl(d, ["navigate", "shop.Product", "--with", "id=p1"])
        let firstField: Substring = try #require(r.stdout.split(separator: ",").first)
        let node = String(try #require(firstField.split(separator: " ").last))
        r = try navctl(d, ["update", node, "id=p2", "--push"])
        #expect(r.status == 0, "\(r)")
        r = try navctl(d, ["tree"])
        #expect(r.stdout.contains("(earlier params: 1, back restores {\"id\":\"p1\"})"), "\(r.stdout)")
        r = try navctl(d, ["dismiss", "--json"])
        #expect(try json(r.stdout)["removed"] == [], "\(r)")
        #expect(try navctl(d, ["tree"]).stdout.contains("shop.Product [\(node)] {\"id\":\"p1\"}"))
        r = try navctl(d, ["navigate", "shop.Product", "--with", "id=p3"])
        r = try navctl(d, ["open", "/product/p9", "--push", "--pop-up-to", "shop.Home"])
        #expect(r.status == 0, "\(r)")
        let stack = try json(try navctl(d, ["tree", "--json"]).stdout)["root"]?["children"]?.arrayValue?[0]["children"]?.arrayValue ?? []
        #expect(stack.compactMap { $0["params"]?["id"]?.stringValue } == ["p9"] && stack.count == 2, "\(stack)")
    }

    /// `navctl complete FLOW` with no result, error or cancel completes the flow with the result {}.
    @Test func completeWithNothingMoreCompletesWithAnEmptyResult() throws {
        let d = try Daemon(graph: "root: {stack: Home}\ncoordinators:\n  Home: {opens: [W]}\n  W: {flow: {steps: [S]}}\n  S: {}\n")
        #expect(try navctl(d, ["navigate", "app.W"]).status == 0)
        let watcher = try d.client()
        _ = try watcher.call("subscribe")
        let r = try navctl(d, ["complete", "n3"])
        #expect(r.status == 0 && r.stdout.contains("version 2"), "\(r)")
        let done = try watcher.notification("flowCompleted")
        #expect(done["params"]?["status"] == "completed" && done["params"]?["result"] == [:], "\(done)")
    }

    /// `navctl update label=home`: a field where the node id goes updates the screen the user sees,
    /// its value typed by that screen's setup (it used to look for a node named `label=home`).
    @Test func updateWithoutANodeUpdatesTheVisibleScreen() throws {
        let d = try Daemon(graph: "root: {stack: Home}\ncoordinators:\n  Home: {opens: [P]}\n  P: {setup: {type: object, properties: {n: {type: integer}, label: {type: string}}}}\n")
        #expect(try navctl(d, ["navigate", "app.P", "--with", "n=1"]).status == 0)
        let r = try navctl(d, ["update", "label=home", "n=2"])
        #expect(r.status == 0 && r.stdout.contains("node n3") && r.stdout.contains(#""label":"home""#) && r.stdout.contains(#""n":2"#), "\(r)")
        let c = try d.client()
        #expect(try c.call("tree")["root"]?["children"]?.arrayValue?.last?["params"] == ["n": 2, "label": "home"])
    }

    /// A navigation a precondition redirected says where it went, and which precondition sent it.
    @Test func aRedirectedNavigationSaysWhereItWent() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Inbox]}
              Inbox: {preconditions: [signedIn]}
              Login: {presentations: [present]}
            preconditions:
              signedIn: {check: {fact: signedIn, equals: true}, redirect: Login}
            """)
        let r = try navctl(d, ["navigate", "app.Inbox"])
        #expect(r.status == 0 && r.stdout.contains("redirected to app.Login by app.signedIn"), "\(r)")
        #expect(try navctl(d, ["set", "signedIn=true"]).status == 0)
        #expect(try navctl(d, ["dismiss"]).status == 0)
        let plain = try navctl(d, ["navigate", "app.Inbox"])
        #expect(plain.status == 0 && !plain.stdout.contains("redirected"), "\(plain)")
    }

    @Test func everySubcommandHumanAndJSON() throws {
        let d = try Daemon()
        var r = try navctl(d, ["navigate", "shop.Product", "--with", "id=p1"])
        #expect(r.status == 0 && r.stdout.hasPrefix("node n8, version 1"), "\(r)")
        r = try navctl(d, ["navigate", "shop.Reviews", "--json"])
        #expect(try json(r.stdout)["version"] == 2)
        r = try navctl(d, ["tree"])
        #expect(r.stdout.contains("▶     shop.Reviews [n9] {\"productId\":\"p1\"}"), "\(r.stdout)")
        #expect(try json(try navctl(d, ["tree", "--json"]).stdout)["version"] == 2)
        r = try navctl(d, ["dismiss"])
        #expect(r.status == 0 && r.stdout.contains("removed n9"))
        r = try navctl(d, ["set", "loggedIn=true", "cart.items=2"])
        #expect(r.stdout == "cart.items=2\nloggedIn=true\n")
        r = try navctl(d, ["route", "showProduct", "--with", "id=p2", "--json"])
        #expect(try json(r.stdout)["version"] == 4)
        r = try navctl(d, ["open", "/product/p7"])
        #expect(r.status == 0 && r.stdout.contains("version 5"))
        r = try navctl(d, ["navigate", "cart.Checkout", "--by", "present"])
        let flow = try #require(r.stdout.split(separator: " ").dropFirst().first.map { String($0.dropLast()) }, "\(r)")
        r = try navctl(d, ["complete", flow, "orderId=ord-1", "--result", "{}"])
        #expect(r.status == 64 && r.stderr.contains("not both"), "\(r)")
        r = try navctl(d, ["complete", flow, "orderId=ord-1"])
        #expect(r.status == 0, "\(r)")
        // Without a flow: the innermost one on the visible path (a first argument KEY=VALUE is a
        // field of the result); none there says so (exit 1).
        #expect(try navctl(d, ["dismiss"]).status == 0)  // (the flow's then showed account.OrderDetail)
        r = try navctl(d, ["navigate", "cart.Checkout", "--by", "present"])
        let second = try #require(r.stdout.split(separator: " ").dropFirst().first.map { String($0.dropLast()) }, "\(r)")
        r = try navctl(d, ["complete", "orderId=ord-2"])
        #expect(r.status == 0 && r.stdout.hasPrefix("version "), "\(r)")
        #expect(!(try navctl(d, ["tree"]).stdout.contains("[\(second)]")), "the visible flow \(second) completed")
        r = try navctl(d, ["complete", "--cancel"])
        #expect(r.status == 1 && r.stderr.contains("no flow is on the visible path of session `main`; name the flow to complete"), "\(r)")
        #expect(try navctl(d, ["sessions"]).stdout == "main\n")
        #expect(try json(try navctl(d, ["stats", "--json"]).stdout)["commits"]?.intValue ?? 0 >= 7)
        #expect(try navctl(d, ["call", "ping"]).stdout == "\"pong\"\n")
        #expect(try navctl(d, ["call", "session.open", #"{"name":"k"}"#]).status == 0)
        #expect(try navctl(d, ["sessions", "--session", "k"]).stdout == "k\nmain\n")
        // A misspelt command names the likely one and the list, as git does (exit 64, nothing sent).
        r = try navctl(d, ["--json", "navgate", "Home"])
        #expect(r.status == 64 && r.stderr.contains("unknown command `navgate`; did you mean `navigate`?") && r.stderr.contains("tree, watch"), "\(r)")
        r = try navctl(d, ["qqqqqq"])
        #expect(r.status == 64 && !r.stderr.contains("did you mean") && r.stderr.contains("the commands are navigate"), "\(r)")
    }

    @Test func routerSubcommands() throws {
        let d = try Daemon()
        var r = try navctl(d, ["navigate", "shop.Product", "--with", "id=p1"])
        r = try navctl(d, ["link"])
        #expect(r.status == 0 && r.stdout == "/product/p1\n", "\(r)")
        r = try navctl(d, ["navigate", "shop.Product", "--with", "id=p2", "--hint", "animated=false"])
        #expect(r.status == 0, "\(r)")
        r = try navctl(d, ["navigate", "shop.Product", "--with", "id=p3", "--pop-up-to", "shop.Home"])
        let tree = try json(try navctl(d, ["tree", "--json"]).stdout)
        let stack = tree["root"]?["children"]?.arrayValue?.first?["children"]?.arrayValue ?? []
        #expect(r.status == 0 && stack.map { $0["params"]?["id"] } == [nil, "p3"], "p1 and p2 were popped: \(tree)")
        let node = tree["visible"]?.arrayValue?.last?.stringValue ?? ""
        r = try navctl(d, ["update", node, "ref=mail"])
        #expect(r.status == 0 && r.stdout.contains(#"params {"id":"p3","ref":"mail"}"#), "\(r)")
        r = try navctl(d, ["dismiss", "--to", "shop.Home", "--result", #"{"picked":"p3"}"#])
        #expect(r.status == 0 && r.stdout.contains("removed \(node)"), "\(r)")
        r = try navctl(d, ["reset", "shop.Home", #"{"to":"shop.Product","with":{"id":"p9"}}"#])
        #expect(r.status == 0, "\(r)")
        #expect(try navctl(d, ["link"]).stdout == "/product/p9\n")
        r = try navctl(d, ["reset"])
        #expect(r.status == 0 && r.stdout.contains("visible"), "\(r)")
        r = try navctl(d, ["link"])
        #expect(r.status == 1 && r.stderr.contains("noMatchingLink"), "no link builds the bare Home tab: \(r)")
        r = try navctl(d, ["navigate", "shop.Search", "--then", "shop.Home"])
        #expect(r.status == 1 && r.stderr.contains("invalidParams") && r.stderr.contains("is not a flow"), "--then is passed on: \(r)")
        // --existing and --merge (navigate and route): the product on top is kept.
        r = try navctl(d, ["navigate", "shop.Product", "--with", "id=p4"])
        let product = r.stdout.split(separator: ",").first.map(String.init) ?? "?"
        r = try navctl(d, ["route", "showProduct", "--with", "ref=mail", "--existing", "top", "--merge"])
        #expect(r.status == 0 && r.stdout.hasPrefix(product), "the same screen: \(r)")
        r = try navctl(d, ["navigate", "shop.Product", "--with", "id=p5", "--existing", "pop"])
        #expect(r.status == 0 && r.stdout.hasPrefix(product), "\(r)")
        #expect(try navctl(d, ["link"]).stdout == "/product/p5\n")
        r = try navctl(d, ["navigate", "shop.Product", "--with", "id=p5", "--existing", "twice"])
        #expect(r.status == 1 && r.stderr.contains("\"existing\" must be push"), "\(r)")
        // A reset over a guarded draft is refused; --force resets without asking.
        #expect(try navctl(d, ["set", "loggedIn=true", "review.draft=\"typed\""]).status == 0)
        r = try navctl(d, ["navigate", "shop.WriteReview", "--by", "present", "--with", "rating=5"])
        #expect(r.status == 0, "\(r)")
        r = try navctl(d, ["reset"])
        #expect(r.status == 1 && r.stderr.contains("preconditionFailed") && r.stderr.contains("noDraft"), "\(r)")
        r = try navctl(d, ["open", "/product/p6", "--force"])
        #expect(r.status == 0, "\(r)")
    }

    /// `navctl reload`: graph.reload's answer as lines (its version and what it removed; or each
    /// diagnostic, exit 1); `--force` removes live nodes the new graph lacks.
    @Test func reloadSaysWhatTheReloadDid() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = dir.file("app.yaml")
        try "root: {stack: Home}\ncoordinators: {Home: {opens: [A]}, A: {}}\n".write(toFile: graph, atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--graph", dir.path])
        #expect(try navctl(d, ["reload"]).stdout == "graph reloaded: graph version 2\n")
        _ = try d.client().call("navigate", ["to": "A"])
        try "root: {stack: Home}\ncoordinators: {Home: {opens: [B]}, B: {}}\n".write(toFile: graph, atomically: true, encoding: .utf8)
        let refused = try navctl(d, ["reload"])
        #expect(refused.status == 1 && refused.stdout.hasPrefix("session \"main\": node n3 shows `app.A`, which the new graph does not declare\n(dismiss those nodes first"), "\(refused)")
        #expect(try navctl(d, ["reload", "--force"]).stdout == "graph reloaded: graph version 3, 1 node removed\n")
        try "root: {stack: Hom}\n".write(toFile: graph, atomically: true, encoding: .utf8)
        let broken = try navctl(d, ["reload"])
        #expect(broken.status == 1 && broken.stdout == "\(graph):1:15: error: `app.Hom` (the root) is not a coordinator\n", "\(broken)")
        #expect(try json(try navctl(d, ["reload", "--json"]).stdout)["ok"] == false)
    }

    /// `navctl backup` says where the copy is (and the files beside it); navd restores it; an
    /// ephemeral navd's refusal is an error and exit status 1.
    @Test func backupSaysWhereTheCopyIs() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try Daemon(arguments: ["--state", dir.file("state.sqlite")], socketPath: dir.file("d.sock"))
        try d.client().call("navigate", ["to": "shop.Product", "with": ["id": "b1"]])
        let r = try navctl(d, ["backup"])
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(r.status == 0 && lines.count == 2 && lines[0].hasPrefix("backup written: \(dir.file("state.sqlite")).backup-"), "\(r)")
        let written: Substring = try #require(lines.first?.dropFirst("backup written: ".count))
        let path = String(try #require(written.split(separator: " ").first))
        #expect(lines[1] == "  with \(path).log")
        let restored = try Daemon(arguments: ["--state", path], socketPath: dir.file("b.sock"))
        #expect(try restored.client().call("tree")["version"] == 1)

        let refused = try navctl(try Daemon(), ["backup"])
        #expect(refused.status == 1 && refused.stderr.contains("navctl: unavailable (-32013): this navd keeps no state file (--ephemeral)"), "\(refused)")
    }

    /// Runs `navctl ARGS` (a `watch`) on a thread of its own against `d` and returns once it has
    /// subscribed (connected is not enough: its subscribe may still be on its way); `done` signals
    /// when it exits, `box` then holds what `describe` makes of its result.
    func watchInBackground(_ d: Daemon, _ args: [String], _ describe: @escaping @Sendable ((status: Int32, stdout: String, stderr: String)) -> String) throws
        -> (done: DispatchSemaphore, box: OutputBox) {
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = d.socketPath
        let done = DispatchSemaphore(value: 0)
        let box = OutputBox()
        let watchEnv = env
        Thread.detachNewThread {
            box.value = (try? runCommand(Repo.binary("navctl"), args, environment: watchEnv)).map(describe) ?? ""
            done.signal()
        }
        let c = try d.client()
        let deadline = Date().addingTimeInterval(10)
        while try c.call("stats")["subscriptions"]?.intValue ?? 0 < 1 && Date() < deadline { usleep(10_000) }
        return (done, box)
    }

    /// `client list` shows who is connected (navctl names itself); a `watch` closed by `client kill`
    /// says why on stderr and exits 2, the connection lost.
    @Test func clientsAndAWatchClosedByClientKill() throws {
        let d = try Daemon()
        let (done, box) = try watchInBackground(d, ["watch"]) { "\($0.status)\n\($0.stderr)" }
        let listed = try navctl(d, ["--session", "main", "clients"])
        let lines = listed.stdout.split(separator: "\n").map(String.init)
        #expect(listed.status == 0 && lines[0].hasPrefix("   ID  CLIENT") && lines.filter { $0.contains(" navctl ") }.count == 2, "\(listed)")
        let watcher = try #require(lines.first { $0.hasSuffix("main") && $0.contains("navctl") }, "\(listed.stdout)")
        #expect(lines.last?.hasPrefix("*") == true && lines.last?.contains("navctl") == true, "\(listed.stdout)")
        let id = try #require(watcher.split(separator: " ").first.map(String.init))
        let killed = try navctl(d, ["client", "kill", id])
        #expect(killed.status == 0 && killed.stdout == "closed connection \(id)\n", "\(killed)")
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(box.value.hasPrefix("2\nnavctl: disconnected (-32600): connection ") && box.value.contains("closed this connection with client.kill"), "\(box.value)")
        let again = try navctl(d, ["client", "kill", id])
        #expect(again.status == 1 && again.stderr.contains("unknownTarget (-32001): no connection \(id) is open"), "\(again)")
    }

    /// `client kill` by filters closes every match but navctl's own connection, and says when none
    /// matched (exit 1, as pkill); a number and filters together are refused.
    @Test func clientKillByFilters() throws {
        let d = try Daemon()
        let victims = try (0..<2).map { _ in try d.client() }
        for v in victims { try v.call("hello", ["client": "victim"]) }
        let keeper = try d.client()
        try keeper.call("hello", ["client": "keeper"])
        try keeper.call("subscribe")
        let r = try navctl(d, ["client", "kill", "--client", "victim", "--uid", "\(getuid())"])
        #expect(r.status == 0 && r.stdout.split(separator: "\n").count == 2 && r.stdout.split(separator: "\n").allSatisfy { $0.hasPrefix("closed connection ") }, "\(r)")
        for v in victims { #expect(try v.waitForClose()) }
        #expect(try keeper.call("ping") == "pong")
        let none = try navctl(d, ["client", "kill", "--client", "victim"])
        #expect(none.status == 1 && none.stderr.contains("no connection matched"), "\(none)")
        let otherUid = try navctl(d, ["client", "kill", "--client", "keeper", "--uid", "\(getuid() + 1)"])
        #expect(otherUid.status == 1, "\(otherUid)")
        let both = try navctl(d, ["client", "kill", "3", "--client", "keeper"])
        #expect(both.status != 0 && both.stderr.contains("not both"), "\(both)")
        let subscribed = try navctl(d, ["client", "kill", "--subscribed-to", "main", "--json"])
        let closedBySubscription = try json(subscribed.stdout)["closed"]?.arrayValue
        #expect(subscribed.status == 0 && closedBySubscription?.count == 1, "\(subscribed)")
        #expect(try keeper.waitForClose())
    }

    /// `slowlog` shows what navd kept, newest first, one line each; `--reset` forgets it.
    @Test func slowlogShowsAndForgetsSlowReads() throws {
        let d = try Daemon(arguments: ["--slowlog-threshold", "0"])
        let c = try d.client()
        try c.call("hello", ["client": "slowpoke"])
        // Kept: slowpoke's hello, then navctl's own hello (each a read); then navctl's slowlog.get.
        let shown = try navctl(d, ["slowlog"])
        let lines = shown.stdout.split(separator: "\n").map(String.init)
        #expect(shown.status == 0 && lines.first == "slow reads and callbacks (0 ms or more) since navd started: 2; kept: the newest 2, at most 128", "\(shown)")
        #expect(lines.count == 4 && lines[1].hasPrefix("ID  AGO") && lines[1].contains("MS  KIND  CONN") && lines[2].contains(" read ") && lines[2].contains(" navctl ")
                    && lines[3].contains(" slowpoke ") && lines[3].hasSuffix("hello:1"), "\(shown)")
        // --limit 1: the newest alone (this navctl's own hello).
        let newest = try navctl(d, ["slowlog", "--limit", "1"]).stdout.split(separator: "\n")
        #expect(newest.count == 3 && newest[2].hasPrefix(" 3 ") && newest[2].hasSuffix("hello:1"), "\(newest)")
        let forgot = try navctl(d, ["slowlog", "--reset"])
        #expect(forgot.status == 0 && forgot.stdout == "forgot 6 entries\n", "\(forgot)")
        #expect(try navctl(d, ["slowlog", "--limit", "0"]).status == 64)
    }

    @Test func errorsAndExitCodes() throws {
        let d = try Daemon()
        var r = try navctl(d, ["navigate", "shop.Prodcut"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("navctl: unknownTarget (-32001): `shop.Prodcut` is not a coordinator of the graph; did you mean `shop.Product`?"))
        r = try navctl(d, ["navigate", "shop.Product", "--json"])
        let parsed = try json(r.stdout)
        #expect(r.status == 1 && parsed["error"]?["kind"] == "invalidSetup")
        r = try navctl(d, ["complete", "n1", "--result", "{bad"])
        #expect(r.status != 0 && r.stderr.contains("not valid JSON"))
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = "/nonexistent/navd.sock"
        r = try runCommand(Repo.binary("navctl"), ["stats"], environment: env)
        #expect(r.status == 2 && r.stderr.contains("cannot connect to navd at /nonexistent/navd.sock"))
    }

    @Test func watchStreamsNotificationsAndProvideAnswers() throws {
        let d = try Daemon()
        // watch --count 1 prints the stackChanged caused by another client.
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = d.socketPath
        let (done, box) = try watchInBackground(d, ["watch", "--count", "1"]) { $0.stdout }
        let c = try d.client()
        try c.call("navigate", ["to": "shop.Product", "with": ["id": "w"]])
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(box.value.hasPrefix("stackChanged {\"session\":\"main\",\"version\":1"), "\(box.value)")
        // provide --fail answers precondition.evaluate.
        let provider = try spawnDetached(Repo.binary("navctl"), ["provide", "cart.paymentAuthorized", "--fail", "card expired"], env: env)
        defer { kill(provider, SIGKILL); var s: Int32 = 0; waitpid(provider, &s, 0) }
        let deadline = Date().addingTimeInterval(10)
        while try c.call("stats")["provided"]?.intValue ?? 0 < 1 && Date() < deadline { usleep(10_000) }
        try c.call("context.set", ["facts": ["loggedIn": true, "cart.items": 1]])
        try c.call("navigate", ["to": "cart.Cart", "by": "select"])
        try c.call("navigate", ["to": "cart.Checkout", "by": "present"])
        let address = try #require(try c.call("tree")["visible"]?.arrayValue?.last)
        let e = try c.callError("navigate", ["to": "cart.Payment", "from": address])
        #expect(e["data"]?["precondition"] == "cart.paymentAuthorized" && e["data"]?["reason"] == "card expired", "\(e)")
    }

    /// `provide --exec` runs its program with the request on stdin, as navd gives a command
    /// precondition the navigation: a leave guard's program reads which screen it protects.
    @Test func provideExecGivesItsProgramTheRequest() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Editor]}
              Editor: {setup: {type: object, properties: {draft: {type: string}}}, leave: [saved]}
            preconditions:
              saved: {provider: true}
            """)
        let dir = TempDir()
        defer { dir.remove() }
        let script = dir.file("saved.sh")
        try """
            #!/bin/sh
            read -r request
            case "$request" in
              *'"draft":"dirty"'*) echo "the draft of the screen it protects is not saved"; exit 1 ;;
              *'"leaving":"n'*) exit 0 ;;
              *) echo "no screen in the request: $request"; exit 1 ;;
            esac
            """.write(toFile: script, atomically: true, encoding: .utf8)
        let c = try d.client()
        let provider = try startExecProvider(d, script: script, watching: c)
        defer { kill(provider, SIGKILL); var s: Int32 = 0; waitpid(provider, &s, 0) }
        try c.call("navigate", ["to": "Editor", "with": ["draft": "dirty"]])
        let refused = try c.callError("dismiss")
        #expect(refused["data"]?["reason"] == "the draft of the screen it protects is not saved", "\(refused)")
        try c.call("update", ["node": try #require(c.call("tree")["visible"]?.arrayValue?.last), "with": ["draft": "saved"]])
        #expect(try c.call("dismiss")["removed"]?.arrayValue?.count == 1)
    }

    /// A request larger than a pipe holds (the session's facts go with it), given to a program that
    /// writes more than a pipe holds before it exits and never reads its stdin: navctl reads the
    /// program's output while it writes the request, so neither waits for the other and the
    /// program's exit status answers.
    @Test func provideExecDoesNotBlockOnALargeRequestAndALargeAnswer() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Editor]}
              Editor: {leave: [saved]}
            preconditions:
              saved: {provider: true, timeout: 5s}
            """)
        let dir = TempDir()
        defer { dir.remove() }
        let script = dir.file("loud.sh")
        try "#!/bin/sh\nhead -c 300000 /dev/zero | tr '\\\\0' a\necho\nexit 0\n".write(toFile: script, atomically: true, encoding: .utf8)
        let c = try d.client()
        let provider = try startExecProvider(d, script: script, watching: c)
        defer { kill(provider, SIGKILL); var s: Int32 = 0; waitpid(provider, &s, 0) }
        let big = String(repeating: "x", count: 60_000)
        try c.call("context.set", ["facts": ["a": .string(big), "b": .string(big)]])
        try c.call("navigate", ["to": "Editor"])
        #expect(try c.call("dismiss")["removed"]?.arrayValue?.count == 1)
    }
}

/// Starts `navctl provide app.saved --exec` with `script` against `d` and waits until navd counts
/// the provider (seen through `c`); returns its pid, which the caller kills. The script is run by
/// /bin/sh, not exec'd itself: a process another test spawns while this one writes the file may
/// inherit the write descriptor, and exec of a file open for writing fails (ETXTBSY).
func startExecProvider(_ d: Daemon, script: String, watching c: TestClient) throws -> pid_t {
    var env = ProcessInfo.processInfo.environment
    env["NAVD_SOCKET"] = d.socketPath
    let provider = try spawnDetached(Repo.binary("navctl"), ["provide", "app.saved", "--exec", "/bin/sh " + script], env: env)
    do {
        let deadline = Date().addingTimeInterval(10)
        while try c.call("stats")["provided"]?.intValue ?? 0 < 1 && Date() < deadline { usleep(10_000) }
    } catch {
        kill(provider, SIGKILL)
        var status: Int32 = 0
        waitpid(provider, &status, 0)
        throw error
    }
    return provider
}

final class OutputBox: @unchecked Sendable { var value = "" }

/// Starts a program in the background (stdout/stderr to /dev/null); returns its pid.
func spawnDetached(_ path: String, _ args: [String], env: [String: String]) throws -> pid_t {
    var pid: pid_t = 0
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    closeInheritedDescriptors(&actions)
    let argv = ([path] + args).map { strdup($0) } + [nil]
    let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
    guard posix_spawn(&pid, path, &actions, nil, argv, envp) == 0 else { throw TestFailure("cannot start \(path)") }
    return pid
}

/// The tour `make demo` plays (scripts/demo-tour.sh), without its pauses, against a live navd.
@Suite struct DemoTourTests {
    @Test func tourChecksOutThroughLoginAndPayment() throws {
        let d = try Daemon()
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = d.socketPath
        env["NAVCTL"] = Repo.binary("navctl")
        env["PAUSE"] = "0"
        let r = try runCommand(Repo.file("scripts/demo-tour.sh").path, [], environment: env)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.contains("account.Login [n10] (flow)"), "\(r.stdout)")
        #expect(r.stdout.contains("version 8, removed"), "\(r.stdout)")
        let c = try d.client()
        let t = try c.call("tree")
        #expect(r.stdout.contains("then node n"), "checkout continues to the order: \(r.stdout)")
        #expect(r.stdout.contains("\n/product/p7\n"), "the URL after popUpTo: \(r.stdout)")
        #expect(r.stdout.contains("tabs account.Settings [n"), "the tab container in the tree: \(r.stdout)")
        #expect(t["version"] == 14, "\(t)")
        let home = t["root"]?["children"]?.arrayValue?.first?["children"]?.arrayValue ?? []
        #expect(home.count == 1 && home.first?["coordinator"] == "shop.Home", "reset to fresh tabs: \(t)")
        let account = t["root"]?["children"]?.arrayValue?.last?["children"]?.arrayValue?.first
        #expect(t["root"]?["selected"] == 2 && account?["coordinator"] == "account.Account" && account?["presented"] == nil, "\(t)")
    }
}
