import Foundation
import HummingbirdWebSocket
import NIOCore

/// One page's WebSocket relayed to a navd connection of its own: each text message from the page
/// must be one JSON-RPC message or batch, checked here (anything else is answered `parseError` and
/// never reaches navd), and goes to navd as one line in navd's newline framing; each line from navd
/// goes to the page as a text message, until either side closes. With --read-only, requests for
/// methods that change something (as navd's own `rpc.discover` declares them) are answered here
/// with navd's error shape (`accessDenied`, data.kind) and not sent on.
enum Relay {
    /// The largest message the page may send (the WebSocket's frames are allowed as large).
    static let maxMessage = 1 << 20

    /// Relays until either side closes; rethrows what ended the page's side (a message past
    /// ``maxMessage`` closes the WebSocket with 1009, message too big).
    static func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, settings: Settings) async throws {
        let pageEnded = Failed()
        let navd: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do { navd = try await NavdConnection.open(settings.socketPath) } catch {
            try? await outbound.write(.text(notice("navd is not reachable: \(error)")))
            return
        }
        let unchanging: Set<String>
        do { unchanging = settings.readOnly ? try await settings.methodsThatChangeNothing() : [] } catch {
            try? await outbound.write(.text(notice("cannot learn navd's methods (rpc.discover): \(error)")))
            return
        }
        try? await outbound.write(.text(hello(settings)))
        try? await navd.executeThenClose { fromNavd, toNavd in
            // The page acts with nav-web's uid: without --admin it gives up every role first (the
            // answer is nav-web's, not the page's: the first line navd sends).
            if !settings.admin {
                try await toNavd.write(ByteBuffer(string: #"{"jsonrpc":"2.0","id":"navweb-hello","method":"hello","params":{"client":"nav-web","keepRoles":[]}}"# + "\n"))
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var lines = LineSplitter()
                    var ownHello = !settings.admin
                    for try await chunk in fromNavd {
                        for line in lines.feed(chunk) {
                            if ownHello {
                                ownHello = false
                                if line.contains("\"error\"") { try await outbound.write(.text(notice("navd refused nav-web's hello: \(line)"))) }
                                continue
                            }
                            try await outbound.write(.text(line))
                        }
                    }
                    try? await outbound.write(.text(notice("navd closed the connection")))
                }
                group.addTask {
                    do {
                        try await relayPage(inbound, outbound, toNavd, settings: settings, unchanging: unchanging)
                    } catch {
                        pageEnded.error = error
                        throw error
                    }
                }
                _ = try await group.next()
                group.cancelAll()
            }
        }
        if let e = pageEnded.error { throw e }
    }

    /// The page's messages to navd (those nav-web does not answer itself).
    private static func relayPage(_ inbound: WebSocketInboundStream, _ outbound: WebSocketOutboundWriter,
                                  _ toNavd: NIOAsyncChannelOutboundWriter<ByteBuffer>, settings: Settings, unchanging: Set<String>) async throws {
        for try await message in inbound.messages(maxSize: maxMessage) {
            guard case .text(let text) = message else { continue }
            guard let line = try await relayedLine(text, readOnly: settings.readOnly, unchanging: unchanging, answer: { reply in
                try await outbound.write(.text(reply))
            }) else { continue }
            try await toNavd.write(ByteBuffer(string: line))
        }
    }

    /// What nav-web tells the page first: whether it relays only what changes nothing.
    static func hello(_ settings: Settings) -> String {
        let body: [String: Any] = ["jsonrpc": "2.0", "method": "navweb.hello", "params": ["readOnly": settings.readOnly]]
        return String(decoding: (try? JSONSerialization.data(withJSONObject: body)) ?? Data(), as: UTF8.self)
    }

    /// A message nav-web itself tells the page (a JSON-RPC notification of its own).
    static func notice(_ message: String) -> String {
        let body: [String: Any] = ["jsonrpc": "2.0", "method": "navweb.notice", "params": ["message": message]]
        return String(decoding: (try? JSONSerialization.data(withJSONObject: body)) ?? Data(), as: UTF8.self)
    }

    /// The line navd gets for a page's message, or nil when nav-web answered it itself (`answer`):
    /// every message is parsed here first, and one that is not a JSON object (a request) or array
    /// (a batch) is answered `parseError` and never reaches navd (so navd, which reads one line per
    /// message, never sees another framing such as a Content-Length header or half a message).
    /// The page's own text goes on as one line (navd's parser reads it as written). With
    /// --read-only the message is refused unless every method in it changes nothing, and relayed
    /// as nav-web wrote it again, so that navd reads exactly what was checked.
    static func relayedLine(_ text: String, readOnly: Bool, unchanging: Set<String>,
                            answer: (String) async throws -> Void) async throws -> String? {
        let body = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let parsed: Any
        do {
            guard body.hasPrefix("{") || body.hasPrefix("[") else { throw NotAMessage() }
            parsed = try JSONSerialization.jsonObject(with: Data(body.utf8))
            guard parsed is [String: Any] || parsed is [Any] else { throw NotAMessage() }
        } catch {
            try await answer(parseError(text, invalid: error as NSError, body: body))
            return nil
        }
        guard readOnly else {
            // A raw newline in JSON is only whitespace: the line is the message.
            return body.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\r", with: " ") + "\n"
        }
        guard let again = try? JSONSerialization.data(withJSONObject: parsed) else {
            try await answer(parseError(text))
            return nil
        }
        if let refusal = refusal(parsed, unchanging: unchanging) {
            try await answer(refusal)
            return nil
        }
        return String(decoding: again, as: UTF8.self) + "\n"
    }

    struct NotAMessage: Error {}

    /// The answer to a WebSocket message that is not one JSON-RPC message or batch (JSON-RPC's
    /// parseError, as navd gives it: where the JSON went wrong, when it is JSON that did).
    static func parseError(_ text: String, invalid: NSError? = nil, body: String = "") -> String {
        var data: [String: Any] = ["kind": "parseError"]
        var why = "it is not an object or an array"
        if let reason = invalid?.userInfo[NSDebugDescriptionErrorKey] as? String {
            why = reason
            // "… around character N." (an offset from 0): as line and column, as navd says them.
            if let r = reason.range(of: "character "), let offset = Int(reason[r.upperBound...].prefix { $0.isNumber }) {
                let before = body.utf8.prefix(offset)
                let line = before.filter { $0 == 0x0A }.count + 1
                let column = before.count - (before.lastIndex(of: 0x0A).map { before.distance(from: before.startIndex, to: $0) + 1 } ?? 0) + 1
                data["offset"] = offset
                data["line"] = line
                data["column"] = column
                why = "invalid JSON at line \(line), column \(column)"
            }
        }
        let error: [String: Any] = [
            "code": -32700,
            "message": "nav-web relays one JSON-RPC message (an object) or batch (an array) per WebSocket message, as JSON; "
                + "this one (\(text.utf8.count) bytes) is not (\(why)): send one request such as {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
            "data": data,
        ]
        let reply: [String: Any] = ["jsonrpc": "2.0", "id": NSNull(), "error": error]
        return String(decoding: (try? JSONSerialization.data(withJSONObject: reply)) ?? Data(), as: UTF8.self)
    }

    /// With --read-only: the error reply for a request that would change something (nil: relay it),
    /// `unchanging` the methods navd declares as changing nothing. A batch is refused whole when any
    /// of its requests would.
    static func refusal(_ parsed: Any, unchanging: Set<String>) -> String? {
        let requests = (parsed as? [Any]) ?? [parsed]
        for case let r as [String: Any] in requests {
            guard let method = r["method"] as? String, !unchanging.contains(method) else { continue }
            let error: [String: Any] = [
                "code": -32004,
                "message": "nav-web runs with --read-only: `\(method)` would change navd, and only methods navd declares as changing nothing are relayed "
                    + "(\(unchanging.sorted().joined(separator: ", "))); start nav-web without --read-only to drive navd",
                "data": ["kind": "accessDenied", "method": method],
            ]
            let reply: [String: Any] = ["jsonrpc": "2.0", "id": r["id"] ?? NSNull(), "error": error]
            return String(decoding: (try? JSONSerialization.data(withJSONObject: reply)) ?? Data(), as: UTF8.self)
        }
        return nil
    }
}

/// What ended the page's side of a relay, handed from its task to the relay once the task is done.
private final class Failed: @unchecked Sendable {
    var error: (any Error)?
}
