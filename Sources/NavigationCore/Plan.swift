import JSON
import NavGraph
import RPC

/// Where a navigation goes: a coordinator of the graph (by index), and the style and setup a route
/// supplies (a navigation's own `by` and `with` win over them).
public struct Destination: Sendable {
    public let target: Int
    public let by: Presentation?
    public let with: JSONObject?
    /// The route it comes from (its index in the graph's routes), or -1.
    public var route = -1

    public init(target: Int, by: Presentation? = nil, with: JSONObject? = nil) {
        self.target = target
        self.by = by
        self.with = with
    }
}

extension NavigationGraph {
    /// The destination `to` (a coordinator) or `route` (a route name) names, or the error that says
    /// what is wrong: neither or both given, an unknown or ambiguous name (with a suggestion).
    public func destination(to: String?, route routeName: String?) throws(NavError) -> Destination {
        if let routeName {
            if to != nil { throw NavError(.invalidParams, "give either \"to\" (a coordinator) or \"route\" (a route name), not both", data: ["param": "to"]) }
            guard let route = route(named: routeName) else {
                if let amb = ambiguity(of: routeName) {
                    throw NavError(.unknownTarget, "route `\(routeName)` is declared by several modules; say which: \(briefList(amb, none: ""))", data: ["route": .string(routeName)])
                }
                let hint = suggestRoute(for: routeName).map { "; did you mean `\($0)`?" } ?? "; " + (routes.isEmpty ? "the graph declares no routes (`routes:` in a module file)" : "the routes are \(briefList(routes.map(\.name), none: ""))")
                throw NavError(.unknownTarget, "no route `\(routeName)`\(hint)", data: ["route": .string(routeName)])
            }
            var d = Destination(target: route.to, by: route.by, with: route.with)
            d.route = routeNumber(named: routeName) ?? -1
            return d
        }
        guard let name = to else {
            throw NavError(.invalidParams, "navigate needs \"to\" (a coordinator such as \"shop.Product\") or \"route\" (a route name)", data: ["param": "to"])
        }
        guard let c = coordinator(named: name) else {
            if name.isEmpty {
                throw NavError(.unknownTarget, "\"to\" is empty; name a coordinator of the graph, qualified (\"module.Name\") or not (graph.describe lists them)",
                               data: ["to": ""])
            }
            if let amb = ambiguity(of: name) {
                throw NavError(.unknownTarget, "`\(name)` is declared by several modules; say which: \(briefList(amb, none: ""))", data: ["to": .string(name)])
            }
            if route(named: name) != nil {
                // A route's name given as "to": say where it goes.
                throw NavError(.unknownTarget, "`\(name)` is not a coordinator of the graph but a route: give it as \"route\": \"\(name)\" (navctl route \(name))",
                               data: ["to": .string(name)])
            }
            let hint = suggestCoordinator(for: name).map { "; did you mean `\($0)`?" } ?? ""
            throw NavError(.unknownTarget, "`\(name)` is not a coordinator of the graph\(hint)", data: ["to": .string(name)])
        }
        return Destination(target: c.index)
    }
}

/// A navigation that passed validation and waits for its preconditions, then its commit.
public struct Plan: Sendable {
    public let target: Int
    public let by: Presentation
    /// The setup model the new node gets, as the text navd writes for it.
    public let setup: WrittenJSON
    /// The setup model as a value, read back from ``setup``.
    public var params: JSONValue { setup.value }
    /// ``setup`` in bytes (what the new node adds to its session's setup models).
    @inlinable public var paramsBytes: Int { setup.count }
    /// The number of the source node (its id is ``sourceId``).
    public let source: Int
    public let ifVersion: Int?
    /// Preconditions to evaluate, in order.
    public let preconditions: [Int]
    /// For a deep link (`open`): the whole stack to build, bottom first (in ``extras``: few plans build one).
    public var link: [LinkStep]? {
        @inlinable get { extras?.link }
        set { extras = PlanExtras(extras, link: .some(newValue)) }
    }
    /// `select {with}`: ``params`` are the tab's first screen's, merged with `with` and validated.
    public var selectsWith = false
    /// The coordinator of the source node when the plan was made (-1: not noted), so that coverage
    /// need not look it up again (a commit may remove the source).
    public var sourceCoordinator = -1
    /// What few navigations carry (hints, popUpTo, then, a screen reused), boxed so the plan of every other one stays
    /// small to copy.
    @usableFromInline var extras: PlanExtras?

