import JSON
import NavGraph
import NavigationCore
import RPC

/// `reset`, declared in `Protocol/methods/reset.json`: its spec and param enum are
/// generated from that file.
enum ResetMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.reset, ResetParam.self) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<ResetParam>(call)
                let state = try call.session(p)
                n.reset(ResetRequest(state: state, steps: try steps(p.value(.to), max: call.decoding.limits.maxBatch), ifVersion: try p.int(.ifVersion),
                                     force: try p.bool(.force) ?? false), call)
            }
        }
    }

    /// `reset`'s `to`: screens as names or `{to, with?, by?}`, at most `max` of them; nil: the root.
    static func steps(_ raw: JSONValue?, max: Int) throws(RPCError) -> [ResetStep]? {
        guard let raw else { return nil }
        guard case .array(let items) = raw, items.count <= max else {
            throw .invalidParams("\"to\" must be a list of screens, like [\"shop.Home\", {\"to\": \"shop.Product\", \"with\": {\"id\": \"p1\"}}] (at most --max-batch)",
                                 data: ["param": "to"])
        }
        return try items.map { item throws(RPCError) -> ResetStep in
            if case .string(let name) = item { return ResetStep(to: name) }
            guard let to = item["to"]?.stringValue else {
                throw .invalidParams("each screen of \"to\" is a coordinator name or {to, with?, by?}", data: ["param": "to"])
            }
            var by: Presentation?
            if let b = item["by"]?.stringValue {
                guard let pr = Presentation(rawValue: b), pr == .push || pr == .present || pr == .select else {
                    throw .invalidParams("a reset screen is shown by push or present, or selected (a tab of the tab container before it), not \"\(b)\"",
                                         data: ["param": "to"])
                }
                by = pr
            }
            return ResetStep(to: to, with: item["with"]?.objectValue ?? JSONObject(), by: by)
        }
    }
}
