import JSON
import NavGraph
import NavigationCore
import RPC

/// The navigation methods: each registered with what it is, its params decoded here (read in place
/// from the request) into the navigator's requests (`Navigator/Requests.swift`) or arguments, the
/// navigator's answer given back. What is wrong with a param's shape is answered here; what is wrong
/// with it for the graph, the tree or the limits, by the navigator.
enum NavigationMethods {
    /// Registers navigate, open, reset, dismiss, update, flowComplete, link.resolve, tree,
    /// subscribe/unsubscribe, context.*, session.*, provide and cancel. Handlers hold the navigator
    /// strongly: the server owns the table and empties it at shutdown, which ends the cycle.
    /// Registering a method with its param enum makes the enum's table now, not on a first request.
    static func register(in methods: MethodTable, _ n: Navigator) {
        let session = MethodTable.SessionUse.acts(on: ["session"])
        methods.register("navigate", NavigateParam.self, changes: true, session: session) { call in
            do throws(RPCError) { n.navigate(try navigateRequest(call, n), call) } catch { call.fail(error) }
        }
        methods.register("open", OpenParam.self, changes: true, session: session) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<OpenParam>(call)
                var r = OpenRequest(state: try n.state(p.given(.session), for: call.client),
                                    url: try p.requiredString(.url, "the deep link to open, such as \"/product/42\" or \"shop://app/product/42\""))
                r.dryRun = try p.bool(.dryRun) ?? false
                r.ifVersion = try p.int(.ifVersion)
                r.force = try p.bool(.force) ?? false
                if let by = try p.string(.by) {
                    guard by == "push" else {
                        throw .invalidParams("`open` takes by: \"push\" (the link's last screen, pushed from the visible screen as navigate would) or no \"by\" (the link builds its whole stack); not \"\(by)\"", data: ["param": "by"])
                    }
                    r.pushesLastScreen = true
                }
                if let pop = p.value(.popUpTo) {
                    guard r.pushesLastScreen else {
                        throw .invalidParams("\"popUpTo\" goes with by: \"push\" (the link's last screen is pushed from the screen the pop leaves on top); without \"by\" the link builds its whole stack, replacing the one shown", data: ["param": "popUpTo"])
                    }
                    r.popUpTo = try popUpToParam(pop)
                }
                n.open(r, call)
            }
        }
        methods.register("reset", ResetParam.self, changes: true, session: session) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<ResetParam>(call)
                let state = try n.state(p.given(.session), for: call.client)
                n.reset(ResetRequest(state: state, steps: try resetSteps(p.value(.to), max: n.config.maxBatch), ifVersion: try p.int(.ifVersion),
                                     force: try p.bool(.force) ?? false), call)
            }
        }
        methods.register("dismiss", DismissParam.self, changes: true, session: session) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<DismissParam>(call)
                let state = try n.state(p.given(.session), for: call.client)
                let node = try p.string(.node), to = try p.string(.to)
                if node != nil && to != nil {
                    throw .invalidParams("`dismiss` takes \"node\" (that node and what is above it) or \"to\" (pop to a screen), not both", data: ["param": "to"])
                }
                let result = p.value(.result)
                if let result { try checkSize(result, "\"result\"", limit: Navigator.maxHintsBytes, param: "result") }
                let merge = try p.bool(.merge) ?? false
                if merge && result?.objectValue == nil {
                    throw .invalidParams("`merge: true` merges \"result\" into the params of the screen below, so \"result\" must be an object of its setup's fields, like {\"address\": \"…\"}", data: ["param": "result"])
                }
                n.dismiss(DismissRequest(state: state, node: node, to: to, inclusive: try p.bool(.inclusive) ?? false, result: result, merge: merge), call)
            }
        }
        methods.register("update", UpdateParam.self, changes: true, session: session) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<UpdateParam>(call)
                let state = try n.state(p.given(.session), for: call.client)
                let node = try p.requiredString(.node, "the id of the live screen whose params to change")
                guard let with = try p.objectParam(.with) else {
                    throw .invalidParams("`update` needs \"with\": the fields to merge into the screen's params (null removes one)", data: ["param": "with"])
                }
                let push = try p.bool(.push) ?? false
                do throws(NavError) { return try n.update(node, with: with, push: push, in: state, by: call.client) } catch { throw error.rpc }
            }
        }
        methods.register("flowComplete", FlowCompleteParam.self, changes: true, session: session) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<FlowCompleteParam>(call)
                let state = try n.state(p.given(.session), for: call.client)
                let flow = try p.requiredString(.flow, "the id of the flow node to complete")
                n.flowComplete(FlowCompleteRequest(state: state, flow: flow, outcome: try flowOutcome(p)), call)
            }
        }
        methods.register("link.resolve", LinkResolveParam.self, changes: false, session: session) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<LinkResolveParam>(call)
                let state = try n.state(p.given(.session), for: call.client)
                let node = try p.string(.node)
                do throws(NavError) { return try n.resolveLink(node, in: state) } catch { throw error.rpc }
            }
        }
        methods.register("tree", SessionParam.self, changes: false, session: session) { call in
            call.answer { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionParam>(call)
                return Snapshot(session: try n.state(p.given(.session), for: call.client).session)
            }
        }
        methods.register("subscribe", SessionParam.self, changes: false, session: .watches(["session"])) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<SessionParam>(call)
                // Cluster mode: a session another node owns is heard here through the store.
                if n.publishesChanges, n.isRemote(try p.string(.session) ?? "main") { return n.subscribeRemote(try p.string(.session) ?? "main", call) }
                let state = try n.state(p.given(.session), for: call.client)
                n.subscribe(call.client, to: state)
                call.succeed(Snapshot(session: state.session))
            }
        }
        methods.register("unsubscribe", SessionParam.self, changes: false, session: .watches(["session"])) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<SessionParam>(call)
                if n.publishesChanges, n.isRemote(try p.string(.session) ?? "main") { return n.unsubscribeRemote(try p.string(.session) ?? "main", call) }
                let state = try n.state(p.given(.session), for: call.client)
                n.unsubscribe(call.client, from: state)
                call.succeed(Snapshot(session: state.session))
            }
        }
        methods.register("context.set", ContextParam.self, changes: true, session: session) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ContextParam>(call)
                let state = try n.state(p.given(.session), for: call.client)
                guard let facts = try p.objectParam(.facts) else {
                    throw .invalidParams("`context.set` needs \"facts\": an object of fact name → JSON value (null removes a fact)", data: ["param": "facts"])
                }
                return try n.setFacts(facts, in: state, by: call.client)
            }
        }
        methods.register("context.get", ContextParam.self, changes: false, session: session) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ContextParam>(call)
                let state = try n.state(p.given(.session), for: call.client)
                return n.facts(try p.stringArray(.facts), in: state)
            }
        }
        methods.register("session.open", SessionNameParam.self, changes: true, session: .acts(on: ["name", "session"])) { call in
            call.answer { () throws(RPCError) -> Snapshot in
                let p = try Params<SessionNameParam>(call)
                let given = try p.string(.name), alias = try p.string(.session)
                guard let name = given ?? alias else {
                    throw .invalidParams("`session.open` needs \"name\": the session's name", data: ["param": "name"])
                }
                return Snapshot(session: try n.openSession(name, by: call.client).session)
            }
        }
        methods.register("session.close", SessionNameParam.self, changes: true, session: .acts(on: ["name", "session"])) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<SessionNameParam>(call)
                let given = try p.string(.name), alias = try p.string(.session)
                guard let name = given ?? alias else {
                    throw .invalidParams("`session.close` needs \"name\": the session's name", data: ["param": "name"])
                }
                try n.closeSession(name, by: call.client)
                return ["ok": true]
            }
        }
        methods.register("session.list", SessionListParam.self, changes: false, session: .none) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<SessionListParam>(call)
                let limit = try p.int(.limit) ?? Navigator.sessionListPage
                guard (1...Navigator.sessionListPage).contains(limit) else {
                    throw .invalidParams("`session.list`'s \"limit\" is \(limit); give 1 to \(Navigator.sessionListPage) names per page",
                                         data: ["param": "limit"])
                }
                var after = 0
                if let cursor = try p.string(.after) {
                    guard let c = Int(cursor), c >= 0 else {
                        throw .invalidParams("`session.list`'s \"after\" is \"\(cursor.prefix(40))\", not a cursor; pass the \"next\" of the previous answer",
                                             data: ["param": "after"])
                    }
                    after = c
                }
                return n.sessionList(after: after, limit: limit)
            }
        }
        methods.register("provide", ProvideParam.self, changes: false, session: .none, roles: [adminRole]) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ProvideParam>(call)
                let names = try n.provide(try p.stringArray(.preconditions) ?? [], by: call.client)
                return ["ok": true, "preconditions": .array(names.map(JSONValue.string))]
            }
        }
        methods.register("cancel", CancelParam.self, changes: true, session: session) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<CancelParam>(call)
                let id = try p.requiredString(.navigation, "the id a navigate reply or navigationPending notification gave")
                return ["cancelled": .bool(n.cancel(id))]
            }
        }
    }

    /// `navigate`'s params, read in place: `to` found among the coordinators by its bytes (a string
    /// is made only for a message), the setup model built in the storage of the node the session
    /// will make next (a node dismissed earlier) and measured as it is read.
    @inline(__always)
    static func navigateRequest(_ call: Call, _ n: Navigator) throws(RPCError) -> NavigateRequest {
        let p = try Params<NavigateParam>(call)
        let state = try n.state(p.given(.session), for: call.client)
        var by: Presentation?
        if let b = try p.string(.by) {
            guard let pr = Presentation(rawValue: b) else {
                throw RPCError.invalidParams("\"by\" must be push, present, replace, root or select, not \"\(b)\"", data: ["param": "by"])
            }
            by = pr
        }
        let route = try p.string(.route)
        var coordinator: Int?, toName: String?
        if let to = try p.stringView(.to) {
            if route == nil, let i = n.graph.coordinatorIndex(utf8: to.stringBytes) { coordinator = i } else { toName = to.string }
        }
        var withBytes: Int?
        let with = try p.objectParam(.with, keys: n.setupKeys, reusing: state.session.takeSpareSetupStorage(), size: &withBytes)
        let key = try p.string(.key)
        if let key { try n.config.checkName(key, "the navigation key", param: "key") }
        var hints: JSONValue?
        if let h = p.value(.hints) {
            guard case .object = h else {
                throw .invalidParams("\"hints\" must be an object of presentation wishes, like {\"animated\": false}", data: ["param": "hints"])
            }
            try checkSize(h, "\"hints\"", limit: Navigator.maxHintsBytes, param: "hints")
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
        return NavigateRequest(state: state, coordinator: coordinator, toName: toName, route: route, by: by, with: with, withBytes: withBytes,
                               from: try p.string(.from), ifVersion: try p.int(.ifVersion), key: key,
                               dryRun: try p.bool(.dryRun) ?? false, detach: try p.bool(.detach) ?? false, progress: try p.bool(.progress) ?? false,
                               hints: hints, popUpTo: popUpTo,
                               then: try p.value(.then).map { v throws(RPCError) in try n.navigationSpec(v, param: "then") },
                               existing: existing, merge: merge, force: try p.bool(.force) ?? false)
    }

    /// `reset`'s `to`: screens as names or `{to, with?, by?}`, at most `max` of them; nil: the root.
    static func resetSteps(_ raw: JSONValue?, max: Int) throws(RPCError) -> [ResetStep]? {
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
                guard let pr = Presentation(rawValue: b), pr == .push || pr == .present else {
                    throw .invalidParams("a reset screen is shown by push or present, not \"\(b)\"", data: ["param": "to"])
                }
                by = pr
            }
            return ResetStep(to: to, with: item["with"]?.objectValue ?? JSONObject(), by: by)
        }
    }

    /// `flowComplete`'s one outcome: `result`, `error` ({message, data?}) or `cancelled: true`.
    static func flowOutcome(_ p: Params<FlowCompleteParam>) throws(RPCError) -> Session.FlowOutcome {
        let given = ([.result, .error, .cancelled] as [FlowCompleteParam]).filter { p.has($0) }.map { "\($0)" }
        guard given.count == 1 else {
            throw .invalidParams("`flowComplete` needs exactly one of \"result\", \"error\" ({message, data?}) or \"cancelled\": true; got \(given.isEmpty ? "none" : given.joined(separator: ", "))",
                                 data: ["param": "result"])
        }
        switch given[0] {
        case "result": return .result(p.value(.result)!)
        case "error":
            guard let e = try p.objectParam(.error), e["message"]?.stringValue != nil else {
                throw .invalidParams("\"error\" must be an object {message: string, data?: any}", data: ["param": "error"])
            }
            return .error(.object(e))
        default:
            guard try p.bool(.cancelled) == true else { throw .invalidParams("\"cancelled\" must be true", data: ["param": "cancelled"]) }
            return .cancelled
        }
    }

    /// Refuses a value larger than `limit` bytes of JSON.
    static func checkSize(_ v: JSONValue, _ what: String, limit: Int, param: String) throws(RPCError) {
        let size = v.encodedSize
        if size > limit {
            throw .limitExceeded("\(what) is \(size) bytes of JSON; it may be at most \(limit)", limit: param, max: limit)
        }
    }
}

