import Foundation
import JSON
import NavTesting
import Testing

/// `session.open` looks its uid's count of sessions up instead of counting every session: opening
/// the 20,000th session costs about what opening the 1,000th did. When each open counted them all,
/// a debug navd took 0.59 s for a thousand opens at 1,000 sessions and 12.2 s at 20,000; now 0.05 s
/// and 0.1 s (a table of 20,000 is slower to reach than one of 1,000).
@Suite struct SessionScaleTests {
    @Test func theLastThousandOpensCostAboutWhatTheFirstDid() throws {
        let d = try Daemon()  // the default flags: one uid may hold 20,000 sessions
        let c = try d.client()
        var seconds: [Double] = []
        for b in 0..<20 {
            let batch: [JSONValue] = (0..<1000).map { i in
                ["jsonrpc": "2.0", "id": .int(i), "method": "session.open", "params": ["name": .string("s\(b)-\(i)")]]
            }
            let text = JSONWriter.string(.array(batch)) + "\n"
            let start = Date()
            try c.sendRaw(text)
            let replies = try #require(try c.readLine(timeout: 60))
            seconds.append(Date().timeIntervalSince(start))
            #expect(!String(decoding: replies, as: UTF8.self).contains("\"error\""))
        }
        #expect(try c.call("stats")["sessions"]?.intValue == 20_001)
        // session.list answers a page at a time: 10,000, 10,000, then the last one.
        var listed: [String] = []
        var after: JSONValue? = nil
        var pages = 0
        repeat {
            let page = try c.call("session.list", after.map { ["after": $0] } ?? [:])
            listed += page["sessions"]?.arrayValue?.compactMap(\.stringValue) ?? []
            after = page["next"]
            pages += 1
        } while after != nil && pages < 10
        #expect(pages == 3 && listed.count == 20_001 && Set(listed).count == 20_001, "\(pages) pages, \(listed.count) names")
        // The best of three batches at each end (a busy machine slows one now and then).
        let first = seconds[1..<4].min()!, last = seconds[17..<20].min()!
        print("1,000 session.open: \(Int(first * 1000)) ms at 1,000 sessions, \(Int(last * 1000)) ms at 20,000")
        #expect(last < 4 * first, "opening the last thousand took \(last) s, the first \(first) s")
    }

    /// Closed sessions leave no name behind in the pages, also once their holes are squeezed out,
    /// and a cursor or a limit that makes no sense is refused with what to send.
    @Test func pagesSkipClosedSessionsAndRefuseNonsense() throws {
        let d = try Daemon()
        let c = try d.client()
        for b in 0..<3 {
            let batch: [JSONValue] = (0..<1000).map { i in
                ["jsonrpc": "2.0", "id": .int(i), "method": "session.open", "params": ["name": .string("p\(b)-\(i)")]]
            }
            try c.sendRaw(JSONWriter.string(.array(batch)) + "\n")
            _ = try #require(try c.readLine(timeout: 60))
        }
        let first = try c.call("session.list", ["limit": 700])
        #expect(first["sessions"]?.arrayValue?.count == 700 && first["next"] != nil)
        for b in 0..<3 {
            let batch: [JSONValue] = (0..<1000).compactMap { i in
                b == 2 && i >= 500 ? nil : ["jsonrpc": "2.0", "id": .int(i), "method": "session.close", "params": ["name": .string("p\(b)-\(i)")]]
            }
            try c.sendRaw(JSONWriter.string(.array(batch)) + "\n")
            _ = try #require(try c.readLine(timeout: 60))
        }
        let rest = try c.call("session.list", ["after": first["next"]!])["sessions"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(rest.count == 500 && rest.allSatisfy { $0.hasPrefix("p2-") }, "\(rest.count) names after the first page")
        let all = try c.call("session.list")
        #expect(all["sessions"]?.arrayValue?.count == 501 && all["next"] == nil, "main and the 500 left")
        #expect(try c.callError("session.list", ["limit": 0])["data"]?["param"] == "limit")
        #expect(try c.callError("session.list", ["after": "nope"])["data"]?["param"] == "after")
    }
}
