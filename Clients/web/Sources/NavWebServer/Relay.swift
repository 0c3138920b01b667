import Foundation
import UV
import Unchecked

/// One page's WebSocket relayed to a navd connection of its own: each text message from the page
/// must be one JSON-RPC message or batch, checked here (anything else is answered `parseError` and
/// never reaches navd), and goes to navd as one line in navd's newline framing; each line from navd
/// goes to the page as a text message, until either side closes. With --read-only, requests for
/// methods that change something (as navd's own `rpc.discover` declares them) are answered here
/// with navd's error shape (`accessDenied`, data.kind) and not sent on.
enum Relay {
    /// The largest message the page may send (the WebSocket's frames are allowed as large).
    static let maxMessage = 1 << 20
    /// The most bytes waiting to be sent either way (to the page, to navd) before the relay stops
    /// reading from the other side until they are taken.
    static let maxQueued = 4 << 20

    /// What nav-web tells the page first: whether it relays only what changes nothing.
    static func hello(_ settings: Settings) -> String {
        json(["jsonrpc": "2.0", "method": "navweb.hello", "params": ["readOnly": settings.readOnly]])
    }

    /// A message nav-web itself tells the page (a JSON-RPC notification of its own).
    static func notice(_ message: String) -> String {
        json(["jsonrpc": "2.0", "method": "navweb.notice", "params": ["message": message]])
    }

    /// A message nav-web writes itself, as JSON text.
    static func json(_ object: [String: Any]) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object)) ?? Data(), as: UTF8.self)
    }

    /// The line navd gets for a page's message, or nil when nav-web answered it itself (`answer`):
    /// every message is parsed here first, and one that is not a JSON object (a request) or array
    /// (a batch) is answered `parseError` and never reaches navd (so navd, which reads one line per
    /// message, never sees another framing such as a Content-Length header or half a message).
    /// The page's own text goes on as one line (navd's parser reads it as written). With
    /// --read-only the message is refused unless every method in it changes nothing, and relayed
    /// as nav-web wrote it again, so that navd reads exactly what was checked.
    static func relayedLine(_ text: String, readOnly: Bool, unchanging: Set<String>, answer: (String) -> Void) -> String? {
        let body = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let parsed: Any
        do {
            guard body.hasPrefix("{") || body.hasPrefix("[") else { throw NotAMessage() }
            parsed = try JSONSerialization.jsonObject(with: Data(body.utf8))
            guard parsed is [String: Any] || parsed is [Any] else { throw NotAMessage() }
        } catch {
            answer(parseError(text, invalid: error as NSError, body: body))
            return nil
        }
        guard readOnly else {
            // A raw newline in JSON is only whitespace: the line is the message.
            return body.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\r", with: " ") + "\n"
        }
        guard let again = try? JSONSerialization.data(withJSONObject: parsed) else {
            answer(parseError(text))
            return nil
        }
        if let refusal = refusal(parsed, unchanging: unchanging) {
            answer(refusal)
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
        return errorReply(code: -32700, message: "nav-web relays one JSON-RPC message (an object) or batch (an array) per WebSocket message, as JSON; "
                          + "this one (\(text.utf8.count) bytes) is not (\(why)): send one request such as {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
                          data: data)
    }

    /// The answer to a binary WebSocket message: JSON-RPC travels as text.
    static func binaryRefusal(_ count: Int) -> String {
        errorReply(code: -32700, message: "nav-web relays JSON-RPC in text WebSocket messages; this one is binary (\(count) bytes) and was not relayed: "
                   + "send one request such as {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} as text",
                   data: ["kind": "parseError"])
    }

    /// A JSON-RPC error reply nav-web gives itself, in navd's shape (`data.kind`).
    static func errorReply(id: Any = NSNull(), code: Int, message: String, data: [String: Any]) -> String {
        json(["jsonrpc": "2.0", "id": id, "error": ["code": code, "message": message, "data": data] as [String: Any]])
    }

    /// With --read-only: the error reply for a request that would change something (nil: relay it),
    /// `unchanging` the methods navd declares as changing nothing. A batch is refused whole when any
    /// of its requests would.
    static func refusal(_ parsed: Any, unchanging: Set<String>) -> String? {
        let requests = (parsed as? [Any]) ?? [parsed]
        for case let r as [String: Any] in requests {
            guard let method = r["method"] as? String, !unchanging.contains(method) else { continue }
            return errorReply(id: r["id"] ?? NSNull(), code: -32004,
                              message: "nav-web runs with --read-only: `\(method)` would change navd, and only methods navd declares as changing nothing are relayed "
                                  + "(\(unchanging.sorted().joined(separator: ", "))); start nav-web without --read-only to drive navd",
                              data: ["kind": "accessDenied", "method": method])
        }
        return nil
    }
}

