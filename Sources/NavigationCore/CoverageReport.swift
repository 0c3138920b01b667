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

    /// One thing a run may exercise: what it is, where it is declared, and how often it was.
    struct Item {
        let kind: String
        let module: String
        let name: String
        let location: SourceLocation
        let hits: Int
    }

    /// Every item, in the graph's order: coordinators, their `opens` edges, routes, links,
    /// preconditions, flows.
    var items: [Item] {
        var out: [Item] = []
        let c = coverage
        for co in graph.coordinators {
            out.append(Item(kind: "coordinator", module: co.module, name: co.name, location: co.location, hits: c.shown(co.index)))
        }
        for co in graph.coordinators {
            for (k, t) in co.opens.enumerated() {
                let taken = c.edge(co.index, t).reduce(0) { $0 + $1.1 }
                out.append(Item(kind: "edge", module: co.module, name: "\(co.name) → \(graph.coordinators[t].name)",
                                location: k < co.opensLocations.count ? co.opensLocations[k] : co.location, hits: taken))
            }
        }
        for (i, r) in graph.routes.enumerated() {
            out.append(Item(kind: "route", module: r.name.split(separator: ".").first.map(String.init) ?? "", name: r.name, location: r.location, hits: c.followed(route: i)))
        }
        for (i, l) in graph.links.enumerated() {
            out.append(Item(kind: "link", module: l.module, name: l.pattern, location: l.location, hits: c.opened(link: i)))
        }
        for p in graph.preconditions {
            out.append(Item(kind: "precondition", module: p.module, name: p.name, location: p.location, hits: c.outcomes(p.index).reduce(0) { $0 + $1.1 }))
        }
        for (container, back, module, location) in tabBacks {
            out.append(Item(kind: "tabBack", module: module, name: "\(container == -1 ? "root" : graph.coordinators[container].name) back: \(back.rawValue)",
                            location: location, hits: c.wentBack(container)))
        }
        for co in graph.coordinators where co.isFlow {
            out.append(Item(kind: "flow", module: co.module, name: co.name, location: co.location, hits: c.flow(co.index).started))
        }
        return out
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
        let all = items
        func totals(_ list: [Item]) -> JSONObject {
            JSONObject(uniqueMembers: Self.kinds.map { k in
                let of = list.filter { $0.kind == k }
                return (key: Self.plural[k]!, value: ["covered": .int(of.filter { $0.hits > 0 }.count), "total": .int(of.count)] as JSONValue)
            })
        }
        let modules = Set(all.map(\.module)).sorted()
        let byModule = Dictionary(grouping: all, by: \.module)
        let c = coverage
        var o: JSONObject = [
            "run": .string(c.name), "commits": .int(c.commits), "totals": .object(totals(all)),
            "modules": .array(modules.map { m in
                var row: JSONObject = ["module": .string(m)]
                for (k, v) in totals(byModule[m] ?? []) { row.append(k, v) }
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
        o.append("missed", .array(all.filter { $0.hits == 0 }.map { .string("\(place($0.location)): \($0.kind) \($0.name)") }))
        return .object(o)
    }

    func place(_ l: SourceLocation) -> String { "\(l.file):\(l.line)" }

    // MARK: Text

    /// How many never-exercised items the text report names (a graph at its bounds has half a
    /// million edges: 42 MB of text, past any `--max-output`).
    static let missedListed = 200

    public var text: String {
        let all = items
        let modules = Set(all.map(\.module)).sorted()
        let columns = Self.kinds.map { Self.plural[$0]! }
        func cell(_ list: [Item], _ kind: String) -> String {
            let of = list.filter { $0.kind == kind }
            guard !of.isEmpty else { return "-" }
            let hit = of.filter { $0.hits > 0 }.count
            return "\(hit)/\(of.count) \(hit * 100 / of.count)%"
        }
        var rows: [[String]] = [["module"] + columns]
        let byModule = Dictionary(grouping: all, by: \.module)
        for m in modules { rows.append([m] + Self.kinds.map { cell(byModule[m] ?? [], $0) }) }
        rows.append(["TOTAL"] + Self.kinds.map { cell(all, $0) })
        let widths = (0..<rows[0].count).map { i in rows.map { $0[i].count }.max() ?? 0 }
        func line(_ r: [String]) -> String {
            r.enumerated().map { i, s in i == 0 ? s.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                : String(repeating: " ", count: widths[i] - s.count) + s }.joined(separator: "  ")
        }
        var out = "navd coverage, run \(coverage.name): \(coverage.commits) navigations committed\n\n"
        out += line(rows[0]) + "\n" + widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
        for r in rows.dropFirst().dropLast() { out += line(r) + "\n" }
        out += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n" + line(rows.last!) + "\n"
        let missed = all.filter { $0.hits == 0 }
        let partly = graph.preconditions.filter { p in
            let o = coverage.outcomes(p.index)
            return !o.isEmpty && !o.contains { $0.0 == .failed || $0.0 == .recovered || $0.0 == .redirected || $0.0 == .timedOut }
        }
        if missed.isEmpty {
            out += "\nEverything was exercised.\n"
        } else {
            out += "\nNever exercised (\(missed.count)):\n"
            for i in missed.prefix(Self.missedListed) { out += "  \(place(i.location))  \(i.kind) \(i.name)\n" }
            if missed.count > Self.missedListed {
                out += "  … and \(missed.count - Self.missedListed) more (the json and lcov reports list them all)\n"
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
        for i in items {
            // In place: a copy of the file's lines taken out and put back made this quadratic.
            byFile[i.location.file, default: [:]][i.location.line, default: (0, true)].hits += i.hits
            if i.hits == 0 { byFile[i.location.file, default: [:]][i.location.line, default: (0, true)].allHit = false }
        }
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
