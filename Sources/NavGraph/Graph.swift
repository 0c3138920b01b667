import JSON
import RPC
import Unchecked

/// How a navigation shows its target (SPEC: `by`).
public enum Presentation: String, CaseIterable, Sendable, Hashable {
    case push, present, replace, root, select

    /// Styles governed by the source's `opens` (abilities); `root` and `select` are always offered.
    @inlinable
    public var needsAbility: Bool { self == .push || self == .present || self == .replace }

    /// The style of a navigation that names none (no `by`, a route or `then` without one), for a
    /// target that `allows` these: push, or, when its `presentations` leave push out, the first
    /// they list of present, replace, root and select (a screen declared modal is presented).
    public static func unnamed(allows: (Presentation) -> Bool) -> Presentation {
        allows(.push) ? .push : allCases.first(where: allows) ?? .push
    }

    /// The same for a screen of a stack built at once (a deep link's, a `reset`'s), where only push
    /// and present place a screen: push, or present when its `presentations` allow that and not push.
    public static func unnamedInStack(allows: (Presentation) -> Bool) -> Presentation {
        !allows(.push) && allows(.present) ? .present : .push
    }
}

/// The fully resolved navigation graph: every reference is an index, nothing is looked up by
/// string on the navigation path except the names a client sends. Immutable once loaded.
public final class NavigationGraph: Sendable {
    public let modules: [Module]
    public let coordinators: [Coordinator]
    public let preconditions: [Precondition]
    public let routes: [Route]
    public let links: [Link]
    /// Which links may match a path, by its first segment (``linksMaybeMatching(first:)``).
    let linkIndex: LinkIndex
    public let root: Root
    /// `root.back`: what dismiss does at the first screen of a root tab.
    public let rootBack: TabBack
    /// Where `root:` is declared.
    public let rootLocation: SourceLocation?
    /// `guards:` of the modules: preconditions run before those of every coordinator they guard
    /// (already first in each such coordinator's ``Coordinator/preconditions``).
    public let guards: [GraphGuard]
    /// Where relative command paths of preconditions are resolved (the graph directory).
    public let baseDirectory: String
    /// The names navd asks a client for: provider preconditions and `recover: {provider}` names.
    public let providerNames: Set<String>
    /// Qualified name → index, plus unqualified names that only one module declares.
    let coordinatorIndex: NameIndex
    let routeIndex: NameIndex
    let coordinatorSuggestions: SuggestionIndex
    let routeSuggestions: SuggestionIndex
    let preconditionIndex: [String: Int]
    /// Unqualified names declared by several modules, for a precise error message.
    let ambiguous: [String: [String]]
    /// Whether some coordinator has `leave:` guards (a dismiss then looks at what it removes).
    public let hasLeaveGuards: Bool
    /// By coordinator index: whether it has `leave:` guards.
    public let leaveGuarded: [Bool]
    /// By coordinator index: what navigating to it makes (read on every navigation, for the limits).
    public let made: [Made]

    /// What a navigation to a coordinator adds to a tree: its node, a flow's start step, a tab
    /// container's stacks and their first nodes.
    public struct Made: Sendable {
        /// Nodes from its node to the deepest it makes, both counted.
        public let height: Int
        /// How many nodes it makes.
        public let nodes: Int
        /// The bytes of the empty setup models (`{}`) of the nodes it makes besides its own.
        public let extraBytes: Int

        static func of(_ c: Coordinator, in coordinators: [Coordinator]) -> Made {
            func alone(_ c: Coordinator) -> Made { c.flowStart >= 0 ? Made(height: 2, nodes: 2, extraBytes: 2) : Made(height: 1, nodes: 1, extraBytes: 0) }
            guard c.isTabContainer else { return alone(c) }
            // A tab is never a container itself (the graph is refused otherwise).
            var height = 0, nodes = 1, bytes = 0
            for t in c.tabs {
                let m = alone(coordinators[t])
                height = max(height, m.height)
                nodes += 1 + m.nodes
                bytes += 2 + m.extraBytes
            }
            return Made(height: 2 + height, nodes: nodes, extraBytes: bytes)
        }
    }

