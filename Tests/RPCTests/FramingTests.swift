import JSON
import NavTesting
import RPC
import Testing
import Unchecked

/// Feeds `chunks` to a decoder and collects (framing, body) of every message, or the error.
private func decode(_ chunks: [[UInt8]], max: Int = 1024) -> (messages: [(Framing, String)], error: FramingError?) {
    var d = FrameDecoder(maxMessage: max)
    var out: [(Framing, String)] = []
    for c in chunks {
        let failure: FramingError? = c.withUnsafeBytes { (b) -> FramingError? in
            do {
                try d.feed(ByteView(b)) { f, body in out.append((f, String(decoding: body, as: UTF8.self))) }
                return nil
            } catch {
                return error as? FramingError
            }
        }
        if let failure { return (out, failure) }
    }
    return (out, nil)
}

@Suite struct FramingTests {
    let stream = Array("{\"a\":1}\n{\"b\":2}\r\nContent-Length: 7\r\n\r\n{\"c\":3}{\"d\":4}\n".utf8)

    @Test func coalescedMessagesInOneRead() {
        let r = decode([stream])
        #expect(r.error == nil)
        #expect(r.messages.map(\.1) == ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}", "{\"d\":4}"])
        #expect(r.messages.map(\.0) == [.newline, .newline, .contentLength, .newline])
    }

    @Test func everySplitPointGivesTheSameMessages() {
        let whole = decode([stream]).messages.map(\.1)
        for i in 0...stream.count {
            for j in i...stream.count {
                let r = decode([Array(stream[..<i]), Array(stream[i..<j]), Array(stream[j...])])
                #expect(r.error == nil)
                #expect(r.messages.map(\.1) == whole, "split at \(i), \(j)")
            }
        }
    }

    @Test func byteByByte() {
        let r = decode(stream.map { [$0] })
        #expect(r.messages.count == 4)
    }

    /// A line whose newline has not come is searched on from where the last read left it, and
    /// messages held back by a stop are searched from their start: every way of cutting a stream
    /// into reads, with a stop after each message, gives the same messages.
    @Test func stopsAndUnendedLinesGiveTheSameMessages() {
        let text = Array("{\"a\":1}\n{\"b\":2}\nContent-Length: 2\r\n\r\n[]{\"long\":\"\(String(repeating: "x", count: 40))\"}\n{}\n".utf8)
        let whole = decode([text]).messages.map(\.1)
        for i in 0...text.count {
            for j in i...text.count {
                var d = FrameDecoder(maxMessage: 1024)
                var out: [String] = []
                for piece in [Array(text[..<i]), Array(text[i..<j]), Array(text[j...])] {
                    piece.withUnsafeBytes { b in
                        try? d.feed(ByteView(b)) { _, body in
                            out.append(String(decoding: body, as: UTF8.self))
                            return false  // a stop after every message
                        }
                    }
                    while d.hasPartialMessage {
                        let before = out.count
                        try? d.resume { _, body in
                            out.append(String(decoding: body, as: UTF8.self))
                            return false
                        }
                        if out.count == before { break }  // only an unfinished message is left
                    }
                }
                #expect(out == whole, "split at \(i), \(j)")
            }
        }
    }

    /// What the decoder holds is what it allocated: once a large message was taken from the front,
    /// the few bytes after it are not kept in its buffer.
    @Test func theBufferOfALargeMessageIsNotKeptForTheBytesAfterIt() {
        var d = FrameDecoder(maxMessage: 1 << 20)
        var heard = 0
        let first = Array("{\"x\":\"".utf8) + Array(repeating: UInt8(ascii: "a"), count: 200_000)
        first.withUnsafeBytes { try? d.feed(ByteView($0)) { _, _ in heard += 1 } }
        #expect(heard == 0 && d.heldBytes >= 200_000)
        Array("\"}\n{\"y\"".utf8).withUnsafeBytes { try? d.feed(ByteView($0)) { _, _ in heard += 1 } }
        #expect(heard == 1 && d.hasPartialMessage && d.heldBytes < 1_024, "\(d.heldBytes)")
        d.discard()
        #expect(!d.hasPartialMessage && d.heldBytes == 0)
        Array("{}\n".utf8).withUnsafeBytes { try? d.feed(ByteView($0)) { _, _ in heard += 1 } }
        #expect(heard == 1, "a discarded decoder reads nothing more")
    }

    @Test func emptyLineIsAnEmptyMessage() {
        let r = decode([Array("\n{}\n".utf8)])
        #expect(r.messages.map(\.1) == ["", "{}"])
    }

    @Test func lineLongerThanTheLimitFailsBeforeItsEnd() {
        let r = decode([Array(repeating: UInt8(ascii: "x"), count: 600), Array(repeating: UInt8(ascii: "x"), count: 600)], max: 1000)
        #expect(r.error == .messageTooLarge(limit: 1000))
    }

