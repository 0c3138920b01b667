import Foundation
import JSON
import NavTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The state file keeps its promises against damage and hostile neighbours, through the real
/// binary: a damaged log is told from a torn tail and refused (then `--repair` keeps it aside and
/// says what it dropped); a graph reload during a compaction and a reload before kill -9 restart on
/// the reloaded graph; a refused keyed navigation stores nothing; keys are bounded per uid; state
/// files another user could have planted are refused.
@Suite struct DurableIntegrityTests {
    /// `n` pushes of Product in main, then kill -9: the state file, its log, and the versions acknowledged.
    func killedAfterPushes(_ n: Int, dir: TempDir) throws -> (state: String, log: String, versions: [Int]) {
        let state = dir.file("state.sqlite")
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        let c = try d.client()
        var versions: [Int] = []
        for i in 0..<n { versions.append(try #require(try c.call("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)")]])["version"]?.intValue)) }
        d.stop(signal: SIGKILL)
        return (state, state + ".log", versions)
    }

    func bytes(_ path: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path) ?? Data()) }

    enum Damage: String, CaseIterable {
        case lengthBitOfTheMiddleRecord, lengthBitOfTheFirstRecord, zeroedHeaderInTheMiddle, payloadBitOfTheLastRecord, cutInTheMiddle
    }