    init(modules: [Module], coordinators: [Coordinator], preconditions: [Precondition], routes: [Route],
         links: [Link], root: Root, rootBack: TabBack = .none, rootLocation: SourceLocation? = nil, guards: [GraphGuard] = [], baseDirectory: String) {
        self.rootLocation = rootLocation
        self.modules = modules
        self.coordinators = coordinators
        self.preconditions = preconditions
        self.routes = routes
        self.links = links
        linkIndex = LinkIndex(links)
        self.root = root
        self.rootBack = rootBack
        self.guards = guards
        self.baseDirectory = baseDirectory
        var asked = Set<String>()
        for p in preconditions {
            if case .provider = p.kind { asked.insert(p.name) }
            if case .provider(let n, _)? = p.recover { asked.insert(n) }
        }
        providerNames = asked
        leaveGuarded = coordinators.map { !$0.leave.isEmpty }
        made = coordinators.map { Made.of($0, in: coordinators) }
        hasLeaveGuards = leaveGuarded.contains(true)
        var ambiguous: [String: [String]] = [:]
        func index(_ names: [(qualified: String, local: String)]) -> [String: Int] {
            var idx: [String: Int] = [:]
            var localCount: [String: [Int]] = [:]
            for (i, n) in names.enumerated() {
                idx[n.qualified] = i
                localCount[n.local, default: []].append(i)
            }
            for (local, list) in localCount where idx[local] == nil {
                if list.count == 1 { idx[local] = list[0] } else { ambiguous[local] = list.map { names[$0].qualified } }
            }
            return idx
        }
        coordinatorSuggestions = SuggestionIndex(coordinators.map(\.name) + coordinators.map(\.localName))
        routeSuggestions = SuggestionIndex(routes.map(\.name) + routes.map(\.localName))
        coordinatorIndex = NameIndex(index(coordinators.map { ($0.name, $0.localName) }))
        routeIndex = NameIndex(index(routes.map { ($0.name, $0.localName) }))
        preconditionIndex = index(preconditions.map { ($0.name, $0.localName) })
        self.ambiguous = ambiguous
    }

    /// The coordinator called `name` ("module.Name", or "Name" when only one module declares it).
    public func coordinator(named name: String) -> Coordinator? { coordinatorIndex[name].map { coordinators[$0] } }
    public func route(named name: String) -> Route? { routeIndex[name].map { routes[$0] } }
    /// The index of route `name` (qualified or not) in ``routes``.
    public func routeNumber(named name: String) -> Int? { routeIndex[name] }
    /// The index of the coordinator whose name's UTF-8 is `utf8` (as ``coordinator(named:)``), or nil.
    public func coordinatorIndex(named name: ByteView) -> Int? { coordinatorIndex[bytes: name] }
    public func precondition(named name: String) -> Precondition? { preconditionIndex[name].map { preconditions[$0] } }

    /// The qualified names an ambiguous unqualified name could mean, if it is one.
    public func ambiguity(of name: String) -> [String]? { ambiguous[name] }

    /// A likely intended coordinator name for an unknown one (from an index built with the graph:
    /// a request naming an unknown coordinator costs the names of about its length, not all).
    public func suggestCoordinator(for name: String) -> String? { coordinatorSuggestions.suggestion(for: name) }
    public func suggestRoute(for name: String) -> String? { routeSuggestions.suggestion(for: name) }
}

public struct Module: Sendable {
    public let name: String
    public let file: String
}

extension NavigationGraph {
    /// The names of the tabs the root declares, in order; nil when the root is a stack.
    public var rootTabNames: [String]? {
        guard case .tabs(let tabs) = root else { return nil }
        return tabs.map { coordinators[$0].name }
    }

    /// The step a navigation to `c` shows with it: a flow's start step (nil for other coordinators).
    /// Its access applies to that navigation, and its preconditions run after the flow's.
    @inlinable
    public func startStep(of c: Coordinator) -> Coordinator? { c.flowStart >= 0 ? coordinators[c.flowStart] : nil }

    /// The preconditions a navigation to `c` runs, in order: its own, then a flow's start step's.
    @inlinable
    public func preconditions(showing c: Coordinator) -> [Int] {
        guard c.flowStart >= 0 else { return c.preconditions }
        let start = coordinators[c.flowStart].preconditions
        return start.isEmpty ? c.preconditions : c.preconditions + start.filter { !c.preconditions.contains($0) }
    }
}

public enum Root: Sendable {
    case stack(Int)
    case tabs([Int])
}

/// A graph-level guard (`guards: [{precondition, except}]` of a module): its precondition runs
/// first for every navigation to a coordinator it does not exempt.
public struct GraphGuard: Sendable {
    public let precondition: Int
    /// Coordinators exempt: those `except` names (a module name exempts its coordinators), and the
    /// flow that recovers the precondition with its steps, and its redirect target.
    public let exempt: Set<Int>
    public let location: SourceLocation
}

