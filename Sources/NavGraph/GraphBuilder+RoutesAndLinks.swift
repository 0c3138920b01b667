import Foundation
import JSON

/// Routes, deep links and the root.
extension Builder {
    mutating func buildRoute(_ name: String, _ doc: Doc, module: String, at loc: SourceLocation) -> Route? {
        if !isPlainName(name) {
            d.error(loc, "`\(name)` is not a valid route name\(firstUnplainCharacter(name).map { " (it holds \($0))" } ?? ""): routes are named as coordinators are, letters, digits, `_` or `-`, unqualified, such as showProduct")
            return nil
        }
        var toDoc: Doc?
        var by: Presentation?
        var with: JSONObject?
        if doc.text != nil, !doc.isNull {
            toDoc = doc
        } else if doc.mapping != nil {
            unknownKeys(doc, allowed: Builder.routeKeys, what: "route `\(module).\(name)`")
            toDoc = doc["to"]
            if let b = doc["by"] { by = presentation(b) }
            if let w = doc["with"] {
                if case .object(let o) = w.json { with = o } else { d.error(w.location, "`with` of a route must be a mapping of setup fields") }
                for (field, _, v) in w.mapping ?? [] { constantLocations[loc, default: [:]][field] = v.location }
            }
        } else {
            d.error(doc.location, "route `\(module).\(name)` must be a mapping such as {to: Product, by: push}")
            return nil
        }
        guard let td = toDoc, let ref = td.text, !td.isNull else {
            d.error(loc, "route `\(module).\(name)` leads nowhere: add `to:` naming a coordinator")
            return nil
        }
        guard let i = resolveCoordinator(ref, in: module, at: td.location, role: " (target of route `\(module).\(name)`)") else { return nil }
        if let by, !coordinators[i].allows(by) {
            d.error(doc["by"]!.location, "route `\(module).\(name)` shows `\(coordinators[i].name)` by \(by.rawValue), which its `presentations` do not allow")
        } else {
            noteSelect(by, of: i, "route `\(module).\(name)`", at: doc["by"]?.location ?? td.location)
        }
        return Route(name: module + "." + name, localName: name, to: i, by: by, with: with, location: loc)
    }

    /// `id` for `id?` or `*id` (a pattern's optional or rest parameter written as the pattern marks
    /// it); nil for a plain name.
    static func markedParameter(_ p: String) -> String? {
        if p.hasSuffix("?"), p.count > 1 { return String(p.dropLast()) }
        if p.hasPrefix("*"), p.count > 1 { return String(p.dropFirst()) }
        return nil
    }

