import JSON
import Testing
@testable import NavServer

/// A keyed navigation's commit is told to the store with its key, then its reply under that key,
/// however it commits: at once, after its preconditions passed, or resumed by the completion of a
/// recovery flow (inside another request's commit). A log store marks such a commit so that a crash
/// between the two records drops it (DurableIntegrityTests in EndToEndTests restarts on such a log).
extension InProcess {
    @Suite struct KeyedCommitTests {
        /// What the store was told about keyed commits and keys, in order.
        func keyed(_ told: [String]) -> [String] { told.filter { $0.contains("key") } }

        @Test func aKeyedCommitIsToldWithItsKeyBeforeItsReply() throws {
            let p = InProcessServer()
            let store = RecordingStore()
            p.server.store = store
            let c = p.client()
            // At once (no precondition).
            #expect(try p.call(c, 1, "navigate", ["to": "shop.Product", "with": ["id": "p0"], "key": "now"])["result"]?["version"] == 1)
            #expect(keyed(store.told) == ["commit main key now", "key now"], "\(store.told)")
            // An unkeyed one is told without a key.
            store.told = []
            _ = try p.call(c, 2, "navigate", ["to": "shop.Product", "with": ["id": "p1"]])
            #expect(store.told == ["changed main"], "\(store.told)")
            // After its preconditions: loggedIn fails, its recovery flow (Login) is presented; the
            // navigation commits when the flow completes, inside flowComplete's request.
            _ = try p.call(c, 3, "navigate", ["route": "account"])
            store.told = []
            c.send(request(3, "navigate", ["route": "orders", "key": "later"]) + "\n")
            for _ in 0..<10 { p.server.loop.runOnce(wait: false) }
            #expect(keyed(store.told).isEmpty, "nothing keyed is told before it commits: \(store.told)")
            let login = try #require(Self.flow(in: try p.call(c, 4, "tree")["result"]?["root"]), "the recovery flow is presented")
            store.told = []
            let done = try p.call(c, 5, "flowComplete", ["flow": .string(login), "result": ["user": "ann"]])
            #expect(done["result"] != nil, "\(done)")
            for _ in 0..<10 { p.server.loop.runOnce(wait: false) }
            #expect(keyed(store.told) == ["commit main key later", "key later"], "\(store.told)")
            // Its retry changes nothing and tells the store nothing.
            store.told = []
            let retry = try p.call(c, 6, "navigate", ["route": "orders", "key": "later"])
            #expect(retry["result"]?["navigation"] != nil && store.told.isEmpty, "\(retry) \(store.told)")
        }

        /// The id of the first flow in `node`'s tree.
        static func flow(in node: JSONValue?) -> String? {
            guard let node else { return nil }
            if node["kind"] == "flow" { return node["id"]?.stringValue }
            for c in node["children"]?.arrayValue ?? [] { if let f = flow(in: c) { return f } }
            return flow(in: node["presented"])
        }
    }
}
