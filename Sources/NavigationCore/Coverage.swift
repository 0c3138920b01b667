import JSON
import NavGraph
import Unchecked

/// What a run of navigations exercised of a graph (`coverage.report`): each coordinator shown,
/// each `opens` edge taken and by which style, each route followed, each deep link opened, each
/// precondition evaluated by outcome, each flow started, completed and cancelled. Counted as
/// commits and precondition outcomes happen; its size is fixed by the graph (the edges taken are at
/// most the pairs of coordinators times the styles, one entry each), so a run holds no more however
/// long it lasts. Pure: the navigator feeds it, the report is made from it and the graph.
public final class Coverage {
    /// How a precondition's evaluation ended.
    public enum Outcome: Int, CaseIterable, Sendable {
        case passed, failed, recovered, redirected, timedOut, cancelled
        public var name: String {
            switch self {
            case .passed: "passed"
            case .failed: "failed"
            case .recovered: "recovered"
            case .redirected: "redirected"
            case .timedOut: "timedOut"
            case .cancelled: "cancelled"
            }
        }
    }

    public let name: String
    let coordinatorCount: Int
    /// Every count of the run in one table (one reference for the commit path), by section:
    /// coordinators shown, `opens` entries taken by style, routes followed, links opened,
    /// preconditions by outcome, flows started, completed, cancelled.
    let counts: Counters
    let opensAt: Int, routesAt: Int, linksAt: Int, preconditionsAt: Int, startedAt: Int, completedAt: Int, cancelledAt: Int
    let routeCount: Int, linkCount: Int
    /// Where the tab back counts start: one per coordinator, then the root's tabs.
    let tabBackAt: Int
    /// Navigations between coordinators that no `opens` entry declares (select, root, a flow's next
    /// step, a redirect), keyed by ``edgeKey(_:_:_:)``.
    public private(set) var otherEdges: [Int: Int] = [:]
    /// Navigations committed in this run.
    public internal(set) var commits = 0
    /// Precondition outcomes and flow starts and ends counted (with ``commits``, what tells a saver
    /// that something changed).
    public private(set) var events = 0

    public init(name: String, graph: NavigationGraph) {
        self.name = name
        coordinatorCount = graph.coordinators.count
        var base: [Int] = []
        var flat: [Int] = []
        for c in graph.coordinators {
            base.append(flat.count)
            flat.append(contentsOf: c.opens)
        }
        base.append(flat.count)
        routeCount = graph.routes.count
        linkCount = graph.links.count
        opensAt = coordinatorCount
        routesAt = opensAt + flat.count * 5
        linksAt = routesAt + routeCount
        preconditionsAt = linksAt + linkCount
        startedAt = preconditionsAt + graph.preconditions.count * Outcome.allCases.count
        completedAt = startedAt + coordinatorCount
        cancelledAt = completedAt + coordinatorCount
        tabBackAt = cancelledAt + coordinatorCount
        let made = Coverage.made(graph.coordinators)
        // The tables the commit path reads sit after the counters, in the same allocation: what a
        // commit counts is then found without an array's retain, uniqueness or bounds check.
        let size = tabBackAt + coordinatorCount + 1
        var starts: [Int] = [], flatMade: [Int] = []
        for m in made {
            starts.append(flatMade.count)
            flatMade += m
        }
        starts.append(flatMade.count)
        // Each coordinator's `opens` sorted by target (a target's first entry first), each with its
        // index in `flat`: found by a binary search, as a hub may open thousands.
        var sortedTargets: [Int] = [], entries: [Int] = []
        sortedTargets.reserveCapacity(flat.count)
        entries.reserveCapacity(flat.count)
        for c in 0..<coordinatorCount {
            for k in (base[c]..<base[c + 1]).sorted(by: { (flat[$0], $0) < (flat[$1], $1) }) {
                sortedTargets.append(flat[k])
                entries.append(k)
            }
        }
        let alsoFlatAt = size + starts.count, opensBaseAt = alsoFlatAt + flatMade.count, opensListAt = opensBaseAt + base.count
        alsoStartAt = size
        self.opensBaseAt = opensBaseAt
        opensCount = flat.count
        let tables = starts.map { $0 + alsoFlatAt } + flatMade + base.map { $0 + opensListAt } + sortedTargets + entries
        counts = Counters(count: size, then: tables)
        switch graph.root {
        case .stack(let c): rootShown = [c] + made[c]
        case .tabs(let tabs): rootShown = tabs.flatMap { [$0] + made[$0] }
        }
        let flows = graph.coordinators.map(\.isFlow)
        isFlow = flows
        rootFlows = rootShown.filter { flows[$0] }
    }

