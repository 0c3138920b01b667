import JSON
import NavGraph

/// ``Coverage`` as `coverage.report` gives it: JSON (every item with its counts and its place in
/// the graph), text (a table per module, then what was never exercised, each at its file:line, as
/// coverage.py's report) or LCOV (a `DA:` line for each coordinator, `opens` entry, route, link and
/// precondition declaration of each graph file, as gcov's tracefiles carry lines, for `genhtml` and
/// editors' coverage gutters).
public struct CoverageReport {
    public let coverage: Coverage
    public let graph: NavigationGraph

    public init(_ coverage: Coverage, graph: NavigationGraph) {
        self.coverage = coverage
        self.graph = graph
    }

    /// What an item is, in the order of the report's columns.
    enum Kind: Int, CaseIterable {
        case coordinator, edge, route, link, precondition, flow, tabBack
        var name: String { CoverageReport.kinds[rawValue] }
    }

    /// One thing a run may exercise: what it is, where it is declared, and how often it was. Its
    /// name is made only where a report shows it (``name(of:)``): a graph at its bounds has half a
    /// million edges, and building each one's name was most of a report's time.
    struct Item {
        let kind: Kind
        let module: String
        /// The coordinator, route, link or precondition; for an edge its source, for a tab back
        /// its container (-1: the root's tabs).
        let index: Int
        /// An edge's target, a tab back's behaviour (its raw value's index in `TabBack.allCases`).
        let detail: Int
        let location: SourceLocation
        let hits: Int
    }

    /// The name a report shows for `item`.
    func name(of item: Item) -> String {
        switch item.kind {
        case .coordinator, .flow: graph.coordinators[item.index].name
        case .edge: "\(graph.coordinators[item.index].name) → \(graph.coordinators[item.detail].name)"
        case .route: graph.routes[item.index].name
        case .link: graph.links[item.index].pattern
        case .precondition: graph.preconditions[item.index].name
        case .tabBack: "\(item.index == -1 ? "root" : graph.coordinators[item.index].name) back: \(TabBack.allCases[item.detail].rawValue)"
        }
    }

    /// Every item, in the graph's order: coordinators, their `opens` edges, routes, links,
    /// preconditions, flows.
    var items: [Item] {
        var out: [Item] = []
        forEachItem { out.append($0) }
        return out
    }

    /// Each item in turn, in the order of ``items``, none kept: a report that only counts (the
    /// totals, LCOV, the text's first never-exercised items) makes no list of half a million.
    func forEachItem(_ visit: (Item) -> Void) {
        let c = coverage
        for co in graph.coordinators {
            visit(Item(kind: .coordinator, module: co.module, index: co.index, detail: 0, location: co.location, hits: c.shown(co.index)))
        }
        for co in graph.coordinators {
            for (k, t) in co.opens.enumerated() {
                visit(Item(kind: .edge, module: co.module, index: co.index, detail: t,
                                location: k < co.opensLocations.count ? co.opensLocations[k] : co.location, hits: c.taken(co.index, t)))
            }
        }
        for (i, r) in graph.routes.enumerated() {
            visit(Item(kind: .route, module: r.name.split(separator: ".").first.map(String.init) ?? "", index: i, detail: 0, location: r.location,
                            hits: c.followed(route: i)))
        }
        for (i, l) in graph.links.enumerated() {
            visit(Item(kind: .link, module: l.module, index: i, detail: 0, location: l.location, hits: c.opened(link: i)))
        }
        for p in graph.preconditions {
            visit(Item(kind: .precondition, module: p.module, index: p.index, detail: 0, location: p.location, hits: c.outcomes(p.index).reduce(0) { $0 + $1.1 }))
        }
        for (container, back, module, location) in tabBacks {
            visit(Item(kind: .tabBack, module: module, index: container, detail: TabBack.allCases.firstIndex(of: back)!, location: location,
                            hits: c.wentBack(container)))
        }
        for co in graph.coordinators where co.isFlow {
            visit(Item(kind: .flow, module: co.module, index: co.index, detail: 0, location: co.location, hits: c.flow(co.index).started))
        }
    }

    /// Covered and total items of each kind, in ``Kind``'s order.
    typealias Tally = [(covered: Int, total: Int)]

