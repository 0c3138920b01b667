import Foundation
import JSON
import NavTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Every queue, batch, name and count a client can grow has a limit answered with limitExceeded,
/// and a client that reads slowly is slowed, not disconnected.
@Suite(.serialized) struct LimitTests {
    /// 2,000 `graph.describe` written while another thread reads: every reply arrives (the old navd
    /// disconnected the client as one that "does not read its output").
    @Test func aClientThatPipelinesWhileItReadsGetsEveryReply() throws {
        let d = try Daemon()
        let c = try d.client()
        let count = 2_000
        let fd = c.fd
        let reader = Thread.detachNewThreadWithResult { () -> Int in
            // Counts reply lines as they come, reading the socket directly.
            var lines = 0
            var chunk = [UInt8](repeating: 0, count: 65536)
            while lines < count {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 20_000) == 1 else { break }
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                lines += chunk[0..<n].reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
            }
            return lines
        }
        var burst: [UInt8] = []
        for i in 0..<count { burst += Array(#"{"jsonrpc":"2.0","id":\#(i),"method":"graph.describe"}"#.utf8) + [10] }
        try c.sendRaw(burst)
        #expect(reader.wait() == count)
        #expect(!d.stderr.contains("does not read its output"))
    }

    @Test func aBatchOverTheLimitIsRefusedWhole() throws {
        let d = try Daemon()
        let c = try d.client()
        var items: [String] = []
        for i in 0..<9_000 { items.append(#"{"jsonrpc":"2.0","id":\#(i),"method":"context.set","params":{"facts":{"f\#(i)":1}}}"#) }
        try c.sendRaw("[" + items.joined(separator: ",") + "]\n")
        let m = try #require(try c.readMessage())
        #expect(m["error"]?["code"] == -32012 && m["error"]?["data"]?["limit"] == "--max-batch" && m["error"]?["data"]?["max"] == 1000, "\(m)")
        #expect(try c.call("context.get")["facts"] == [:], "nothing of the refused batch ran")
    }

    /// A batch of heavy requests is handled a slice per loop iteration: another client's ping is
    /// answered meanwhile, and the batch's replies count against --max-output.
    /// (`--max-output` is 1 MiB, so that the batch's 4.8 MB of replies, far over it, are written
    /// in seconds by a debug build under AddressSanitizer too: with the default 8 MiB and 22 MB of
    /// replies, `make test-asan` took 20 s, the reader's whole timeout.)
    @Test func aHeavyBatchDoesNotStallOthersAndItsRepliesCountAsOutput() throws {
        let maxOutput = 1024 * 1024
        let d = try Daemon(arguments: ["--max-output", "\(maxOutput)"])
        let c = try d.client()
        var facts = JSONObject()
        for i in 0..<1_000 { facts.append("fact.\(i)", .string(String(repeating: "v", count: 20))) }
        try c.call("context.set", ["facts": .object(facts)])
        var items: [String] = []
        for i in 0..<150 { items.append(#"{"jsonrpc":"2.0","id":\#(i),"method":"context.get"}"#) }
        try c.sendRaw("[" + items.joined(separator: ",") + "]\n")
        let bystander = try d.client()
        let start = Date()
        #expect(try bystander.call("ping", timeout: 5) == "pong")
        #expect(Date().timeIntervalSince(start) < 2, "ping took \(Date().timeIntervalSince(start)) s")
        // 150 replies of ~32 KB are far over the 1 MiB --max-output: the batch is answered whole,
        // the replies that do not fit as limitExceeded errors, and the client stays connected.
        let line = try #require(try c.readLine(timeout: 20))
        #expect(line.count <= maxOutput && line.first == UInt8(ascii: "["), "\(line.count) bytes")
        // Counted in the text (parsing a large line in a debug build takes long): 150 replies, most left out.
        let text = String(decoding: line, as: UTF8.self)
        #expect(text.components(separatedBy: #"{"jsonrpc":"2.0","id":"#).count - 1 == 150)
        let refused = text.components(separatedBy: #""limit":"--max-output""#).count - 1
        #expect(refused > 90 && refused < 150, "\(refused) replies left out")
        #expect(try c.call("ping") == "pong")
        #expect(try bystander.call("ping") == "pong")
        #expect((try bystander.call("stats")["memory"]?["rss"]?.intValue ?? .max) < memoryBound(300))
    }

    @Test func sessionsFactsAndNamesAreBounded() throws {
        let d = try Daemon(arguments: ["--max-sessions", "3", "--max-facts", "4", "--max-name", "32"])
        let c = try d.client()
        try c.call("session.open", ["name": "a"])
        // "main" and "a" are the uid's 2 of 3: the last is the reserve kept for other uids.
        let tooMany = try c.callError("session.open", ["name": "b"])
        #expect(tooMany["code"] == -32012 && tooMany["data"]?["limit"] == "--max-sessions" && tooMany["data"]?["max"] == 3
                && tooMany["data"]?["held"] == 2 && tooMany["data"]?["reserve"] == 1, "\(tooMany)")
        let long = try c.callError("session.open", ["name": .string(String(repeating: "x", count: 100_000))])
        #expect(long["data"]?["limit"] == "--max-name", "\(long)")
        let nul = try c.callError("session.open", ["name": "x\u{0}y"])
        #expect(nul["code"] == -32602, "\(nul)")
        // Session names are letters, digits, _, - and .: no space, no shell or terminal code.
        for bad in ["a b", "$(id)", "x\u{1b}[31m", "caf\u{e9}", "a`b`"] {
            let e = try c.callError("session.open", ["name": .string(bad)])
            let message = e["message"]?.stringValue ?? ""
            #expect(e["code"] == -32602 && e["data"]?["param"] == "name" && (message.contains("letters, digits") || message.contains("control character")), "\(bad): \(e)")
        }
        try c.call("context.set", ["facts": ["a": 1, "b": 2, "c": 3]])
        let facts = try c.callError("context.set", ["facts": ["d": 4, "e": 5]])
        #expect(facts["data"]?["limit"] == "--max-facts" && facts["data"]?["max"] == 4, "\(facts)")
        #expect(try c.call("context.get")["facts"] == ["a": 1, "b": 2, "c": 3], "a refused context.set sets nothing")
        // More values than a session may hold are refused before any name is looked up.
        let many = try c.callError("context.set", ["facts": ["f1": 1, "f2": 2, "f3": 3, "f4": 4, "f5": 5]])
        #expect(many["data"]?["limit"] == "--max-facts" && many["message"]?.stringValue?.contains("would hold at least 5 facts") == true, "\(many)")
        #expect(try c.call("context.get")["facts"] == ["a": 1, "b": 2, "c": 3])
        #expect(try c.call("context.set", ["facts": ["a": .null, "d": 4, "e": 5]])["facts"] == ["b": 2, "c": 3, "d": 4, "e": 5])
        let key = try c.callError("navigate", ["to": "shop.Product", "with": ["id": "p"], "key": .string(String(repeating: "k", count: 33))])
        #expect(key["data"]?["limit"] == "--max-name", "\(key)")
        let value = try c.callError("context.set", ["facts": ["big": .string(String(repeating: "v", count: 70_000))]])
        #expect(value["data"]?["limit"] == "--max-fact-value", "\(value)")
    }

    /// An error echoes a bounded excerpt of what it quotes: a 200 KB name or method, an 8 KB URL
    /// (the longest `open` reads) comes back as its start and end (and the advice after it), not
    /// whole, twice, in one reply.
    @Test func anErrorEchoesABoundedExcerptOfTheRequest() throws {
        let d = try Daemon()
        let c = try d.client()
        let long = String(repeating: "q", count: 200_000)
        let cases: [(String, JSONValue)] = [
            ("navigate", ["route": .string(long)]), ("navigate", ["to": .string(long)]),
            ("open", ["url": .string("/" + long.prefix(8_000))]), ("session.close", ["name": .string(long)]),
            ("navigate", .object(JSONObject(uniqueMembers: [("to", "shop.Product"), ("with", ["id": "1"]), (long, 1)]))),
            (long, [:]),
        ]
        for (method, params) in cases {
            let id = try c.send(method, params)
            let line = try #require(try c.readLine(timeout: 30))
            #expect(line.count < 4_000, "\(method): a reply of \(line.count) bytes")
            let reply = try JSONParser().parse(line)
            #expect(reply["id"] == id && reply["error"]?["data"]?["kind"]?.stringValue?.isEmpty == false, "\(reply)")
            let message = reply["error"]?["message"]?.stringValue ?? ""
            #expect(message.contains("bytes left out"), "\(reply)")
        }
        #expect(try c.call("ping") == "pong")
    }

    @Test func subscriptionsOfOneConnectionAreBounded() throws {
        let d = try Daemon(arguments: ["--max-subscriptions-per-connection", "2"])
        let c = try d.client(), other = try d.client()
        for name in ["a", "b", "c"] { try c.call("session.open", ["name": .string(name)]) }
        try c.call("subscribe")
        try c.call("subscribe", ["session": "a"])
        // Again, in the other form: still two sessions.
        try c.call("subscribe", ["session": "a", "notifications": "compact"])
        let e = try c.callError("subscribe", ["session": "b"])
        #expect(e["data"]?["kind"] == "limitExceeded" && e["data"]?["limit"] == "--max-subscriptions-per-connection" && e["data"]?["max"] == 2, "\(e)")
        let message = e["message"]?.stringValue ?? ""
        #expect(message.contains("subscribed to 2 sessions"), "\(e)")
        // Another connection has its own; one unsubscribe makes room.
        try other.call("subscribe", ["session": "b"])
        try c.call("unsubscribe", ["session": "a"])
        try c.call("subscribe", ["session": "b"])
        #expect(try c.call("stats")["subscriptions"] == 3)
    }

    @Test func namesOneConnectionProvidesAreBoundedAndLeaveWithIt() throws {
        let d = try Daemon(arguments: ["--max-provided-per-connection", "3"])
        let c = try d.client(), watcher = try d.client()
        try c.call("provide", ["preconditions": ["a", "b"]])
        // Names it provides already do not count again.
        try c.call("provide", ["preconditions": ["a", "b", "c"]])
        let e = try c.callError("provide", ["preconditions": ["c", "d"]])
        #expect(e["data"]?["kind"] == "limitExceeded" && e["data"]?["limit"] == "--max-provided-per-connection" && e["data"]?["max"] == 3, "\(e)")
        #expect(try watcher.call("stats")["provided"] == 3, "the refused provide added nothing")
        c.close()
        let deadline = Date().addingTimeInterval(10)
        while try watcher.call("stats")["provided"] != 0 && Date() < deadline { usleep(10_000) }
        #expect(try watcher.call("stats")["provided"] == 0)
    }

    @Test func halfAMessageIsRefusedAfterTheMessageTimeout() throws {
        let d = try Daemon(arguments: ["--message-timeout", "300ms"])
        let c = try d.client()
        try c.sendRaw(#"{"jsonrpc":"2.0","id":1,"meth"#)
        let m = try #require(try c.readMessage(timeout: 5))
        #expect(m["error"]?["data"]?["kind"] == "messageTimeout", "\(m)")
        #expect(try c.waitForClose())
        #expect(try d.client().call("ping") == "pong")
    }

    /// A total below what one client or one message may take is refused at start, naming both values.
    @Test func aTotalBelowItsPartIsRefusedAtStart() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let input = try runCommand(Repo.binary("navd"), ["--socket", dir.file("a.sock"), "--ephemeral", "--max-total-input", "100000"])
        #expect(input.status == 64 && input.stderr.contains("--max-total-input (100000) must be at least --max-message (1048576)"), "\(input)")
        let output = try runCommand(Repo.binary("navd"), ["--socket", dir.file("a.sock"), "--ephemeral", "--max-output", "9000", "--max-total-output", "8192"])
        #expect(output.status == 64 && output.stderr.contains("--max-total-output (8192) must be at least --max-output (9000)"), "\(output)")
    }

    /// A limit as large as an `Int` goes (written to mean "none") is refused at start, where it
    /// stopped navd at its first client (a reserve of a tenth of it overflowed); the ceiling itself
    /// serves.
    @Test func aLimitPastTheCeilingIsRefusedAtStartAndTheCeilingServes() throws {
        // A socket navd cannot listen on: a navd that took the limit ends there (status 1), not serving.
        for option in ["--max-sessions", "--max-connections", "--max-children", "--max-subscriptions", "--max-data-bytes"] {
            let r = try runCommand(Repo.binary("navd"), ["--socket", "/dev/null/a.sock", "--ephemeral", option, "\(Int.max)"])
            #expect(r.status == 64 && r.stderr.contains("\(option) must be at most \(1 << 50)"), "\(option): \(r)")
        }
        let d = try Daemon(arguments: ["--max-sessions", "\(1 << 50)", "--max-connections", "\(1 << 50)", "--max-subscriptions", "\(1 << 50)",
                                       "--max-children", "\(1 << 50)", "--max-queue-wait", "\(1 << 50)ms"])
        let c = try d.client()
        try c.call("session.open", ["name": "s"])
        try c.call("subscribe", ["session": "s"])
        #expect(try c.call("navigate", ["session": "s", "to": "shop.Product", "with": ["id": "1"]])["version"] == 1)
    }

    /// `--max-subscriptions` through the socket: root alone takes all but the reserve (18 of 20,
    /// from two connections), uid 65534 gets the reserve, and once all 20 are held nobody gets more.
    @Test func subscriptionsOfAllConnectionsAreBoundedAndShared() throws {
        let d = try Daemon(arguments: ["--max-subscriptions", "20"])
        let a = try d.client(), b = try d.client()
        for i in 0..<25 { try a.call("session.open", ["name": .string("s\(i)")]) }
        for i in 0..<18 { try (i % 2 == 0 ? a : b).call("subscribe", ["session": .string("s\(i)")]) }
        let refused = try b.callError("subscribe", ["session": "s18"])
        #expect(refused["data"]?["limit"] == "--max-subscriptions" && refused["data"]?["held"] == 18 && refused["data"]?["reserve"] == 2,
                "\(refused)")
        chmod(d.dir.path, 0o755)
        chmod(d.socketPath, 0o666)
        let lines = (20..<23).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"subscribe","params":{"session":"s\#($0)"}}"# }
        let r = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                    "/usr/bin/socat", "-t2", "-", "UNIX-CONNECT:\(d.socketPath)"],
                               input: lines.joined(separator: "\n") + "\n")
        let answers = try r.stdout.split(separator: "\n").map { try JSONParser(maxDepth: 64).parse(Array($0.utf8)) }
            .filter { $0["id"] != nil }
        #expect(answers.count == 3 && answers[0]["result"]?["version"] != nil && answers[1]["result"]?["version"] != nil
                && answers[2]["error"]?["data"]?["limit"] == "--max-subscriptions", "\(answers) \(r.stderr)")
        // socat's connection closes (navd hears it a moment after socat exits): its two are given back.
        let deadline = Date().addingTimeInterval(10)
        var stats = try a.call("stats")
        while stats["users"]?["65534"] != nil && Date() < deadline {
            usleep(10_000)
            stats = try a.call("stats")
        }
        #expect(stats["users"]?[String(getuid())]?["subscriptions"] == 18 && stats["users"]?["65534"] == nil, "\(stats)")
        #expect(try b.callError("subscribe", ["session": "s18"])["data"]?["reserve"] == 2, "the reserve stays for other uids")
    }

