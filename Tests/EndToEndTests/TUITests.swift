import Foundation
import NavTesting
import Testing

/// nav-tui driven as a person would, in a real terminal: a private tmux server, `send-keys`,
/// `capture-pane -p`. Each step waits for the screen to show what it should (polling the pane),
/// never for a fixed time.
final class TmuxPane {
    let server = "navd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let target = "ui"

    init(width: Int, height: Int, command: String) throws {
        try tmux(["new-session", "-d", "-x", "\(width)", "-y", "\(height)", "-s", target, command])
    }

    deinit { _ = try? tmux(["kill-server"]) }

    @discardableResult
    func tmux(_ args: [String]) throws -> (status: Int32, stdout: String) {
        let r = try runSpawned(["/usr/bin/tmux", "-L", server, "-f", "/dev/null"] + args)
        guard r.status == 0 || args == ["kill-server"] else { throw TestFailure("tmux \(args.joined(separator: " ")) failed with status \(r.status)") }
        return r
    }

    func screen() throws -> String { try tmux(["capture-pane", "-p", "-t", target]).stdout }

    func send(_ keys: String...) throws { try tmux(["send-keys", "-t", target] + keys) }

    /// Waits until the pane shows `text` and each of `more` at once (and no longer shows `gone`,
    /// when given); returns the screen (fails the test with it on timeout). What one step changes
    /// may be drawn in several redraws (a reply's status line, then a notification's tree and log
    /// lines), so a step waits for all it expects rather than checking the first screen it sees.
    @discardableResult
    func waitFor(_ text: String, _ more: String..., without gone: String? = nil, timeout: Double = 10,
                 sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var last = ""
        while Date() < deadline {
            last = try screen()
            if last.contains(text) && more.allSatisfy(last.contains) && !(gone.map(last.contains) ?? false) { return last }
            usleep(30_000)
        }
        Issue.record("screen never showed \(([text] + more).map(\.debugDescription).joined(separator: " and ")):\n\(last)", sourceLocation: sourceLocation)
        throw TestFailure("timeout waiting for \(text)")
    }
}

@Suite struct TUITests {
    @Test func treeActionsFormsOtherClientsResizeAndQuit() throws {
        let d = try Daemon()
        // After nav-tui exits, the shell prints its status and the terminal's mode, then stays.
        let command = "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); echo exit=$?; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '; echo; exec sleep 120"
        let pane = try TmuxPane(width: 100, height: 30, command: command)

        // The tree and the actions of the visible screen.
        var s = try pane.waitFor("actions on shop.Home")
        #expect(s.contains("▶     shop.Home [n2]"), "\(s)")
        #expect(s.contains("account.Account [n6]"))
        #expect(s.contains("1 push shop.Product  form"), "\(s)")
        // shop.Home is the first screen of a root tab without `back:`: navd has nothing to dismiss.
        #expect(s.contains(" d (dismiss)") && s.contains(" q quit"), "\(s)")

        // A key opens the form of a target with a setup model; navd's message rejects a missing field.
        try pane.send("1")
        s = try pane.waitFor("▸ id* [_] string, minLength 1")
        try pane.send("Enter")
        s = try pane.waitFor("`/id` is required but missing")
        // A value of the wrong type for an integer field is rejected with navd's message too.
        try pane.send("Escape")
        try pane.waitFor("actions on shop.Home")
        try pane.send("3")
        try pane.waitFor("push shop.Category")
        try pane.send("s", "h", "o", "e", "s", "Tab", "x", "Enter")
        s = try pane.waitFor("`/page`")
        #expect(s.contains("integer"), "\(s)")
        try pane.send("Escape")
        try pane.waitFor("actions on shop.Home")

        // A valid value navigates: the new screen is on the visible path and in the log.
        try pane.send("1")
        try pane.waitFor("▸ id*")
        try pane.send("p", "4", "2", "Enter")
        try pane.waitFor("actions on shop.Product", "▶     shop.Product [n8] {\"id\":\"p42\"}", "v1 push shop.Product [n8] in n3")

        // A change made by another client (navctl) appears.
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = d.socketPath
        let r = try runCommand(Repo.binary("navctl"), ["navigate", "shop.Reviews"], environment: env)
        #expect(r.status == 0, "\(r)")
        s = try pane.waitFor("v2 push shop.Reviews [n9] in n3", "actions on shop.Reviews")
        #expect(s.contains("▶       shop.Reviews [n9] {\"productId\":\"p42\"}") || s.contains("▶     shop.Reviews [n9]"), "\(s)")
        #expect(s.contains(" d dismiss ") && !s.contains("(dismiss)"), "above the tab's first screen, dismiss acts: \(s)")

        // Dismiss from the UI.
        try pane.send("d")
        s = try pane.waitFor("v3 pop in n3 removed n9")

        // A resize to 80x24 redraws: nothing wider than 80 columns, the status line on row 24.
        try pane.tmux(["resize-window", "-t", pane.target, "-x", "80", "-y", "24"])
        s = try pane.waitFor("────────")
        let deadline = Date().addingTimeInterval(10)
        var rows = s.split(separator: "\n", omittingEmptySubsequences: false)
        while Date() < deadline, !(rows.first?.hasPrefix(" nav-tui") == true && rows.count >= 24 && rows[23].contains("dismiss: version 3")) {
            usleep(30_000)
            s = try pane.screen()
            rows = s.split(separator: "\n", omittingEmptySubsequences: false)
        }
        #expect(rows.count >= 24 && rows[23].contains("dismiss: version 3"), "\(s)")
        #expect(rows.allSatisfy { $0.count <= 80 }, "\(s)")
        #expect(s.contains("actions on shop.Product"))

        // q quits with status 0 and the terminal back in cooked mode with echo.
        try pane.send("q")
        s = try pane.waitFor("exit=0")
        try pane.waitFor("icanon")
        s = try pane.screen()
        #expect(s.contains("icanon echo") && !s.contains("-icanon"), "\(s)")
    }

