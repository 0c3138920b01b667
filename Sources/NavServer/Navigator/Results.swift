import JSON
import NavigationCore
import RPC
import Unchecked

/// A `visible` path to write: ids already listed, or read from the session's tree as it is now
/// (no array is built on the request path; the session must still be at the version that is
/// reported, and alive: the reply is written before the handler returns).
enum VisiblePath {
    /// Node numbers, listed when the reply may be written after a later commit.
    case numbers([Int])
    case current(Session)
    /// As `current`, the session not counted: a commit's reply, written before its request's
    /// handler returns, while the session's state holds it (``SessionState/withSession(_:)``).
    case lentSession(Unretained<Session>)

    static func lent(_ s: Session) -> VisiblePath { .lentSession(Unretained(s)) }

    var ids: [String] {
        switch self {
        case .numbers(let a): return a.map(Node.id)
        case .current(let s): return s.visible
        case .lentSession(let s): return s.with { $0.visible }
        }
    }

    /// Runs `body` with the session the path is read from (a listed path: does nothing).
    @inline(__always)
    private func reading(_ body: (Session) -> Void) {
        switch self {
        case .numbers: break
        case .current(let s): body(s)
        case .lentSession(let s): s.with(body)
        }
    }

    /// Writes the path of the commit that made `version` (a path read from the tree must still be it).
    func encode(into w: inout JSONWriter, at version: Int) {
        if case .numbers(let a) = self { return w.write(nodeIds: a) }
        reading { s in
            assert(s.version == version, "visible path read after a later commit")
            s.writeVisible(into: &w)
        }
    }

    /// The same as node numbers (the compact form).
    func encodeNumbers(into w: inout JSONWriter, at version: Int) {
        if case .numbers(let a) = self { return w.write(.array(a.map(JSONValue.int))) }
        reading { s in
            assert(s.version == version, "visible path read after a later commit")
            s.writeVisibleNumbers(into: &w)
        }
    }
}

/// The result of a committed `navigate` or `open`: `{navigation, node, version, visible}`, written
/// straight into the reply.
struct Navigated: JSONEncodable {
    /// The navigation's number: its id is "nav-" and the number.
    let navigation: Int
    /// The number of the node the navigation created or selected (its id is "n" and the number), or -1.
    let node: Int
    let version: Int
    let visible: VisiblePath

    func encode(into w: inout JSONWriter) {
        w.reserving(128) { o in  // 68 bytes of names and punctuation, three integers of at most 20 digits
            o.raw("{\"navigation\":\"nav-")
            o.int(navigation)
            o.raw("\",\"node\":")
            if node >= 0 { o.nodeId(node) } else { o.raw("\"\"") }
            o.raw(",\"version\":")
            o.int(version)
            o.raw(",\"visible\":")
        }
        visible.encode(into: &w, at: version)
        w.raw("}")
    }

    /// The same as a value, for replies kept for later (navigation keys, pending navigations).
    var json: JSONValue {
        ["navigation": .string(PendingNavigation.id(navigation)), "node": .string(node >= 0 ? Node.id(node) : ""), "version": .int(version),
         "visible": .array(visible.ids.map(JSONValue.string))]
    }
}

/// A session's tree as `tree`, `subscribe`, `unsubscribe` and `session.open` answer it
/// (``Session/snapshot()``), written straight into the reply when the reply is sent.
struct Snapshot: JSONEncodable {
    let session: Session
    /// `subscribe`'s: the form its notifications take, and the session's ``SessionState/ref``.
    /// (A session another node owns has no ref here: it is heard in the full form.)
    var subscription: (form: NotificationForm, ref: Int?)? = nil
    /// `subscribe`'s: what the session's navigations waiting now wait for (their last
    /// `navigationPending`), oldest first; written only when there is one.
    var pending: [JSONValue] = []

    func encode(into w: inout JSONWriter) {
        guard let subscription else { return session.writeSnapshot(into: &w) }
        session.writeSnapshot(into: &w) { w in
            w.raw(",\"notifications\":")
            w.write(string: subscription.form.rawValue)
            if let ref = subscription.ref {
                w.raw(",\"ref\":")
                w.write(int: ref)
            }
            if !pending.isEmpty {
                w.raw(",\"pending\":")
                w.write(.array(pending))
            }
        }
    }
}

/// The form of `stackChanged` a subscription hears (`hello`'s and `subscribe`'s `notifications`).
enum NotificationForm: String {
    case full, compact

    /// The form a request's `notifications` param names, nil when it names none.
    init?(param value: String?, method: String) throws(RPCError) {
        guard let value else { return nil }
        guard let form = NotificationForm(rawValue: value) else {
            throw .invalidParams("\(method): \"notifications\" must be \"full\" or \"compact\", not \(JSONWriter.string(.string(value)))",
                                 data: ["param": "notifications"])
        }
        self = form
    }
}

/// The result of `dismiss` and `flowComplete`: `{version, removed}`, the removed ids written from
/// their numbers.
struct Removed: JSONEncodable {
    let version: Int
    let removed: NodeNumbers

