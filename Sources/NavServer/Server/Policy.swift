import JSON
import RPC
import Yams
#if canImport(Glibc)
import Glibc
#endif

/// Who holds which roles (SPEC section 8): per peer uid and per token given in `hello`.
/// A client's roles are the union of its uid's and its token's; without a policy nobody holds a role.
public struct Policy: Sendable, Equatable {
    public var uids: [UInt32: Set<String>] = [:]
    public var tokens: [String: Set<String>] = [:]
    /// Whether `graph.reload` may name a directory (`path`); without it a client can only reload the
    /// graph navd was started with. Even then, only clients holding ``adminRole`` may reload.
    public var allowReloadPath = false

    /// The role that may change the daemon rather than a session: `graph.reload`, `provide`, and
    /// closing or writing facts into another user's session. navd's own uid always holds it.
    public static let adminRole = NavServer.adminRole

    public init(uids: [UInt32: Set<String>] = [:], tokens: [String: Set<String>] = [:], allowReloadPath: Bool = false) {
        self.uids = uids
        self.tokens = tokens
        self.allowReloadPath = allowReloadPath
    }

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

    /// Parses a policy file's text (YAML or JSON): `{uids: {"1000": [customer]}, tokens: {"s3cret": [auditor]}}`.
    public static func parse(_ text: String, file: String = "policy") throws -> Policy {
        let root: Any?
        do {
            root = try Yams.load(yaml: text)
        } catch {
            throw PolicyError(message: "\(file): not valid YAML or JSON: \(error)")
        }
        guard let top = root as? [String: Any] else {
            throw PolicyError(message: "\(file): expected a mapping with 'uids' and/or 'tokens'")
        }
        var p = Policy()
        for key in top.keys where key != "uids" && key != "tokens" && key != "allowReloadPath" {
            throw PolicyError(message: "\(file): unknown key '\(key)'; expected 'uids', 'tokens' or 'allowReloadPath'")
        }
        if let allow = top["allowReloadPath"] {
            guard let b = allow as? Bool else { throw PolicyError(message: "\(file): 'allowReloadPath' must be true or false") }
            p.allowReloadPath = b
        }
        func roles(_ v: Any, _ what: String) throws -> Set<String> {
            if let list = v as? [Any] {
                return Set(try list.map { r in
                    guard let s = r as? String else { throw PolicyError(message: "\(file): roles of \(what) must be strings") }
                    return s
                })
            }
            if let s = v as? String { return [s] }
            throw PolicyError(message: "\(file): roles of \(what) must be a list of strings, like [customer]")
        }
        if let uids = top["uids"] {
            guard let m = uids as? [AnyHashable: Any] else { throw PolicyError(message: "\(file): 'uids' must map uid to roles") }
            for (k, v) in m {
                guard let uid = UInt32("\(k)") else {
                    throw PolicyError(message: "\(file): '\(k)' under 'uids' is not a numeric uid")
                }
                p.uids[uid] = try roles(v, "uid \(uid)")
            }
        }
        if let tokens = top["tokens"] {
            guard let m = tokens as? [AnyHashable: Any] else { throw PolicyError(message: "\(file): 'tokens' must map token to roles") }
            for (k, v) in m { p.tokens["\(k)"] = try roles(v, "a token") }
        }
        return p
    }
}

public struct PolicyError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
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