    @Test func urlPopToTopAndReset() throws {
        let d = try Daemon()
        let pane = try TmuxPane(width: 100, height: 30, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); exec sleep 120")
        try pane.waitFor("actions on shop.Home")
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = d.socketPath
        #expect(try runCommand(Repo.binary("navctl"), ["open", "/product/p1/reviews"], environment: env).status == 0)
        // The URL of the visible path, from link.resolve.
        var s = try pane.waitFor("actions on shop.Reviews  /product/p1/reviews")
        #expect(s.contains(" t pop to this stack's first screen") && s.contains(" r reset"), "\(s)")
        // u: a form with the screen's params; submitted unchanged it sends nothing (no version 2)…
        try pane.send("u")
        try pane.waitFor("update shop.Reviews")
        try pane.send("Enter")
        s = try pane.waitFor("update shop.Reviews: nothing changed, nothing sent")
        #expect(s.contains("version 1 ·"), "\(s)")
        // …and with a field changed, navd's update commits it.
        try pane.send("u")
        try pane.waitFor("[p1_]")
        try pane.send("BSpace", "2", "Enter")
        s = try pane.waitFor("v2 update shop.Reviews")
        // e: dismiss with a result; the screen below is told (screenResult, in the log).
        try pane.send("e")
        try pane.waitFor("dismiss with a result")
        try pane.send("d", "o", "n", "e", "Enter")
        try pane.waitFor("screenResult for n8", "\"done\"")
        // p, then an action: pop to the top of the stack first, in the same commit.
        try pane.send("p")
        try pane.waitFor("pop first: ON")
        try pane.send("1")
        try pane.waitFor("▸ productId")
        try pane.send("Enter")
        // One commit: the pop and the push are logged under the same version.
        try pane.waitFor("pop to n2, push shop.Reviews: version", "v4 pop in n3 removed n8", "v4 push shop.Reviews")
        try pane.send("t")
        // One pop, to the tab's first screen.
        try pane.waitFor("actions on shop.Home", "v5 pop in n3 removed")
        #expect(try runCommand(Repo.binary("navctl"), ["navigate", "account.Account", "--by", "select"], environment: env).status == 0)
        try pane.waitFor("actions on account.Account")
        try pane.send("r")
        try pane.waitFor("reset: version", "actions on shop.Home")
    }

