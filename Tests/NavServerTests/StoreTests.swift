import CChecksum
import Foundation
import JSON
import NavGraph
import NavTesting
import NavigationCore
import Testing
import Unchecked
@testable import NavServer

/// The stores behind the `Store` seam, on their own: what is told and flushed is loaded back.
@Suite struct StoreTests {
    let graph = GraphLoader.loadEmbeddedExample().graph!

    func session(_ name: String) throws -> Session {
        let s = Session(name: name, graph: graph)
        _ = try s.commit(s.plan(NavigateRequest(to: "shop.Product", with: ["id": "p1"]), caller: Caller()))
        try s.setFacts(["loggedIn": true])
        return s
    }

    /// A stored keyed reply is read back as its stores write it: a result keeps its bytes; a
    /// result with a line break in it (it is sent again inside one line), or stored any other way
    /// (spaces, another member), is read through the tree; an error comes back whole.
    @Test func aKeyedReplyIsReadBackAsItWasSentAndNeverBreaksALine() throws {
        let parser = JSONParser()
        func result(_ text: String) -> String? {
            guard case .success(let t)? = KeyedReply.decode(text: text, parser: parser) else { return nil }
            return String(decoding: t.bytes, as: UTF8.self)
        }
        let written = KeyedReply.text(.success(JSONText(Array(#"{"navigation":"nav-7","version":3,"visible":["n1"]}"#.utf8))))
        #expect(result(written) == #"{"navigation":"nav-7","version":3,"visible":["n1"]}"#)
        #expect(result(#"{"result":{"text":"\u00e9 a"}}"#) == #"{"text":"\u00e9 a"}"#)
        #expect(result("{\"result\":{\"version\":\n3}}") == #"{"version":3}"#)
        #expect(result("{\"result\":{\"version\":3}\r\n}") == #"{"version":3}"#)
        #expect(result(#" {"result":{"version":3}}"#) == #"{"version":3}"#)
        #expect(result(#"{"result" : [1, 2]}"#) == "[1,2]")
        #expect(KeyedReply.decode(text: #"{"result":1,"extra":2}"#, parser: parser) != nil)
        #expect(KeyedReply.decode(text: #"{"nothing":1}"#, parser: parser) == nil)
        #expect(KeyedReply.decode(text: #"{"result":"#, parser: parser) == nil)
        #expect(KeyedReply.decode(text: "[]", parser: parser) == nil)
        let error = KeyedReply.text(.failure(NavError(.conflict, "version 3 is not 2", data: ["navigation": "nav-8"])))
        guard case .failure(let e)? = KeyedReply.decode(text: error, parser: parser) else {
            Issue.record("\(error) not read back as an error")
            return
        }
        #expect(e.kind == .conflict && e.message == "version 3 is not 2" && e.data["navigation"] == "nav-8")
    }

    @Test func whatIsFlushedIsLoadedBack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("state.sqlite")
        let store = try SQLiteStore(path: path, durability: .process)
        let a = try session("a"), b = try session("b")
        a.owner = 1000
        store.sessionOpened(a)
        store.sessionChanged(b)
        store.keyRemembered(a, key: "k1", reply: .success(JSONText(Array("{\"navigation\":\"nav-1\"}".utf8))))
        #expect(store.hasPendingWrites)
        try store.flush(graph: graph)
        #expect(!store.hasPendingWrites)
        store.sessionClosed("b")
        try store.flush(graph: graph)
        store.close()

        let again = try SQLiteStore(path: path, durability: .process)
        defer { again.close() }
        let loaded = try again.load(graph: graph)
        #expect(loaded.map(\.name) == ["a"])
        let r = try #require(loaded.first)
        #expect(r.version == a.version && r.owner == 1000 && r.facts["loggedIn"] == true)
        #expect(JSONWriter.string(.object(r.snapshot())) == JSONWriter.string(.object(a.snapshot())))
        if case .success(let text)? = r.keyed["k1"] {
            #expect(String(decoding: text.bytes, as: UTF8.self) == "{\"navigation\":\"nav-1\"}")
        } else {
            Issue.record("key k1 was not kept: \(r.keyed)")
        }
    }

    @Test func aBusySessionKeepsOnlyItsNewestKeysAndLeavesOthersAlone() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try SQLiteStore(path: dir.file("s.sqlite"), durability: .process)
        let quiet = try session("quiet"), busy = try session("busy")
        store.sessionOpened(quiet)
        store.sessionOpened(busy)
        for i in 0..<3 { store.keyRemembered(quiet, key: "q\(i)", reply: .success(JSONText(Array("{}".utf8)))) }
        try store.flush(graph: graph)
        for i in 0..<(Session.maxKeys + 50) { store.keyRemembered(busy, key: "b\(i)", reply: .success(JSONText(Array("{}".utf8)))) }
        try store.flush(graph: graph)
        store.close()
        let again = try SQLiteStore(path: dir.file("s.sqlite"), durability: .process)
        defer { again.close() }
        let loaded = Dictionary(uniqueKeysWithValues: try again.load(graph: graph).map { ($0.name, $0) })
        #expect(loaded["quiet"]?.keyed.count == 3)
        #expect(loaded["busy"]?.keyed.count == Session.maxKeys)
        #expect(loaded["busy"]?.keyed["b0"] == nil && loaded["busy"]?.keyed["b\(Session.maxKeys + 49)"] != nil)
    }

    @Test func filesThatAreNotNavdsAreRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        #expect(FileManager.default.createFile(atPath: dir.file("empty"), contents: Data()))
        #expect(throws: StateError.self) { _ = try SQLiteStore(path: dir.file("empty"), durability: .process) }
        try "not sqlite at all".write(toFile: dir.file("text"), atomically: true, encoding: .utf8)
        #expect(throws: StateError.self) { _ = try SQLiteStore(path: dir.file("text"), durability: .process) }
    }

    @Test func theEphemeralStoreKeepsNothing() throws {
        let store = EphemeralStore()
        store.sessionChanged(try session("a"))
        #expect(!store.hasPendingWrites)
        try store.flush(graph: graph)
        #expect(try store.load(graph: graph).isEmpty)
    }
}

/// The log's checksum is CRC-32C: the standard check value, and one bit changed changes it.
@Suite struct LogChecksumTests {
    @Test func crc32cOfTheCheckString() {
        let check = Array("123456789".utf8)
        #expect(check.withByteView { CRC32C.checksum($0) } == 0xE306_9283)
        let long = [UInt8](repeating: 0x5A, count: 1000)
        var flipped = long
        flipped[500] ^= 1
        #expect(long.withByteView { CRC32C.checksum($0) } != flipped.withByteView { CRC32C.checksum($0) })
        #expect([UInt8]().withByteView { CRC32C.checksum($0) } == 0)
        // The table, as machines without the crc32 instruction compute it, agrees at every length
        // (every remainder of the eight-byte steps, several times over).
        for n in 0..<200 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(bytes.withByteView { CRC32C.checksum($0) } == bytes.withUnsafeBytes { navd_crc32c_portable($0.baseAddress, $0.count) })
        }
    }

