import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real PostgreSQL server in a temporary directory, listening only on a Unix socket there. Made
/// with `initdb` and run with `pg_ctl`; as root (PostgreSQL refuses to run as root) both run as
/// the system user `postgres` (the postgresql package makes it; `nobody` where it is missing)
/// through `runuser`. The server is private: the directory, socket included, is mode 0700, so
/// only its owner and root can connect (another local user cannot reach it, let alone rewrite the
/// cluster's tables).
/// The template cluster's directory, removed at exit (``PostgresServer``).
nonisolated(unsafe) private var postgresTemplatePath: String?

public final class PostgresServer: @unchecked Sendable {
    public let dir: TempDir
    public let port = 5432
    private let bin: String
    private let asUser: [String]

    /// The libpq connection string of the server (superuser `navd`, database `postgres`). The
    /// connect timeout bounds a node's start (its one blocking connect) when the server hangs; at
    /// 2 s a node started while the suites load both cores (six writers, a fenced node, PostgreSQL
    /// forking backends) failed to start once in a fresh clone's `make test`, so it is 10 s.
    public var conninfo: String { "host=\(dir.path) port=\(port) user=navd dbname=postgres connect_timeout=10" }

    /// Why PostgreSQL cannot run here, or nil: tests that need it are skipped with this reason.
    public static var unavailableReason: String? {
        binDir == nil ? "PostgreSQL's initdb and pg_ctl are not installed (make test installs the postgresql package with apt-get)" : nil
    }

    private static var binDir: String? {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for v in versions.sorted(by: >) {
            let d = "/usr/lib/postgresql/\(v)/bin"
            if FileManager.default.isExecutableFile(atPath: d + "/initdb") && FileManager.default.isExecutableFile(atPath: d + "/pg_ctl") { return d }
        }
        return nil
    }

    /// Creates the cluster (a copy of the process's template) and starts the server.
    public init() throws {
        guard let bin = Self.binDir else { throw TestFailure(Self.unavailableReason!) }
        self.bin = bin
        (dir, asUser) = Self.ownedDirectory()
        let template = try Self.template.get()
        let r = try runCommand("/bin/cp", ["-a", template.file("data"), dir.file("data")])
        guard r.status == 0 else { throw TestFailure("copying the template cluster failed: \(r.stderr)") }
        try start()
    }

    /// A new directory for a cluster, owned by the user the server runs as (root's tests run it as
    /// `postgres`, or `nobody`), and the command prefix that runs a program as that user.
    private static func ownedDirectory() -> (TempDir, [String]) {
        let dir = TempDir()
        var asUser: [String] = []
        if getuid() == 0 {
            let owner = getpwnam("postgres").map { ("postgres", $0.pointee.pw_uid, $0.pointee.pw_gid) } ?? ("nobody", 65534, 65534)
            asUser = ["/usr/sbin/runuser", "-u", owner.0, "--"]
            chown(dir.path, owner.1, owner.2)
        }
        chmod(dir.path, 0o700)
        return (dir, asUser)
    }

    /// The cluster `initdb` makes, once per test process: each server starts on a copy (`cp -a`,
    /// 0.07 s, where `initdb` takes 0.6 s of cpu). Removed when the process exits.
    private static let template: Result<TempDir, TestFailure> = {
        guard let bin = binDir else { return .failure(TestFailure(unavailableReason!)) }
        let (dir, asUser) = ownedDirectory()
        postgresTemplatePath = dir.path
        atexit { if let path = postgresTemplatePath { try? FileManager.default.removeItem(atPath: path) } }
        let argv = asUser + [bin + "/initdb", "-D", dir.file("data"), "-A", "trust", "-U", "navd", "-E", "UTF8", "--no-sync"]
        guard let r = try? runCommand(argv[0], Array(argv.dropFirst())) else { return .failure(TestFailure("initdb could not run")) }
        guard r.status == 0 else { return .failure(TestFailure("initdb failed: \(r.stderr)")) }
        return .success(dir)
    }()

    private func run(_ argv: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let full = asUser + argv
        return try runCommand(full[0], Array(full.dropFirst()))
    }

    /// Starts the server. Through Python's `subprocess`, which closes every descriptor above 2 in
    /// the child: the server keeps whatever it inherits open (this test process's pipes), and
    /// whoever reads their other end would wait for it forever.
    public func start() throws {
        let out = dir.file("pg_ctl.out")
        let argv = asUser + [bin + "/pg_ctl", "-D", dir.file("data"), "-w", "-t", "30", "-l", dir.file("log"),
                             "-o", "-k \(dir.path) -p \(port) -c listen_addresses= -c max_connections=50", "start"]
        let py = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=open(sys.argv[1], 'w'), stderr=subprocess.STDOUT))"
        let r = try runSpawned(["/usr/bin/python3", "-c", py, out] + argv)
        guard r.status == 0 else {
            throw TestFailure("pg_ctl start failed: \((try? String(contentsOfFile: out, encoding: .utf8)) ?? "") \((try? String(contentsOfFile: dir.file("log"), encoding: .utf8)) ?? "")")
        }
    }

    /// Stops the server (`fast`: open connections are ended).
    public func stop() {
        _ = try? run([bin + "/pg_ctl", "-D", dir.file("data"), "-w", "-m", "fast", "stop"])
    }

    /// Sends `signal` to every process of the server (the postmaster and its children).
    public func signal(_ signal: Int32) throws {
        guard let first = try? String(contentsOfFile: dir.file("data/postmaster.pid"), encoding: .utf8).split(separator: "\n").first,
              let pid = pid_t(first) else { throw TestFailure("no postmaster.pid") }
        let children = (try? runCommand("/usr/bin/pgrep", ["-P", "\(pid)"]).stdout) ?? ""
        for p in [pid] + children.split(separator: "\n").compactMap({ pid_t($0) }) { kill(p, signal) }
    }

    /// Runs SQL with psql and answers its output (unaligned, tuples only).
    public func psql(_ sql: String) throws -> String {
        let r = try runCommand("/usr/bin/psql", ["-X", "-A", "-t", "-q", "-h", dir.path, "-p", "\(port)", "-U", "navd", "-d", "postgres", "-c", sql])
        guard r.status == 0 else { throw TestFailure("psql failed: \(r.stderr)") }
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs a query of two columns, a name and an integer, and answers them as a dictionary (rows
    /// whose second column is not an integer are left out).
    public func integersByName(_ sql: String) throws -> [String: Int] {
        var out: [String: Int] = [:]
        for line in try psql(sql).split(separator: "\n") {
            let f = line.split(separator: "|")
            if f.count == 2, let n = Int(f[1]) { out[String(f[0])] = n }
        }
        return out
    }

    deinit {
        stop()
        dir.remove()
    }
}
