import JSON
import Testing
@testable import RPC

/// What an error echoes of a request is bounded: a long run of a message keeps its start and end,
/// a long string of `data` is cut, both on a character's edge; anything within the bounds is
/// sent as it was written.
@Suite struct ErrorTextTests {
    @Test func aMessageWithinTheBoundsIsKeptAsItIs() {
        let m = "no coordinator `shop.Prodcut`; did you mean `shop.Product`? " + String(repeating: "word ", count: 200)
        #expect(ErrorText.message(m) == m)
        let e = RPCError(.unknownTarget, m, data: ["to": .string("shop.Prodcut")])
        #expect(e.message == m && e.data["to"] == "shop.Prodcut" && e.kind == "unknownTarget")
    }

    @Test func aLongRunKeepsItsStartAndEndAndTheMessageItsAdvice() {
        let name = "é" + String(repeating: "q", count: 200_000) + "z"
        let e = RPCError(.unknownTarget, "no route `\(name)`; did you mean `home`?", data: ["route": .string(name)])
        #expect(e.message.utf8.count < 400, "\(e.message.utf8.count) bytes")
        #expect(e.message.hasPrefix("no route `éqqq") && e.message.hasSuffix("qqz`; did you mean `home`?"), "\(e.message)")
        #expect(e.message.contains("bytes left out"))
        let route = e.data["route"]?.stringValue ?? ""
        #expect(route.utf8.count <= ErrorText.maxDataStringBytes && route.hasPrefix("éqq") && route.hasSuffix("q…"))
        // As sent, too, after the data was changed.
        var changed = e
        changed.data["url"] = .string(String(repeating: "é", count: 5000))
        let sent = changed.json["data"]?["url"]?.stringValue ?? ""
        #expect(sent.utf8.count <= ErrorText.maxDataStringBytes && sent.dropLast().allSatisfy { $0 == "é" })
    }

    /// Many long runs: each is shortened, and the whole stays within its own bound.
    @Test func manyLongRunsStayWithinTheMessagesBound() {
        let runs = (0..<100).map { i in String(repeating: Character(String(UnicodeScalar(UInt8(97 + i % 26)))), count: 300) }
        let m = ErrorText.message(runs.joined(separator: " ") + " end")
        #expect(m.utf8.count <= ErrorText.maxMessageBytes + 64 && m.hasSuffix(" end") && m.hasPrefix("aaa"), "\(m.utf8.count)")
    }
}