    /// `--max-total-input`: six connections each holding 900 KB of a message without its end pass
    /// 4 MiB together; navd cuts the largest holders (each told why, with `id: null`) until they hold
    /// less than seven eighths of it (what is still on its way may fill it again, to the limit and
    /// no further), and the others, whole requests and another uid's 1 MB message
    /// sent meanwhile, are answered. (Which and how many are cut depends on how the kernel splits the
    /// streams into reads; TransportTests checks the choice exactly.)
    @Test func unfinishedMessagesOfAllClientsTogetherAreBounded() throws {
        let limit = 4 << 20
        let d = try Daemon(arguments: ["--max-total-input", "\(limit)"])
        let head = #"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":""#
        let holders = try (0..<6).map { _ in try d.client() }
        for h in holders { try h.sendRaw(head + String(repeating: "a", count: 900_000)) }
        try d.waitForLog("disconnecting a client holding unfinished messages")
        let c = try d.client()
        #expect(try c.call("ping") == "pong")
        let stats = try c.call("stats")
        let dropped = try #require(stats["inputHoldersDropped"]?.intValue)
        #expect(dropped >= 1 && dropped <= 4 && (stats["memory"]?["input"]?.intValue ?? .max) <= limit
                && stats["memory"]?["maxInput"] == .int(limit), "\(stats)")
        // Another uid's large message, sent while root's survivors still hold theirs, is read whole:
        // if it takes all past the limit, root, holding the most, loses more of its connections.
        chmod(d.dir.path, 0o755)
        chmod(d.socketPath, 0o666)
        let theirs = head + String(repeating: "b", count: 1_000_000) + "\"}}\n"
        let r = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                    "/usr/bin/socat", "-t5", "-", "UNIX-CONNECT:\(d.socketPath)"], input: theirs)
        let answer = try JSONParser(maxDepth: 64).parse(Array(r.stdout.utf8))
        #expect(answer["id"] == 1 && answer["error"]?["code"] == -32602, "answered (ping has no param x): \(r.stdout.prefix(300)) \(r.stderr)")
        // Each of root's holders ends its message: those cut read why, the others their answer.
        var told = 0, answered = 0
        for h in holders {
            try? h.sendRaw("\"}}\n")
            let m = try #require(try h.readMessage(timeout: 10))
            if m["error"]?["data"]?["limit"] == "--max-total-input" {
                #expect(m["id"] == .null && m["error"]?["code"] == -32012 && m["error"]?["data"]?["max"] == .int(limit), "\(m)")
                #expect(try h.waitForClose())
                told += 1
            } else {
                #expect(m["id"] == 1 && m["error"]?["code"] == -32602, "\(m)")
                answered += 1
            }
        }
        let after = try c.call("stats")
        #expect(told == after["inputHoldersDropped"]?.intValue && told + answered == 6 && answered >= 1, "\(after)")
        #expect(after["memory"]?["input"] == 0, "\(after)")
    }

    /// 40 subscribers that never read, each under --max-output, together over --max-total-output:
    /// navd drops the largest backlogs and keeps its memory.
    @Test func unreadOutputOfAllClientsTogetherIsBounded() throws {
        let d = try Daemon(arguments: ["--max-output", "4194304", "--max-total-output", "16777216"])
        let sinks = try (0..<40).map { _ in try d.client() }
        for s in sinks {
            setsockopt(s.fd, SOL_SOCKET, SO_RCVBUF, [Int32(4096)], 4)
            _ = try s.call("subscribe")
        }
        let driver = try d.client()
        let big = String(repeating: "x", count: 60_000)
        for i in 0..<100 {
            try driver.call("navigate", ["to": "shop.Product", "with": ["id": .string("\(i)-\(big)")]])
            try driver.call("dismiss")
        }
        let stats = try driver.call("stats")
        #expect((stats["slowClientsDropped"]?.intValue ?? 0) > 0, "\(stats)")
        try d.waitForLog("--max-total-output")
        #expect((stats["memory"]?["rss"]?.intValue ?? .max) < memoryBound(200))
    }
}