    /// A record header's checksum, taken from its fields, is the checksum of the 20 bytes they make
    /// little endian, with the instruction and with the table.
    @Test func aRecordHeadersChecksumIsThatOfItsBytes() {
        var rng = SystemRandomNumberGenerator()
        let fixed: [(UInt64, UInt32, UInt32, UInt32)] = [(0, 0, 0, 0), (.max, .max, .max, .max), (0x0102_0304_0506_0708, 131, 1, 0xDEAD_BEEF)]
        let random = (0..<200).map { _ in (rng.next() as UInt64, UInt32.random(in: 0...(.max)), UInt32.random(in: 0...(.max)), UInt32.random(in: 0...(.max))) }
        for (salt, length, seq, crc) in fixed + random {
            var bytes: [UInt8] = []
            for (v, n) in [(salt, 8), (UInt64(length), 4), (UInt64(seq), 4), (UInt64(crc), 4)] {
                for i in 0..<n { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
            }
            let expected = bytes.withByteView { CRC32C.checksum($0) }
            #expect(navd_crc32c_record_header(salt, length, seq, crc) == expected)
            #expect(navd_crc32c_record_header_portable(salt, length, seq, crc) == expected)
        }
    }

    /// Records sealed together (one loop iteration's) read back one by one with their sequences,
    /// payloads of every length; one whose length claims more than follows stops the sealing there.
    @Test func sealedRecordsReadBack() {
        let salt: UInt64 = 0x0123_4567_89AB_CDEF
        var w = JSONWriter()
        let payloads = (0..<40).map { n in "{\"p\":\"" + String(repeating: "x", count: n * 3) + "\"}" }
        for (i, p) in payloads.enumerated() { LogRecord.append(to: &w, seq: UInt32(i + 1)) { $0.buffer.append(p) } }
        LogRecord.seal(&w, salt: salt)
        w.buffer.withByteView { bytes in
            var at = 0
            for (i, p) in payloads.enumerated() {
                guard case .record(let r) = LogRecord.read(bytes, at: at, seq: UInt32(i + 1), salt: salt) else {
                    Issue.record("record \(i + 1) does not read back"); return
                }
                #expect(String(decoding: bytes.raw[r], as: UTF8.self) == p)
                at = r.upperBound
            }
            #expect(at == bytes.count)
            if case .record = LogRecord.read(bytes, at: 0, seq: 1, salt: salt &+ 1) { Issue.record("another salt reads the record") }
        }
        var cut = [UInt8](repeating: 0, count: 40)
        cut[0] = 25  // a payload of 25 bytes, where 24 follow
        let sealed = cut.withUnsafeMutableBytes { navd_seal_records($0.baseAddress, $0.count, salt) }
        #expect(sealed == 0 && cut[8...].allSatisfy { $0 == 0 })
    }

    /// The in-order copy a log's records reach its mapped segment with copies exactly what
    /// `memcpy` does, at every length and alignment of both sides, and nothing around it.
    @Test func theInOrderCopyCopiesExactly() {
        let source = (0..<400).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        for n in [0, 1, 7, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 100, 255, 256, 300] {
            for from in [0, 1, 8, 15] {
                for to in [0, 1, 3, 8, 16, 23] {
                    var copied = [UInt8](repeating: 0xEE, count: 400)
                    source.withUnsafeBytes { s in
                        copied.withUnsafeMutableBytes { d in navd_copy_in_order(d.baseAddress! + to, s.baseAddress! + from, n) }
                    }
                    #expect(Array(copied[to..<(to + n)]) == Array(source[from..<(from + n)]), "n \(n), from \(from), to \(to)")
                    #expect(copied[..<to].allSatisfy { $0 == 0xEE } && copied[(to + n)...].allSatisfy { $0 == 0xEE }, "n \(n), to \(to)")
                }
            }
        }
    }
}

/// The log store across a graph reload, step by step (no timing: each loop iteration's flush and
/// compaction slice called in turn, as the server calls them).
@Suite struct LogStoreReloadTests {
    static func graph(_ text: String, _ dir: TempDir, _ name: String) throws -> NavigationGraph {
        let d = dir.file(name)
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        try text.write(toFile: d + "/app.yaml", atomically: true, encoding: .utf8)
        return try #require(GraphLoader.load(directory: d).graph)
    }

