import Foundation
import JSON
import NavTesting
import Testing

/// The state file's log (`STATE.log`): commits appended as their changes, replayed over the
/// snapshot at start; a torn last record cut, a corrupt middle refused with its byte, compaction.
@Suite struct LogStoreTests {
    /// Record boundaries of a log: (offset, payload length) of each record after the 32-byte header.
    static func records(_ log: [UInt8]) -> [(offset: Int, length: Int)] { LogFile.records(log) }

    /// navd with a state file, `n` pushes of Product, then killed (-9): the log holds them.
    func killedAfterPushes(_ n: Int, dir: TempDir) throws -> (state: String, log: String, versions: [JSONValue]) {
        let state = dir.file("state.sqlite")
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        let c = try d.client()
        var versions: [JSONValue] = []
        for i in 0..<n { versions.append(try c.call("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)")]])["version"] ?? .null) }
        d.stop(signal: SIGKILL)
        return (state, state + ".log", versions)
    }

    @Test func commitsAreReplayedAfterKillNine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (state, log, versions) = try killedAfterPushes(5, dir: dir)
        let bytes = [UInt8](FileManager.default.contents(atPath: log) ?? Data())
        #expect(Self.records(bytes).count >= 5, "one record per commit at least")
        #expect(String(decoding: bytes.prefix(8), as: UTF8.self) == "navdlog2")
        let attrs = try FileManager.default.attributesOfItem(atPath: log)
        #expect((attrs[.posixPermissions] as? Int) == 0o600)
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"))
        let tree = try d.client().call("tree")
        #expect(tree["version"] == versions.last, "\(tree)")
        // The replayed state became the snapshot: the log starts empty again (its segment, zeros).
        #expect(Self.records([UInt8](FileManager.default.contents(atPath: log) ?? Data())).isEmpty)
    }

    /// In the default durable mode the log's segment is mapped: a commit's record is in the file
    /// (the kernel's cache, which `kill -9` does not lose) by the time its reply arrives, for a
    /// request alone in its read as for pipelined ones, and the log is read back after `kill -9`.
    @Test func eachCommitIsInTheMappedLogWhenItsReplyArrives() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        let c = try d.client()
        let stats = try #require(try c.call("stats")["state"])
        #expect(stats["mapped"]?.boolValue == true, "\(stats)")
        // The keys Protocol/methods/stats.json names, no more, no fewer.
        #expect(Set(stats.objectValue?.members.map(\.key) ?? []) == [
            "snapshot", "log", "logBytes", "compactAt", "compactions", "preallocated", "mapped", "compacting",
            "snapshotLiveBytes", "snapshotFileBytes", "lastCompactionMs", "maxSliceMs",
        ])
        func commits() -> [String] {
            (LogFile(path: state + ".log")?.payloads ?? []).map { String(decoding: $0, as: UTF8.self) }.filter { $0.hasPrefix("{\"c\":") }
        }
        for i in 0..<5 {
            let r = try c.call("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)")]])
            let v = try #require(r["version"]?.intValue)
            #expect(commits().count == i + 1 && commits().last?.contains("\"v\":\(v),") == true, "version \(v): \(commits())")
        }
        // Pipelined, in one write: each commit is in the file once the replies arrive.
        try c.sendRaw((0..<8).map { i in
            i % 2 == 0 ? "{\"jsonrpc\":\"2.0\",\"id\":\(100 + i),\"method\":\"dismiss\"}\n"
                : "{\"jsonrpc\":\"2.0\",\"id\":\(100 + i),\"method\":\"navigate\",\"params\":{\"to\":\"shop.Product\",\"with\":{\"id\":\"q\"}}}\n"
        }.joined())
        let last = try (100..<108).map { try c.reply(to: .int($0)) }.last
        #expect(commits().count == 13, "\(commits().count)")
        let version = try #require(last?["result"]?["version"]?.intValue)
        d.stop(signal: SIGKILL)
        let again = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"))
        #expect(try again.client().call("tree")["version"]?.intValue == version)
    }

    /// The segment's mapping asks the kernel for huge pages (`hg` among its flags in
    /// `/proc/PID/smaps`), and its header, stored through the mapping, is in the file as navd
    /// reads it back: a log started by a compaction replays to the same tree.
    @Test func theLogSegmentIsMappedWithHugePagesAskedForAndReadsBackWhole() throws {
        guard FileManager.default.fileExists(atPath: "/sys/kernel/mm/transparent_hugepage/enabled") else {
            print("skipped: this kernel has no transparent huge pages")
            return
        }
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        // A small threshold: the first segment is compacted and a second one started under load.
        let d = try Daemon(arguments: ["--state", state, "--log-compact-bytes", "65536", "--log-compact-ratio", "0"], socketPath: dir.file("d.sock"))
        let c = try d.client()
        for i in 0..<400 {
            _ = try c.call("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)")]])
            _ = try c.call("dismiss")
        }
        #expect(try #require(try c.call("stats")["state"])["compactions"]?.intValue ?? 0 >= 1)
        // Read to its end: a proc file has no size for a whole-file read to go by.
        let smaps = String(decoding: try #require(FileHandle(forReadingAtPath: "/proc/\(d.pid)/smaps")).readDataToEndOfFile(), as: UTF8.self)
        let flags = try #require(mappingFlags(smaps, path: state + ".log"), "no mapping of \(state).log in smaps")
        #expect(flags.split(separator: " ").contains("hg"), "\(flags)")
        let version = try #require(try c.call("tree")["version"]?.intValue)
        #expect(LogFile(path: state + ".log")?.payloads.isEmpty == false, "the new segment's records read back under its header")
        d.stop(signal: SIGKILL)
        let again = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"))
        #expect(try again.client().call("tree")["version"]?.intValue == version)
    }

    /// `--durability full`: the next segment is made ahead on libuv's thread pool (zeros written
    /// and synced: `stats.state.spare`), and a compaction renames that very file into place, where
    /// it wrote and synced a segment of zeros on the loop (about 50 ms for 20 MiB, every client
    /// waiting); the next spare is made again, a kill -9 loses nothing acknowledged, and a clean
    /// stop leaves no spare behind.
    @Test func fullDurabilityStartsEachSegmentFromASpareMadeAhead() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let args = ["--state", state, "--durability", "full", "--log-compact-bytes", "65536", "--log-compact-ratio", "0"]
        let d = try Daemon(arguments: args, socketPath: dir.file("d.sock"))
        let c = try d.client()
        func stateStats() throws -> JSONValue { try #require(try c.call("stats")["state"]) }
        func spareReady() throws -> Bool {
            for _ in 0..<2_000 where try stateStats()["spare"] != "ready" {}
            return try stateStats()["spare"] == "ready"
        }
        func inode(_ path: String) -> UInt? {
            var st = stat()
            return stat(path, &st) == 0 ? UInt(st.st_ino) : nil
        }
        // None is made until the log is half way to its threshold.
        #expect(try stateStats()["spare"] == "none")
        var i = 0
        func navigate() throws {
            _ = try c.call("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)")]])
            i += 1
        }
        while try stateStats()["spare"] == "none" && i < 2_000 { try navigate() }
        #expect(try spareReady())
        let spare = try #require(inode(state + ".log.spare"))
        #expect(FileManager.default.contents(atPath: state + ".log.spare")?.allSatisfy { $0 == 0 } == true, "a spare is zeros")
        let compactions = try stateStats()["compactions"]?.intValue ?? 0
        while try stateStats()["compactions"]?.intValue ?? 0 == compactions && i < 4_000 { try navigate() }
        #expect(try stateStats()["compactions"]?.intValue ?? 0 > compactions)
        #expect(inode(state + ".log") == spare, "the compaction's new segment is the spare made ahead")
        while try stateStats()["spare"] == "none" && i < 6_000 { try navigate() }
        #expect(try spareReady() && inode(state + ".log.spare") != spare)
        let version = try #require(try c.call("tree")["version"]?.intValue)
        d.stop(signal: SIGKILL)
        let again = try Daemon(arguments: args, socketPath: dir.file("d2.sock"))
        #expect(try again.client().call("tree")["version"]?.intValue == version)
        #expect(again.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: state + ".log.spare"), "a clean stop removes the spare")
    }

    /// The `VmFlags:` line of the mapping of the file at `path` in `smaps`: the first after the
    /// mapping's address line (which ends with the path); each mapping's fields end with it.
    private func mappingFlags(_ smaps: String, path: String) -> String? {
        let lines = smaps.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { $0.hasSuffix(" " + path) }) else { return nil }
        return lines[(start + 1)...].first { $0.hasPrefix("VmFlags:") }
    }

    /// A commit's record keeps its changes in the compact form (`cc`, about half the bytes) unless
    /// a subscriber hears the full form, which is then kept as it was built (`ch`); a log of both
    /// is replayed to the tree navd had.
    @Test func commitRecordsAreCompactUnlessAFullSubscriberListens() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        let c = try d.client()
        _ = try c.call("navigate", ["to": "shop.Product", "with": ["id": "p0"]])  // nobody listens
        let full = try d.client()
        _ = try full.call("subscribe")
        _ = try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"]])  // a full subscriber
        let compact = try d.client()
        _ = try compact.call("subscribe", ["notifications": "compact"])
        _ = try c.call("dismiss")  // both forms are heard
        _ = try full.call("unsubscribe")
        _ = try c.call("navigate", ["to": "cart.Cart", "by": "select"])  // a compact subscriber alone (a tab selected)
        _ = try c.call("update", ["node": try #require(c.call("tree")["visible"]?.arrayValue?.last), "with": [:]])
        let before = try c.call("tree")
        d.stop(signal: SIGKILL)

        let commits = try #require(LogFile(path: state + ".log")).payloads.map { String(decoding: $0, as: UTF8.self) }.filter { $0.hasPrefix(#"{"c":"#) }
        #expect(commits.map { $0.contains(#","cc":["#) ? "cc" : $0.contains(#","ch":["#) ? "ch" : "?" } == ["cc", "ch", "cc", "cc", "cc"], "\(commits)")
        let compactBytes = commits[0].utf8.count, fullBytes = commits[1].utf8.count
        #expect(compactBytes < fullBytes * 3 / 4, "a push: \(compactBytes) bytes compact, \(fullBytes) full")

        let again = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"))
        let tree = try again.client().call("tree")
        #expect(tree["version"] == before["version"] && tree["root"] == before["root"] && tree["visible"] == before["visible"], "\(tree)\nbefore: \(before)")
    }

    /// A write cut in the middle: the file ends there, or (inside the segment written in advance)
    /// zeros follow what was written.
    @Test(arguments: [true, false])
    func aTornLastRecordIsCutAndTheRestReplayed(fileEnds: Bool) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (state, log, versions) = try killedAfterPushes(4, dir: dir)
        var bytes = [UInt8](FileManager.default.contents(atPath: log) ?? Data())
        let last = try #require(Self.records(bytes).last)
        let cut = last.offset + 16 + last.length / 2
        if fileEnds {
            // A log that grows with its records (no room for its size in advance): the file ends there.
            var file = try #require(LogFile(bytes))
            file.size = 0
            bytes = Array(file.bytes.prefix(cut))
        } else {
            for i in cut..<(last.offset + 16 + last.length) { bytes[i] = 0 }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: log))
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"))
        #expect(try d.client().call("tree")["version"]?.intValue == (versions.last?.intValue ?? 0) - 1)
    }

    @Test func aCorruptRecordBeforeOthersStopsNavdNamingTheByte() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (state, log, _) = try killedAfterPushes(4, dir: dir)
        var bytes = [UInt8](FileManager.default.contents(atPath: log) ?? Data())
        let second = Self.records(bytes)[1]
        bytes[second.offset + 16 + second.length / 2] ^= 0x20  // one bit flipped inside a record
        try Data(bytes).write(to: URL(fileURLWithPath: log))
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"), waitUntilServing: false)
        #expect(d.waitForExit(timeout: 10) != 0)
        #expect(d.stderr.contains("is damaged at byte \(second.offset)"), "\(d.stderr)")
        // The file is left as it was, for a person to look at.
        #expect([UInt8](FileManager.default.contents(atPath: log) ?? Data()) == bytes)
    }

    @Test func aMissingCommitInTheMiddleStopsNavdNamingTheSession() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (state, log, _) = try killedAfterPushes(4, dir: dir)
        // Framed whole (checksums and sequence hold): the gap is in what the records say.
        var file = try #require(LogFile(path: log))
        file.payloads.remove(at: file.payloads.count - 2)
        try file.write(to: log)
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"), waitUntilServing: false)
        #expect(d.waitForExit(timeout: 10) != 0)
        #expect(d.stderr.contains("cannot replay") && d.stderr.contains("session \"main\""), "\(d.stderr)")
    }

    /// A small compaction threshold: the snapshot is rewritten many times under load, and every
    /// acknowledged commit is there after kill -9; a clean stop leaves an empty log.
    @Test func compactionKeepsEverythingAcknowledged() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        var last: JSONValue = .null
        var facts: JSONValue = .null
        var threshold = 0
        do {
            let d = try Daemon(arguments: ["--state", state, "--log-compact-bytes", "4096", "--log-compact-ratio", "0"], socketPath: dir.file("d.sock"))
            let c = try d.client()
            for i in 0..<200 {
                last = try c.call("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)")], "key": .string("k\(i)")])
                try c.call("dismiss")
                if i % 50 == 0 { facts = try c.call("context.set", ["facts": ["n": .int(i)]]) }
            }
            last = try c.call("tree")
            let stats = try c.call("stats")["state"]
            #expect((stats?["compactions"]?.intValue ?? 0) >= 2, "\(String(describing: stats))")
            threshold = stats?["compactAt"]?.intValue ?? 0
            d.stop(signal: SIGKILL)
        }
        let logged = Self.records([UInt8](FileManager.default.contents(atPath: state + ".log") ?? Data()))
        #expect(threshold == 4096)
        #expect(logged.reduce(0) { $0 + 16 + $1.length } < 4096 + 2048, "the log starts again past 4096 bytes")
        let d = try Daemon(arguments: ["--state", state, "--log-compact-bytes", "4096", "--log-compact-ratio", "0"], socketPath: dir.file("d2.sock"))
        let c = try d.client()
        #expect(try c.call("tree") == last)
        #expect(try c.call("context.get") == facts)
        // A keyed retry after the restart gets its first reply.
        let retry = try c.call("navigate", ["to": "shop.Product", "with": ["id": "p0"], "key": "k0"])
        #expect(retry["version"] == 1, "\(retry)")
        #expect(d.stop(signal: SIGTERM) == 0)
        #expect(Self.records([UInt8](FileManager.default.contents(atPath: state + ".log") ?? Data())).isEmpty, "a clean stop leaves the log empty")
    }

    /// The log a compaction wrote into the snapshot is removed, and its descriptor closed (on
    /// libuv's thread pool, where freeing its pages does not hold the loop): after many compactions
    /// navd holds at most the last two (a pool thread a loaded machine has not run yet), not one per
    /// compaction.
    @Test func aCompactedLogIsRemovedAndClosed() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let d = try Daemon(arguments: ["--state", state, "--log-compact-bytes", "4096", "--log-compact-ratio", "0"], socketPath: dir.file("d.sock"))
        let c = try d.client()
        for i in 0..<300 {
            try c.call("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)")]])
            try c.call("dismiss")
        }
        let stats = try #require(try c.call("stats")["state"])
        let compactions = try #require(stats["compactions"]?.intValue)
        #expect(compactions >= 5, "\(stats)")
        if stats["compacting"] == false {
            #expect(!FileManager.default.fileExists(atPath: state + ".log.old"), "\(stats)")
        }
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(d.pid)/fd")) ?? []
        let logs = fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(d.pid)/fd/\($0)") }
            .filter { $0.hasPrefix(state + ".log") }
        #expect(logs.filter { $0.hasSuffix("(deleted)") }.count <= 2, "\(compactions) compactions; open: \(logs)")
        #expect(logs.filter { !$0.hasSuffix("(deleted)") }.count <= 2, "the log, and the old one while a compaction runs: \(logs)")
        #expect(d.stop(signal: SIGTERM) == 0)
    }

    /// With `--log-compact-ratio` (3 by default) the threshold is three times the snapshot when
    /// that is more than `--log-compact-bytes`, and grows with it: a large snapshot is not
    /// rewritten for a few commits.
    @Test func theThresholdGrowsWithTheSnapshot() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try Daemon(arguments: ["--state", dir.file("s.sqlite"), "--log-compact-bytes", "4096"], socketPath: dir.file("d.sock"))
        let c = try d.client()
        let first = try #require(try c.call("stats")["state"]?["compactAt"]?.intValue)
        #expect(first > 4096 && first % (3 * 4096) == 0, "three times the snapshot's pages: \(first)")
        for i in 0..<300 {
            try c.call("session.open", ["name": .string("s\(i)")])
            try c.call("navigate", ["session": .string("s\(i)"), "to": "shop.Product", "with": ["id": .string(String(repeating: "p", count: 200))]])
        }
        let stats = try #require(try c.call("stats")["state"])
        let later = try #require(stats["compactAt"]?.intValue)
        #expect((stats["compactions"]?.intValue ?? 0) >= 1, "\(stats)")
        #expect(later > first && later % (3 * 4096) == 0, "the threshold follows the snapshot: \(first) then \(later)")
        #expect(try #require(stats["logBytes"]?.intValue) < later, "\(stats)")
        #expect(d.stop(signal: SIGTERM) == 0)
    }

    /// A compaction a crash interrupted: the log it was writing into the snapshot (`.old`) is
    /// replayed before the new one.
    @Test func aCompactionCutShortReplaysTheOldLogFirst() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (state, log, versions) = try killedAfterPushes(6, dir: dir)
        let file = try #require(LogFile(path: log))
        let split = file.payloads.count / 2
        try LogFile(payloads: Array(file.payloads[..<split])).write(to: log + ".old")
        try LogFile(payloads: Array(file.payloads[split...])).write(to: log)
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"))
        #expect(try d.client().call("tree")["version"] == versions.last)
        #expect(!FileManager.default.fileExists(atPath: log + ".old"), "the compaction at start ended it")
    }

    /// A compaction writes the old log into the snapshot a slice at a time; navd before 2026-12-03
    /// wrote keys before the sessions they belong to, so a crash between slices left keys of a
    /// session the snapshot did not hold yet. The old log holds that session and its keys, so navd
    /// starts, and a retry of the key gets the first reply.
    @Test func keysOfASessionACompactionCutShortHadNotWrittenYetComeFromTheOldLog() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), log = state + ".log"
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        let c = try d.client()
        try c.call("session.open", ["name": "late"])
        let first = try c.call("navigate", ["session": "late", "to": "shop.Product", "with": ["id": "p1"], "key": "k1"])
        d.stop(signal: SIGKILL)
        // As such a crash leaves the files: the log renamed `.old`, the slice of keys written.
        try FileManager.default.moveItem(atPath: log, toPath: log + ".old")
        let reply = JSONWriter.string(.object(["result": first])).replacingOccurrences(of: "'", with: "''")
        let sql = "INSERT INTO keys (session, key, seq, reply) VALUES ('late', 'k1', 1, '\(reply)')"
        #expect(try runCommand("/usr/bin/sqlite3", [state, sql]).status == 0)

        let again = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"))
        let c2 = try again.client()
        #expect(try c2.call("tree", ["session": "late"])["version"] == first["version"])
        let retry = try c2.call("navigate", ["session": "late", "to": "shop.Home", "by": "root", "key": "k1"])
        #expect(retry == first)
        #expect(again.stop(signal: SIGTERM) == 0)
        // The compaction at start wrote the session: the snapshot holds no key without its session.
        let orphans = try runCommand("/usr/bin/sqlite3", [state, "SELECT count(*) FROM keys WHERE session NOT IN (SELECT name FROM sessions)"])
        #expect(orphans.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        let kept = try runCommand("/usr/bin/sqlite3", [state, "SELECT count(*) FROM keys WHERE session = 'late' AND key = 'k1'"])
        #expect(kept.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    }

    /// Without a compaction cut short, a key of a session the snapshot does not hold is corruption:
    /// navd refuses to start and says so.
    @Test func aKeyOfNoSessionWithoutAnOldLogStopsNavd() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        #expect(d.stop(signal: SIGTERM) == 0)
        let sql = "INSERT INTO keys (session, key, seq, reply) VALUES ('nobody', 'k1', 1, '{\"result\":{\"version\":1}}')"
        #expect(try runCommand("/usr/bin/sqlite3", [state, sql]).status == 0)
        let r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("d2.sock"), "--state", state])
        #expect(r.status == 1)
        #expect(r.stderr.contains("key \"k1\" of session \"nobody\"") && r.stderr.contains("holds no such session"), "\(r.stderr)")
    }

    /// A graph reloaded with its coordinators in another order: the snapshot a clean stop writes
    /// names them by the new graph.
    @Test func aReloadedGraphNamesTheCoordinatorsOfTheLastSnapshot() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graphDir = dir.file("graph")
        try FileManager.default.createDirectory(atPath: graphDir, withIntermediateDirectories: true)
        try "root: {stack: Home}\ncoordinators:\n  Home: {opens: [Detail]}\n  Detail: {}\n"
            .write(toFile: graphDir + "/app.yaml", atomically: true, encoding: .utf8)
        let state = dir.file("state.sqlite")
        do {
            let d = try Daemon(arguments: ["--graph", graphDir, "--state", state], socketPath: dir.file("a.sock"))
            let c = try d.client()
            try c.call("navigate", ["to": "Detail"])
            try "root: {stack: Home}\ncoordinators:\n  Aaa: {}\n  Home: {opens: [Detail, Aaa]}\n  Detail: {}\n"
                .write(toFile: graphDir + "/app.yaml", atomically: true, encoding: .utf8)
            #expect(try c.call("graph.reload")["ok"] == true)
            #expect(d.stop(signal: SIGTERM) == 0)
        }
        let d = try Daemon(arguments: ["--graph", graphDir, "--state", state], socketPath: dir.file("b.sock"))
        let stack = try d.client().call("tree")["root"]?["children"]?.arrayValue?.map { $0["coordinator"] }
        #expect(stack == ["app.Home", "app.Detail"])
    }

    /// A session changed, then rebuilt by a graph reload, then closed, all before one compaction:
    /// the compaction forgets it, and the closed session does not come back after a restart (the
    /// state it had before the reload was written after its close, and a restart found it again,
    /// or refused to start when the graph had changed). Its keys go with it.
    @Test(arguments: [SIGTERM, SIGKILL])
    func aSessionClosedAfterAReloadStaysClosedThroughACompaction(signal: Int32) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let args = ["--state", state, "--log-compact-bytes", "4096", "--log-compact-ratio", "0"]
        do {
            let d = try Daemon(arguments: args, socketPath: dir.file("a.sock"))
            let c = try d.client()
            let compactions = try c.call("stats")["state"]?["compactions"]?.intValue ?? 0
            try c.call("session.open", ["name": "gone"])
            try c.call("navigate", ["session": "gone", "to": "shop.Product", "with": ["id": "p1"], "key": "k1"])
            #expect(try c.call("graph.reload")["ok"] == true)
            try c.call("session.close", ["name": "gone"])
            // Past the log's 4096 bytes: a compaction starts, and (slice by slice) ends.
            var i = 0
            while try c.call("stats")["state"]?["compactions"]?.intValue ?? 0 <= compactions && i < 400 {
                try c.call("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)")]])
                try c.call("dismiss")
                i += 1
            }
            #expect(i < 400, "a compaction ends")
            d.stop(signal: signal)
        }
        let d = try Daemon(arguments: args, socketPath: dir.file("b.sock"))
        #expect(try d.client().call("session.list")["sessions"] == ["main"])
        let keys = try runCommand("/usr/bin/sqlite3", [state, "SELECT count(*) FROM keys WHERE session = 'gone'"])
        #expect(keys.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(keys.stdout)")
    }

    /// A state file (its path) whose snapshot holds session `x`, navigated once with key `k1`.
    func sessionXWithKeyK1InTheSnapshot(_ dir: TempDir) throws -> String {
        let state = dir.file("state.sqlite")
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("a.sock"))
        let c = try d.client()
        try c.call("session.open", ["name": "x"])
        try c.call("navigate", ["session": "x", "to": "shop.Product", "with": ["id": "p1"], "key": "k1"])
        d.stop()  // a clean stop writes the snapshot
        return state
    }

    /// A session closed and opened again under its name is a new session: the keys the closed one
    /// remembered are gone, whether the close and the open reach the snapshot in one compaction or
    /// the log replays them, so a navigation with an old key navigates.
    @Test(arguments: [SIGTERM, SIGKILL])
    func aSessionOpenedAgainForgetsTheKeysOfTheClosedOne(signal: Int32) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try sessionXWithKeyK1InTheSnapshot(dir)
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("b.sock"))
            let c = try d.client()
            try c.call("session.close", ["name": "x"])
            try c.call("session.open", ["name": "x"])
            d.stop(signal: signal)
        }
        for round in 0..<2 {  // once after the close and open, once more after the snapshot they made
            let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("c\(round).sock"))
            let c = try d.client()
            #expect(try c.call("tree", ["session": "x"])["version"] == 0)
            if round == 1 {
                let r = try c.call("navigate", ["session": "x", "to": "shop.Product", "with": ["id": "p2"], "key": "k1"])
                #expect(try c.call("tree", ["session": "x"])["version"] == 1, "the old key's reply was replayed: \(r)")
            }
            d.stop()
        }
    }

    /// The same before a graph reload the log holds (the keys of the sessions the reload rebuilt are
    /// gathered from the snapshot and the log before it): the closed session's keys are dropped,
    /// the keys remembered after the open under its name are kept.
    @Test func keysGatheredBeforeAReloadDropThoseOfASessionClosedBeforeIt() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try sessionXWithKeyK1InTheSnapshot(dir)
        let second: JSONValue
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("b.sock"))
            let c = try d.client()
            try c.call("session.close", ["name": "x"])
            try c.call("session.open", ["name": "x"])
            second = try c.call("navigate", ["session": "x", "to": "shop.Product", "with": ["id": "p2"], "key": "k2"])
            #expect(try c.call("graph.reload")["ok"] == true)
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("c.sock"))
        let c = try d.client()
        #expect(try c.call("tree", ["session": "x"])["version"] == 1)
        #expect(try c.call("navigate", ["session": "x", "to": "shop.Home", "by": "root", "key": "k2"]) == second)
        let r = try c.call("navigate", ["session": "x", "to": "shop.Home", "by": "root", "key": "k1"])
        #expect(r["version"] == 2, "the closed session's key was answered: \(r)")
        d.stop()
    }

    /// A log of the first format (`navdlog1`: u32 length, u32 CRC-32C, payload) is replayed and
    /// converted: the next log is of the second.
    @Test func aLogOfTheFirstFormatIsReplayedAndConverted() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        try Data(Self.firstFormatLog([Self.mainState(facts: "{}"),
                                      #"{"c":"main","v":1,"n":8,"ch":[{"op":"push","parent":"n3","node":{"id":"n8","kind":"screen","coordinator":"shop.Product","params":{"id":"42"}}}]}"#]))
            .write(to: URL(fileURLWithPath: state + ".log"))
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        let tree = try d.client().call("tree")
        #expect(tree["version"] == 1 && JSONWriter.string(tree).contains("shop.Product"), "\(tree)")
        #expect(d.stderr.contains("first format, converted"), "\(d.stderr)")
        #expect(String(decoding: Self.bytes(state + ".log").prefix(8), as: UTF8.self) == "navdlog2")
    }

    static func bytes(_ path: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path) ?? Data()) }

    /// A log of the first format (u32 length, u32 payload CRC, the payload) holding `payloads`.
    static func firstFormatLog(_ payloads: [String]) -> [UInt8] {
        var log = Array("navdlog1".utf8)
        for payload in payloads {
            let p = Array(payload.utf8)
            for v in [UInt32(p.count), LogFile.crc32c(p)] { for i in 0..<4 { log.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) } }
            log += p
        }
        return log
    }

    /// The state record of session main as the example graph starts it, with `facts`.
    static func mainState(facts: String) -> String {
        #"{"s":"main","v":0,"n":7,"t":{"id":"n1","kind":"tabs","children":[{"id":"n3","kind":"stack","children":[{"id":"n2","kind":"screen","coordinator":"shop.Home","params":{}}]},{"id":"n5","kind":"stack","children":[{"id":"n4","kind":"screen","coordinator":"cart.Cart","params":{}}]},{"id":"n7","kind":"stack","children":[{"id":"n6","kind":"screen","coordinator":"account.Account","params":{}}]}],"selected":0},"f":"# + facts + "}"
    }

    /// A `context.set` is logged as what it changed, not as every fact of the session (which wrote
    /// about 45 KB a request here, 1,000 facts, and 400 KB at 9,000); replayed after `kill -9`,
    /// removals included.
    @Test func factChangesAreLoggedAsWhatChanged() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        let c = try d.client()
        try c.call("context.set", ["facts": .object(JSONObject((0..<1000).map { ("f\($0)", JSONValue.string(String(repeating: "v", count: 32))) }))])
        func logged() -> Int { Self.records(Self.bytes(state + ".log")).reduce(0) { $0 + $1.length } }
        let before = logged()
        for i in 0..<50 { try c.call("context.set", ["facts": ["f1": .int(i)]]) }
        try c.call("context.set", ["facts": ["f2": .null, "new": true]])
        #expect(logged() - before < 51 * 100, "\(logged() - before) bytes logged for 51 small changes")
        d.stop(signal: SIGKILL)
        let again = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"))
        let facts = try again.client().call("context.get")["facts"]
        #expect(facts?.objectValue?.count == 1000 && facts?["f1"] == 49 && facts?["f2"] == nil && facts?["new"] == true && facts?["f999"] == "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv")
    }

    /// A log written before fact changes were recorded as such holds every fact in each facts
    /// record (`"facts"`): it is read still.
    @Test func aFactsRecordOfEveryFactIsReadStill() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        try Data(Self.firstFormatLog([Self.mainState(facts: #"{"old":1}"#), #"{"f":"main","facts":{"a":1,"b":[2]}}"#, #"{"f":"main","set":{"a":null,"c":"3"}}"#]))
            .write(to: URL(fileURLWithPath: state + ".log"))
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        #expect(try d.client().call("context.get")["facts"] == ["b": [2], "c": "3"])
    }

    /// A state file of the previous format (the SQLite file alone, no log) is read as it is.
    @Test func aStateFileWithoutALogIsRead() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (state, log, versions) = try killedAfterPushes(3, dir: dir)
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d2.sock"))
            #expect(d.stop(signal: SIGTERM) == 0)
        }
        try FileManager.default.removeItem(atPath: log)
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d3.sock"))
        #expect(try d.client().call("tree")["version"] == versions.last)
        #expect(FileManager.default.fileExists(atPath: log))
    }
}

