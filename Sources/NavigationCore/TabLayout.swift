import JSON
import NavGraph

/// The tabs a graph declares, by name: the root's (nil when the root is a stack) and each tab
/// container's. A tab is known by its place among them, so the state file records the layout each
/// saved tree was written under: a graph that moved, added or removed tabs while navd was down is
/// told apart from one that kept them, and a saved tab is never shown as another.
public struct TabLayout: Equatable, Sendable {
    public var root: [String]?
    public var containers: [String: [String]]

    public init(root: [String]?, containers: [String: [String]]) {
        self.root = root
        self.containers = containers
    }

    public init(_ graph: NavigationGraph) {
        root = graph.rootTabNames
        var containers: [String: [String]] = [:]
        for c in graph.coordinators where !c.tabs.isEmpty {
            containers[c.name] = c.tabs.map { graph.coordinators[$0].name }
        }
        self.containers = containers
    }

    /// `{"root": [names] | null, "tabs": {container: [names]}}`, keys sorted (the same graph writes
    /// the same bytes).
    public var json: JSONValue {
        var tabs = JSONObject()
        for name in containers.keys.sorted() { tabs.append(name, .array(containers[name]!.map(JSONValue.string))) }
        var o = JSONObject()
        o.append("root", root.map { .array($0.map(JSONValue.string)) } ?? .null)
        o.append("tabs", .object(tabs))
        return .object(o)
    }

    /// The layout `json` wrote; nil when it is not one.
    public init?(json: JSONValue) {
        guard case .object(let o) = json, let tabs = o["tabs"]?.objectValue else { return nil }
        func names(_ v: JSONValue) -> [String]? {
            guard let a = v.arrayValue else { return nil }
            let out = a.compactMap(\.stringValue)
            return out.count == a.count ? out : nil
        }
        switch o["root"] {
        case .null?: root = nil
        case let v?:
            guard let r = names(v) else { return nil }
            root = r
        case nil: return nil
        }
        var containers: [String: [String]] = [:]
        for m in tabs.members {
            guard let n = names(m.value) else { return nil }
            containers[m.key] = n
        }
        self.containers = containers
    }
}

extension Session {
    /// Checks that each tab shell of a saved tree holds the tabs it was saved with where `graph`
    /// declares them now: the root's tabs, or its container's, by name and place as `savedUnder`
    /// (the layout of the graph the tree was written under) lists them. A shell whose tabs the state
    /// file does not record is checked by count alone (``checkTabs(of:graph:)``).
    public static func checkTabs(of root: Node, graph: NavigationGraph, savedUnder layout: TabLayout) throws(NavError) {
        try forEachTabShell(of: root) { n throws(NavError) in
            let (declared, owner) = declaredTabs(of: n, graph: graph)
            let was = n.coordinator >= 0 ? layout.containers[graph.coordinators[n.coordinator].name] : layout.root
            let now = (declared ?? []).map { graph.coordinators[$0].name }
            if let was, was != now {
                throw NavError(.corruptState, "saved tabs \(n.id) hold the tabs \(was.joined(separator: ", ")), as the graph it was saved under declared them; \(owner) declares \(now.isEmpty ? "none" : now.joined(separator: ", ")) now (a tab is known by its place; to move tabs under live sessions, serve the graph they were saved with and `graph.reload {force: true}` the new one, which resets the sessions holding them to its root)")
            }
        }
    }
}
