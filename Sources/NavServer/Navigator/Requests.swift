import JSON
import NavGraph
import NavigationCore

/// The navigation methods' requests as the navigator takes them: decoded by the methods layer
/// (`Methods/<Name>.swift`, reading params in place), checked for their shape there, and
/// checked against the graph, the tree and the limits here. The navigator knows no JSON-RPC call.
/// The two of every navigation (navigate, dismiss) are not copyable: handed over and read in place,
/// never copied field by field; they are made whole, by their full initializer (each field assigned
/// after `init` destroys the value it replaces).

/// `navigate`. What most navigations give (a screen found by its name's bytes, a presentation, a
/// setup model, the flags) is held here; the params few give (a route, `from`, `key`, `to` by a
/// name not found that way, and the options) are in one ``NavigateOptions``, nil for the others,
/// so that dropping the usual request releases its session and one nil.
struct NavigateRequest: ~Copyable {
    let state: SessionState
    /// `to`, found among the graph's coordinators by its bytes when it was read (the hot path).
    let coordinator: Int?
    let by: Presentation?
    /// `with` where it lies in the request: the plan checks it against the target's setup there
    /// (``Schema/accepts(inPlace:)``) and writes the new node's setup text from it, or makes its
    /// value. Valid only while the request is handled: a request is planned in the call that
    /// decoded it, and never kept.
    let withView: JSONView?
    let ifVersion: Int?
    let dryRun: Bool
    /// Goes on if its client disconnects (`navctl --no-wait`).
    let detach: Bool
    /// The client that asked hears `navigationPending` too.
    let progress: Bool
    /// The params few navigations give; nil for the others.
    let options: NavigateOptions?

    init(state: SessionState, coordinator: Int?, by: Presentation?, withView: JSONView?, ifVersion: Int?,
         dryRun: Bool, detach: Bool, progress: Bool, options: NavigateOptions?) {
        self.state = state
        self.coordinator = coordinator
        self.by = by
        self.withView = withView
        self.ifVersion = ifVersion
        self.dryRun = dryRun
        self.detach = detach
        self.progress = progress
        self.options = options
    }

    /// A navigation asked in the process (tests, a caller without a request line): `to` by its
    /// coordinator's index or by name, `with` as a value.
    init(state: SessionState, coordinator: Int? = nil, toName: String? = nil, by: Presentation? = nil, with: JSONObject? = nil) {
        self.init(state: state, coordinator: coordinator, by: by, withView: nil, ifVersion: nil, dryRun: false, detach: false, progress: false,
                  options: toName == nil && with == nil ? nil
                      : NavigateOptions(toName: toName, with: with, route: nil, from: nil, key: nil, hints: nil, popUpTo: nil, then: nil,
                                        existing: .push, merge: false, force: false))
    }

    /// `to` as given, when it was not found among the coordinators by its bytes (for the error, or
    /// a route given too).
    var toName: String? { options?.toName }
    var from: String? { options?.from }
    var key: String? { options?.key }
}

/// `navigate`'s params that few navigations give: `to` by a name not found among the coordinators
/// by its bytes, `route`, `from`, `key`, `hints`, `popUpTo`, `then`, `existing` (with `merge`) and
/// `force`; and `with` as a value, from a caller in the process.
final class NavigateOptions {
    let toName: String?
    let with: JSONObject?
    let route: String?
    let from: String?
    let key: String?
    let hints: JSONValue?
    let popUpTo: (to: String, inclusive: Bool)?
    /// `then` as given: read against the graph when the navigation is planned, after a `key` used
    /// before has had its reply replayed (a retry gets the first reply even when the graph
    /// changed in between).
    let then: JSONValue?
    let existing: Existing
    let merge: Bool
    /// `force: true`: a `replace` or `root` removes guarded screens without running their `leave:`.
    let force: Bool

    init(toName: String?, with: JSONObject? = nil, route: String?, from: String?, key: String?, hints: JSONValue?, popUpTo: (to: String, inclusive: Bool)?,
         then: JSONValue?, existing: Existing, merge: Bool, force: Bool) {
        self.toName = toName
        self.with = with
        self.route = route
        self.from = from
        self.key = key
        self.hints = hints
        self.popUpTo = popUpTo
        self.then = then
        self.existing = existing
        self.merge = merge
        self.force = force
    }
}

/// `open {url}`.
struct OpenRequest {
    let state: SessionState
    let url: String
    var dryRun = false
    var ifVersion: Int?
    /// `by: push`: only the link's last screen, navigated to from the visible screen.
    var pushesLastScreen = false
    /// With `by: push`: what is above this screen (and it, `inclusive`) leaves first, as `navigate {popUpTo}`.
    var popUpTo: (to: String, inclusive: Bool)?
    /// Removes guarded screens without running their `leave:` guards.
    var force = false
}

/// `reset {}` (`steps` nil: the graph's root) or `reset {to: [...]}`.
struct ResetRequest {
    let state: SessionState
    let steps: [ResetStep]?
    var ifVersion: Int?
    /// Removes guarded screens without running their `leave:` guards.
    var force = false
}

/// `dismiss {node?}` or `dismiss {to, inclusive?}`, with a `result` for the screen below. The
/// usual dismiss (the visible top, nothing handed on) holds its session alone: what the others give
/// is in one ``DismissOptions``, so that dropping the usual request releases its session and nil.
struct DismissRequest: ~Copyable {
    let state: SessionState
    let options: DismissOptions?

    init(state: SessionState, node: String? = nil, to: String? = nil, inclusive: Bool = false, result: JSONValue? = nil, merge: Bool = false) {
        self.state = state
        options = node == nil && to == nil && !inclusive && result == nil && !merge ? nil
            : DismissOptions(node: node, to: to, inclusive: inclusive, result: result, merge: merge)
    }

    /// The usual dismiss: the visible top, nothing handed on.
    init(state: SessionState) {
        self.state = state
        options = nil
    }
}

/// `dismiss`'s params beside its session.
final class DismissOptions {
    let node: String?
    let to: String?
    let inclusive: Bool
    let result: JSONValue?
    /// `merge: true`: `result` (an object) is merged into the params of the screen left on top.
    let merge: Bool

    init(node: String?, to: String?, inclusive: Bool, result: JSONValue?, merge: Bool) {
        self.node = node
        self.to = to
        self.inclusive = inclusive
        self.result = result
        self.merge = merge
    }
}

/// `flowComplete {flow, result | error | cancelled}`.
struct FlowCompleteRequest {
    let state: SessionState
    let flow: String
    let outcome: Session.FlowOutcome
}

/// `update {node, with, push?}`.
struct UpdateRequest {
    let state: SessionState
    let node: String
    let with: JSONObject
    var push = false
}

/// `link.resolve {node?}`.
struct LinkResolveRequest {
    let state: SessionState
    var node: String?
}

/// `context.set {facts}`.
struct ContextSetRequest {
    let state: SessionState
    let facts: JSONObject
}

/// `context.get {facts?}`: every fact, or those named.
struct ContextGetRequest {
    let state: SessionState
    var names: [String]?
}

/// `session.open {name}` and `session.close {name}`.
struct SessionNameRequest {
    let name: String
}

/// `session.list {after?, limit?}`: a page of names after the cursor.
struct SessionListRequest {
    var after = 0
    var limit = Navigator.sessionListPage
}

/// `provide {preconditions}`.
struct ProvideRequest {
    let names: [String]
}

/// `cancel {navigation}`.
struct CancelRequest {
    let navigation: String
}