    /// At 80×24 every action of shop.Home is reachable and shown (a page at a time, `>` and `<`,
    /// with a marker while there are more), every fixed key is labelled, and a long status line
    /// wraps instead of being cut.
    @Test func everyActionAndLineFitsAt80By24() throws {
        let d = try Daemon()
        let pane = try TmuxPane(width: 80, height: 24, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); exec sleep 120")
        var s = try pane.waitFor("actions on shop.Home")
        print("nav-tui at 80x24, shop.Home, first page:\n\(s)")
        // Every row fits: nothing is wider than the terminal.
        for line in s.split(separator: "\n") { #expect(line.count <= 80, "\(line)") }
        #expect(s.contains("▶ > "), "a marker says there are more: \(s)")
        for label in [" d (dismiss)", " u params", " U params, back restores the earlier", " q quit", " t pop to this stack's first screen", " r reset", " R reset without guards",
                      " e result", " E result merged below", " p pop first", " K to existing"] {
            #expect(s.contains(label), "\(label) in \(s)")
        }
        // The keys of the actions shown, on the right of the │.
        func keys(_ screen: String) -> [Character] {
            screen.split(separator: "\n").compactMap { line -> Character? in
                guard let bar = line.firstIndex(of: "│") else { return nil }
                let right = line[line.index(after: bar)...]
                guard right.count > 3, right.first == " ", right.dropFirst(2).first == " " else { return nil }
                let k = right.dropFirst().first!
                return "123456789abfghijklmnosvwyz".contains(k) ? k : nil
            }
        }
        // No action's label is cut at 80 columns.
        for line in s.split(separator: "\n") where line.contains("│ 1 ") || line.contains(" route ") || line.contains(" push ") {
            #expect(!line.contains("…"), "\(line)")
        }
        let first = keys(s)
        try pane.send(">")
        s = try pane.waitFor("◀ < ")
        print("second page:\n\(s)")
        let second = keys(s)
        let all = first + second
        #expect(all.count >= 11, "shop.Home has more actions than one page at 80x24 holds: \(all)")
        #expect(String(all) == String("123456789abfghijklmnosvwyz".prefix(all.count)), "each action once, in order: \(all)")
        #expect(s.contains("◀ < \(first.count) before"), "\(s)")
        try pane.send("<")
        s = try pane.waitFor("▶ > ")
        #expect(!s.contains("◀ < "), "back on the first page: \(s)")
        // A long message wraps: navd's whole refusal is on the screen.
        try pane.send("t")
        s = try pane.waitFor("already at the first screen of this stack")
        // navd's message for the same refusal, whole, in the wrapped rows (read until it is all drawn:
        // a screen captured while nav-tui draws it may hold part of it).
        var message = ""
        do { try d.client().call("dismiss") } catch let e as RPCFailure { message = e.message }
        try pane.send("d")
        s = try pane.waitFor("dismiss: ")
        let deadline = Date().addingTimeInterval(10)
        while !s.split(separator: "\n").suffix(3).joined().contains(message) && Date() < deadline {
            usleep(30_000)
            s = try pane.screen()
        }
        let status = s.split(separator: "\n").suffix(3).joined()
        #expect(message.count > 80 && status.contains(message), "the status line holds the whole message \(message.debugDescription): \(s)")
        print("a long status line:\n\(s)")
        // An update form submitted unchanged sends nothing, at 80x24 too.
        _ = try d.client().call("navigate", ["to": "shop.Product", "with": ["id": "p1"]])
        try pane.waitFor("actions on shop.Product")
        try pane.send("u")
        try pane.waitFor("[p1_]")
        try pane.send("Enter")
        s = try pane.waitFor("nothing changed, nothing sent")
        #expect(try d.client().call("tree")["version"] == 1, "no update was committed")
    }

    /// Like navctl, nav-tui does not make a session on the way: a session that is not open ends it
    /// with a message saying how to open one (exit status 1); --create opens it.
    /// A param holding ESC, BEL and CSI sequences is shown in the update form as text (`\u{1B}`):
    /// the terminal's title, screen and colours stay nav-tui's.
    @Test func controlCharactersFromNavdAreShownAsText() throws {
        let d = try Daemon()
        try d.client().call("navigate", ["to": "shop.Product", "with": ["id": "\u{1b}]0;pwned\u{07}\u{1b}[2Jx"]])
        let pane = try TmuxPane(width: 100, height: 30, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); exec sleep 120")
        try pane.waitFor("actions on shop.Product")
        try pane.send("u")
        let s = try pane.waitFor("\\u{1B}]0;pwned\\u{7}\\u{1B}[2Jx")
        #expect(s.contains("actions on shop.Product") || s.contains("update shop.Product"), "the screen was not cleared by the param: \(s)")
        let title = try pane.tmux(["display-message", "-p", "-t", pane.target, "#{pane_title}"]).stdout
        #expect(!title.contains("pwned"), "the pane's title was not set by the param: \(title)")
    }

    /// A graph saved while nav-tui runs (navd --watch-graph): a good one is taken (its new
    /// coordinator among the actions), a broken one is said in the log with where it is broken.
    @Test func aGraphSavedWhileItRunsIsTakenOrItsErrorsShown() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = dir.file("app.yaml")
        try "root: {stack: Home}\ncoordinators: {Home: {opens: [First]}, First: {}}\n".write(toFile: graph, atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--graph", dir.path, "--watch-graph"])
        let pane = try TmuxPane(width: 120, height: 30, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); exec sleep 120")
        try pane.waitFor("actions on app.Home", "app.First")
        try "root: {stack: Home}\ncoordinators: {Home: {opens: [First, Second]}, First: {}, Second: {}}\n".write(toFile: graph, atomically: true, encoding: .utf8)
        try pane.waitFor("graphReloaded version 2", "app.Second")
        try "root: {stack: Hom}\n".write(toFile: graph, atomically: true, encoding: .utf8)
        try pane.waitFor("graph not reloaded: ", "app.yaml:1:15: error: `app.Hom`")
    }

    @Test func aSessionThatIsNotOpenIsAnErrorUnlessCreate() throws {
        let d = try Daemon()
        let pane = try TmuxPane(width: 80, height: 24, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")) --session nope; echo exit=$?; exec sleep 120")
        let s = try pane.waitFor("exit=1")
        #expect(s.contains("nav-tui: no session \"nope\" is open: open it with `navctl session open nope`"), "\(s)")
        #expect(try d.client().call("session.list")["sessions"]?.arrayValue?.contains("nope") == false)
        let created = try TmuxPane(width: 80, height: 24, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")) --session nope --create; exec sleep 120")
        try created.waitFor("actions on shop.Home")
        let sessions = try d.client().call("session.list")["sessions"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(sessions.contains("nope"), "--create opened it: \(sessions)")
        // Closed from elsewhere: said at once, the last tree kept, no action offered.
        try d.client().call("session.close", ["name": "nope"])
        let closed = try created.waitFor("session \"nope\" was closed: the tree shown is its last; q quits", "sessionClosed at version 0", "session nope is closed: no actions")
        #expect(!closed.contains("actions on shop.Home"), "\(closed)")
    }

    /// K: the next action goes back to a screen of its target in the stack (`existing: pop`);
    /// E: dismiss with a result merged into the screen below (`merge: true`).
    @Test func keepExistingAndAResultThatStays() throws {
        let d = try Daemon()
        let command = "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")) --session s3 --create; exec sleep 120"
        let pane = try TmuxPane(width: 100, height: 30, command: command)
        try pane.waitFor("session s3")
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = d.socketPath
        #expect(try runCommand(Repo.binary("navctl"), ["navigate", "shop.Product", "--with", "id=p1", "--session", "s3"], environment: env).status == 0)
        try pane.waitFor("actions on shop.Product")
        try pane.send("K")
        try pane.waitFor("to existing: ON")
        try pane.send("4")
        try pane.waitFor("▸ id*")
        try pane.send("p", "2", "Enter")
        // The product kept, its params replaced.
        var s = try pane.waitFor("back to or push shop.Product: version 2", "v2 update shop.Product")
        #expect(!s.contains("v2 push"), "\(s)")
        try pane.send("1")
        try pane.waitFor("▸ productId")
        try pane.send("Enter")
        try pane.waitFor("actions on shop.Reviews")
        try pane.send("E")
        try pane.waitFor("merging into the screen below")
        for ch in "{\"ref\":\"mail\"}" { try pane.send(String(ch)) }
        try pane.send("Enter")
        s = try pane.waitFor("actions on shop.Product")
        let tree = try runCommand(Repo.binary("navctl"), ["tree", "--json", "--session", "s3"], environment: env).stdout
        #expect(tree.contains("\"params\":{\"id\":\"p2\",\"ref\":\"mail\"}"), "\(tree)")
    }

