import CChecksum
import Foundation
import JSON
import NavGraph
import NavTesting
import NavigationCore
import Testing
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
        #expect(check.withUnsafeBytes { CRC32C.checksum($0) } == 0xE306_9283)
        let long = [UInt8](repeating: 0x5A, count: 1000)
        var flipped = long
        flipped[500] ^= 1
        #expect(long.withUnsafeBytes { CRC32C.checksum($0) } != flipped.withUnsafeBytes { CRC32C.checksum($0) })
        #expect([UInt8]().withUnsafeBytes { CRC32C.checksum($0) } == 0)
        // The table, as machines without the crc32 instruction compute it, agrees at every length.
        for n in 0..<64 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(bytes.withUnsafeBytes { CRC32C.checksum($0) } == bytes.withUnsafeBytes { navd_crc32c_portable($0.baseAddress, $0.count) })
        }
    }
}
