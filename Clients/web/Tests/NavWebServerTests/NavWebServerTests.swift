import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import NavWebServer

#if canImport(Glibc)
import Glibc
#endif

/// nav-web's server through HummingbirdTesting, against a real navd (the repository's debug build,
/// or `$NAVD_BIN`): access checks, /healthz, /metrics and the WebSocket relay. The page itself is
/// tested in Chromium (Clients/web/tests).
@Suite struct NavWebServerTests {
    static let token = "0123456789abcdef0123456789abcdef"

    /// A navd serving its embedded example on a socket of its own, stopped when the test ends.
    final class Navd {
        let dir: String
        let socket: String
        let process = Process()

        init() throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let binary = ProcessInfo.processInfo.environment["NAVD_BIN"] ?? root.appendingPathComponent(".build/debug/navd").path
            dir = NSTemporaryDirectory() + "navweb-test-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            socket = dir + "/navd.sock"
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["--socket", socket, "--ephemeral", "--log-level", "error"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // navd prints nothing when it listens: the socket appearing is the event.
            let deadline = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: socket) {
                guard process.isRunning, Date() < deadline else { throw NavdConnection.Failure(description: "navd (\(binary)) did not start") }
                usleep(10_000)
            }
        }

        deinit {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    func settings(_ socket: String, readOnly: Bool = false) -> Settings {
        Settings(socketPath: socket, token: Self.token, readOnly: readOnly, admin: false, host: "127.0.0.1",
                 picture: GraphPicture(socketPath: socket, navd: "/nonexistent", graph: nil))
    }

    func app(_ settings: Settings) -> some ApplicationProtocol {
        var logger = Logger(label: "nav-web-test")
        logger.logLevel = .critical
        return NavWeb.application(settings, port: 0, logger: logger) { _ in }
    }

    /// A request as a browser addresses it: `Host: localhost:PORT`.
    func get(_ client: some TestClientProtocol, _ path: String, host: String? = nil, headers: HTTPFields = [:]) async throws -> TestClient.Response {
        let port = try #require(client.port)
        let c = TestClient(host: "localhost", port: port, configuration: .init(timeout: .seconds(20)))
        c.connect()
        defer { Task { try? await c.shutdown() } }
        return try await c.execute(.init(path, method: .get, authority: host ?? "localhost:\(port)", headers: headers))
    }

    static func bearer(_ token: String = token) -> HTTPFields { [.authorization: "Bearer " + token] }

    func body(_ r: TestClient.Response) -> String { r.body.map { String(buffer: $0) } ?? "" }

    @Test func everyRequestButHealthzNeedsTheTokenAndThisServersHost() async throws {
        let navd = try Navd()
        try await app(settings(navd.socket)).test(.live) { client in
            #expect(try await get(client, "/").status == .unauthorized)
            #expect(try await get(client, "/", headers: Self.bearer("0123456789abcdef0123456789abcdee")).status == .unauthorized)
            let first = try await get(client, "/?token=" + Self.token)
            #expect(first.status == .ok)
            #expect(first.headers[.setCookie]?.contains("navweb_token=\(Self.token); Path=/; HttpOnly; SameSite=Strict") == true)
            #expect(try await get(client, "/app.js", headers: [.cookie: "navweb_token=" + Self.token]).status == .ok)
            // A page of another site whose name resolves here (DNS rebinding) is refused, token or not.
            let rebound = try await get(client, "/metrics", host: "evil.example:\(client.port ?? 0)", headers: Self.bearer())
            #expect(rebound.status == .forbidden && body(rebound).contains("Host header"))
            let health = try await get(client, "/healthz")
            #expect(health.status == .ok && body(health) == "ok\n")
        }
    }

    @Test func healthzSaysWhenNavdDoesNotAnswer() async throws {
        try await app(settings("/nonexistent/navd.sock")).test(.live) { client in
            let r = try await get(client, "/healthz")
            #expect(r.status == .serviceUnavailable && body(r).contains("/nonexistent/navd.sock"), "\(body(r))")
        }
    }

    /// /metrics is navd's `stats` as Prometheus reads it, with each method's counts and latency
    /// histogram (`navd_request_duration_seconds`).
    @Test func metricsHaveRequestsErrorsAndLatencyByMethod() async throws {
        let navd = try Navd()
        for _ in 0..<3 { _ = try await NavdConnection.call(navd.socket, method: "ping") }
        _ = try? await NavdConnection.call(navd.socket, method: "navigate", params: ["to": "nowhere.Nothing"])
        try await app(settings(navd.socket)).test(.live) { client in
            let r = try await get(client, "/metrics", headers: Self.bearer())
            #expect(r.status == .ok)
            let text = body(r)
            #expect(text.contains("# TYPE navd_request_duration_seconds histogram"))
            #expect(text.contains(#"navd_method_requests_total{method="ping"} 3"#), "\(text)")
            #expect(text.contains(#"navd_method_errors_total{method="navigate"} 1"#))
            #expect(text.contains(#"navd_request_duration_seconds_bucket{method="ping",le="+Inf"} 3"#))
            #expect(text.contains(#"navd_request_duration_seconds_count{method="ping"} 3"#))
            // Cumulative: each bucket holds at least the one before.
            let ping = text.split(separator: "\n").filter { $0.hasPrefix(#"navd_request_duration_seconds_bucket{method="ping""#) }
            let counts = ping.compactMap { Int($0.split(separator: " ").last ?? "") }
            #expect(counts.count == 22 && counts == counts.sorted(), "\(ping)")
        }
    }

    @Test func metricsEscapeLabelValues() {
        #expect(Metrics.label("a\"b\\c\nd") == #"a\"b\\c\nd"#)
        let text = Metrics.text(["methods": ["we\"ird": ["requests": 1, "errors": 0, "latency": [
            "count": 1, "sumSeconds": 0.5, "buckets": [["le": 0.25, "count": 0], ["le": "+Inf", "count": 1]],
        ]]]])
        #expect(text.contains(#"navd_request_duration_seconds_bucket{method="we\"ird",le="0.25"} 0"#), "\(text)")
        #expect(text.contains(#"navd_request_duration_seconds_sum{method="we\"ird"} 0.5"#))
    }

    /// The relay speaks one framing: a message that is not a JSON-RPC object or batch never reaches
    /// navd; with --read-only only what navd declares as changing nothing goes on.
    @Test func relayedLinesAreOneMessageEach() async throws {
        var answers: [String] = []
        let header = try await Relay.relayedLine("Content-Length: 117\r", readOnly: false, unchanging: []) { answers.append($0) }
        #expect(header == nil && answers.last?.contains(#""code":-32700"#) == true)
        let split = try await Relay.relayedLine("{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"ping\"}", readOnly: false, unchanging: []) { answers.append($0) }
        #expect(split == "{\"jsonrpc\":\"2.0\", \"id\":1,\"method\":\"ping\"}\n")
        let refused = try await Relay.relayedLine(#"[{"jsonrpc":"2.0","id":1,"method":"tree"},{"jsonrpc":"2.0","id":2,"method":"navigate"}]"#,
                                                  readOnly: true, unchanging: ["tree"]) { answers.append($0) }
        #expect(refused == nil && answers.last?.contains("accessDenied") == true && answers.last?.contains("`navigate`") == true)
        for readOnly in [true, false] {
            // Half a message (the rest would follow in the next WebSocket message) never reaches navd.
            answers = []
            let cut = try await Relay.relayedLine(#"{"jsonrpc":"2.0","id":7,"#, readOnly: readOnly, unchanging: ["tree"]) { answers.append($0) }
            #expect(cut == nil && answers.last?.contains(#""code":-32700"#) == true)
            let trailing = try await Relay.relayedLine(#"{"id":1} Content-Length: 5"#, readOnly: readOnly, unchanging: ["tree"]) { answers.append($0) }
            #expect(trailing == nil && answers.count == 2)
        }
        let tree = try await Relay.relayedLine(#"{"jsonrpc":"2.0","id":3,"method":"tree"}"#, readOnly: true, unchanging: ["tree"]) { answers.append($0) }
        #expect(tree?.hasSuffix("\n") == true && tree?.contains(#""method":"tree""#) == true)
    }

    /// Through a real WebSocket, as a browser opens it (its Origin is this server's page): nav-web's
    /// hello, navd's answer, a framing attack and a change refused by nav-web under --read-only.
    @Test func theWebSocketRelaysToNavd() async throws {
        let navd = try Navd()
        try await app(settings(navd.socket, readOnly: true)).test(.live) { client in
            let port = try #require(client.port)
            let ws = try RawWebSocket(port: port, headers: ["Origin: http://localhost:\(port)", "Cookie: navweb_token=" + Self.token])
            try ws.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            try ws.send("Content-Length: 64\r")
            try ws.send(#"{"jsonrpc":"2.0","id":2,"method":"navigate","params":{"to":"cart.Cart"}}"#)
            let lines = try (0..<4).map { _ in try ws.receive() }
            #expect(lines.first?.contains(#""navweb.hello""#) == true && lines.first?.contains(#""readOnly":true"#) == true, "\(lines)")
            #expect(lines.contains(#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#), "\(lines)")
            #expect(lines.contains { $0.contains("-32700") }, "the header is answered by nav-web: \(lines)")
            #expect(lines.contains { $0.contains("accessDenied") && $0.contains(#""id":2"#) }, "\(lines)")
            // Past the documented 1 MiB a message closes the WebSocket with 1009 (message too big).
            // The server closes as soon as it reads the frame's length: the rest of the frame, when
            // the kernel has not taken it all yet, meets a reset, and the close frame is still read.
            try ws.send(String(repeating: " ", count: Relay.maxMessage + 1), untilClosed: true)
            #expect(try ws.closeCode() == 1009)
            // From another site's page (its Origin), the upgrade is refused.
            #expect(throws: (any Error).self) {
                try RawWebSocket(port: port, headers: ["Origin: http://evil.example", "Cookie: navweb_token=" + Self.token])
            }
        }
        // navd's main session is where it started: nothing that changes reached it.
        let tree = try await NavdConnection.call(navd.socket, method: "tree") as? [String: Any]
        #expect(tree?["version"] as? Int == 0)
    }

    @Test func theTokenFileIsMadePrivateAndRefusedWhenOthersMayReadIt() throws {
        let dir = NSTemporaryDirectory() + "navweb-token-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let made = try Token.fromFile(dir + "/token")
        #expect(made.count == 64)
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/token")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try Token.fromFile(dir + "/token") == made, "read back the same")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: dir + "/token")
        #expect(throws: (any Error).self) { try Token.fromFile(dir + "/token") }
        #expect(throws: (any Error).self) { try NavWeb.parse(["--token", Self.token]).validate() }
    }
}

/// A WebSocket client written from RFC 6455 over a blocking TCP socket, so that the test sends the
/// exact headers a browser sends (Hummingbird's client sets an Origin of its own).
final class RawWebSocket {
    struct Refused: Error { let response: String }
    let fd: Int32
    private var input: [UInt8] = []

    init(port: Int, headers: [String]) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var tv = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        // A small send buffer: a frame the server refuses part way is always cut by its reset, as
        // on a loaded machine, rather than only when the kernel cannot take the whole frame at once.
        var sendBuffer: Int32 = 16_384
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(fd); throw Refused(response: "connect: \(errno)") }
        let request = (["GET /ws HTTP/1.1", "Host: localhost:\(port)", "Upgrade: websocket", "Connection: Upgrade",
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"] + headers)
            .joined(separator: "\r\n") + "\r\n\r\n"
        try write(Array(request.utf8))
        var head = ""
        while !head.hasSuffix("\r\n\r\n") {
            guard let b = try byte() else { break }
            head.append(Character(UnicodeScalar(b)))
        }
        guard head.hasPrefix("HTTP/1.1 101") else { close(fd); throw Refused(response: head) }
    }

    deinit { close(fd) }

    /// Writes every byte; with `untilClosed`, a connection the server resets or closes ends the write
    /// without an error (the server may answer a frame before reading all of it).
    private func write(_ bytes: [UInt8], untilClosed: Bool = false) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 && untilClosed && (errno == ECONNRESET || errno == EPIPE) { return }
            guard n > 0 else { throw Refused(response: "send: \(errno)") }
            sent += n
        }
    }

    private func byte() throws -> UInt8? {
        if input.isEmpty {
            var buf = [UInt8](repeating: 0, count: 65_536)
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return nil }
            input = Array(buf[0..<n].reversed())
        }
        return input.popLast()
    }

    private func bytes(_ n: Int) throws -> [UInt8] {
        try (0..<n).map { _ in guard let b = try byte() else { throw Refused(response: "connection closed") }; return b }
    }

    /// Sends one masked text frame (a client's frames are masked); `untilClosed` as in ``write(_:untilClosed:)``.
    func send(_ text: String, untilClosed: Bool = false) throws {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65_536 {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
        try write(frame, untilClosed: untilClosed)
    }

    /// The next frame: its opcode and payload.
    private func frame() throws -> (opcode: UInt8, payload: [UInt8]) {
        let h = try bytes(2)
        var length = Int(h[1] & 0x7F)
        if length == 126 { length = try bytes(2).reduce(0) { $0 << 8 | Int($1) } }
        if length == 127 { length = try bytes(8).reduce(0) { $0 << 8 | Int($1) } }
        return (h[0] & 0x0F, try bytes(length))
    }

    /// The next text message.
    func receive() throws -> String {
        while true {
            let f = try frame()
            if f.opcode == 1 { return String(decoding: f.payload, as: UTF8.self) }
            if f.opcode == 8 { throw Refused(response: "closed") }
        }
    }

    /// The code of the close frame the server sends next (text messages before it are skipped).
    func closeCode() throws -> Int {
        while true {
            let f = try frame()
            if f.opcode == 8 { return f.payload.count >= 2 ? Int(f.payload[0]) << 8 | Int(f.payload[1]) : 1005 }
        }
    }
}