    /// A flow's step that declares no opens goes on to the next step: nav-tui lists that step among
    /// the actions (the flow's path), and none after the last.
    @Test func aStepWithoutOpensOffersTheNextStep() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Wizard]}
              Wizard: {flow: {steps: [One, Two]}}
              One: {}
              Two: {}
            """)
        let pane = try TmuxPane(width: 100, height: 30, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); exec sleep 120")
        try pane.waitFor("actions on app.Home", "1 push app.Wizard")
        try pane.send("1")
        var s = try pane.waitFor("actions on app.One", "1 push app.Two  next step")
        try pane.send("1")
        s = try pane.waitFor("actions on app.Two", "v2 push app.Two")
        #expect(!s.contains("next step"), "the last step has none: \(s)")
    }

    /// A route and an opened screen that name no style are labelled the way navd shows them: a
    /// screen never pushed is presented, a select-only tab is selected from anywhere.
    @Test func actionsWithoutAStyleAreLabelledAsNavdShowsThem() throws {
        let d = try Daemon(graph: """
            root: {tabs: [Home, Other]}
            coordinators:
              Home: {opens: [Compose]}
              Other: {presentations: [select]}
              Compose: {presentations: [present]}
            routes:
              write: {to: Compose}
              other: {to: Other}
            """)
        let pane = try TmuxPane(width: 100, height: 30, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); exec sleep 120")
        let s = try pane.waitFor("actions on app.Home", "present app.Compose", "route app.write  present Compose", "route app.other  select Other")
        #expect(!s.contains("push Compose"), "\(s)")
        // The route's key (its line reads "│ KEY route app.write  present Compose") presents Compose.
        let line = try #require(s.split(separator: "\n").first { $0.contains("route app.write") })
        let key = try #require(line.split(separator: "│").last?.split(separator: " ").first)
        try pane.send(String(key))
        try pane.waitFor("actions on app.Compose")
        let c = try d.client()
        #expect(try c.call("tree")["root"]?["children"]?.arrayValue?.first?["children"]?.arrayValue?.first?["presented"]?["children"]?.arrayValue?.first?["coordinator"] == "app.Compose")
    }

    /// A navigation sent from a form that waits for a precondition closes the form (its input was
    /// accepted): the recovery flow presented for it can be completed with `c` at once.
    @Test func aFormWhoseNavigationWaitsClosesForTheRecoveryFlow() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Gated]}
              Gated: {setup: {type: object, required: [x], properties: {x: {type: string}}}, preconditions: [ok]}
              Fix: {flow: {steps: [FixStep]}}
              FixStep: {}
            preconditions:
              ok: {check: {fact: ok, equals: true}, recover: {flow: Fix, facts: {ok: true}}}
            """)
        let pane = try TmuxPane(width: 100, height: 30, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); exec sleep 120")
        try pane.waitFor("actions on app.Home", "1 push app.Gated  form")
        try pane.send("1")
        try pane.waitFor("▸ x*")
        try pane.send("a", "Enter")
        try pane.waitFor("recovery flow app.Fix", "actions on app.FixStep", without: "▸ x*")
        try pane.send("c")
        try pane.waitFor("actions on app.Gated", "ended nav-1: committed at version 3")
    }

    /// A provider precondition that fails and recovers: the pending line says the provider recovers
    /// it, then that it is asked again (it said "waits for app.vault" all three times).
    @Test func thePendingLineSaysWhenARecoveryRuns() throws {
        let (d, provider) = try daemonWithAVaultAndItsProvider()
        let pane = try TmuxPane(width: 120, height: 30, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); exec sleep 120")
        try pane.waitFor("actions on app.Home", "1 push app.Vault")
        try pane.send("1")
        try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": false, "reason": "locked"])
        let recover = try provider.serverRequest("precondition.recover")
        try pane.waitFor("waits for app.vault (recovering: provider app.vault asked)")
        try provider.respond(to: recover, result: ["recovered": true])
        let again = try provider.serverRequest("precondition.evaluate")
        try pane.waitFor("waits for app.vault (asked again after its recovery)")
        try provider.respond(to: again, result: ["passed": true])
        try pane.waitFor("actions on app.Vault", without: "⏳")
    }

    @Test func preconditionPendingCancelAndSigterm() throws {
        let d = try Daemon()
        let command = "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")) --session s2 --create; echo exit=$?; exec sleep 120"
        let pane = try TmuxPane(width: 100, height: 30, command: command)
        try pane.waitFor("session s2")
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = d.socketPath
        #expect(try runCommand(Repo.binary("navctl"), ["navigate", "shop.Product", "--with", "id=p1", "--session", "s2"], environment: env).status == 0)
        try pane.waitFor("actions on shop.Product")
        // Checkout waits on account.loggedIn, whose recovery presents the Login flow.
        try pane.send("3")
        // The stackChanged that presents the recovery flow comes first, then navigationPending
        // naming it: the pending line says which flow to finish.
        var s = try pane.waitFor("waits for account.loggedIn (recovery flow account.Login [n")
        s = try pane.waitFor("flow account.Login")
        #expect(s.contains("x cancel pending"), "\(s)")
        try pane.send("x")
        // The recovery flow's flowCompleted (cancelled) may come before the navigation's own
        // answer: the pending line goes with the answer.
        s = try pane.waitFor("cancelled", without: "⏳")
        #expect(!s.contains("⏳"), "\(s)")
        // SIGTERM restores the terminal too.
        let shell = try pane.tmux(["list-panes", "-t", pane.target, "-F", "#{pane_pid}"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let pid = try runSpawned(["/usr/bin/pgrep", "-P", shell, "-x", "nav-tui"]).stdout.split(separator: "\n").first.flatMap { Int32($0) }
        let tui = try #require(pid, "no nav-tui under the pane's shell \(shell)")
        kill(tui, SIGTERM)
        try pane.waitFor("exit=0")
    }

    /// A dismiss that waits on a leave guard gets the pending line, naming the screen the guard
    /// protects (`navigationPending.leaving`), and `x` cancels it: the screen stays.
    @Test func aDismissWaitingOnALeaveGuardIsPendingAndCancellable() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Editor]}
              Editor:
                setup: {type: object, properties: {draft: {type: string}}}
                leave: [saved]
            preconditions:
              saved: {command: [/bin/sleep, "60"], timeout: 2m}
            """)
        let pane = try TmuxPane(width: 120, height: 30, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); exec sleep 120")
        try pane.waitFor("actions on app.Home")
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = d.socketPath
        #expect(try runCommand(Repo.binary("navctl"), ["navigate", "app.Editor", "--with", "draft=x"], environment: env).status == 0)
        try pane.waitFor("actions on app.Editor")
        try pane.send("d")
        var s = try pane.waitFor("⏳ dismiss of app.Editor waits for app.saved, the leave guard of app.Editor [n3]")
        #expect(s.contains("x cancel pending"), "\(s)")
        try pane.send("x")
        s = try pane.waitFor("cancelled dismiss of app.Editor", without: "⏳")
        let tree = try runCommand(Repo.binary("navctl"), ["tree", "--json"], environment: env).stdout
        #expect(tree.contains("\"coordinator\":\"app.Editor\""), "\(tree)")
    }

    /// Closed by another client's `client.kill`, nav-tui says so (navd's reason, with who closed
    /// it) and connects again.
    @Test func aConnectionClosedByClientKillIsShownWithWhy() throws {
        let d = try Daemon()
        let pane = try TmuxPane(width: 120, height: 30, command: "NAVD_SOCKET=\(d.socketPath) \(Repo.binary("nav-tui")); echo exit=$?; exec sleep 120")
        try pane.waitFor("actions on shop.Home")
        let admin = try d.client()
        let tui = try #require(try admin.call("client.list")["clients"]?.arrayValue?.first { $0["client"] == "nav-tui" })
        try admin.call("client.kill", ["connection": tui["id"]!])
        try pane.waitFor("closed this connection with client.kill")
        try pane.waitFor("connected to \(d.socketPath)")
        #expect(try admin.call("client.list")["clients"]?.arrayValue?.contains { $0["client"] == "nav-tui" } == true)
        try pane.send("q")
        try pane.waitFor("exit=0")
    }

    @Test func reconnectsWhenNavdRestarts() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock")
        let command = "NAVD_SOCKET=\(sock) \(Repo.binary("nav-tui")); echo exit=$?; exec sleep 120"
        var pane: TmuxPane
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: sock)
            pane = try TmuxPane(width: 100, height: 30, command: command)
            try pane.waitFor("actions on shop.Home")
            try pane.send("1")
            try pane.waitFor("▸ id*")
            try pane.send("p", "9", "Enter")
            try pane.waitFor("actions on shop.Product")
            d.stop()
        }
        try pane.waitFor("reconnecting")
        let d2 = try Daemon(arguments: ["--state", state], socketPath: sock)
        // The restored tree comes back on screen without any key pressed.
        try pane.waitFor("connected to \(sock)")
        try pane.waitFor("actions on shop.Product", "shop.Product [n8] {\"id\":\"p9\"}")
        try pane.send("q")
        try pane.waitFor("exit=0")
        _ = d2
    }
}
