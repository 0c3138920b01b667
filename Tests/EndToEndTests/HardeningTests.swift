import Foundation
import JSON
import NavTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Attacks a hostile local client, graph file or state file can mount, each answered with a clear
/// error while navd keeps serving everyone else.
@Suite(.serialized) struct HardeningTests {
    /// A graph whose command precondition writes its arguments, one per line, to `out`.
    private func argvGraph(_ dir: TempDir, out: String) throws -> String {
        let yaml = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Echo]}
              Echo:
                setup: {type: object, properties: {x: {type: string}, y: {type: string}}}
                preconditions: [record]
            preconditions:
              record: {command: [sh, -c, "printf '%s\\\\n' \\"$1\\" \\"$2\\" \\"$3\\" > \(out)", sh, "{session}", "{with.x}", "{with.y}"]}
            """
        try yaml.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        return dir.path
    }

    /// The embedded example's scripts go to `$TMPDIR/navd-example-<uid>`. Another user may make that
    /// folder first (a shared /tmp): navd then neither writes into it nor runs what it holds, but
    /// writes the scripts to a fresh private folder and runs those.
    @Test func aPlantedExampleFolderIsNeitherWrittenNorRun() throws {
        let tmp = TempDir()
        defer { tmp.remove() }
        let planted = tmp.file("navd-example-\(getuid())")
        let script = planted + "/scripts/in-stock.sh"
        let marker = tmp.file("planted-script-ran")
        try FileManager.default.createDirectory(atPath: planted + "/scripts", withIntermediateDirectories: true)
        let text = "#!/bin/sh\ntouch \(marker)\nexit 0\n"
        try text.write(toFile: script, atomically: true, encoding: .utf8)
        for path in [planted, planted + "/scripts", script] { chmod(path, 0o777) }
        if getuid() == 0 { for path in [planted, planted + "/scripts", script] { chown(path, 65534, 65534) } }
        var env = ProcessInfo.processInfo.environment
        env["TMPDIR"] = tmp.path
        let d = try Daemon(environment: env)
        let c = try d.client()
        try c.call("context.set", ["facts": ["loggedIn": true, "cart.items": 2]])
        try c.call("navigate", ["to": "cart.Cart", "by": "select"])
        let r = try c.call("navigate", ["to": "cart.Checkout"], timeout: 20)
        #expect(r["node"] != nil, "\(r)")
        #expect(!FileManager.default.fileExists(atPath: marker), "navd ran the planted script")
        #expect(try String(contentsOfFile: script, encoding: .utf8) == text, "navd wrote into the planted folder")
        let made = try FileManager.default.contentsOfDirectory(atPath: tmp.path).filter { $0.hasPrefix("navd-example-\(getuid())-") }
        #expect(made.count == 1, "\(made)")
    }

    /// A value shaped like a placeholder is passed as written: no second scan, no loop, no growth,
    /// no other field injected. (The old expansion looped for ever on `{with.x}`.)
    @Test func placeholderShapedValuesAreNotExpandedAgain() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let out = dir.file("args.txt")
        let d = try Daemon(arguments: ["--graph", try argvGraph(dir, out: out)])
        let c = try d.client()
        // (A session name can no longer be placeholder-shaped: names are letters, digits, _, - and .)
        try c.call("session.open", ["name": "s.1"])
        let r = try c.call("navigate", ["session": "s.1", "to": "Echo",
                                        "with": ["x": "{with.x}{with.x}", "y": "{with.x}{session}"]], timeout: 5)
        #expect(r["version"] == 1)
        let lines = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.prefix(3) == ["s.1", "{with.x}{with.x}", "{with.x}{session}"])
        #expect(try d.client().call("ping", timeout: 5) == "pong")
    }

    /// A setup field's pattern that a backtracking matcher takes exponential time on (`^(a+)+$`
    /// against a long run of `a` and one other character): the navigation is answered at once with
    /// invalidSetup, the event loop never blocked; a string too long to check in a check's steps is
    /// refused saying so; and a pattern that needs backtracking is refused at load, with where it is.
    @Test func aPatternWithNestedQuantifiersIsMatchedInOnePass() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let yaml = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Code]}
              Code: {setup: {type: object, required: [k], properties: {k: {type: string, pattern: "^(a+)+$"}, w: {type: string, pattern: ".{0,400}x"}}}}
            """
        try yaml.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--graph", dir.path])
        let c = try d.client()
        // (A backtracking matcher would not answer this in years; one pass answers it in
        // milliseconds. The waits are generous for a sanitized build on a loaded machine, where
        // this test once took 40 s in all and an answer more than 5 s.)
        let e = try c.callError("navigate", ["to": "Code", "with": ["k": .string(String(repeating: "a", count: 4_000) + "!")]], timeout: 30)
        #expect(e["data"]?["kind"] == "invalidSetup" && e["data"]?["rule"] == "pattern", "\(e)")
        // A string too long to check against its pattern within the steps a check may take.
        let long = try c.callError("navigate", ["to": "Code", "with": ["k": "a", "w": .string(String(repeating: "a", count: 20_000))]], timeout: 30)
        #expect(long["data"]?["rule"] == "pattern" && long["message"]?.stringValue?.contains("is too long (20000 characters) to be checked") == true, "\(long)")
        #expect(try c.call("navigate", ["to": "Code", "with": ["k": "aaaa"]], timeout: 30)["version"] == 1)
        #expect(try d.client().call("ping") == "pong")

        try yaml.replacingOccurrences(of: "^(a+)+$", with: "^(a)\\\\1$").write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let check = try runCommand(Repo.binary("navd"), ["check", dir.path])
        #expect(check.status != 0)
        #expect((check.stdout + check.stderr).contains("backreferences (`\\1`) are not supported: navd matches patterns without backtracking (at character 5)"), "\(check.stdout + check.stderr)")
    }

    /// A NUL byte would cut the argument silently: the navigation is refused with invalidParams.
    @Test func aNULByteInASubstitutedValueIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let out = dir.file("args.txt")
        let d = try Daemon(arguments: ["--graph", try argvGraph(dir, out: out)])
        let c = try d.client()
        let e = try c.callError("navigate", ["to": "Echo", "with": ["x": "ab\u{0}cd"]])
        #expect(e["code"] == -32602 && e["data"]?["kind"] == "invalidParams" && e["data"]?["field"] == "x", "\(e)")
        #expect(!FileManager.default.fileExists(atPath: out), "the command must not have run")
        #expect(try c.call("tree")["version"] == 0)
    }

    @Test func badHeaderIsAnInvalidRequestAndTwoContentLengthsAreRefused() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.sendRaw("Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}")
        let m = try #require(try c.readMessage())
        #expect(m["error"]?["code"] == -32600 && m["error"]?["data"]?["kind"] == "badHeader", "\(m)")
        #expect(try c.waitForClose())
        let c2 = try d.client()
        try c2.sendRaw("Content-Length: " + String(repeating: "1", count: 2000))
        let m2 = try #require(try c2.readMessage())
        #expect(m2["error"]?["data"]?["kind"] == "badHeader", "a header that never ends is refused at 1 KiB: \(m2)")
        #expect(try d.client().call("ping") == "pong")
    }

    /// `--socket` naming a regular file leaves the file alone; an over-long path is refused, not cut.
    @Test func socketAndStatePathsNavdCannotUseAreRefusedSayingWhy() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let file = dir.file("precious.txt")
        try "keep me".write(toFile: file, atomically: true, encoding: .utf8)
        let d = try Daemon(socketPath: file, waitUntilServing: false)
        #expect(d.waitForExit(timeout: 10) == 1)
        #expect(d.stderr.contains("is not a socket"), "\(d.stderr)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "keep me")

        // A bad option is a usage error (status 64, as sysexits' EX_USAGE), said before anything starts.
        let long = dir.path + "/" + String(repeating: "s", count: 120) + ".sock"
        let d2 = try Daemon(socketPath: long, waitUntilServing: false)
        #expect(d2.waitForExit(timeout: 10) == 64)
        #expect(d2.stderr.contains("at most 107"), "\(d2.stderr)")

        // A directory that does not exist is named as missing (libuv reports it as EACCES).
        let missing = dir.path + "/no-such-dir/navd.sock"
        let d3 = try Daemon(socketPath: missing, waitUntilServing: false)
        #expect(d3.waitForExit(timeout: 10) == 1)
        #expect(d3.stderr.contains("the directory \(dir.path)/no-such-dir does not exist; create it"), "\(d3.stderr)")

        // A state file where no file can be made says where navd must be able to write.
        let d4 = try Daemon(arguments: ["--state", "/proc/navd-test-state.sqlite"], waitUntilServing: false)
        #expect(d4.waitForExit(timeout: 10) == 1)
        #expect(d4.stderr.contains("cannot open the state file /proc/navd-test-state.sqlite") && d4.stderr.contains("/proc must be a directory navd may write in"),
                "\(d4.stderr)")
    }

    /// `--socket ""` (an unset variable in `--socket "$X"`) and an abstract name would make Linux
    /// bind a socket no file permission protects: both are refused, and so is any empty path option.
    @Test(arguments: [["--socket", ""], ["--socket", "@navd"], ["--graph", ""], ["--state", ""], ["--policy", ""]])
    func emptyPathsAndAbstractSocketNamesAreRefused(_ option: [String]) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = option[0] == "--socket" ? try Daemon(socketPath: option[1], waitUntilServing: false)
                                        : try Daemon(arguments: option, waitUntilServing: false)
        #expect(d.waitForExit(timeout: 10) == 64, "\(d.stderr)")
        let said = option[1].isEmpty ? "\(option[0]) is empty" : "abstract socket name"
        #expect(d.stderr.contains(said), "\(d.stderr)")
    }

    /// Without `--socket` and `XDG_RUNTIME_DIR`, navd listens on the contract's `/tmp/navd-<uid>.sock`
    /// (mode 0600) and navctl finds it there; a symbolic link or a socket of another uid put at that
    /// path first is never taken over. Each process runs in a mount namespace of its own whose `/tmp`
    /// is a temporary directory, so the test neither meets nor disturbs a navd of this machine; the
    /// binaries' directory is mounted into it (the checkout itself may lie under `/tmp`; a copy made
    /// while other tests spawn processes could be held open by one of them: "Text file busy").
    @Test func theDefaultSocketIsTheContractsPathAndIsNeverTakenOver() throws {
        try #require(getuid() == 0, "the test makes a mount namespace (unshare --mount): it runs as root, as CI does")
        let tmp = TempDir()
        defer { tmp.remove() }
        chmod(tmp.path, 0o1777)
        try FileManager.default.createDirectory(atPath: tmp.file("bin"), withIntermediateDirectories: true)
        let binaries = URL(fileURLWithPath: Repo.binary("navd")).deletingLastPathComponent().path
        // `sh -c SCRIPT TMP BINARIES PROGRAM ARGS…`: BINARIES is mounted at TMP/bin, /tmp becomes TMP
        // (with that mount), then PROGRAM runs from /tmp/bin with ARGS.
        let privateTmp = ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                          #"mount --bind "$1" "$0/bin" && mount --rbind "$0" /tmp && program=$(basename "$2") && shift 2 && exec "/tmp/bin/$program" "$@""#,
                          tmp.path, binaries]
        var env = ProcessInfo.processInfo.environment
        env["XDG_RUNTIME_DIR"] = nil
        env["NAVD_SOCKET"] = nil
        let path = tmp.file("navd-\(getuid()).sock")
        let d = try Daemon(socketPath: path, environment: env, useDefaultSocket: true, launcher: privateTmp)
        var st = stat()
        #expect(lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK && st.st_mode & 0o777 == 0o600, "\(String(st.st_mode, radix: 8))")
        #expect(try d.client().call("ping") == "pong")
        let navctl = try runCommand(privateTmp[0], Array(privateTmp.dropFirst()) + [Repo.binary("navctl"), "tree"], environment: env)
        #expect(navctl.status == 0 && navctl.stdout.contains("session main"), "\(navctl)")
        #expect(d.stop() == 0)

        // A symbolic link at the path (to a socket of navd's own, even) is not followed.
        let elsewhere = tmp.file("elsewhere.sock")
        let own = try Daemon(socketPath: elsewhere)
        symlink(elsewhere, path)
        let linked = try Daemon(socketPath: path, environment: env, waitUntilServing: false, useDefaultSocket: true, launcher: privateTmp)
        #expect(linked.waitForExit(timeout: 10) == 1)
        #expect(linked.stderr.contains("exists and is not a socket"), "\(linked.stderr)")
        #expect(own.stop() == 0)
        unlink(path)

        // A socket another user put there first.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        let bound = UnixSocketAddress(path).bind(fd)
        try #require(bound == 0)
        chown(path, 65534, 65534)
        let squatted = try Daemon(socketPath: path, environment: env, waitUntilServing: false, useDefaultSocket: true, launcher: privateTmp)
        #expect(squatted.waitForExit(timeout: 10) == 1)
        #expect(squatted.stderr.contains("belongs to uid 65534"), "\(squatted.stderr)")
        #expect(lstat(path, &st) == 0 && st.st_uid == 65534, "left as it was")
        unlink(path)

        // Sessions kept under the earlier default socket (/tmp/navd-<uid>/navd.sock) stay the
        // default socket's until a state file of the new name exists.
        env["XDG_STATE_HOME"] = "/tmp/state"  // (inside the namespace, where tmp is /tmp)
        let earlier = tmp.file("state/navd/tmp_navd-\(getuid())_navd.sock.sqlite")
        try FileManager.default.createDirectory(atPath: tmp.file("state/navd"), withIntermediateDirectories: true)
        chmod(tmp.file("state"), 0o700)
        chmod(tmp.file("state/navd"), 0o700)
        let before = try Daemon(arguments: ["--state", earlier])
        try before.client().call("navigate", ["to": "shop.Product", "with": ["id": "p1"]])
        #expect(before.stop() == 0)
        let after = try Daemon(socketPath: path, environment: env, useDefaultSocket: true, useDefaultState: true, launcher: privateTmp)
        #expect(try after.client().call("tree")["version"] == 1, "the earlier default's sessions: \(after.stderr)")
        #expect(after.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: tmp.file("state/navd/tmp_navd-\(getuid()).sock.sqlite")))
    }

    /// SIGTERM while a client has replies queued that it has not read yet: it still gets every one
    /// if it reads within the shutdown deadline, and one that never reads does not hold navd back.
    @Test func shutdownFlushesQueuedRepliesWithinItsDeadline() throws {
        let d = try Daemon()
        let reader = try d.client()
        let sink = try d.client()
        var burst: [UInt8] = []
        for i in 0..<30 { burst += Array(#"{"jsonrpc":"2.0","id":\#(i),"method":"graph.describe"}"#.utf8) + [10] }
        try reader.sendRaw(burst)
        try sink.sendRaw(burst)
        // Asked until both bursts were read and answered: `requests` counts the probe's own calls
        // too, so it must reach the bursts' 60 beside them (counting 61 alone let a probe that
        // asked often, while costly requests were handled a few a turn, stop after 55).
        let probe = try d.client()
        var polls = 1
        var stats = try probe.call("stats")
        while stats["requests"]?.intValue ?? 0 < 60 + polls {
            stats = try probe.call("stats")
            polls += 1
        }
        let start = Date()
        kill(d.pid, SIGTERM)
        var replies = 0
        while let m = try reader.readMessage(timeout: 5) {
            if m["result"]?["coordinators"] != nil { replies += 1 }
        }
        #expect(replies == 30, "a client reading during shutdown gets every reply it was owed")
        #expect(d.waitForExit() == 0)
        #expect(Date().timeIntervalSince(start) < 3, "navd took \(Date().timeIntervalSince(start)) s to stop")
    }
}

/// Roles: what changes the daemon needs `admin`; a revoked token loses its roles on open connections.
@Suite(.serialized) struct AccessTests {
    /// Runs `lines` through socat as uid 65534 (nobody) against `d`, whose socket and folder are
    /// opened to others for the test; returns the replies.
    private func asNobody(_ d: Daemon, _ lines: [String]) throws -> [JSONValue] {
        chmod(d.dir.path, 0o755)
        chmod(d.socketPath, 0o666)
        let input = lines.joined(separator: "\n") + "\n"
        let r = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                    "/usr/bin/socat", "-t2", "-", "UNIX-CONNECT:\(d.socketPath)"], input: input)
        let parser = JSONParser(maxDepth: 64)
        return try r.stdout.split(separator: "\n").map { try parser.parse(Array($0.utf8)) }
    }

    private func request(_ id: Int, _ method: String, _ params: String = "{}") -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#
    }

    /// `hello {keepRoles}` gives roles up for the rest of the connection: navd's own uid without
    /// admin is refused graph.reload; keeping a role it does not hold grants nothing; a bad list is
    /// refused with what to send.
    @Test func aConnectionGivesUpRolesForGood() throws {
        let d = try Daemon()
        let c = try d.client()
        #expect(try c.call("hello", ["keepRoles": ["admin", "auditor"]])["roles"] == ["admin"])
        #expect(try c.call("hello", ["keepRoles": []])["roles"] == [])
        #expect(try c.callError("graph.reload")["data"]?["kind"] == "accessDenied")
        #expect(try c.call("hello", ["keepRoles": ["admin"]])["roles"] == [], "a role given up is not regained")
        #expect(try c.callError("hello", ["keepRoles": "admin"])["data"]?["param"] == "keepRoles")
        #expect(try d.client().call("graph.reload")["ok"] == true, "another connection of the uid keeps admin")
    }

    @Test func anotherUserNeedsAdminToChangeTheDaemonOrOthersSessions() throws {
        let d = try Daemon()
        let owner = try d.client()
        try owner.call("session.open", ["name": "rootsession"])
        let replies = try asNobody(d, [
            request(1, "hello"),
            request(2, "graph.reload"),
            request(3, "provide", #"{"preconditions":["shop.x"]}"#),
            request(4, "session.close", #"{"name":"rootsession"}"#),
            request(5, "context.set", #"{"facts":{"loggedIn":true}}"#),
            request(6, "session.open", #"{"name":"mine"}"#),
            request(7, "context.set", #"{"session":"mine","facts":{"loggedIn":true}}"#),
            request(8, "session.close", #"{"name":"mine"}"#),
        ])
        let byId = Dictionary(replies.map { ($0["id"]?.intValue ?? -1, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byId[1]?["result"]?["roles"] == [], "\(replies)")
        for id in [2, 3, 4, 5] {
            #expect(byId[id]?["error"]?["code"] == -32004 && byId[id]?["error"]?["data"]?["kind"] == "accessDenied", "request \(id): \(String(describing: byId[id]))")
        }
        let said = byId[2]?["error"]?["message"]?.stringValue ?? ""
        #expect(said.contains("needs the role `admin`"), "\(said)")
        #expect(byId[7]?["result"]?["facts"]?["loggedIn"] == true, "a user writes the facts of a session they opened")
        #expect(byId[8]?["result"]?["ok"] == true)
        #expect(try owner.call("session.list")["sessions"] == ["main", "rootsession"])
        #expect(try owner.call("context.get")["facts"] == [:])
    }

    /// Guessing tokens is slowed per uid: 20 unknown tokens, then none is looked at (the right one
    /// neither) until its rate (10 a second) allows; another uid's token is looked at meanwhile.
    @Test func unknownTokensAreTakenAtAFewASecondPerUid() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try Daemon(arguments: ["--policy", dir.policy("tokens: {\"k7Qw-93xz-L2pe\": [auditor]}\n")])
        let c = try d.client()
        // 25 guesses in one read: the first 20 are looked at, the rest are not.
        try c.sendRaw((0..<25).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"hello","params":{"token":"guess-\#($0)"}}"# }.joined(separator: "\n") + "\n")
        var unknown = 0, slowed: [JSONValue] = []
        for i in 0..<25 {
            let r = try c.reply(to: .int(i))
            if r["error"]?["data"]?["kind"] == "accessDenied" { unknown += 1 } else { slowed.append(r) }
        }
        #expect(unknown == 20 && slowed.count == 5, "\(slowed)")
        let e = slowed.first?["error"]
        let wait = e?["data"]?["retryAfterMs"]?.intValue ?? 0
        #expect(e?["data"]?["limit"] == "unknownTokens" && e?["data"]?["max"] == 20 && wait > 0 && wait <= 1_000, "\(String(describing: e))")
        let refused = try c.callError("hello", ["token": "k7Qw-93xz-L2pe"])
        #expect(refused["data"]?["limit"] == "unknownTokens" && (refused["message"]?.stringValue ?? "").contains("was not looked at"), "\(refused)")
        // Another uid's token is looked at meanwhile.
        chmod(d.dir.path, 0o755)
        chmod(d.socketPath, 0o666)
        let r = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                    "/usr/bin/socat", "-t2", "-", "UNIX-CONNECT:\(d.socketPath)"],
                               input: #"{"jsonrpc":"2.0","id":1,"method":"hello","params":{"token":"k7Qw-93xz-L2pe"}}"# + "\n")
        let theirs = try JSONParser(maxDepth: 64).parse(Array(r.stdout.utf8))
        #expect(theirs["result"]?["roles"] == ["auditor"], "\(r.stdout) \(r.stderr)")
        // Once the rate allows (the wait is the behaviour here), the right token is taken. Each
        // refusal says how long to wait; a client that waits that long is refused a few times at most
        // (navd's clock is the loop's, read when its poll returned).
        usleep(UInt32(wait) * 1_000)
        var taken: JSONValue? = nil, refusals: [JSONValue] = []
        while taken == nil && refusals.count < 5 {
            let r = try c.reply(to: c.send("hello", ["token": "k7Qw-93xz-L2pe"]))
            if let e = r["error"] {
                refusals.append(e)
                let again = e["data"]?["retryAfterMs"]?.intValue ?? 0
                #expect(e["data"]?["limit"] == "unknownTokens" && again > 0 && again <= 100, "\(e)")
                usleep(UInt32(max(1, again)) * 1_000)
            } else {
                taken = r["result"]?["roles"]
            }
        }
        #expect(taken == ["admin", "auditor"], "\(refusals)")
    }

    @Test func reloadNamesAPathOnlyWhenThePolicyAllowsIt() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = dir.file("graph")
        try FileManager.default.createDirectory(atPath: graph, withIntermediateDirectories: true)
        try "root: {stack: Home}\ncoordinators:\n  Home: {}\n".write(toFile: graph + "/app.yaml", atomically: true, encoding: .utf8)
        try "uids: {}\n".write(toFile: dir.file("policy.yaml"), atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--policy", dir.file("policy.yaml")])
        let c = try d.client()
        let e = try c.callError("graph.reload", ["path": .string(graph)])
        #expect(e["code"] == -32004 && (e["message"]?.stringValue ?? "").contains("allowReloadPath"), "\(e)")
        #expect(try c.call("graph.reload")["ok"] == true, "reloading the graph navd was started with needs no path")
        try "allowReloadPath: true\n".write(toFile: dir.file("policy.yaml"), atomically: true, encoding: .utf8)
        kill(d.pid, SIGHUP)
        try d.waitForLog("policy reloaded")
        let r = try c.call("graph.reload", ["path": .string(graph), "force": true])
        #expect(r["ok"] == true, "\(r)")
    }

    /// A policy file with problems: navd names each (file, line, column) and does not start; one
    /// broken after start is not reloaded on SIGHUP, and the policy in force stays.
    @Test func aBrokenPolicyIsRefusedWithEveryProblem() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let policy = dir.file("policy.yaml")
        try "uids: {\"abc\": [x]}\ntokenz: 1\n".write(toFile: policy, atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("a.sock"), "--ephemeral", "--policy", policy])
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(policy):1:8: error: `abc` under `uids` is not a numeric uid"), "\(r.stderr)")
        #expect(r.stderr.contains("\(policy):2:1: error: unknown key `tokenz` (did you mean `tokens`?)"), "\(r.stderr)")
        #expect(r.stderr.contains("navd: the policy file has 2 error(s)"), "\(r.stderr)")

        try "tokens: {\"s3cret\": [staff]}\n".write(toFile: policy, atomically: true, encoding: .utf8)
        chmod(policy, 0o600)  // it holds tokens
        let d = try Daemon(arguments: ["--policy", policy])
        let c = try d.client()
        #expect(try c.call("hello", ["token": "s3cret"])["roles"] == ["admin", "staff"])
        try "tokens: {\"s3cret\": staff, \"\": [x]}\n".write(toFile: policy, atomically: true, encoding: .utf8)
        chmod(policy, 0o600)  // it holds tokens
        kill(d.pid, SIGHUP)
        try d.waitForLog("policy not reloaded")
        #expect(try c.call("hello", ["token": "s3cret"])["roles"] == ["admin", "staff"], "the policy in force stays")
    }

    /// A policy file another user could have written grants nothing, nor one holding tokens that
    /// another user may read: refused at start (navd does not start, `navd check --policy` says
    /// why) and on SIGHUP (the policy in force stays).
    @Test func aPolicyFileOthersMayWriteOrReadItsTokensIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let policy = dir.file("policy.yaml")
        try "tokens: {\"s3cret\": [admin]}\n".write(toFile: policy, atomically: true, encoding: .utf8)
        func refused(_ mode: mode_t, saying: String) throws {
            chmod(policy, mode)
            let r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("a.sock"), "--ephemeral", "--policy", policy])
            #expect(r.status == 1 && r.stderr.contains("\(policy):1:1: error: \(saying)"), "\(r.stderr)")
            let check = try runCommand(Repo.binary("navd"), ["check", "--policy", policy])
            #expect(check.status == 1 && check.stderr.contains(saying), "\(check.stderr)")
        }
        try refused(0o666, saying: "the policy file is writable by other users (mode 0666): anyone could grant themselves admin; chmod go-w")
        try refused(0o644, saying: "the policy file holds tokens and may be read by other users (mode 0644): anyone could read a token and take its roles; chmod 600")
        if getuid() == 0 {
            chown(policy, 65534, 65534)
            try refused(0o600, saying: "the policy file belongs to uid 65534")
            chown(policy, 0, 0)
        }
        // Without tokens, anyone may read it.
        try "uids: {\"65534\": [staff]}\n".write(toFile: policy, atomically: true, encoding: .utf8)
        chmod(policy, 0o644)
        #expect(try runCommand(Repo.binary("navd"), ["check", "--policy", policy]).status == 0)

        try "tokens: {\"s3cret\": [admin]}\n".write(toFile: policy, atomically: true, encoding: .utf8)
        chmod(policy, 0o600)
        let d = try Daemon(arguments: ["--policy", policy])
        let c = try d.client()
        #expect(try c.call("hello", ["token": "s3cret"])["roles"] == ["admin"])
        try "tokens: {\"s3cret\": [admin], \"planted\": [admin]}\n".write(toFile: policy, atomically: true, encoding: .utf8)
        chmod(policy, 0o620)
        kill(d.pid, SIGHUP)
        try d.waitForLog("policy not reloaded")
        #expect(try d.client().callError("hello", ["token": "planted"])["data"]?["kind"] == "accessDenied", "the policy in force stays")
    }

    @Test func aRevokedTokenLosesItsRolesOnOpenConnections() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let policy = try dir.policy("tokens: {\"s3cret\": [staff]}\n")
        let d = try Daemon(graph: "root: {stack: Home}\ncoordinators:\n  Home: {opens: [BackOffice]}\n  BackOffice: {access: [staff]}\n",
                           arguments: ["--policy", policy])
        let c = try d.client()
        #expect(try c.call("hello", ["token": "s3cret"])["roles"] == ["admin", "staff"])
        #expect(try c.call("navigate", ["to": "BackOffice"])["version"] == 1)
        try c.call("dismiss")
        try "tokens: {}\n".write(toFile: policy, atomically: true, encoding: .utf8)
        chmod(policy, 0o600)  // it holds tokens
        kill(d.pid, SIGHUP)
        try d.waitForLog("policy reloaded")
        #expect(try c.call("hello")["roles"] == ["admin"])
        let e = try c.callError("navigate", ["to": "BackOffice"])
        #expect(e["data"]?["kind"] == "accessDenied", "\(e)")
    }

    /// A recovery flow whose access the navigating client lacks is not presented.
    @Test func aRecoveryFlowHonoursItsAccessRule() throws {
        let yaml = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Secret]}
              Secret: {preconditions: [signedIn]}
              StaffLogin: {flow: {start: Step}, access: [staff]}
              Step: {}
            preconditions:
              signedIn: {check: {fact: signedIn, equals: true}, recover: {flow: StaffLogin}}
            """
        let d = try Daemon(graph: yaml)
        let c = try d.client()
        let e = try c.callError("navigate", ["to": "Secret"])
        #expect(e["code"] == -32004 && e["data"]?["kind"] == "accessDenied" && e["data"]?["to"] == "app.StaffLogin", "\(e)")
        let tree = try c.call("tree")
        #expect(tree["version"] == 0, "nothing was presented: \(tree)")
    }
}

/// A state file edited by hand is refused with a message, not trusted.
@Suite(.serialized) struct TamperedStateTests {
    private func tampered(_ sql: String) throws -> String {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock")
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            let p = try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"]])
            try c.call("navigate", ["to": "shop.Reviews", "from": p["node"]!])
            d.stop()
        }
        if !sql.isEmpty {
            let r = try runCommand("/usr/bin/sqlite3", [state, sql])
            guard r.status == 0 else { throw TestFailure("sqlite3: \(r.stderr)") }
        } else {
            truncate(state, 0)
            unlink(state + "-wal")
        }
        let d = try Daemon(arguments: ["--state", state], socketPath: sock, waitUntilServing: false)
        #expect(d.waitForExit(timeout: 10) == 1, "navd must refuse the file: \(d.stderr)")
        return d.stderr
    }

    @Test func anEmptyFileIsRefused() throws {
        #expect(try tampered("").contains("is empty (0 bytes)"))
    }

    @Test func aHugeVersionIsRefused() throws {
        #expect(try tampered("UPDATE sessions SET version = 9223372036854775807").contains("outside 0"))
    }

    @Test func aRewoundIdCounterIsRefused() throws {
        #expect(try tampered("UPDATE sessions SET next_id = 1").contains("beyond the saved id counter"))
    }

    @Test func duplicateNodeIdsAreRefused() throws {
        // The pushed product and its reviews both become n8.
        let out = try tampered("UPDATE sessions SET tree = replace(tree, '\"id\":\"n9\"', '\"id\":\"n8\"')")
        #expect(out.contains("appears twice"), "\(out)")
    }

    @Test func aTabIndexOutOfRangeIsRefused() throws {
        let out = try tampered("UPDATE sessions SET tree = replace(tree, '\"selected\":0', '\"selected\":7')")
        #expect(out.contains("select tab 7"), "\(out)")
    }
}

/// Idempotency keys: trimmed per session on disk, kept across a graph reload.
@Suite(.serialized) struct KeyTests {
    @Test func aBusySessionDoesNotTrimAQuietSessionsKeys() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock")
        var quiet: [JSONValue] = []
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            try c.call("session.open", ["name": "quiet"])
            for i in 0..<11 {
                quiet.append(try c.call("navigate", ["session": "quiet", "to": "shop.Home", "by": "root", "key": .string("q\(i)")]))
            }
            // A busy session remembers more keys than a session keeps (4,096), in batches.
            for chunk in 0..<10 {
                var batch: [String] = []
                for i in 0..<500 {
                    let n = chunk * 500 + i
                    batch.append(#"{"jsonrpc":"2.0","id":\#(n),"method":"navigate","params":{"to":"shop.Home","by":"root","key":"b\#(n)"}}"#)
                }
                try c.sendRaw("[" + batch.joined(separator: ",") + "]\n")
                _ = try c.readMessage()
            }
            // The quiet session remembers one more key after the busy one's 5,000: the old navd then
            // trimmed the quiet session by the global counter and kept only this last key.
            quiet.append(try c.call("navigate", ["session": "quiet", "to": "shop.Home", "by": "root", "key": "q11"]))
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(arguments: ["--state", state], socketPath: sock)
        let c = try d.client()
        for i in 0..<12 {
            #expect(try c.call("navigate", ["session": "quiet", "to": "shop.Home", "by": "root", "key": .string("q\(i)")]) == quiet[i])
        }
        #expect(try c.call("tree", ["session": "quiet"])["version"] == 12, "no retry navigated again")
    }

    @Test func aGraphReloadKeepsKeys() throws {
        let d = try Daemon()
        let c = try d.client()
        let first = try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"], "key": "tap"])
        #expect(try c.call("graph.reload")["ok"] == true)
        #expect(try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"], "key": "tap"]) == first)
        #expect(try c.call("tree")["version"] == 1)
    }
}

/// `graph.reload` of a hostile directory: refused quickly with a diagnostic, other clients served.
@Suite struct HostileReloadTests {
    /// A reload's answer lists at most 100 warnings and counts them all: 11,998 screens nothing
    /// opens were a warning each, 2 MB of answer (50,000 were past `--max-output`, and the
    /// reload's answer was an error though the graph was taken).
    @Test func aReloadAnswersItsFirstWarningsAndCountsThem() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try "root: {stack: Home}\ncoordinators:\n  Home: {}\n".write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--graph", dir.path])
        let names = (0..<12_000).map { "S\($0)" }
        let large = "root: {stack: Home}\ncoordinators:\n  Home: {opens: [S0, S11999]}\n"
            + names.map { "  \($0): {setup: {type: object, properties: {id: {type: string}}}}\n" }.joined()
        try large.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let c = try d.client()
        let r = try c.call("graph.reload", timeout: 60)
        #expect(r["ok"] == true && r["version"] == 2)
        #expect(r["warnings"]?.arrayValue?.count == 100 && (r["warningCount"]?.intValue ?? 0) >= 11_998, "\(r["warningCount"] ?? .null)")
        #expect(try c.call("navigate", ["to": "S11999"])["node"] != nil)
        // A refused graph's errors are listed the same way.
        try (large + names.map { "  \($0)x: {opens: [Nowhere\($0)]}\n" }.prefix(300).joined()).write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let refused = try c.call("graph.reload", timeout: 60)
        #expect(refused["ok"] == false && refused["errors"]?.arrayValue?.count == 100 && refused["errorCount"] == 300, "\(refused["errorCount"] ?? .null)")
    }

    @Test func reloadingAnAliasBombIsRefusedWhileOthersAreServed() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var lines = ["x0: &a0 [" + Array(repeating: "lol", count: 10).joined(separator: ",") + "]"]
        for i in 1..<10 { lines.append("x\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 10).joined(separator: ",") + "]") }
        let graph = dir.file("graph"), bomb = dir.file("bomb")
        for d in [graph, bomb] { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
        try "root: {stack: Home}\ncoordinators:\n  Home: {}\n".write(toFile: graph + "/app.yaml", atomically: true, encoding: .utf8)
        try "allowReloadPath: true\n".write(toFile: dir.file("policy.yaml"), atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--graph", graph, "--policy", dir.file("policy.yaml")])
        try (lines.joined(separator: "\n") + "\n").write(toFile: bomb + "/app.yaml", atomically: true, encoding: .utf8)
        let c = try d.client()
        let start = Date()
        let r = try c.call("graph.reload", ["path": .string(bomb)], timeout: 5)
        #expect(r["ok"] == false)
        let message = r["errors"]?.arrayValue?.first?.stringValue ?? ""
        #expect(message.contains("--max-graph-nodes"), "\(r)")
        #expect(Date().timeIntervalSince(start) < 3)
        #expect(try d.client().call("ping", timeout: 5) == "pong")
        #expect(d.isRunning)
    }
}