    static let a = "root: {stack: Home}\ncoordinators:\n  Home: {opens: [Product]}\n  Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}}\n"
    /// The same screens in another order: their indices change.
    static let b = "root: {stack: Home}\ncoordinators:\n  Aaa: {}\n  Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}}\n  Home: {opens: [Product, Aaa]}\n"

    /// The pages closed sessions leave free go back to the file system after the compaction that
    /// removed them, 64 per loop iteration (1,024 at once held the loop 17 ms), until none is left.
    @Test func freePagesGoBackAFewAtATimeAfterACompaction() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = try Self.graph(Self.a, dir, "a")
        let store = try LogStore(path: dir.file("state.sqlite"), durability: .process, saved: SavedSessions(ServerConfiguration(socketPath: "")),
                                 repair: false, compactAt: 4096, compactRatio: 0)
        defer { store.close() }
        _ = try store.load(graph: graph)
        func drain() throws {
            var n = 0
            while store.hasBackgroundWork && n < 10_000 {
                try store.backgroundSlice(graph: graph)
                n += 1
            }
        }
        for i in 0..<200 {
            let s = Session(name: "s\(i)", graph: graph)
            store.sessionOpened(s)
            _ = try s.commit(s.plan(NavigateRequest(to: "app.Product", with: ["id": .string(String(repeating: "p", count: 8000))]), caller: Caller()))
            store.sessionChanged(s)
        }
        try store.flush(graph: graph)
        try drain()
        for i in 0..<200 { store.sessionClosed("s\(i)") }
        let other = Session(name: "other", graph: graph)
        for _ in 0..<100 where !store.hasBackgroundWork {
            store.sessionChanged(other)
            try store.flush(graph: graph)
        }
        #expect(store.hasBackgroundWork, "a compaction started")
        let page = 4096
        var sizes = [store.snapshot.fileBytes()]
        var n = 0
        while store.hasBackgroundWork && n < 10_000 {
            try store.backgroundSlice(graph: graph)
            sizes.append(store.snapshot.fileBytes())
            n += 1
        }
        let steps = zip(sizes, sizes.dropFirst()).map { ($0 - $1) / page }
        #expect(steps.max() ?? 0 <= LogStore.pagesPerRelease, "at most \(LogStore.pagesPerRelease) pages a step: \(steps)")
        #expect(steps.filter { $0 > 0 }.count >= 2, "in several steps: \(steps)")
        #expect(store.snapshot.fileBytes() == store.snapshot.liveBytes(), "no free page left")
        #expect(sizes.first! - sizes.last! >= 200 * 8000 / 2, "the closed sessions' pages went back: \(sizes.first!) -> \(sizes.last!)")
    }

