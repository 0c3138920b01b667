import Foundation
import JSON
import NavTesting
import Testing

/// A graph with one coordinator per precondition behaviour, written to a temporary folder.
func preconditionGraph(_ dir: TempDir) throws -> String {
    let flag = dir.file("recovered.flag")
    let yaml = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Pass, Fail, Slow, Missing, Asked, Three, Protected, Sleepy, Recovering, Fixed, Echo, Hub, Vault, Flood, Wordy]}
          Hub: {opens: [Sleepy]}
          Pass: {preconditions: [passCmd]}
          Fail: {preconditions: [failCmd]}
          Slow: {preconditions: [slowCmd]}
          Missing: {preconditions: [missingCmd]}
          Asked: {preconditions: [asked]}
          Three: {preconditions: [first, second, third]}
          Protected: {preconditions: [loggedIn, asked]}
          Login:
            flow: {start: Credentials, result: {type: object, required: [user], properties: {user: {type: string}}}}
          Credentials: {}
          Sleepy: {preconditions: [sleep1]}
          Recovering: {preconditions: [flag]}
          Fixed: {preconditions: [fixable]}
          Vault: {preconditions: [vault]}
          Flood: {preconditions: [floodCmd]}
          Wordy: {preconditions: [wordyCmd]}
          Echo:
            setup: {type: object, properties: {word: {type: string}}}
            preconditions: [echoArgs]
        preconditions:
          passCmd: {command: [sh, -c, "cat >/dev/null; exit 0"]}
          failCmd: {command: [sh, -c, "echo out of stock; echo second line; exit 3"]}
          slowCmd: {command: [sleep, "30"], timeout: 300ms}
          missingCmd: {command: [./no-such-program]}
          floodCmd: {command: [yes], timeout: 60s}
          wordyCmd: {command: [sh, -c, "printf 'é%.0s' $(seq 3000); exit 1"]}
          asked: {provider: true, timeout: 2s}
          first: {check: {fact: a, equals: 1}}
          second: {check: {fact: b, equals: 1}}
          third: {check: {fact: c, equals: 1}}
          loggedIn:
            check: {fact: loggedIn, equals: true}
            recover: {flow: Login}
          sleep1: {command: [sleep, "1"], timeout: 10s}
          flag:
            command: [test, -e, "\(flag)"]
            recover: {command: [touch, "\(flag)"]}
          fixable:
            check: {fact: fixed, equals: true}
            recover: {provider: fixer}
          vault:
            provider: {timeout: 2s}
            recover: {provider: vault}
          echoArgs:
            command: [sh, -c, "read nav; case \\"$nav\\" in *'\\"to\\":\\"app.Echo\\"'*) ;; *) echo bad stdin; exit 1;; esac; test \\"$0 $1 $2\\" = \\"app.Echo main hello\\" || { echo \\"args: $0 $1 $2\\"; exit 1; }; test -z \\"$HOME\\" || { echo leaked env; exit 1; }", "{to}", "{session}", "{with.word}"]
        """
    try yaml.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
    return dir.path
}

@Suite struct PreconditionTests {
    func daemon(_ dir: TempDir) throws -> Daemon {
        try Daemon(arguments: ["--graph", try preconditionGraph(dir)])
    }

    @Test func commandPassesAndFailsWithItsFirstLine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        #expect(try c.call("navigate", ["to": "Pass"])["version"] == 1)
        try c.call("dismiss")
        let e = try c.callError("navigate", ["to": "Fail"])
        #expect(e["code"] == -32005 && e["data"]?["precondition"] == "app.failCmd" && e["data"]?["reason"] == "out of stock")
        let m = try c.callError("navigate", ["to": "Missing"])
        #expect(m["code"] == -32005)
        let message = m["data"]?["reason"]?.stringValue ?? ""
        #expect(message.contains("cannot run"), "\(m)")
        #expect(try c.call("tree")["version"] == 2)
    }

    /// A command that writes without end is cut off at its output's cap (its pipe closed, not
    /// read and thrown away until the timeout), and fails at once saying so; a first line longer
    /// than a reason's bound is cut, on a character's edge.
    @Test func aCommandWritingWithoutEndIsCutOffAndALongReasonIsBounded() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        let start = Date()
        let e = try c.callError("navigate", ["to": "Flood"])
        #expect(e["code"] == -32005, "\(e)")
        let reason = e["data"]?["reason"]?.stringValue ?? ""
        #expect(reason.hasPrefix("yes wrote more than 64 KiB of output; navd stopped reading it and it "), "\(e)")
        #expect(Date().timeIntervalSince(start) < 30, "failed only at its timeout: \(e)")
        let w = try c.callError("navigate", ["to": "Wordy"])
        let long = w["data"]?["reason"]?.stringValue ?? ""
        #expect(long.utf8.count <= 1024 && long.hasSuffix("…") && long.hasPrefix("éé"), "\(long.utf8.count) bytes")
        #expect(long.dropLast().allSatisfy { $0 == "é" }, "cut inside a character: \(long.suffix(4))")
        #expect((w["message"]?.stringValue ?? "").utf8.count < 1300)
        #expect(try c.call("tree")["version"] == 0)
    }

    @Test func commandsGetPlaceholdersStdinAndACleanEnvironment() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        let r = try c.call("navigate", ["to": "Echo", "with": ["word": "hello"]])
        #expect(r["version"] == 1, "\(r)")
    }

    /// `{with.a.b}` gives a command a nested field of the setup; a missing one is empty.
    @Test func aCommandReadsANestedFieldOfTheSetup() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Ship]}
              Ship:
                setup: {type: object, properties: {address: {type: object, properties: {city: {type: string}}}, lines: {type: array}}}
                preconditions: [toParis]
            preconditions:
              toParis: {command: [sh, -c, 'test "$0|$1" = "Paris|b" || { echo "city $0, line [$1]"; exit 1; }', "{with.address.city}", "{with.lines.1}"]}
            """)
        let c = try d.client()
        #expect(try c.call("navigate", ["to": "Ship", "with": ["address": ["city": "Paris"], "lines": ["a", "b"]]])["version"] == 1)
        try c.call("dismiss")
        let e = try c.callError("navigate", ["to": "Ship", "with": ["address": ["city": "Lyon"]]])
        #expect(e["data"]?["reason"] == "city Lyon, line []", "\(e)")
    }

    @Test func commandTimesOutAndIsKilled() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        let e = try c.callError("navigate", ["to": "Slow"])
        #expect(e["code"] == -32006 && e["data"]?["kind"] == "preconditionTimeout")
        // The sleep got SIGTERM and was reaped: navd has no child left.
        let deadline = Date().addingTimeInterval(5)
        while childCount(of: d.pid) > 0 && Date() < deadline { usleep(20_000) }
        #expect(childCount(of: d.pid) == 0)
    }

    @Test func recoveryByCommandThenPasses() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        #expect(try c.call("navigate", ["to": "Recovering"])["version"] == 1)
        #expect(FileManager.default.fileExists(atPath: dir.file("recovered.flag")))
    }

    /// Subscribers told that a navigation is pending are told when it ends: committed with its
    /// version, failed or cancelled with the error its client gets, before that client's answer;
    /// a navigation that commits at once was never pending and has no end to tell.
    @Test func aPendingNavigationsEndIsToldToThoseToldItWasPending() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        let watcher = try d.client()
        #expect(try watcher.call("subscribe")["pending"] == nil, "nothing waits")
        let p = try d.client()
        try p.call("provide", ["preconditions": ["asked"]])
        // Committed.
        var id = try c.send("navigate", ["to": "Asked", "progress": true])
        var req = try p.serverRequest("precondition.evaluate")
        let announced = try #require(try watcher.notification("navigationPending")["params"])
        let nav = try #require(announced["navigation"])
        // A client subscribing while it waits is told what waits, as the others were.
        let late = try d.client()
        #expect(try late.call("subscribe")["pending"] == [announced])
        try p.respond(to: req, result: ["passed": true])
        var ended = try watcher.notification("navigationEnded")["params"]
        #expect(ended == ["session": "main", "navigation": nav, "status": "committed", "version": 1], "\(String(describing: ended))")
        // The client that asked with progress hears it before its answer.
        let before = try c.notification("navigationEnded")["params"]
        #expect(before?["navigation"] == nav)
        #expect(try c.reply(to: id)["result"]?["version"] == 1)
        try c.call("dismiss")
        // Failed: the error the client gets.
        id = try c.send("navigate", ["to": "Asked"])
        req = try p.serverRequest("precondition.evaluate")
        _ = try watcher.notification("navigationPending")
        try p.respond(to: req, result: ["passed": false, "reason": "card expired"])
        let refused = try c.reply(to: id)["error"]
        ended = try watcher.notification("navigationEnded")["params"]
        #expect(ended?["status"] == "failed" && ended?["error"] == refused, "\(String(describing: ended))")
        // Cancelled.
        id = try c.send("navigate", ["to": "Asked"])
        _ = try p.serverRequest("precondition.evaluate")
        let cancelled = try #require(try watcher.notification("navigationPending")["params"]?["navigation"])
        try watcher.call("cancel", ["navigation": cancelled])
        #expect(try c.reply(to: id)["error"]?["data"]?["kind"] == "cancelled")
        ended = try watcher.notification("navigationEnded")["params"]
        #expect(ended?["status"] == "cancelled" && ended?["navigation"] == cancelled && ended?["error"]?["data"]?["kind"] == "cancelled", "\(String(describing: ended))")
        // At once: nothing pending, nothing ended.
        try c.call("navigate", ["to": "Hub", "from": "n1"])
        try watcher.call("ping")
        #expect(!watcher.notifications.contains { $0["method"] == "navigationEnded" }, "\(watcher.notifications)")
    }

    @Test func providerPassesFailsTimesOutDisconnectsAndMalformed() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        // No provider.
        let none = try c.callError("navigate", ["to": "Asked"])
        #expect(none["code"] == -32005 && (none["data"]?["reason"]?.stringValue ?? "").contains("no connected client provides"))
        let p = try d.client()
        try p.call("provide", ["preconditions": ["asked"]])
        // Passed.
        var id = try c.send("navigate", ["to": "Asked"])
        var req = try p.serverRequest("precondition.evaluate")
        #expect(req["params"]?["precondition"] == "app.asked")
        #expect(req["params"]?["navigation"]?["to"] == "app.Asked")
        try p.respond(to: req, result: ["passed": true])
        #expect(try c.reply(to: id)["result"]?["version"] == 1)
        try c.call("dismiss")
        // Refused with a reason.
        id = try c.send("navigate", ["to": "Asked"])
        req = try p.serverRequest("precondition.evaluate")
        try p.respond(to: req, result: ["passed": false, "reason": "card expired"])
        #expect(try c.reply(to: id)["error"]?["data"]?["reason"] == "card expired")
        // Malformed.
        id = try c.send("navigate", ["to": "Asked"])
        req = try p.serverRequest("precondition.evaluate")
        try p.respond(to: req, result: ["ok": 1])
        let message = try c.reply(to: id)["error"]?["data"]?["reason"]?.stringValue ?? ""
        #expect(message.contains("not {passed"))
        // Timeout (2 s).
        id = try c.send("navigate", ["to": "Asked"])
        _ = try p.serverRequest("precondition.evaluate")
        #expect(try c.reply(to: id)["error"]?["code"] == -32006)
        // Disconnect mid-evaluation.
        id = try c.send("navigate", ["to": "Asked"])
        _ = try p.serverRequest("precondition.evaluate")
        p.close()
        let gone = try c.reply(to: id)
        #expect(gone["error"]?["code"] == -32005 && (gone["error"]?["data"]?["reason"]?.stringValue ?? "").contains("disconnected"))
    }

    @Test func recoveryByProvider() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        let fixer = try d.client()
        // A recovery provider's name is asked for; a misspelt one is kept and reported.
        let provided = try fixer.call("provide", ["preconditions": ["fixer", "fixr"]])
        #expect(provided["preconditions"] == ["fixer", "fixr"] && provided["notAsked"] == ["fixr"], "\(provided)")
        let id = try c.send("navigate", ["to": "Fixed"])
        let req = try fixer.serverRequest("precondition.recover")
        // The precondition recovered, as precondition.evaluate names it, and the provider asked.
        #expect(req["params"]?["precondition"] == "app.fixable" && req["params"]?["provider"] == "fixer", "\(req)")
        try fixer.call("context.set", ["facts": ["fixed": true]])
        try fixer.respond(to: req, result: ["recovered": true])
        #expect(try c.reply(to: id)["result"]?["version"] == 1)
    }

    /// `recover: {provider: vault}` in module app names the precondition `app.vault`, as `provide`
    /// reads `vault`: the client that provides it evaluates and recovers it.
    @Test func recoveryByTheProviderOfThePreconditionItself() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        let vault = try d.client()
        let provided = try vault.call("provide", ["preconditions": ["vault"]])
        #expect(provided["preconditions"] == ["app.vault"] && provided["notAsked"] == nil, "\(provided)")
        let watcher = try d.client()
        try watcher.call("subscribe")
        let id = try c.send("navigate", ["to": "Vault"])
        let first = try vault.serverRequest("precondition.evaluate")
        #expect(first["params"]?["precondition"] == "app.vault")
        try vault.respond(to: first, result: ["passed": false, "reason": "locked"])
        let recover = try vault.serverRequest("precondition.recover")
        #expect(recover["params"]?["precondition"] == "app.vault" && recover["params"]?["provider"] == nil, "\(recover)")
        #expect(recover["params"]?["navigation"]?["to"] == "app.Vault" && recover["params"]?["session"] == "main", "\(recover)")
        try vault.respond(to: recover, result: ["recovered": true])
        let again = try vault.serverRequest("precondition.evaluate")
        try vault.respond(to: again, result: ["passed": true])
        #expect(try c.reply(to: id)["result"]?["version"] == 1)
        // Subscribers are told which of the three it waits for: the evaluation, the recovery (and by
        // whom), the evaluation after it.
        let told = try (0..<3).map { _ in try watcher.notification("navigationPending")["params"] ?? .null }
        #expect(told[0]["recovering"] == nil && told[0]["afterRecovery"] == nil, "\(told[0])")
        #expect(told[1]["recovering"] == ["provider": "app.vault"] && told[1]["waitingFor"] == "app.vault", "\(told[1])")
        #expect(told[2]["afterRecovery"] == true && told[2]["recovering"] == nil, "\(told[2])")
    }

    @Test func earliestErrorWithThreePreconditions() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        #expect(try c.callError("navigate", ["to": "Three"])["data"]?["precondition"] == "app.first")
        try c.call("context.set", ["facts": ["a": 1, "c": 1]])
        #expect(try c.callError("navigate", ["to": "Three"])["data"]?["precondition"] == "app.second")
        try c.call("context.set", ["facts": ["b": 1, "c": 0]])
        #expect(try c.callError("navigate", ["to": "Three"])["data"]?["precondition"] == "app.third")
        try c.call("context.set", ["facts": ["c": 1]])
        #expect(try c.call("navigate", ["to": "Three"])["version"] == 1)
    }

    @Test func loginRecoveryScenario() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let app = try d.client()      // the front-end the user taps in
        let watcher = try d.client()  // another front-end, subscribed
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        var mirror = try watcher.call("subscribe")
        _ = mirror
        let id = try app.send("navigate", ["to": "Protected"])
        // The login flow appears (a stackChanged like any other) and the navigation waits.
        let presented = try watcher.notification("stackChanged")
        let change = presented["params"]?["changes"]?.arrayValue?.first
        #expect(change?["op"] == "present")
        let flowNode = try #require(change?["node"]?["children"]?.arrayValue?.first)
        #expect(flowNode["coordinator"] == "app.Login" && flowNode["kind"] == "flow")
        let pending = try watcher.notification("navigationPending")
        #expect(pending["params"]?["waitingFor"] == "app.loggedIn" && pending["params"]?["to"] == "app.Protected")
        #expect(try watcher.call("stats")["pending"] == 1)
        // The user logs in: the flow sets the fact and completes.
        try app.call("context.set", ["facts": ["loggedIn": true]])
        let flowId = try #require(flowNode["id"])
        let completeId = try app.send("flowComplete", ["flow": flowId, "result": ["user": "ann"]])
        // The second precondition asks the provider, then the protected screen is pushed.
        let ask = try provider.serverRequest("precondition.evaluate")
        try provider.respond(to: ask, result: ["passed": true])
        #expect(try app.reply(to: completeId)["result"] != nil)
        let done = try app.reply(to: id)
        #expect(done["result"]?["version"] == 3, "\(done)")
        #expect(try watcher.notification("flowCompleted")["params"]?["status"] == "completed")
        let tree = try app.call("tree")
        let top = tree["root"]?["children"]?.arrayValue?.last
        #expect(top?["coordinator"] == "app.Protected")
        mirror = tree
    }

    @Test func cancelledLoginFailsTheNavigation() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let app = try d.client()
        let id = try app.send("navigate", ["to": "Protected"])
        let flow = try #require(try app.call("tree")["root"]?["children"]?.arrayValue?.first?["presented"]?["children"]?.arrayValue?.first?["id"])
        try app.call("flowComplete", ["flow": flow, "cancelled": true])
        let r = try app.reply(to: id)
        #expect(r["error"]?["code"] == -32005 && (r["error"]?["data"]?["reason"]?.stringValue ?? "").contains("cancelled"))
    }

    @Test func cancellationPaths() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        // cancel by id.
        var id = try c.send("navigate", ["to": "Sleepy"])
        var nav = try #require(try c.call("stats")["pending"]?.intValue == 1 ? "nav-1" : nil)
        #expect(try c.call("cancel", ["navigation": .string(nav)])["cancelled"] == true)
        #expect(try c.reply(to: id)["error"]?["code"] == -32008)
        // Superseded by a newer navigation from the same source.
        id = try c.send("navigate", ["to": "Sleepy"])
        let second = try c.send("navigate", ["to": "Sleepy"])
        #expect(try c.reply(to: id)["error"]?["data"]?["kind"] == "cancelled")
        nav = "nav-3"
        #expect(try c.call("cancel", ["navigation": .string(nav)])["cancelled"] == true)
        #expect(try c.reply(to: second)["error"]?["code"] == -32008)
        // Dismissing the source of a pending navigation.
        let hub = try c.call("navigate", ["to": "Hub"])["node"]!
        id = try c.send("navigate", ["to": "Sleepy", "from": hub])
        let gone = try c.call("dismiss", ["node": hub])
        let dismissed = try c.reply(to: id)
        #expect(dismissed["error"]?["code"] == -32008 && (dismissed["error"]?["message"]?.stringValue ?? "").contains("`\(hub.stringValue ?? "")` left the tree"))
        #expect(dismissed["error"]?["data"]?["version"] == gone["version"])
        // The initiating client disconnects.
        let quitter = try d.client()
        _ = try quitter.send("navigate", ["to": "Sleepy"])
        _ = try quitter.call("ping")  // navd has read the navigate before the ping
        #expect(try c.call("stats")["pending"] == 1)
        quitter.close()
        let deadline = Date().addingTimeInterval(5)
        while try c.call("stats")["pending"] != 0 && Date() < deadline { usleep(10_000) }
        #expect(try c.call("stats")["pending"] == 0)
        // Closing the session.
        try c.call("session.open", ["name": "s2"])
        id = try c.send("navigate", ["session": "s2", "to": "Sleepy"])
        try c.call("session.close", ["name": "s2"])
        #expect(try c.reply(to: id)["error"]?["code"] == -32008)
        // Every sleep was killed and reaped.
        while childCount(of: d.pid) > 0 && Date() < deadline.addingTimeInterval(3) { usleep(20_000) }
        #expect(childCount(of: d.pid) == 0)
    }

    /// A newer navigation from the same screen supersedes a pending one even when it has nothing to
    /// wait for and commits at once: the pending one is cancelled, names the newer one, and never
    /// lands on top of it.
    @Test func aNavigationThatCommitsAtOnceSupersedesOnePendingFromTheSameScreen() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(dir)
        let c = try d.client()
        let pending = try c.send("navigate", ["to": "Sleepy"])
        let hub = try c.call("navigate", ["to": "Hub"])
        let cancelled = try c.reply(to: pending)
        #expect(cancelled["error"]?["code"] == -32008 && cancelled["error"]?["data"]?["by"] == hub["navigation"], "\(cancelled)")
        #expect(try c.call("stats")["pending"] == 0)
        let top = try c.call("tree")["root"]?["children"]?.arrayValue?.last
        #expect(top?["coordinator"] == "app.Hub" && top?["id"] == hub["node"], "\(String(describing: top))")
        // A navigation from another screen leaves a pending one alone.
        let fromHub = try c.send("navigate", ["to": "Sleepy", "from": hub["node"]!])
        let home = try #require(try c.call("tree")["root"]?["children"]?.arrayValue?.first?["id"])
        try c.call("navigate", ["to": "Hub", "from": home])
        #expect(try c.call("stats")["pending"] == 1)
        #expect(try c.reply(to: fromHub)["result"] != nil)
    }
}

/// Number of live child processes of `pid` (from /proc).
func childCount(of pid: pid_t) -> Int {
    guard let s = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8) else { return 0 }
    return s.split(separator: " ").count
}