extension Call {
    /// Runs `body`, which answers the call itself (now or later), or answers the error it throws.
    @inline(__always)
    func answerOrRun(_ body: () throws(RPCError) -> Void) {
        do { try body() } catch { fail(error) }
    }
}

/// The params of each navigation method (see ``ParamName``).
enum DismissParam: Int, ParamName {
    case session, node, to, inclusive, result, merge
    static let table = ParamTable(Self.self)
}

enum UpdateParam: Int, ParamName {
    case session, node, with, push
    static let table = ParamTable(Self.self)
}

enum ResetParam: Int, ParamName {
    case session, to, ifVersion, force
    static let table = ParamTable(Self.self)
}

enum FlowCompleteParam: Int, ParamName {
    case session, flow, result, error, cancelled
    static let table = ParamTable(Self.self)
}

enum ContextParam: Int, ParamName {
    case session, facts
    static let table = ParamTable(Self.self)
}

enum SessionListParam: Int, ParamName {
    case session, after, limit
    static let table = ParamTable(Self.self)
}

enum SessionNameParam: Int, ParamName {
    case name, session
    static let table = ParamTable(Self.self)
}

enum ProvideParam: Int, ParamName {
    case preconditions, session
    static let table = ParamTable(Self.self)
}

enum CancelParam: Int, ParamName {
    case navigation, session
    static let table = ParamTable(Self.self)
}