    /// A loop iteration's records wait for `flush`, but not without bound: past
    /// ``LogStore/recordsHeld`` (a graph reload rewriting many sessions) they are sealed and stored
    /// as they are made (copied into the mapped segment with `process` durability, written with
    /// `full`), and a crash before the flush loses only the rest.
    /// A commit's record, written in one reservation for the usual session (a short plain name, no
    /// key) and piece by piece otherwise (a long name, a name to escape as a restored session may
    /// hold, a keyed navigation), is read back into the same tree and version.
    @Test func commitRecordsOfEveryShapeAreReadBack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = try Self.graph(Self.a.replacingOccurrences(of: "Product: {setup", with: "Product: {opens: [Product], setup"), dir, "a")
        let path = dir.file("state.sqlite")
        let saved = SavedSessions(ServerConfiguration(socketPath: ""))
        let names = ["a", "user-42.web", String(repeating: "long-name.", count: 4), "we\"ird\\name\u{1}"]
        var expected: [String: (Int, String)] = [:]
        do {
            let store = try LogStore(path: path, durability: .process, saved: saved, repair: false)
            _ = try store.load(graph: graph)
            for (i, name) in names.enumerated() {
                let s = Session(name: name, graph: graph)
                #expect(s.nameIsPlain == (i < 3), "\(name)")
                s.recordsChanges = false
                s.recordsCompactChanges = true
                store.sessionOpened(s)
                for (j, id) in ["p1", "p\"2", "p3"].enumerated() {
                    let c = try s.commit(s.plan(NavigateRequest(to: "app.Product", with: ["id": .string(id)]), caller: Caller()))
                    #expect(c.compactText != nil)
                    store.sessionCommitted(s, changes: c.changeText, compact: c.compactText, key: j == 1 ? "key-\(i)" : nil)
                }
                expected[name] = (s.version, JSONWriter.string(.object(s.snapshot())))
            }
            try store.flush(graph: graph)
            // A crash: no close, which would write every session whole; the log's records are read.
        }
        let again = try LogStore(path: path, durability: .process, saved: saved, repair: false)
        defer { again.close() }
        let loaded = try again.load(graph: graph)
        #expect(Set(loaded.map(\.name)) == Set(names))
        for r in loaded {
            let (version, snapshot) = try #require(expected[r.name])
            #expect(r.version == version && JSONWriter.string(.object(r.snapshot())) == snapshot, "\(r.name)")
        }
    }

    @Test(arguments: [Durability.process, .full])
    func recordsPastTheHeldBoundReachTheLogBeforeTheFlush(durability: Durability) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = try Self.graph(Self.a, dir, "a")
        let path = dir.file("state.sqlite")
        let saved = SavedSessions(ServerConfiguration(socketPath: ""))
        let sessions = 200, setup = 8000
        do {
            let store = try LogStore(path: path, durability: durability, saved: saved, repair: false)
            _ = try store.load(graph: graph)
            let start = store.logSize
            for i in 0..<sessions {
                let s = Session(name: "s\(i)", graph: graph)
                _ = try s.commit(s.plan(NavigateRequest(to: "app.Product", with: ["id": .string(String(repeating: "p", count: setup))]), caller: Caller()))
                store.sessionChanged(s)
            }
            #expect(store.logSize - start >= LogStore.recordsHeld, "stored before any flush: \(store.logSize - start) bytes")
            #expect(store.hasPendingWrites, "the records after the last copy wait for the flush")
            // A crash: no flush, no close.
        }
        let again = try LogStore(path: path, durability: durability, saved: saved, repair: false)
        defer { again.close() }
        let loaded = try again.load(graph: graph)
        #expect(loaded.count >= LogStore.recordsHeld / (setup + 200) && loaded.count < sessions, "\(loaded.count) sessions read back")
        for s in loaded {
            #expect(s.root.json(graph).description.contains(String(repeating: "p", count: setup)), "\(s.name)")
        }
    }

    /// Records past the bound that cannot be written (`full`: no mapping) are not passed over: the
    /// next flush throws the write's error, even when the file could be written again by then
    /// (as any failed write of the log, it stops navd before anything of the iteration is
    /// acknowledged).
    @Test func aFailedWriteOfHeldRecordsIsThrownByTheNextFlush() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = try Self.graph(Self.a, dir, "a")
        let store = try LogStore(path: dir.file("state.sqlite"), durability: .full, saved: SavedSessions(ServerConfiguration(socketPath: "")),
                                 repair: false)
        _ = try store.load(graph: graph)
        // The log's descriptor swapped for one that cannot be written (not closed: another test's
        // file could take its number).
        let logFd = store.fd
        let unwritable = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { Glibc.close(unwritable) }
        store.fd = unwritable
        for i in 0..<200 {
            let s = Session(name: "s\(i)", graph: graph)
            _ = try s.commit(s.plan(NavigateRequest(to: "app.Product", with: ["id": .string(String(repeating: "p", count: 8000))]), caller: Caller()))
            store.sessionChanged(s)
        }
        #expect(store.hasPendingWrites)
        store.fd = logFd
        var thrown: StateError?
        do { try store.flush(graph: graph) } catch { thrown = error }
        #expect(thrown?.description.contains("cannot append") == true, "\(String(describing: thrown))")
    }

    /// A compaction under way when the graph is reloaded finishes under the graph each session was
    /// built with (it crashed, or named a Product `app.Aaa`, when it wrote them with the new one);
    /// a crash at any slice of it, and after it, restarts on the new graph with every session.
    @Test(arguments: [0, 1, 2, 100])
    func aCompactionUnderWayWhenTheGraphIsReloaded(crashAfterSlices: Int) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let ga = try Self.graph(Self.a, dir, "a"), gb = try Self.graph(Self.b, dir, "b")
        let path = dir.file("state.sqlite")
        let saved = SavedSessions(ServerConfiguration(socketPath: ""))
        do {
            let store = try LogStore(path: path, durability: .process, saved: saved, repair: false, compactAt: 4096, compactRatio: 0)
            _ = try store.load(graph: ga)
            var sessions: [Session] = []
            for i in 0..<300 {
                let s = Session(name: "s\(i)", graph: ga)
                store.sessionOpened(s)
                let before = s.version
                _ = try s.commit(s.plan(NavigateRequest(to: "app.Product", with: ["id": .string("p\(i)")]), caller: Caller()))
                #expect(s.version == before + 1)
                store.sessionChanged(s)
                sessions.append(s)
            }
            try store.flush(graph: ga)
            #expect(store.hasBackgroundWork, "the flush passed the threshold: a compaction is under way")
            try store.backgroundSlice(graph: ga)
            // The reload: every session rebuilt for the new graph, told after the reload record.
            store.graphReloaded(gb, sessions: sessions.count)
            for s in sessions {
                let rebuilt = try Session(restoring: s.name, graph: gb, root: s.root.json(ga), version: s.version, nextId: s.idCounter,
                                          facts: .object(s.sortedFacts), limits: saved.limits)
                store.sessionChanged(rebuilt)
            }
            try store.flush(graph: gb)
            var slices = 0
            while store.hasBackgroundWork && slices < crashAfterSlices {
                try store.backgroundSlice(graph: gb)
                slices += 1
            }
            // The rows the compaction wrote name each session's screens as its own graph does.
            let misnamed = try runCommand("/usr/bin/sqlite3", [path, "SELECT count(*) FROM sessions WHERE tree LIKE '%app.Aaa%'"])
            #expect(misnamed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(misnamed)")
            // A crash: the store is not closed (a clean close would compact).
        }
        let again = try LogStore(path: path, durability: .process, saved: saved, repair: false, compactAt: 4096, compactRatio: 0)
        defer { again.close() }
        let loaded = try again.load(graph: gb)
        #expect(loaded.count == 300)
        for s in loaded {
            let names = s.root.json(gb).description
            #expect(s.version == 1 && names.contains("app.Product") && !names.contains("app.Aaa"), "\(s.name): \(names)")
        }
        #expect(again.restoreReport.contains { $0.contains("replaced by the graph reload") }, "\(again.restoreReport)")
    }
}
