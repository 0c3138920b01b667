import Foundation
import JSON
import NavTesting
import Testing

/// navctl as people already use such tools: global options before the subcommand, and a
/// navigation that waits on a precondition explained, cancellable, bounded in time or left to navd.
@Suite struct NavctlHabitsTests {
    func navctl(_ args: [String], socket: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = socket
        env["NO_COLOR"] = nil
        return try runCommand(Repo.binary("navctl"), args, environment: env)
    }

    func json(_ s: String) throws -> JSONValue { try JSONParser(maxDepth: 256).parse(s) }

    @Test func globalOptionsGoBeforeOrAfterTheSubcommand() throws {
        let d = try Daemon()
        var r = try navctl(["--json", "--socket", d.socketPath, "tree"])
        #expect(try r.status == 0 && json(r.stdout)["version"] == 0, "\(r)")
        r = try navctl(["--socket", d.socketPath, "tree"])
        #expect(r.status == 0 && r.stdout.contains("▶     shop.Home [n2]"), "\(r)")
        r = try navctl(["--socket=\(d.socketPath)", "--json", "navigate", "shop.Product", "--with", "id=p1"])
        #expect(try r.status == 0 && json(r.stdout)["version"] == 1, "\(r)")
        r = try navctl(["--session", "main", "--no-color", "--socket", d.socketPath, "tree"])
        #expect(r.status == 0 && !r.stdout.contains("\u{1B}[") && r.stdout.contains("shop.Product [n8]"), "\(r)")
        r = try navctl(["tree", "--json", "--socket", d.socketPath])
        #expect(try r.status == 0 && json(r.stdout)["version"] == 1, "after the subcommand, as before: \(r)")
        // The exit statuses stay: 2 when navd cannot be reached, 1 for navd's errors.
        #expect(try navctl(["--socket", "/nonexistent/navd.sock", "tree"]).status == 2)
        r = try navctl(["--socket", d.socketPath, "navigate", "shop.Nope"])
        #expect(r.status == 1 && r.stderr.contains("unknownTarget"), "\(r)")
        // An unknown option before the subcommand is still an error, not swallowed.
        #expect(try navctl(["--frobnicate", "tree"]).status != 0)
    }

