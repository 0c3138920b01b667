import Foundation
import JSON
import Testing
@testable import NavServer

extension InProcess {
/// `client.list`'s pages over many connections (in memory: thousands are cheap here).
@Suite struct ClientPageTests {
    /// A page looks at no more than its limit + 4,096 connections: with 3 of 9,003 connections
    /// subscribed to a session, its subscribedTo pages come short (empty ones too) with a `next`,
    /// and following them finds the 3 and stops; the whole list comes 1,000 a page.
    @Test func aPageLooksAtABoundedNumberOfConnections() throws {
        var config = ServerConfiguration(socketPath: "/nonexistent")
        config.maxConnections = 20_000
        let p = InProcessServer(config: config)
        let clients = (0..<9_003).map { _ in p.client() }
        for i in [0, 1, 9_002] { _ = try p.call(clients[i], #"{"jsonrpc":"2.0","id":1,"method":"subscribe"}"#) }
        func follow(_ params: String) throws -> (ids: [Int], pages: [Int]) {
            var ids: [Int] = [], pages: [Int] = []
            var after: Int?
            repeat {
                let line = #"{"jsonrpc":"2.0","id":2,"method":"client.list","params":{"# + params + (after.map { #","after":\#($0)"# } ?? "") + "}}"
                let r = try p.call(clients[5], line)
                let got = r["result"]?["clients"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
                ids += got
                pages.append(got.count)
                after = r["result"]?["next"]?.intValue
            } while after != nil && pages.count < 20
            return (ids, pages)
        }
        let watching = try follow(#""subscribedTo":"main","limit":10"#)
        #expect(watching.ids.count == 3 && watching.pages == [2, 0, 1], "\(watching)")
        let all = try follow(#""limit":1000"#)
        #expect(all.ids.count == 9_003 && all.ids == all.ids.sorted() && all.pages == [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 3], "\(all.pages)")
    }
}
}
