import JSON
import NavGraph
import NavigationCore

/// A navigation as tests and benchmarks write one (navd itself decodes navigate's params in place).
public struct NavigateRequest: Sendable {
    public var to: String?
    public var route: String?
    public var by: Presentation?
    public var with: JSONObject?
    public var from: String?
    public var ifVersion: Int?
    public var key: String?
    public var dryRun = false

    public init(to: String? = nil, route: String? = nil, by: Presentation? = nil, with: JSONObject? = nil,
                from: String? = nil, ifVersion: Int? = nil, key: String? = nil, dryRun: Bool = false) {
        self.to = to
        self.route = route
        self.by = by
        self.with = with
        self.from = from
        self.ifVersion = ifVersion
        self.key = key
        self.dryRun = dryRun
    }
}


extension Session {
    /// Validates a navigation completely without changing anything.
    public func plan(_ r: NavigateRequest, caller: Caller) throws(NavError) -> Plan {
        try plan(graph.destination(to: r.to, route: r.route), by: r.by, with: r.with, from: r.from, ifVersion: r.ifVersion, caller: caller)
    }

    /// Runs `plan` then `commit` on a copy: what would happen, with nothing changed.
    public func dryRun(_ r: NavigateRequest, caller: Caller) throws(NavError) -> (plan: Plan, commit: Commit, visible: [String]) {
        let p = try plan(r, caller: caller)
        let (c, visible) = try dryRun(p)
        return (p, c, visible)
    }
}
