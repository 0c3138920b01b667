import Foundation
import Testing

@testable import NavWebServer

/// HTTP/1.1 heads and WebSocket frames as nav-web reads them, without a socket.
@Suite struct ProtocolTests {
    @Test func aHeadIsReadWithItsFieldsAndLength() throws {
        let text = "GET /metrics?token=a%20b&x HTTP/1.1\r\nHost: localhost:8765\r\nCookie: a=1\r\nCookie: navweb_token=t\r\nConnection: keep-alive, Upgrade\r\n\r\nGET /next"
        guard case .head(let head, let length) = HTTPHead.parse(Array(text.utf8)) else { Issue.record("no head"); return }
        #expect(length == text.utf8.count - "GET /next".utf8.count)
        #expect(head.method == "GET" && head.path == "/metrics" && head.minorVersion == 1)
        #expect(head.query("token") == "a b" && head.query("x") == "" && head.query("y") == nil)
        #expect(head.field("host") == "localhost:8765" && head.values("cookie") == ["a=1", "navweb_token=t"])
        #expect(head.fieldHasToken("connection", "upgrade") && head.keepAlive)
        // A bare LF ends lines too; empty lines before the request line are skipped.
        guard case .head(let old, _) = HTTPHead.parse(Array("\r\nGET / HTTP/1.0\nHost: x\n\n".utf8)) else { Issue.record("no head"); return }
        #expect(old.minorVersion == 0 && !old.keepAlive)
    }

    /// A head arriving a byte at a time is parsed only where it may end, and found where it ends.
    @Test func aHeadIsParsedOnlyWhereItMayEnd() {
        for text in ["GET / HTTP/1.1\r\nHost: x\r\n\r\n", "\r\nGET / HTTP/1.0\nA: b\n\n", "GET /a HTTP/1.1\r\n\r\n"] {
            let bytes = Array(text.utf8)
            var buffer: [UInt8] = []
            var scanned = 0
            var parses = 0
            var found: Int?
            for b in bytes where found == nil {
                buffer.append(b)
                guard HTTPHead.mayEnd(buffer, from: scanned) else { scanned = buffer.count; continue }
                parses += 1
                if case .head(_, let length) = HTTPHead.parse(buffer) { found = length }
                scanned = buffer.count
            }
            #expect(found == bytes.count && parses <= 2, "\(text.debugDescription): \(parses) parses")
        }
    }

    @Test func aHeadThatIsNotWholeWaits() {
        for cut in ["", "GET / HTTP/1.1", "GET / HTTP/1.1\r\nHost: x\r\n", "GET / HTTP/1.1\r\nHost: x\r\n\r"] {
            #expect(HTTPHead.parse(Array(cut.utf8)) == .incomplete, "\(cut)")
        }
    }

    @Test func aHeadThatBreaksTheSyntaxIsRefusedWithItsStatus() {
        func status(_ text: String) -> Int? {
            if case .refused(let s, _) = HTTPHead.parse(Array(text.utf8)) { return s }
            return nil
        }
        #expect(status("GET /\r\n\r\n") == 400)
        #expect(status("GET  / HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET http://x/ HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET / HTTP/2.0\r\n\r\n") == 505)
        #expect(status("GET / HTTP/1.1\r\nNo colon\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nBad name: x\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nA: b\u{1}c\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello") == 413)
        #expect(status("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == 501)
        #expect(status("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\n" + String(repeating: "A: b\r\n", count: HTTPHead.maxHeaders + 1) + "\r\n") == 431)
        #expect(status("GET / HTTP/1.1\r\nA: " + String(repeating: "b", count: HTTPHead.maxHeadBytes)) == 431)
        #expect(HTTPHead.parse(Array(("GET / HTTP/1.1\r\nA: " + String(repeating: "b", count: HTTPHead.maxHeadBytes - 30)).utf8)) == .incomplete)
    }

    /// RFC 6455 §1.3's example, and SHA-1's own test vectors (FIPS 180-4).
    @Test func theHandshakeAnswersTheKeyAsTheRFCSays() {
        #expect(WebSocket.accept(key: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let hex = { (b: [UInt8]) in b.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(SHA1.digest(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hex(SHA1.digest([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(hex(SHA1.digest(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(WebSocket.validKey("dGhlIHNhbXBsZSBub25jZQ==") && !WebSocket.validKey("short") && !WebSocket.validKey("dGhlIHNhbXBsZSBub25jZQ"))
    }