    /// Ctrl-C in a real terminal: navctl says what the navigation waits for (the recovery flow and
    /// the command that finishes it), cancels it and exits with 130; the flow it presented closes.
    @Test func aPendingNavigationIsExplainedAndCtrlCCancelsIt() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.call("navigate", ["route": "account"])
        let command = "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("navctl")) route orders; echo exit=$?; exec sleep 120"
        let pane = try TmuxPane(width: 160, height: 20, command: command)
        let screen = try pane.waitFor("Ctrl-C cancels the navigation")
        #expect(screen.contains("waits for precondition `account.loggedIn`"), "\(screen)")
        #expect(screen.contains("recovery flow account.Login as n8: finish it with `navctl complete n8 --result JSON`"), "\(screen)")
        #expect(try c.call("stats")["pending"] == 1)
        try pane.send("C-c")
        let after = try pane.waitFor("exit=")
        #expect(after.contains("navctl: cancelled nav-2") && after.contains("exit=130"), "\(after)")
        #expect(try c.call("stats")["pending"] == 0)
        let visible = try c.call("tree")["visible"]?.arrayValue ?? []
        #expect(!visible.contains("n8"), "the recovery flow closes with its navigation: \(visible)")
    }

    /// A provider precondition that fails and recovers: navctl says the provider recovers it, then
    /// that it is asked again, and how to end the wait only once.
    @Test func aRecoveryThatRunsIsSaidAndCtrlCIsExplainedOnce() throws {
        let (d, provider) = try daemonWithAVaultAndItsProvider()
        let pane = try TmuxPane(width: 160, height: 20, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("navctl")) navigate app.Vault; echo exit=$?; exec sleep 120")
        try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": false, "reason": "locked"])
        let recover = try provider.serverRequest("precondition.recover")
        try pane.waitFor("waits for precondition `app.vault`, recovering: provider `app.vault` asked")
        try provider.respond(to: recover, result: ["recovered": true])
        let again = try provider.serverRequest("precondition.evaluate")
        try pane.waitFor("waits for precondition `app.vault`, asked again after its recovery")
        try provider.respond(to: again, result: ["passed": true])
        let screen = try pane.waitFor("exit=0")
        #expect(screen.components(separatedBy: "Ctrl-C cancels the navigation").count == 2, "said once: \(screen)")
    }

    @Test func timeoutCancelsAndNoWaitLeavesTheNavigationToNavd() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.call("navigate", ["route": "account"])
        var r = try navctl(["--socket", d.socketPath, "--timeout", "0.5", "route", "orders"])
        #expect(r.status == 1 && r.stderr.contains("navctl: cancelled nav-2") && r.stderr.contains("timeout"), "\(r)")
        #expect(try c.call("stats")["pending"] == 0)
        #expect(try c.call("tree")["visible"]?.arrayValue?.contains("n8") == false, "the recovery flow closed with it")

        r = try navctl(["--socket", d.socketPath, "--json", "route", "orders", "--no-wait"])
        #expect(r.status == 0, "\(r)")
        let pending = try json(r.stdout)["pending"]
        #expect(pending?["waitingFor"] == "account.loggedIn" && pending?["flow"]?["coordinator"] == "account.Login", "\(r)")
        let flow = try #require(pending?["flow"]?["node"]?.stringValue)
        // navctl has exited; the navigation waits on in navd and goes on when the flow completes.
        #expect(try c.call("stats")["pending"] == 1)
        try c.call("flowComplete", ["flow": .string(flow), "result": ["user": "ann"]])
        let t = try c.call("tree")
        let account = t["root"]?["children"]?.arrayValue?.last?["children"]?.arrayValue ?? []
        #expect(account.last?["coordinator"] == "account.Orders", "\(t)")
    }

    /// A timeout however long is waited for (`--timeout 1e300` trapped converting its milliseconds
    /// to poll's Int32); one that is not a positive number is a usage mistake, said as one.
    @Test func aTimeoutIsAPositiveNumberOfSecondsHoweverLarge() throws {
        let d = try Daemon()
        var r = try navctl(["--socket", d.socketPath, "--timeout", "1e300", "tree"])
        #expect(r.status == 0 && r.stdout.contains("session main"), "\(r)")
        for bad in ["nan", "inf", "0", "-1"] {
            r = try navctl(["--socket", d.socketPath, "tree", "--timeout=\(bad)"])
            #expect(r.status == 64 && r.stderr.contains("--timeout is a number of seconds greater than 0"), "\(bad): \(r)")
        }
    }
}

/// What a first day with navctl turns up: values read as the setup model types them, a failure
/// answer that exits non-zero, usage mistakes said in one line with status 64, sessions opened and
/// closed by name, --no-wait telling how to cancel.
@Suite struct NavctlFirstDayTests {
    func navctl(_ args: [String], socket: String) throws -> (status: Int32, stdout: String, stderr: String) {
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = socket
        return try runCommand(Repo.binary("navctl"), args, environment: env)
    }