    /// Presentation hints for front-ends (`navigate {hints}`): opaque to navd, carried to `stackChanged`.
    public var hints: JSONValue? {
        @inlinable get { extras?.hints }
        set { extras = PlanExtras(extras, hints: newValue) }
    }
    /// `navigate {popUpTo}`: the screen to pop to (its number) and whether it goes too; the target is
    /// then placed from the screen left on top, in the same commit.
    public var popUpTo: (node: Int, inclusive: Bool)? {
        @inlinable get { extras?.popUpTo }
        set { extras = PlanExtras(extras, popUpTo: .some(newValue)) }
    }
    /// `navigate {then}` to a flow: where navigation continues when that flow completes.
    public var then: NavigationSpec? {
        @inlinable get { extras?.then }
        set { extras = PlanExtras(extras, then: newValue) }
    }
    /// `navigate {existing: top | pop}` that found a screen of the target: its number. The commit
    /// pops to it (``popUpTo``, when it is not on top) and gives it ``params`` instead of pushing.
    public var reuse: Int? {
        @inlinable get { extras?.reuse }
        set { extras = PlanExtras(extras, reuse: newValue) }
    }
    /// A flow first in the root stack or in a tab, completed with `result`: this plan is its `then`,
    /// which takes its place; the flow ends `completed` in its commit (not cancelled, as a flow a
    /// navigation removes does).
    public var completing: (flow: Int, result: JSONValue)? {
        @inlinable get { extras?.completing }
        set { extras = PlanExtras(extras, completing: .some(newValue)) }
    }
    /// A recovery flow presented for a navigation's precondition: its node is marked (``Node/isRecovery``).
    public var recovery: Bool {
        @inlinable get { extras?.recovery ?? false }
        set { extras = PlanExtras(extras, recovery: newValue) }
    }
    /// The route followed (its index in the graph's routes), or -1: for coverage.
    public var route: Int {
        @inlinable get { extras?.route ?? -1 }
        set { extras = PlanExtras(extras, route: newValue) }
    }
    /// The deep link opened (its index in the graph's links), or -1: for coverage.
    public var linkIndex: Int {
        @inlinable get { extras?.linkIndex ?? -1 }
        set { extras = PlanExtras(extras, linkIndex: newValue) }
    }
    /// The leave guards of what the plan removes, the first of ``preconditions`` (one step each, in
    /// this order): each lets it go on or refuses it, and never redirects it.
    public var guards: [LeaveGuard] {
        @inlinable get { extras?.guards ?? [] }
        set { extras = PlanExtras(extras, guards: newValue) }
    }

    /// For a stack built at once (``link``: a deep link's, a `reset {to}`'s): for each of its own
    /// preconditions (those after the ``guards``), the index in ``link`` of the screen it is about,
    /// the first screen showing it in the stack, its index among the screens then.
    public var linkSubjects: [Int]? {
        get { extras?.linkSubjects }
        set { extras = PlanExtras(extras, linkSubjects: .some(newValue)) }
    }

    /// The screen of ``link`` precondition `step` is about (its index there), or nil when the plan
    /// builds no stack or the step is a leave guard's.
    public func linkStep(at step: Int) -> Int? {
        guard let s = extras?.linkSubjects, let link, step >= leaveGuards, step - leaveGuards < s.count, s[step - leaveGuards] < link.count else { return nil }
        return s[step - leaveGuards]
    }

    /// How many of ``preconditions``, from the first, are leave guards (``guards``).
    public var leaveGuards: Int { extras?.guards.count ?? 0 }