/// `back:` of a tabs container (the root's tabs or a tab container coordinator): what `dismiss` does
/// at the first screen of the selected tab (React Navigation's `backBehavior`).
public enum TabBack: String, Sendable, CaseIterable {
    /// Nothing to go back to: the dismiss is refused (the root's tabs) or removes the tab container
    /// (a tab container navigated to), as without `back:`.
    case none
    /// The first tab is selected (the one a tabs container starts on), unless it is the selected one.
    case firstTab
    /// The tab before the selected one in the declared order, unless it is the first.
    case order
    /// The tab selected before, as the session's tab history remembers it (each tab once, the
    /// most recent last); a tab left by going back is not remembered.
    case history
}

/// A coordinator as the graph declares it: immutable once built (the builder fills a
/// ``CoordinatorDraft``), so a graph is shared between threads as it is.
public final class Coordinator: Sendable {
    public let index: Int
    /// "module.Name".
    public let name: String
    public let module: String
    public let localName: String
    public let location: SourceLocation
    public let setup: Schema?
    /// Abilities: what this coordinator may push, present or replace itself with.
    public let opens: [Int]
    /// Where each of ``opens`` is listed (an ability set's coordinators: where the set is named).
    public let opensLocations: [SourceLocation]
    public let opensSet: Set<Int>
    /// `opensSet` as bits by coordinator index, for the check every navigation makes: the words
    /// from the one holding its lowest index (``opensFirstWord``) to the one holding its highest.
    /// Empty when those words would be many more than the set's members (a coordinator that opens
    /// the first and the last of 100,000 would take 1,563 words; one for each coordinator, 1.2 GB):
    /// ``canOpen(_:)`` then asks the set.
    @usableFromInline let opensBits: [UInt64]
    @usableFromInline let opensFirstWord: Int
    @usableFromInline let opensSparse: Bool
    /// The most words of ``opensBits`` beyond one a member: its memory stays within a few words an edge.
    static let sparseWordsBeyondMembers = 8

    /// Whether this coordinator may open the coordinator at `index` (its abilities).
    @inlinable
    public func canOpen(_ index: Int) -> Bool {
        let word = (index >> 6) &- opensFirstWord
        if word >= 0 && word < opensBits.count { return opensBits[word] & (1 << UInt64(index & 63)) != 0 }
        return opensSparse && opensSet.contains(index)
    }
    /// Allowed presentation styles; nil means any.
    public let presentations: Set<Presentation>?
    /// `presentations` as bits, for the check every navigation makes.
    @usableFromInline let presentationMask: UInt8
    public let preconditions: [Int]
    /// `leave:`: preconditions evaluated before a dismiss removes a node of this coordinator.
    public let leave: [Int]
    /// `tabs:`: a tab container: navigating to it (push, present, replace, root) makes a tabs node
    /// with a stack per listed coordinator. Empty for every other coordinator.
    public let tabs: [Int]
    /// Whether a completed flow of this coordinator may continue to `target` (its `then`): the flow
    /// declares it as `then`, or lists it in `opens`.
    public func mayContinue(to target: Int) -> Bool { canOpen(target) || flow?.then?.to == target }
    /// Whether `tabs` lists any (read on every navigation, without touching the array).
    public let isTabContainer: Bool
    /// `back:` of a tab container: what dismiss does at the first screen of its selected tab.
    public let tabBack: TabBack
    /// Roles admitted; empty means anyone.
    public let access: [String]
    /// Setup fields filled from the source's params: field → path in the source's params.
    public let mediation: [(field: String, sourcePath: [String])]
    /// `identity:`: the setup fields that tell two screens of this coordinator apart for
    /// `navigate {existing}` (empty: any two are the same).
    public let identity: [String]
    public let flow: Flow?
    /// The start step of the flow this coordinator is, or -1 (read without copying ``flow``).
    public let flowStart: Int
    /// The flow this coordinator is a step of, if any.
    public let stepOf: [Int]
    public let description: String?

