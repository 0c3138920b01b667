import JSON

/// One request to navd: its method and params. The typed constructors below are the one place where
/// clients spell navd's methods; ``NavClient`` (blocking) and ``NavLoopClient`` (libuv) both send them.
public struct NavCall: Sendable {
    public let method: String
    public let params: JSONObject

    public init(_ method: String, _ params: JSONObject = [:]) {
        self.method = method
        self.params = params
    }

    /// How a navigation goes on screen (`by`).
    public enum Style: String, Sendable, CaseIterable {
        case push, present, replace, root, select
    }

    /// How a flow ends.
    public enum FlowOutcome: Sendable {
        case result(JSONValue)
        case error(message: String, data: JSONValue? = nil)
        case cancelled
    }

    private static func with(session: String?, _ members: [(String, JSONValue?)]) -> JSONObject {
        var o = JSONObject()
        if let session { o["session"] = .string(session) }
        for (k, v) in members { if let v { o[k] = v } }
        return o
    }

    public static func ping() -> NavCall { NavCall("ping") }

    public static func hello(client: String? = nil, token: String? = nil) -> NavCall {
        NavCall("hello", with(session: nil, [("client", client.map(JSONValue.string)), ("token", token.map(JSONValue.string))]))
    }

    public static func stats() -> NavCall { NavCall("stats") }

    public static func describeGraph() -> NavCall { NavCall("graph.describe") }

    /// `navigate {existing}`: what a push does when the stack already shows a screen of the target.
    public enum Existing: String, Sendable, CaseIterable {
        /// A new screen, always (navd's default).
        case push
        /// The screen on top, if it is the target's, stays and takes the params.
        case top
        /// The nearest such screen in the stack is popped to and takes the params; else a push.
        case pop
    }

    /// `popUpTo` pops to that screen (a coordinator or node id; `popInclusive`: it too) first, in the
    /// same commit; `hints` are carried to front-ends; `then` (to a flow) says where to go when it
    /// completes; `existing` (with `merge`: the params merged) reuses a screen already in the stack.
    public static func navigate(to target: String, by style: Style? = nil, with setup: JSONValue? = nil, from source: String? = nil,
                                session: String? = nil, ifVersion: Int? = nil, key: String? = nil, dryRun: Bool = false,
                                popUpTo: String? = nil, popInclusive: Bool = false, hints: JSONObject? = nil, then: JSONValue? = nil,
                                existing: Existing? = nil, merge: Bool = false, force: Bool = false) -> NavCall {
        NavCall("navigate", with(session: session, [
            ("force", force ? .bool(true) : nil),
            ("to", .string(target)), ("by", style.map { .string($0.rawValue) }), ("with", setup),
            ("from", source.map(JSONValue.string)), ("ifVersion", ifVersion.map(JSONValue.int)),
            ("key", key.map(JSONValue.string)), ("dryRun", dryRun ? .bool(true) : nil),
            ("popUpTo", popUpTo.map { ["to": .string($0), "inclusive": .bool(popInclusive)] }),
            ("hints", hints.map(JSONValue.object)), ("then", then),
            ("existing", existing.map { .string($0.rawValue) }), ("merge", merge ? .bool(true) : nil),
        ]))
    }

    public static func navigate(route: String, by style: Style? = nil, with setup: JSONValue? = nil, from source: String? = nil,
                                session: String? = nil, ifVersion: Int? = nil, key: String? = nil, dryRun: Bool = false,
                                existing: Existing? = nil, merge: Bool = false) -> NavCall {
        NavCall("navigate", with(session: session, [
            ("route", .string(route)), ("by", style.map { .string($0.rawValue) }), ("with", setup),
            ("from", source.map(JSONValue.string)), ("ifVersion", ifVersion.map(JSONValue.int)),
            ("key", key.map(JSONValue.string)), ("dryRun", dryRun ? .bool(true) : nil),
            ("existing", existing.map { .string($0.rawValue) }), ("merge", merge ? .bool(true) : nil),
        ]))
    }

    public static func dismiss(node: String? = nil, session: String? = nil) -> NavCall {
        NavCall("dismiss", with(session: session, [("node", node.map(JSONValue.string))]))
    }

