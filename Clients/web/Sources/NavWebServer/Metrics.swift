import Foundation

/// navd's `stats` in Prometheus's text format: counters as `navd_<name>_total`, the rest as gauges,
/// `stats.memory`'s figures as `navd_memory_<name>_bytes`, per-uid figures with a `uid` label, the state file's figures under `navd_state_`, and each
/// method's answers, errors and latency (`stats.methods`) with a `method` label: the counters
/// `navd_method_requests_total` and `navd_method_errors_total`, the histogram
/// `navd_request_duration_seconds` (`_bucket{le}`, `_sum`, `_count`).
enum Metrics {
    static let counters: Set<String> = [
        "requests", "errors", "commits", "connectionsAccepted", "connectionsRefused", "notificationsReceived",
        "notificationsSent", "tasksStarted", "bytesIn", "bytesOut", "slowClientsDropped", "inputHoldersDropped", "provided",
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
        if let memory = s["memory"] as? [String: Any] {
            // rss, data, maxData, input, maxInput: all bytes.
            for key in memory.keys.sorted() {
                guard let v = number(memory[key]) else { continue }
                metric("navd_memory_\(snake(key))_bytes", key == "rss" ? "navd's resident memory." : "navd's stats.memory.\(key).", "gauge", [("", v)])
            }
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
        if let methods = s["methods"] as? [String: Any] {
            out += histograms(methods)
        }
        if let state = s["state"] as? [String: Any] {
            for key in state.keys.sorted() {
                guard let v = number(state[key]) else { continue }
                metric("navd_state_\(snake(key))", "navd's stats.state.\(key) (the state file).", "gauge", [("", v)])
            }
        }
        return out
    }

    /// `stats.methods` as two counters and a histogram, each sample labelled by method.
    static func histograms(_ methods: [String: Any]) -> String {
        let names = methods.keys.sorted()
        func each(_ field: String) -> [(String, Double)] {
            names.compactMap { m in number((methods[m] as? [String: Any])?[field]).map { (m, $0) } }
        }
        var out = "# HELP navd_method_requests_total Requests navd answered, by method.\n# TYPE navd_method_requests_total counter\n"
        for (m, v) in each("requests") { out += "navd_method_requests_total{method=\"\(label(m))\"} \(format(v))\n" }
        out += "# HELP navd_method_errors_total Requests navd answered with an error, by method.\n# TYPE navd_method_errors_total counter\n"
        for (m, v) in each("errors") { out += "navd_method_errors_total{method=\"\(label(m))\"} \(format(v))\n" }
        out += "# HELP navd_request_duration_seconds From the read that brought a request to its answer, by method.\n"
        out += "# TYPE navd_request_duration_seconds histogram\n"
        for m in names {
            guard let latency = (methods[m] as? [String: Any])?["latency"] as? [String: Any],
                  let buckets = latency["buckets"] as? [Any] else { continue }
            let method = "method=\"\(label(m))\""
            for case let b as [String: Any] in buckets {
                guard let count = number(b["count"]) else { continue }
                let le = (b["le"] as? String) ?? number(b["le"]).map { String($0) } ?? "+Inf"
                out += "navd_request_duration_seconds_bucket{\(method),le=\"\(le)\"} \(format(count))\n"
            }
            out += "navd_request_duration_seconds_sum{\(method)} \(number(latency["sumSeconds"]).map { String($0) } ?? "0")\n"
            out += "navd_request_duration_seconds_count{\(method)} \(format(number(latency["count"]) ?? 0))\n"
        }
        return out
    }

    /// A label value as Prometheus's text format writes it (backslash, quote and newline escaped).
    static func label(_ value: String) -> String {
        var out = ""
        for c in value {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
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
