import Foundation
import JSON
import NavTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--max-data-bytes`, as Redis's `maxmemory`: past it, requests that may add to what sessions
/// hold are refused with `limitExceeded`, while removals and reads still run, so clients can free
/// some and be served again; its last 10 % is kept for uids holding less. Sized by default to a
/// quarter of the machine's memory.
@Suite(.serialized) struct DataCeilingTests {
    /// Without the option the ceiling is a quarter of what the machine (or its cgroup) has, shown by
    /// `stats` and the start's `capacity` line.
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
        #expect(memory["maxData"]?.intValue == machine / 4, "\(memory)")
        #expect((memory["data"]?.intValue ?? 0) > 0, "the main session's root holds its setup models: \(memory)")
        // The capacity line is written before navd serves, but read from its pipe by a thread of
        // the tests: wait for it rather than look once.
        #expect(throws: Never.self) { try d.waitForLog("navd.maxDataBytes=\(machine / 4) (a quarter of \(machine))") }
        let given = try Daemon(arguments: ["--max-data-bytes", "33554432"])
        #expect(try given.client().call("stats")["memory"]?["maxData"] == 33_554_432)
    }

    /// One uid fills sessions with facts, 60 KB at a time, until what sessions hold passes the
    /// line of a 4 MiB ceiling's reserve: its next request that may add data is refused, naming
    /// the option, while another uid is still served; reads, dismissals and closes still run, and
    /// once its sessions are closed the same request is served again.
    @Test func pastTheCeilingGrowingRequestsAreRefusedAndRemovalsStillWork() throws {
        let ceiling = 4 << 20
        let d = try Daemon(arguments: ["--max-data-bytes", "\(ceiling)"])
        let c = try d.client()
        try c.call("navigate", ["to": "shop.Product", "with": ["id": "1"]])
        let value = JSONValue.string(String(repeating: "v", count: 60_000))
        var opened: [String] = []
        var refusal: JSONValue?
        fill: for i in 0..<100 {
            let name = "fill-\(i)"
            let opening = try c.reply(to: try c.send("session.open", ["name": .string(name)]))
            if let e = opening["error"] { refusal = e; break }
            opened.append(name)
            for f in 0..<15 {
                let set = try c.reply(to: try c.send("context.set", ["session": .string(name), "facts": ["f\(f)": value]]))
                if let e = set["error"] { refusal = e; break fill }
            }
        }
        let e = try #require(refusal, "100 sessions of facts were all accepted")
        #expect(e["code"] == -32012 && e["data"]?["kind"] == "limitExceeded" && e["data"]?["limit"] == "--max-data-bytes", "\(e)")
        // One uid alone: refused once sessions hold more than the ceiling less its reserve.
        let held = try #require(e["data"]?["held"]?.intValue)
        #expect(e["data"]?["max"]?.intValue == ceiling && e["data"]?["reserve"]?.intValue == ceiling / 100 * 10, "\(e)")
        #expect(held > ceiling / 100 * 90 && held < ceiling / 100 * 90 + 70_000, "\(e)")
        let message = e["message"]?.stringValue ?? ""
        #expect(message.contains("session.close"), "\(e)")
        let stats = try c.call("stats")
        #expect(stats["memory"]?["data"] == .int(held) && stats["users"]?[String(getuid())]?["bytes"] == .int(held), "\(stats)")
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
        // The filler: whatever adds is refused, whatever removes or reads runs.
        let navigate = try c.callError("navigate", ["to": "shop.Reviews", "with": ["productId": "1"]])
        #expect(navigate["data"]?["limit"] == "--max-data-bytes", "\(navigate)")
        #expect(try c.callError("session.open", ["name": "one-more"])["data"]?["limit"] == "--max-data-bytes")
        #expect(try c.call("subscribe")["version"] == 1)
        #expect(try c.call("tree")["version"] == 1)
        #expect(try c.call("dismiss")["version"] == 2)
        for name in opened { try c.call("session.close", ["name": .string(name)]) }
        #expect(try c.call("navigate", ["to": "shop.Product", "with": ["id": "2"]])["version"] == 3)
        let after = try c.call("stats")
        #expect((after["memory"]?["data"]?.intValue ?? .max) < 10_000, "\(after)")
    }
}
