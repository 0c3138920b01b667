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
