import JSON
import NavGraph
import NavigationCore
import RPC

/// `navigate`, declared in `Protocol/methods/navigate.json`: its spec and param enum are
/// generated from that file.
enum NavigateMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.navigate, NavigateParam.self) { call in
            do throws(RPCError) {
                let p = try Params<NavigateParam>(call)
                n.navigate(try request(p, in: try call.session(p), call.decoding), call)
            } catch { call.fail(error) }
        }
    }

    /// `navigate`'s params, read in place: `to` found among the coordinators by its bytes (a string
    /// is made only for a message), `with` left where it lies for the plan (which writes the new
    /// node's setup text from there, see ``NavigationCore/Session/plan(_:by:with:from:ifVersion:caller:afterFlow:declaredTarget:withView:keys:existing:merge:)``). The session, `state`,
    /// is the one dispatch resolves; the graph, key cache and limits come from `context`: decoding
    /// asks neither the navigator nor the server.
    @inline(__always)
    static func request(_ p: Params<NavigateParam>, in state: SessionState, _ context: DecodingContext) throws(RPCError) -> NavigateRequest {
        if !p.hasAny(~usualParams) {
            // The usual navigation: `to` found by its bytes, no other param. Read in the order of
            // the whole reading below, so that a wrong param is reported as it would be there.
            let by = try presentation(p)
            if let to = try p.stringView(.to), let coordinator = context.coordinatorIndex(named: to.stringBytes) {
                return NavigateRequest(state: state, coordinator: coordinator, by: by, withView: try p.objectView(.with),
                                       ifVersion: try p.int(.ifVersion), dryRun: try p.bool(.dryRun) ?? false,
                                       detach: try p.bool(.detach) ?? false, progress: try p.bool(.progress) ?? false, options: nil)
            }
        }
        return try requestWithOptions(p, in: state, context)
    }

    /// The params the usual navigation reads: any other given (a param declared later included)
    /// takes the whole reading, whose other params go in the request's ``NavigateOptions``.
    private static var usualParams: UInt32 {
        @inline(__always) get {
            NavigateParam.bit(.session) | NavigateParam.bit(.to) | NavigateParam.bit(.by) | NavigateParam.bit(.with)
                | NavigateParam.bit(.ifVersion) | NavigateParam.bit(.dryRun) | NavigateParam.bit(.detach) | NavigateParam.bit(.progress)
        }
    }

    @inline(__always)
    private static func presentation(_ p: Params<NavigateParam>) throws(RPCError) -> Presentation? {
        guard let b = try p.string(.by) else { return nil }
        guard let by = Presentation(rawValue: b) else {
            throw RPCError.invalidParams("\"by\" must be push, present, replace, root or select, not \"\(b)\"", data: ["param": "by"])
        }
        return by
    }

    /// `navigate`'s params read whole, options and all.
    @inline(never)
    private static func requestWithOptions(_ p: Params<NavigateParam>, in state: SessionState, _ context: DecodingContext) throws(RPCError) -> NavigateRequest {
        let by = try presentation(p)
        let route = try p.string(.route)
        var coordinator: Int?, toName: String?
        if let to = try p.stringView(.to) {
            if route == nil, let i = context.coordinatorIndex(named: to.stringBytes) { coordinator = i } else { toName = to.string }
        }
        let withView = try p.objectView(.with)
        let key = try p.string(.key)
        if let key {
            if key.isEmpty {
                throw .invalidParams("\"key\" is empty; give the navigation a key that names its intent, such as \"buy-42\", or leave \"key\" out", data: ["param": "key"])
            }
            try context.checkName(key, "the navigation key", param: "key")
        }
        var hints: JSONValue?
        if let h = p.value(.hints) {
            guard case .object = h else {
                throw .invalidParams("\"hints\" must be an object of presentation wishes, like {\"animated\": false}", data: ["param": "hints"])
            }
            try NavigationParams.checkSize(h, "\"hints\"", limit: Navigator.maxHintsBytes, param: "hints")
            hints = h
        }
        var popUpTo: (to: String, inclusive: Bool)?
        if let pop = p.value(.popUpTo) {
            let (target, inclusive) = try popUpToParam(pop)
            if let by, by != .push && by != .present {
                throw .invalidParams("\"popUpTo\" goes with by: push or present (the target is placed from the screen left on top), not \(by.rawValue)",
                                     data: ["param": "popUpTo"])
            }
            popUpTo = (target, inclusive)
        }
        var existing = Existing.push
        if let e = try p.string(.existing) {
            guard let given = Existing(rawValue: e) else {
                throw .invalidParams("\"existing\" must be push (always a new screen, the default), top (keep the screen on top if it is the target's) or pop (go back to the nearest one in the stack, else push), not \"\(e)\"",
                                     data: ["param": "existing"])
            }
            if given != .push, let by, by != .push {
                throw .invalidParams("\"existing\" says what a push does when the stack already shows the target; it goes with by: push, not \(by.rawValue)", data: ["param": "existing"])
            }
            if given != .push, popUpTo != nil {
                throw .invalidParams("give \"existing\" or \"popUpTo\", not both: existing: pop already goes back to the screen it finds", data: ["param": "existing"])
            }
            existing = given
        }
        let merge = try p.bool(.merge) ?? false
        if merge && existing == .push && by != .select {
            throw .invalidParams("\"merge\": true merges \"with\" into the params of the screen \"existing\" finds or of the tab \"by\": \"select\" selects, so it needs existing: top or pop, or by: select", data: ["param": "merge"])
        }
        let from = try p.string(.from), ifVersion = try p.int(.ifVersion)
        let dryRun = try p.bool(.dryRun) ?? false, detach = try p.bool(.detach) ?? false, progress = try p.bool(.progress) ?? false
        let options = NavigateOptions(toName: toName, route: route, from: from, key: key, hints: hints, popUpTo: popUpTo, then: p.value(.then),
                                      existing: existing, merge: merge, force: try p.bool(.force) ?? false)
        return NavigateRequest(state: state, coordinator: coordinator, by: by, withView: withView, ifVersion: ifVersion,
                               dryRun: dryRun, detach: detach, progress: progress, options: options)
    }
}