    /// By coordinator: whether it is a flow.
    private let isFlow: [Bool]
    /// The flows a new session's tree holds (a root flow, a tab that starts with one): started with it.
    private let rootFlows: [Int]

    /// Flows among `coordinators` (but `target`, which the commit counts) that a commit made with its
    /// target: those a deep link built below it, the tabs of a tab container it made.
    public func flowsMade(_ coordinators: [Int], but target: Int) {
        for c in coordinators where c != target && c >= 0 && c < coordinatorCount && isFlow[c] { flowStarted(c) }
    }

    /// The flows a navigation to tab container `container` makes with it (its tabs that are flows).
    public func flowsMade(byContainer container: Int) {
        guard container >= 0 && container < coordinatorCount else { return }
        let m = counts.read(alsoStartAt + container), end = counts.read(alsoStartAt + container + 1)
        for i in m..<end {
            let c = counts.read(i)
            if isFlow[c] { flowStarted(c) }
        }
    }

    /// By coordinator: what a navigation to it shows besides it (a flow's start step, a tab
    /// container's tabs and their flows' start steps), empty for most.
    static func made(_ coordinators: [Coordinator]) -> [[Int]] {
        coordinators.map { c in
            if c.flowStart >= 0 { return [c.flowStart] }
            return c.tabs.flatMap { t in [t] + (coordinators[t].flowStart >= 0 ? [coordinators[t].flowStart] : []) }
        }
    }

    /// Where, in ``counts`` (after the counters), the tables of the commit path are: for coordinator
    /// `c`, what a navigation to it makes besides it lies at `read(alsoStartAt + c)..<read(alsoStartAt + c + 1)`
    /// and its `opens`, sorted by target, at `read(opensBaseAt + c)..<read(opensBaseAt + c + 1)`
    /// (absolute positions), each entry's index among all coordinators' `opens` one after the other
    /// ``opensCount`` further on.
    let alsoStartAt: Int, opensBaseAt: Int, opensCount: Int
    /// What a new session shows: the root's coordinators.
    let rootShown: [Int]

    /// Routes named by a navigation (resolved to their target), whether it committed or not.
    private var routesResolved: [Int] = []
    /// By link: the distinct stacks (coordinators, bottom first) its opens built, at most
    /// ``maxStacksPerLink`` each (a redirect may build another).
    public private(set) var linkStacks: [Int: [[Int]]] = [:]
    public static let maxStacksPerLink = 8

    /// A navigation named route `r` (counted whether or not it then committed).
    public func resolved(route r: Int) {
        guard r >= 0 && r < routeCount else { return }
        if routesResolved.isEmpty { routesResolved = Array(repeating: 0, count: routeCount) }
        routesResolved[r] &+= 1
        events &+= 1
    }

    /// Navigations that named route `r`.
    public func resolutions(route r: Int) -> Int { r >= 0 && r < routesResolved.count ? routesResolved[r] : 0 }

    /// Deep link `link` built `stack` (its coordinators, bottom first).
    public func built(_ stack: [Int], link: Int) {
        guard link >= 0 && link < linkCount else { return }
        var known = linkStacks[link] ?? []
        guard !known.contains(stack), known.count < Coverage.maxStacksPerLink else { return }
        known.append(stack)
        linkStacks[link] = known
        events &+= 1
    }

    /// A session was opened: it shows the graph's root.
    public func sessionStarted() {
        for c in rootShown { counts.add(c) }
        for f in rootFlows { flowStarted(f) }
    }

    /// Commits that showed coordinator `c`.
    public func shown(_ c: Int) -> Int { c >= 0 && c < coordinatorCount ? counts[c] : 0 }
    public func followed(route r: Int) -> Int { r >= 0 && r < routeCount ? counts[routesAt + r] : 0 }
    public func opened(link l: Int) -> Int { l >= 0 && l < linkCount ? counts[linksAt + l] : 0 }
    public func flow(_ c: Int) -> (started: Int, completed: Int, cancelled: Int) {
        guard c >= 0 && c < coordinatorCount else { return (0, 0, 0) }
        return (counts[startedAt + c], counts[completedAt + c], counts[cancelledAt + c])
    }

    @inline(__always)
    func edgeKey(_ source: Int, _ target: Int, _ by: Presentation) -> Int {
        (source * coordinatorCount + target) * 8 + Coverage.styleIndex(by)
    }

    static func styleIndex(_ by: Presentation) -> Int {
        switch by {
        case .push: 0
        case .present: 1
        case .replace: 2
        case .root: 3
        case .select: 4
        }
    }