/// A page's relay (see ``Relay``): reads the page's frames once navd is connected (and, with
/// --read-only, its methods are known), writes navd's lines to the page as text messages, and
/// stops reading from one side while the other has more than ``Relay/maxQueued`` bytes waiting.
final class PageRelay {
    private unowned let connection: HTTPConnection
    private let settings: Settings
    private let loop: EventLoop
    private var reader = WebSocketReader(maxMessage: Relay.maxMessage)
    private var navd: PipeStream?
    private var fromNavd = LineSplitter()
    /// The answer to nav-web's own hello (without --admin) is the first line navd sends.
    private var ownHello: Bool
    private var ready = false
    private var unchanging: Set<String> = []
    /// What the page sent before the relay was ready (the rest waits unread in the kernel).
    private var early: [UInt8] = []
    private var closeSent = false
    private var ended = false

    init(connection: HTTPConnection, settings: Settings, loop: EventLoop) {
        self.connection = connection
        self.settings = settings
        self.loop = loop
        ownHello = !settings.admin
    }

    func start(leftover: [UInt8]) {
        early = leftover
        connection.stream.pauseReading()
        navd = PipeStream.connect(loop: loop, path: settings.socketPath) { [weak self] stream, error in
            guard let self, !self.ended else { return stream.close() }
            if let error {
                self.sendText(Relay.notice("navd is not reachable: cannot connect to navd at \(self.settings.socketPath) (\(error.message)): "
                                           + "is navd running? (make run, or --socket PATH)"))
                return self.close(code: 1011, reason: "navd is not reachable")
            }
            guard self.settings.readOnly else { return self.begin(stream) }
            self.settings.methodsThatChangeNothing(loop: self.loop) { [weak self] result in
                guard let self, !self.ended else { return }
                switch result {
                case .success(let names):
                    self.unchanging = names
                    self.begin(stream)
                case .failure(let e):
                    self.sendText(Relay.notice("cannot learn navd's methods (rpc.discover): \(e)"))
                    self.close(code: 1011, reason: "cannot learn navd's methods")
                }
            }
        }
    }

