import Foundation
import JSON
import NavGraph
import NavTesting
import NavigationCore
import Testing
@testable import NavServer

/// Replies of known shapes are written directly; property: Foundation's decoder reads back the same
/// values, for any strings (escapes, control characters, non-ASCII).
@Suite struct ResultEncodingTests {
    private static let alphabet: [Unicode.Scalar] = (0..<0x80).compactMap(Unicode.Scalar.init) + ["é", "中", "😀", "\u{2028}"]

    private static func randomString(_ rng: inout SplitMix64) -> String {
        var s = ""
        for _ in 0..<Int(rng.next() % 12) { s.unicodeScalars.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
        return s
    }

    private static func decode(_ e: some JSONEncodable) throws -> [String: Any]? {
        var w = JSONWriter()
        e.encode(into: &w)
        return try JSONSerialization.jsonObject(with: Data(w.bytes)) as? [String: Any]
    }

    @Test func navigatedAndRemovedRoundTripThroughFoundation() throws {
        var rng = SplitMix64(seed: 0xD1AC)
        let session = Session(name: "s", graph: GraphLoader.loadEmbeddedExample().graph!)
        for i in 0..<1000 {
            let numbers = (0..<Int(rng.next() % 5)).map { _ in Int(rng.next() % 2_000_000_000) }
            let visible = numbers.map(Node.id)
            let node = i % 3 == 0 ? nil : session.visibleTop
            let n = Navigated(navigation: Int(rng.next() % 1_000_000), node: node?.number ?? -1,
                              version: Int(bitPattern: UInt(rng.next())), visible: .numbers(numbers))
            let o = try Self.decode(n)
            #expect(o?["navigation"] as? String == "nav-\(n.navigation)")
            #expect(o?["node"] as? String == (node?.id ?? ""))
            #expect((o?["version"] as? NSNumber)?.int64Value == Int64(n.version))
            #expect(o?["visible"] as? [String] == visible)
            #expect(try JSONParser().parse(JSONWriter.encode(n.json)) == n.json)
            var w = JSONWriter()
            n.encode(into: &w)
            #expect(try JSONParser().parse(w.bytes) == n.json)

            let removedNumbers = (0..<Int(rng.next() % 5)).map { _ in Int(rng.next() % 2_000_000_000) }
            var kept = NodeNumbers()
            for n in removedNumbers { kept.append(n) }
            #expect(Array(kept) == removedNumbers)
            let r = Removed(version: Int(rng.next() % 1000), removed: kept)
            let ro = try Self.decode(r)
            #expect((ro?["version"] as? NSNumber)?.intValue == r.version)
            #expect(ro?["removed"] as? [String] == removedNumbers.map { "n\($0)" })
        }
    }
}

extension ResultEncodingTests {
    /// The visible path written from the tree is the one `Session.visible` lists.
    @Test func visiblePathFromTheTreeMatchesTheList() throws {
        let session = Session(name: "s", graph: GraphLoader.loadEmbeddedExample().graph!)
        var w = JSONWriter()
        VisiblePath.current(session).encode(into: &w, at: session.version)
        #expect(try JSONParser().parse(w.bytes) == .array(session.visible.map(JSONValue.string)))
    }
}