    /// The coordinator `d` describes, as the graph keeps it.
    init(_ d: CoordinatorDraft) {
        (index, module, localName, name, location) = (d.index, d.module, d.localName, d.name, d.location)
        (setup, opens, opensLocations, opensSet) = (d.setup, d.opens, d.opensLocations, d.opensSet)
        let first = (d.opensSet.min() ?? 0) / 64, words = ((d.opensSet.max() ?? -1) + 64) / 64 - first
        if words <= d.opensSet.count + Self.sparseWordsBeyondMembers {
            var bits = [UInt64](repeating: 0, count: max(words, 0))
            for i in d.opensSet { bits[i / 64 - first] |= 1 << UInt64(i % 64) }
            (opensBits, opensFirstWord, opensSparse) = (bits, first, false)
        } else {
            (opensBits, opensFirstWord, opensSparse) = ([], 0, true)
        }
        presentations = d.presentations
        presentationMask = d.presentations.map { $0.reduce(0) { $0 | Self.bit($1) } } ?? 0xFF
        (preconditions, leave, tabs, isTabContainer, tabBack) = (d.preconditions, d.leave, d.tabs, !d.tabs.isEmpty, d.tabBack)
        (access, mediation, identity, stepOf, description) = (d.access, d.mediation, d.identity, d.stepOf, d.description)
        (flow, flowStart) = (d.flow, d.flow?.start ?? -1)
        var w = JSONWriter(capacity: name.utf8.count + 8)
        w.write(string: name)
        nameJSON = w.bytes
    }

    /// ``name`` as a JSON string (quoted, escaped), copied as it is into trees and changes.
    public let nameJSON: [UInt8]

    public var isFlow: Bool { flow != nil }

    @inlinable
    public func allows(_ p: Presentation) -> Bool { presentationMask & Self.bit(p) != 0 }

    /// How a navigation that names no style shows it (``Presentation/unnamed(allows:)``).
    @inlinable
    public var unnamedPresentation: Presentation { allows(.push) ? .push : Presentation.unnamed(allows: allows) }
    /// How a redirect to this coordinator shows it: the redirect's own `by`, else the style of the
    /// navigation it redirects when this coordinator allows it, else its ``unnamedPresentation``.
    public func redirectPresentation(named: Presentation?, redirecting previous: Presentation) -> Presentation {
        named ?? (allows(previous) ? previous : unnamedPresentation)
    }
    /// How a stack built at once shows it without a `by` (``Presentation/unnamedInStack(allows:)``).
    public var unnamedPresentationInStack: Presentation { Presentation.unnamedInStack(allows: allows) }

    @usableFromInline
    static func bit(_ p: Presentation) -> UInt8 {
        switch p {
        case .push: return 1
        case .present: return 2
        case .replace: return 4
        case .root: return 8
        case .select: return 16
        }
    }
}

extension Array where Element == Coordinator {
    /// Whether a stack built at once (a deep link's, a `reset`'s) may hold `above` right above
    /// `below`: `below` (for a flow, its first step, which is built with it) opens `above`, or
    /// `above` is the step after that first step and the step declares no `opens`.
    public func stackStepAllowed(from below: Int, to above: Int) -> Bool {
        let source = self[below]
        let opener = source.flow.map { self[$0.start] } ?? source
        if opener.canOpen(above) { return true }
        if let flow = source.flow, opener.opens.isEmpty, let i = flow.steps.firstIndex(of: flow.start), i + 1 < flow.steps.count,
           flow.steps[i + 1] == above { return true }
        return false
    }
}

public struct Flow: Sendable {
    public let start: Int
    public let steps: [Int]
    public let result: Schema?
    /// Where navigation continues when the flow completes (`then:`), unless the navigate that
    /// started it said otherwise.
    public var then: NavigationSpec? = nil
}

/// A navigation made when a flow completes: `with` values `"$result…"` come from its result.
public struct NavigationSpec: Sendable {
    public let to: Int
    public let by: Presentation?
    /// The setup values given, or nil when none was written: a `select` keeps the tab screen's
    /// params without one and takes `{}` as given.
    public let with: JSONObject?
    public init(to: Int, by: Presentation?, with: JSONObject?) {
        self.to = to
        self.by = by
        self.with = with
    }
}

public struct Route: Sendable {
    public let name: String
    public let localName: String
    public let to: Int
    public let by: Presentation?
    public let with: JSONObject?
    public let location: SourceLocation
}