    private func begin(_ navd: PipeStream) {
        sendText(Relay.hello(settings))
        // The page acts with nav-web's uid: without --admin it gives up every role first.
        if !settings.admin {
            navd.write(Array((#"{"jsonrpc":"2.0","id":"navweb-hello","method":"hello","params":{"client":"nav-web","keepRoles":[]}}"# + "\n").utf8))
        }
        navd.startReading { [unowned self] event in
            switch event {
            case .data(let bytes):
                self.fromNavd.forEachLine(bytes.raw) { line in self.navdLine(line) }
                self.updateReading()
            case .end, .error:
                self.sendText(Relay.notice("navd closed the connection"))
                self.close(code: 1000, reason: "navd closed the connection")
            }
        }
        navd.onDrain = { [unowned self] in self.updateReading() }
        connection.stream.onDrain = { [unowned self] in self.updateReading() }
        ready = true
        updateReading()
        if !early.isEmpty {
            let bytes = early
            early = []
            fromPage(bytes)
        }
    }

    private func navdLine(_ line: ArraySlice<UInt8>) {
        guard !ended else { return }
        if ownHello {
            ownHello = false
            let text = String(decoding: line, as: UTF8.self)
            if text.contains("\"error\"") { sendText(Relay.notice("navd refused nav-web's hello: \(text)")) }
            return
        }
        let head = WebSocket.frameHead(.text, count: line.count)
        head.withUnsafeBytes { h in line.withUnsafeBytes { l in connection.stream.write(ByteView(h), ByteView(l)) } }
    }

    /// Bytes from the page.
    func fromPage(_ bytes: some Collection<UInt8>) {
        if closeSent {
            // Only the page's answer to the close frame is awaited: then the connection closes.
            for event in reader.feed(bytes) {
                switch event {
                case .close, .fail: return connection.close()
                default: continue
                }
            }
            return
        }
        guard !ended else { return }
        guard ready else {
            early.append(contentsOf: bytes)
            if early.count > Relay.maxMessage + 14 { close(code: 1009, reason: "a message may take at most \(Relay.maxMessage) bytes") }
            return
        }
        for event in reader.feed(bytes) {
            guard !ended else { return }
            switch event {
            case .text(let text):
                guard let line = Relay.relayedLine(text, readOnly: settings.readOnly, unchanging: unchanging, answer: { self.sendText($0) }),
                      let navd else { continue }
                navd.write(Array(line.utf8))
            case .binary(let count):
                sendText(Relay.binaryRefusal(count))
            case .ping(let payload):
                connection.stream.write(WebSocket.frame(.pong, payload))
            case .pong:
                break
            case .close(let code):
                // Answered with the same code (RFC 6455 5.5.1); the page then closes its side.
                if !closeSent {
                    closeSent = true
                    connection.stream.write(code.map { WebSocket.closeFrame($0) } ?? WebSocket.frame(.close, []))
                }
                end()
                connection.closeAfterWrites()
            case .fail(let code, let reason):
                close(code: code, reason: reason)
                connection.closeAfterWrites()
            }
        }
        updateReading()
    }

    private var navdPaused = false
    private var pagePaused = true

    /// Reads navd only while the page has at most ``Relay/maxQueued`` bytes waiting, and the page
    /// only while neither navd nor the page (pongs, nav-web's own answers) has more.
    private func updateReading() {
        guard ready, !ended, let navd else { return }
        let pageBacklog = connection.stream.queuedBytes > Relay.maxQueued
        let navdBacklog = navd.queuedBytes > Relay.maxQueued
        if !pageBacklog {
            connection.stalledSince = nil
        } else if connection.stalledSince == nil {
            connection.stalledSince = loop.now
        }
        if pageBacklog != navdPaused {
            navdPaused = pageBacklog
            if pageBacklog { navd.pauseReading() } else { navd.resumeReading() }
        }
        let holdPage = pageBacklog || navdBacklog
        if holdPage != pagePaused {
            pagePaused = holdPage
            if holdPage { connection.stream.pauseReading() } else { connection.stream.resumeReading() }
        }
    }

    /// Tells the page the WebSocket closes (`code`), stops relaying, and closes the connection
    /// when the page answers or after ``HTTPConnection/lingerMs``.
    func close(code: UInt16, reason: String) {
        guard !closeSent else { return }
        closeSent = true
        connection.stream.write(WebSocket.closeFrame(code, reason))
        end()
        connection.stream.resumeReading()
        connection.closeWithinLinger()
    }

    /// The page's connection is gone.
    func pageGone() {
        end()
    }

    /// Stops relaying: navd's connection closed.
    private func end() {
        guard !ended else { return }
        ended = true
        navd?.close()
        navd = nil
        connection.stream.onDrain = nil
    }

    private func sendText(_ text: String) {
        guard !closeSent else { return }
        connection.stream.write(WebSocket.frame(.text, Array(text.utf8)))
    }
}