/// kill -9 at random points under load while the log is rewritten into the snapshot every few
/// commits and the graph is reloaded: nothing acknowledged is lost, nothing closed comes back, a
/// keyed retry gets its first reply, the retry of the keyed navigation the kill cut off applies it
/// once, facts hold their last acknowledged value.
@Suite struct LogCrashTests {
    /// Under `full` too, where a group of commits gathers for a few loop turns while requests are
    /// ready before it is written and synced.
    @Test(arguments: ["process", "full"])
    func killNineAtRandomPointsLosesNothingAcknowledged(durability: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        var rng = SplitMix64(seed: 38)
        var acked: [String: (version: Int, top: JSONValue, key: String, reply: JSONValue)] = [:]
        var facts: [String: Int] = [:]
        var closed: Set<String> = []
        var seq = 0
        for round in 0..<6 {
            // The keyed navigation the kill cut off, sent but not answered.
            var inFlight: (name: String, params: JSONValue)?
            let sock = dir.file("d\(round).sock")
            let d = try Daemon(arguments: ["--state", state, "--durability", durability, "--log-compact-bytes", "8192", "--log-compact-ratio", "0"],
                               socketPath: sock)
            let clients = try (0..<4).map { _ in try d.client() }
            for (i, c) in clients.enumerated() { _ = try? c.call("session.open", ["name": .string("w\(i)")]) }
            d.killNine(afterMicroseconds: 30_000 + Int(rng.next() % 250_000))
            var running = true
            while running {
                seq += 1
                for (i, c) in clients.enumerated() {
                    let name = "w\(i)", key = "k\(seq)-\(i)"
                    let params: JSONValue = seq % 2 == 0
                        ? ["session": .string(name), "to": "shop.Product", "with": ["id": .string("p\(seq)")], "key": .string(key)]
                        : ["session": .string(name), "to": "shop.Home", "by": "root", "key": .string(key)]
                    inFlight = (name, params)
                    guard let r = try? c.call("navigate", params), let v = r["version"]?.intValue else { running = false; break }
                    inFlight = nil
                    acked[name] = (v, r["visible"]?.arrayValue?.last ?? .null, key, r)
                    if seq % 7 == 0, (try? c.call("context.set", ["session": .string(name), "facts": ["n": .int(seq)]])) != nil { facts[name] = seq }
                }
                if running, seq % 11 == 0 {
                    let temp = "t\(seq)"
                    if (try? clients[0].call("session.open", ["name": .string(temp)])) != nil,
                       (try? clients[0].call("session.close", ["name": .string(temp)])) != nil { closed.insert(temp) }
                }
                if running, seq % 13 == 0 { _ = try? clients[1].call("graph.reload") }
            }
            _ = d.waitForExit()
            let check = try Daemon(arguments: ["--state", state, "--durability", durability, "--log-compact-bytes", "8192", "--log-compact-ratio", "0"],
                                   socketPath: dir.file("c\(round).sock"))
            let c = try check.client()
            for (name, a) in acked {
                let tree = try c.call("tree", ["session": .string(name)])
                let version = try #require(tree["version"]?.intValue)
                #expect(version >= a.version, "round \(round), \(name): acknowledged version \(a.version) lost (restored \(version))")
                if version == a.version {
                    #expect(tree["visible"]?.arrayValue?.last == a.top, "round \(round), \(name)")
                    // The retry of the last acknowledged navigation gets its first reply, exactly.
                    let retry = try c.call("navigate", ["session": .string(name), "to": "shop.Home", "by": "root", "key": .string(a.key)])
                    #expect(retry == a.reply, "round \(round), \(name): \(retry) vs \(a.reply)")
                }
                if let n = facts[name] {
                    let got = try c.call("context.get", ["session": .string(name)])["facts"]?["n"]?.intValue ?? -1
                    #expect(got >= n, "round \(round), \(name): fact n \(got) < acknowledged \(n)")
                }
            }
            // Committed before the kill with its key, its retry gets its reply; not committed, the
            // retry applies it: either way once (kept without its key, the retry applied it twice).
            if let f = inFlight, let a = acked[f.name] {
                let retry = try c.call("navigate", f.params)
                #expect(retry["version"]?.intValue == a.version + 1, "round \(round), \(f.name): the cut-off navigation's retry \(retry) after acknowledged version \(a.version)")
                #expect(try c.call("tree", ["session": .string(f.name)])["version"]?.intValue == a.version + 1, "round \(round), \(f.name)")
                acked[f.name] = (a.version + 1, retry["visible"]?.arrayValue?.last ?? .null, f.params["key"]?.stringValue ?? "", retry)
            }
            let open = Set(try c.call("session.list")["sessions"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            #expect(open.isDisjoint(with: closed), "closed sessions came back: \(open.intersection(closed))")
            check.stop()
        }
        #expect(acked.count == 4)
    }

    /// `kill -9` at random points while new sessions are opened and navigated with a key, 100 at a
    /// time (pipelined), under a threshold that makes each compaction several slices: a crash
    /// between a compaction's slices leaves sessions whose keys the snapshot does not hold yet (or,
    /// written by navd before 2026-12-03, keys of sessions it does not hold), which the restart reads
    /// from the old log. Every acknowledged navigation is kept, and its retry gets its first reply.
    @Test func killNineWhileNewSessionsAreNavigatedWithKeysLosesNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let args = ["--state", dir.file("state.sqlite"), "--log-compact-bytes", "262144", "--log-compact-ratio", "0"]
        var rng = SplitMix64(seed: 45)
        var acked: [(name: String, reply: JSONValue)] = []
        for round in 0..<8 {
            let d = try Daemon(arguments: args, socketPath: dir.file("d\(round).sock"))
            let c = try d.client()
            d.killNine(afterMicroseconds: 100_000 + Int(rng.next() % 400_000))
            sending: while true {
                let names = (acked.count..<acked.count + 100).map { "n\($0)" }
                var sent: [(name: String, open: JSONValue, navigate: JSONValue)] = []
                for n in names {
                    guard let open = try? c.send("session.open", ["name": .string(n)]),
                          let navigate = try? c.send("navigate", ["session": .string(n), "to": "shop.Product", "with": ["id": "p"], "key": "k"]) else { break }
                    sent.append((n, open, navigate))
                }
                for s in sent {
                    guard (try? c.reply(to: s.open)) != nil, let r = try? c.reply(to: s.navigate) else { break sending }  // killed
                    guard let result = r["result"] else {
                        Issue.record("round \(round), \(s.name): \(r)")
                        break sending
                    }
                    acked.append((s.name, result))
                }
                if sent.count < names.count { break }
            }
            _ = d.waitForExit()
            let check = try Daemon(arguments: args, socketPath: dir.file("c\(round).sock"))
            let cc = try check.client()
            // The last 200 acknowledged (the ones a crash could lose) and 100 more at random.
            let sample = acked.suffix(200) + (0..<min(100, acked.count)).map { _ in acked[Int(rng.next() % UInt64(acked.count))] }
            for a in sample {
                let retry = try cc.call("navigate", ["session": .string(a.name), "to": "shop.Home", "by": "root", "key": "k"])
                #expect(retry == a.reply, "round \(round), \(a.name): \(retry) vs \(a.reply)")
            }
            check.stop()
        }
        #expect(acked.count >= 800, "\(acked.count) navigations acknowledged in eight rounds")
    }
}
