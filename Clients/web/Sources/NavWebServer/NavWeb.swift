import ArgumentParser
import BuildInfo
import Foundation
import RPC
import UV

/// nav-web: navd in a browser. Serves one page (the sessions, the live tree, the visible screen's
/// actions with forms from their setup models, a change log with time travel, the graph as a
/// picture), relays JSON-RPC between the page and navd over a WebSocket (one navd connection per
/// page, as the user running nav-web), and exports navd's `stats` as Prometheus metrics.
public struct NavWeb: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "nav-web",
        abstract: "navd in a browser: the live tree, actions, a change log with time travel, the graph as a picture.",
        discussion: """
            Prints the URL to open, with a token: every page, asset, metrics scrape and WebSocket \
            needs it (a cookie after the first load, or Authorization: Bearer TOKEN). Listens on \
            127.0.0.1 unless --host says otherwise; requests whose Host or Origin is not this \
            server's are refused (DNS rebinding). /healthz needs no token. SIGTERM or SIGINT \
            stops it: each page is sent a WebSocket close frame, and one that has not answered \
            within 2 seconds is cut off.
            """,
        version: BuildInfo.versionLine("nav-web"))

    public init() {}

    @Option(help: "navd's socket (default: $NAVD_SOCKET, else $XDG_RUNTIME_DIR/navd.sock, else /tmp/navd-<uid>.sock).")
    var socket: String?

    @Option(help: "Address to listen on. Anything but a loopback address lets other machines reach the page (with the token).")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port).")
    var port = 8765

    @Option(help: ArgumentHelp("Refused: a token on the command line is readable by every local user (/proc/PID/cmdline). Use --token-file or $NAVWEB_TOKEN.", visibility: .hidden))
    var token: String?

    @Option(help: "File holding the token the page needs (created with a random token, mode 0600, when absent; it must be yours and private). Else $NAVWEB_TOKEN, else a random token printed with the URL.")
    var tokenFile: String?

    @Flag(help: "Pages keep the roles of nav-web's uid (admin when it is navd's own): needed to answer provider requests or reload the graph from the page. Without it a page gives up every role (hello {keepRoles: []}).")
    var admin = false

    @Flag(help: "Relay only the methods that change nothing (tree, subscribe, graph.describe, stats, …).")
    var readOnly = false

    @Option(help: "Draw this graph directory instead of the graph navd serves (default: navd's live graph, through graph.export).")
    var graph: String?

    @Option(help: "Seconds a client may leave what nav-web sent it unread (4 MiB waiting) before its connection is closed: a page or scraper that stopped reading gives its place back.")
    var stallTimeout = 60

    @Option(help: "Seconds a client may take to send a request's head, and may stay idle between requests, before its connection is closed (408 when a head had begun). Pages are not timed: their WebSocket stays open.")
    var headTimeout = 30

    @Option(help: "The navd executable that draws --graph DIR (default: the one beside nav-web, else navd on PATH).")
    var navd: String?

    /// The longest --stall-timeout and --head-timeout, in seconds (their milliseconds overflowed
    /// UInt64 past about 584 million years, and stopped nav-web).
    static let maxTimeout = 86_400

    public func validate() throws {
        guard (1...Self.maxTimeout).contains(stallTimeout) else {
            throw ValidationError("--stall-timeout is 1 to \(Self.maxTimeout) seconds (a day), not \(stallTimeout)")
        }
        guard (1...Self.maxTimeout).contains(headTimeout) else {
            throw ValidationError("--head-timeout is 1 to \(Self.maxTimeout) seconds (a day), not \(headTimeout)")
        }
        if token != nil {
            throw ValidationError("--token puts the secret on the command line, where every local user can read it (/proc/PID/cmdline, ps); "
                                  + "give it in a file (--token-file PATH, mode 0600) or in the environment ($NAVWEB_TOKEN)")
        }
    }

    public func run() throws {
        // As navctl finds it: $NAVD_SOCKET, else the default path.
        let socketPath = SocketPath.clientPath(explicit: socket, environment: ProcessInfo.processInfo.environment)
        let secret: String
        if let tokenFile {
            secret = try Token.fromFile(tokenFile)
        } else if let env = ProcessInfo.processInfo.environment["NAVWEB_TOKEN"], !env.isEmpty {
            secret = env
        } else {
            secret = Token.random()
        }
        guard secret.count >= 16 else { throw ValidationError("the token must be at least 16 characters") }
        let settings = Settings(socketPath: socketPath, token: secret, readOnly: readOnly, admin: admin, host: host,
                                picture: GraphPicture(socketPath: socketPath, navd: navd ?? GraphPicture.findNavd(), graph: graph))
        settings.stallTimeoutMs = UInt64(stallTimeout) * 1000
        settings.headTimeoutMs = UInt64(headTimeout) * 1000
        let manager = ServiceManager.take()
        let loop = EventLoop()
        let server = WebServer(loop: loop, settings: settings)
        do {
            try server.start(port: port)
        } catch {
            throw Failure(description: "cannot listen on \(host):\(port): \(error.message)"
                          + (error == .addressInUse ? " (another nav-web? --port N, or --port 0 for any free port)" : ""))
        }
        let shown = host.contains(":") ? "[\(host)]" : host
        let text = "nav-web: http://\(shown):\(server.port)/?token=\(secret)\n"
            + "nav-web: relaying to navd at \(socketPath)\(settings.readOnly ? " (read-only)" : "")\n"
        FileHandle.standardOutput.write(Data(text.utf8))
        // (Not the token: a unit's status is shown to every user.)
        manager?.notify("READY=1\nMAINPID=\(getpid())\nSTATUS=serving http://\(shown):\(server.port)/, relaying to navd at \(socketPath)")
        var signals: [Signal] = []
        for number in [SIGTERM, SIGINT] {
            let signal = Signal(loop: loop)
            signal.start(signal: number) { _ in
                manager?.notify("STOPPING=1")
                server.stop(graceMs: NavWeb.shutdownGraceMs) { loop.stop() }
            }
            signals.append(signal)
        }
        loop.run()
        signals.forEach { $0.close() }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// How long a stop (SIGTERM, SIGINT) waits for pages to close their WebSockets: nav-web sends
    /// each a close frame, which a browser answers at once. A page that does not (a frozen tab, a
    /// client that stopped reading) is cut off when it is over, so that nav-web stops in bounded time.
    static let shutdownGraceMs: UInt64 = 2_000
}

