import Foundation
import JSON
import NavTesting
import Testing

/// Notifications are encoded once and shared by every subscriber (a range of one broadcast log per
/// loop iteration, written from it with the subscriber's own output); these tests read that path
/// back where it is hardest: subscribers that fall far behind, mix their own replies with the
/// shared notifications, or use the other framing.
@Suite struct BroadcastTests {
    /// 1,500 push/pop pairs: about 600 KB of stackChanged for each subscriber, more than a socket
    /// buffer holds, so navd's writes to the late readers are partial and the rest is queued.
    static let pairs = 1500

    @Test func lateReadersGetEveryNotificationInOrderBetweenTheirOwnReplies() throws {
        let d = try Daemon()
        let driver = try d.client()
        let late = try d.client()
        let headed = try d.client()
        let start = try late.call("subscribe")["version"]?.intValue ?? -1
        #expect(start == 0)
        let subscribe = #"{"jsonrpc":"2.0","id":"sub","method":"subscribe"}"#
        try headed.sendRaw("Content-Length: \(subscribe.utf8.count)\r\n\r\n\(subscribe)")

        // The driver is subscribed too: each of its replies must come after the stackChanged of the
        // commit it reports (its own output after the shared notification, in the same iteration).
        try driver.call("subscribe")
        var seen = start
        var request = 0
        var pings = 0
        for batch in 0..<(Self.pairs / 50) {
            var lines = ""
            for _ in 0..<50 {
                request += 1
                lines += #"{"jsonrpc":"2.0","id":\#(request),"method":"navigate","params":{"to":"shop.Product","with":{"id":"p\"1\u00e9"}}}"# + "\n"
                request += 1
                lines += #"{"jsonrpc":"2.0","id":\#(request),"method":"dismiss"}"# + "\n"
            }
            try driver.sendRaw(lines)
            var replies = 0
            while replies < 100 {
                let m = try #require(try driver.readMessage())
                if m["method"] == "stackChanged" {
                    seen += 1
                    #expect(m["params"]?["version"]?.intValue == seen)
                    continue
                }
                replies += 1
                #expect(m["error"] == nil, "\(m)")
                #expect(m["result"]?["version"]?.intValue == seen, "reply \(m["id"] ?? nil) came before its stackChanged")
            }
            // The late reader asks something now and then and reads nothing: its own replies land
            // between shared notifications in its output.
            try late.send("ping", id: .int(batch))
            pings += 1
        }
        try headed.sendRaw(#"{"jsonrpc":"2.0","id":"end","method":"ping"}"# + "\n")

        // Newline subscriber: every version once, in order, and every ping answered in order.
        var version = start
        var answered: [Int] = []
        while answered.count < pings {
            let m = try #require(try late.readMessage())
            if m["method"] == "stackChanged" {
                version += 1
                #expect(m["params"]?["version"]?.intValue == version)
            } else {
                #expect(m["result"] == "pong")
                let batch = m["id"]?.intValue ?? -1
                answered.append(batch)
                // The ping was sent after the driver had its replies for this batch, so navd had queued
                // the batch's notifications to this client before it answered the ping.
                #expect(version >= start + 100 * (batch + 1), "ping \(batch) answered before the notifications it follows")
            }
        }
        while version < start + 2 * Self.pairs {
            let m = try #require(try late.readMessage())
            version += 1
            #expect(m["params"]?["version"]?.intValue == version)
        }
        #expect(answered == Array(0..<pings))

        // Content-Length subscriber: the same notifications, each framed with its length.
        var stream: [UInt8] = []
        while true {
            let line = try #require(try headed.readLine())
            stream += line + [0x0A]
            if line.suffix(7) == Array(#""pong"}"#.utf8) { break }
        }
        let parser = JSONParser()
        var at = stream.startIndex
        var frames: [JSONValue] = []
        while stream[at...].starts(with: Array("Content-Length: ".utf8)) {
            let headerEnd = try #require(stream[at...].firstIndex(of: 0x0A))
            let length = try #require(Int(String(decoding: stream[(at + 16)..<(headerEnd - 1)], as: UTF8.self)))
            let body = headerEnd + 3  // "\n\r\n"
            frames.append(try parser.parse(Array(stream[body..<(body + length)])))
            at = body + length
        }
        #expect(try parser.parse(Array(stream[at...].dropLast())) == ["jsonrpc": "2.0", "id": "end", "result": "pong"])
        #expect(frames.first?["id"] == "sub")
        let versions = frames.dropFirst().map { $0["params"]?["version"]?.intValue ?? -1 }
        #expect(versions == Array((start + 1)...(start + 2 * Self.pairs)))
        #expect(frames.dropFirst().allSatisfy { $0["method"] == "stackChanged" })
        let pushed = frames[1]["params"]?["changes"]?.arrayValue?.first?["node"]?["params"]?["id"]
        #expect(pushed == "p\"1é")
    }

    /// A request that comes alone in its read is answered as soon as it is handled (not at the end of
    /// the loop iteration); for a subscriber of its own session the stackChanged of the commit still
    /// comes first, and another subscriber gets it too.
    @Test func aLoneRequestIsAnsweredAfterTheNotificationOfItsCommit() throws {
        let d = try Daemon()
        let driver = try d.client()
        let watcher = try d.client()
        var seen = try driver.call("subscribe")["version"]?.intValue ?? -1
        try watcher.call("subscribe")
        for i in 0..<200 {
            let id = try driver.send(i % 2 == 0 ? "navigate" : "dismiss",
                                     i % 2 == 0 ? ["to": "shop.Product", "with": ["id": .string("p\(i)")]] : nil)
            let first = try #require(try driver.readMessage())
            #expect(first["method"] == "stackChanged", "reply \(id) came before its stackChanged: \(first)")
            seen += 1
            #expect(first["params"]?["version"]?.intValue == seen)
            let reply = try #require(try driver.readMessage())
            #expect(reply["id"] == id && reply["error"] == nil, "\(reply)")
            #expect(reply["result"]?["version"]?.intValue == seen)
            let other = try watcher.notification("stackChanged")
            #expect(other["params"]?["version"]?.intValue == seen)
        }
    }
}