    mutating func buildLink(_ pattern: String, _ doc: Doc, module: String, at loc: SourceLocation) -> Link? {
        guard pattern.hasPrefix("/") else {
            d.error(loc, "link pattern `\(pattern)` must be a URL path starting with `/`, such as \"/product/:id\"")
            return nil
        }
        let (pathPart, queryPart) = splitQuery(pattern)
        var declared: [String] = []
        guard let segments = linkSegments(pattern, pathPart, at: loc, declared: &declared),
              let query = linkQuery(pattern, queryPart, at: loc, declared: &declared) else { return nil }
        guard let seq = doc.sequence, !seq.isEmpty else {
            d.error(doc.location, "link `\(pattern)` leads nowhere: map it to the stack it opens, such as [shop.Home, {to: shop.Product, with: {id: \":id\"}}]")
            return nil
        }
        var entries: [Link.Entry] = []
        var used: Set<String> = []
        var ok = true
        for item in seq {
            var ref: (String, SourceLocation)?
            var with = JSONObject()
            var by: Presentation?
            if let t = item.text, !item.isNull {
                ref = (t, item.location)
            } else if item.mapping != nil {
                unknownKeys(item, allowed: Builder.linkEntryKeys, what: "a link entry")
                if let t = item["to"], let s = t.text { ref = (s, t.location) }
                if let b = item["by"] {
                    by = presentation(b)
                    if let p = by, p == .replace || p == .root {
                        d.error(b.location, "link `\(pattern)` shows an entry by \(p.rawValue); a link builds its stack bottom first: each entry is pushed (no `by`), presented (by: present) or, right after a tab container, selects its tab")
                        by = nil
                    }
                }
                if let w = item["with"] {
                    if case .object(let o) = w.json { with = o } else {
                        d.error(w.location, "`with` of a link entry must be a mapping of setup fields")
                        ok = false
                    }
                    for (field, _, v) in w.mapping ?? [] {
                        constantLocations[item.location, default: [:]][field] = v.location
                        guard let s = v.text, s.hasPrefix(":") else { continue }
                        let p = String(s.dropFirst())
                        if declared.contains(p) { used.insert(p) } else if let bare = Self.markedParameter(p), declared.contains(bare) {
                            // `:id?` or `*rest` as the pattern writes it: `with` names the parameter alone
                            // (and uses it: one error, not a second for an unused parameter).
                            used.insert(bare)
                            d.error(v.location, "link `\(pattern)` fills `\(field)` with `:\(p)`; `with` names a parameter without the pattern's marks: write `:\(bare)`")
                            ok = false
                        } else {
                            let bare = Self.markedParameter(p) ?? p
                            d.error(v.location, "link `\(pattern)` fills `\(field)` with `:\(p)`, which the pattern does not declare; declare it in the path (/…/:\(bare)\(p.hasSuffix("?") ? "?" : "")) or the query (?\(bare)=:\(bare))\(bare == p ? "" : ", and write `:\(bare)` in `with`")")
                            ok = false
                        }
                    }
                }
            }
            guard let (name, l) = ref else {
                d.error(item.location, "link entry must name a coordinator, as `shop.Home` or {to: shop.Product, with: {…}}")
                ok = false
                continue
            }
            guard let i = resolveCoordinator(name, in: module, at: l, role: " (in link `\(pattern)`)") else { ok = false; continue }
            // The first screen starts the stack; each other is pushed, or presented, as `open` shows it,
            // or selected when it is a tab of the tab container just below it.
            let selects = entries.last.map { coordinators[$0.coordinator].tabs.contains(i) } ?? false
            if !entries.isEmpty, case let shown = selects ? .select : by ?? Presentation.unnamedInStack(allows: coordinators[i].allows), !coordinators[i].allows(shown) {
                let allowed = (coordinators[i].presentations ?? []).map(\.rawValue).sorted().joined(separator: ", ")
                d.error(item["by"]?.location ?? item.location, "link `\(pattern)` shows `\(coordinators[i].name)` by \(shown.rawValue), which its `presentations` (\(allowed)) do not allow, so the link can never open; give the entry a `by` they list, or add \(shown.rawValue) to them")
            }
            entries.append(Link.Entry(coordinator: i, with: with, by: by))
            linkEntryLocations[loc, default: []].append((item.location, l))
        }
        for p in declared where !used.contains(p) {
            let written = segments.contains(.wildcard(p)) ? "*\(p)" : segments.contains(.optional(p)) ? ":\(p)?" : ":\(p)"
            d.error(loc, "link `\(pattern)` declares `\(written)` but no entry uses it; fill a setup field with \":\(p)\" or remove it from the pattern")
            ok = false
        }
        return ok ? Link(pattern: pattern, segments: segments, query: query, entries: entries, module: module, location: loc) : nil
    }

    /// A link pattern's path, segment by segment; the parameters it declares appended to `declared`.
    private mutating func linkSegments(_ pattern: String, _ pathPart: Substring, at loc: SourceLocation, declared: inout [String]) -> [Link.Segment]? {
        var segments: [Link.Segment] = []
        for seg in pathPart.split(separator: "/", omittingEmptySubsequences: true) {
            if case .wildcard(let w) = segments.last {
                d.error(loc, "link `\(pattern)`: `*\(w)` takes the rest of the path, so it must be the last segment")
                return nil
            }
            if seg.hasPrefix(":") || seg.hasPrefix("*") {
                let optional = seg.hasPrefix(":") && seg.hasSuffix("?")
                let p = String(seg.dropFirst().dropLast(optional ? 1 : 0))
                if p.isEmpty || p.contains(where: { ":*?".contains($0) }) {
                    d.error(loc, "link `\(pattern)`: `\(seg)` is not a parameter; write `:name`, `:name?` (optional) or `*name` (the rest of the path)")
                    return nil
                }
                if declared.contains(p) { d.error(loc, "link `\(pattern)` declares `:\(p)` twice"); return nil }
                declared.append(p)
                if seg.hasPrefix("*") {
                    if segments.contains(where: { if case .optional = $0 { return true } else { return false } }) {
                        d.error(loc, "link `\(pattern)`: `*\(p)` after an optional segment would make matches ambiguous")
                        return nil
                    }
                    segments.append(.wildcard(p))
                } else if optional {
                    segments.append(.optional(p))
                } else {
                    if case .optional(let o) = segments.last {
                        d.error(loc, "link `\(pattern)`: the optional `:\(o)?` must come after every required segment")
                        return nil
                    }
                    segments.append(.parameter(p))
                }
            } else {
                if case .optional(let o) = segments.last {
                    d.error(loc, "link `\(pattern)`: the optional `:\(o)?` must come after every required segment")
                    return nil
                }
                segments.append(.literal(String(seg)))
            }
        }
        return segments
    }

