import Foundation
import JSON
import NavTesting
import Testing

/// Preconditions never block the loop, and leave nothing behind.
@Suite(.serialized) struct LoadTests {
    func fdCount(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// One connection's 500 one-second commands all run at once (the per-uid and per-connection
    /// shares are raised for it: this is about the loop, AttackTests about fairness).
    @Test func fiveHundredSlowPreconditionsDoNotBlockOthers() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try Daemon(arguments: ["--graph", try preconditionGraph(dir), "--max-pending-per-connection", "1000",
                                       "--max-children", "600", "--max-children-per-uid", "600"])
        let slow = try d.client()
        for i in 0..<500 { try slow.call("session.open", ["name": .string("s\(i)")]) }
        var ids: [JSONValue] = []
        for i in 0..<500 { ids.append(try slow.send("navigate", ["session": .string("s\(i)"), "to": "Sleepy"])) }
        // Meanwhile another client pings and navigates in a loop and measures each reply.
        let busy = try d.client()
        var latencies: [Double] = []
        // A fixed number of operations (no clock in the assertions): they overlap the spawns,
        // the one-second sleeps and the exits.
        var n = 0
        while n < 2000 {
            let t0 = DispatchTime.now().uptimeNanoseconds
            if n % 2 == 0 {
                #expect(try busy.call("ping") == "pong")
            } else {
                #expect(try busy.call("navigate", ["to": "Home", "by": "root"])["version"] != nil)
            }
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            n += 1
        }
        for id in ids {
            let r = try slow.reply(to: id, timeout: 30)
            #expect(r["result"]?["version"] == 1, "\(r)")
        }
        latencies.sort()
        func pct(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print(String(format: "no-blocking: %d ping/navigate replies while 500 one-second command preconditions ran: p50 %.3f ms, p99 %.3f ms, max %.3f ms",
                     latencies.count, pct(0.5), pct(0.99), latencies.last ?? -1))
        #expect(latencies.count == 2000, "every reply of the busy client arrived")
        #expect(try busy.call("stats")["pending"] == 0)
    }

    @Test func twoThousandPreconditionsLeaveNoProcessDescriptorOrPendingEntry() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try Daemon(arguments: ["--graph", try preconditionGraph(dir)])
        let probe = try d.client()
        _ = try probe.call("ping")
        let baseline = fdCount(d.pid)
        let c = try d.client()
        let sessions = 200
        for i in 0..<sessions { try c.call("session.open", ["name": .string("l\(i)")]) }
        let targets = ["Pass", "Fail", "Slow", "Sleepy", "Missing"]
        var ids: [JSONValue] = []
        for i in 0..<2000 {
            let target = targets[i % targets.count]
            // From the session's first screen: a later navigation from it supersedes a pending one.
            ids.append(try c.send("navigate", ["session": .string("l\(i % sessions)"), "to": .string(target), "from": "n1"]))
            if i % 50 == 49 { _ = try? c.call("cancel", ["navigation": .string("nav-\(i)")]) }
        }
        var outcomes: [String: Int] = [:]
        for id in ids {
            let r = try c.reply(to: id, timeout: 60)
            outcomes[r["error"]?["data"]?["kind"]?.stringValue ?? "committed", default: 0] += 1
        }
        print("leaks: 2000 navigations with preconditions: \(outcomes.sorted { $0.key < $1.key })")
        #expect((outcomes["cancelled"] ?? 0) > 0 && (outcomes["preconditionFailed"] ?? 0) > 0 && (outcomes["committed"] ?? 0) > 0)
        c.close()
        let deadline = Date().addingTimeInterval(10)
        while (childCount(of: d.pid) > 0 || fdCount(d.pid) > baseline) && Date() < deadline { usleep(50_000) }
        #expect(childCount(of: d.pid) == 0, "no child process is left")
        #expect(fdCount(d.pid) <= baseline, "descriptors back to the baseline \(baseline)")
        let stats = try probe.call("stats")
        #expect(stats["pending"] == 0 && stats["pendingClientRequests"] == 0)
    }
}
