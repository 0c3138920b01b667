import JSON
import NavGraph
import RPC
#if canImport(Glibc)
import Glibc
#endif

/// Who holds which roles (SPEC section 8): per peer uid and per token given in `hello`, as the
/// policy file grants them (``PolicyFile``, whose `allowReloadPath` says whether `graph.reload` may
/// name a directory). A client's roles are the union of its uid's and its token's; without a policy
/// nobody holds a role.
public typealias Policy = PolicyFile

extension PolicyFile {
    /// The role that may change the daemon rather than a session: `graph.reload`, `provide`, and
    /// closing or writing facts into another user's session. navd's own uid always holds it.
    public static let adminRole = NavServer.adminRole

    /// The roles of a client: its uid's and its token's, and ``adminRole`` for navd's own uid.
    public func roles(uid: UInt32?, token: String?) -> Set<String> {
        var r: Set<String> = []
        if let uid {
            if let granted = uids[uid] { r = granted }
            if uid == getuid() { r.insert(Policy.adminRole) }
        }
        if let token, let granted = tokens[token] { r.formUnion(granted) }
        return r
    }

    /// Parses a policy file's text (YAML or JSON): `{uids: {"1000": [customer]}, tokens: {"s3cret": [auditor]}}`;
    /// a file with problems throws them all, one line each with its file, line and column.
    public static func read(_ text: String, file: String = "policy", maxNodes: Int = GraphLimits().maxNodes) throws(PolicyError) -> Policy {
        let (read, diagnostics) = PolicyFile.parse(text, file: file, maxNodes: maxNodes)
        guard let read else { throw PolicyError(problems: diagnostics.errors.map(\.description)) }
        return read
    }
}

extension PolicyFile {
    /// Reads and parses the policy file at `path`, once it is known that nobody else could have
    /// written it: a regular file of navd's uid or root's that no other user may write, in a
    /// directory no other user may write (unless sticky, as /tmp). A file another user may change
    /// would let them grant themselves any role, `admin` included; one that holds tokens must not
    /// be readable by others either (as an ssh private key). The file is checked as opened
    /// (`fstat` of the descriptor read), and read up to ``maxPolicyBytes``.
    public static func read(file path: String, maxNodes: Int = GraphLimits().maxNodes, uid: uid_t = getuid()) throws(PolicyError) -> Policy {
        func refuse(_ problem: String) -> PolicyError { PolicyError(problems: ["\(path):1:1: error: \(problem)"]) }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw refuse("cannot read the policy file: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw refuse("cannot read the policy file: \(String(cString: strerror(errno)))") }
        if let problem = trustProblem(st, path: path, uid: uid) { throw refuse(problem) }
        guard st.st_size <= maxPolicyBytes else { throw refuse("the policy file is \(st.st_size) bytes; a policy file may hold at most \(maxPolicyBytes)") }
        let (bytes, failure) = FileBytes.read(fd, size: Int(st.st_size))
        guard failure == 0, bytes.count == st.st_size, let text = String(validating: bytes, as: UTF8.self) else {
            throw refuse("cannot read the policy file whole as UTF-8 text")
        }
        let policy = try read(text, file: path, maxNodes: maxNodes)
        if !policy.tokens.isEmpty && st.st_mode & (S_IRGRP | S_IROTH) != 0 {
            // A token is a password: one other users may read grants its roles to all of them.
            throw refuse("the policy file holds tokens and may be read by other users (mode 0\(String(st.st_mode & 0o7777, radix: 8))): anyone could read a token and take its roles; chmod 600 \(path)")
        }
        return policy
    }

    /// The largest policy file read (its YAML is bounded by the graph's node budget as well).
    public static let maxPolicyBytes = 16 << 20

    /// Why a policy file of status `st` at `path` cannot be trusted, or nil.
    static func trustProblem(_ st: stat, path: String, uid: uid_t) -> String? {
        guard (st.st_mode & S_IFMT) == S_IFREG else { return "the policy file is not a regular file" }
        if st.st_uid != uid && st.st_uid != 0 {
            return "the policy file belongs to uid \(st.st_uid), not to navd's uid \(uid) or root: its owner could grant any role; give it to navd's user (chown) or keep it where only that user writes"
        }
        if st.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            return "the policy file is writable by other users (mode 0\(String(st.st_mode & 0o7777, radix: 8))): anyone could grant themselves admin; chmod go-w \(path)"
        }
        let dir = StateFiles.directory(of: path)
        var d = stat()
        if stat(dir, &d) == 0, d.st_mode & (S_IWGRP | S_IWOTH) != 0, d.st_mode & S_ISVTX == 0 {
            return "the policy file's directory \(dir) is writable by other users (mode 0\(String(d.st_mode & 0o7777, radix: 8))): they could put another file in its place; keep it in a directory only navd's user writes (chmod go-w \(dir))"
        }
        return nil
    }
}

/// What is wrong with a policy file: each problem a line `FILE:LINE:COLUMN: error: …`.
public struct PolicyError: Error, CustomStringConvertible {
    public let problems: [String]
    public var description: String { problems.joined(separator: "\n") }
}

extension Policy {
    /// The refusal of a method declared for `spec.roles` to a client that holds none of them.
    static func denied(_ spec: MethodTable.Spec, to c: some Client) -> RPCError {
        let uid = c.uid.map { "uid \($0)" } ?? "this client"
        let roles = spec.roles.map { "`\($0)`" }.joined(separator: " or ")
        let what = spec.roles == [adminRole] ? "navd's own uid holds it; grant it to others" : "grant it"
        return .accessDenied("`\(spec.name)` needs the role \(roles) (it acts on the daemon, not on one session); \(uid) does not hold it. \(what) in the policy file (--policy), under `uids:` or `tokens:`",
                             data: ["roles": .array(spec.roles.map(JSONValue.string))])
    }
}