    /// The tallies of every item and of each module's (in name order), and the items never
    /// exercised: the first `listing` of them and their count. One pass; a module's name is looked
    /// up only where it changes (items come coordinator by coordinator).
    func tallies(listing: Int) -> (all: Tally, modules: [(module: String, tally: Tally)], missed: [Item], missedCount: Int) {
        let zero = Tally(repeating: (0, 0), count: Kind.allCases.count)
        var all = zero, byModule: [String: Tally] = [:]
        var module = "", current = zero, started = false
        var missed: [Item] = [], missedCount = 0
        forEachItem { i in
            if !started || i.module != module {
                if started { byModule[module] = current }
                module = i.module
                current = byModule[module] ?? zero
                started = true
            }
            let k = i.kind.rawValue
            all[k].total += 1
            current[k].total += 1
            if i.hits > 0 {
                all[k].covered += 1
                current[k].covered += 1
            } else {
                if missedCount < listing { missed.append(i) }
                missedCount += 1
            }
        }
        if started { byModule[module] = current }
        return (all, byModule.keys.sorted().map { ($0, byModule[$0]!) }, missed, missedCount)
    }

    /// Tabs containers declaring a `back:` behaviour: the root's (-1) and tab container coordinators.
    var tabBacks: [(container: Int, back: TabBack, module: String, location: SourceLocation)] {
        var out: [(Int, TabBack, String, SourceLocation)] = []
        if graph.rootBack != .none, let at = graph.rootLocation {
            out.append((-1, graph.rootBack, graph.modules.first { $0.file == at.file }?.name ?? "", at))
        }
        for co in graph.coordinators where co.isTabContainer && co.tabBack != .none { out.append((co.index, co.tabBack, co.module, co.location)) }
        return out
    }

    static let kinds = ["coordinator", "edge", "route", "link", "precondition", "flow", "tabBack"]
    static let plural = ["coordinator": "coordinators", "edge": "edges", "route": "routes", "link": "links", "precondition": "preconditions", "flow": "flows",
                         "tabBack": "tabBacks"]

    // MARK: JSON

    /// A bound below the size of ``json`` in bytes, found without writing it: its coordinators and
    /// edges with their names and files, and the punctuation each takes at the least.
    public var jsonSizeAtLeast: Int {
        var n = 0
        for co in graph.coordinators {
            let name = co.name.utf8.count, file = co.location.file.utf8.count
            n += 30 + name + file  // {"name":"…","shown":0,"at":"…:1"}
            for (k, t) in co.opens.enumerated() {  // {"from":"…","to":"…","taken":{},"at":"…:1"},
                let at = k < co.opensLocations.count ? co.opensLocations[k].file.utf8.count : file
                n += 41 + name + graph.coordinators[t].name.utf8.count + at
            }
        }
        return n
    }

    public var json: JSONValue {
        let t = tallies(listing: .max)
        func totals(_ t: Tally) -> JSONObject {
            JSONObject(uniqueMembers: Kind.allCases.map { k in
                (key: Self.plural[k.name]!, value: ["covered": .int(t[k.rawValue].covered), "total": .int(t[k.rawValue].total)] as JSONValue)
            })
        }
        let c = coverage
        var o: JSONObject = [
            "run": .string(c.name), "commits": .int(c.commits), "totals": .object(totals(t.all)),
            "modules": .array(t.modules.map { m in
                var row: JSONObject = ["module": .string(m.module)]
                for (k, v) in totals(m.tally) { row.append(k, v) }
                return .object(row)
            }),
        ]
        o.append("coordinators", .array(graph.coordinators.map { co in
            ["name": .string(co.name), "shown": .int(c.shown(co.index)), "at": .string(place(co.location))]
        }))
        o.append("edges", .array(graph.coordinators.flatMap { co in
            co.opens.enumerated().map { (k, t) -> JSONValue in
                let taken = JSONObject(uniqueMembers: c.edge(co.index, t).map { (key: $0.0.rawValue, value: JSONValue.int($0.1)) })
                return ["from": .string(co.name), "to": .string(graph.coordinators[t].name), "taken": .object(taken),
                        "at": .string(place(k < co.opensLocations.count ? co.opensLocations[k] : co.location))]
            }
        }))
        o.append("routes", .array(graph.routes.enumerated().map { (i, r) in
            ["name": .string(r.name), "resolved": .int(c.resolutions(route: i)), "followed": .int(c.followed(route: i)), "at": .string(place(r.location))]
        }))
        o.append("links", .array(graph.links.enumerated().map { (i, l) in
            ["pattern": .string(l.pattern), "opened": .int(c.opened(link: i)),
             "stacks": .array((c.linkStacks[i] ?? []).map { .array($0.map { .string(graph.coordinators[$0].name) }) }), "at": .string(place(l.location))]
        }))
        o.append("preconditions", .array(graph.preconditions.map { p in
            ["name": .string(p.name), "outcomes": .object(JSONObject(uniqueMembers: c.outcomes(p.index).map { (key: $0.0.name, value: JSONValue.int($0.1)) })),
             "at": .string(place(p.location))]
        }))
        o.append("flows", .array(graph.coordinators.filter(\.isFlow).map { co in
            let f = c.flow(co.index)
            return ["name": .string(co.name), "started": .int(f.started), "completed": .int(f.completed),
                    "cancelled": .int(f.cancelled), "at": .string(place(co.location))] as JSONValue
        }))
        o.append("tabBacks", .array(tabBacks.map { t in
            ["container": .string(t.container == -1 ? "root" : graph.coordinators[t.container].name), "back": .string(t.back.rawValue),
             "used": .int(c.wentBack(t.container)), "at": .string(place(t.location))] as JSONValue
        }))
        o.append("missed", .array(t.missed.map { .string("\(place($0.location)): \($0.kind.name) \(name(of: $0))") }))
        return .object(o)
    }