    @Test func messagesBeforeAnOversizedOneAreDelivered() {
        let r = decode([Array("{}\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 2000)], max: 1000)
        #expect(r.messages.map(\.1) == ["{}"])
        #expect(r.error == .messageTooLarge(limit: 1000))
    }

    @Test func contentLengthOverTheLimitFailsAtOnce() {
        let r = decode([Array("Content-Length: 5000\r\n\r\n".utf8)], max: 1000)
        #expect(r.error == .messageTooLarge(limit: 1000))
    }

    @Test(arguments: ["Content-Length: abc\r\n\r\n", "Content-Type: x\r\n\r\n", "Content-Length 4\r\n\r\n"])
    func malformedHeadersFail(header: String) {
        let r = decode([Array(header.utf8)])
        guard case .badHeader? = r.error else {
            Issue.record("expected badHeader, got \(String(describing: r.error))")
            return
        }
    }

    @Test func headerLinesMayEndWithABareNewline() {
        // A terminal (socat) sends \n; LSP writes \r\n. Both end a header line and the blank line.
        let r = decode([Array("Content-Length: 2\n\n{}Content-Length: 2\r\nContent-Type: x\n\r\n[]{}\n".utf8)])
        #expect(r.error == nil)
        #expect(r.messages.map(\.1) == ["{}", "[]", "{}"])
        #expect(r.messages.map(\.0) == [.contentLength, .contentLength, .newline])
    }

    @Test func aHeaderLineWithoutAColonFailsAtItsEnd() {
        // Not held until 1 KiB arrives: the line is complete and cannot be a header.
        let r = decode([Array("curl example.com\n".utf8)])
        guard case .badHeader(let why)? = r.error else {
            Issue.record("expected badHeader, got \(String(describing: r.error))")
            return
        }
        #expect(why.contains("'curl example.com' has no ':'"))
    }

    @Test func headerBlockPastItsLimitFailsEvenWithNewlines() {
        let lines = String(repeating: "Content-Type: x\r\n", count: 80)
        let r = decode([Array(lines.utf8)])
        #expect(r.error == .badHeader("header block longer than 1024 bytes without an empty line"))
    }

    @Test func headerNamesAreCaseInsensitiveAndOtherHeadersAllowed() {
        let r = decode([Array("content-length: 2\r\nContent-Type: application/json\r\n\r\n{}".utf8)])
        #expect(r.messages.map(\.1) == ["{}"])
    }

    @Test func framingWritesBothStyles() {
        #expect(Framing.frame(Array("{}".utf8), .newline) == Array("{}\n".utf8))
        #expect(Framing.frame(Array("{}".utf8), .contentLength) == Array("Content-Length: 2\r\n\r\n{}".utf8))
    }
}

@Suite struct MessageTests {
    let p = JSONParser()

    private func decodeText(_ text: String) throws -> RPCMessage {
        let bytes = Array(text.utf8)
        return RPCMessage.decode(try bytes.withUnsafeBytes { b throws(JSONParseError) in try p.view(b) })
    }

    @Test(arguments: [#"{"jsonrpc":"2.0","id":1,"method":"m"}"#, #"{"jsonrpc":"2.0","id":"x","method":"m","params":{}}"#,
                      #"{"jsonrpc":"2.0","id":null,"method":"m","params":[]}"#, #"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#])
    func validRequests(text: String) throws {
        guard case .request(let r) = try decodeText(text) else {
            Issue.record("not a request: \(text)")
            return
        }
        #expect(r.method == "m")
        #expect(!r.isNotification)
    }

    @Test func notificationHasNoId() throws {
        guard case .request(let r) = try decodeText(#"{"jsonrpc":"2.0","method":"m"}"#) else {
            Issue.record("not a request")
            return
        }
        #expect(r.isNotification)
    }

    @Test(arguments: [
        (#"{"id":1,"method":"m"}"#, JSONValue.int(1)),
        (#"{"jsonrpc":"1.0","id":2,"method":"m"}"#, .int(2)),
        (#"{"jsonrpc":"2.0","id":3,"method":5}"#, .int(3)),
        (#"{"jsonrpc":"2.0","id":4,"method":"m","params":"x"}"#, .int(4)),
        (#"{"jsonrpc":"2.0","id":{},"method":"m"}"#, .null),
        (#"{"jsonrpc":"2.0","id":5}"#, .int(5)),
        (#"7"#, .null),
        (#"{"jsonrpc":"2.0","id":6,"result":1,"error":{"code":1,"message":"x"}}"#, .null),
    ])
    func invalidRequests(text: String, id: JSONValue) throws {
        guard case .invalid(let f) = try decodeText(text) else {
            Issue.record("accepted \(text)")
            return
        }
        #expect(f.error.code == -32600)
        #expect(f.error.kind == "invalidRequest")
        #expect(f.id == id)
        #expect(!f.error.message.isEmpty)
    }

    /// A request without `jsonrpc` is told it is missing; one with another value is told which.
    @Test func theVersionMissingOrWrongIsNamed() throws {
        for (text, said) in [(#"{"id":1,"method":"m"}"#, #""jsonrpc" is missing; every JSON-RPC 2.0 message carries "jsonrpc": "2.0""#),
                             (#"{"jsonrpc":"1.0","id":2,"method":"m"}"#, #""jsonrpc" must be "2.0", not "1.0""#),
                             (#"{"jsonrpc":2,"id":3,"method":"m"}"#, #""jsonrpc" must be "2.0", not 2"#)] {
            guard case .invalid(let f) = try decodeText(text) else {
                Issue.record("accepted \(text)")
                continue
            }
            #expect(f.error.message == said, "\(text): \(f.error.message)")
        }
    }

    @Test func responses() throws {
        guard case .response(let ok) = try decodeText(#"{"jsonrpc":"2.0","id":1,"result":{"passed":true}}"#),
              case .response(let err) = try decodeText(#"{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}"#)
        else {
            Issue.record("not responses")
            return
        }
        #expect(try ok.result.get()["passed"] == true)
        if case .failure(let e) = err.result { #expect(e.code == -1) } else { Issue.record("expected an error") }
    }

    /// A request's id is answered as written from the view it was read as: the same value as its tree.
    @Test(arguments: [#"1"#, #"-42"#, #""x\"y\\z\u00e9\n""#, #"1.5"#, #"null"#, #"18446744073709551615"#, #"1e3"#, #""""#])
    func idsAreAnsweredAsGiven(idText: String) throws {
        guard case .request(let r) = try decodeText(#"{"jsonrpc":"2.0","id":\#(idText),"method":"m"}"#), let id = r.id else {
            Issue.record("not a request with an id: \(idText)")
            return
        }
        let given = id.value
        var w = JSONWriter()
        RPCEncoder.response(id: id, result: JSONValue.bool(true), into: &w)
        let back = try JSONParser().parse(w.bytes)
        #expect(back["id"] == given)
        #expect(back["result"] == true)
        var e = JSONWriter()
        RPCEncoder.error(id: id, error: .invalidParams("x"), into: &e)
        #expect(try JSONParser().parse(e.bytes)["id"] == given)
    }

    /// The one-pass request reader agrees with the full decoder on every combination of envelope
    /// members and value types: a request exactly when decode says request, with the same parts.
    @Test func requestFastPathAgreesWithDecode() throws {
        let values = [#"1"#, #""x""#, #"null"#, #"true"#, #"2.5"#, #"{}"#, #"[]"#, #""2.0""#, #""m""#, #"{"a":1}"#]
        let keys = ["jsonrpc", "id", "method", "params", "result", "error"]
        var rng = SplitMix64(seed: 7)
        var requests = 0
        for _ in 0..<4000 {
            var members: [String] = []
            for k in keys where rng.next() % 4 != 0 {
                let v = k == "jsonrpc" && rng.next() % 3 != 0 ? #""2.0""# : values[Int(rng.next() % UInt64(values.count))]
                members.append("\"\(k)\":\(v)")
            }
            if rng.next() % 8 == 0, let first = members.first { members.append(first) }  // a repeated key
            let text = "{" + members.joined(separator: ",") + "}"
            let bytes = Array(text.utf8)
            try bytes.withUnsafeBytes { b in
                let view = try p.view(b)
                let fast = RPCMessage.request(view)
                if case .request(let r) = RPCMessage.decode(view) {
                    requests += 1
                    let f = try #require(fast, "fast path refused \(text)")
                    #expect(f.id?.value == r.id?.value && f.method == r.method && f.params?.value == r.params?.value, "\(text)")
                    #expect((f.id == nil) == (r.id == nil), "\(text)")
                } else {
                    #expect(fast == nil, "fast path accepted \(text)")
                }
            }
        }
        #expect(requests > 100, "the generator makes valid requests too (\(requests))")
    }

    @Test func standardErrorsCarryCodeAndKind() {
        #expect(RPCError.parseError("x").code == -32700)
        #expect(RPCError.invalidRequest("x").code == -32600)
        #expect(RPCError.methodNotFound("nope").code == -32601)
        #expect(RPCError.methodNotFound("nope").data["method"] == "nope")
        #expect(RPCError.invalidParams("x").code == -32602)
        #expect(RPCError.internalError("x").code == -32603)
        for e in [RPCError.parseError("x"), .invalidRequest("x"), .methodNotFound("m"), .invalidParams("x"), .internalError("x")] {
            #expect(e.json["data"]?["kind"]?.stringValue?.isEmpty == false)
        }
    }

    @Test func encodersProduceValidJSONRPC() throws {
        var w = JSONWriter()
        RPCEncoder.error(id: "a\"b", error: .methodNotFound("x\ny"), into: &w)
        let v = try p.parse(w.bytes)
        #expect(v["id"] == "a\"b")
        #expect(v["error"]?["data"]?["method"] == "x\ny")
        #expect(v["jsonrpc"] == "2.0")
    }
}