    /// Coordinators shown besides the target of a commit (the screens a link or a recovery built).
    public func shownToo(_ coordinators: [Int], but target: Int) {
        for c in coordinators where c != target && c >= 0 && c < coordinatorCount { counts.add(c) }
    }

    /// `plan` committed, from a screen of coordinator `source` (-1: none): its target, style, route
    /// and link (read here, where the plan's accessors inline).
    public func committed(_ plan: Plan, source: Int) {
        committed(source: source, target: plan.target, by: plan.by, route: plan.route, link: plan.linkIndex)
    }

    /// A navigation committed: from a screen of `source` (-1: none) to `target` by `by`; `route`
    /// and `link` are the route followed and the link opened (-1: none).
    @inline(__always)
    public func committed(source: Int, target: Int, by: Presentation, route: Int = -1, link: Int = -1) {
        commits &+= 1
        guard UInt(bitPattern: target) < UInt(bitPattern: coordinatorCount) else { return }
        let counts = self.counts
        counts.add(target)
        var m = counts.read(alsoStartAt + target)
        let end = counts.read(alsoStartAt + target + 1)
        while m < end {
            counts.add(counts.read(m))
            m += 1
        }
        if UInt(bitPattern: source) < UInt(bitPattern: coordinatorCount) {
            if let k = opensEntry(source, target) {
                counts.add(opensAt + k * 5 + Coverage.styleIndex(by))
            } else {
                otherEdges[edgeKey(source, target, by), default: 0] += 1
            }
        }
        if UInt(bitPattern: route) < UInt(bitPattern: routeCount) { counts.add(routesAt + route) }
        if UInt(bitPattern: link) < UInt(bitPattern: linkCount) { counts.add(linksAt + link) }
    }

    public func precondition(_ index: Int, _ outcome: Outcome) {
        guard index >= 0 && preconditionsAt + index * Outcome.allCases.count < startedAt else { return }
        counts.add(preconditionsAt + index * Outcome.allCases.count + outcome.rawValue)
        events &+= 1
    }

    /// A dismiss went back through the `back:` of tabs container `container` (-1: the root's tabs).
    public func wentBack(in container: Int) {
        guard container >= -1 && container < coordinatorCount else { return }
        counts.add(tabBackAt + (container < 0 ? coordinatorCount : container))
        events &+= 1
    }

    /// Dismisses that went back through `container`'s `back:` (-1: the root's tabs).
    public func wentBack(_ container: Int) -> Int {
        guard container >= -1 && container < coordinatorCount else { return 0 }
        return counts[tabBackAt + (container < 0 ? coordinatorCount : container)]
    }

    public func flowStarted(_ coordinator: Int) {
        if coordinator >= 0 && coordinator < coordinatorCount { counts.add(startedAt + coordinator) }
        events &+= 1
    }

    public func flowEnded(_ coordinator: Int, completed: Bool) {
        guard coordinator >= 0 && coordinator < coordinatorCount else { return }
        counts.add((completed ? completedAt : cancelledAt) + coordinator)
        events &+= 1
    }

    /// The index among all coordinators' `opens` (one after the other) of `source`'s first entry
    /// for `target`, if it declares one: a binary search of its entries sorted by target.
    @inline(__always)
    func opensEntry(_ source: Int, _ target: Int) -> Int? {
        var lo = counts.read(opensBaseAt + source), hi = counts.read(opensBaseAt + source + 1)
        let end = hi
        while lo < hi {
            let mid = (lo + hi) >> 1
            if counts.read(mid) < target { lo = mid + 1 } else { hi = mid }
        }
        return lo < end && counts.read(lo) == target ? counts.read(lo + opensCount) : nil
    }

    /// How often `source` → `target` was taken by `by`, its `opens` entry (``opensEntry(_:_:)``)
    /// looked up once by the caller.
    private func taken(_ source: Int, _ target: Int, entry: Int?, by: Presentation) -> Int {
        if let k = entry { return counts[opensAt + k * 5 + Coverage.styleIndex(by)] }
        return otherEdges[edgeKey(source, target, by)] ?? 0
    }

    /// How often `source` → `target` was taken, by any style (one look-up, nothing made).
    public func taken(_ source: Int, _ target: Int) -> Int {
        let entry = opensEntry(source, target)
        return Presentation.allCases.reduce(0) { $0 + taken(source, target, entry: entry, by: $1) }
    }

    /// How often `source` → `target` was taken, by each style that took it.
    public func edge(_ source: Int, _ target: Int) -> [(Presentation, Int)] {
        let entry = opensEntry(source, target)
        return Presentation.allCases.compactMap { by in
            let n = taken(source, target, entry: entry, by: by)
            return n > 0 ? (by, n) : nil
        }
    }