    func place(_ l: SourceLocation) -> String { "\(l.file):\(l.line)" }

    // MARK: Text

    /// How many never-exercised items the text report names (a graph at its bounds has half a
    /// million edges: 42 MB of text, past any `--max-output`).
    static let missedListed = 200

    public var text: String {
        let t = tallies(listing: Self.missedListed)
        let columns = Self.kinds.map { Self.plural[$0]! }
        func cells(_ tally: Tally) -> [String] {
            tally.map { hit, total in total == 0 ? "-" : "\(hit)/\(total) \(hit * 100 / total)%" }
        }
        var rows: [[String]] = [["module"] + columns]
        for m in t.modules { rows.append([m.module] + cells(m.tally)) }
        rows.append(["TOTAL"] + cells(t.all))
        let widths = (0..<rows[0].count).map { i in rows.map { $0[i].count }.max() ?? 0 }
        func line(_ r: [String]) -> String {
            r.enumerated().map { i, s in i == 0 ? s.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                : String(repeating: " ", count: widths[i] - s.count) + s }.joined(separator: "  ")
        }
        var out = "navd coverage, run \(coverage.name): \(coverage.commits) navigations committed\n\n"
        out += line(rows[0]) + "\n" + widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
        for r in rows.dropFirst().dropLast() { out += line(r) + "\n" }
        out += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n" + line(rows.last!) + "\n"
        let partly = graph.preconditions.filter { p in
            let o = coverage.outcomes(p.index)
            return !o.isEmpty && !o.contains { $0.0 == .failed || $0.0 == .recovered || $0.0 == .redirected || $0.0 == .timedOut }
        }
        if t.missedCount == 0 {
            out += "\nEverything was exercised.\n"
        } else {
            out += "\nNever exercised (\(t.missedCount)):\n"
            for i in t.missed { out += "  \(place(i.location))  \(i.kind.name) \(name(of: i))\n" }
            if t.missedCount > Self.missedListed {
                out += "  … and \(t.missedCount - Self.missedListed) more (the json and lcov reports list them all)\n"
            }
        }
        if !partly.isEmpty {
            out += "\nPreconditions that only ever passed (\(partly.count)):\n"
            for p in partly { out += "  \(place(p.location))  \(p.name)\n" }
        }
        return out
    }

    // MARK: LCOV

    /// One record per graph file (`SF:`), a `DA:line,hits` per line that declares something (a line
    /// declaring several things, such as two `opens` entries, counts as hit only when each was).
    public var lcov: String {
        var byFile: [String: [Int: (hits: Int, allHit: Bool)]] = [:]
        // A file's lines are taken out while its items come one after another (a copy taken out
        // and put back for each item made this quadratic; a look-up of the file for each, slow).
        var file = "", lines: [Int: (hits: Int, allHit: Bool)] = [:], started = false
        forEachItem { i in
            if !started || i.location.file != file {
                if started { byFile[file] = lines }
                file = i.location.file
                lines = byFile.removeValue(forKey: file) ?? [:]
                started = true
            }
            lines[i.location.line, default: (0, true)].hits += i.hits
            if i.hits == 0 { lines[i.location.line, default: (0, true)].allHit = false }
        }
        if started { byFile[file] = lines }
        var out = "TN:navd-\(coverage.name.unicodeScalars.map { ($0.properties.isAlphabetic || ("0"..."9").contains($0)) ? Character($0) : "_" }.map(String.init).joined())\n"
        for file in byFile.keys.sorted() {
            let lines = byFile[file]!
            out += "SF:\(file)\n"
            for l in lines.keys.sorted() {
                let v = lines[l]!
                out += "DA:\(l),\(v.allHit ? v.hits : 0)\n"
            }
            out += "LF:\(lines.count)\nLH:\(lines.values.filter(\.allHit).count)\nend_of_record\n"
        }
        return out
    }
}
