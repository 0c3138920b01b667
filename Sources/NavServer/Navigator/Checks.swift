import JSON
import NavGraph
import NavigationCore
import RPC
#if canImport(Glibc)
import Glibc
#endif

/// What several navigation requests check: the owner of a session, a navigation spec, a screen's
/// result handed back.
extension Navigator {
    /// Refuses to close or write the facts of a session another user opened, unless the client is an admin.
    func requireOwner(_ c: some Client, _ s: Session, _ what: String) throws(NavError) {
        let owner = s.owner ?? getuid()
        if c.uid == owner || c.roles.contains(adminRole) { return }
        throw .accessDenied("\(what) on session \"\(s.name)\" needs the uid that opened it (\(owner)) or the role \(adminRole); open a session of your own with session.open {name}",
                            data: ["session": .string(s.name), "roles": [.string(adminRole)]])
    }

    /// The largest `hints` object or dismiss `result`, as JSON.
    static let maxHintsBytes = 4096

    /// The longest deep link `open` reads, in bytes: a web server's request line (Apache's is
    /// 8,190). A URL of 800 KB cost 13 to 35 ms of the loop to split, decode and match.
    static let maxURLBytes = 8192

    /// `dismiss {result}`: tells the screen now on top (the one below what was dismissed) the result
    /// of the screen that was shown, as `screenResult {session, node, to, result}` to the session's
    /// subscribers and the caller.
    func deliverScreenResult(_ result: JSONValue, from shown: String, to top: String? = nil, in state: SessionState, caller: some Client) {
        let s = state.session
        let params: JSONValue = [
            "session": .string(s.name), "node": .string(shown),
            "to": .string(top ?? s.visibleTop?.id ?? ""), "result": result,
        ]
        notifySubscribers("screenResult", params, of: state, also: caller)
    }

    /// A coordinator name or `{to, by?, with?}` (a precondition's redirect answer, `navigate {then}`).
    func navigationSpec(_ v: JSONValue, param: String) throws(NavError) -> NavigationSpec {
        try NavigationSpec.parse(v, param: param, in: graph)
    }
}

extension NavigationSpec {
    /// A coordinator name or `{to, by?, with?}` in `param` (`navigate {then}`, a precondition's
    /// redirect answer), its target found in `graph`.
    static func parse(_ v: JSONValue, param: String, in graph: NavigationGraph) throws(NavError) -> NavigationSpec {
        let shape = "\"\(param)\" must be a coordinator name or {to, by?, with?}, like {\"to\": \"account.OrderDetail\", \"with\": {\"orderId\": \"$result.orderId\"}}"
        var to: String?, by: Presentation?, with: JSONObject?
        switch v {
        case .string(let name): to = name
        case .object(let o):
            guard o.keys.allSatisfy({ ["to", "by", "with"].contains($0) }) else { throw .invalidParams(shape, data: ["param": .string(param)]) }
            to = o["to"]?.stringValue
            if let b = o["by"] {
                guard let name = b.stringValue, let pr = Presentation(rawValue: name) else { throw .invalidParams(shape, data: ["param": .string(param)]) }
                by = pr
            }
            if let w = o["with"] {
                guard case .object(let wo) = w else { throw .invalidParams(shape, data: ["param": .string(param)]) }
                for (_, x) in wo {
                    if case .string(let s) = x, isResultReference(s) == false {
                        throw .invalidParams("`\(s)` in \"\(param).with\" is not a result reference; write \"$result\" or \"$result.FIELD\"", data: ["param": .string(param)])
                    }
                }
                with = wo
            }
        default: break
        }
        guard let to else { throw .invalidParams(shape, data: ["param": .string(param)]) }
        do throws(NavError) {
            return NavigationSpec(to: try graph.destination(to: to, route: nil).target, by: by, with: with)
        } catch {
            var data = error.data
            data.append("param", .string(param))
            throw NavError(error.kind, "\"\(param)\": \(error.message)", data: data)
        }
    }
}