    /// A link pattern's query part (`key=:param&…`); the parameters it declares appended to `declared`.
    private mutating func linkQuery(_ pattern: String, _ queryPart: Substring?, at loc: SourceLocation, declared: inout [String]) -> [(String, String)]? {
        var query: [(String, String)] = []
        if let q = queryPart {
            for item in q.split(separator: "&") {
                let kv = item.split(separator: "=", maxSplits: 1)
                guard kv.count == 2, kv[1].hasPrefix(":"), kv[1].count > 1 else {
                    d.error(loc, "link `\(pattern)`: query part `\(item)` must read `key=:param`")
                    return nil
                }
                let p = String(kv[1].dropFirst())
                if declared.contains(p) { d.error(loc, "link `\(pattern)` declares `:\(p)` twice"); return nil }
                declared.append(p)
                query.append((String(kv[0]), p))
            }
        }
        return query
    }

    /// `back: none | firstTab | order | history` of a tabs container.
    mutating func tabBack(_ doc: Doc) -> TabBack? {
        guard let text = doc.text, let b = TabBack(rawValue: text) else {
            d.error(doc.location, "`back` must be one of \(TabBack.allCases.map(\.rawValue).joined(separator: ", ")), not `\(doc.description)`")
            return nil
        }
        return b
    }

    mutating func buildRoot(_ doc: Doc, module: String) -> Root? {
        guard doc.mapping != nil else {
            d.error(doc.location, "`root` must be {stack: Home} or {tabs: [Home, cart.Cart]}")
            return nil
        }
        unknownKeys(doc, allowed: ["stack", "tabs", "back"], what: "`root`")
        if let s = doc["stack"], doc["tabs"] == nil {
            guard let ref = s.text, !s.isNull else {
                d.error(s.location, "`root.stack` must name the coordinator at the bottom of the root stack")
                return nil
            }
            return resolveCoordinator(ref, in: module, at: s.location, role: " (the root)").map(Root.stack)
        }
        if let t = doc["tabs"], doc["stack"] == nil {
            let refs = stringList(t, "`root.tabs`")
            if refs.isEmpty {
                d.error(t.location, "`root.tabs` needs at least one tab")
                return nil
            }
            var tabs: [Int] = []
            for (ref, l) in refs {
                guard let i = resolveCoordinator(ref, in: module, at: l, role: " (a tab of the root)") else { continue }
                if tabs.contains(i) { d.error(l, "`\(coordinators[i].name)` is the first screen of two tabs; `select` could not tell them apart") }
                tabs.append(i)
            }
            return tabs.count == refs.count ? .tabs(tabs) : nil
        }
        d.error(doc.location, "`root` must have exactly one of `stack` or `tabs`")
        return nil
    }
}

/// A link pattern's path and query (`/search/:q?` has no query: a `?` that ends a `:name` segment
/// marks it optional; the query starts at the first other `?`).
func splitQuery(_ s: String) -> (path: Substring, query: Substring?) {
    var segmentStart = s.startIndex
    var i = s.startIndex
    while i < s.endIndex {
        let c = s[i]
        if c == "/" { segmentStart = s.index(after: i) }
        if c == "?" {
            let next = s.index(after: i)
            let endsSegment = next == s.endIndex || s[next] == "/" || s[next] == "?"
            if !(endsSegment && s[segmentStart] == ":" && i > s.index(after: segmentStart)) {
                return (s[..<i], s[next...])
            }
        }
        i = s.index(after: i)
    }
    return (Substring(s), nil)
}