    /// The leave guard precondition `step` runs, or nil when that step is not one.
    public func leaveGuard(at step: Int) -> LeaveGuard? {
        guard let g = extras?.guards, step < g.count else { return nil }
        return g[step]
    }

    /// The source node's id.
    public var sourceId: String { Node.id(source) }

    /// This plan with `extra` leave guards evaluated before its own preconditions (a `popUpTo`'s,
    /// those of what a replacement removes, a dismiss's).
    public func withPreconditions(before extra: [LeaveGuard]) -> Plan {
        let (all, guards) = guarded(by: extra)
        var p = Plan(target: target, by: by, setup: setup, source: source, ifVersion: ifVersion, preconditions: all)
        p.selectsWith = selectsWith
        p.extras = extras
        p.guards = guards
        return p
    }

    /// The preconditions with the leave guards `extra` first, then the plan's own guards not among
    /// them, then its other preconditions; and the guards in that order.
    private func guarded(by extra: [LeaveGuard]) -> (preconditions: [Int], guards: [LeaveGuard]) {
        let own = self.guards.filter { !extra.contains($0) }
        let guards = extra + own
        return (guards.map(\.precondition) + preconditions.dropFirst(leaveGuards), guards)
    }

    /// This plan placing its target in the place of screen `number` (`by: replace`): `navigate
    /// {popUpTo: {to, inclusive: true}}` whose match is the first screen of the root stack or of a
    /// tab, which no pop may empty; `extra` preconditions (the leave guards of what goes) first.
    public func replacing(_ number: Int, preconditions extra: [LeaveGuard]) -> Plan {
        let (all, guards) = guarded(by: extra)
        var p = Plan(target: target, by: .replace, setup: setup, source: number, ifVersion: ifVersion, preconditions: all)
        p.extras = extras
        p.popUpTo = nil
        p.guards = guards
        return p
    }

    public init(target: Int, by: Presentation, params: JSONValue, source: Int, ifVersion: Int?, preconditions: [Int]) {
        self.init(target: target, by: by, setup: WrittenJSON(params), source: source, ifVersion: ifVersion, preconditions: preconditions)
    }

    /// A plan whose setup model is already written.
    public init(target: Int, by: Presentation, setup: WrittenJSON, source: Int, ifVersion: Int?, preconditions: [Int]) {
        self.target = target
        self.by = by
        self.setup = setup
        self.source = source
        self.ifVersion = ifVersion
        self.preconditions = preconditions
    }
}

/// The rarely set parts of a ``Plan`` (immutable: a plan that changes one makes a new box).
@usableFromInline
final class PlanExtras: Sendable {
    @usableFromInline let hints: JSONValue?
    @usableFromInline let popUpTo: (node: Int, inclusive: Bool)?
    @usableFromInline let then: NavigationSpec?
    @usableFromInline let reuse: Int?
    @usableFromInline let route: Int
    @usableFromInline let linkIndex: Int
    @usableFromInline let guards: [LeaveGuard]
    @usableFromInline let linkSubjects: [Int]?
    @usableFromInline let recovery: Bool
    @usableFromInline let completing: (flow: Int, result: JSONValue)?
    @usableFromInline let link: [LinkStep]?

    /// `base`'s values, but those given (a value given as nil clears it).
    init(_ base: PlanExtras?, hints: JSONValue?? = nil, popUpTo: (node: Int, inclusive: Bool)?? = nil, then: NavigationSpec?? = nil,
         reuse: Int?? = nil, route: Int? = nil, linkIndex: Int? = nil, guards: [LeaveGuard]? = nil,
         linkSubjects: [Int]?? = nil, recovery: Bool? = nil, completing: (flow: Int, result: JSONValue)?? = nil, link: [LinkStep]?? = nil) {
        self.link = link ?? base?.link
        self.recovery = recovery ?? base?.recovery ?? false
        self.completing = completing ?? base?.completing
        self.hints = hints ?? base?.hints
        self.popUpTo = popUpTo ?? base?.popUpTo
        self.then = then ?? base?.then
        self.reuse = reuse ?? base?.reuse
        self.route = route ?? base?.route ?? -1
        self.linkIndex = linkIndex ?? base?.linkIndex ?? -1
        self.guards = guards ?? base?.guards ?? []
        self.linkSubjects = linkSubjects ?? base?.linkSubjects
    }
}