    /// A client's frame: masked, `fin`, `opcode`, `payload`.
    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        var f: [UInt8] = [(fin ? 0x80 : 0) | rsv | opcode]
        let m: UInt8 = masked ? 0x80 : 0
        let count = UInt64(payload.count)
        if count < 126 {
            f.append(m | UInt8(count))
        } else if count <= 0xFFFF {
            f += [m | 126, UInt8(truncatingIfNeeded: count >> 8), UInt8(truncatingIfNeeded: count)]
        } else {
            f.append(m | 127)
            for shift: UInt64 in stride(from: 56, through: 0, by: -8) { f.append(UInt8(truncatingIfNeeded: count >> shift)) }
        }
        guard masked else { return f + payload }
        let mask: [UInt8] = [0xA1, 0xB2, 0xC3, 0xD4]
        f += mask
        for (i, byte) in payload.enumerated() { f.append(byte ^ mask[i & 3]) }
        return f
    }

    @Test func framesAreReadIntoMessagesByteByByteOrAllAtOnce() {
        let stream = Self.frame(1, Array("hel".utf8), fin: false) + Self.frame(9, [7]) + Self.frame(0, Array("lo".utf8))
            + Self.frame(1, Array(repeating: 0x61, count: 300)) + Self.frame(2, [1, 2, 3]) + Self.frame(8, [0x03, 0xE8])
        let expected: [WebSocketReader.Event] = [.ping([7]), .text("hello"), .text(String(repeating: "a", count: 300)), .binary(count: 3), .close(1000)]
        var whole = WebSocketReader(maxMessage: 1 << 20)
        #expect(whole.feed(stream) == expected)
        var bytewise = WebSocketReader(maxMessage: 1 << 20)
        var events: [WebSocketReader.Event] = []
        for b in stream { events += bytewise.feed([b]) }
        #expect(events == expected)
        #expect(bytewise.finished && bytewise.feed(Self.frame(1, [0x61])) == [])
    }

    @Test func framesThatBreakTheProtocolFailWithTheirCode() {
        func code(_ bytes: [UInt8], max: Int = 1 << 20) -> UInt16? {
            var r = WebSocketReader(maxMessage: max)
            if case .fail(let c, _) = r.feed(bytes).last { return c }
            return nil
        }
        #expect(code(Self.frame(1, [0x61], masked: false)) == 1002)
        #expect(code(Self.frame(1, [0x61], rsv: 0x40)) == 1002)
        #expect(code(Self.frame(3, [])) == 1002)
        #expect(code(Self.frame(9, [], fin: false)) == 1002)
        #expect(code(Self.frame(9, Array(repeating: 0, count: 126))) == 1002)
        #expect(code(Self.frame(0, [0x61])) == 1002)
        #expect(code(Self.frame(1, [0x61], fin: false) + Self.frame(1, [0x61])) == 1002)
        #expect(code(Self.frame(8, [0x03])) == 1002)
        #expect(code(Self.frame(1, [0xFF, 0xFE])) == 1007)
        #expect(code(Self.frame(8, [0x03, 0xE8, 0xFF])) == 1007)
        for reserved: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 2999, 5000] {
            #expect(code(Self.frame(8, [UInt8(reserved >> 8), UInt8(reserved & 0xFF)])) == 1002, "close code \(reserved)")
        }
        for allowed: UInt16 in [1000, 1001, 1011, 3000, 4999] {
            var r = WebSocketReader(maxMessage: 10)
            #expect(r.feed(Self.frame(8, [UInt8(allowed >> 8), UInt8(allowed & 0xFF)])) == [.close(allowed)])
        }
        // Past the limit: refused on the frame's head alone, before its payload arrives.
        #expect(code(Array(Self.frame(1, Array(repeating: 0x61, count: 101)).prefix(8)), max: 100) == 1009)
        #expect(code(Self.frame(1, Array(repeating: 0x61, count: 60), fin: false) + Array(Self.frame(0, Array(repeating: 0x61, count: 41)).prefix(2)), max: 100) == 1009)
        #expect(code(Self.frame(1, Array(repeating: 0x61, count: 100)), max: 100) == nil)
        #expect(code([0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0]) == 1002)
    }

    @Test func serverFramesCarryTheirLength() {
        for n in [0, 125, 126, 65_535, 65_536] {
            let f = WebSocket.frame(.text, Array(repeating: UInt8(0x61), count: n))
            #expect(f[0] == 0x81 && f.count == n + (n < 126 ? 2 : n <= 0xFFFF ? 4 : 10), "\(n)")
        }
        #expect(WebSocket.closeFrame(1009, "too big") == [0x88, 9, 0x03, 0xF1] + Array("too big".utf8))
    }

    @Test func linesAreSplitWhereverTheChunksEnd() {
        var s = LineSplitter()
        #expect(s.feed(Array("ab".utf8)) == [])
        #expect(s.feed(Array("c\nd\n\ne".utf8)) == ["abc", "d", ""])
        #expect(s.pendingCount == 1 && s.feed(Array("\n".utf8)) == ["e"])
    }
}