    @Test func withValuesAreReadAsTheSetupModelTypesThem() throws {
        let d = try Daemon()
        let c = try d.client()
        // A string field takes digits as a string; a JSON string is accepted too.
        var r = try navctl(["navigate", "shop.Product", "--with", "id=7"], socket: d.socketPath)
        #expect(r.status == 0, "\(r)")
        r = try navctl(["--json", "route", "showProduct", "--with", "id=\"8\""], socket: d.socketPath)
        #expect(r.status == 0, "\(r)")
        var top = try c.call("tree")
        func topParams(_ t: JSONValue) -> JSONValue? {
            var n = t["root"]?["children"]?.arrayValue?.first
            while let next = n?["children"]?.arrayValue?.last { n = next }
            return n?["params"]
        }
        #expect(topParams(top) == ["id": "8"], "\(top)")
        // An integer field takes a number; a word there is refused with the right form, before navd is asked.
        try c.call("reset")
        r = try navctl(["navigate", "shop.Category", "--with", "slug=shoes", "--with", "page=2"], socket: d.socketPath)
        #expect(r.status == 0, "\(r)")
        top = try c.call("tree")
        #expect(topParams(top) == ["slug": "shoes", "page": 2], "\(top)")
        r = try navctl(["navigate", "shop.Category", "--with", "slug=shoes", "--with", "page=two"], socket: d.socketPath)
        #expect(r.status == 64 && r.stderr.contains("field page of shop.Category is an integer; write it as page=7"), "\(r)")
        #expect(!r.stderr.contains("USAGE"), "one line, not the generic usage: \(r)")
        r = try navctl(["navigate", "shop.Product", "--with", "id"], socket: d.socketPath)
        #expect(r.status == 64 && r.stderr.contains("`id` is not KEY=VALUE") && r.stderr.contains("--with-json"), "\(r)")
        r = try navctl(["navigate", "shop.Product", "--with-json", "{id:"], socket: d.socketPath)
        #expect(r.status == 64 && r.stderr.contains("--with-json is not valid JSON"), "\(r)")
        // Fields may follow the target as they follow `update`'s node and `set`: typed the same way,
        // --with given beside them wins.
        try c.call("reset")
        r = try navctl(["navigate", "shop.Category", "slug=boots", "page=3", "--with", "page=4"], socket: d.socketPath)
        #expect(r.status == 0, "\(r)")
        top = try c.call("tree")
        #expect(topParams(top) == ["slug": "boots", "page": 4], "\(top)")
        r = try navctl(["route", "showProduct", "id=9"], socket: d.socketPath)
        top = try c.call("tree")
        #expect(r.status == 0 && topParams(top) == ["id": "9"], "\(r) \(top)")
        r = try navctl(["navigate", "shop.Category", "slug=boots", "page=two"], socket: d.socketPath)
        #expect(r.status == 64 && r.stderr.contains("navctl: page=two: field page of shop.Category is an integer"), "\(r)")
    }

    @Test func anAnswerThatSaysItFailedExitsOne() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = dir.file("g")
        try FileManager.default.createDirectory(atPath: graph, withIntermediateDirectories: true)
        try "root: {stack: A}\ncoordinators:\n  A: {}\n".write(toFile: graph + "/app.yaml", atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--graph", graph])
        try "root: {stack: Nope}\ncoordinators:\n  A: {}\n".write(toFile: graph + "/app.yaml", atomically: true, encoding: .utf8)
        let r = try navctl(["call", "graph.reload"], socket: d.socketPath)
        #expect(r.status == 1 && r.stdout.contains("\"ok\":false") && r.stderr.contains("graph.reload answered ok: false"), "\(r)")
    }

    @Test func sessionsAreOpenedAndClosedByName() throws {
        let d = try Daemon()
        #expect(try navctl(["--session", "s1", "tree"], socket: d.socketPath).status == 1, "not open yet")
        var r = try navctl(["session", "open", "s1"], socket: d.socketPath)
        #expect(r.status == 0 && r.stdout.contains("session s1 version 0"), "\(r)")
        // Shared options before a group's subcommand go after it (navctl --socket S session list).
        #expect(try navctl(["--socket", d.socketPath, "session", "list", "--json"], socket: "/nonexistent/navd.sock").status == 0)
        r = try navctl(["session", "list"], socket: d.socketPath)
        #expect(r.stdout.split(separator: "\n") == ["main", "s1"], "\(r)")
        #expect(try navctl(["--session", "s1", "navigate", "shop.Product", "--with", "id=1"], socket: d.socketPath).status == 0)
        r = try navctl(["session", "close", "s1"], socket: d.socketPath)
        #expect(r.status == 0 && r.stdout.contains("closed s1"), "\(r)")
        r = try navctl(["--session", "s1", "tree"], socket: d.socketPath)
        #expect(r.status == 1 && r.stderr.contains("no session \"s1\""), "\(r)")
    }