extension NavigationGraph {
    /// The indices of the links that may match a path of `segments`, in declaration order: those
    /// whose required segments (literals and parameters, before an optional one or a wildcard) the
    /// path's first segments fit. `open` tries them in turn and takes the first that matches, as if
    /// it tried every link, in time that does not grow with the links of other prefixes (10,000
    /// links under `/app/…`, or under `/:lang/…`, were all tried: ~0.4 ms an `open`).
    public func linksMaybeMatching(_ segments: [Substring]) -> [Int] {
        let nodes = linkIndex.prefixes
        var found: [Int] = []
        var level = [0], depth = 0
        // Each node is reached by one prefix of the path, so each is looked at once at most.
        while !level.isEmpty {
            var next: [Int] = []
            for n in level {
                if !nodes[n].links.isEmpty { found = LinkIndex.merged(found, nodes[n].links) }
                guard depth < segments.count else { continue }
                if let c = nodes[n].literal[String(segments[depth])] { next.append(c) }
                if nodes[n].parameter > 0, !segments[depth].isEmpty { next.append(nodes[n].parameter) }
            }
            level = next
            depth += 1
        }
        return found
    }

    /// The indices of the links whose stack ends at the coordinator `last` or at `alsoLast`, in
    /// declaration order: those `link.resolve` may find a URL in, in time that does not grow with the
    /// links of other screens.
    public func linksEnding(at last: Int, or alsoLast: Int? = nil) -> [Int] {
        let a = linkIndex.byLastCoordinator[last] ?? []
        guard let alsoLast, alsoLast != last else { return a }
        return LinkIndex.merged(a, linkIndex.byLastCoordinator[alsoLast] ?? [])
    }
}

/// The links by the segments their pattern requires (what `open` looks up) and by the coordinator
/// their stack ends at (what `link.resolve` looks up), each list in declaration order.
struct LinkIndex: Sendable {
    /// A trie of required segments: node 0 is the root; a node's `links` are those whose required
    /// segments end there (`/app/:id/*rest` at `app` → a parameter).
    struct PrefixNode: Sendable {
        var literal: [String: Int] = [:]
        /// The node a parameter segment leads to (0: none).
        var parameter = 0
        var links: [Int] = []
    }
    var prefixes = [PrefixNode()]
    var byLastCoordinator: [Int: [Int]] = [:]

    init(_ links: [Link]) {
        for (i, l) in links.enumerated() {
            var node = 0
            walk: for segment in l.segments {
                switch segment {
                case .literal(let s):
                    if let next = prefixes[node].literal[s] {
                        node = next
                    } else {
                        prefixes.append(PrefixNode())
                        prefixes[node].literal[s] = prefixes.count - 1
                        node = prefixes.count - 1
                    }
                case .parameter:
                    if prefixes[node].parameter == 0 {
                        prefixes.append(PrefixNode())
                        prefixes[node].parameter = prefixes.count - 1
                    }
                    node = prefixes[node].parameter
                case .optional, .wildcard:
                    break walk
                }
            }
            prefixes[node].links.append(i)
            if let last = l.entries.last { byLastCoordinator[last.coordinator, default: []].append(i) }
        }
    }

    /// Two ascending lists of link indices as one ascending list (no index is in both).
    static func merged(_ a: [Int], _ b: [Int]) -> [Int] {
        if b.isEmpty { return a }
        if a.isEmpty { return b }
        var merged: [Int] = []
        merged.reserveCapacity(a.count + b.count)
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i] < b[j]) {
                merged.append(a[i])
                i += 1
            } else {
                merged.append(b[j])
                j += 1
            }
        }
        return merged
    }
}

/// A deep link: a URL path pattern mapped to the stack it builds.
public struct Link: Sendable {
    public enum Segment: Sendable, Hashable {
        case literal(String)
        /// `:name`: one non-empty segment.
        case parameter(String)
        /// `:name?`: one segment or none (only after every required segment).
        case optional(String)
        /// `*name`: the rest of the path, one segment or more, joined by `/` (only last).
        case wildcard(String)
    }
    public struct Entry: Sendable {
        public let coordinator: Int
        /// Setup values; strings `":name"` are replaced by the URL's parameter `name`.
        public let with: JSONObject
        public let by: Presentation?
    }
    public let pattern: String
    public let segments: [Segment]
    /// Query parameters the pattern declares (`?q=:q`).
    public let query: [(key: String, parameter: String)]
    public let entries: [Entry]
    public let module: String
    public let location: SourceLocation

    /// The parameter the pattern's wildcard (`*name`) names, if it has one.
    public var wildcard: String? {
        for case .wildcard(let name) in segments { return name }
        return nil
    }

