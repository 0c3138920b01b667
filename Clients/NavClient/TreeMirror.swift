import JSON
import RPC

/// A client's copy of a session's tree, kept current from a snapshot and the `changes` of each
/// `stackChanged` notification. Front-ends (and the tests) use it; navd itself does not.
public struct TreeMirror: Sendable {
    public private(set) var session: String
    public private(set) var root: JSONValue
    public private(set) var version: Int
    /// Ids from the root to the screen the user sees.
    public private(set) var visible: [String]
    /// The number compact `stackChanged` notifications name the session by (`subscribe`'s `ref`).
    public private(set) var ref: Int?
    /// Set by a `sessionClosed` of its session: the tree is the session's last, and nothing more
    /// comes (a session opened again under the name starts at version 0).
    public private(set) var closed = false

    public struct Gap: Error, CustomStringConvertible {
        public let description: String
    }

    /// From a `subscribe`/`tree` result (`{version, root, …}`).
    public init(snapshot: JSONValue) {
        session = snapshot["session"]?.stringValue ?? "main"
        root = snapshot["root"] ?? .null
        version = snapshot["version"]?.intValue ?? 0
        visible = snapshot["visible"]?.arrayValue?.compactMap(\.stringValue) ?? []
        ref = snapshot["ref"]?.intValue
    }

    /// Whether a `stackChanged` params object (either form) is about this mirror's session.
    public func concerns(_ notification: JSONValue) -> Bool {
        if case .array(let a) = notification { return ref != nil && a.first?.intValue == ref }
        return (notification["session"]?.stringValue ?? "main") == session
    }

    /// The node with `id`, if it is in the tree.
    public func node(_ id: String) -> JSONValue? { TreeMirror.find(root, id: id) }

    /// The screen the user sees (the last id of `visible`).
    public var top: JSONValue? { visible.last.flatMap(node) }

    /// The innermost live flow on the visible path, if any.
    public var visibleFlow: JSONValue? {
        visible.reversed().lazy.compactMap(node).first { $0["kind"]?.stringValue == "flow" }
    }

    /// The first screen of the innermost stack on the visible path (where `dismiss {to}` of it pops to).
    public var visibleStackFirst: JSONValue? {
        visible.reversed().lazy.compactMap(node).first { $0["kind"]?.stringValue == "stack" }?["children"]?.arrayValue?.first
    }

    /// Why navd would answer a plain `dismiss` of the visible top "nothing to dismiss", or nil when
    /// it would act (PROTOCOL.md, dismiss), read on the visible path with `graph` (`graph.describe`)
    /// for the tabs' `back:`. A front-end shows its dismiss as unavailable when this says why. A
    /// flow's first step stands for its flow, a tab container's first screen for the container;
    /// the first screen of a presented stack dismisses the modal; params kept by `update {push}`
    /// are restored first.
    public func nothingToDismiss(graph: JSONValue) -> String? {
        let path = visible.compactMap(node)
        guard let top = path.last, top["paramsHistory"]?.arrayValue?.isEmpty ?? true else { return nil }
        var i = path.count - 1
        var goingBack = true
        while i >= 1 {
            let node = path[i], container = path[i - 1]
            guard container["children"]?.arrayValue?.first?["id"] == node["id"] else { return nil }  // popped from its stack
            let shell: JSONValue? = i >= 2 ? path[i - 2] : nil
            let kind = { (n: JSONValue?) in n?["kind"]?.stringValue }
            if goingBack, kind(node) == "screen", let shell, kind(shell) == "tabs", Self.tabToGoBack(shell, graph: graph) != nil { return nil }
            goingBack = false
            if kind(container) == "flow" { i -= 1; continue }  // its first step: the flow goes
            if let shell, kind(shell) == "tabs", shell["coordinator"] != nil { i -= 2; continue }  // the container goes
            if kind(shell) == "screen" || kind(shell) == "flow" { return nil }  // the modal goes
            let name = node["coordinator"]?.stringValue ?? kind(node) ?? "?"
            return "nothing to dismiss: " + (kind(node) == "flow" ? "flow \(name) is the first node" : "\(name) is the first screen")
                + (shell == nil ? " of the root stack" : " of a tab")
        }
        return nil
    }

    /// The tab a dismiss at the first screen of `shell`'s selected tab goes back to, by its
    /// `back:` (the root's, or its container's), or nil.
    static func tabToGoBack(_ shell: JSONValue, graph: JSONValue) -> Int? {
        let declared: JSONValue? = shell["coordinator"]?.stringValue.flatMap { graph["coordinators"]?[$0]?["back"] } ?? graph["root"]?["back"]
        let selected = shell["selected"]?.intValue ?? 0
        switch declared?.stringValue {
        case "firstTab": return selected == 0 ? nil : 0
        case "order": return selected == 0 ? nil : selected - 1
        case "history": return shell["history"]?.arrayValue?.last?.intValue
        default: return nil
        }
    }

    static func find(_ n: JSONValue, id: String) -> JSONValue? {
        if n["id"]?.stringValue == id { return n }
        for c in n["children"]?.arrayValue ?? [] { if let hit = find(c, id: id) { return hit } }
        if let p = n["presented"] { return find(p, id: id) }
        return nil
    }

    /// Takes a notification that is not a `stackChanged`: a `sessionClosed` of this mirror's session
    /// marks it ``closed``. Answers whether it did.
    @discardableResult
    public mutating func take(_ method: String, _ params: JSONValue) -> Bool {
        guard method == "sessionClosed", !closed, params["session"]?.stringValue == session else { return false }
        closed = true
        return true
    }