    /// `dismiss {node?, result}`: dismiss with a result for the screen below (`screenResult`);
    /// `merge`: the result (an object) is merged into that screen's params, so that it stays.
    public static func dismiss(node: String? = nil, result: JSONValue, merge: Bool = false, session: String? = nil) -> NavCall {
        NavCall("dismiss", with(session: session, [("node", node.map(JSONValue.string)), ("result", result), ("merge", merge ? .bool(true) : nil)]))
    }

    /// `dismiss {to, inclusive?, result?}`: pop to the nearest screen of `target` (a coordinator or a node id).
    public static func dismiss(to target: String, inclusive: Bool = false, result: JSONValue? = nil, session: String? = nil) -> NavCall {
        NavCall("dismiss", with(session: session, [("to", .string(target)), ("inclusive", inclusive ? .bool(true) : nil), ("result", result)]))
    }

    /// `update {node, with, push?}`: merge fields into a live screen's params (a null removes one);
    /// `push`: the params it had are kept (`paramsHistory`) for `dismiss` to restore.
    public static func update(node: String, with fields: JSONObject, push: Bool = false, session: String? = nil) -> NavCall {
        NavCall("update", with(session: session, [("node", .string(node)), ("with", .object(fields)), ("push", push ? .bool(true) : nil)]))
    }

    /// `reset {}` (the graph's root) or `reset {to: [...]}` (coordinator names or {to, with?, by?}).
    /// `force`: guarded screens leave without their leave guards.
    public static func reset(to screens: [JSONValue]? = nil, session: String? = nil, force: Bool = false) -> NavCall {
        NavCall("reset", with(session: session, [("to", screens.map(JSONValue.array)), ("force", force ? .bool(true) : nil)]))
    }

    /// `link.resolve {node?}`: the URL of the visible path (or of a node).
    public static func resolveLink(node: String? = nil, session: String? = nil) -> NavCall {
        NavCall("link.resolve", with(session: session, [("node", node.map(JSONValue.string))]))
    }

    public static func flowComplete(flow: String, _ outcome: FlowOutcome, session: String? = nil) -> NavCall {
        var o = with(session: session, [("flow", .string(flow))])
        switch outcome {
        case .result(let r): o["result"] = r
        case .error(let message, let data):
            var e: JSONObject = ["message": .string(message)]
            if let data { e["data"] = data }
            o["error"] = .object(e)
        case .cancelled: o["cancelled"] = true
        }
        return NavCall("flowComplete", o)
    }

    /// `open {url}`; `pushingLastScreen`: `by: push`, only the link's last screen, pushed from the
    /// visible screen, after `popUpTo` (a coordinator or node; `popInclusive`: it too) is popped to.
    public static func open(url: String, session: String? = nil, ifVersion: Int? = nil, dryRun: Bool = false,
                            pushingLastScreen: Bool = false, force: Bool = false, popUpTo: String? = nil, popInclusive: Bool = false) -> NavCall {
        NavCall("open", with(session: session, [
            ("force", force ? .bool(true) : nil),
            ("url", .string(url)), ("ifVersion", ifVersion.map(JSONValue.int)), ("dryRun", dryRun ? .bool(true) : nil),
            ("by", pushingLastScreen ? "push" : nil),
            ("popUpTo", popUpTo.map { ["to": .string($0), "inclusive": .bool(popInclusive)] }),
        ]))
    }

    public static func tree(session: String? = nil) -> NavCall { NavCall("tree", with(session: session, [])) }
    /// `subscribe`; `compact`: hear `stackChanged` in the compact form (``TreeMirror`` reads both).
    public static func subscribe(session: String? = nil, compact: Bool = false) -> NavCall {
        NavCall("subscribe", with(session: session, [("notifications", compact ? "compact" : nil)]))
    }
    public static func unsubscribe(session: String? = nil) -> NavCall { NavCall("unsubscribe", with(session: session, [])) }

    /// Merges facts into the session's context (a `null` value removes one).
    public static func setFacts(_ facts: JSONObject, session: String? = nil) -> NavCall {
        NavCall("context.set", with(session: session, [("facts", .object(facts))]))
    }

    /// All facts, or the named ones.
    public static func facts(_ names: [String]? = nil, session: String? = nil) -> NavCall {
        NavCall("context.get", with(session: session, [("facts", names.map { .array($0.map(JSONValue.string)) })]))
    }

    /// Declares this connection the provider of the named preconditions.
    public static func provide(_ preconditions: [String]) -> NavCall {
        NavCall("provide", ["preconditions": .array(preconditions.map(JSONValue.string))])
    }

