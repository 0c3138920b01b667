import Foundation
import JSON
import NavClient
import NavTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Cluster mode under the faults a deployment meets: a node paused past its lease, a lease that
/// expires while the node runs, a second process under a live node's name. (Part of the serialized
/// ``ClusterTests`` suite: leases of one second must not compete with other cluster tests.)
extension ClusterTests {
    /// A node whose lease expired in PostgreSQL while it ran (a pause, a slow machine) has its next
    /// commit refused by fencing. That is no reason to stop: its process still holds the node's
    /// name, so it renews, reads its sessions again and carries on; the change that was refused is
    /// not acknowledged, and retried with its key it is applied once.
    @Test func aNodeWhoseLeaseExpiredReadsItsSessionsAgainAndCarriesOn() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        var acked: [Int] = []
        var refused = 0
        for round in 1...8 {
            // The lease ends now, as if the node had been paused past it; the next commit races its
            // renewal (one every third of a lease), and most rounds the commit comes first.
            _ = try pg.psql("UPDATE navd_nodes SET expires = clock_timestamp() - interval '1 second' WHERE node = 'A'")
            let key = "r\(round)"
            let tab: JSONValue = round % 2 == 0 ? "shop.Home" : "cart.Cart"
            var answer: JSONValue?
            try waitUntil(timeout: 10, "round \(round): the navigation is answered") {
                do {
                    // A refused commit disconnects its clients: each try connects anew.
                    answer = try NavClient(socketPath: a.socketPath).call("navigate", ["to": tab, "by": "select", "key": .string(key)], timeout: 5)
                    return true
                } catch let e as NavClientError where ["unavailable", "connection", "connect"].contains(e.kind) {
                    refused += 1
                    return false
                }
            }
            acked.append(answer?["version"]?.intValue ?? -1)
            #expect(a.isRunning, "round \(round): navd stopped: \(a.stderr.suffix(1500))")
        }
        #expect(acked == Array(1...8), "acknowledged versions \(acked)")
        #expect(try NavClient(socketPath: a.socketPath).call("tree")["version"]?.intValue == 8)
        #expect(refused > 0, "no commit raced the renewal: the test did not test fencing")
        #expect(a.stderr.contains("lease had expired"), "\(a.stderr.suffix(2000))")
        #expect(!a.stderr.contains("lost its registration"))
    }

    /// A node paused (SIGSTOP) past its lease while another takes its session over and commits:
    /// resumed, it does not stop, the request that waited in its socket is not acknowledged on a
    /// version that forks the session, and its subscriber of the session gets what it missed (every
    /// version in order, or a snapshot covering the gap), then the new owner's next commits.
    @Test func aPausedNodesSubscriberGetsWhatItMissedAndTheNodeCarriesOn() throws {
        let pg = try PostgresServer()
        let a = try Self.node("A", pg)
        let b = try Self.node("B", pg)
        let owner = try a.client()
        try owner.call("session.open", ["name": "s"])
        let watcher = try a.client()
        var mirror = TreeMirror(snapshot: try watcher.call("subscribe", ["session": "s"]))
        try owner.call("navigate", ["session": "s", "to": "cart.Cart", "by": "select"])
        try mirror.apply(try watcher.notification("stackChanged")["params"]!)

        kill(a.pid, SIGSTOP)
        var paused = true
        defer { if paused { kill(a.pid, SIGCONT) } }
        // A request waits in A's socket while A sleeps.
        _ = try owner.send("navigate", ["session": "s", "to": "shop.Product", "with": ["id": "queued"]], id: 99)
        // B takes s over once A's lease expired (until then it answers `moved` to A, or
        // `unavailable`: this client does not follow), and commits twice.
        let onB = try b.client()
        var versions: [Int] = []
        for (i, tab) in ["shop.Home", "cart.Cart"].enumerated() {
            try waitUntil(timeout: 10, "B commits \(i + 1)") {
                let r = try onB.reply(to: try onB.send("navigate", ["session": "s", "to": .string(tab), "by": "select"], id: .int(i)))
                guard let v = r["result"]?["version"]?.intValue else {
                    let kind = r["error"]?["data"]?["kind"]?.stringValue
                    if kind != "unavailable" && kind != "moved" { throw TestFailure("B answered \(r)") }
                    return false
                }
                versions.append(v)
                return true
            }
        }
        #expect(versions == [2, 3])
        kill(a.pid, SIGCONT)
        paused = false
        // The waiting request was not acknowledged as version 2 of a fork: refused, or its client
        // disconnected (it was not stored), or sent on to B.
        if let reply = try? owner.reply(to: 99, timeout: 10) {
            let version = reply["result"]?["version"]?.intValue
            #expect(version == nil || version == 4, "the queued request was answered \(reply)")
        }
        // One more commit on B; A's subscriber reaches it.
        let last = try onB.call("navigate", ["session": "s", "to": "shop.Home", "by": "select"])["version"]?.intValue ?? -1
        var snapshots = 0
        var heard: [String] = []
        while mirror.version < last {
            let n = try watcher.notification("stackChanged")
            guard let p = n["params"], p["session"]?.stringValue == "s" else { continue }
            let isSnapshot = TreeMirror.isSnapshot(p)
            if isSnapshot { snapshots += 1 }
            heard.append("\(p["version"]?.intValue ?? -1)\(isSnapshot ? " (snapshot)" : "")")
            do { try mirror.apply(p) } catch {
                Issue.record("\(error); heard \(heard); A: \(a.stderr.suffix(3000))")
                return
            }
        }
        #expect(mirror.version == last)
        #expect(mirror.root == (try onB.call("tree", ["session": "s"]))["root"])
        #expect(a.isRunning, "A stopped: \(a.stderr.suffix(2000))")
        // A serves again: a new session made there commits.
        try waitUntil(timeout: 10, "A accepts changes again") {
            (try? NavClient(socketPath: a.socketPath).call("session.open", ["name": "after"])) != nil
        }
        print("paused node: subscriber caught up with \(snapshots) snapshot(s); B committed \(versions + [last])")
    }

    /// Processes started one after another under the same `--node` while clients write: each new
    /// one fences the old (which exits 1), and claims every session of the node even when the old
    /// process's last commit still held some of their rows: no session stays unavailable for more
    /// than two leases.
    @Test func restartsUnderTheSameNameStrandNoSession() throws {
        let pg = try PostgresServer()
        let dir = TempDir()
        defer { dir.remove() }
        let sockets = [dir.file("x0.sock"), dir.file("x1.sock")]
        var current = try Self.node("X", pg, socket: sockets[0])
        let sessions = (0..<6).map { "r-\($0)" }
        for s in sessions {
            // A node whose lease lapsed while the machine was busy (a build beside the tests) answers
            // `unavailable` until it has read its sessions again, and drops its clients: retried
            // after data.retryAfterMs on a new connection, as the clients below do.
            try waitUntil(timeout: 20, "session \(s) opens") {
                do {
                    try NavClient(socketPath: current.socketPath).call("session.open", ["name": .string(s)], timeout: 5)
                    return true
                } catch let e as NavClientError where ["unavailable", "connection", "connect"].contains(e.kind) {
                    return false
                }
            }
        }
        let stop = Flag()
        let results = Results()
        let threads = sessions.enumerated().map { (i, s) in
            Thread { results.record(s, driveSession(s, sockets: sockets, start: i, until: stop, results: results)) }
        }
        for t in threads { t.start() }
        func versions() throws -> [String: Int] {
            try pg.integersByName("SELECT name, version FROM navd_sessions WHERE name LIKE 'r-%'")
        }
        for round in 1...5 {
            try waitUntil(timeout: 20, "round \(round): every session commits") {
                let v = try versions()
                return sessions.allSatisfy { (v[$0] ?? 0) >= round * 5 }
            }
            let next = try Self.node("X", pg, socket: sockets[round % 2])
            let status = current.waitForExit(timeout: 20)
            #expect(status == 1, "round \(round): the old process ended with \(String(describing: status)): \(current.stderr.suffix(1500))")
            let mark = try versions()
            // Two leases (2 s), plus the clients' retry delays; a stranded session never commits.
            do {
                try waitUntil(timeout: 10, "round \(round): every session commits on the new process") {
                    let v = try versions()
                    return sessions.allSatisfy { (v[$0] ?? 0) > (mark[$0] ?? 0) }
                }
            } catch {
                let v = try versions()
                Issue.record("\(error): stranded \(sessions.filter { (v[$0] ?? 0) <= (mark[$0] ?? 0) }); \(next.stderr.suffix(1500))")
                current = next
                break
            }
            current = next
        }
        stop.set()
        for t in threads { while !t.isFinished { usleep(10_000) } }
        let c = try NavClient(socketPath: current.socketPath)
        for s in sessions {
            let acked = results.versions(s)
            #expect(acked == Array(1...max(1, acked.count)), "session \(s): acknowledged versions \(acked.suffix(10))")
            #expect(try c.call("tree", ["session": .string(s)])["version"]?.intValue == acked.count)
        }
        #expect(results.failures.isEmpty, "\(results.failures.prefix(5))")
    }
}
