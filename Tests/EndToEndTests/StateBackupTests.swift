import Foundation
import JSON
import NavTesting
import Testing

/// `state.backup`: a copy of the state files as they are at the request, which navd restores.
@Suite struct StateBackupTests {
    /// One request line.
    func line(_ id: Int, _ method: String, _ params: JSONValue? = nil) -> String {
        var o: JSONObject = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method)]
        if let params { o["params"] = params }
        return String(decoding: JSONWriter.encode(.object(o)), as: UTF8.self) + "\n"
    }

    /// The backup holds what was committed before its request (in the same read too), not what
    /// came after it; navd started on it serves those sessions, facts and keyed replies, and the
    /// live state files go on undisturbed.
    @Test func aBackupRestoresTheStateAtItsRequest() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        var backup: JSONValue = .null
        let keyed: JSONValue, kioskTree: JSONValue, kioskFacts: JSONValue, mainFacts: JSONValue
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
            let c = try d.client()
            try DurableStateTests().build(c)  // main at version 2, a session kiosk with facts
            keyed = try c.call("navigate", ["session": "kiosk", "to": "account.Settings", "key": "tap-1"])
            kioskTree = try c.call("tree", ["session": "kiosk"])
            kioskFacts = try c.call("context.get", ["session": "kiosk"])
            mainFacts = try c.call("context.get")
            // A commit, the backup and another commit, in one read.
            try c.sendRaw(line(900, "navigate", ["to": "shop.Home", "by": "root"]) + line(901, "state.backup")
                + line(902, "navigate", ["to": "shop.Category", "with": ["slug": "shoes"]]))
            #expect(try c.reply(to: 900)["result"]?["version"] == 3)
            backup = try c.reply(to: 901)["result"] ?? .null
            #expect(try c.reply(to: 902)["result"]?["version"] == 4)
            try c.call("dismiss")
            d.stop(signal: SIGKILL)
        }
        let path = try #require(backup["state"]?.stringValue, "\(backup)")
        #expect(path.hasPrefix(state + ".backup-"))
        let files = backup["files"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(files.first == path && files.contains(path + ".log"), "\(backup)")
        for f in files {
            var st = stat()
            #expect(stat(f, &st) == 0 && st.st_mode & 0o777 == 0o600, "\(f)")
        }
        let restored = try Daemon(arguments: ["--state", path], socketPath: dir.file("b.sock"))
        let r = try restored.client()
        let tree = try r.call("tree")
        #expect(tree["version"] == 3 && tree["visible"]?.arrayValue?.count == 2, "the commit before the backup's request is in it, the one after is not: \(tree)")
        #expect(try r.call("context.get") == mainFacts)
        #expect(try r.call("tree", ["session": "kiosk"]) == kioskTree)
        #expect(try r.call("context.get", ["session": "kiosk"]) == kioskFacts)
        #expect(try r.call("navigate", ["session": "kiosk", "to": "account.Settings", "key": "tap-1"]) == keyed, "a keyed retry is answered from the backup")
        _ = restored.stop()

        let live = try Daemon(arguments: ["--state", state], socketPath: dir.file("d.sock"))
        #expect(try live.client().call("tree")["version"] == 5, "the live state files went on")
    }

    /// Backups taken while the log is compacted over and over (a 4 KiB threshold; 1,000 sessions
    /// changed, so that a compaction takes several slices): one asked in the same write as a round
    /// of changes comes while the compaction they started is under way, whatever the client's
    /// pace, and holds its old log too; one asked once `stats` says no compaction is under way
    /// holds none; each restores exactly the commits made before it.
    @Test func backupsTakenWhileTheLogIsCompactedRestore() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        let sessions = 1_000
        var taken: [(path: String, version: Int, old: Bool)] = []
        do {
            let d = try Daemon(arguments: ["--state", state, "--log-compact-bytes", "4096", "--log-compact-ratio", "0"], socketPath: dir.file("d.sock"))
            let c = try d.client()
            var id = 100_000  // apart from the ids the client's own calls take
            var text = ""
            for i in 0..<sessions {
                text += line(id, "session.open", ["name": .string("s\(i)")])
                id += 1
            }
            try c.sendRaw(text)
            _ = try c.reply(to: .int(id - 1))
            var version = 0
            func backup(_ b: JSONValue) throws -> Bool {
                let files = b["files"]?.arrayValue?.compactMap(\.stringValue) ?? []
                let old = files.contains { $0.hasSuffix(".log.old") }
                taken.append((try #require(b["state"]?.stringValue, "\(b)"), version, old))
                return old
            }
            // Waiting for a round's answers before asking let the compaction end first where the
            // client was slow to read them (AddressSanitizer builds, a busy machine): twelve rounds
            // and no backup during one.
            var duringCompaction = 0
            for round in 0..<12 where duringCompaction < 2 {
                text = ""
                for i in 0..<sessions {
                    let params: JSONValue = round % 2 == 0 ? ["session": .string("s\(i)"), "to": "shop.Product", "with": ["id": .string("p\(round)")]]
                        : ["session": .string("s\(i)")]
                    text += line(id, round % 2 == 0 ? "navigate" : "dismiss", params)
                    id += 1
                }
                version += 1
                try c.sendRaw(text + line(id, "state.backup"))
                if try backup(c.reply(to: .int(id))["result"] ?? .null) { duringCompaction += 1 }
                id += 1
            }
            #expect(duringCompaction > 0, "no backup asked with a round of changes was taken during a compaction")
            // The end of the last compaction, and none due: the records made during one compaction are
            // the new log's, past the threshold, and start the next as soon as it ends.
            try waitUntil(timeout: 30, "the compactions' end") {
                let s = try c.call("stats")["state"]
                return s?["compacting"] == false && (s?["logBytes"]?.intValue ?? .max) < (s?["compactAt"]?.intValue ?? 0)
            }
            #expect(try backup(c.call("state.backup")) == false, "a backup with no compaction under way holds no old log: \(taken.last!)")
            d.stop(signal: SIGKILL)
        }
        for (i, b) in taken.enumerated() {
            let restored = try Daemon(arguments: ["--state", b.path], socketPath: dir.file("r\(i).sock"))
            let r = try restored.client()
            #expect(try r.call("tree", ["session": "s0"])["version"]?.intValue == b.version, "backup \(i) (with a compaction's old log: \(b.old))")
            #expect(try r.call("tree", ["session": .string("s\(sessions - 1)")])["version"]?.intValue == b.version)
            _ = restored.stop()
        }
    }

    /// Where no backup can be made, the error says why and what to do; one backup at a time; a
    /// client without the role admin is refused.
    @Test func aBackupIsRefusedWithTheReason() throws {
        let ephemeral = try Daemon()
        let e = try ephemeral.client().callError("state.backup")
        #expect(e["code"] == -32013 && e["data"]?["reason"] == "noStateFile", "\(e)")
        #expect(e["message"]?.stringValue?.contains("--ephemeral") == true, "\(e)")

        let dir = TempDir()
        defer { dir.remove() }
        let d = try Daemon(arguments: ["--state", dir.file("state.sqlite"), "--log-compact-bytes", "4096", "--log-compact-ratio", "0"],
                           socketPath: dir.file("d.sock"))
        let c = try d.client()
        try c.sendRaw(line(1, "state.backup") + line(2, "state.backup"))
        let first = try c.reply(to: 1), second = try c.reply(to: 2)
        #expect(first["result"]?["state"] != nil, "\(first)")
        #expect(second["error"]?["data"]?["kind"] == "limitExceeded" && second["error"]?["data"]?["limit"] == "backupsAtOnce", "\(second)")
        #expect(try c.call("state.backup")["state"] != first["result"]?["state"], "the next one, after the first's reply, is another")

        let user = try d.client()
        try user.call("hello", ["keepRoles": []])
        #expect(try user.callError("state.backup")["data"]?["kind"] == "accessDenied")

        // Another process reading the snapshot (an sqlite3 shell in a transaction) keeps its
        // write-ahead log from being copied in: refused, saying so, until the reader is gone.
        // A compaction writes the snapshot (into SQLite's write-ahead log): past 4 KiB of log.
        var text = ""
        for i in 0..<200 { text += line(200_000 + i, i % 2 == 0 ? "navigate" : "dismiss", i % 2 == 0 ? ["to": "shop.Product", "with": ["id": "p1"]] : nil) }
        try c.sendRaw(text)
        _ = try c.reply(to: 200_199)
        var compactions = 0
        for _ in 0..<1_000 where compactions == 0 { compactions = try c.call("stats")["state"]?["compactions"]?.intValue ?? 0 }
        #expect(compactions > 0)
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        reader.arguments = ["-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN'); "
            + "c.execute('SELECT count(*) FROM sessions').fetchall(); print('reading', flush=True); sys.stdin.read()", dir.file("state.sqlite")]
        let input = Pipe(), output = Pipe()
        reader.standardInput = input
        reader.standardOutput = output
        try reader.run()
        #expect(String(decoding: output.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("reading"))
        let busy = try c.callError("state.backup")
        #expect(busy["code"] == -32013 && busy["data"]?["reason"] == "stateFileBusy", "\(busy)")
        #expect(busy["message"]?.stringValue?.contains("another process is reading the state file") == true, "\(busy)")
        try input.fileHandleForWriting.close()
        reader.waitUntilExit()
        #expect(try c.call("state.backup")["state"] != nil, "and made once the reader is gone")
    }
}
