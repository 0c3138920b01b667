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

        // The pending line and the status line wrap (up to 2 and 3 rows): what they say is not cut.
        let pendingLines = app.pending.map { p in wrap(Line("⏳ \(p.what) waits for \(p.waitingFor) — x cancels", .key), rows: 2) } ?? []
        let statusLines = wrap(app.status, rows: 3)
        let logRows = max(3, rows / 4) - (statusLines.count - 1)
        let bodyRows = max(1, rows - 1 - 1 - max(1, logRows) - statusLines.count - pendingLines.count)
        if let form = app.form {
            var body = form.render(width: columns)
            // Keep the error and the help line when the form is taller than the room.
            if body.count > bodyRows { body = Array(body.prefix(max(0, bodyRows - 2))) + body.suffix(min(2, bodyRows)) }
            out += body + Array(repeating: Line(), count: max(0, bodyRows - body.count))
        } else {
            let leftWidth = max(30, columns / 2)
            let left = window(treeLines(), rows: bodyRows)
            let right = actionLines(rows: bodyRows)
            for i in 0..<bodyRows {
                var l = i < left.count ? left[i] : Line()
                l.spans = cut(l.spans, to: leftWidth - 1)
                l.add(String(repeating: " ", count: max(0, leftWidth - 1 - l.width)))
                l.add("│", .dim)
                if i < right.count { l.spans += cut(right[i].spans, to: columns - leftWidth) }
                out.append(l)
            }
        }
        out += pendingLines
        var header = Line("── notifications ", .dim)
        header.add(String(repeating: "─", count: max(0, columns - header.width)), .dim)
        out.append(header)
        let shown = app.log.suffix(max(1, logRows))
        out += shown
        out += Array(repeating: Line(), count: max(1, logRows) - shown.count)
        out += statusLines
        return out
    }

    /// `line` cut into rows of the screen's width, at most `rows` of them (the last ends with … when
    /// even they cannot hold it).
    private func wrap(_ line: Line, rows: Int) -> [Line] {
        var out: [Line] = []
        var current = Line()
        for (text, style) in line.spans {
            var rest = Substring(text)
            while !rest.isEmpty {
                if current.width == columns {
                    out.append(current)
                    current = Line()
                }
                let room = columns - current.width
                current.add(String(rest.prefix(room)), style)
                rest = rest.dropFirst(room)
            }
        }
        out.append(current)
        if out.count > rows {
            out = Array(out.prefix(rows))
            out[rows - 1].spans = cut(out[rows - 1].spans, to: columns)
            if let last = out[rows - 1].spans.last, !last.0.hasSuffix("…") {
                out[rows - 1].spans = cut(out[rows - 1].spans, to: columns - 1)
                out[rows - 1].add("…", last.1)
            }
        }
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
                if let h = n["paramsHistory"]?.arrayValue, !h.isEmpty { l.add(" (\(h.count) earlier: d restores)", .dim) }
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

    /// Actions of the visible screen, a page at a time (`>` and `<` turn it, a marker says there is
    /// more), then the fixed keys, two or three to a row.
    private func actionLines(rows: Int) -> [Line] {
        let topName = app.mirror?.top?["coordinator"]?.stringValue ?? "?"
        func key(_ k: String, _ label: String, _ detail: String = "") -> Line {
            var l = Line(" \(k) ", .key)
            l.add(label)
            if !detail.isEmpty { l.add("  " + detail, .dim) }
            return l
        }
        func keys(_ pairs: [(String, String, Bool)]) -> Line { keys(pairs.map { ($0.0, $0.1, $0.2 ? Style.highlight : .plain) }) }
        func keys(_ pairs: [(String, String, Style)]) -> Line {
            var l = Line()
            for (i, (k, label, style)) in pairs.enumerated() {
                l.add((i > 0 ? "  " : "") + " \(k) ", .key)
                l.add(label, style)
            }
            return l
        }
        if app.mirror?.closed == true {
            return [Line(" session \(app.session) is closed: no actions", .bold), keys([("q", "quit", false)])]
        }
        // Dimmed in parentheses where navd has nothing to dismiss (pressed, it still asks, and shows navd's reason).
        let nothingToDismiss = app.mirror?.nothingToDismiss(graph: app.graph) != nil
        var fixed: [Line] = [
            keys([("d", nothingToDismiss ? "(dismiss)" : "dismiss", nothingToDismiss ? .dim : .plain), ("u", "params", .plain), ("q", "quit", .plain)]),
            keys([("U", "params, back restores the earlier", false)]),
            keys([("t", "pop to this stack's first screen", false)]),
            keys([("r", "reset", false), ("R", "reset without guards", false)]),
            keys([("e", "result", false), ("E", "result merged below", false)]),
            keys([("p", app.popFirst ? "pop first: ON" : "pop first", app.popFirst), ("K", app.keepExisting ? "to existing: ON" : "to existing", app.keepExisting)]),
        ]
        if let flow = app.mirror?.visibleFlow?["coordinator"]?.stringValue {
            fixed.append(keys([("c", "complete \(flow)", false)]))
            fixed.append(keys([("x", app.pending == nil ? "cancel \(flow)" : "cancel pending", false)]))
        } else if app.pending != nil {
            fixed.append(keys([("x", "cancel pending", false)]))
        }
        var list = [Line(" actions on \(topName)" + (app.url.map { "  \($0)" } ?? ""), .bold)]
        let room = max(1, rows - 1 - fixed.count)
        let all = app.actions
        app.lastActionPage = all.count <= room ? 0 : (all.count - 1) / max(1, room - 1)
        if all.count <= room {
            list += all.map { key(String($0.key), $0.label, $0.detail) }
        } else {
            // A page of room - 1 actions and a marker row.
            let per = max(1, room - 1)
            let start = min(app.actionPage, app.lastActionPage) * per
            let page = all[start..<min(all.count, start + per)]
            list += page.map { key(String($0.key), $0.label, $0.detail) }
            let after = all.count - (start + page.count)
            var marker = Line(" ", .dim)
            if start > 0 { marker.add("◀ < \(start) before  ", .key) }
            if after > 0 { marker.add("▶ > \(after) more", .key) }
            list.append(marker)
        }
        list += Array(repeating: Line(), count: max(0, rows - fixed.count - list.count))
        return list + fixed
    }
}