/// `navigate {existing}`: what a push does when the stack already shows a screen of its target
/// (the same one, when the target declares an `identity`).
public enum Existing: String, Sendable, CaseIterable {
    /// A new screen, always (the default).
    case push
    /// The screen on top of the stack, if it is one of the target, is kept and takes the params.
    case top
    /// The nearest such screen in the stack is popped to and takes the params; else a push.
    case pop
}

/// The preconditions of a stack built at once, each with the screen it is about (its index in the
/// stack): a precondition two screens show runs for each, about that screen.
public struct LinkPreconditions: Sendable {
    public private(set) var preconditions: [Int] = []
    public private(set) var subjects: [Int] = []

    public init() {}

    /// Adds precondition `p` about screen `step`, unless it is there already.
    mutating func add(_ p: Int, step: Int) {
        for i in preconditions.indices where preconditions[i] == p && subjects[i] == step { return }
        preconditions.append(p)
        subjects.append(step)
    }
}

/// One screen of a deep link's stack.
public struct LinkStep: Sendable {
    public let coordinator: Int
    public let params: JSONValue
    public let by: Presentation
}

/// A flow that left the tree in a commit.
public struct EndedFlow: Sendable {
    public enum Status: String, Sendable { case completed, failed, cancelled }
    public let id: String
    public let coordinator: Int
    public let status: Status
    public let result: JSONValue?
    public let error: JSONValue?
}

/// Lists kept as nil while empty (see ``Commit``): the first element makes the array.
extension Optional where Wrapped: RangeReplaceableCollection {
    mutating func append(_ element: Wrapped.Element) {
        if self == nil { self = Wrapped([element]) } else { self!.append(element) }
    }

    mutating func insertFirst(_ element: Wrapped.Element) {
        if self == nil { self = Wrapped([element]) } else { self!.insert(element, at: self!.startIndex) }
    }

    mutating func append(contentsOf other: Wrapped?) {
        guard let other else { return }
        if self == nil { self = other } else { self!.append(contentsOf: other) }
    }
}

/// The roles of the client making a request: held (``init(roles:)``), or lent by the client for
/// the request being answered and read only if a check needs them (``init(lending:)``: the usual
/// navigation checks none, and copying the client's set would count a reference for nothing).
/// One word either way (the case in a reference's spare bits).
public struct Caller: Sendable {
    @usableFromInline enum Source: Sendable {
        case held(RoleHolder)
        case lent(RolesLink)
    }

    @usableFromInline let source: Source

    public init(roles: Set<String> = []) { source = .held(RoleHolder(roles)) }

    /// The roles `holder` has when a check reads them, not counted: valid only while the request
    /// being answered is (its client, which holds `holder`, outlives it). What keeps a caller past
    /// the request keeps ``kept``.
    @inlinable
    public init(lending holder: RoleHolder) { source = .lent(RolesLink(holder)) }

    public var roles: Set<String> {
        switch source {
        case .held(let holder): holder.roles
        case .lent(let link): link.roles
        }
    }

    /// The same roles, held: for a caller kept past the request (a navigation waiting on its
    /// preconditions), whose client may be gone by the time a check reads them.
    public var kept: Caller {
        switch source {
        case .held: self
        case .lent(let link): Caller(roles: link.roles)
        }
    }
}

/// The roles a client holds, which a ``Caller`` may lend for the request being answered.
public final class RoleHolder: @unchecked Sendable {
    public var roles: Set<String>
    public init(_ roles: Set<String> = []) { self.roles = roles }
}
