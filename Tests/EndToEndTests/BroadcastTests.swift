import Foundation
import JSON
import NavClient
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
    /// Subscribers of one session in both forms: each hears every commit once, in its own form; the
    /// compact lines take at most 60 % of the bytes of the full ones and expand to the same
    /// notifications (but for the hints, carried once beside the changes); subscribing again in
    /// the full form switches; a form navd does not know is refused with the param named.
    @Test func compactAndFullSubscribersHearTheSameCommits() throws {
        let d = try Daemon()
        let driver = try d.client(), full = try d.client(), compact = try d.client()
        try full.call("subscribe")
        #expect(try compact.call("hello", ["notifications": "compact"])["notifications"] == "compact")
        let snapshot = try compact.call("subscribe")
        #expect(snapshot["notifications"] == "compact")
        var mirror = TreeMirror(snapshot: snapshot)
        try driver.call("context.set", ["facts": ["loggedIn": true]])
        try driver.call("navigate", ["to": "shop.Product", "with": ["id": "p1"], "hints": ["animated": true]])
        try driver.call("navigate", ["to": "cart.Checkout", "by": "present"])
        try driver.call("dismiss")
        try driver.call("navigate", ["to": "shop.Reviews"])
        try driver.call("navigate", ["route": "account"])
        try driver.call("open", ["url": "/orders/o-1"])
        try driver.call("reset")
        let commits = 7
        var fullBytes = 0, compactBytes = 0
        /// The next `stackChanged` line (a precondition's `navigationPending` comes before some).
        func nextChange(_ client: TestClient) throws -> [UInt8] {
            while true {
                let line = try #require(try client.readLine())
                if try JSONParser().parse(line)["method"] == "stackChanged" { return line }
            }
        }
        for _ in 0..<commits {
            let f = try nextChange(full), c = try nextChange(compact)
            fullBytes += f.count + 1
            compactBytes += c.count + 1
            let fp = try #require(try JSONParser().parse(f)["params"]), cp = try #require(try JSONParser().parse(c)["params"])
            #expect(cp.arrayValue?.first == snapshot["ref"], "\(String(decoding: c, as: UTF8.self))")
            var expected = fp
            if case .object(var o) = fp, let changes = o["changes"]?.arrayValue {
                o["changes"] = .array(changes.map { ch in
                    guard case .object(var c) = ch else { return ch }
                    c.members.removeAll { $0.key == "hints" }
                    return .object(c)
                })
                expected = .object(o)
            }
            #expect(try TreeMirror.full(cp, session: "main") == expected, "\(String(decoding: c, as: UTF8.self))")
            try mirror.apply(cp)
        }
        #expect(compactBytes * 10 <= fullBytes * 6, "compact \(compactBytes) bytes, full \(fullBytes)")
        let tree = try driver.call("tree")
        #expect(mirror.version == tree["version"]?.intValue && mirror.root == tree["root"])

        #expect(try compact.call("subscribe", ["notifications": "full"])["notifications"] == "full")
        try driver.call("navigate", ["to": "shop.Product", "with": ["id": "p2"]])
        #expect(try compact.notification("stackChanged")["params"]?["session"] == "main")
        let e = try compact.callError("subscribe", ["notifications": "tiny"])
        #expect(e["data"]?["param"] == "notifications" && e["data"]?["kind"] == "invalidParams")
    }
}

