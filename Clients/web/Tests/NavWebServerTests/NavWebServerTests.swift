import Foundation
import Hummingbird
import Logging
import NIOCore
import Testing

@testable import NavWebServer

#if canImport(Glibc)
import Glibc
#endif

/// nav-web's server, run in this process and spoken to over raw sockets (`RawClients.swift`),
/// against a real navd (the repository's debug build, or `$NAVD_BIN`): access checks, /healthz,
/// /metrics and the WebSocket relay. The page itself is tested in Chromium (Clients/web/tests).
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

    /// `body` given the port of nav-web's server, serving `settings` on 127.0.0.1 in this process;
    /// the server stops when it returns.
    func serving(_ settings: Settings, _ body: (Int) async throws -> Void) async throws {
        var logger = Logger(label: "nav-web-test")
        logger.logLevel = .critical
        let (ports, listening) = AsyncStream<Int>.makeStream()
        let app = NavWeb.application(settings, port: 0, logger: logger) { listening.yield($0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            var next = ports.makeAsyncIterator()
            let port = try #require(await next.next())
            defer { group.cancelAll() }
            try await body(port)
        }
    }

    /// A GET as a browser addresses it: `Host: localhost:PORT`.
    func get(_ port: Int, _ path: String, host: String? = nil, headers: [String] = []) async throws -> HTTPResponse {
        let request = (["GET \(path) HTTP/1.1", "Host: \(host ?? "localhost:\(port)")", "Connection: close"] + headers)
            .joined(separator: "\r\n") + "\r\n\r\n"
        return try await offThePool { try HTTPResponse(port: port, request: request) }
    }

    static func bearer(_ token: String = token) -> [String] { ["Authorization: Bearer " + token] }

    @Test func everyRequestButHealthzNeedsTheTokenAndThisServersHost() async throws {
        let navd = try Navd()
        try await serving(settings(navd.socket)) { port in
            #expect(try await get(port, "/").status == 401)
            #expect(try await get(port, "/", headers: Self.bearer("0123456789abcdef0123456789abcdee")).status == 401)
            let first = try await get(port, "/?token=" + Self.token)
            #expect(first.status == 200)
            #expect(first.header("set-cookie")?.contains("navweb_token=\(Self.token); Path=/; HttpOnly; SameSite=Strict") == true)
            #expect(try await get(port, "/app.js", headers: ["Cookie: navweb_token=" + Self.token]).status == 200)
            // A page of another site whose name resolves here (DNS rebinding) is refused, token or not.
            let rebound = try await get(port, "/metrics", host: "evil.example:\(port)", headers: Self.bearer())
            #expect(rebound.status == 403 && rebound.body.contains("Host header"))
            let health = try await get(port, "/healthz")
            #expect(health.status == 200 && health.body == "ok\n")
        }
    }

    @Test func healthzSaysWhenNavdDoesNotAnswer() async throws {
        try await serving(settings("/nonexistent/navd.sock")) { port in
            let r = try await get(port, "/healthz")
            #expect(r.status == 503 && r.body.contains("/nonexistent/navd.sock"), "\(r.body)")
        }
    }

    /// /metrics is navd's `stats` as Prometheus reads it, with each method's counts and latency
    /// histogram (`navd_request_duration_seconds`).
    @Test func metricsHaveRequestsErrorsAndLatencyByMethod() async throws {
        let navd = try Navd()
        for _ in 0..<3 { _ = try await NavdConnection.call(navd.socket, method: "ping") }
        _ = try? await NavdConnection.call(navd.socket, method: "navigate", params: ["to": "nowhere.Nothing"])
        try await serving(settings(navd.socket)) { port in
            let r = try await get(port, "/metrics", headers: Self.bearer())
            #expect(r.status == 200)
            let text = r.body
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
        try await serving(settings(navd.socket, readOnly: true)) { port in
            let ws = try await offThePool { try RawWebSocket(port: port, headers: ["Origin: http://localhost:\(port)", "Cookie: navweb_token=" + Self.token]) }
            let lines = try await offThePool {
                try ws.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
                try ws.send("Content-Length: 64\r")
                try ws.send(#"{"jsonrpc":"2.0","id":2,"method":"navigate","params":{"to":"cart.Cart"}}"#)
                return try (0..<4).map { _ in try ws.receive() }
            }
            #expect(lines.first?.contains(#""navweb.hello""#) == true && lines.first?.contains(#""readOnly":true"#) == true, "\(lines)")
            #expect(lines.contains(#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#), "\(lines)")
            #expect(lines.contains { $0.contains("-32700") }, "the header is answered by nav-web: \(lines)")
            #expect(lines.contains { $0.contains("accessDenied") && $0.contains(#""id":2"#) }, "\(lines)")
            // Past the documented 1 MiB a message closes the WebSocket with 1009 (message too big).
            // The server closes as soon as it reads the frame's length: the rest of the frame, when
            // the kernel has not taken it all yet, meets a reset, and the close frame is still read.
            let code = try await offThePool {
                try ws.send(String(repeating: " ", count: Relay.maxMessage + 1), untilClosed: true)
                return try ws.closeCode()
            }
            #expect(code == 1009)
            // From another site's page (its Origin), the upgrade is refused.
            let refused = try await offThePool {
                do { _ = try RawWebSocket(port: port, headers: ["Origin: http://evil.example", "Cookie: navweb_token=" + Self.token]); return false } catch { return true }
            }
            #expect(refused)
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
