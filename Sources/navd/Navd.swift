import ArgumentParser
import BuildInfo
import Foundation
import JSON
import Logging
import NavGraph
import NavServer
import NavigationCore
import UV
#if canImport(NavCluster)
import NavCluster
#endif

@main
struct Navd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "navd",
        abstract: "The navigation daemon: one authoritative coordinator tree per session, served over a Unix socket.",
        discussion: """
            Clients speak JSON-RPC 2.0, one JSON object per line (or LSP-style Content-Length framing):
              echo '{"jsonrpc":"2.0","id":1,"method":"ping"}' | socat - UNIX-CONNECT:$SOCK
            See Protocol/PROTOCOL.md for the methods, notifications and errors.
            """,
        version: BuildInfo.versionLine("navd"),
        subcommands: [Serve.self, Check.self, GraphCommand.self, Explore.self, CoverageCommand.self],
        defaultSubcommand: Serve.self
    )
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the daemon in the foreground (the default subcommand).",
        discussion: """
            Under systemd, navd serves the socket a .socket unit passes it (socket activation: \
            LISTEN_FDS) instead of binding --socket, and tells the manager when it is ready, \
            reloading or stopping (Type=notify: NOTIFY_SOCKET), pinging its watchdog from the \
            event loop when WatchdogSec= is set. `make install` installs navd.socket and \
            navd.service as user units.
            """)

    @Option(help: "Socket path (default: the socket systemd passes, else $XDG_RUNTIME_DIR/navd.sock, else /tmp/navd-<uid>.sock).")
    var socket: String?

    @Option(help: "Directory of navigation graph module files (default: the embedded example app).")
    var graph: String?

    @Option(help: "Policy file (YAML or JSON) granting roles per uid and per token.")
    var policy: String?

    @Option(help: "State file (SQLite) keeping sessions across restarts (default: $XDG_STATE_HOME/navd/, else ~/.local/state/navd/, named after the socket).")
    var state: String?

    @Flag(help: "Keep no state file: sessions start afresh at every start.")
    var ephemeral = false

    @Option(name: [.customLong("store"), .customLong("store-url")],
            help: "Keep sessions in PostgreSQL (postgres://… or a libpq key=value string), shared with other navd nodes (cluster mode, Protocol/CLUSTER.md).")
    var store: String?

    @Option(help: "This node's name in the cluster (default: the host name and the socket path). Unique per node; a restart under the same name takes back the node's sessions.")
    var node: String?

    @Option(help: "Cluster lease: how long a node's sessions stay its own without renewal (e.g. 2s); renewed every third of it. A crashed node's sessions are taken over after it.")
    var lease: String = "2s"

    @Option(help: "full: fsync every group of commits (survives power loss); process: survives kill -9 of navd (default).")
    var durability: String = "process"

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Flag(help: "Start even when a saved or logged session breaks a rule (a schema, a limit, a graph that changed): set it aside in the state file's set_aside table (a log it could not replay is kept as STATE.log.set-aside-TIME), log it, and serve the others.")
    var repair = false

    @OptionGroup var limits: LimitOptions

    @OptionGroup var graphLimits: GraphLimitOptions

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown log level '\(logLevel)'; use trace, debug, info, notice, warning, error or critical")
        }
        guard Durability(rawValue: durability) != nil else {
            throw ValidationError("unknown --durability '\(durability)'; use full or process")
        }
        for (option, path) in [("--socket", socket), ("--graph", graph), ("--policy", policy), ("--state", state)] {
            if let path, let problem = ServerConfiguration.pathProblem(path, option: option) { throw ValidationError(problem) }
        }
        if ephemeral && state != nil { throw ValidationError("--ephemeral and --state exclude each other") }
        if store != nil && (ephemeral || state != nil) { throw ValidationError("--store keeps sessions in PostgreSQL: it excludes --state and --ephemeral") }
        guard let leaseMs = parseDuration(.string(lease)), (100...600_000).contains(leaseMs) else {
            throw ValidationError("--lease '\(lease)' is not a duration between 100ms and 10m (e.g. 500ms, 2s, 1m)")
        }
        if let node, node.isEmpty || node.utf8.count > 200 { throw ValidationError("--node must be 1 to 200 bytes long") }
        guard limits.maxTotalOutput >= limits.maxOutput else { throw ValidationError("--max-total-output must be at least --max-output") }
        if repair && (ephemeral || store != nil) { throw ValidationError("--repair sets aside sessions of a state file: it goes with --state (or the default state file), not --ephemeral or --store") }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel)!
        LoggingSystem.bootstrap { label in
            if StandardError.isJournal { return JournalLogHandler(label: label, logLevel: level) }
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let logger = Logger(label: "navd")
        let environment = ProcessInfo.processInfo.environment
        let passed = try passedSocket(environment)
        var config = ServerConfiguration(
            socketPath: passed?.path ?? socket ?? ServerConfiguration.defaultSocketPath(environment: environment))
        limits.apply(to: &config)
        let machine = MachineLimits.read()
        config.sizedToMachine(machine, children: limits.maxChildren, connections: limits.maxConnections)
        config.logLevel = level

        let (loaded, diagnostics) = loadGraph(graph, limits: graphLimits.limits, printWarnings: true)
        guard let navGraph = loaded else {
            StandardError.write("navd: the graph has \(diagnostics.errors.count) error(s); fix them (`navd check \(graph ?? "")` lists them) and start again")
            throw ExitCode(1)
        }
        if let problem = config.session.problem(with: navGraph) {
            StandardError.write("navd: \(problem): raise the limit or simplify the graph's root")
            throw ExitCode(1)
        }
        useSQLiteFromOneThreadOnly()
        let server = Server(config: config, graph: navGraph, logger: logger)
        if let policy {
            do {
                server.policy = try Policy.read(String(contentsOfFile: policy, encoding: .utf8), file: policy, maxNodes: graphLimits.limits.maxNodes)
            } catch let e as PolicyError {
                StandardError.write(e.problems.joined(separator: "\n") + "\nnavd: the policy file has \(e.problems.count) error(s); fix them and start again")
                throw ExitCode(1)
            } catch {
                StandardError.write("navd: cannot load policy: \(error)")
                throw ExitCode(1)
            }
        }
        server.policyFile = policy
        server.graphPath = graph
        let graphLimits = graphLimits.limits
        server.graphLoader = { dir in loadGraph(dir, limits: graphLimits, printWarnings: false) }
        server.onHangup = { [unowned server] in reload(server, logger: logger) }
        server.passedSocket = passed
        try restoreSessions(server, socketPath: config.socketPath, logger: logger)
        do {
            try server.start()
        } catch {
            StandardError.write("navd: \(error)")
            throw ExitCode(1)
        }
        logger.info("navd listening", metadata: ["navd.socket": "\(config.socketPath)", "navd.version": "\(navdVersion)",
                                                 "navd.graph": "\(graph ?? "embedded example")",
                                                 "navd.coordinators": "\(navGraph.coordinators.count)",
                                                 "navd.socketFrom": "\(passed == nil ? "bound by navd" : "the service manager (socket activation)")"])
        if let notifier = Systemd.Notifier(environment: environment) {
            server.notifier = notifier
            if let errno = notifier.send("READY=1\nMAINPID=\(getpid())\nSTATUS=serving \(config.socketPath)") {
                logger.warning("could not tell the service manager navd is ready", metadata: ["navd.notifySocket": "\(notifier.address)", "navd.error": "\(String(cString: strerror(errno)))"])
            }
            if let ms = Systemd.Notifier.watchdogInterval(environment: environment) { server.startWatchdog(milliseconds: ms) }
        }
        logger.info("capacity", metadata: ["navd.descriptors": "\(machine.descriptors)", "navd.processes": "\(machine.processes.map(String.init) ?? "unlimited")",
                                           "navd.maxConnections": "\(config.maxConnections)\(limits.maxConnections == nil ? " (from the descriptor limit)" : "")",
                                           "navd.maxChildren": "\(config.maxChildren)\(limits.maxChildren == nil ? " (sized to the machine)" : "")",
                                           "navd.maxSessions": "\(config.maxSessions)", "navd.maxPending": "\(config.maxPending)",
                                           "navd.reserve": "\(ServerConfiguration.reservePercent) % of each kept for other uids"])
        let clean = server.run()
        if let failure = server.failure {
            logger.critical("navd stopped on a fault", metadata: ["navd.error": "\(failure)", "navd.handlesReleased": "\(clean)"])
            throw ExitCode(1)
        }
        logger.info("navd stopped", metadata: ["navd.handlesReleased": "\(clean)"])
    }

    /// The listening socket a service manager passed (socket activation), checked: one Unix stream
    /// socket bound to a path that only its owner's group may reach, and the path `--socket` names
    /// if it names one. nil when none was passed.
    private func passedSocket(_ environment: [String: String]) throws -> Systemd.PassedSocket? {
        func refuse(_ message: String) throws -> Never {
            StandardError.write("navd: \(message)")
            throw ExitCode(1)
        }
        let found: Systemd.PassedSocket?
        do { found = try Systemd.passedSocket(environment: environment) } catch { try refuse(error.description) }
        Systemd.forgetPassedSocketVariables()
        guard let passed = found else { return nil }
        var st = stat()
        let exists = stat(passed.path, &st) == 0
        if exists && st.st_mode & 0o002 != 0 {
            try refuse("the socket the service manager passed, \(passed.path), has mode \(String(st.st_mode & 0o777, radix: 8)): any user of this machine could connect; set SocketMode=0600 (or 0660 for a group) in its .socket unit")
        }
        if let socket {
            // The same file (by inode), or the same path when the passed one is gone.
            var given = stat()
            let same = exists ? stat(socket, &given) == 0 && given.st_dev == st.st_dev && given.st_ino == st.st_ino : socket == passed.path
            if !same {
                try refuse("--socket \(socket) is not the socket the service manager passed (\(passed.path)); leave --socket out, or make it name that socket")
            }
        }
        return passed
    }

    /// SIGHUP: the policy file read again (a broken one leaves the previous in force), then the graph.
    private func reload(_ server: Server, logger: Logger) {
        if let policy {
            do {
                server.policy = try Policy.read(String(contentsOfFile: policy, encoding: .utf8), file: policy, maxNodes: graphLimits.limits.maxNodes)
                logger.info("policy reloaded", metadata: ["navd.policy": "\(policy)"])
            } catch {
                logger.error("policy not reloaded, the previous one stays in force: \((error as? PolicyError)?.problems.joined(separator: "; ") ?? "\(error)")")
            }
        }
        let r = server.reloadGraph()
        if r["ok"] != true { logger.error("graph not reloaded: \(JSONWriter.string(r))") }
    }

    /// The sessions kept: from PostgreSQL (cluster mode, `--store`), from the state file (the
    /// default) or none (`--ephemeral`).
    private func restoreSessions(_ server: Server, socketPath: String, logger: Logger) throws {
        if let store {
            let nodeName = node ?? (ProcessInfo.processInfo.hostName + ":" + socketPath)
            do {
                let restored = try server.useSharedStore(try sharedStore(store, node: nodeName, leaseMs: Int(parseDuration(.string(lease))!), server: server))
                logger.info("cluster store ready", metadata: ["navd.node": "\(nodeName)", "navd.sessions": "\(restored)"])
                // Coverage counts what this node committed: kept on this machine, where its state
                // file would be, so a node restarted under its socket reads it back.
                server.keepCoverage(beside: defaultStatePath(socket: socketPath))
            } catch {
                StandardError.write("navd: \(error)")
                throw ExitCode(1)
            }
        } else if !ephemeral {
            let path = state ?? defaultStatePath(socket: socketPath)
            do {
                let restored = try server.useStateFile(path, durability: Durability(rawValue: durability)!, repair: repair)
                logger.info("state restored", metadata: ["navd.state": "\(path)", "navd.sessions": "\(restored)"])
            } catch {
                StandardError.write("navd: \(error)")
                throw ExitCode(1)
            }
        }
    }
}