    /// Evaluations of precondition `index`, by outcome.
    public func outcomes(_ index: Int) -> [(Outcome, Int)] {
        Outcome.allCases.compactMap { o in
            let n = counts[preconditionsAt + index * Outcome.allCases.count + o.rawValue]
            return n > 0 ? (o, n) : nil
        }
    }
}

extension Coverage {
    /// Adds the counts of a JSON report (``CoverageReport/json``, as `coverage.report` gives it) to
    /// this run, matched by name: reports of several navds (a test per navd) merge into one, and a
    /// run saved beside the state file is read back. Items the graph no longer declares are skipped
    /// and counted in the answer. Counts are bounded (none passes `Int.max / 2`, what a report then says reads back as it is).
    @discardableResult
    public func add(report: JSONValue, graph: NavigationGraph) -> (added: Int, skipped: Int) {
        var added = 0, skipped = 0
        func count(_ v: JSONValue?) -> Int { min(max(v?.intValue ?? 0, 0), Int.max / 2) }
        func bump(_ at: Int, _ n: Int) {
            guard n > 0 else { return }
            counts[at] = min(counts[at] &+ n, Int.max / 2)
            added += 1
            events &+= 1
        }
        commits = min(commits &+ count(report["commits"]), Int.max / 2)
        for item in report["coordinators"]?.arrayValue ?? [] {
            guard let c = item["name"]?.stringValue.flatMap(graph.coordinator(named:)) else { skipped += 1; continue }
            bump(c.index, count(item["shown"]))
        }
        for item in report["edges"]?.arrayValue ?? [] {
            guard let s = item["from"]?.stringValue.flatMap(graph.coordinator(named:)),
                  let t = item["to"]?.stringValue.flatMap(graph.coordinator(named:)), let k = opensEntry(s.index, t.index) else { skipped += 1; continue }
            for (style, n) in item["taken"]?.objectValue ?? JSONObject() {
                guard let by = Presentation(rawValue: style) else { skipped += 1; continue }
                bump(opensAt + k * 5 + Coverage.styleIndex(by), count(n))
            }
        }
        for item in report["routes"]?.arrayValue ?? [] {
            guard let r = item["name"]?.stringValue.flatMap(graph.routeNumber(named:)), r < routeCount else { skipped += 1; continue }
            bump(routesAt + r, count(item["followed"]))
            let n = count(item["resolved"])
            if n > 0 {
                if routesResolved.isEmpty { routesResolved = Array(repeating: 0, count: routeCount) }
                routesResolved[r] = min(routesResolved[r] &+ n, Int.max / 2)
            }
        }
        for item in report["links"]?.arrayValue ?? [] {
            guard let l = graph.links.firstIndex(where: { $0.pattern == item["pattern"]?.stringValue }), l < linkCount else { skipped += 1; continue }
            bump(linksAt + l, count(item["opened"]))
            for stack in item["stacks"]?.arrayValue ?? [] {
                let names = stack.arrayValue?.compactMap { $0.stringValue.flatMap(graph.coordinator(named:))?.index } ?? []
                if names.count == stack.arrayValue?.count && !names.isEmpty { built(names, link: l) } else { skipped += 1 }
            }
        }
        for item in report["preconditions"]?.arrayValue ?? [] {
            guard let p = item["name"]?.stringValue.flatMap(graph.precondition(named:)) else { skipped += 1; continue }
            for (name, n) in item["outcomes"]?.objectValue ?? JSONObject() {
                guard let o = Outcome.allCases.first(where: { $0.name == name }) else { skipped += 1; continue }
                bump(preconditionsAt + p.index * Outcome.allCases.count + o.rawValue, count(n))
            }
        }
        for item in report["tabBacks"]?.arrayValue ?? [] {
            let name = item["container"]?.stringValue
            let c = name == "root" ? -1 : name.flatMap(graph.coordinator(named:))?.index
            guard let c else { skipped += 1; continue }
            bump(tabBackAt + (c < 0 ? coordinatorCount : c), count(item["used"]))
        }
        for item in report["flows"]?.arrayValue ?? [] {
            guard let c = item["name"]?.stringValue.flatMap(graph.coordinator(named:)) else { skipped += 1; continue }
            bump(startedAt + c.index, count(item["started"]))
            bump(completedAt + c.index, count(item["completed"]))
            bump(cancelledAt + c.index, count(item["cancelled"]))
        }
        return (added, skipped)
    }
}