extension NavWeb {
    /// Parses the command line and runs (what nav-web's `main.swift` does).
    public static func runFromCommandLine() {
        NavWeb.main()
    }
}

/// What every handler needs; set once but for the port, known once the server listens.
final class Settings {
    let socketPath: String
    let token: String
    let readOnly: Bool
    /// Pages keep nav-web's roles (`--admin`); otherwise they give them all up.
    let admin: Bool
    let host: String
    let picture: GraphPicture
    var port = 0
    /// How long a connection's output may stay past ``Relay/maxQueued`` before it is closed.
    var stallTimeoutMs: UInt64 = 60_000
    /// How long a request's head may take to arrive, and a connection may wait between requests.
    var headTimeoutMs: UInt64 = 30_000
    private var unchanging: Set<String>?

    init(socketPath: String, token: String, readOnly: Bool, admin: Bool, host: String, picture: GraphPicture) {
        self.socketPath = socketPath
        self.token = token
        self.readOnly = readOnly
        self.admin = admin
        self.host = host
        self.picture = picture
    }
}

extension Settings {
    /// The methods navd declares as changing nothing (`x-navd-changes: false` in its `rpc.discover`),
    /// asked once: what --read-only relays.
    func methodsThatChangeNothing(loop: EventLoop, _ done: @escaping (Result<Set<String>, NavdConnection.Failure>) -> Void) {
        if let known = unchanging { return done(.success(known)) }
        NavdConnection.call(loop: loop, socketPath, method: "rpc.discover") { [self] result in
            switch result {
            case .failure(let f): done(.failure(f))
            case .success(let doc):
                var names: Set<String> = []
                for case let m as [String: Any] in (doc as? [String: Any])?["methods"] as? [Any] ?? [] {
                    if let name = m["name"] as? String, m["x-navd-changes"] as? Bool == false { names.insert(name) }
                }
                guard !names.isEmpty else {
                    return done(.failure(NavdConnection.Failure(description: "navd's rpc.discover declares no method that changes nothing")))
                }
                unchanging = names
                done(.success(names))
            }
        }
    }
}

enum Token {
    static func random() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
    }

    /// The token in `path`, made (a random one, mode 0600) when the file is absent. A file another
    /// user owns or may read is refused: its token would not be a secret.
    /// The largest token file read.
    static let maxFileBytes = 4096

    static func fromFile(_ path: String) throws -> String {
        var st = stat()
        if lstat(path, &st) != 0 {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw ValidationError("cannot create the token file \(path): \(String(cString: strerror(errno)))") }
            let t = random()
            _ = t.withCString { write(fd, $0, strlen($0)) }
            close(fd)
            return t
        }
        // What is checked is what was opened (not a link, not a file put in its place after a look
        // at the path), and read up to ``maxFileBytes``.
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0, fstat(fd, &st) == 0 else {
            let why = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
            if fd >= 0 { close(fd) }
            throw ValidationError("cannot read the token file \(path): \(why)")
        }
        defer { close(fd) }
        guard st.st_mode & S_IFMT == S_IFREG else { throw ValidationError("the token file \(path) is not a regular file") }
        guard st.st_uid == getuid() else { throw ValidationError("the token file \(path) belongs to uid \(st.st_uid), not to you (uid \(getuid()))") }
        guard st.st_mode & 0o077 == 0 else {
            throw ValidationError("the token file \(path) may be read by others (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 \(path)")
        }
        guard st.st_size <= maxFileBytes else {
            throw ValidationError("the token file \(path) is \(st.st_size) bytes; it holds one token (at most \(maxFileBytes) bytes)")
        }
        var bytes = [UInt8](repeating: 0, count: maxFileBytes + 1)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n >= 0, n <= maxFileBytes, let text = String(validating: bytes[..<n], as: UTF8.self) else {
            throw ValidationError("cannot read the token file \(path) whole as UTF-8 text (at most \(maxFileBytes) bytes)")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
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