/// `$XDG_STATE_HOME/navd/` (else `~/.local/state/navd/`), one file per socket path.
func defaultStatePath(socket: String) -> String {
    let env = ProcessInfo.processInfo.environment
    let base = env["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((env["HOME"] ?? NSTemporaryDirectory()) + "/.local/state")
    let dir = base + "/navd"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    let name = socket.split(separator: "/").joined(separator: "_")
    let path = dir + "/" + name + ".sqlite"
    // The default socket was /tmp/navd-<uid>/navd.sock before it became the contract's path: the
    // sessions kept under that name stay this socket's until a file of the new name exists.
    let earlier = dir + "/tmp_navd-\(getuid())_navd.sock.sqlite"
    if socket == "/tmp/navd-\(getuid()).sock", !FileManager.default.fileExists(atPath: path), FileManager.default.fileExists(atPath: earlier) {
        return earlier
    }
    return path
}

/// Cluster mode's store, when this navd was built with it (NavCluster; not with `NAVD_CLUSTER=off`).
func sharedStore(_ conninfo: String, node: String, leaseMs: Int, server: Server) throws(StateError) -> any SharedStore {
    #if canImport(NavCluster)
    PostgresStore(conninfo: conninfo, node: node, socket: server.socketPath, leaseMs: leaseMs, saved: server.savedSessions,
                  loop: server.loop, logger: server.logger)
    #else
    throw StateError(description: "this navd was built without cluster mode (NAVD_CLUSTER=off): --store needs a navd built with it (make build), or use --state FILE")
    #endif
}
