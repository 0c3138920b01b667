import JSON
import NavGraph

/// Reverse routing (`link.resolve`): the URL of a node from the graph's links, the inverse of `open`.
extension Session {
    /// The URL whose link would build the stack that ends at `nodeId` (default: the visible top), and
    /// that link's pattern. The first link (in declaration order) whose screens are that stack's and
    /// whose constants and parameters its params fill wins.
    public func resolveLink(_ nodeId: String?) throws(NavError) -> (url: String, pattern: String) {
        let node: Node
        if let id = nodeId {
            guard let n = nodes[id] else {
                throw NavError(.unknownNode, "no node `\(id)` in session `\(name)`; `tree` lists the current nodes", data: ["node": .string(id)])
            }
            guard n.kind == .screen || n.kind == .flow else {
                throw NavError(.unknownNode, "node `\(id)` is a \(n.kind.rawValue); a URL names a screen or a flow", data: ["node": .string(id)])
            }
            node = n
        } else {
            guard let top = visibleTop else { throw NavError(.unknownNode, "session `\(name)` shows no screen") }
            node = top
        }
        let stack = linkChain(to: node)
        // The first screen of a tab container's first tab, while that tab is selected, is also what a
        // link ending at the container builds (the container stands for itself and that screen).
        var short: [Node]?
        if stack.count >= 2, case let shell = stack[stack.count - 2], shell.kind == .tabs, shell.selected == 0,
           stack[stack.count - 1].parent === shell.children.first {
            short = Array(stack.dropLast())
        }
        // The first link that carries every param of the screens (so that `open` builds them as they
        // are, from any tree); else the first that describes them at all.
        var first: (url: String, pattern: String)?
        for index in graph.linksEnding(at: stack[stack.count - 1].coordinator, or: short?.last?.coordinator) {
            let link = graph.links[index]
            let screens: [Node]
            if link.entries.count == stack.count {
                screens = stack
            } else if let short, link.entries.count == short.count {
                screens = short
            } else {
                continue
            }
            var exact = true
            guard var url = url(of: link, for: screens, exact: &exact) else { continue }
            // The last screen's params the link does not set go as query values of their own name,
            // which `open` gives the link's target (those that read back as they are).
            var extra = Set<String>()
            if screens.count == stack.count, let last = screens.last, let entry = link.entries.last {
                let (pairs, fields) = undeclaredQuery(link, entry, last)
                if !pairs.isEmpty {
                    url += (url.contains("?") ? "&" : "?") + pairs.joined(separator: "&")
                    extra = fields
                }
            }
            // (A link ending at the container gives its first tab's screen no params.)
            let carries = exact && carriesEveryParam(link, screens, alsoLast: extra) && (screens.count == stack.count || stack[stack.count - 1].params == .object([:]))
            if carries { return (url, link.pattern) }
            if first == nil { first = (url, link.pattern) }
        }
        if let first { return first }
        let names = stack.map { graph.coordinators[$0.coordinator].name }.joined(separator: " → ")
        throw NavError(.noMatchingLink, "no link of the graph builds \(names) with these params; links give a URL only to the stacks they declare",
                       data: ["node": .string(node.id)])
    }

    /// The screens a deep link would list to build the stack that ends at `n`: the screens below it in
    /// its stack, and those below the screen presenting that stack, or the tab container whose tab
    /// that stack is, and so on (a root tab's or the root stack's first screen first). A flow
    /// stands for itself and its first step, as in a link.
    func linkChain(to n: Node) -> [Node] {
        guard let container = n.parent, let i = n.indexInParent else { return [n] }
        switch container.kind {
        case .flow:
            let before = linkChain(to: container)
            return i == 0 ? before : before + container.children[1...i]
        case .stack:
            var below: [Node] = []
            if let owner = container.parent {
                if owner.kind == .screen || owner.kind == .flow || (owner.kind == .tabs && owner.coordinator >= 0) {
                    below = linkChain(to: owner)
                }
            }
            return below + container.children[...i]
        default:
            return [n]
        }
    }

    /// `link`'s URL for the screens `stack`, or nil when the link does not describe them: other
    /// coordinators, a constant their params do not hold, a required parameter they do not give.
    /// `exact` is cleared when the URL leaves out a value they hold that no URL of the link can
    /// carry (an optional parameter's empty text: `open` skips an empty segment).
    private func url(of link: Link, for stack: [Node], exact: inout Bool) -> String? {
        // A list (an array field's items) goes as a query key repeated, or as a wildcard's segments.
        var values: [String: [String]] = [:]
        var lists = Set<String>()
        for (entry, node) in zip(link.entries, stack) {
            guard entry.coordinator == node.coordinator else { return nil }
            let params = node.params  // read back from its text once, not once a field
            let setup = graph.coordinators[node.coordinator].setup
            for (field, v) in entry.with {
                let held = params[field]
                if case .string(let s) = v, s.hasPrefix(":") {
                    let p = String(s.dropFirst())
                    guard let held else { continue }  // an optional or query parameter left out
                    guard let texts = urlTexts(held, setup, field) else { return nil }
                    if let other = values[p], other != texts { return nil }
                    values[p] = texts
                    if case .array = held { lists.insert(p) }
                } else {
                    // A constant: the screen must hold it (a constant written as text matches its typed value).
                    guard let held else { return nil }
                    if held != v, !(v.stringValue != nil && urlText(held) == v.stringValue) { return nil }
                }
            }
        }
        var path = ""
        for s in link.segments {
            switch s {
            case .literal(let l): path += "/" + percentEncode(l)
            case .parameter(let p):
                guard let v = one(values[p]), !v.isEmpty else { return nil }
                path += "/" + percentEncode(v)
            case .optional(let p):
                if values[p] != nil && one(values[p]) == nil { return nil }
                if let v = one(values[p]) {
                    if v.isEmpty { exact = false } else { path += "/" + percentEncode(v) }
                }
            case .wildcard(let p) where lists.contains(p):
                // Each item a segment of its own (a `/` in one is escaped, so it stays one item).
                guard let items = values[p], !items.isEmpty, !items.contains(where: \.isEmpty) else { return nil }
                path += "/" + items.map(percentEncode).joined(separator: "/")
            case .wildcard(let p):
                guard let v = one(values[p]), !v.isEmpty else { return nil }
                path += "/" + wildcardSegments(v)
            }
        }
        if path.isEmpty { path = "/" }
        var query: [String] = []
        for (key, p) in link.query {
            for v in values[p] ?? [] { query.append(percentEncode(key) + "=" + percentEncode(v)) }
        }
        return query.isEmpty ? path : path + "?" + query.joined(separator: "&")
    }

