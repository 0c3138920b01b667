import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

/// nav-web: navd in a browser. Serves one page (the sessions, the live tree, the visible screen's
/// actions with forms from their setup models, a change log with time travel, the graph as a
/// picture), relays JSON-RPC between the page and navd over a WebSocket (one navd connection per
/// page, as the user running nav-web), and exports navd's `stats` as Prometheus metrics.
@main
struct NavWeb: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nav-web",
        abstract: "navd in a browser: the live tree, actions, a change log with time travel, the graph as a picture.",
        discussion: """
            Prints the URL to open, with a token: every page, asset, metrics scrape and WebSocket \
            needs it (a cookie after the first load, or Authorization: Bearer TOKEN). Listens on \
            127.0.0.1 unless --host says otherwise; requests whose Host or Origin is not this \
            server's are refused (DNS rebinding). /healthz needs no token.
            """)

    @Option(help: "navd's socket (default: $NAVD_SOCKET, else $XDG_RUNTIME_DIR/navd.sock, else /tmp/navd-<uid>/navd.sock).")
    var socket: String?

    @Option(help: "Address to listen on. Anything but a loopback address lets other machines reach the page (with the token).")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port).")
    var port = 8765

    @Option(help: "The token the page needs (default: 32 random bytes, printed with the URL).")
    var token: String?

    @Flag(help: "Relay only the methods that change nothing (tree, subscribe, graph.describe, stats, …).")
    var readOnly = false

    @Option(help: "The graph directory navd serves, for the picture (default: navd's embedded example).")
    var graph: String?

    @Option(help: "The navd executable that draws the graph (default: the one beside nav-web, else navd on PATH).")
    var navd: String?

    func run() async throws {
        let socketPath = socket ?? NavdSocket.defaultPath()
        let secret = token ?? Token.random()
        guard secret.count >= 16 else { throw ValidationError("--token must be at least 16 characters") }
        let settings = Settings(socketPath: socketPath, token: secret, readOnly: readOnly, host: host,
                                picture: GraphPicture(navd: navd ?? GraphPicture.findNavd(), graph: graph))
        var logger = Logger(label: "nav-web")
        logger.logLevel = .warning
        let app = Application(
            router: Routes.router(settings),
            server: .http1WebSocketUpgrade { request, channel, logger in
                guard request.path?.split(separator: "?").first == "/ws",
                      let port = channel.localAddress?.port,
                      Access.upgradeAllowed(request, settings: settings, port: port) else { return .dontUpgrade }
                return .upgrade([:]) { inbound, outbound, _ in
                    await Relay.run(inbound: inbound, outbound: outbound, settings: settings)
                }
            },
            configuration: .init(address: .hostname(host, port: port), serverName: "nav-web"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                settings.port.store(port)
                let shown = host.contains(":") ? "[\(host)]" : host
                let text = "nav-web: http://\(shown):\(port)/?token=\(secret)\n"
                    + "nav-web: relaying to navd at \(socketPath)\(settings.readOnly ? " (read-only)" : "")\n"
                FileHandle.standardOutput.write(Data(text.utf8))
            },
            logger: logger
        )
        try await app.runService()
    }
}

/// What every handler needs; immutable but for the port, known once the server listens.
final class Settings: Sendable {
    let socketPath: String
    let token: String
    let readOnly: Bool
    let host: String
    let picture: GraphPicture
    let port = AtomicPort()

    init(socketPath: String, token: String, readOnly: Bool, host: String, picture: GraphPicture) {
        self.socketPath = socketPath
        self.token = token
        self.readOnly = readOnly
        self.host = host
        self.picture = picture
    }
}

/// The port the server listens on (set once, read by every request).
final class AtomicPort: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func store(_ v: Int) { lock.withLock { value = v } }
    func load() -> Int { lock.withLock { value } }
}

enum NavdSocket {
    /// As navctl finds it: $NAVD_SOCKET, else $XDG_RUNTIME_DIR/navd.sock, else /tmp/navd-<uid>/navd.sock.
    static func defaultPath() -> String {
        let env = ProcessInfo.processInfo.environment
        if let s = env["NAVD_SOCKET"], !s.isEmpty { return s }
        if let r = env["XDG_RUNTIME_DIR"], !r.isEmpty { return r + "/navd.sock" }
        return "/tmp/navd-\(getuid())/navd.sock"
    }
}

enum Token {
    static func random() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
    }

    /// Compares in a time that does not depend on where the strings differ.
    static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<x.count { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}