/// A bound on navd's resident memory in MiB, four times as much for AddressSanitizer builds
/// (`make test-asan`), whose shadow memory and quarantine count as resident too.
func memoryBound(_ mebibytes: Int) -> Int {
    let asan = ProcessInfo.processInfo.environment["NAVD_BIN_DIR"]?.contains("asan") ?? false
    return mebibytes * 1024 * 1024 * (asan ? 4 : 1)
}

extension Thread {
    /// Runs `body` on a new thread; `wait()` returns its result.
    static func detachNewThreadWithResult<T: Sendable>(_ body: @escaping @Sendable () -> T) -> ThreadResult<T> {
        let r = ThreadResult<T>()
        Thread.detachNewThread { r.set(body()) }
        return r
    }
}

final class ThreadResult<T: Sendable>: @unchecked Sendable {
    private var value: T?
    private let done = DispatchSemaphore(value: 0)
    func set(_ v: T) { value = v; done.signal() }
    func wait() -> T { done.wait(); return value! }
}

/// A state file that cannot be written (a full disk) stops navd with a failure status, so that a
/// supervisor restarts it; nothing unsaved is acknowledged, and once there is room again navd
/// restores everything it acknowledged (the record the full disk cut off is a torn tail, dropped).
@Suite struct FullDiskTests {
    /// `process` with the default log size: the disk has no room for the log's segment, which is
    /// written with `write()`; `process` with a small log: each segment fits, is reserved and
    /// mapped, and the disk fills at a compaction (a segment that no longer fits is written with
    /// `write()`); `full`: written with `O_DSYNC` writes.
    @Test(arguments: [("process", nil), ("process", 16_384), ("full", nil)] as [(String, Int?)])
    func aFullDiskStopsNavdWithStatusOneAndLosesNothingAcknowledged(durability: String, logBytes: Int?) throws {
        let dir = TempDir()
        defer {
            _ = try? runCommand("/bin/umount", [dir.path])
            dir.remove()
        }
        let mounted = try runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=200k,mode=0700", "tmpfs", dir.path])
        guard mounted.status == 0 else {
            print("skipped: cannot mount a small tmpfs here (\(mounted.stderr.trimmingCharacters(in: .whitespacesAndNewlines)))")
            return
        }
        let state = dir.file("state.sqlite")
        let sockets = TempDir()
        defer { sockets.remove() }
        let logOptions = logBytes.map { ["--log-compact-bytes", String($0), "--log-compact-ratio", "0"] } ?? []
        let d = try Daemon(arguments: ["--state", state, "--durability", durability] + logOptions, socketPath: sockets.file("d.sock"))
        let c = try d.client()
        #expect(try c.call("stats")["state"]?["mapped"]?.boolValue == (logBytes != nil), "the segment is mapped where its room was reserved")
        var acknowledged = 0
        var lastTree: JSONValue = .null
        var refusedOrClosed = false
        for i in 0..<1_000 {
            // Facts fill the disk fast; a navigation in between gives the tree a version to check.
            guard let id = try? c.send("context.set", ["facts": [.init("f\(i)"): .string(String(repeating: "v", count: 4_000))]]),
                  let r = try? c.reply(to: id, timeout: 5), r["result"] != nil,
                  let nav = try? c.call("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)")]], timeout: 5),
                  nav["version"] != nil else {
                refusedOrClosed = true
                break
            }
            acknowledged = i + 1
            lastTree = nav
        }
        #expect(refusedOrClosed, "200 KB cannot hold 1,000 facts of 4 KB")
        #expect(d.waitForExit(timeout: 10) == 1, "\(d.stderr)")
        #expect(d.stderr.contains("cannot write the state file"))
        #expect(acknowledged > 0 && acknowledged < 1_000)
        print("full disk (\(durability), log \(logBytes.map(String.init) ?? "default")): \(acknowledged) acknowledged")
        // Room again: everything acknowledged is there, and the next commit follows it.
        #expect(try runCommand("/bin/mount", ["-o", "remount,size=64m", dir.path]).status == 0)
        let again = try Daemon(arguments: ["--state", state, "--durability", durability] + logOptions, socketPath: sockets.file("d2.sock"))
        let c2 = try again.client()
        let facts = try c2.call("context.get")["facts"]
        for i in 0..<acknowledged {
            #expect(facts?["f\(i)"]?.stringValue?.count == 4_000, "acknowledged fact f\(i) lost")
        }
        let tree = try c2.call("tree")
        let version = try #require(tree["version"]?.intValue)
        let acknowledgedVersion = try #require(lastTree["version"]?.intValue)
        #expect(version >= acknowledgedVersion && version <= acknowledgedVersion + 2, "\(version) vs \(acknowledgedVersion)")
        #expect(try c2.call("dismiss")["version"]?.intValue == version + 1)
        #expect(again.stop(signal: SIGTERM) == 0)
    }
}