    /// The parameters of `path` (without query) if it matches, else nil: one value each, a
    /// wildcard's segments (a string field takes them joined by `/`, an array field as a list).
    /// Optional segments come only after the required ones and a wildcard only last (the loader
    /// checks), so one greedy pass decides.
    public func match(pathSegments: [Substring]) -> [String: [String]]? {
        var params: [String: [String]] = [:]
        var i = 0
        for s in segments {
            switch s {
            case .literal(let l):
                guard i < pathSegments.count, pathSegments[i] == l else { return nil }
                i += 1
            case .parameter(let name):
                guard i < pathSegments.count, !pathSegments[i].isEmpty else { return nil }
                params[name] = [String(pathSegments[i])]
                i += 1
            case .optional(let name):
                if i < pathSegments.count {
                    if !pathSegments[i].isEmpty { params[name] = [String(pathSegments[i])] }
                    i += 1
                }
            case .wildcard(let name):
                guard i < pathSegments.count else { return nil }
                params[name] = pathSegments[i...].map(String.init)  // its segments, each decoded
                i = pathSegments.count
            }
        }
        return i == pathSegments.count ? params : nil
    }
}

public struct Precondition: Sendable {
    public enum Check: Sendable {
        case equals(JSONValue)
        case notEquals(JSONValue)
        case exists(Bool)
    }
    public enum Kind: Sendable {
        case check(fact: String, Check)
        /// argv (placeholders `{to}`, `{session}`, `{with.FIELD}`), timeout in milliseconds.
        case command(argv: [String], timeoutMs: UInt64)
        case provider(timeoutMs: UInt64)
    }
    public enum Recover: Sendable {
        case flow(Int)
        case command(argv: [String], timeoutMs: UInt64)
        case provider(String, timeoutMs: UInt64)
    }
    public let index: Int
    public let name: String
    public let localName: String
    public let module: String
    public let kind: Kind
    public let recover: Recover?
    public let location: SourceLocation
    /// `recover: {flow, facts}`: the facts a completed recovery flow establishes before the
    /// precondition is evaluated again; a value `"$result"` or `"$result.a.b"` is taken from the
    /// flow's result (see ``resolveResultReferences(_:in:)``).
    public var recoverFacts: JSONObject = JSONObject()
    /// `redirect:`: where the navigation goes instead when this precondition fails (after its
    /// recovery, if any).
    public var redirect: NavigationSpec? = nil

    public var kindName: String {
        switch kind {
        case .check: return "check"
        case .command: return "command"
        case .provider: return "provider"
        }
    }
}

/// Replaces each string `"$result"` or `"$result.a.b"` among `values` by that part of `result`, in
/// one pass over the graph's values (a result's own strings are never read as references); a path
/// the result does not have leaves the field out.
public func resolveResultReferences(_ values: JSONObject, in result: JSONValue?) -> JSONObject {
    var out = JSONObject()
    for (k, v) in values {
        guard case .string(let s) = v, s == "$result" || s.hasPrefix("$result.") else {
            out.append(k, v)
            continue
        }
        var cur: JSONValue? = result
        for part in s.split(separator: ".").dropFirst() { cur = cur?[String(part)] }
        if let cur { out.append(k, cur) }
    }
    return out
}

/// Whether `s` is a well-formed result reference (`$result` or `$result.a.b`, no empty part).
public func isResultReference(_ s: String) -> Bool? {
    guard s.hasPrefix("$result") else { return nil }
    if s == "$result" { return true }
    guard s.hasPrefix("$result.") else { return false }
    return !s.split(separator: ".", omittingEmptySubsequences: false).dropFirst().contains { $0.isEmpty }
}

/// Default timeout of command and provider tasks.
public let defaultTaskTimeoutMs: UInt64 = 10_000

/// Parses `500ms`, `2s`, `1m`, `1h` or a plain number of seconds into milliseconds.
/// A duration too long to be one (`1e300s`) is not a duration: nil, as a malformed one.
public func parseDuration(_ v: JSONValue) -> UInt64? {
    /// Milliseconds, when `x` is a count of them a UInt64 holds.
    func ms(_ x: Double) -> UInt64? { x >= 0 && x < 1.8e19 ? UInt64(x) : nil }
    if let d = v.doubleValue { return d.isFinite ? ms(d * 1000) : nil }
    guard let s = v.stringValue?.trimmingSpaces, !s.isEmpty else { return nil }
    let units: [(String, Double)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000)]
    for (suffix, scale) in units where s.hasSuffix(suffix) {
        let number = s.dropLast(suffix.count)
        if let d = Double(number), d.isFinite { return ms(d * scale) }
        return nil
    }
    if let d = Double(s), d.isFinite { return ms(d * 1000) }
    return nil
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s.removeFirst() }
        while s.last?.isWhitespace == true { s.removeLast() }
        return String(s)
    }
}
