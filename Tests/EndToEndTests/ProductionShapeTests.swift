import Foundation
import JSON
import NavTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// navd as it is deployed: one backend uid serving every end user's session, with the default
/// flags. Capacity is shared between uids (one alone takes all but a reserve), and waiting for a
/// command slot is queueing, not failing.
@Suite(.serialized) struct ProductionShapeTests {
    /// A graph whose `Checked` screen waits on a one-second command (a check that waits on the
    /// network), with the two-second timeout the issue measured.
    func oneSecondCheckGraph(_ dir: TempDir) throws -> String {
        try """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Checked]}
              Checked: {preconditions: [remote]}
            preconditions:
              remote: {command: [sh, -c, "cat >/dev/null; sleep 1"], timeout: 2s}
            """.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        return dir.path
    }

    /// The test's own descriptor limit raised to its hard limit (4,000 sockets on this side too).
    func raiseOwnDescriptorLimit() {
        var lim = rlimit()
        let nofile = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        if getrlimit(nofile, &lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max
            setrlimit(nofile, &lim)
        }
    }

    /// With the default flags one uid holds 4,000 connections, each answered. (20,000 sessions of
    /// one uid with the default flags: SessionScaleTests.)
    @Test func oneUidWithDefaultFlagsHoldsFourThousandConnections() throws {
        raiseOwnDescriptorLimit()
        var lim = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &lim)
        try #require(lim.rlim_cur >= 8_300, "this test needs 8,300 descriptors (4,000 sockets each side); the hard limit is \(lim.rlim_max)")
        let d = try Daemon()
        var clients: [TestClient] = []
        for _ in 0..<4_000 { clients.append(try d.client()) }
        for (i, c) in clients.enumerated() { try c.sendRaw(#"{"jsonrpc":"2.0","id":\#(i),"method":"ping"}"# + "\n") }
        for (i, c) in clients.enumerated() {
            let line = try #require(try c.readLine(timeout: 30), "connection \(i) was answered")
            #expect(String(decoding: line, as: UTF8.self) == #"{"jsonrpc":"2.0","id":\#(i),"result":"pong"}"#)
        }
        let stats = try clients[0].call("stats")
        #expect(stats["connections"]?.intValue == 4_000, "\(stats["connections"] ?? .null)")
    }

    /// A burst of clients connecting while navd is busy (here: stopped with SIGSTOP, so it accepts
    /// none) waits in the socket's queue and is served once navd goes on: a Unix socket whose queue
    /// is full answers a non-blocking connect at once with EAGAIN, and with a queue of Redis's 511
    /// the 512th client of such a burst was refused. navd's queue is as long as `--max-connections`
    /// (the kernel caps it at `net.core.somaxconn`).
    @Test func aBurstOfClientsWaitsInTheSocketsQueue() throws {
        raiseOwnDescriptorLimit()
        let somaxconn = (try? String(contentsOfFile: "/proc/sys/net/core/somaxconn", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 4096
        let burst = min(2_000, somaxconn)
        let d = try Daemon()
        #expect(try d.client().call("ping") == "pong")
        kill(d.pid, SIGSTOP)
        let address = UnixSocketAddress(d.socketPath)
        var fds: [Int32] = []
        defer { fds.forEach { close($0) } }
        var refused: Int32 = 0
        for _ in 0..<burst {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            let rc = address.connect(fd)
            if rc != 0 {
                refused = errno
                close(fd)
                break
            }
            fds.append(fd)
        }
        kill(d.pid, SIGCONT)
        #expect(fds.count == burst, "\(fds.count) of \(burst) connected, then \(String(cString: strerror(refused)))")
        for (i, fd) in fds.enumerated() {
            let line = #"{"jsonrpc":"2.0","id":\#(i),"method":"ping"}"# + "\n"
            #expect(line.utf8CString.withUnsafeBytes { send(fd, $0.baseAddress, line.utf8.count, 0) } == line.utf8.count)
        }
        var answered = 0
        var unanswered: [String] = []  // what the first few others got, to tell why
        for (i, fd) in fds.enumerated() {
            var got: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 256)
            var end = "no newline"
            while !got.contains(0x0A) {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 30_000) == 1 else { end = "nothing for 30 s"; break }
                let n = recv(fd, &buffer, buffer.count, 0)
                guard n > 0 else { end = n == 0 ? "closed" : "recv: \(String(cString: strerror(errno)))"; break }
                got += buffer[0..<n]
            }
            let text = String(decoding: got, as: UTF8.self)
            if text == #"{"jsonrpc":"2.0","id":\#(i),"result":"pong"}"# + "\n" {
                answered += 1
            } else if unanswered.count < 5 {
                unanswered.append("connection \(i): \(text.isEmpty ? "" : "got \(text.prefix(300)) ")(\(end))")
            }
        }
        #expect(answered == fds.count, "\(unanswered)")
    }

