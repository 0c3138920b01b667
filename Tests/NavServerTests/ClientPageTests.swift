import Foundation
import JSON
import Testing
@testable import NavServer

extension InProcess {
/// `client.list`'s pages over many connections (in memory: thousands are cheap here).
@Suite struct ClientPageTests {
    /// A page looks at no more than its limit + 4,096 connections: a uid holding 3 of 9,003 gets
    /// short pages (empty ones too) with a `next`, and following them finds its 3 and stops; a
    /// subscribedTo page likewise. No page costs more than that bound.
    @Test func aPageLooksAtABoundedNumberOfConnections() throws {
        var config = ServerConfiguration(socketPath: "/nonexistent")
        config.maxConnections = 20_000
        let p = InProcessServer(config: config)
        let theirs = (0..<2).map { _ in p.client(uid: 65534) }
        let mine = (0..<9_000).map { _ in p.client() }
        let last = p.client(uid: 65534)
        _ = try p.call(last, #"{"jsonrpc":"2.0","id":1,"method":"subscribe"}"#)
        _ = try p.call(mine[8_999], #"{"jsonrpc":"2.0","id":1,"method":"subscribe"}"#)
        func follow(_ c: MemoryStream, _ params: String) throws -> (ids: [Int], pages: [Int]) {
            var ids: [Int] = [], pages: [Int] = []
            var after: Int?
            repeat {
                let line = #"{"jsonrpc":"2.0","id":2,"method":"client.list","params":{"# + params + (after.map { #","after":\#($0)"# } ?? "") + "}}"
                let r = try p.call(c, line)
                let got = r["result"]?["clients"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
                ids += got
                pages.append(got.count)
                after = r["result"]?["next"]?.intValue
            } while after != nil && pages.count < 20
            return (ids, pages)
        }
        let own = try follow(theirs[0], #""limit":10"#)
        #expect(own.ids.count == 3 && own.pages.count == 3 && own.pages.contains(0), "\(own)")
        // navd's own uid holds admin: it sees every connection, 1,000 a page.
        let all = try follow(mine[0], #""limit":1000"#)
        #expect(all.ids.count == 9_003 && all.pages == [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 3], "\(all.pages)")
        let watching = try follow(mine[0], #""subscribedTo":"main","limit":1000"#)
        #expect(watching.ids.count == 2 && watching.pages == [0, 2], "\(watching)")
    }
}
}
