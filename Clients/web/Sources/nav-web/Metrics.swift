import Foundation

/// navd's `stats` in Prometheus's text format: counters as `navd_<name>_total`, the rest as gauges,
/// per-uid figures with a `uid` label, the state file's figures under `navd_state_`.
enum Metrics {
    static let counters: Set<String> = [
        "requests", "errors", "commits", "connectionsAccepted", "connectionsRefused", "notificationsReceived",
        "notificationsSent", "tasksStarted", "bytesIn", "bytesOut", "slowClientsDropped", "provided",
    ]

    static func text(_ stats: Any) -> String {
        guard let s = stats as? [String: Any] else { return "" }
        var out = ""
        func metric(_ name: String, _ help: String, _ type: String, _ samples: [(labels: String, value: Double)]) {
            guard !samples.isEmpty else { return }
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (labels, value) in samples { out += "\(name)\(labels) \(format(value))\n" }
        }
        for key in s.keys.sorted() {
            guard let v = number(s[key]) else { continue }
            if counters.contains(key) {
                metric("navd_\(snake(key))_total", "navd's stats.\(key) since it started.", "counter", [("", v)])
            } else {
                metric("navd_\(snake(key))\(key == "uptime" ? "_seconds" : "")", "navd's stats.\(key).", "gauge", [("", v)])
            }
        }
        if let rss = number((s["memory"] as? [String: Any])?["rss"]) {
            metric("navd_memory_rss_bytes", "navd's resident memory.", "gauge", [("", rss)])
        }
        if let users = s["users"] as? [String: Any] {
            var fields = Set<String>()
            for case let u as [String: Any] in users.values { fields.formUnion(u.keys) }
            for f in fields.sorted() {
                let samples = users.keys.sorted().compactMap { uid -> (String, Double)? in
                    number((users[uid] as? [String: Any])?[f]).map { ("{uid=\"\(uid)\"}", $0) }
                }
                metric("navd_user_\(snake(f))", "navd's stats.users[uid].\(f).", "gauge", samples)
            }
        }
        if let state = s["state"] as? [String: Any] {
            for key in state.keys.sorted() {
                guard let v = number(state[key]) else { continue }
                metric("navd_state_\(snake(key))", "navd's stats.state.\(key) (the state file).", "gauge", [("", v)])
            }
        }
        return out
    }

    static func number(_ v: Any?) -> Double? {
        if let b = v as? Bool { return b ? 1 : 0 }
        if let n = v as? NSNumber { return n.doubleValue }
        return nil
    }

    static func format(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
    }

    /// `connectionsAccepted` → `connections_accepted`.
    static func snake(_ name: String) -> String {
        var out = ""
        for c in name {
            if c.isUppercase {
                out += "_" + c.lowercased()
            } else {
                out.append(c)
            }
        }
        return out
    }
}