    /// 300 navigations, each waiting on a one-second command check, sent over a pool of 10
    /// connections: all pass. (Before, 184 of 200 failed `preconditionTimeout`: at most 16 commands
    /// ran per uid and the wait for a slot counted against the 2 s timeout.)
    @Test func threeHundredNavigationsOnAOneSecondCheckAllPass() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try Daemon(arguments: ["--graph", try oneSecondCheckGraph(dir)])
        let pool = try (0..<10).map { _ in try d.client() }
        var ids: [(TestClient, JSONValue)] = []
        for i in 0..<300 {
            let c = pool[i % 10]
            try c.call("session.open", ["name": .string("user-\(i)")])
            ids.append((c, try c.send("navigate", ["session": .string("user-\(i)"), "to": "Checked"])))
        }
        var passed = 0
        for (c, id) in ids {
            let r = try c.reply(to: id, timeout: 60)
            if r["result"]?["version"] == 1 { passed += 1 } else { Issue.record("\(r)") }
        }
        #expect(passed == 300)
    }

    /// Contention: one uid (the test's) takes every connection and session it may; another uid
    /// (65534, through socat) still connects, opens a session, navigates and pings, served from the
    /// reserve; the first uid is refused with its share named.
    @Test func anotherUidIsServedWhileOneHoldsItsShare() throws {
        let d = try Daemon(arguments: ["--max-connections", "100", "--max-sessions", "1000"])
        var mine: [TestClient] = []
        var refusal: JSONValue?
        while refusal == nil && mine.count < 200 {
            // A refused connection is told first, before any answer; an accepted one answers the ping.
            let c = try d.client()
            try? c.sendRaw(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n")  // a refused one may be closed already
            let m = try #require(try c.readMessage(timeout: 10))
            if m["error"] != nil { refusal = m } else { mine.append(c) }
        }
        #expect(mine.count == 90 && refusal?["error"]?["data"]?["limit"] == "--max-connections"
                && refusal?["error"]?["data"]?["reserve"] == 10, "\(mine.count) connections, then \(String(describing: refusal))")
        let batch: [JSONValue] = (0..<1_000).map { i in
            ["jsonrpc": "2.0", "id": .int(i), "method": "session.open", "params": ["name": .string("hog-\(i)")]]
        }
        try mine[0].sendRaw(JSONWriter.string(.array(batch)) + "\n")
        let replies = try JSONParser(maxDepth: 64).parse(try #require(try mine[0].readLine(timeout: 30)))
        let opened = replies.arrayValue?.filter { $0["result"] != nil }.count ?? 0
        let refused = replies.arrayValue?.first { $0["error"] != nil }
        #expect(opened == 899 && refused?["error"]?["data"]?["limit"] == "--max-sessions" && refused?["error"]?["data"]?["held"] == 900,
                "\(opened) opened (and main), then \(String(describing: refused))")
        chmod(d.dir.path, 0o755)
        chmod(d.socketPath, 0o666)
        let lines = [
            #"{"jsonrpc":"2.0","id":1,"method":"session.open","params":{"name":"theirs"}}"#,
            #"{"jsonrpc":"2.0","id":2,"method":"navigate","params":{"session":"theirs","to":"shop.Product","with":{"id":"p1"}}}"#,
            #"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        ]
        let r = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                    "/usr/bin/socat", "-t2", "-", "UNIX-CONNECT:\(d.socketPath)"],
                               input: lines.joined(separator: "\n") + "\n")
        let answers = try r.stdout.split(separator: "\n").map { try JSONParser(maxDepth: 64).parse(Array($0.utf8)) }
        #expect(answers.count == 3 && answers[0]["result"] != nil && answers[1]["result"]?["version"] == 1 && answers[2]["result"] == "pong",
                "\(answers)")
        let users = try mine[1].call("stats")["users"]
        #expect(users?["65534"]?["sessions"] == 1 && users?[String(getuid())]?["sessions"] == 900, "\(String(describing: users))")
    }
}
