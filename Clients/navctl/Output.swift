import ArgumentParser
import Foundation
import JSON
import NavClient

func summary(_ r: JSONValue) -> String {
    var parts: [String] = []
    if let n = r["node"]?.stringValue, !n.isEmpty { parts.append("node \(n)") }
    if let v = r["version"]?.intValue { parts.append("version \(v)") }
    if let removed = r["removed"]?.arrayValue, !removed.isEmpty { parts.append("removed \(removed.compactMap(\.stringValue).joined(separator: " "))") }
    if let vis = r["visible"]?.arrayValue { parts.append("visible \(vis.compactMap(\.stringValue).joined(separator: " > "))") }
    if let hops = r["redirected"]?.arrayValue, let last = hops.last?["to"]?.stringValue {
        // As nav-tui says it: where the preconditions sent the navigation, and which of them.
        parts.append("redirected to \(last) by \(hops.compactMap { $0["precondition"]?.stringValue }.joined(separator: ", "))")
    }
    if let then = r["then"] {
        if let e = then["error"] {
            parts.append("then failed: \(e["data"]?["kind"]?.stringValue ?? "?"): \(e["message"]?.stringValue ?? "")")
        } else {
            parts.append("then \(summary(then))")
        }
    }
    return parts.joined(separator: ", ")
}

/// The tree, indented, with the visible path marked `▶` (coloured on a terminal).
func renderTree(_ t: JSONValue, color: Bool) -> String {
    let visible = Set(t["visible"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    var out = "session \(t["session"]?.stringValue ?? "?") version \(t["version"]?.intValue ?? 0)\n"
    func walk(_ n: JSONValue, _ depth: Int, _ label: String) {
        let id = n["id"]?.stringValue ?? "?"
        let kind = n["kind"]?.stringValue ?? "?"
        var line = String(repeating: "  ", count: depth) + label
        switch kind {
        case "screen", "flow":
            line += "\(n["coordinator"]?.stringValue ?? "?") [\(id)]"
            if kind == "flow" { line += " (flow)" }
            if let p = n["params"], p != .object([:]) { line += " " + JSONWriter.string(p) }
            if let h = n["paramsHistory"]?.arrayValue, !h.isEmpty { line += " (earlier params: \(h.count), back restores \(JSONWriter.string(h[h.count - 1])))" }
        case "tabs": line += "tabs " + (n["coordinator"]?.stringValue.map { "\($0) " } ?? "") + "[\(id)] selected \(n["selected"]?.intValue ?? 0)"
        default: line += "stack [\(id)]"
        }
        let mark = visible.contains(id) ? "▶ " : "  "
        out += (color && visible.contains(id) ? "\u{1B}[1;32m" + mark + line + "\u{1B}[0m" : mark + line) + "\n"
        for c in n["children"]?.arrayValue ?? [] { walk(c, depth + 1, "") }
        if let p = n["presented"] { walk(p, depth + 1, "presents ") }
    }
    walk(t["root"] ?? .null, 0, "")
    return String(out.dropLast())
}
