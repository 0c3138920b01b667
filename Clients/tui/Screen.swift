import JSON
import NavClient

/// Lays out one frame: title, tree | actions (or the open form), pending navigation, the
/// notification log and the status line. Works from 80x24 up; everything is cut to fit.
struct Screen {
    let app: App
    let columns: Int
    let rows: Int

    func lines() -> [Line] {
        var out: [Line] = []
        var title = Line(" nav-tui ", .title)
        if let m = app.mirror {
            title.add(" session \(m.session) · version \(m.version) · \(m.visible.count) deep ", .title)
        } else {
            title.add(" session \(app.session) ", .title)
        }
        title.add(String(repeating: " ", count: max(0, columns - title.width)), .title)
        out.append(title)

        let logRows = max(3, rows / 4)
        let pendingRows = app.pending == nil ? 0 : 1
        let bodyRows = max(1, rows - 1 - 1 - logRows - 1 - pendingRows)
        if let form = app.form {
            var body = form.render(width: columns)
            // Keep the error and the help line when the form is taller than the room.
            if body.count > bodyRows { body = Array(body.prefix(max(0, bodyRows - 2))) + body.suffix(min(2, bodyRows)) }
            out += body + Array(repeating: Line(), count: max(0, bodyRows - body.count))
        } else {
            let leftWidth = max(30, columns * 11 / 20)
            let left = window(treeLines(), rows: bodyRows)
            let right = actionLines(rows: bodyRows)
            for i in 0..<bodyRows {
                var l = i < left.count ? left[i] : Line()
                l.spans = cut(l.spans, to: leftWidth - 1)
                l.add(String(repeating: " ", count: max(0, leftWidth - 1 - l.width)))
                l.add("│", .dim)
                if i < right.count { l.spans += right[i].spans }
                out.append(l)
            }
        }
        if let p = app.pending {
            out.append(Line("⏳ \(p.to) waits for \(p.waitingFor) — x cancels", .key))
        }
        var header = Line("── notifications ", .dim)
        header.add(String(repeating: "─", count: max(0, columns - header.width)), .dim)
        out.append(header)
        let shown = app.log.suffix(logRows)
        out += shown
        out += Array(repeating: Line(), count: logRows - shown.count)
        out.append(app.status)
        return out
    }

    private func cut(_ spans: [(String, Style)], to width: Int) -> [(String, Style)] {
        var left = width
        var out: [(String, Style)] = []
        for (t, s) in spans where left > 0 {
            let c = t.count > left ? String(t.prefix(left - 1)) + "…" : t
            left -= c.count
            out.append((c, s))
        }
        return out
    }

    /// The last `rows` lines up to the visible screen's line, so the visible path stays in view.
    private func window(_ lines: [(Line, Bool)], rows: Int) -> [Line] {
        guard lines.count > rows else { return lines.map(\.0) }
        let lastVisible = lines.lastIndex { $0.1 } ?? lines.count - 1
        let end = min(lines.count, max(rows, lastVisible + 3))
        return lines[(end - rows)..<end].map(\.0)
    }

    /// The tree, indented; nodes on the visible path are marked ▶ and highlighted.
    private func treeLines() -> [(Line, Bool)] {
        guard let m = app.mirror else { return [(Line("waiting for navd…", .dim), false)] }
        let visible = Set(m.visible)
        var out: [(Line, Bool)] = []
        func walk(_ n: JSONValue, _ depth: Int, _ prefix: String) {
            let id = n["id"]?.stringValue ?? "?"
            let on = visible.contains(id)
            var l = Line(on ? "▶ " : "  ", on ? .highlight : .dim)
            l.add(String(repeating: "  ", count: depth) + prefix)
            let kind = n["kind"]?.stringValue ?? "?"
            switch kind {
            case "screen", "flow":
                l.add((kind == "flow" ? "flow " : "") + (n["coordinator"]?.stringValue ?? "?"), on ? .highlight : .plain)
                l.add(" [\(id)]", .dim)
                if let p = n["params"], p.objectValue?.isEmpty == false { l.add(" " + JSONWriter.string(p), .dim) }
            default:
                l.add(kind, on ? .highlight : .dim)
                if let c = n["coordinator"]?.stringValue { l.add(" " + c, on ? .highlight : .plain) }  // a tab container
                l.add(" [\(id)]", .dim)
            }
            out.append((l, on))
            let children = n["children"]?.arrayValue ?? []
            let selected = n["selected"]?.intValue
            for (i, c) in children.enumerated() {
                walk(c, depth + 1, kind == "tabs" ? "tab \(i + 1)\(i == selected ? "*" : "") " : "")
            }
            if let p = n["presented"] { walk(p, depth + 1, "presents ") }
        }
        walk(m.root, 0, "")
        return out
    }

    /// Actions of the visible screen, then the fixed keys.
    private func actionLines(rows: Int) -> [Line] {
        let topName = app.mirror?.top?["coordinator"]?.stringValue ?? "?"
        var fixed: [Line] = []
        func key(_ k: String, _ label: String, _ detail: String = "") -> Line {
            var l = Line(" \(k) ", .key)
            l.add(label)
            if !detail.isEmpty { l.add("  " + detail, .dim) }
            return l
        }
        fixed.append(key("d", "dismiss"))
        fixed.append(key("t", "pop to the top of this stack"))
        fixed.append(key("r", "reset to the root", "R: without leave guards"))
        fixed.append(key("u", "update this screen's params"))
        fixed.append(key("e", "dismiss with a result", "E: merged into the screen below"))
        fixed.append(key("p", app.popFirst ? "pop first: ON (next action)" : "pop to the top first, then the next action"))
        fixed.append(key("K", app.keepExisting ? "back to an existing screen: ON (next action)" : "next action: back to its screen if the stack has one"))
        if let flow = app.mirror?.visibleFlow?["coordinator"]?.stringValue {
            fixed.append(key("c", "complete \(flow)"))
            fixed.append(key("x", app.pending == nil ? "cancel \(flow)" : "cancel pending"))
        } else if app.pending != nil {
            fixed.append(key("x", "cancel pending"))
        }
        fixed.append(key("q", "quit"))
        var list = [Line(" actions on \(topName)" + (app.url.map { "  \($0)" } ?? ""), .bold)]
        let room = max(0, rows - 1 - fixed.count)
        list += app.actions.prefix(room).map { key(String($0.key), $0.label, $0.detail) }
        return list + fixed
    }
}
