import Foundation
import NavTesting
import Testing
import UV

@testable import NavWebServer

#if canImport(Glibc)
import Glibc
#endif

/// nav-web (the repository's debug build, or `$NAVWEB_BIN`) spoken to over raw sockets
/// (`RawClients.swift`), against a real navd (NavTesting's `Daemon`, once it logs that it listens): access checks, /healthz, /metrics, the
/// WebSocket relay and HTTP as nav-web reads it. The page itself is tested in Chromium
/// (Clients/web/tests); the parsers alone in `ProtocolTests.swift`.
@Suite struct NavWebServerTests {
    static let token = "0123456789abcdef0123456789abcdef"

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A built executable: `$NAVD_BIN_DIR/name` (make test-asan's build), else the debug build's.
    static func executable(_ name: String) -> String {
        let env = ProcessInfo.processInfo.environment
        return env["NAVD_BIN_DIR"].map { $0 + "/" + name } ?? root.appendingPathComponent(".build/debug/" + name).path
    }

    /// `body` given the port of a nav-web relaying to navd at `socket` (with `arguments`), stopped
    /// (SIGTERM) when it returns; its exit status must be 0.
    func serving(_ socket: String, _ arguments: [String] = [], _ body: (Int) async throws -> Void) async throws {
        try await serving(socket, arguments) { port, _ in try await body(port) }
    }

    /// As ``serving(_:_:_:)``, `body` given nav-web's pid too.
    func serving(_ socket: String, _ arguments: [String] = [], _ body: (Int, Int32) async throws -> Void) async throws {
        let binary = ProcessInfo.processInfo.environment["NAVWEB_BIN"] ?? Self.executable("nav-web")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--socket", socket, "--port", "0", "--navd", "/nonexistent"] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["NAVWEB_TOKEN"] = Self.token
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        // The first line it prints names the URL, once it listens.
        let line = try await offThePool { () throws -> String in
            var bytes: [UInt8] = []
            while bytes.last != 0x0A {
                let b = out.fileHandleForReading.readData(ofLength: 1)
                guard let c = b.first else { throw SocketFailure(description: "nav-web (\(binary)) printed no URL") }
                bytes.append(c)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        let afterHost: Substring = line.split(separator: "127.0.0.1:").last ?? ""
        let port = try #require(Int(afterHost.split(separator: "/").first ?? ""), "\(line)")
        do {
            try await body(port, process.processIdentifier)
        } catch {
            process.terminate()
            process.waitUntilExit()
            throw error
        }
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
    }

    /// One call to navd at `socket` on a loop of its own: the reply's result.
    static func call(_ socket: String, _ method: String, _ params: [String: Any] = [:]) async throws -> Any {
        nonisolated(unsafe) let params = params
        let result = try await offThePool { () -> Result<SendableAny, NavdConnection.Failure> in
            let loop = EventLoop()
            var outcome: Result<Any, NavdConnection.Failure>?
            NavdConnection.call(loop: loop, socket, method: method, params: params) { outcome = $0 }
            loop.run()
            return outcome!.map { SendableAny(value: $0) }
        }
        return try result.get().value
    }

    /// A GET as a browser addresses it: `Host: localhost:PORT`.
    func get(_ port: Int, _ path: String, host: String? = nil, headers: [String] = []) async throws -> HTTPResponse {
        let request = (["GET \(path) HTTP/1.1", "Host: \(host ?? "localhost:\(port)")", "Connection: close"] + headers)
            .joined(separator: "\r\n") + "\r\n\r\n"
        return try await offThePool { try HTTPResponse(port: port, request: request) }
    }

    static func bearer(_ token: String = token) -> [String] { ["Authorization: Bearer " + token] }

    @Test func everyRequestButHealthzNeedsTheTokenAndThisServersHost() async throws {
        let navd = try Daemon()
        try await serving(navd.socketPath) { port in
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
        try await serving("/nonexistent/navd.sock") { port in
            let r = try await get(port, "/healthz")
            #expect(r.status == 503 && r.body.contains("/nonexistent/navd.sock"), "\(r.body)")
        }
    }

    /// /metrics is navd's `stats` as Prometheus reads it, with each method's counts and latency
    /// histogram (`navd_request_duration_seconds`).
    @Test func metricsHaveRequestsErrorsAndLatencyByMethod() async throws {
        let navd = try Daemon()
        for _ in 0..<3 { _ = try await Self.call(navd.socketPath, "ping") }
        _ = try? await Self.call(navd.socketPath, "navigate", ["to": "nowhere.Nothing"])
        try await serving(navd.socketPath) { port in
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
            // What navd holds, against its ceilings, and the clients it dropped for them.
            for gauge in ["navd_memory_rss_bytes", "navd_memory_data_bytes", "navd_memory_max_data_bytes", "navd_memory_input_bytes",
                          "navd_memory_max_input_bytes 268435456"] {
                #expect(text.contains("\n" + gauge), "\(gauge): \(text)")
            }
            #expect(text.contains("# TYPE navd_input_holders_dropped_total counter\nnavd_input_holders_dropped_total 0"), "\(text)")
            #expect(text.contains("navd_user_subscriptions{uid="), "\(text)")
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
    @Test func relayedLinesAreOneMessageEach() throws {
        var answers: [String] = []
        let header = Relay.relayedLine("Content-Length: 117\r", readOnly: false, unchanging: []) { answers.append($0) }
        #expect(header == nil && answers.last?.contains(#""code":-32700"#) == true)
        let split = Relay.relayedLine("{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"ping\"}", readOnly: false, unchanging: []) { answers.append($0) }
        #expect(split == "{\"jsonrpc\":\"2.0\", \"id\":1,\"method\":\"ping\"}\n")
        let refused = Relay.relayedLine(#"[{"jsonrpc":"2.0","id":1,"method":"tree"},{"jsonrpc":"2.0","id":2,"method":"navigate"}]"#,
                                                  readOnly: true, unchanging: ["tree"]) { answers.append($0) }
        #expect(refused == nil && answers.last?.contains("accessDenied") == true && answers.last?.contains("`navigate`") == true)
        for readOnly in [true, false] {
            // Half a message (the rest would follow in the next WebSocket message) never reaches navd.
            answers = []
            let cut = Relay.relayedLine(#"{"jsonrpc":"2.0","id":7,"#, readOnly: readOnly, unchanging: ["tree"]) { answers.append($0) }
            #expect(cut == nil && answers.last?.contains(#""code":-32700"#) == true)
            let trailing = Relay.relayedLine(#"{"id":1} Content-Length: 5"#, readOnly: readOnly, unchanging: ["tree"]) { answers.append($0) }
            #expect(trailing == nil && answers.count == 2)
        }
        let tree = Relay.relayedLine(#"{"jsonrpc":"2.0","id":3,"method":"tree"}"#, readOnly: true, unchanging: ["tree"]) { answers.append($0) }
        #expect(tree?.hasSuffix("\n") == true && tree?.contains(#""method":"tree""#) == true)
    }

    /// Through a real WebSocket, as a browser opens it (its Origin is this server's page): nav-web's
    /// hello, navd's answer, a framing attack and a change refused by nav-web under --read-only.
    @Test func theWebSocketRelaysToNavd() async throws {
        let navd = try Daemon()
        try await serving(navd.socketPath, ["--read-only"]) { port in
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
        let tree = try await Self.call(navd.socketPath, "tree") as? [String: Any]
        #expect(tree?["version"] as? Int == 0)
    }

    /// HTTP as nav-web speaks it: requests on one connection answered in order (pipelined ones too,
    /// each waiting for the one before, which may wait for navd), HEAD with the length and without
    /// the body, what is not served answered with its status; a head past the limit refused (431).
    @Test func requestsOnOneConnectionAreAnsweredInOrder() async throws {
        let navd = try Daemon()
        try await serving(navd.socketPath) { port in
            let fields = "Host: localhost:\(port)\r\nAuthorization: Bearer \(Self.token)\r\n"
            let requests = "GET /healthz HTTP/1.1\r\n\(fields)\r\nHEAD /app.js HTTP/1.1\r\n\(fields)\r\n"
                + "GET /nothing HTTP/1.1\r\n\(fields)\r\nPOST /metrics HTTP/1.1\r\n\(fields)\r\nGET /ws HTTP/1.1\r\n\(fields)Connection: close\r\n\r\n"
            let text = try await offThePool { try exchange(port: port, Array(requests.utf8)) }
            let answers = text.components(separatedBy: "HTTP/1.1 ").dropFirst()
            #expect(answers.map { $0.prefix(3) } == ["200", "200", "404", "405", "400"], "\(text)")
            let head = try #require(answers.dropFirst().first)
            let length = try #require(head.split(separator: "\r\n").first { $0.hasPrefix("Content-Length: ") }?.dropFirst(16))
            #expect((Int(length) ?? 0) > 1000 && head.hasSuffix("\r\n\r\n"), "HEAD says the length and sends no body")
            #expect(answers.last?.contains("Connection: close") == true && answers.last?.contains("Sec-WebSocket-Key") == true)
            let huge = "GET / HTTP/1.1\r\n\(fields)X-Pad: " + String(repeating: "a", count: HTTPHead.maxHeadBytes) + "\r\n\r\n"
            let refused = try await offThePool { try exchange(port: port, Array(huge.utf8)) }
            #expect(refused.hasPrefix("HTTP/1.1 431 ") && refused.contains("16384 bytes"), "\(refused.prefix(300))")
        }
    }

    /// The WebSocket's control frames: a ping is answered with a pong carrying its payload; the
    /// page's close is answered with the same code and the connection ends; a binary message is
    /// answered parseError; an unmasked frame closes the page with 1002 (protocol error), and the
    /// other pages go on.
    @Test func theWebSocketAnswersPingsAndCloses() async throws {
        let navd = try Daemon()
        try await serving(navd.socketPath) { port in
            let headers = ["Origin: http://localhost:\(port)", "Cookie: navweb_token=" + Self.token]
            let (pong, close, ended) = try await offThePool { () throws -> ([UInt8], [UInt8], Bool) in
                let ws = try RawWebSocket(port: port, headers: headers)
                _ = try ws.receive()
                try ws.sendRaw(ProtocolTests.frame(9, [1, 2, 3]))
                let pong = try ws.frame()
                try ws.sendRaw(ProtocolTests.frame(8, [0x0F, 0xA0]))
                let close = try ws.frame()
                return ([pong.opcode] + pong.payload, [close.opcode] + close.payload, (try? ws.frame()) == nil)
            }
            #expect(pong == [10, 1, 2, 3])
            #expect(close == [8, 0x0F, 0xA0] && ended, "the close answered with its code (4000), then the connection ends")
            let (code, other) = try await offThePool { () throws -> (Int, String) in
                let bad = try RawWebSocket(port: port, headers: headers)
                let good = try RawWebSocket(port: port, headers: headers)
                _ = try bad.receive()
                _ = try good.receive()
                try bad.sendRaw(ProtocolTests.frame(2, [1, 2, 3]))
                let binary = try bad.receive()
                guard binary.contains("parseError"), binary.contains("binary (3 bytes)") else { throw SocketFailure(description: binary) }
                try bad.sendRaw(ProtocolTests.frame(1, Array("{}".utf8), masked: false))
                let code = try bad.closeCode()
                try good.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
                return (code, try good.receive())
            }
            #expect(code == 1002)
            #expect(other == #"{"jsonrpc":"2.0","id":1,"result":"pong"}"#)
        }
    }

    /// A page that sends without reading what it is answered (pings here, each answered with a
    /// pong) is not read further once 4 MiB wait for it: its sends stop being taken, nav-web's memory
    /// stays bounded, and when the page reads again everything it was owed arrives and it goes on.
    @Test func aPageThatDoesNotReadIsNotReadEither() async throws {
        let navd = try Daemon()
        try await serving(navd.socketPath) { port, pid in
            let headers = ["Origin: http://localhost:\(port)", "Cookie: navweb_token=" + Self.token]
            let ws = try await offThePool { try RawWebSocket(port: port, headers: headers) }
            _ = try await offThePool { try ws.receive() }
            let before = try Self.residentMegabytes(pid)
            let ping = ProtocolTests.frame(9, Array(repeating: 0x70, count: 125))
            let (sent, cut) = try await offThePool { () throws -> (Int, Int) in
                // Sends until nav-web stops taking them (a send blocked for 2 s), at most 200 MB.
                setSendTimeout(ws.fd, seconds: 2)
                let batch = Array([[UInt8]](repeating: ping, count: 1000).joined())
                var pings = 0
                while pings < 1_500_000 {
                    let n = batch.withUnsafeBytes { Glibc.send(ws.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return (pings, 0) }
                    guard n > 0 else { throw SocketFailure(description: "send: errno \(errno)") }
                    pings += n / ping.count
                    // A send cut short by the timeout: the rest of its last ping is sent later.
                    if n < batch.count { return (pings, n % ping.count) }
                }
                return (pings, 0)
            }
            #expect(sent < 1_500_000, "nav-web kept reading pings nobody read the pongs of")
            let after = try Self.residentMegabytes(pid)
            #expect(Self.underASan || after - before < 40, "nav-web grew from \(before) to \(after) MB")
            // Every pong owed arrives; then the ping cut short is finished, and the page goes on.
            let (pongs, reply) = try await offThePool { () throws -> (Int, String) in
                setSendTimeout(ws.fd, seconds: 0)
                var pongs = 0
                while pongs < sent {
                    let f = try ws.frame()
                    guard f.opcode == 10, f.payload.count == 125 else { throw SocketFailure(description: "frame \(f.opcode)") }
                    pongs += 1
                }
                if cut > 0 {
                    try ws.sendRaw(Array(ping[cut...]))
                    guard try ws.frame().opcode == 10 else { throw SocketFailure(description: "no pong for the ping cut short") }
                }
                try ws.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
                return (pongs, try ws.receive())
            }
            #expect(pongs == sent)
            #expect(reply == #"{"jsonrpc":"2.0","id":1,"result":"pong"}"#)
            print("nav-web: \(sent) pings sent before it stopped reading; RSS \(before) -> \(after) MB")
        }
    }

    /// The same for HTTP: a client that sends requests without reading the answers is not read
    /// once 4 MiB of answers wait for it.
    @Test func aClientThatDoesNotReadItsAnswersIsNotReadEither() async throws {
        let navd = try Daemon()
        try await serving(navd.socketPath) { port, pid in
            let before = try Self.residentMegabytes(pid)
            let request = Self.appScript(port)
            let sent = try await offThePool { () throws -> Int in
                let fd = try tcpConnect(port: port)
                defer { close(fd) }
                setSendTimeout(fd, seconds: 2)
                let batch = Array([[UInt8]](repeating: request, count: 100).joined())
                var requests = 0
                while requests < 100_000 {
                    let n = batch.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if n < batch.count { break }
                    requests += 100
                }
                return requests
            }
            let after = try Self.residentMegabytes(pid)
            #expect(sent < 100_000, "nav-web kept answering requests nobody read")
            #expect(Self.underASan || after - before < 40, "nav-web grew from \(before) to \(after) MB")
            #expect(try await get(port, "/healthz").status == 200)
        }
    }

    /// A client that leaves its answers unread is closed after --stall-timeout (here 1 s): it
    /// gives its place back instead of holding one of the 1,024 for good. Its close is awaited
    /// (poll for the hang-up), not slept for.
    @Test func aClientThatStopsReadingIsClosedAfterTheStallTimeout() async throws {
        let navd = try Daemon()
        try await serving(navd.socketPath, ["--stall-timeout", "1"]) { port in
            let request = Self.appScript(port)
            let closedAfter = try await offThePool { () throws -> Double in
                let fd = try tcpConnect(port: port)
                defer { close(fd) }
                // Far more answers (53 MB) than 4 MiB and the kernel's buffers hold; none is read. The
                // send ends when nav-web closes the connection (or fails after 20 s without).
                setSendTimeout(fd, seconds: 20)
                let start = Date()
                try sendAll(fd, Array([[UInt8]](repeating: request, count: 2000).joined()), untilClosed: true)
                // POLLRDHUP (0x2000): the peer closed; Glibc's module leaves it out (_GNU_SOURCE).
                var p = pollfd(fd: fd, events: 0x2000, revents: 0)
                guard poll(&p, 1, 20_000) == 1 else { throw SocketFailure(description: "nav-web did not close the stalled connection within 20 s") }
                return Date().timeIntervalSince(start)
            }
            #expect(closedAfter < 10, "closed \(closedAfter) s after the requests")
            #expect(try await get(port, "/healthz").status == 200)
        }
        #expect(throws: (any Error).self) { try NavWeb.parse(["--stall-timeout", "0"]).validate() }
    }

    @Test func aSlowHeadIsAnswered408AndAnIdleConnectionClosedAfterTheHeadTimeout() async throws {
        let navd = try Daemon()
        try await serving(navd.socketPath, ["--head-timeout", "1"]) { port in
            // Each exchange reads until nav-web closes; without the timeout its read gives up after 20 s.
            let (slow, slowAfter) = try await offThePool { () throws -> (String, Double) in
                let start = Date()
                let answer = try exchange(port: port, Array("GET /healthz HTTP/1.1\r\nHost: localhost:\(port)\r\n".utf8))
                return (answer, Date().timeIntervalSince(start))
            }
            #expect(slow.hasPrefix("HTTP/1.1 408 "), "\(slow)")
            #expect(slow.contains("did not arrive within 1 s"), "\(slow)")
            #expect(slowAfter < 10, "answered \(slowAfter) s after the head began")
            let (idle, idleAfter) = try await offThePool { () throws -> (String, Double) in
                let start = Date()
                let answer = try exchange(port: port, Array("GET /healthz HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n".utf8))
                return (answer, Date().timeIntervalSince(start))
            }
            #expect(idle.hasPrefix("HTTP/1.1 200 "), "\(idle)")
            #expect(!idle.contains("408"), "an idle connection is closed without an answer: \(idle)")
            #expect(idleAfter < 10, "closed \(idleAfter) s after its answer")
        }
        #expect(throws: (any Error).self) { try NavWeb.parse(["--head-timeout", "0"]).validate() }
        // Past a day it is refused, where a count of seconds whose milliseconds pass UInt64 stopped nav-web.
        for option in ["--head-timeout", "--stall-timeout"] {
            #expect(throws: (any Error).self) { try NavWeb.parse([option, "86401"]).validate() }
            #expect(throws: (any Error).self) { try NavWeb.parse([option, "\(Int.max)"]).validate() }
            #expect(throws: Never.self) { try NavWeb.parse([option, "86400"]).validate() }
        }
    }

    /// A request for the page's largest asset (26 KB), with the token.
    static func appScript(_ port: Int) -> [UInt8] {
        Array("GET /app.js HTTP/1.1\r\nHost: localhost:\(port)\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8)
    }

    /// Whether nav-web is make test-asan's build: its freed memory waits in AddressSanitizer's
    /// quarantine (256 MB) and counts as resident, so only its stopping to read is checked there.
    static let underASan = ProcessInfo.processInfo.environment["NAVD_BIN_DIR"]?.contains("asan") ?? false

    /// nav-web's resident memory, from /proc.
    static func residentMegabytes(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return (Int(line.split(separator: " ")[1]) ?? 0) / 1024
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
        // A link to a private file of one's own is not followed, and a file of more than one token
        // is not read (it was read whole, whatever its size).
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: dir + "/token")
        try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: dir + "/token")
        #expect { try Token.fromFile(dir + "/link") } throws: { "\($0)".contains("it is a symbolic link") }
        #expect(FileManager.default.createFile(atPath: dir + "/large", contents: Data(repeating: 0x61, count: Token.maxFileBytes + 1),
                                               attributes: [.posixPermissions: 0o600]))
        #expect { try Token.fromFile(dir + "/large") } throws: { "\($0)".contains("holds one token") }
        #expect(try Token.fromFile(dir + "/token") == made)
    }
}
