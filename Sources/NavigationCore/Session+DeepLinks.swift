import JSON
import NavGraph

// MARK: - Deep links

extension Session {
    /// Matches `url` against the graph's links and validates the whole stack it names.
    public func planLink(_ url: String, caller: Caller, ifVersion: Int? = nil) throws(NavError) -> Plan {
        // Read as bytes: the delimiters are ASCII, so every slice cut at one is whole UTF-8 (and
        // the Character-wise searches and splits cost tens of thousands of instructions a link).
        let u = Array(url.utf8)
        let slash = UInt8(ascii: "/")
        var lo = 0, hi = u.count
        var hasScheme = false  // `shop://app` and `shop://app?x=1`: the path may be empty ("/")
        // A custom scheme's host (`media://album/42`, as iOS apps write their URLs) is tried as the
        // path's first segment when the path alone matches no link; a web URL's host never is.
        var host: ArraySlice<UInt8> = []
        if let afterScheme = endOfScheme(u) {
            hasScheme = true
            lo = u[afterScheme...].firstIndex { $0 == slash || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? hi
            let scheme = u[..<(afterScheme - 3)].map { $0 | 0x20 }
            if scheme != Array("http".utf8) && scheme != Array("https".utf8) { host = u[afterScheme..<lo] }
        }
        if let hash = u[lo..<hi].firstIndex(of: UInt8(ascii: "#")) { hi = hash }
        let q = u[lo..<hi].firstIndex(of: UInt8(ascii: "?"))
        let pathEnd = q ?? hi
        guard (hasScheme && lo == pathEnd) || (lo < pathEnd && u[lo] == slash) else {
            let patterns = graph.links.prefix(Self.patternsNamed).map(\.pattern)
            let more = graph.links.count > patterns.count ? " … (\(graph.links.count) in all; graph.describe lists them)" : ""
            let what = patterns.isEmpty ? "the graph declares no links" : "the graph's patterns are \(patterns.joined(separator: ", "))\(more)"
            throw NavError(.noMatchingLink, "`\(url)` is not a URL path: a link is a path from its first slash (/a/b), alone or after a scheme and host (app://host/a/b); \(what)",
                           data: ["url": .string(url)])
        }
        var segments: [Substring] = []
        for seg in u[lo..<pathEnd].split(separator: slash, omittingEmptySubsequences: true) {
            guard let decoded = percentDecode(seg) else {
                throw NavError(.noMatchingLink, "`\(url)` has a malformed percent-escape in `\(String(decoding: seg, as: UTF8.self))`", data: ["url": .string(url)])
            }
            segments.append(Substring(decoded))
        }
        var query: [String: [String]] = [:]  // a key given more than once keeps each value, in order
        for item in q.map({ u[($0 + 1)..<hi].split(separator: UInt8(ascii: "&")) }) ?? [] {
            let kv = item.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let k = formDecode(kv[0]), let v = formDecode(kv.count > 1 ? kv[1] : []) else {
                throw NavError(.noMatchingLink, "`\(url)` has a malformed percent-escape in its query", data: ["url": .string(url)])
            }
            query[k, default: []].append(v)
        }
        if let plan = try planLink(segments, query: query, url: url, caller: caller, ifVersion: ifVersion) { return plan }
        if !host.isEmpty, let h = percentDecode(host),
           let plan = try planLink([Substring(h)] + segments, query: query, url: url, caller: caller, ifVersion: ifVersion) {
            return plan
        }
        let patterns = graph.links.prefix(Self.patternsNamed).map(\.pattern)
        let more = graph.links.count > patterns.count ? " … (\(graph.links.count) in all; graph.describe lists them)" : ""
        let hostNote = host.isEmpty ? "" : " (its path, alone and after its host `\(String(decoding: host, as: UTF8.self))`)"
        let known = patterns.isEmpty ? "the graph declares no links (`links:` in a module file)" : "the patterns are \(patterns.joined(separator: ", "))\(more)"
        throw NavError(.noMatchingLink, "`\(url)`\(hostNote) matches no link of the graph; \(known)", data: ["url": .string(url)])
    }

    /// How many patterns a `noMatchingLink` message names at most (a graph may declare thousands).
    static let patternsNamed = 20

    /// The plan of the first link whose pattern `segments` match, or nil when none does.
    private func planLink(_ segments: [Substring], query: [String: [String]], url: String, caller: Caller, ifVersion: Int?) throws(NavError) -> Plan? {
        for index in graph.linksMaybeMatching(segments) {
            let link = graph.links[index]
            guard var params = link.match(pathSegments: segments) else { continue }
            for (key, p) in link.query { if let v = query[key] { params[p] = v } }
            // Query values the pattern does not declare go to the target's setup when it has that field
            // (`/product/42?ref=mail` fills Product's `ref`); any others (`utm_source`…) are ignored.
            var extra: [(String, [String])] = []
            for (key, v) in query where !link.query.contains(where: { $0.key == key }) { extra.append((key, v)) }
            var plan = try planLinkStack(link, params: params, extraQuery: extra.sorted { $0.0 < $1.0 }, url: url, caller: caller, ifVersion: ifVersion)
            plan.linkIndex = index
            return plan
        }
        return nil
    }

    private func planLinkStack(_ link: Link, params: [String: [String]], extraQuery: [(String, [String])], url: String, caller: Caller,
                               ifVersion: Int?) throws(NavError) -> Plan {
        if let v = ifVersion, v != version {
            throw NavError(.conflict, "the tree is at version \(version), not \(v) as \"ifVersion\" requires", data: ["version": .int(version)])
        }
        var steps: [LinkStep] = []
        var preconditions = LinkPreconditions()
        for (i, entry) in link.entries.enumerated() {
            let c = graph.coordinators[entry.coordinator]
            var with = JSONObject()
            for (field, v) in entry.with {
                if case .string(let s) = v, s.hasPrefix(":") {
                    let p = String(s.dropFirst())
                    guard let values = params[p] else { continue }  // an absent query parameter
                    // A field of one value takes a wildcard's segments joined, a repeated query key's last.
                    let joined = p == link.wildcard ? "/" : nil
                    with.append(field, c.setup?.coerce(values, forProperty: field, joinedBy: joined)
                                    ?? .string(joined.map { values.joined(separator: $0) } ?? values.last ?? ""))
                } else if case .string(let s) = v {
                    with.append(field, c.setup?.coerce(s, forProperty: field) ?? v)  // a constant written as text, like the URL's values
                } else {
                    with.append(field, v)
                }
            }
            if i == link.entries.count - 1, let setup = c.setup {
                for (key, values) in extraQuery where with[key] == nil && setup.declares(key) {
                    with.append(key, setup.coerce(values, forProperty: key))
                }
            }
            try appendStep(c, with: with, by: entry.by, to: &steps, preconditions: &preconditions, caller: caller,
                           origin: "link `\(link.pattern)`", data: ["url": .string(url)])
        }
        var plan = Plan(target: steps.last!.coordinator, by: .push, params: steps.last!.params, source: visibleTop?.number ?? root.number,
                        ifVersion: ifVersion, preconditions: preconditions.preconditions)
        plan.link = steps
        plan.linkSubjects = preconditions.subjects
        return plan
    }

    /// Validates one screen of a stack built at once (a deep link's, a `reset`'s) and appends it:
    /// mediation from the screen below, its presentation, access and setup; its preconditions join
    /// the plan's, about it. `origin` names what asked for it in messages.
    func appendStep(_ c: Coordinator, with given: JSONObject, by asked: Presentation?, to steps: inout [LinkStep],
                    preconditions: inout LinkPreconditions, caller: Caller, origin: String, data: JSONObject, checkOpens: Bool = true,
                    redirect: Bool = false) throws(NavError) {
        var with = given
        // Mediation, as in `navigate`: fields left unset come from the screen below.
        if let below = steps.last { mediate(c, from: below.params, into: &with) }
        // A tab of the tab container just below is selected (the container is made with it).
        let container = steps.last.map { graph.coordinators[$0.coordinator] }
        let selects = container?.tabs.contains(c.index) ?? false
        // (A redirect's `by: select` onto what is not a tab of the container below pushes its target.)
        if let container, selects ? (asked ?? .select) != .select : asked == .select && !redirect {
            var d = data
            d["to"] = .string(c.name)
            throw NavError(.notAllowed, selects
                ? "\(origin) shows `\(c.name)`, a tab of `\(container.name)` just below it, by \(asked!.rawValue); a tab of its container is selected (no `by`, or select)"
                : "\(origin) selects `\(c.name)`, which is not a tab of `\(container.name)` just below it; only a tab of the container below is selected", data: d)
        }
        let by = steps.isEmpty ? Presentation.push : selects ? .select : (asked ?? c.unnamedPresentationInStack)
        if !steps.isEmpty && !c.allows(by) {
            throw NavError(.notAllowed, "\(origin) shows `\(c.name)` by \(by.rawValue), which its presentations do not allow", data: data)
        }
        if checkOpens, !selects, let below = steps.last, !graph.coordinators.stackStepAllowed(from: below.coordinator, to: c.index) {
            var d = data
            d["to"] = .string(c.name)
            throw NavError(.notAllowed, "\(origin) puts `\(c.name)` above `\(graph.coordinators[below.coordinator].name)`, which cannot open it (its opens decide, as for navigate)", data: d)
        }
        if !c.access.isEmpty && caller.roles.isDisjoint(with: c.access) {
            var d = data
            d["to"] = .string(c.name)
            throw NavError(.accessDenied, "`\(c.name)` (in \(origin)) admits only clients with role \(c.access.joined(separator: " or "))", data: d)
        }
        try checkStartStepAccess(of: c, caller: caller)
        if let setup = c.setup, let v = setup.validate(.object(with)) {
            var d: JSONObject = ["pointer": .string(v.pointer), "rule": .string(v.rule), "to": .string(c.name)]
            for (k, x) in data { d[k] = x }
            throw NavError(.invalidSetup, "\(origin) gives `\(c.name)` an invalid setup: \(v.message)", data: d)
        }
        for p in graph.preconditions(showing: c) { preconditions.add(p, step: steps.count) }
        steps.append(LinkStep(coordinator: c.index, params: .object(with), by: by == .select && !selects ? .push : by))
    }

    /// A link's (or a `reset`'s) stack after a precondition of its screen `at` (the first holding
    /// it) redirected it to `target`: the screens below stay as the link builds them, and the
    /// redirect's target takes that screen's place, validated as a screen of the
    /// stack (mediation from the screen below, presentation, access, setup; the graph's own
    /// `redirect:` skips `opens`, as in `navigate`). When the first screen redirects and starts a
    /// tab, the target is placed on that tab's first screen, unless it starts a tab itself. Only the
    /// target's preconditions are left: those of the screens kept ran before the redirect.
    public func planRedirectedLink(_ steps: [LinkStep], replacing at: Int, to target: Int, by: Presentation?, with: JSONObject,
                                   source: Int, ifVersion: Int?, caller: Caller, declaredTarget: Bool) throws(NavError) -> Plan {
        var kept = Array(steps[..<at])
        if kept.isEmpty, root.kind == .tabs, tabIndex(of: steps[0].coordinator) != nil, tabIndex(of: target) == nil {
            kept = [steps[0]]
        }
        let c = graph.coordinators[target]
        var preconditions = LinkPreconditions()
        try appendStep(c, with: with, by: by, to: &kept, preconditions: &preconditions, caller: caller,
                       origin: "the redirect to `\(c.name)`", data: [:], checkOpens: !declaredTarget, redirect: true)
        var plan = Plan(target: target, by: .push, params: kept.last!.params, source: source, ifVersion: ifVersion,
                        preconditions: preconditions.preconditions)
        plan.link = kept
        plan.linkSubjects = preconditions.subjects
        return plan
    }

    /// Builds a link's stack in one commit: in the tab (or root stack) that starts with its first
    /// screen when there is one, else as a new root stack.
    func commitLink(_ steps: [LinkStep], ifVersion: Int?) throws(NavError) -> Commit {
        if let v = ifVersion, v != version {
            throw NavError(.conflict, "the tree is at version \(version), not \(v) as \"ifVersion\" requires", data: ["version": .int(version)])
        }
        // Within the limits: the estimate counts nothing the link removes; past it, the link is
        // built on a copy and measured there, so a refused link changes nothing.
        if !isTrial && !linkFits(steps) {
            try tryOnCopy { trial throws(NavError) in _ = try trial.commitLink(steps, ifVersion: ifVersion) }
        }
        var changes = ChangeLog(self)
        var removed = Removal()
        let first = steps[0]
        var stack: Node?
        if root.kind == .tabs, let i = tabIndex(of: first.coordinator) {
            if root.selected != i { select(i, in: root, changes: &changes) }
            stack = root.children[i]
        } else if root.kind == .stack, root.children.first?.coordinator == first.coordinator, root.children.first?.kind == .screen {
            stack = root
        }
        var top: Node
        let bottom = stack?.children.first
        let keepsBottom = bottom.map { $0.kind == .screen && $0.coordinator == first.coordinator && ($0.params == first.params || first.params == .object([:])) } ?? false
        if let stack, let bottom, keepsBottom {
            if stack.children.count > 1 {
                var cut = Removal()
                for n in stack.children[1...] { forget(n, into: &cut) }
                stack.children.removeSubrange(1...)
                changes.record("pop", parent: stack, index: 1, removed: cut.numbers)
                removed.append(cut)
            }
            if let p = bottom.presented {
                var modal = Removal()
                forget(p, into: &modal)
                bottom.presented = nil
                changes.record("dismiss", parent: bottom, removed: modal.numbers)
                removed.append(modal)
            }
            top = bottom
            for k in steps.indices.dropFirst() { top = attach(steps, k, over: top, changes: &changes) }
        } else if let stack, stack !== root {
            // A tab whose first screen is not the link's (another `with`, or replaced since by another
            // coordinator): the tab stays, its stack starts again from the link's first screen.
            var cut = Removal()
            for n in stack.children { forget(n, into: &cut) }
            stack.children.removeAll()
            let fresh = makeLinkNode(steps, 0)
            adopt(fresh, into: stack)
            changes.record("replace", parent: stack, index: 0, node: fresh, removed: cut.numbers)
            removed.append(cut)
            top = fresh.kind == .flow ? fresh.children[0] : fresh
            for k in steps.indices.dropFirst() { top = attach(steps, k, over: top, changes: &changes) }
        } else {
            forget(root, into: &removed)
            let bottom = makeLinkNode(steps, 0)
            let newRoot = makeStack(holding: bottom)
            top = bottom.kind == .flow ? bottom.children[0] : bottom
            var ignored = ChangeLog(full: false, graph)
            for k in steps.indices.dropFirst() { top = attach(steps, k, over: top, changes: &ignored) }
            root = newRoot
            changes.record("reset", root: root, removed: removed.numbers)
        }
        if isTrial { try limits.check(depth: root.height, nodes: nodeCount, paramsBytes: paramsBytes) }
        version += 1
        return Commit(version: version, log: changes, node: top, removedNumbers: removed.numbers, endedFlows: removed.ended)
    }

    /// The node step `k` of a link makes: a tab container whose next step selects one of its tabs
    /// is made with that tab selected, holding that step's params.
    private func makeLinkNode(_ steps: [LinkStep], _ k: Int) -> Node {
        let step = steps[k]
        if k + 1 < steps.count, steps[k + 1].by == .select,
           let tab = graph.coordinators[step.coordinator].tabs.firstIndex(of: steps[k + 1].coordinator) {
            return makeTabs(step.coordinator, setup: WrittenJSON(step.params), selecting: (tab, WrittenJSON(steps[k + 1].params)))
        }
        return makeTarget(step.coordinator, setup: WrittenJSON(step.params))
    }

    /// Puts step `k` of a link over `top` (the screen the step before it made, or a tab container):
    /// pushed or presented, or for a tab the container selects, its first screen (made with it).
    private func attach(_ steps: [LinkStep], _ k: Int, over top: Node, changes: inout ChangeLog) -> Node {
        let step = steps[k]
        if step.by == .select { return shownByContainer(top) }
        let node = makeLinkNode(steps, k)
        if step.by == .present {
            // A tab container presents nothing itself (only screens and flows do): what an entry
            // after it presents is presented by the screen it shows, its selected tab's first.
            let presenter = top.kind == .tabs ? shownByContainer(top) : top
            let s = makeStack(holding: node)
            s.parent = presenter
            presenter.presented = s
            changes.record("present", parent: presenter, node: s)
        } else {
            // Into the flow `top` is a step of only when it is one of that flow's steps, as `navigate`
            // pushes; else onto the stack around the flow.
            let container = pushContainer(from: top, target: step.coordinator)
            adopt(node, into: container)
            changes.record("push", parent: container, node: node)
        }
        return node.kind == .flow ? node.children[0] : node
    }
}

extension Session {
    /// The screen a tab container a link just made shows: its selected tab's first screen (a flow's
    /// first step when the tab starts with a flow).
    fileprivate func shownByContainer(_ container: Node) -> Node {
        let first = container.children[container.selected].children[0]
        return first.kind == .flow ? first.children[0] : first
    }
}

/// Where what follows the first `://` starts in `u`, if it has one.
private func endOfScheme(_ u: [UInt8]) -> Int? {
    // RFC 3986: a letter, then letters, digits, `+`, `-` or `.`, then `://`, at the very start (a
    // `://` later, as in `/search?q=http://x/y`, is part of the path or the query).
    func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= UInt8(ascii: "a") && (b | 0x20) <= UInt8(ascii: "z") }
    guard let first = u.first, isLetter(first) else { return nil }
    var i = 1
    while i < u.count, isLetter(u[i]) || (u[i] >= UInt8(ascii: "0") && u[i] <= UInt8(ascii: "9"))
            || u[i] == UInt8(ascii: "+") || u[i] == UInt8(ascii: "-") || u[i] == UInt8(ascii: ".") {
        i += 1
    }
    guard i + 2 < u.count, u[i] == UInt8(ascii: ":"), u[i + 1] == UInt8(ascii: "/"), u[i + 2] == UInt8(ascii: "/") else { return nil }
    return i + 3
}

/// A query key or value as forms and URLSearchParams write them: `+` is a space (a `+` itself is
/// `%2B`), then `%XX` escapes. Path segments are ``percentDecode(_:)``d (there `+` is a `+`).
func formDecode(_ s: ArraySlice<UInt8>) -> String? {
    guard s.contains(UInt8(ascii: "+")) else { return percentDecode(s) }
    return percentDecode(ArraySlice(s.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }))
}

/// `s` with its `%XX` escapes decoded, or nil when an escape is malformed or the result is not UTF-8.
func percentDecode(_ s: ArraySlice<UInt8>) -> String? {
    guard s.contains(UInt8(ascii: "%")) else { return String(decoding: s, as: UTF8.self) }
    var bytes: [UInt8] = []
    var it = s.makeIterator()
    while let b = it.next() {
        if b == UInt8(ascii: "%") {
            guard let h = it.next(), let l = it.next(), let hv = hexValue(h), let lv = hexValue(l) else { return nil }
            bytes.append(hv << 4 | lv)
        } else {
            bytes.append(b)
        }
    }
    return String(validating: bytes, as: UTF8.self)
}

private func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
    default: return nil
    }
}
