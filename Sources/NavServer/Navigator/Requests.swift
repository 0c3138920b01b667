import JSON
import NavGraph
import NavigationCore

/// The navigation methods' requests as the navigator takes them: decoded by the methods layer
/// (`Methods/<Name>.swift`, reading params in place), checked for their shape there, and
/// checked against the graph, the tree and the limits here. The navigator knows no JSON-RPC call.
/// The two of every navigation (navigate, dismiss) are not copyable: handed over and read in place,
/// never copied field by field; they are made whole, by their full initializer (each field assigned
/// after `init` destroys the value it replaces).

/// `navigate`.
struct NavigateRequest: ~Copyable {
    let state: SessionState
    /// `to`, found among the graph's coordinators by its bytes when it was read (the hot path).
    var coordinator: Int?
    /// `to` as given, when it was not found that way (for the error, or a route given too).
    var toName: String?
    var route: String?
    var by: Presentation?
    /// `with` where it lies in the request: the plan checks it against the target's setup there
    /// (``Schema/accepts(inPlace:)``) and writes the new node's setup text from it, or makes its
    /// value. Valid only while the request is handled: a request is planned in the call that
    /// decoded it, and never kept.
    var withView: JSONView?
    /// `with` as a value, given by a caller in the process in place of ``withView``.
    var with: JSONObject?
    var from: String?
    var ifVersion: Int?
    var key: String?
    var dryRun = false
    /// Goes on if its client disconnects (`navctl --no-wait`).
    var detach = false
    /// The client that asked hears `navigationPending` too.
    var progress = false
    /// `hints`, `popUpTo`, `then` and `existing`, which few navigations give: one reference, nil for
    /// the others.
    let options: NavigateOptions?

    init(state: SessionState, coordinator: Int? = nil, toName: String? = nil, route: String? = nil, by: Presentation? = nil,
         withView: JSONView? = nil, from: String? = nil, ifVersion: Int? = nil, key: String? = nil,
         dryRun: Bool = false, detach: Bool = false, progress: Bool = false, hints: JSONValue? = nil,
         popUpTo: (to: String, inclusive: Bool)? = nil, then: JSONValue? = nil, existing: Existing = .push, merge: Bool = false,
         force: Bool = false) {
        self.state = state
        self.coordinator = coordinator
        self.toName = toName
        self.route = route
        self.by = by
        self.withView = withView
        self.from = from
        self.ifVersion = ifVersion
        self.key = key
        self.dryRun = dryRun
        self.detach = detach
        self.progress = progress
        options = hints == nil && popUpTo == nil && then == nil && existing == .push && !merge && !force ? nil
            : NavigateOptions(hints: hints, popUpTo: popUpTo, then: then, existing: existing, merge: merge, force: force)
    }
}

/// `navigate`'s `hints`, `popUpTo`, `then`, `existing` (with `merge`) and `force`.
final class NavigateOptions {
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

    init(hints: JSONValue?, popUpTo: (to: String, inclusive: Bool)?, then: JSONValue?, existing: Existing, merge: Bool, force: Bool) {
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

/// `dismiss {node?}` or `dismiss {to, inclusive?}`, with a `result` for the screen below.
struct DismissRequest: ~Copyable {
    let state: SessionState
    var node: String?
    var to: String?
    var inclusive = false
    var result: JSONValue?
    /// `merge: true`: `result` (an object) is merged into the params of the screen left on top.
    var merge = false

    init(state: SessionState, node: String? = nil, to: String? = nil, inclusive: Bool = false, result: JSONValue? = nil, merge: Bool = false) {
        self.state = state
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