    public static func cancel(navigation: String) -> NavCall { NavCall("cancel", ["navigation": .string(navigation)]) }

    public static func openSession(_ name: String) -> NavCall { NavCall("session.open", ["name": .string(name)]) }
    public static func closeSession(_ name: String) -> NavCall { NavCall("session.close", ["name": .string(name)]) }
    public static func listSessions() -> NavCall { NavCall("session.list") }

    public static func reloadGraph(path: String? = nil, force: Bool = false) -> NavCall {
        NavCall("graph.reload", with(session: nil, [("path", path.map(JSONValue.string)), ("force", force ? .bool(true) : nil)]))
    }

    /// The answer to a request navd sent (`id`, `method`): `result`, or "not handled" when nil.
    static func answer(id: JSONValue, method: String, result: JSONValue?) -> [UInt8] {
        let message: JSONValue
        if let result {
            message = ["jsonrpc": "2.0", "id": id, "result": result]
        } else {
            message = ["jsonrpc": "2.0", "id": id,
                       "error": ["code": -32601, "message": .string("this client does not handle \(method)"), "data": ["kind": "methodNotFound"]]]
        }
        var bytes = JSONWriter.encode(message)
        bytes.append(10)
        return bytes
    }

    /// The request as one JSON-RPC line (with its newline).
    public func line(id: Int) -> [UInt8] {
        var bytes = JSONWriter.encode(["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": .object(params)])
        bytes.append(10)
        return bytes
    }
}

/// What a committing method (`navigate`, `open`, `dismiss`, `flowComplete`) answered.
public struct Committed: Sendable {
    /// The navigation's id (`navigate`, `open`).
    public let navigation: String?
    /// The node created or selected (`navigate`, `open`).
    public let node: String?
    public let version: Int
    public let visible: [String]
    /// Ids that left the tree (`dismiss`, `flowComplete`).
    public let removed: [String]
    /// The whole result, for fields not named here (`dryRun`'s `changes`, …).
    public let raw: JSONValue

    public init(_ r: JSONValue) {
        navigation = r["navigation"]?.stringValue
        node = r["node"]?.stringValue
        version = r["version"]?.intValue ?? 0
        visible = r["visible"]?.arrayValue?.compactMap(\.stringValue) ?? []
        removed = r["removed"]?.arrayValue?.compactMap(\.stringValue) ?? []
        raw = r
    }
}

/// A request navd sends to a provider: `precondition.evaluate` or `precondition.recover`.
public struct PreconditionRequest: Sendable {
    public let method: String
    /// The qualified name of the precondition evaluated or recovered.
    public let precondition: String
    /// The name this client provided that navd asks: a recovery's provider (`recover: {provider:
    /// NAME}`) when it is not the precondition itself, else ``precondition``.
    public let provider: String
    public let params: JSONValue

    public init(method: String, params: JSONValue) {
        self.method = method
        self.params = params
        precondition = params["precondition"]?.stringValue ?? ""
        provider = params["provider"]?.stringValue ?? precondition
    }
}

/// A provider's answer: to `precondition.evaluate` `{passed, reason?}`, to `precondition.recover`
/// `{recovered, reason?}`.
public enum PreconditionAnswer: Sendable {
    case pass
    case fail(String)

    public func json(for request: PreconditionRequest) -> JSONValue {
        let key = request.method == "precondition.recover" ? "recovered" : "passed"
        switch self {
        case .pass: return .object([key: true])
        case .fail(let reason): return .object([key: false, "reason": .string(reason)])
        }
    }
}

extension NavClientError {
    /// The error of a JSON-RPC `error` member.
    public init(rpcError e: JSONValue) {
        self.init(code: e["code"]?.intValue ?? 0, kind: e["data"]?["kind"]?.stringValue ?? "error",
                  message: e["message"]?.stringValue ?? "", data: e["data"] ?? .null)
    }

    /// navd could not be reached or closed the connection (code 0).
    public static func connection(_ message: String) -> NavClientError {
        NavClientError(code: 0, kind: "connection", message: message, data: .null)
    }

    /// What navd sent is not JSON-RPC the client can read (not JSON, nested too deep, a line longer
    /// than ``NavClient/maxLine``).
    public static func protocolError(_ message: String) -> NavClientError {
        NavClientError(code: 0, kind: "protocol", message: message, data: .null)
    }
}
