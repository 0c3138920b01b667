import Foundation
import JSON
import NavTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `slowlog.get` and `slowlog.reset`: the reads that held navd's loop, driven through the socket.
@Suite struct SlowlogTests {
    /// With a threshold of 0 every read that answers is kept: each names its connection, client,
    /// uid and the methods it answered; newest first, the oldest forgotten past the length, the
    /// numbering going on after a reset.
    @Test func readsAreKeptNewestFirstWithWhatTheyAnswered() throws {
        let d = try Daemon(arguments: ["--slowlog-threshold", "0", "--slowlog-max-len", "3"])
        let a = try d.client()
        // One write, one read: hello and ping answered together.
        try a.sendRaw(#"{"jsonrpc":"2.0","id":100001,"method":"hello","params":{"client":"pipeliner"}}"# + "\n" + #"{"jsonrpc":"2.0","id":100002,"method":"ping"}"# + "\n")
        let hello = try a.reply(to: 100_001)
        _ = try a.reply(to: 100_002)
        // Three lines in one write (a batch would not do: on a busy machine its requests past
        // 2 ms of the loop are answered in the next iteration, an entry of their own).
        try a.sendRaw(#"{"jsonrpc":"2.0","id":100003,"method":"ping"}"# + "\n" + #"{"jsonrpc":"2.0","id":100004,"method":"tree"}"# + "\n"
            + #"{"jsonrpc":"2.0","id":100005,"method":"ping"}"# + "\n")
        for id in 100_003...100_005 { _ = try a.reply(to: .int(id)) }
        let admin = try d.client()
        let first = try admin.call("slowlog.get")
        let entries = try #require(first["entries"]?.arrayValue)
        #expect(first["kept"] == 2 && first["total"] == 2 && first["thresholdMs"] == 0 && first["maxLen"] == 3, "\(first)")
        #expect(entries.map { $0["id"] } == [1, 0], "\(entries)")
        #expect(entries[0]["answers"] == 3 && entries[0]["methods"] == ["ping": 2, "tree": 1], "\(entries[0])")
        #expect(entries[1]["answers"] == 2 && entries[1]["methods"] == ["hello": 1, "ping": 1], "\(entries[1])")
        for e in entries {
            #expect(e["connection"] == hello["result"]?["connection"] && e["client"] == "pipeliner" && e["uid"] == .int(Int(getuid())), "\(e)")
            #expect((e["ms"]?.doubleValue ?? -1) >= 0 && abs((e["at"]?.doubleValue ?? 0) - Date().timeIntervalSince1970) < 60, "\(e)")
        }
        // The first slowlog.get's read is kept after it answered (id 2); two more reads pass the length.
        try a.call("ping")
        try a.call("ping")
        let full = try admin.call("slowlog.get")
        #expect(full["entries"]?.arrayValue?.map { $0["id"] } == [4, 3, 2] && full["kept"] == 3 && full["total"] == 5, "\(full)")
        #expect(full["entries"]?.arrayValue?.last?["methods"] == ["slowlog.get": 1])
        #expect(try admin.call("slowlog.get", ["limit": 1])["entries"]?.arrayValue?.map { $0["id"] } == [5])
        #expect(try admin.call("slowlog.reset") == ["forgotten": 3])
        let after = try admin.call("slowlog.get")
        #expect(after["entries"]?.arrayValue?.map { $0["id"] } == [7] && after["kept"] == 1 && after["total"] == 8, "\(after)")
        for bad: JSONValue in [["limit": 0], ["limit": "1"], ["limits": 1], ["after": -1], ["after": "7"]] {
            let e = try admin.callError("slowlog.get", bad)
            #expect(e["data"]?["kind"] == "invalidParams", "\(bad): \(e)")
        }
    }

    /// At the default threshold (10 ms) quick reads are not kept; a read that holds the loop
    /// past the threshold is, and logged.
    @Test func onlyReadsPastTheThresholdAreKeptAndLogged() throws {
        let d = try Daemon(arguments: ["--slowlog-threshold", "1ms"])
        let c = try d.client()
        try c.call("ping")
        let quiet = try c.call("slowlog.get")
        // Nothing quicker than the threshold is kept (on a busy machine a ping's read may take
        // longer: then it is kept, with its time).
        let kept = quiet["entries"]?.arrayValue ?? []
        #expect(kept.allSatisfy { ($0["ms"]?.doubleValue ?? 0) >= 1 } && quiet["thresholdMs"] == 1 && quiet["maxLen"] == 128, "\(quiet)")
        // 500 graph descriptions in one batch: well past a millisecond in any build.
        let batch = (0..<500).map { #"{"jsonrpc":"2.0","id":\#(100_000 + $0),"method":"graph.describe"}"# }.joined(separator: ",")
        try c.sendRaw("[" + batch + "]\n")
        #expect(try c.readMessage(timeout: 60)?.arrayValue?.count == 500)
        try d.waitForLog("held the loop for")
        let slow = try c.call("slowlog.get")
        let described = slow["entries"]?.arrayValue?.filter { $0["methods"]?["graph.describe"] != nil } ?? []
        #expect(!described.isEmpty && described.allSatisfy { ($0["ms"]?.doubleValue ?? 0) >= 1 }, "\(slow)")
        #expect((1...500).contains(described.reduce(0) { $0 + ($1["answers"]?.intValue ?? 0) }), "\(slow)")
    }

    /// A read that answered nothing is kept as well: a notification's, and one carrying replies
    /// to navd's own requests (counted as `responses`; here one to a request navd never made).
    @Test func readsThatAnswerNothingAreKeptWithTheRepliesTheyCarried() throws {
        let d = try Daemon(arguments: ["--slowlog-threshold", "0"])
        let quiet = try d.client()
        let me = try quiet.call("hello", ["client": "quiet"])["connection"]
        let admin = try d.client()
        // A read is kept once navd has handled it: asked until it is there (each in its own read).
        func keptQuietRead(after id: Int) throws -> JSONValue? {
            for _ in 0..<100 {
                let found = try admin.call("slowlog.get")["entries"]?.arrayValue?.first {
                    $0["connection"] == me && $0["answers"] == 0 && ($0["id"]?.intValue ?? -1) > id
                }
                if let found { return found }
            }
            return nil
        }
        try quiet.notify("ping")
        let notification = try #require(try keptQuietRead(after: -1))
        #expect(notification["methods"] == [:] && notification["client"] == "quiet" && notification["responses"] == 0, "\(notification)")
        try quiet.sendRaw(#"{"jsonrpc":"2.0","id":100099,"result":{"passed":true}}"# + "\n")
        let reply = try #require(try keptQuietRead(after: notification["id"]?.intValue ?? 0))
        #expect(reply["methods"] == [:] && reply["responses"] == 1, "\(reply)")
    }

    /// Work outside reads that held the loop is kept too, named by what it was: here a SIGHUP's
    /// reload of a graph of 400 coordinators (well past a millisecond in any build), a signal's
    /// callback, with no connection, answers or methods.
    @Test func workOutsideReadsIsKeptWithWhatItWas() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let names = (0..<400).map { "S\($0)" }
        let graph = "root: {stack: Home}\ncoordinators:\n  Home: {opens: [\(names.joined(separator: ", "))]}\n"
            + names.map { "  \($0): {setup: {type: object, properties: {id: {type: string}}}}\n" }.joined()
        try graph.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let d = try Daemon(arguments: ["--graph", dir.path, "--slowlog-threshold", "1ms"])
        let c = try d.client()
        try c.call("ping")
        #expect(kill(d.pid, SIGHUP) == 0)
        // The reload's own log line may be folded into the next one's count ("1 more slow reads
        // and callbacks"), when a slow read was logged within the second before: the slow log is
        // asked until the signal's entry is there.
        try d.waitForLog("graph reloaded", timeout: 30)
        var entries: [JSONValue] = []
        try waitUntil(timeout: 30, "the SIGHUP's entry in slowlog.get") {
            entries = try c.call("slowlog.get")["entries"]?.arrayValue ?? []
            return entries.contains { $0["kind"] == "signal" }
        }
        let reload = try #require(entries.first { $0["kind"] == "signal" }, "\(entries)")
        #expect(reload["what"] == "SIGHUP: graph and policy reloaded" && (reload["ms"]?.doubleValue ?? 0) >= 1, "\(reload)")
        #expect(reload["connection"] == nil && reload["answers"] == nil && reload["methods"] == nil, "\(reload)")
        // navctl shows it with its kind and what it was.
        var env = ProcessInfo.processInfo.environment
        env["NAVD_SOCKET"] = d.socketPath
        let shown = try runCommand(Repo.binary("navctl"), ["slowlog"], environment: env)
        #expect(shown.status == 0 && shown.stdout.split(separator: "\n").contains { $0.contains(" signal ") && $0.hasSuffix("SIGHUP: graph and policy reloaded") }, "\(shown)")
    }

    /// An idle loop's wait is not work: after a read, the seconds navd waits with nothing to do
    /// (woken each second by its own timers) are never kept as an iteration's end that held it.
    @Test func anIdleWaitIsNotKeptAsWork() throws {
        let d = try Daemon(arguments: ["--slowlog-threshold", "1ms"])
        let c = try d.client()
        try c.call("ping")
        usleep(2_500_000)  // time passing idle is what is tested: two of the loop's one-second wake-ups
        let entries = try c.call("slowlog.get")["entries"]?.arrayValue ?? []
        #expect(!entries.contains { ($0["ms"]?.doubleValue ?? 0) >= 500 }, "\(entries)")
    }

    /// An answer is a page: at most `limit` entries, within half of `--max-output`, and `next` to
    /// ask for the older ones; the pages list every entry kept once, newest first.
    @Test func pagesListEveryEntryKeptOnce() throws {
        let d = try Daemon(arguments: ["--slowlog-threshold", "0", "--slowlog-max-len", "100", "--max-output", "2048"])
        let c = try d.client()
        try c.call("hello", ["client": .string(String(repeating: "n", count: 200))])
        for _ in 0..<40 { try c.call("ping") }
        let admin = try d.client()
        // Two entries a page, then pages as large as 1 KiB holds.
        var seen: [Int] = []
        var after: JSONValue?
        for limit: JSONValue? in [2, 2, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil] {
            var p: JSONObject = [:]
            if let limit { p["limit"] = limit }
            if let after { p["after"] = after }
            let page = try admin.call("slowlog.get", .object(p))
            let ids = page["entries"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
            #expect(!ids.isEmpty && ids.count <= (limit?.intValue ?? 40) && JSONWriter.encode(page).count < 2048, "\(page)")
            seen += ids
            after = page["next"]
            if after == nil { break }
        }
        // hello, then 40 pings (ids 0 to 40); the pages' own reads are kept after them.
        #expect(after == nil && seen == Array((0...40).reversed()), "\(seen)")
    }

    /// `--slowlog-max-len 0` keeps nothing, whatever the threshold.
    @Test func aLengthOfZeroKeepsNothing() throws {
        let d = try Daemon(arguments: ["--slowlog-threshold", "0", "--slowlog-max-len", "0"])
        let c = try d.client()
        try c.call("ping")
        let r = try c.call("slowlog.get")
        #expect(r["entries"] == [] && r["kept"] == 0 && r["total"] == 0 && r["maxLen"] == 0, "\(r)")
    }
}