    init(version: Int, removed: NodeNumbers) {
        self.version = version
        self.removed = removed
    }

    init(_ c: Commit) { self.init(version: c.version, removed: c.removedNumbers) }

    func encode(into w: inout JSONWriter) {
        w.reserving(44) { o in  // 24 bytes of names and punctuation, an integer of at most 20 digits
            o.raw("{\"version\":")
            o.int(version)
            o.raw(",\"removed\":[")
        }
        var first = true
        removed.forEachNumber { n in
            w.reserving(24) { o in
                if !first { o.raw(UInt8(ascii: ",")) }
                o.nodeId(n)
            }
            first = false
        }
        w.raw("]}")
    }
}

/// `stackChanged` `{session, version, changes, visible}`, written straight into the broadcast log;
/// in the compact form, `[ref, version, changes, visible]` (and the hints fifth).
struct StackChanged: JSONEncodable {
    let session: String
    /// The number the compact form names the session by (``SessionState/ref``).
    var ref: Int = 0
    let version: Int
    /// The commit's changes as written when it was made (``Commit/changeText``).
    let changes: LentText?
    /// The same in the compact form (``Commit/compactText``).
    var compactChanges: LentText? = nil
    let visible: VisiblePath
    /// The navigation's presentation hints, when it gave some.
    var hints: JSONValue? = nil

    func encode(into w: inout JSONWriter) {
        w.raw("{\"session\":")
        w.write(string: session)
        w.raw(",\"version\":")
        w.write(int: version)
        w.raw(",\"changes\":")
        if let changes { changes.encode(into: &w) } else { w.raw("[]") }
        w.raw(",\"visible\":")
        visible.encode(into: &w, at: version)
        if let hints {
            w.raw(",\"hints\":")
            w.write(hints)
        }
        w.raw("}")
    }

    /// The compact form: ids as numbers, the session as its ref, the changes as arrays (PROTOCOL.md,
    /// "Compact notifications").
    func encodeCompact(into w: inout JSONWriter) {
        w.reserving(48) { o in  // "[", two integers of at most 20 digits, "," twice
            o.raw(UInt8(ascii: "["))
            o.int(ref)
            o.raw(UInt8(ascii: ","))
            o.int(version)
            o.raw(UInt8(ascii: ","))
        }
        if let compactChanges { compactChanges.encode(into: &w) } else { w.raw("[]") }
        w.raw(UInt8(ascii: ","))
        visible.encodeNumbers(into: &w, at: version)
        if let hints {
            w.raw(UInt8(ascii: ","))
            w.write(hints)
        }
        w.raw(UInt8(ascii: "]"))
    }
}

/// `update`'s result: the session's version and the screen as it is now.
struct Updated: JSONEncodable {
    let version: Int
    let node: JSONValue
    func encode(into w: inout JSONWriter) { w.write(["version": .int(version), "node": node] as JSONValue) }
}

/// `link.resolve`'s result: the URL and the link pattern that makes it.
struct ResolvedLink: JSONEncodable, Equatable {
    let url: String
    let link: String
    func encode(into w: inout JSONWriter) { w.write(["url": .string(url), "link": .string(link)] as JSONValue) }
}

/// `context.set`'s and `context.get`'s result: `{facts}`.
struct Facts: JSONEncodable, Equatable {
    let facts: JSONObject
    func encode(into w: inout JSONWriter) { w.write(["facts": .object(facts)] as JSONValue) }
}

/// `session.list`'s result: a page of names (`next` when there may be more), or in cluster mode
/// every session of the cluster with its owner.
struct SessionPage: JSONEncodable, Equatable {
    let sessions: [String]
    var next: Int?
    var owners: [String: String]?
    func encode(into w: inout JSONWriter) {
        var o: JSONObject = ["sessions": .array(sessions.map(JSONValue.string))]
        if let next { o.append("next", .string(String(next))) }
        if let owners { o.append("owners", .object(JSONObject(uniqueMembers: sessions.map { ($0, .string(owners[$0] ?? "")) }))) }
        w.write(.object(o))
    }
}

/// `session.close`'s and `provide`'s result: `{ok: true}`, and for `provide` the names as kept.
struct Done: JSONEncodable, Equatable {
    var preconditions: [String]?
    /// `provide`'s names the served graph never asks a client for (a misspelling?).
    var notAsked: [String]? = nil
    func encode(into w: inout JSONWriter) {
        var o: JSONObject = ["ok": true]
        if let preconditions { o.append("preconditions", .array(preconditions.map(JSONValue.string))) }
        if let notAsked { o.append("notAsked", .array(notAsked.map(JSONValue.string))) }
        w.write(.object(o))
    }
}

/// `cancel`'s result: whether a pending navigation of that id was cancelled.
struct Cancelled: JSONEncodable, Equatable {
    let cancelled: Bool
    func encode(into w: inout JSONWriter) { w.write(["cancelled": .bool(cancelled)] as JSONValue) }
}
