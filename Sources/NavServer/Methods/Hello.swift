import BuildInfo
import JSON
import RPC
#if canImport(Glibc)
import Glibc
#endif

/// The version navd reports in `hello`.
public let navdVersion = BuildInfo.version

/// `hello`, declared in `Protocol/methods/hello.json`: its spec and param enum are
/// generated from that file.
enum HelloMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.hello, HelloParam.self) { [server] call in
            // Names checked first: a misspelt "token" is refused, not taken for a client without one.
            do throws(RPCError) { try Params<HelloParam>(call).acceptUnused(.session) } catch {
                call.fail(error)
                return
            }
            if let name = call.param("client") {
                guard case .string(let s) = name else {
                    call.fail(.invalidParams("\"client\" must be a string naming the client, e.g. \"nav-tui\""))
                    return
                }
                do throws(RPCError) { try server.config.checkName(s, "the client name", param: "client") } catch {
                    call.fail(error)
                    return
                }
                call.peer.clientName = s
            }
            if let token = call.param("token") {
                guard case .string(let t) = token else {
                    call.fail(.invalidParams("\"token\" must be a string"))
                    return
                }
                guard t.utf8.count <= server.config.maxName else {
                    call.fail(.limitExceeded("the token is \(t.utf8.count) bytes long; tokens may be at most \(server.config.maxName) bytes (the --max-name limit)",
                                             limit: "--max-name", max: server.config.maxName))
                    return
                }
                // Guessing is slowed per uid: past its rate, the token is not looked at.
                let uid = call.peer.uid ?? getuid(), now = server.loop.now
                let wait = server.tokenGuesses.wait(uid, now: now)
                guard wait == 0 else {
                    call.fail(RPCError(.limitExceeded, "uid \(uid) gave more than \(TokenGuesses.burst) unknown tokens, and navd then takes \(TokenGuesses.perSecond) a second from one user; this token was not looked at: try again in \(wait) ms, with a token the policy lists",
                                       data: ["limit": "unknownTokens", "max": .int(TokenGuesses.burst), "retryAfterMs": .int(Int(wait))]))
                    return
                }
                guard server.policy.tokens[t] != nil else {
                    server.tokenGuesses.failed(uid, now: now)
                    let why = server.policyFile.map { "the policy file \($0) grants it no role; list it under `tokens:` there (SIGHUP reloads the file)" }
                        ?? "navd runs without a policy file, so no token grants a role; start navd with --policy FILE listing the token under `tokens:`"
                    call.fail(.accessDenied("unknown token: \(why)"))
                    return
                }
                call.peer.token = t
                call.peer.grant(server.policy.roles(uid: call.peer.uid, token: t))
            }
            if let keep = call.param("keepRoles") {
                // A client acting for someone else (nav-web's pages) gives up roles it need not use.
                guard case .array(let items) = keep, items.count <= server.config.maxBatch,
                      case let names = items.compactMap(\.stringValue), names.count == items.count else {
                    call.fail(.invalidParams("\"keepRoles\" must be a list of role names (at most --max-batch), e.g. [] to give up every role or [\"customer\"]",
                                             data: ["param": "keepRoles"]))
                    return
                }
                call.peer.keptRoles = Set(names).intersection(call.peer.keptRoles ?? Set(names))
                call.peer.grant(server.policy.roles(uid: call.peer.uid, token: call.peer.token))
            }
            if let value = call.param("notifications") {
                do throws(RPCError) {
                    guard case .string(let s) = value, let form = try NotificationForm(param: s, method: "hello") else {
                        throw .invalidParams("hello: \"notifications\" must be \"full\" or \"compact\"", data: ["param": "notifications"])
                    }
                    call.peer.prefersCompact = form == .compact
                } catch {
                    call.fail(error)
                    return
                }
            }
            var result: JSONObject = [
                "server": "navd", "version": .string(navdVersion), "protocol": 1,
                "roles": .array(call.peer.roles.sorted().map { .string($0) }),
                "connection": .int(call.peer.id),
                "notifications": .string(call.peer.prefersCompact ? "compact" : "full"),
            ]
            if let p = call.peer.credentials {
                result["peer"] = ["pid": .int(Int(p.pid)), "uid": .int(Int(p.uid)), "gid": .int(Int(p.gid))]
            }
            call.succeed(.object(result))
        }
    }
}