    /// Applies one `stackChanged` params object; its version must be exactly the next one, unless
    /// it is a snapshot (one `reset` op), which may cover versions the subscriber missed (or repeat
    /// the version it has).
    public mutating func apply(_ notification: JSONValue) throws {
        let notification = try TreeMirror.full(notification, session: session)
        guard let v = notification["version"]?.intValue else { throw Gap(description: "stackChanged without version") }
        guard v == version + 1 || (v >= version && TreeMirror.isSnapshot(notification)) else {
            throw Gap(description: "stackChanged for version \(v) after version \(version)")
        }
        for change in notification["changes"]?.arrayValue ?? [] { try applyChange(change) }
        version = v
        if let vis = notification["visible"]?.arrayValue { visible = vis.compactMap(\.stringValue) }
    }

    /// Whether a `stackChanged` params object (in the full form) is a snapshot: its changes are one `reset`.
    public static func isSnapshot(_ notification: JSONValue) -> Bool {
        guard let changes = notification["changes"]?.arrayValue, changes.count == 1 else { return false }
        return changes[0]["op"]?.stringValue == "reset"
    }

    private mutating func applyChange(_ c: JSONValue) throws {
        let op = c["op"]?.stringValue ?? ""
        if op == "reset" {
            root = c["root"] ?? .null
            return
        }
        if op == "update" {
            // A live screen's params changed: the change carries the node as it is now (with its
            // earlier params, `paramsHistory`, when it keeps any).
            guard let id = c["node"]?["id"]?.stringValue else { throw Gap(description: "update without a node: \(JSONWriter.string(c))") }
            let params = c["node"]?["params"] ?? .object([:])
            let history = c["node"]?["paramsHistory"]
            let found = TreeMirror.update(&root, id: id) { node in
                guard case .object(var o) = node else { return }
                o["params"] = params
                o["paramsHistory"] = history
                node = .object(o)
            }
            if !found { throw Gap(description: "no node \(id) for update") }
            return
        }
        guard let parent = c["parent"]?.stringValue else { throw Gap(description: "change without parent: \(JSONWriter.string(c))") }
        let found = TreeMirror.update(&root, id: parent) { node in
            guard case .object(var o) = node else { return }
            switch op {
            case "push":
                var children = o["children"]?.arrayValue ?? []
                children.append(c["node"] ?? .null)
                o["children"] = .array(children)
            case "present":
                o["presented"] = c["node"]
            case "dismiss":
                o.members.removeAll { $0.key == "presented" }
            case "pop":
                let i = c["index"]?.intValue ?? 0
                o["children"] = .array(Array((o["children"]?.arrayValue ?? []).prefix(i)))
            case "replace":
                let i = c["index"]?.intValue ?? 0
                o["children"] = .array(Array((o["children"]?.arrayValue ?? []).prefix(i)) + [c["node"] ?? .null])
            case "select":
                o["selected"] = c["index"]
                // Tabs that keep a history (`back: history`) carry it in the change.
                if let h = c["history"] { o["history"] = h } else { o.members.removeAll { $0.key == "history" } }
            default: break
            }
            node = .object(o)
        }
        if !found { throw Gap(description: "no node \(parent) for \(op)") }
    }

    /// Finds the node with `id` and lets `body` change it; returns whether it was found.
    static func update(_ node: inout JSONValue, id: String, _ body: (inout JSONValue) -> Void) -> Bool {
        guard case .object(var o) = node else { return false }
        if o["id"]?.stringValue == id {
            body(&node)
            return true
        }
        var hit = false
        if var children = o["children"]?.arrayValue {
            for i in children.indices where update(&children[i], id: id, body) {
                hit = true
                break
            }
            if hit {
                o["children"] = .array(children)
                node = .object(o)
                return true
            }
        }
        if var p = o["presented"], update(&p, id: id, body) {
            o["presented"] = p
            node = .object(o)
            return true
        }
        return false
    }
}

// MARK: - The compact form

extension TreeMirror {
    /// A `stackChanged` params object in the full form: `notification` as it is, or expanded from
    /// the compact form (`[ref, version, changes, visible, hints?]`, PROTOCOL.md's "Compact
    /// notifications") as the notification of `session`.
    public static func full(_ notification: JSONValue, session: String) throws -> JSONValue {
        guard case .array(let p) = notification else { return notification }
        guard p.count >= 4, p[0].intValue != nil, let version = p[1].intValue, case .array(let changes) = p[2],
              case .array(let visible) = p[3] else {
            throw Gap(description: "a compact stackChanged is [ref, version, changes, visible, hints?], not \(JSONWriter.string(notification))")
        }
        var o: JSONObject = ["session": .string(session), "version": .int(version),
                             "changes": .array(try changes.map(expand(change:))), "visible": .array(try visible.map(id))]
        if p.count > 4 { o.append("hints", p[4]) }
        return .object(o)
    }

    /// A compact change in the full form (``CompactChange/expand(change:)``).
    public static func expand(change c: JSONValue) throws -> JSONValue {
        do { return try CompactChange.expand(change: c) } catch { throw Gap(description: error.description) }
    }

    /// A compact node in the full form (``CompactChange/expand(node:)``).
    public static func expand(node v: JSONValue) throws -> JSONValue {
        do { return try CompactChange.expand(node: v) } catch { throw Gap(description: error.description) }
    }

    /// A node number as its id.
    private static func id(_ v: JSONValue) throws -> JSONValue {
        do { return try CompactChange.id(v) } catch { throw Gap(description: error.description) }
    }
}