enum NavigateParam: Int, ParamName {
    case session, to, route, by, with, from, ifVersion, key, dryRun, hints, popUpTo, then, detach, progress, existing, merge, force
    static let table = ParamTable(Self.self)
}

enum LinkResolveParam: Int, ParamName {
    case session, node
    static let table = ParamTable(Self.self)
}

/// `popUpTo: {to, inclusive?}` (`navigate` and `open`).
func popUpToParam(_ pop: JSONValue) throws(RPCError) -> (to: String, inclusive: Bool) {
    guard let target = pop["to"]?.stringValue, pop.objectValue?.keys.allSatisfy({ $0 == "to" || $0 == "inclusive" }) == true else {
        throw .invalidParams("\"popUpTo\" must be {to: COORDINATOR_OR_NODE, inclusive?: bool}, like {\"to\": \"shop.Home\"}", data: ["param": "popUpTo"])
    }
    var inclusive = false
    if let i = pop["inclusive"] {
        guard case .bool(let b) = i else { throw .invalidParams("\"popUpTo.inclusive\" must be true or false", data: ["param": "popUpTo"]) }
        inclusive = b
    }
    return (target, inclusive)
}

enum OpenParam: Int, ParamName {
    case session, url, dryRun, ifVersion, by, force, popUpTo
    static let table = ParamTable(Self.self)
}
