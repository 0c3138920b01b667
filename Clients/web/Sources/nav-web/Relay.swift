import Foundation
import HummingbirdWebSocket
import NIOCore

/// One page's WebSocket relayed to a navd connection of its own: each text message from the page
/// goes to navd as a line, each line from navd to the page as a text message, until either side
/// closes. With --read-only, requests for methods that change something are answered here with
/// navd's error shape (`accessDenied`, data.kind) and not sent on.
enum Relay {
    /// Methods that change nothing (what --read-only relays).
    static let readOnlyMethods: Set<String> = [
        "hello", "ping", "tree", "subscribe", "unsubscribe", "session.list", "graph.describe", "context.get",
        "link.resolve", "stats", "rpc.discover",
    ]
    /// The largest message the page may send.
    static let maxMessage = 1 << 20

    static func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, settings: Settings) async {
        let navd: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do { navd = try await NavdConnection.open(settings.socketPath) } catch {
            try? await outbound.write(.text(notice("navd is not reachable: \(error)")))
            return
        }
        try? await outbound.write(.text(hello(settings)))
        try? await navd.executeThenClose { fromNavd, toNavd in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var lines = LineSplitter()
                    for try await chunk in fromNavd {
                        for line in lines.feed(chunk) { try await outbound.write(.text(line)) }
                    }
                    try? await outbound.write(.text(notice("navd closed the connection")))
                }
                group.addTask {
                    for try await message in inbound.messages(maxSize: maxMessage) {
                        guard case .text(let text) = message else { continue }
                        if settings.readOnly, let refusal = refusal(text) {
                            try await outbound.write(.text(refusal))
                            continue
                        }
                        try await toNavd.write(ByteBuffer(string: text.replacingOccurrences(of: "\n", with: " ") + "\n"))
                    }
                }
                _ = try await group.next()
                group.cancelAll()
            }
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

    /// With --read-only: the error reply for a request that would change something (nil: relay it).
    /// A batch is refused whole when any of its requests would.
    static func refusal(_ text: String) -> String? {
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else { return nil }  // navd says what is wrong
        let requests = (parsed as? [Any]) ?? [parsed]
        for case let r as [String: Any] in requests {
            guard let method = r["method"] as? String, !readOnlyMethods.contains(method) else { continue }
            let error: [String: Any] = [
                "code": -32004,
                "message": "nav-web runs with --read-only: `\(method)` would change navd, and only methods that change nothing are relayed "
                    + "(\(readOnlyMethods.sorted().joined(separator: ", "))); start nav-web without --read-only to drive navd",
                "data": ["kind": "accessDenied", "method": method],
            ]
            let reply: [String: Any] = ["jsonrpc": "2.0", "id": r["id"] ?? NSNull(), "error": error]
            return String(decoding: (try? JSONSerialization.data(withJSONObject: reply)) ?? Data(), as: UTF8.self)
        }
        return nil
    }
}
