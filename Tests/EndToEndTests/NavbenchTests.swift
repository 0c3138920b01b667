import Foundation
import JSON
import NavTesting
import Testing

/// navbench against a live navd: a short run prints one well-formed line with zero errors.
@Suite struct NavbenchTests {
    func navbench(_ d: Daemon, _ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runCommand(Repo.binary("navbench"), ["--socket", d.socketPath] + args)
    }

    /// `key=value` pairs of navbench's line.
    func fields(_ line: String) -> [String: Double] {
        var f: [String: Double] = [:]
        for pair in line.split(separator: " ") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            if kv.count == 2, let v = Double(kv[1]) { f[String(kv[0])] = v }
        }
        return f
    }

    /// Durations go to a timer in milliseconds: past a day (or not a number) they are a usage
    /// mistake, where `--duration inf` trapped converting them; counts past 100,000 too.
    @Test func durationsPastADayAndCountsPastTheirBoundAreRefused() throws {
        let d = try Daemon()
        for args in [["--duration", "inf"], ["--duration", "1e300"], ["--warmup", "86401"], ["--duration", "nan"]] {
            let r = try navbench(d, args)
            #expect(r.status == 64 && r.stderr.contains("--duration"), "\(args): \(r)")
        }
        // And counts that size arrays (a slot per request in flight): `--depth 9223372036854775807` crashed.
        for option in ["--depth", "--subscribers", "--connections"] {
            let r = try navbench(d, [option, "\(Int.max)"])
            #expect(r.status == 64 && r.stderr.contains("at most 100000"), "\(option): \(r)")
        }
    }

    @Test func shortRunWithSubscribersHasNoErrors() throws {
        let d = try Daemon()
        let r = try navbench(d, ["--connections", "3", "--depth", "4", "--subscribers", "2", "--duration", "0.5", "--warmup", "0.1"])
        #expect(r.status == 0, "\(r)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 1, "\(r.stdout)")
        let f = fields(r.stdout)
        for key in ["rps", "p50_us", "p99_us", "p999_us", "max_us", "notif_rps", "notif_all_rps", "errors", "ok"] {
            #expect(f[key] != nil, "missing \(key) in \(r.stdout)")
        }
        #expect(f["errors"] == 0)
        #expect((f["ok"] ?? 0) > 0 && (f["rps"] ?? 0) > 0)
        #expect((f["p50_us"] ?? 0) <= (f["p99_us"] ?? 0) && (f["p99_us"] ?? 0) <= (f["max_us"] ?? 0))
        // Both subscribers watch connection 0's session, which commits: they saw its changes.
        #expect((f["notif_all_rps"] ?? 0) > 0)
        // The benchmark closed its sessions behind it.
        let c = try d.client()
        #expect(try c.call("session.list")["sessions"]?.arrayValue?.count == 1)
    }

    @Test func jsonOutputAndUnreachableDaemon() throws {
        let d = try Daemon()
        let r = try navbench(d, ["--connections", "1", "--duration", "0.2", "--warmup", "0", "--json", "--to", "shop.Product", "--with-json", #"{"id":"x"}"#])
        #expect(r.status == 0, "\(r)")
        let v = try JSONParser(maxDepth: 16).parse(r.stdout)
        #expect(v["errors"] == 0 && (v["ok"]?.intValue ?? 0) > 0)
        let bad = try runCommand(Repo.binary("navbench"), ["--socket", "/nonexistent/navd.sock", "--duration", "0.1"])
        #expect(bad.status == 2 && bad.stderr.contains("cannot connect to navd at /nonexistent/navd.sock"), "\(bad)")
        let invalid = try navbench(d, ["--to", "shop.Product", "--duration", "0.2", "--warmup", "0"])
        #expect(invalid.status == 1 && invalid.stderr.contains("invalidSetup"), "\(invalid)")
    }
}