    @Test func noWaitSaysHowToCancel() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.call("navigate", ["route": "account"])
        var r = try navctl(["route", "orders", "--no-wait"], socket: d.socketPath)
        #expect(r.status == 0 && !r.stderr.contains("Ctrl-C") && r.stderr.contains("navd goes on with it after navctl exits"), "\(r)")
        let nav = try #require(r.stdout.split(separator: " ").dropFirst().first.map { String($0.dropLast()) })
        #expect(r.stderr.contains("navctl cancel \(nav)"), "\(r)")
        r = try navctl(["cancel", nav], socket: d.socketPath)
        #expect(r.status == 0 && r.stdout.contains("cancelled \(nav)"), "\(r)")
        #expect(try c.call("stats")["pending"] == 0)
        // Asked again, there is nothing to cancel: said so, exit status 1 (navd answered cancelled: false).
        r = try navctl(["cancel", nav], socket: d.socketPath)
        #expect(r.status == 1 && r.stdout.contains("nothing cancelled: \(nav) is not pending"), "\(r)")
    }
}

/// `navctl --generate-completion-script bash` completes coordinator and route names from the
/// running navd's graph, in a real bash.
@Suite struct NavctlCompletionTests {
    @Test func bashCompletesCoordinatorsAndRoutesFromTheLiveGraph() throws {
        let d = try Daemon()
        let navctl = Repo.binary("navctl")
        let script = try runCommand(navctl, ["--generate-completion-script", "bash"])
        #expect(script.status == 0 && script.stdout.contains("_navctl"), "\(script)")
        let dir = TempDir()
        defer { dir.remove() }
        try script.stdout.write(toFile: dir.file("navctl.bash"), atomically: true, encoding: .utf8)
        func complete(_ words: [String]) throws -> [String] {
            let line = ([navctl] + words).joined(separator: " ")
            let body = """
                shopt -s extglob
                source \(dir.file("navctl.bash"))
                COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}
                COMP_WORDS=(\(([navctl] + words).map { "'\($0)'" }.joined(separator: " "))); COMP_CWORD=\(words.count)
                _navctl
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            var env = ProcessInfo.processInfo.environment
            env["NAVD_SOCKET"] = d.socketPath
            let r = try runCommand("/bin/bash", ["-c", body], environment: env)
            return r.stdout.split(separator: "\n").map(String.init).sorted()
        }
        #expect(try complete(["navigate", "shop.Pr"]) == ["shop.Product"])
        #expect(try complete(["navigate", "shop.Home", "--pop-up-to", "cart.C"]) == ["cart.Cart", "cart.Checkout", "cart.Confirm"])
        #expect(try complete(["route", "account.o"]) == ["account.orders"])
    }
}

/// A recovery flow whose navigation's client went away: the navigation is cancelled and the flow
/// closes with it (left on top, it refused the same navigation asked again); asked again, the
/// navigation recovers afresh and proceeds.
@Suite struct AbandonedRecoveryTests {
    @Test func theFlowClosesAndTheNavigationAskedAgainRecoversAfresh() throws {
        let d = try Daemon()
        let watcher = try d.client()
        _ = try watcher.call("subscribe")
        let quitter = try d.client()
        try quitter.call("navigate", ["route": "account"])
        _ = try quitter.send("navigate", ["route": "orders"])
        let pending = try watcher.notification("navigationPending")
        let flow = try #require(pending["params"]?["flow"]?["node"]?.stringValue, "\(pending)")
        quitter.close()
        let deadline = Date().addingTimeInterval(5)
        while try watcher.call("stats")["pending"] != 0 && Date() < deadline { usleep(10_000) }
        #expect(try watcher.call("stats")["pending"] == 0, "the navigation ends with its client")
        var t = try watcher.call("tree")
        #expect(t["visible"]?.arrayValue?.contains(.string(flow)) == false, "the flow closed with its navigation: \(t)")
        let again = try d.client()
        let id = try again.send("navigate", ["route": "orders"])
        let second = try watcher.notification("navigationPending")
        let newFlow = try #require(second["params"]?["flow"]?["node"]?.stringValue, "\(second)")
        #expect(newFlow != flow)
        try again.call("flowComplete", ["flow": .string(newFlow), "result": ["user": "ann"]])
        #expect(try again.reply(to: id)["result"]?["node"] != nil)
        t = try watcher.call("tree")
        let account = t["root"]?["children"]?.arrayValue?.last?["children"]?.arrayValue ?? []
        #expect(account.last?["coordinator"] == "account.Orders", "\(t)")
    }
}
