import Foundation
import JSON
import NavTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--max-memory`, as Redis's `maxmemory`: past it, requests that may add data are refused with
/// `limitExceeded`, while removals and reads still run, so clients can free memory and be served
/// again. Sized by default to three quarters of the machine's memory.
@Suite(.serialized) struct MemoryCeilingTests {
    /// Without the option the ceiling is three quarters of what the machine (or its cgroup) has,
    /// shown by `stats` and the start's `capacity` line; the heap navd holds is far below it.
    @Test func theCeilingIsSizedToTheMachine() throws {
        let d = try Daemon()
        let memory = try #require(try d.client().call("stats")["memory"])
        var machine = sysconf(Int32(_SC_PHYS_PAGES)) * sysconf(Int32(_SC_PAGESIZE))
        for file in ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"] {
            if let text = try? String(contentsOfFile: file, encoding: .utf8),
               let limit = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                machine = min(machine, limit)
            }
        }
        #expect(memory["max"]?.intValue == machine / 4 * 3, "\(memory)")
        let used = try #require(memory["used"]?.intValue)
        #expect(used > 0 && used < machine / 4, "\(memory)")
        #expect(d.stderr.contains("navd.maxMemory=\(machine / 4 * 3) (3/4 of \(machine))"), "\(d.stderr)")
        let given = try Daemon(arguments: ["--max-memory", "33554432"])
        #expect(try given.client().call("stats")["memory"]?["max"] == 33_554_432)
    }

    /// One uid fills sessions with facts until navd's heap passes the line of a 32 MiB ceiling's
    /// reserve (navd starts holding under 1 MiB; a 1 MiB request's buffers take a few more): its
    /// next request that may add data is refused, naming the option, while another uid is still
    /// served; reads, dismissals and closes still run, and once the sessions are closed the same
    /// request is served again.
    @Test func pastTheCeilingGrowingRequestsAreRefusedAndRemovalsStillWork() throws {
        let ceiling = 32 << 20
        let d = try Daemon(arguments: ["--max-memory", "\(ceiling)"])
        let c = try d.client()
        try c.call("navigate", ["to": "shop.Product", "with": ["id": "1"]])
        let value = JSONValue.string(String(repeating: "v", count: 60_000))
        var opened: [String] = []
        var refusal: JSONValue?
        // Sessions of 15 facts of 60 KB (~1 MiB) while the heap is under 80 % of the ceiling, then of
        // one fact each, so that the heap (read by navd at most every 100 ms) passes the reserve's
        // line by little: other uids are still served then.
        for i in 0..<1_000 where refusal == nil {
            let name = "fill-\(i)"
            let opening = try c.reply(to: try c.send("session.open", ["name": .string(name)]))
            if let e = opening["error"] { refusal = e; break }
            opened.append(name)
            let used = try c.call("stats")["memory"]?["used"]?.intValue ?? 0
            var facts = JSONObject()
            for f in 0..<(used < ceiling / 10 * 8 ? 15 : 1) { facts.append("f\(f)", value) }
            let set = try c.reply(to: try c.send("context.set", ["session": .string(name), "facts": .object(facts)]))
            if let e = set["error"] { refusal = e }
        }
        let e = try #require(refusal, "1,000 sessions of facts were all accepted")
        #expect(e["code"] == -32012 && e["data"]?["kind"] == "limitExceeded" && e["data"]?["limit"] == "--max-memory", "\(e)")
        // One uid alone: refused once the heap is in the last 10 % (the reserve other uids keep).
        #expect(e["data"]?["max"]?.intValue == ceiling && (e["data"]?["used"]?.intValue ?? 0) > ceiling / 10 * 9, "\(e)")
        let message = e["message"]?.stringValue ?? ""
        #expect(message.contains("session.close"), "\(e)")
        #expect(opened.count >= 10 && opened.count < 1_000, "refused after \(opened.count) sessions")
        // Another uid, whose sessions hold nothing, is served from the reserve.
        chmod(d.dir.path, 0o755)
        chmod(d.socketPath, 0o666)
        let lines = [
            #"{"jsonrpc":"2.0","id":1,"method":"session.open","params":{"name":"theirs"}}"#,
            #"{"jsonrpc":"2.0","id":2,"method":"navigate","params":{"session":"theirs","to":"shop.Product","with":{"id":"p1"}}}"#,
        ]
        let r = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                    "/usr/bin/socat", "-t2", "-", "UNIX-CONNECT:\(d.socketPath)"],
                               input: lines.joined(separator: "\n") + "\n")
        let answers = try r.stdout.split(separator: "\n").map { try JSONParser(maxDepth: 64).parse(Array($0.utf8)) }
        #expect(answers.count == 2 && answers[0]["result"] != nil && answers[1]["result"]?["version"] == 1, "\(answers) \(r.stderr)")
        // Past it: whatever adds is refused, whatever removes or reads runs.
        let navigate = try c.callError("navigate", ["to": "shop.Reviews", "with": ["productId": "1"]])
        #expect(navigate["data"]?["limit"] == "--max-memory", "\(navigate)")
        #expect(try c.callError("subscribe")["data"]?["limit"] == "--max-memory")
        #expect(try c.call("tree")["version"] == 1)
        #expect(try c.call("dismiss")["version"] == 2)
        #expect(try c.call("stats")["memory"]?["max"]?.intValue == ceiling)
        for name in opened { try c.call("session.close", ["name": .string(name)]) }
        // The heap is read again at most every 100 ms: served once the freed memory is seen.
        try waitUntil(timeout: 10, "navigate served again once the sessions are closed") {
            (try? c.call("navigate", ["to": "shop.Product", "with": ["id": "2"]])) != nil
        }
        let used = try c.call("stats")["memory"]?["used"]?.intValue
        #expect(used.map { $0 < ceiling } == true, "\(String(describing: used))")
    }
}