    /// Whether `link` gives each screen of `stack` every field its params hold: from the URL, as a
    /// constant, or by the coordinator's mediation (and `alsoLast`, the last screen's fields carried
    /// as query values the pattern does not declare).
    private func carriesEveryParam(_ link: Link, _ stack: [Node], alsoLast: Set<String> = []) -> Bool {
        zip(link.entries, stack).enumerated().allSatisfy { i, pair in
            let (entry, node) = pair
            guard case .object(let params) = node.params else { return true }
            let mediated = graph.coordinators[node.coordinator].mediation
            let also = i == stack.count - 1 ? alsoLast : []
            return params.allSatisfy { field, _ in entry.with[field] != nil || also.contains(field) || mediated.contains { $0.field == field } }
        }
    }

    /// The `key=value` pairs (percent-encoded) that carry the params of `node`, the link's last
    /// screen, that its entry does not set and its mediation does not fill: fields its setup
    /// declares, whose value is a string, number or boolean that `open` reads back as it is (typed
    /// by the setup), named by no query key of the pattern. And the fields they carry.
    private func undeclaredQuery(_ link: Link, _ entry: Link.Entry, _ node: Node) -> (pairs: [String], fields: Set<String>) {
        guard case .object(let params) = node.params, !params.isEmpty, let setup = graph.coordinators[node.coordinator].setup else { return ([], []) }
        let mediated = graph.coordinators[node.coordinator].mediation
        var pairs: [String] = []
        var fields = Set<String>()
        for (field, v) in params where entry.with[field] == nil && !mediated.contains(where: { $0.field == field })
            && !link.query.contains(where: { $0.key == field }) && setup.declares(field) {
            guard let texts = urlTexts(v, setup, field), !texts.isEmpty, setup.coerce(texts, forProperty: field) == v else { continue }
            for text in texts { pairs.append(percentEncode(field) + "=" + percentEncode(text)) }
            fields.insert(field)
        }
        return (pairs, fields)
    }

    /// The texts a URL carries for param `field` holding `v`: one for a string, number or boolean;
    /// for an array field (``Schema/takesList``) one per item, each of those kinds; nil for others.
    private func urlTexts(_ v: JSONValue, _ setup: Schema?, _ field: String) -> [String]? {
        if case .array(let items) = v {
            guard setup?.property(field)?.takesList == true else { return nil }
            var texts: [String] = []
            for item in items {
                guard let t = urlText(item) else { return nil }
                texts.append(t)
            }
            return texts
        }
        return urlText(v).map { [$0] }
    }

    /// The one text of a path value (a list has no place in a path), else nil.
    private func one(_ texts: [String]?) -> String? {
        guard let texts, texts.count == 1 else { return nil }
        return texts[0]
    }

    /// A param as the text a URL carries (strings, numbers, booleans); nil for other values.
    private func urlText(_ v: JSONValue) -> String? {
        switch v {
        case .string(let s): return s
        case .bool(let b): return b ? "true" : "false"
        case .int, .double: return JSONWriter.string(v)
        default: return nil
        }
    }
}

/// A wildcard's text as the segments `open` joins back into it: its `/`s part segments, unless a
/// part would be empty (a leading, trailing or doubled `/`): `open` skips empty segments, so such
/// a text goes as one segment, `/` escaped. Each part percent-encoded.
public func wildcardSegments(_ text: String) -> String {
    let parts = text.split(separator: "/", omittingEmptySubsequences: false)
    return parts.contains(where: \.isEmpty) ? percentEncode(text) : parts.map { percentEncode(String($0)) }.joined(separator: "/")
}

/// Percent-encodes everything but RFC 3986's unreserved characters: a text as one URL segment or
/// query value.
public func percentEncode(_ s: String) -> String {
    var out = ""
    out.reserveCapacity(s.utf8.count)
    let hex = Array("0123456789ABCDEF".utf8)
    for b in s.utf8 {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            out.unicodeScalars.append(Unicode.Scalar(b))
        default:
            out.unicodeScalars.append("%")
            out.unicodeScalars.append(Unicode.Scalar(hex[Int(b >> 4)]))
            out.unicodeScalars.append(Unicode.Scalar(hex[Int(b & 15)]))
        }
    }
    return out
}