    /// What issue 45 found: a flipped bit in a record's length dropped acknowledged commits without a
    /// word (taken for a torn tail) and the log was compacted away. Now navd refuses to start, names
    /// the byte, the last good record and what follows, and leaves the log as it was; `--repair`
    /// keeps it aside and serves what comes before the damage.
    @Test(arguments: Damage.allCases)
    func damageIsRefusedNamingTheByteAndRepairKeepsTheLogAside(_ damage: Damage) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (state, log, versions) = try killedAfterPushes(20, dir: dir)
        var b = bytes(log)
        let all = LogFile.records(b)
        #expect(all.count == 22, "the graph's tabs, the state of main, then a commit each")
        let recs = Array(all.dropFirst())  // main's state, then the commits
        let at: Int
        switch damage {
        case .lengthBitOfTheMiddleRecord:
            at = recs[10].offset
            b[at + 2] ^= 0x01  // bit 16 of the length
        case .lengthBitOfTheFirstRecord:
            at = recs[0].offset
            b[at + 2] ^= 0x01
        case .zeroedHeaderInTheMiddle:
            at = recs[10].offset
            for i in at..<(at + 16) { b[i] = 0 }
        case .payloadBitOfTheLastRecord:
            // All of it was written (it ends in its closing brace): changed afterwards, not torn.
            at = recs[20].offset
            b[at + 16 + recs[20].length / 2] ^= 0x04
        case .cutInTheMiddle:
            at = recs[12].offset + 5
            b.removeSubrange(at...)
        }
        try Data(b).write(to: URL(fileURLWithPath: log))
        let refused = try Daemon(arguments: ["--state", state], socketPath: dir.file("r.sock"), waitUntilServing: false)
        #expect(refused.waitForExit(timeout: 20) == 1)
        let message = refused.stderr
        #expect(message.contains("\(log) is damaged at byte \(damage == .cutInTheMiddle ? b.count : at)"), "\(message)")
        #expect(message.contains("--repair"), "\(message)")
        if damage == .lengthBitOfTheMiddleRecord {
            #expect(message.contains("The last good record before it is at byte \(recs[9].offset) (session \"main\", version 9)"), "\(message)")
            #expect(message.contains("After the damage: 10 whole records (session \"main\" versions 11–20)"), "\(message)")
        }
        #expect(bytes(log) == b, "the log is left as it was: never compacted away")
        // --repair: starts, says what it dropped, keeps the damaged log aside whole.
        let repaired = try Daemon(arguments: ["--state", state, "--repair"], socketPath: dir.file("p.sock"))
        let expected: Int
        switch damage {
        // The log holds main's state (version 0), then the commits of versions 1…20.
        case .lengthBitOfTheMiddleRecord, .zeroedHeaderInTheMiddle: expected = versions[8]
        case .lengthBitOfTheFirstRecord: expected = 0
        case .payloadBitOfTheLastRecord: expected = versions[18]
        case .cutInTheMiddle: expected = versions[10]
        }
        let tree = try repaired.client().call("tree")
        #expect(tree["version"]?.intValue == expected, "\(tree)")
        #expect(repaired.stderr.contains("--repair:") && repaired.stderr.contains("is kept aside as \(log).corrupt-"), "\(repaired.stderr)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("state.sqlite.log.corrupt-") }
        #expect(aside.count == 1)
        #expect(bytes(dir.file(aside.first ?? "")) == b, "the damaged log is kept as it was")
    }

    /// A full file system (a 1 MiB tmpfs, which needs root: the tests run as root on the machine
    /// that runs them): navd acknowledges nothing it could not write, stops with status 1 saying the
    /// file system is full and what to do, refuses to start while it stays full, saying the same,
    /// and once its files are where there is room, starts with every navigation it acknowledged.
    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aFullFileSystemLosesNothingAcknowledgedAndSaysWhatToDo() throws {
        let dir = TempDir()
        let small = dir.file("small")
        defer {
            umount2(small, Int32(MNT_DETACH))
            dir.remove()
        }
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: false)
        try #require(mount("tmpfs", small, "tmpfs", 0, "size=1m,mode=0700") == 0, "mount: \(String(cString: strerror(errno)))")
        let state = small + "/state.sqlite"
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        let c = try d.client()
        var acknowledged = 0
        let big = String(repeating: "x", count: 4_000)
        fill: for i in 0..<2_000 {
            do {
                let r = try c.call("navigate", ["to": "shop.Product", "with": ["id": .string("p\(i)"), "ref": .string(big)]])
                acknowledged = try #require(r["version"]?.intValue)
            } catch {
                break fill  // navd closed the connection, unacknowledged
            }
        }
        #expect(acknowledged > 0 && acknowledged < 2_000, "\(acknowledged) navigations acknowledged on a 1 MiB file system")
        #expect(d.waitForExit(timeout: 20) == 1, "navd stops on a write that fails")
        #expect(d.stderr.contains("No space left on device; its file system is full: free space there, or give --state a file elsewhere, and start navd again"), "\(d.stderr.suffix(1_500))")
        // While it stays full, navd does not start, and says why.
        let again = try Daemon(arguments: ["--state", state], socketPath: dir.file("again.sock"), waitUntilServing: false)
        #expect(again.waitForExit(timeout: 20) == 1)
        #expect(again.stderr.contains("its file system is full"), "\(again.stderr.suffix(1_500))")
        // The files moved where there is room: every acknowledged navigation is there.
        let moved = dir.file("moved")
        try FileManager.default.createDirectory(atPath: moved, withIntermediateDirectories: false)
        chmod(moved, 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: small) where name.hasPrefix("state.sqlite") {
            try FileManager.default.copyItem(atPath: small + "/" + name, toPath: moved + "/" + name)
        }
        let restarted = try Daemon(arguments: ["--state", moved + "/state.sqlite"], socketPath: dir.file("moved.sock"))
        let tree = try restarted.client().call("tree")
        #expect(tree["version"]?.intValue ?? -1 >= acknowledged, "\(tree["version"] ?? .null) against \(acknowledged) acknowledged")
        #expect(restarted.stop() == 0)
    }

    /// The bytes a crash could leave of the last write are still a torn tail, cut with a warning
    /// that names the byte: the write's end never reached the disk (zeros, or the file's end).
    @Test func aTornLastRecordIsCutWithAWarning() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (state, log, versions) = try killedAfterPushes(5, dir: dir)
        var b = bytes(log)
        let last = try #require(LogFile.records(b).last)
        for i in (last.offset + 16 + 3)..<(last.offset + 16 + last.length) { b[i] = 0 }
        try Data(b).write(to: URL(fileURLWithPath: log))
        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("t.sock"))
        #expect(try d.client().call("tree")["version"]?.intValue == versions[3])
        #expect(d.stderr.contains("its last record (at byte \(last.offset)"), "\(d.stderr)")
        #expect(d.stderr.contains("replayed") && d.stderr.contains("main v0→v4"), "what was replayed is logged: \(d.stderr)")
    }

    static let graphV1 = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Product, Old]}
          Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}, opens: [Old]}
          Old: {}
        """
    /// Coordinators in another order (their indices change), `Old` gone, one more.
    static let graphV2 = """
        root: {stack: Home}
        coordinators:
          Aaa: {}
          Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}}
          Home: {opens: [Product, Aaa]}
        """

    /// What issue 45 found: a forced reload, then kill -9, and navd would not start again (the
    /// snapshot was checked against the new graph before the log that removed the node was read),
    /// nor with --repair. The reload is a record that replaces what came before it.
    @Test func aForcedReloadThenKillNineStartsOnTheReloadedGraph() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = try dir.graph(Self.graphV1)
        let state = dir.file("state.sqlite")
        let after: JSONValue
        do {
            let d = try Daemon(arguments: ["--graph", graph, "--state", state], socketPath: dir.file("a.sock"))
            let c = try d.client()
            try c.call("session.open", ["name": "other"])
            try c.call("navigate", ["to": "Product", "with": ["id": "1"], "key": "k1"])
            try c.call("navigate", ["to": "Old"])
            try c.call("navigate", ["session": "other", "to": "Product", "with": ["id": "2"]])
            // A clean stop first: the snapshot holds Old.
            #expect(d.stop() == 0)
        }
        do {
            let d = try Daemon(arguments: ["--graph", graph, "--state", state], socketPath: dir.file("b.sock"))
            let c = try d.client()
            try Self.graphV2.write(toFile: graph + "/app.yaml", atomically: true, encoding: .utf8)
            #expect(try c.call("graph.reload", ["force": true])["ok"] == true)
            after = try c.call("tree")
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(arguments: ["--graph", graph, "--state", state], socketPath: dir.file("c.sock"))
        let c = try d.client()
        #expect(try c.call("tree") == after)
        #expect(try c.call("tree", ["session": "other"])["version"] == 1)
        // A key from before the reload still answers its first reply.
        #expect(try c.call("navigate", ["to": "Product", "with": ["id": "1"], "key": "k1"])["version"] == 1)
    }

    /// kill -9 between the records of a graph reload (in the middle of the copy that stores them),
    /// so that the log ends cleanly (zeros after a whole record) with fewer sessions' states
    /// than the reload announces. The reload was never acknowledged: navd drops it, says so, and
    /// starts with what came before it (it refused to start, calling the log damaged).
    @Test func aReloadCutBetweenItsRecordsIsDroppedAsNeverAcknowledged() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = try dir.graph(Self.graphV1)
        let state = dir.file("state.sqlite"), log = state + ".log"
        var before: [String: JSONValue] = [:]
        do {
            let d = try Daemon(arguments: ["--graph", graph, "--state", state], socketPath: dir.file("a.sock"))
            let c = try d.client()
            for name in ["a", "b", "c"] {
                try c.call("session.open", ["name": .string(name)])
                try c.call("navigate", ["session": .string(name), "to": "Product", "with": ["id": .string(name)]])
            }
            try c.call("navigate", ["to": "Old"])
            for name in ["main", "a", "b", "c"] { before[name] = try c.call("tree", ["session": .string(name)]) }
            #expect(try c.call("graph.reload", ["force": true])["ok"] == true)
            d.stop(signal: SIGKILL)
        }
        // The log as a crash after the reload's record and one state would leave it.
        var file = try #require(LogFile(path: log))
        let reload = try #require(file.payloads.lastIndex { $0.starts(with: Array(#"{"g":"#.utf8)) })
        let states = file.payloads[(reload + 1)...].prefix { $0.starts(with: Array(#"{"s":"#.utf8)) }.count
        #expect(states == 4 && reload + 1 + states == file.payloads.count, "\(states) states after the reload")
        file.payloads.removeSubrange((reload + 2)...)
        try file.write(to: log)

        let d = try Daemon(arguments: ["--graph", graph, "--state", state], socketPath: dir.file("b.sock"))
        let c = try d.client()
        for (name, tree) in before { #expect(try c.call("tree", ["session": .string(name)]) == tree, "session \(name)") }
        #expect(d.stderr.contains("was cut short (1 of its 4 sessions' states reached the log): it was never acknowledged, and is dropped"), "\(d.stderr)")
    }

    /// kill -9 between a keyed navigation's commit and its key's record (in the middle of the copy
    /// that stores them), so that the log ends after the commit (cleanly, or with the key's record
    /// torn). Its reply never left; replayed without its key, the client's retry would push a
    /// second screen. navd drops the commit, says so, and the retry applies it once.
    @Test(arguments: [false, true])
    func aKeyedCommitCutBeforeItsKeyIsDroppedAndItsRetryAppliesOnce(tornKey: Bool) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), log = state + ".log"
        let before: JSONValue
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("a.sock"))
            let c = try d.client()
            try c.call("navigate", ["to": "shop.Product", "with": ["id": "p0"]])
            before = try c.call("tree")
            try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"], "key": "tap-1"])
            d.stop(signal: SIGKILL)
        }
        // The log as a crash after the commit's record would leave it.
        var b = bytes(log)
        let records = LogFile.records(b)
        let file = try #require(LogFile(b))
        #expect(file.payloads.count >= 2 && file.payloads[file.payloads.count - 2].starts(with: Array(#"{"key":"tap-1","c":"main""#.utf8))
                && file.payloads[file.payloads.count - 1].starts(with: Array(#"{"k":"main","key":"tap-1""#.utf8)),
                "the keyed commit's record, then its key's: \(file.payloads.suffix(2).map { String(decoding: $0, as: UTF8.self) })")
        let key = try #require(records.last)
        let end = tornKey ? key.offset + 16 + key.length : b.count
        for i in (tornKey ? key.offset + 16 + key.length / 2 : key.offset)..<end { b[i] = 0 }
        try Data(b).write(to: URL(fileURLWithPath: log))

        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("b.sock"))
        let c = try d.client()
        #expect(try c.call("tree") == before)
        #expect(d.stderr.contains(#"the navigation of session "main" with key "tap-1" committed at byte"#), "\(d.stderr)")
        #expect(d.stderr.contains("never acknowledged, and is dropped"), "\(d.stderr)")
        let version = try #require(before["version"]?.intValue)
        let retry = try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"], "key": "tap-1"])
        #expect(retry["version"]?.intValue == version + 1)
        #expect(try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"], "key": "tap-1"]) == retry)
        // One commit since the crash (a replayed commit and the retry would be two).
        #expect(try c.call("tree")["version"]?.intValue == version + 1)
    }

    /// A keyed commit without its key's record followed by another session's record is not what a
    /// crash leaves (the key's record comes before anything else is handled): navd keeps every
    /// record, which may have been acknowledged, and warns, rather than drop what follows.
    @Test func aKeyedCommitWithoutItsKeyBeforeAnotherSessionsRecordIsKept() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), log = state + ".log"
        var before: [String: JSONValue] = [:]
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("a.sock"))
            let c = try d.client()
            try c.call("session.open", ["name": "other"])
            try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"], "key": "tap-1"])
            try c.call("navigate", ["session": "other", "to": "shop.Product", "with": ["id": "p2"]])
            for name in ["main", "other"] { before[name] = try c.call("tree", ["session": .string(name)]) }
            d.stop(signal: SIGKILL)
        }
        var file = try #require(LogFile(path: log))
        let key = try #require(file.payloads.lastIndex { $0.starts(with: Array(#"{"k":"main","key":"tap-1""#.utf8)) })
        #expect(key == file.payloads.count - 2 && file.payloads[key - 1].starts(with: Array(#"{"key":"tap-1""#.utf8)))
        file.payloads.remove(at: key)
        try file.write(to: log)

        let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("b.sock"))
        let c = try d.client()
        for (name, tree) in before { #expect(try c.call("tree", ["session": .string(name)]) == tree, "session \(name)") }
        #expect(d.stderr.contains("has no key's record after it, yet records of other sessions or logs follow it: replayed as it is"), "\(d.stderr)")
    }

    /// What issue 45 found: `graph.reload` during a compaction crashed navd (the compaction wrote
    /// sessions listed before the reload with the new graph's numbering). Each session is written
    /// under its own graph, and a kill -9 at any point of the compaction restarts on the new graph.
    /// Through the binary, a reload sent as soon as a stats reply says a compaction is under way
    /// (on a busy machine the compaction may end first: it is tried again, three times at most, and
    /// each try's restart is checked all the same; LogStoreReloadTests in NavServerTests takes every
    /// step of the same without timing).
    @Test(arguments: [0, 200_000])
    func aReloadDuringACompactionRestartsOnTheReloadedGraph(killAfterMicroseconds: Int) throws {
        for attempt in 1...3 where try reloadDuringACompaction(killAfterMicroseconds: killAfterMicroseconds) {
            print("a reload during a compaction, killed after \(killAfterMicroseconds) µs: the compaction was under way at attempt \(attempt)")
            return
        }
        print("a reload during a compaction, killed after \(killAfterMicroseconds) µs: the compaction ended before the reload each time")
    }

    func reloadDuringACompaction(killAfterMicroseconds: Int) throws -> Bool {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = try dir.graph(Self.graphV1)
        let state = dir.file("state.sqlite")
        let args = ["--graph", graph, "--state", state, "--log-compact-bytes", "2097152", "--log-compact-ratio", "0", "--max-sessions-per-uid", "10000"]
        var acked: [String: Int] = [:]
        var sawCompaction = false
        do {
            let d = try Daemon(arguments: args, socketPath: dir.file("a.sock"))
            let c = try d.client()
            // Sessions opened and pushed in batches until a compaction is under way.
            var n = 0
            while n < 9000 {
                let batch: [JSONValue] = (n..<(n + 200)).flatMap { i -> [JSONValue] in
                    let name = JSONValue.string("s\(i)")
                    return [["jsonrpc": "2.0", "id": .int(2 * i), "method": "session.open", "params": ["name": name]],
                            ["jsonrpc": "2.0", "id": .int(2 * i + 1), "method": "navigate",
                             "params": ["session": name, "to": i % 3 == 0 ? "Old" : "Product", "with": i % 3 == 0 ? [:] : ["id": .string(String(repeating: "x", count: 300))]]]]
                }
                // `stats` right behind the batch, and the batch's replies not parsed (each session
                // navigated once: version 1), so that the reload follows while the compaction goes on.
                try c.sendRaw(JSONWriter.string(.array(batch)) + "\n" + #"{"jsonrpc":"2.0","id":"stats","method":"stats"}"# + "\n")
                let replies = String(decoding: try #require(try c.readLine(timeout: 30)), as: UTF8.self)
                #expect(!replies.contains("\"error\""), "\(replies.prefix(500))")
                for i in n..<(n + 200) { acked["s\(i)"] = 1 }
                n += 200
                if try c.readMessage(timeout: 30)?["result"]?["state"]?["compacting"] == true {
                    sawCompaction = true
                    break
                }
            }
            try Self.graphV2.write(toFile: graph + "/app.yaml", atomically: true, encoding: .utf8)
            let reloaded = try c.call("graph.reload", ["force": true])
            #expect(reloaded["ok"] == true, "\(reloaded)")
            if killAfterMicroseconds > 0 { usleep(UInt32(killAfterMicroseconds)) }
            #expect(d.isRunning, "navd survived the reload during the compaction: \(d.stderr.suffix(2000))")
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(arguments: args, socketPath: dir.file("b.sock"))
        let c = try d.client()
        let listed = Set(try c.call("session.list")["sessions"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        #expect(listed.isSuperset(of: acked.keys))
        for name in acked.keys.sorted().filter({ $0.hasSuffix("7") }) {
            let tree = try c.call("tree", ["session": .string(name)])
            let text = JSONWriter.string(tree)
            #expect((tree["version"]?.intValue ?? -1) >= acked[name]!, "\(name): \(text)")
            #expect(!text.contains("app.Old"), "the forced reload removed Old: \(text)")
            if name.dropFirst().allSatisfy(\.isNumber), Int(name.dropFirst())! % 3 != 0 { #expect(text.contains("app.Product"), "\(text)") }
        }
        #expect(d.stop() == 0)
        return sawCompaction
    }

    /// What issue 45 found: refused keyed navigations from another user grew the log, memory and
    /// compaction stalls without bound. A refused navigation leaves no key, no record, no memory.
    @Test func refusedKeyedNavigationsStoreNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try Daemon(arguments: ["--state", dir.file("s.sqlite")], socketPath: dir.file("d.sock"))
        let c = try d.client()
        let before = try #require(try c.call("stats")["state"]?["logBytes"]?.intValue)
        var batch: [JSONValue] = []
        for i in 0..<2000 {
            let key = String(repeating: "k", count: 240) + String(i)
            batch.append(["jsonrpc": "2.0", "id": .int(i), "method": "navigate", "params": ["to": "shop.Reviews", "key": .string(key)]])
            if batch.count == 500 {
                try c.sendRaw(JSONWriter.string(.array(batch)) + "\n")
                let replies = try #require(try c.readMessage(timeout: 30)?.arrayValue)
                #expect(replies.allSatisfy { $0["error"]?["data"]?["kind"] != nil })
                batch = []
            }
        }
        let after = try #require(try c.call("stats")["state"]?["logBytes"]?.intValue)
        #expect(after == before, "2,000 refused keyed navigations wrote \(after - before) bytes of log")
        // The key was not kept: its retry with a navigation that may go on commits.
        let key = String(repeating: "k", count: 240) + "0"
        #expect(try c.call("navigate", ["to": "shop.Product", "with": ["id": "1"], "key": .string(key)])["version"] == 1)
        #expect(try c.call("stats")["state"]?["logBytes"]?.intValue ?? 0 > after)
    }

    /// Keys are bounded per uid across its sessions: past `--max-keys-per-uid` the uid's oldest key
    /// is forgotten (its retry navigates again), the newest still answer their first reply.
    @Test func keysAreBoundedPerUidOldestForgotten() throws {
        let d = try Daemon(arguments: ["--max-keys-per-uid", "50"])
        let c = try d.client()
        try c.call("session.open", ["name": "a"])
        try c.call("session.open", ["name": "b"])
        var first: [String: JSONValue] = [:]
        for i in 0..<30 {
            for s in ["a", "b"] {
                first["\(s)\(i)"] = try c.call("navigate", ["session": .string(s), "to": "shop.Home", "by": "root", "key": .string("\(s)\(i)")])
            }
        }
        // 60 kept, 50 allowed: the 10 oldest (a0, b0, … a4, b4) are forgotten.
        let retryOld = try c.call("navigate", ["session": "a", "to": "shop.Home", "by": "root", "key": "a0"])
        #expect(retryOld["version"]?.intValue == 31, "a0 was forgotten: its retry navigated again: \(retryOld)")
        #expect(try c.call("navigate", ["session": "b", "to": "shop.Home", "by": "root", "key": "b29"]) == first["b29"])
        #expect(try c.call("navigate", ["session": "a", "to": "shop.Home", "by": "root", "key": "a10"]) == first["a10"])
    }

    /// What issue 45 found: state files pre-created by another uid in a shared sticky directory were
    /// served (and their records replayed). They, a directory others may write, a symbolic link and
    /// a file others may write are refused with why; navd makes its own files 0600.
    @Test func stateFilesAnotherUserCouldHavePlantedAreRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        func refusal(_ state: String) throws -> String {
            let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("r.sock"), waitUntilServing: false)
            #expect(d.waitForExit(timeout: 20) == 1)
            return d.stderr
        }
        // A shared sticky directory.
        let shared = dir.file("shared")
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        chmod(shared, 0o1777)
        #expect(try refusal(shared + "/state.db").contains("is writable by other users (mode 01777)"))
        // A log another uid made, in a directory of navd's own.
        let own = dir.file("own")
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        chmod(own, 0o700)
        #expect(FileManager.default.createFile(atPath: own + "/state.db.log", contents: Data("navdlog2".utf8)))
        if getuid() == 0 {
            chown(own + "/state.db.log", 65534, 65534)
            #expect(try refusal(own + "/state.db").contains("state.db.log belongs to uid 65534, not to navd's uid 0"))
            chown(own + "/state.db.log", 0, 0)
        }
        chmod(own + "/state.db.log", 0o666)
        #expect(try refusal(own + "/state.db").contains("state.db.log is writable by other users (mode 0666)"))
        try FileManager.default.removeItem(atPath: own + "/state.db.log")
        // A symbolic link.
        symlink(dir.file("elsewhere"), own + "/state.db.log")
        #expect(try refusal(own + "/state.db").contains("state.db.log is a symbolic link"))
        try FileManager.default.removeItem(atPath: own + "/state.db.log")
        // The directory given in place of the file: the file's path to give instead.
        #expect(try refusal(own).contains("\(own) is a directory: --state takes the path of navd's state file, which navd creates, such as --state \(own)/navd.sqlite"))
        #expect(try refusal(own + "/").contains("such as --state \(own)/navd.sqlite"))
        // navd's own files: 0600.
        let d = try Daemon(arguments: ["--state", own + "/state.db"], socketPath: dir.file("ok.sock"))
        try d.client().call("navigate", ["to": "shop.Product", "with": ["id": "1"]])
        for f in ["state.db", "state.db.log"] {
            let attrs = try FileManager.default.attributesOfItem(atPath: own + "/" + f)
            #expect((attrs[.posixPermissions] as? Int) == 0o600, "\(f)")
        }
        #expect(d.stop() == 0)
    }
}

/// Crashes and damage at random: commits, facts, opens and closes, graph reloads and compactions
/// (a small threshold) under four clients, kill -9 at a random point, then (most rounds) one random
/// corruption of a log: a flipped bit, a cut, a zeroed range, two records swapped. After each
/// restart either every acknowledged version is served, or navd refuses naming the byte (then
/// `--repair` starts it), or the damage has the shape of a write a crash cut short (zeros to the
/// end of what was written) and navd says it cut that record, naming the byte. Never a silent loss.
@Suite struct CrashAndCorruptionPropertyTests {
    /// Two graphs with the same coordinators in other orders (indices change at each reload).
    static let graphs = [
        "root: {stack: Home}\ncoordinators:\n  Home: {opens: [Product, Other]}\n  Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}}\n  Other: {}\n",
        "root: {stack: Home}\ncoordinators:\n  Other: {}\n  Extra: {}\n  Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}}\n  Home: {opens: [Product, Other, Extra]}\n",
    ]

    enum Corruption: CaseIterable { case none, bitFlip, cut, zeroedRange, swappedRecords }

    @Test(arguments: ["process", "full"])
    func randomCrashesAndOneCorruptionNeverLoseSilently(durability: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        var variant = 0
        let graph = try dir.graph(Self.graphs[0])
        let state = dir.file("state.sqlite")
        let args = ["--graph", graph, "--state", state, "--durability", durability, "--log-compact-bytes", "8192", "--log-compact-ratio", "0"]
        // NAVD_PROPERTY_SEED and NAVD_PROPERTY_ROUNDS replay another draw, or more of them.
        let env = ProcessInfo.processInfo.environment
        let seed = env["NAVD_PROPERTY_SEED"].flatMap(UInt64.init) ?? 45
        var rng = SplitMix64(seed: seed)
        var acked: [String: Int] = [:]
        var closed: Set<String> = []
        var outcomes: [String: Int] = [:]
        var seq = 0
        let rounds = env["NAVD_PROPERTY_ROUNDS"].flatMap(Int.init) ?? (durability == "full" ? 12 : 30)
        for round in 0..<rounds {
            let d = try Daemon(arguments: args, socketPath: dir.file("d\(round).sock"))
            let clients = try (0..<4).map { _ in try d.client() }
            for (i, c) in clients.enumerated() { _ = try? c.call("session.open", ["name": .string("w\(i)")]) }
            d.killNine(afterMicroseconds: 20_000 + Int(rng.next() % 200_000))
            var running = true
            while running {
                seq += 1
                for (i, c) in clients.enumerated() {
                    let name = "w\(i)"
                    let params: JSONValue = seq % 3 == 0
                        ? ["session": .string(name), "to": "Home", "by": "root", "key": .string("k\(seq)-\(i)")]
                        : ["session": .string(name), "to": "Product", "with": ["id": .string("p\(seq)")], "key": .string("k\(seq)-\(i)")]
                    guard let r = try? c.call("navigate", params), let v = r["version"]?.intValue else { running = false; break }
                    acked[name] = max(acked[name] ?? 0, v)
                    if seq % 5 == 0, (try? c.call("context.set", ["session": .string(name), "facts": ["n": .int(seq)]])) == nil { running = false; break }
                }
                if running, seq % 7 == 0 {
                    let temp = "t\(seq)"
                    if (try? clients[0].call("session.open", ["name": .string(temp)])) != nil,
                       (try? clients[0].call("session.close", ["name": .string(temp)])) != nil { closed.insert(temp) }
                }
                if running, seq % 11 == 0 {
                    variant = 1 - variant
                    try Self.graphs[variant].write(toFile: graph + "/app.yaml", atomically: true, encoding: .utf8)
                    _ = try? clients[1].call("graph.reload")
                }
            }
            _ = d.waitForExit()
            // One corruption of a log (the one a compaction left, when there is one, half the time).
            let old = state + ".log.old"
            let target = FileManager.default.fileExists(atPath: old) && rng.next() % 2 == 0 ? old : state + ".log"
            var b = [UInt8](FileManager.default.contents(atPath: target) ?? Data())
            let recs = LogFile.records(b)
            let written = recs.last.map { $0.offset + 16 + $0.length } ?? 32
            var corruption = Corruption.allCases[Int(rng.next() % UInt64(Corruption.allCases.count))]
            if recs.count < 2 && corruption != .none { corruption = .none }
            var tornShape = false
            switch corruption {
            case .none: break
            case .bitFlip:
                let at = 32 + Int(rng.next() % UInt64(written - 32))
                b[at] ^= UInt8(1 << (rng.next() % 8))
            case .cut:
                b.removeSubrange((32 + Int(rng.next() % UInt64(written - 32)))...)
            case .zeroedRange:
                let at = 32 + Int(rng.next() % UInt64(written - 32)), end = min(written, at + 1 + Int(rng.next() % 64))
                for i in at..<end { b[i] = 0 }
                tornShape = end == written  // zeros to the end of what was written: what a cut write leaves
            case .swappedRecords:
                let i = Int(rng.next() % UInt64(recs.count - 1))
                let a = recs[i], c = recs[i + 1]
                let first = Array(b[a.offset..<(a.offset + 16 + a.length)]), second = Array(b[c.offset..<(c.offset + 16 + c.length)])
                b.replaceSubrange(a.offset..<(c.offset + 16 + c.length), with: second + first)
            }
            if corruption != .none { try Data(b).write(to: URL(fileURLWithPath: target)) }
            let check = try Daemon(arguments: args, socketPath: dir.file("c\(round).sock"), waitUntilServing: false)
            var served = check
            if (try? check.waitForLog("navd listening", timeout: 30)) == nil {
                #expect(check.waitForExit() == 1, "round \(round): \(corruption)")
                #expect(check.stderr.contains("is damaged at byte"), "round \(round), \(corruption): the refusal names the byte: \(check.stderr)")
                outcomes["refused, naming the byte (\(corruption))", default: 0] += 1
                served = try Daemon(arguments: args + ["--repair"], socketPath: dir.file("p\(round).sock"))
                #expect(served.stderr.contains("--repair:"), "\(served.stderr)")
            }
            let c = try served.client()
            var lost: [String] = []
            for (name, v) in acked.sorted(by: { $0.key < $1.key }) {
                // --repair may drop a session whose opening came after the damage (it says so).
                let got = (try? c.call("tree", ["session": .string(name)]))?["version"]?.intValue ?? -1
                if got < v { lost.append("\(name) v\(v) → v\(got)") }
                acked[name] = got >= 0 ? got : nil
            }
            if served === check {
                if lost.isEmpty {
                    outcomes["every acknowledged version served (\(corruption))", default: 0] += 1
                } else {
                    #expect(tornShape && check.stderr.contains("was cut short by a crash"),
                            "round \(round), \(corruption): acknowledged versions lost without a word: \(lost)\n\(check.stderr)")
                    outcomes["cut as a torn write, naming the byte (\(corruption))", default: 0] += 1
                }
            }
            let open = Set(try c.call("session.list")["sessions"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            if served === check {
                #expect(open.isDisjoint(with: closed), "round \(round): closed sessions came back: \(open.intersection(closed))")
            } else {
                closed.subtract(open)  // --repair dropped their closes (and said so)
            }
            #expect(served.stop() == 0)
        }
        print("crash and corruption (\(durability)), seed \(seed), \(rounds) rounds: " + outcomes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; "))
    }
}
