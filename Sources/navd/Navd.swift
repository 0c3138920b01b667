import ArgumentParser
import BuildInfo
import Foundation
import JSON
import Logging
import NavGraph
import NavServer
import NavigationCore
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
        abstract: "Run the daemon in the foreground (the default subcommand).")

    @Option(help: "Socket path (default: $XDG_RUNTIME_DIR/navd.sock, else /tmp/navd-<uid>/navd.sock).")
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

    @Option(help: "Most simultaneous connections; more are refused with an error. Default: what the descriptor limit leaves after command children and navd's own files, at most 65536 (logged at start).")
    var maxConnections: Int?

    @Option(help: "Bytes of unsent output after which a client that is not reading is disconnected.")
    var maxOutput: Int = 8 * 1024 * 1024

    @Option(help: "Largest message accepted, in bytes.")
    var maxMessage: Int = 1024 * 1024

    @Option(help: "Deepest JSON nesting accepted.")
    var maxDepth: Int = 64

    @Option(help: "Most requests in one batch; a larger batch is refused with limitExceeded.")
    var maxBatch: Int = 1_000

    @Option(help: "Size in bytes of the state file's log (STATE.log) at which its snapshot is rewritten and the log starts again, at least.")
    var logCompactBytes: Int = 16 << 20

    @Option(help: "The log is compacted when it is also this many times the snapshot's size (0: --log-compact-bytes alone).")
    var logCompactRatio: Int = 3

    @Option(help: "Most sessions; session.open of one more is refused with limitExceeded. One uid may hold all but a 10% reserve kept for other uids.")
    var maxSessions: Int = 1_000_000

    @Option(help: "Most facts in one session.")
    var maxFacts: Int = 10_000

    @Option(help: "Longest name a client may give (session, fact, key, token, client), in bytes.")
    var maxName: Int = 256

    @Option(help: "Largest value of one fact, encoded as JSON, in bytes.")
    var maxFactValue: Int = 64 * 1024

    @Option(help: "Bytes of unsent output of all clients together; past it the client holding the most is disconnected.")
    var maxTotalOutput: Int = 256 * 1024 * 1024

    @Option(help: "How long part of a message may wait for its rest before the client is disconnected (500ms, 30s, 1m).")
    var messageTimeout: String = "30s"

    @Option(help: "Deepest tree of a session: nodes from the root to the deepest, both counted (each modal adds two). Deeper navigations are refused.")
    var maxTreeDepth: Int = 64

    @Option(help: "Most nodes in one session's tree.")
    var maxTreeNodes: Int = 10_000

    @Option(help: "Most bytes of setup models (params, as JSON) in one session's tree together.")
    var maxParamsBytes: Int = 1024 * 1024

    @Option(help: "Most bytes of facts (names and values, as JSON) in one session together.")
    var maxFactsBytes: Int = 1024 * 1024

    @Option(help: "Hard cap on the sessions one uid may have opened (0: none; uids share --max-sessions fairly).")
    var maxSessionsPerUid: Int = 0

    @Option(help: "Hard cap on the connections from one uid (0: none; uids share --max-connections fairly).")
    var maxConnectionsPerUid: Int = 0

    @Option(help: "Most pending navigations and guarded dismisses in all.")
    var maxPending: Int = 65_536

    @Option(help: "Hard cap on the pending navigations and guarded dismisses of one uid (0: none; uids share --max-pending fairly).")
    var maxPendingPerUid: Int = 0

    @Option(help: "Most replies of keyed navigations kept for one uid's sessions together (besides 4,096 per session); past it the uid's oldest key is forgotten.")
    var maxKeysPerUid: Int = 262_144

    @Option(help: "Most bytes of keys and replies kept for one uid's sessions together (besides 1 MiB per session); past it the uid's oldest key is forgotten.")
    var maxKeyBytesPerUid: Int = 64 << 20

    @Option(help: "Most pending navigations and guarded dismisses of one connection (0: none).")
    var maxPendingPerConnection: Int = 0

    @Option(help: "Most pending navigations and guarded dismisses in one session.")
    var maxPendingPerSession: Int = 4_096

    @Option(help: "Most command preconditions running at once; more wait their turn, uid by uid (the wait does not count against their timeout). Default: 256, less when the process or descriptor limit is low (logged at start).")
    var maxChildren: Int?

    @Option(help: "Hard cap on the command preconditions running at once for one uid's navigations (0: none; uids share --max-children fairly).")
    var maxChildrenPerUid: Int = 0

    @Option(help: "Most provider requests in flight at one provider; more wait in navd, uid by uid.")
    var maxProviderRequests: Int = 256

    @Option(help: "Hard cap on the provider requests in flight at one provider for one uid's navigations (0: none).")
    var maxProviderRequestsPerUid: Int = 0

    @Option(help: "Longest a navigation may wait for command and provider slots in all before it fails (500ms, 30s, 1m); its preconditions' own timeouts start when they run.")
    var maxQueueWait: String = "60s"

    @Flag(help: "Start even when a saved session breaks a rule (a schema, a limit): set it aside in the state file's set_aside table, log it, and serve the others.")
    var repair = false

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
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be at least 1") }
        if let maxChildren, maxChildren < 1 { throw ValidationError("--max-children must be at least 1") }
        guard let wait = parseDuration(.string(maxQueueWait)), wait >= 100 else {
            throw ValidationError("--max-queue-wait takes a duration of at least 100ms, such as 500ms, 30s or 1m")
        }
        guard maxOutput >= 1024 else { throw ValidationError("--max-output must be at least 1024 bytes") }
        guard maxMessage >= 64 else { throw ValidationError("--max-message must be at least 64 bytes") }
        guard (1...10_000).contains(maxDepth) else { throw ValidationError("--max-depth must be between 1 and 10000") }
        guard maxBatch >= 1 else { throw ValidationError("--max-batch must be at least 1") }
        guard logCompactBytes >= 4096 else { throw ValidationError("--log-compact-bytes must be at least 4096") }
        guard (0...100).contains(logCompactRatio) else { throw ValidationError("--log-compact-ratio must be between 0 and 100") }
        guard maxSessions >= 1 else { throw ValidationError("--max-sessions must be at least 1 (session \"main\" always exists)") }
        guard maxFacts >= 1 else { throw ValidationError("--max-facts must be at least 1") }
        guard maxName >= 16 else { throw ValidationError("--max-name must be at least 16 bytes") }
        guard maxFactValue >= 16 else { throw ValidationError("--max-fact-value must be at least 16 bytes") }
        guard maxTotalOutput >= maxOutput else { throw ValidationError("--max-total-output must be at least --max-output") }
        guard let t = parseDuration(.string(messageTimeout)), t >= 100 else {
            throw ValidationError("--message-timeout takes a duration of at least 100ms, such as 500ms, 30s or 1m")
        }
        guard (4...SessionLimits.depthCeiling).contains(maxTreeDepth) else {
            throw ValidationError("--max-tree-depth must be between 4 and \(SessionLimits.depthCeiling)")
        }
        for (option, value, least) in [("--max-tree-nodes", maxTreeNodes, 4), ("--max-params-bytes", maxParamsBytes, 1024), ("--max-facts-bytes", maxFactsBytes, 1024),
                                       ("--max-sessions-per-uid", maxSessionsPerUid, 0), ("--max-connections-per-uid", maxConnectionsPerUid, 0),
                                       ("--max-pending", maxPending, 1), ("--max-pending-per-uid", maxPendingPerUid, 0),
                                       ("--max-pending-per-connection", maxPendingPerConnection, 0), ("--max-pending-per-session", maxPendingPerSession, 1),
                                       ("--max-children-per-uid", maxChildrenPerUid, 0),
                                       ("--max-provider-requests", maxProviderRequests, 1), ("--max-provider-requests-per-uid", maxProviderRequestsPerUid, 0),
                                       ("--max-keys-per-uid", maxKeysPerUid, 1), ("--max-key-bytes-per-uid", maxKeyBytesPerUid, 4096)] where value < least {
            throw ValidationError("\(option) must be at least \(least)")
        }
        if repair && (ephemeral || store != nil) { throw ValidationError("--repair sets aside sessions of a state file: it goes with --state (or the default state file), not --ephemeral or --store") }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel)!
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let logger = Logger(label: "navd")
        var config = ServerConfiguration(
            socketPath: socket ?? ServerConfiguration.defaultSocketPath(environment: ProcessInfo.processInfo.environment))
        config.maxOutput = maxOutput
        config.maxMessage = maxMessage
        config.maxDepth = maxDepth
        config.maxBatch = maxBatch
        config.logCompactBytes = logCompactBytes
        config.logCompactRatio = logCompactRatio
        config.maxSessions = maxSessions
        config.session.maxFacts = maxFacts
        config.maxName = maxName
        config.session.maxFactValue = maxFactValue
        config.maxTotalOutput = maxTotalOutput
        config.messageTimeoutMs = parseDuration(.string(messageTimeout))!
        config.session.maxDepth = maxTreeDepth
        config.session.maxNodes = maxTreeNodes
        config.session.maxParamsBytes = maxParamsBytes
        config.session.maxFactsBytes = maxFactsBytes
        config.maxSessionsPerUid = maxSessionsPerUid
        config.maxConnectionsPerUid = maxConnectionsPerUid
        config.maxPending = maxPending
        config.maxPendingPerUid = maxPendingPerUid
        config.maxKeysPerUid = maxKeysPerUid
        config.maxKeyBytesPerUid = maxKeyBytesPerUid
        config.maxPendingPerConnection = maxPendingPerConnection
        config.maxPendingPerSession = maxPendingPerSession
        config.maxChildrenPerUid = maxChildrenPerUid
        config.maxProviderRequests = maxProviderRequests
        config.maxProviderRequestsPerUid = maxProviderRequestsPerUid
        config.maxQueueWaitMs = parseDuration(.string(maxQueueWait))!
        let machine = MachineLimits.read()
        config.sizedToMachine(machine, children: maxChildren, connections: maxConnections)
        config.logLevel = level

        let (loaded, diagnostics) = loadGraph(graph, limits: graphLimits.limits, printWarnings: true)
        guard let navGraph = loaded else {
            FileHandle.standardError.write(Data("navd: the graph has \(diagnostics.errors.count) error(s); fix them (`navd check \(graph ?? "")` lists them) and start again\n".utf8))
            throw ExitCode(1)
        }
        if let problem = config.session.problem(with: navGraph) {
            FileHandle.standardError.write(Data("navd: \(problem): raise the limit or simplify the graph's root\n".utf8))
            throw ExitCode(1)
        }
        useSQLiteFromOneThreadOnly()
        let server = Server(config: config, graph: navGraph, logger: logger)
        if let policy {
            do {
                server.policy = try Policy.parse(String(contentsOfFile: policy, encoding: .utf8), file: policy)
            } catch {
                FileHandle.standardError.write(Data("navd: cannot load policy: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
        server.policyFile = policy
        server.graphPath = graph
        let limits = graphLimits.limits
        server.graphLoader = { dir in loadGraph(dir, limits: limits, printWarnings: false) }
        server.onHangup = { [unowned server] in
            if let policy {
                do {
                    server.policy = try Policy.parse(String(contentsOfFile: policy, encoding: .utf8), file: policy)
                    logger.info("policy reloaded", metadata: ["navd.policy": "\(policy)"])
                } catch {
                    logger.error("policy not reloaded, the previous one stays in force: \(error)")
                }
            }
            let r = server.reloadGraph()
            if r["ok"] != true { logger.error("graph not reloaded: \(JSONWriter.string(r))") }
        }
        if let store {
            let nodeName = node ?? (ProcessInfo.processInfo.hostName + ":" + config.socketPath)
            do {
                let restored = try server.useSharedStore(try sharedStore(store, node: nodeName, leaseMs: Int(parseDuration(.string(lease))!), server: server))
                logger.info("cluster store ready", metadata: ["navd.node": "\(nodeName)", "navd.sessions": "\(restored)"])
            } catch {
                FileHandle.standardError.write(Data("navd: \(error)\n".utf8))
                throw ExitCode(1)
            }
        } else if !ephemeral {
            let path = state ?? defaultStatePath(socket: config.socketPath)
            do {
                let restored = try server.useStateFile(path, durability: Durability(rawValue: durability)!, repair: repair)
                logger.info("state restored", metadata: ["navd.state": "\(path)", "navd.sessions": "\(restored)"])
            } catch {
                FileHandle.standardError.write(Data("navd: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
        do {
            try server.start()
        } catch {
            FileHandle.standardError.write(Data("navd: \(error)\n".utf8))
            throw ExitCode(1)
        }
        logger.info("navd listening", metadata: ["navd.socket": "\(config.socketPath)", "navd.version": "\(navdVersion)",
                                                 "navd.graph": "\(graph ?? "embedded example")",
                                                 "navd.coordinators": "\(navGraph.coordinators.count)"])
        logger.info("capacity", metadata: ["navd.descriptors": "\(machine.descriptors)", "navd.processes": "\(machine.processes.map(String.init) ?? "unlimited")",
                                           "navd.maxConnections": "\(config.maxConnections)\(maxConnections == nil ? " (from the descriptor limit)" : "")",
                                           "navd.maxChildren": "\(config.maxChildren)\(maxChildren == nil ? " (sized to the machine)" : "")",
                                           "navd.maxSessions": "\(config.maxSessions)", "navd.maxPending": "\(config.maxPending)",
                                           "navd.reserve": "\(ServerConfiguration.reservePercent) % of each kept for other uids"])
        let clean = server.run()
        if let failure = server.failure {
            logger.critical("navd stopped on a fault", metadata: ["navd.error": "\(failure)", "navd.handlesReleased": "\(clean)"])
            throw ExitCode(1)
        }
        logger.info("navd stopped", metadata: ["navd.handlesReleased": "\(clean)"])
    }
}

/// `$XDG_STATE_HOME/navd/` (else `~/.local/state/navd/`), one file per socket path.
func defaultStatePath(socket: String) -> String {
    let env = ProcessInfo.processInfo.environment
    let base = env["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((env["HOME"] ?? NSTemporaryDirectory()) + "/.local/state")
    let dir = base + "/navd"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    let name = socket.split(separator: "/").joined(separator: "_")
    return dir + "/" + name + ".sqlite"
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
