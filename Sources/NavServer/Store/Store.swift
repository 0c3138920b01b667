import JSON
import NavGraph
import NavigationCore
import RPC
#if canImport(Glibc)
import Glibc
#endif

/// Where sessions are kept across restarts. The navigator tells its store about every change as
/// it happens; the server has the store write them, in one group per loop iteration (`flush`),
/// before any reply or notification of that iteration leaves navd, so nothing acknowledged is
/// lost. Stores: ``SQLiteStore`` (a state file, the default) and ``EphemeralStore``
/// (`--ephemeral`: nothing is kept) write at once; ``PostgresStore`` (`--store postgres://…`),
/// shared by several navd nodes, is a ``SharedStore``: it writes in the background. This protocol
/// is all a single node needs; nothing of cluster mode is in it.
public protocol Store: AnyObject {
    /// The sessions kept, rebuilt against `graph` and validated (called once, before serving).
    func load(graph: NavigationGraph) throws(StateError) -> [Session]
    func sessionChanged(_ s: Session)
    func sessionOpened(_ s: Session)
    func sessionClosed(_ name: String)
    /// `changes` were merged into the session's facts (a null value removed one).
    func factsChanged(_ s: Session, changes: JSONObject)
    /// A keyed navigation's reply, kept so that a retry after a restart gets it too.
    func keyRemembered(_ s: Session, key: String, reply: Result<JSONText, NavError>)
    /// Changes told but not yet written: replies wait for them.
    var hasPendingWrites: Bool { get }
    /// Whether ``hasPendingWrites`` is false whatever it is told (it writes nothing): then no reply
    /// ever waits for it, and the transport need not ask.
    var writesNothing: Bool { get }
    /// Writes what was told since the last flush, all or nothing.
    func flush(graph: NavigationGraph) throws(StateError)
    func close()
    /// Whether commits must record their `changes` for it (``sessionCommitted(_:changes:compact:key:)``).
    var wantsChanges: Bool { get }
    /// Whether it takes the changes in the compact form as well as the full one: then a session
    /// that no full subscriber hears records the compact form alone for it.
    var takesCompactChanges: Bool { get }
    /// Work it does a slice at a time after the replies of a loop iteration left (a log store's
    /// compaction); the loop keeps turning while there is some.
    var hasBackgroundWork: Bool { get }
    func backgroundSlice(graph: NavigationGraph) throws(StateError)
    /// A commit of `s`, with the changes it recorded in each form (nil where it recorded none);
    /// `key`: the commit is a keyed navigation's, whose reply ``keyRemembered(_:key:reply:)`` tells
    /// before any reply leaves (a log store marks the commit, so that a crash between the two
    /// records drops the commit rather than keep it without its key).
    func sessionCommitted(_ s: Session, changes: LentText?, compact: LentText?, key: String?)
    /// Each flush waits for the disk (`--durability full`): worth gathering more commits first.
    var flushSyncs: Bool { get }
    /// The graph was reloaded: the state of each of `sessions` sessions, rebuilt for `graph`, follows.
    func graphReloaded(_ graph: NavigationGraph, sessions: Int)
    /// Whether commits are written in the background, by ``beginFlush(graph:done:)`` rather than
    /// ``flush(graph:)`` (a store across the network, whose answer the loop must not wait for).
    var flushesInBackground: Bool { get }
    /// Starts writing what was told since the last flush, all or nothing; `done` runs once, on the
    /// loop: nil when it is stored, else why not (nothing of it is stored). The server holds every
    /// reply and notification, and reads no more requests, until `done` runs; one flush at a time.
    func beginFlush(graph: NavigationGraph, done: @escaping (StateError?) -> Void)
    /// Its section of `stats` and the key it goes under (`state` for a log store, `cluster` for a
    /// shared store), or nil; `mirrors` is how many sessions of other nodes are watched from here.
    func stats(mirrors: Int) -> (key: String, value: JSONObject)?
}

extension Store {
    public var wantsChanges: Bool { false }
    public var takesCompactChanges: Bool { false }
    public var writesNothing: Bool { false }
    public var hasBackgroundWork: Bool { false }
    public var flushSyncs: Bool { false }
    public func stats(mirrors: Int) -> (key: String, value: JSONObject)? { nil }
    public func backgroundSlice(graph: NavigationGraph) throws(StateError) {}
    public func graphReloaded(_ graph: NavigationGraph, sessions: Int) {}
    /// Stores that keep whole sessions are told the session changed.
    public func sessionCommitted(_ s: Session, changes: LentText?, compact: LentText?, key: String?) { sessionChanged(s) }
    public var flushesInBackground: Bool { false }
    /// A store that writes on the loop writes now.
    public func beginFlush(graph: NavigationGraph, done: @escaping (StateError?) -> Void) {
        do throws(StateError) { try flush(graph: graph) } catch { return done(error) }
        done(nil)
    }
}

/// A store several navd nodes share (``PostgresStore``, cluster mode), split by the role each
/// layer has for it, and handed to each once, when the server puts the store to use: the server
/// keeps sessions in it as in any ``Store`` (it writes in the background:
/// ``Store/flushesInBackground``); dispatch routes requests by where sessions are
/// (``SessionDirectory``); the navigator replicates changes to other nodes' subscribers
/// (``SessionReplication``, through its ``SessionPlacement``).
public protocol SharedStore: Store, SessionDirectory, SessionReplication {
    /// Where it reports what it did not change itself (the server, once the store is put to use).
    var events: (any ClusterEvents)? { get set }
}

/// Where the cluster's sessions are: what dispatch needs to send a request to its session's node.
public protocol SessionDirectory: AnyObject {
    /// Where a session this node does not hold is: another node's (`moved`), one to wait for
    /// (`unavailable`), nowhere, or not known yet (to look up).
    func whereabouts(_ name: String) -> SessionWhereabouts
    /// Learns who owns `name`, then runs `then`; false when it cannot wait now.
    func lookUp(_ name: String, then: @escaping () -> Void) -> Bool
}

/// Changes between nodes: what the navigator needs to tell other nodes' subscribers and to serve
/// subscribers here of sessions other nodes own.
public protocol SessionReplication: AnyObject {
    /// This node's name.
    var node: String { get }
    /// Every session of the cluster this node knows of, by owner node (`session.list`).
    var directory: [String: String] { get }
    /// A commit's `stackChanged` params, for subscribers on other nodes (every commit, subscribed
    /// here or not).
    func changePublished(_ s: Session, body: [UInt8])
    /// Another notification to the session's subscribers (`navigationPending`, `navigationEnded`,
    /// `flowCompleted`, `screenResult`), for subscribers on other nodes: they hear it after the
    /// changes published before it, and before those published after it.
    /// `again`: a `navigationPending` announced again for subscribers that joined on other nodes
    /// (``askPending(_:)``), which those that heard it are not sent a second time.
    func notificationPublished(_ s: Session, method: String, params: JSONValue, again: Bool)
    /// Reads `name` as the store holds it now (nil: no such session).
    func read(_ name: String, _ done: @escaping (Result<Session?, RPCError>) -> Void)
    /// Asks the node that owns `name` to announce again, to subscribers on other nodes, the
    /// navigations waiting in it (``ClusterEvents/pendingAsked(_:)``): a subscriber that joined
    /// here hears them after the snapshot it was answered.
    func askPending(_ name: String)
    /// The version of `name` this node last stored or read, while it owns the session and until
    /// ``ClusterEvents`` heard it lost it: what its subscribers here were last told, whatever
    /// uncommitted changes the session in memory holds.
    func storedVersion(of name: String) -> Int?
}

/// What a shared store tells the server about sessions it did not change itself.
public protocol ClusterEvents: AnyObject {
    /// Sessions this node now owns, read from the store: taken over from a node whose lease
    /// expired, or (with `own`) its own sessions read again after the store came back; with `own`,
    /// a session the node holds that is not among them was lost to another node.
    func sessionsClaimed(_ sessions: [Session], own: Bool)
    /// Sessions the node must stop serving: another node owns them now, or their last changes
    /// could not be stored (they are read again when the store is back).
    func sessionsLost(_ names: [String])
    /// A commit of a session another node owns (`stackChanged` params, or without `changes` when
    /// the change was too large for a notification).
    func changeNotified(_ payload: String)
    /// A session another node owned was closed (`session.close`).
    func sessionClosedElsewhere(_ name: String)
    /// A node asked for the navigations waiting in `name` (``SessionReplication/askPending(_:)``):
    /// its owner announces them again through the store.
    func pendingAsked(_ name: String)
    /// Changes cannot be stored (false) or can again (true).
    func storeAvailabilityChanged(_ available: Bool, reason: String)
    /// This node's registration was taken by another process with the same node name: it must stop.
    func leaseLost(_ why: String)
}

/// A keyed navigation's reply as every store keeps it: `{"result": …}` or `{"error": {kind, message, data}}`.
public enum KeyedReply {
    public static func text(_ r: Result<JSONText, NavError>) -> String {
        switch r {
        case .success(let t): return "{\"result\":" + String(decoding: t.bytes, as: UTF8.self) + "}"
        case .failure(let e):
            return JSONWriter.string(["error": ["kind": .string(e.kind.rawValue), "message": .string(e.message), "data": .object(ErrorText.data(e.data))]])
        }
    }

    /// What ``text(_:)`` wrote, read back from its bytes; nil when it is not such a reply. A result
    /// as ``text(_:)`` writes it (`{"result":` and `}` around it, no line break: it is sent again
    /// inside one line) keeps its bytes, checked by one parse; anything else is read as a tree. A
    /// restore or a takeover reads thousands of these (a session keeps up to ``Session/maxKeys``).
    public static func decode(text: UnsafeRawBufferPointer, parser: JSONParser) -> Result<JSONText, NavError>? {
        guard let v = try? parser.view(text), v.isObject else { return nil }
        let prefix: StaticString = "{\"result\":"
        let head = UnsafeRawBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        if v.count == 1, text.count > head.count, text.last == UInt8(ascii: "}"), v.member("result") != nil,
           memcmp(text.baseAddress!, head.baseAddress!, head.count) == 0,
           memchr(text.baseAddress!, 0x0A, text.count) == nil, memchr(text.baseAddress!, 0x0D, text.count) == nil {
            return .success(JSONText(Array(text[head.count..<(text.count - 1)])))
        }
        return decode(v.value(keys: parser.keys))
    }

    /// As ``decode(text:parser:)``, from a string.
    public static func decode(text: String, parser: JSONParser) -> Result<JSONText, NavError>? {
        var text = text
        return text.withUTF8 { decode(text: UnsafeRawBufferPointer($0), parser: parser) }
    }

    /// What ``text(_:)`` wrote, as a tree; nil when it is not such a reply.
    private static func decode(_ j: JSONValue) -> Result<JSONText, NavError>? {
        if let v = j["result"] { return .success(JSONText(v)) }
        guard let e = j["error"], let kind = e["kind"]?.stringValue.flatMap(NavError.Kind.init(rawValue:)),
              let message = e["message"]?.stringValue else { return nil }
        return .failure(NavError(kind, message, data: e["data"]?.objectValue ?? [:]))
    }
}

/// What a store was told since its last write (the same bookkeeping for every store that writes
/// in groups): each changed session's latest state, the sessions closed, the keyed replies.
public struct PendingWrites {
    public private(set) var changed: [String: Session] = [:]
    public private(set) var closed: Set<String> = []
    /// Session, key, and the reply as stored (``KeyedReply/text(_:)``).
    public private(set) var keys: [(session: String, key: String, reply: String)] = []

    public init() {}

    public var isEmpty: Bool { changed.isEmpty && closed.isEmpty && keys.isEmpty }

    public mutating func change(_ s: Session) {
        changed[s.name] = s
        closed.remove(s.name)
    }

    public mutating func close(_ name: String) {
        changed[name] = nil
        closed.insert(name)
    }

    public mutating func remember(_ s: Session, key: String, reply: Result<JSONText, NavError>) {
        keys.append((s.name, key, KeyedReply.text(reply)))
    }

    public mutating func removeAll() {
        changed.removeAll(keepingCapacity: true)
        closed.removeAll()
        keys.removeAll(keepingCapacity: true)
    }
}

extension Session {
    /// The facts as one object, sorted by name (as `context.get`, providers and stores show them).
    public var sortedFacts: JSONObject { JSONObject(members: sortedFactNames.compactMap { k in facts[k].map { .init(key: k, value: $0) } }) }
}

/// How a store reads back what navd wrote: JSON nested no deeper than navd writes it for trees
/// within the limits, and each session checked as a request is (``Session/init(restoring:graph:root:version:nextId:facts:limits:)``).
public struct SavedSessions {
    public let limits: SessionLimits
    /// The deepest nesting of any document navd writes (``SessionLimits/writtenDepth(treeDepth:valueDepth:)``).
    public let jsonDepth: Int

    /// `--max-sessions` and `--max-sessions-per-uid` (0: no cap), which restored sessions keep to as
    /// well. The fair share's reserve is not applied to them: they were acknowledged already.
    public let maxSessions: Int
    public let maxSessionsPerUid: Int

    public init(_ config: ServerConfiguration) {
        limits = config.session
        jsonDepth = config.writtenDepth
        maxSessions = config.maxSessions
        maxSessionsPerUid = config.maxSessionsPerUid
    }

    /// Why `session` cannot be restored beside `kept` (sessions already restored) within the session
    /// counts, or nil.
    public func countProblem(_ session: Session, beside kept: [Session]) -> String? {
        var counts = SessionCounts(self)
        for s in kept { _ = counts.admit(s) }
        return counts.admit(session)
    }

    /// Restored sessions counted as they come, against `--max-sessions` and `--max-sessions-per-uid`
    /// (a count per uid: restoring many sessions stays linear).
    public struct SessionCounts {
        let saved: SavedSessions
        private var total = 0
        private var byUid: [UInt32: Int] = [:]

        public init(_ saved: SavedSessions) { self.saved = saved }

        /// Counts `session` in, or answers why the counts do not admit it (then it is not counted).
        public mutating func admit(_ session: Session) -> String? {
            if total >= saved.maxSessions { return "more sessions are saved than --max-sessions (\(saved.maxSessions)) allows" }
            let uid = session.owner ?? getuid()
            if saved.maxSessionsPerUid > 0 && byUid[uid, default: 0] >= saved.maxSessionsPerUid {
                return "uid \(uid) opened more saved sessions than --max-sessions-per-uid (\(saved.maxSessionsPerUid)) allows"
            }
            total += 1
            byUid[uid, default: 0] += 1
            return nil
        }

        /// Counts out a session that is gone (closed while the log was replayed).
        public mutating func remove(_ session: Session) {
            total -= 1
            byUid[session.owner ?? getuid(), default: 1] -= 1
        }
    }

    public func parser() -> JSONParser { JSONParser(maxDepth: jsonDepth) }

    /// Parses saved JSON `text` (`what` names it in an error).
    public func parse(_ parser: JSONParser, _ text: String, _ what: String) throws(NavError) -> JSONValue {
        do { return try parser.parse(text) } catch { throw refusal(error, what) }
    }

    /// Parses saved JSON held in `bytes` (a log record, read in place).
    public func parse(_ parser: JSONParser, _ bytes: ArraySlice<UInt8>, _ what: String) throws(NavError) -> JSONValue {
        do { return try parser.parse(bytes) } catch { throw refusal(error, what) }
    }

    /// Parses saved JSON held in `bytes` (a log record) and answers a view of it, read in place:
    /// valid until `parser` parses again (the parser keeps its own copy of what it read).
    public func view(_ parser: JSONParser, _ bytes: ArraySlice<UInt8>, _ what: String) throws(NavError) -> JSONView {
        try bytes.withUnsafeBytes { b in Result { () throws(NavError) in try view(parser, b, what) } }.get()
    }

    /// As the slice's overload, for bytes held elsewhere.
    public func view(_ parser: JSONParser, _ bytes: UnsafeRawBufferPointer, _ what: String) throws(NavError) -> JSONView {
        do throws(JSONParseError) { return try parser.view(bytes) } catch { throw refusal(error, what) }
    }

    private func refusal(_ error: JSONParseError, _ what: String) -> NavError {
        if error.kind == .tooDeep {
            return NavError(.limitExceeded, "\(what) is nested deeper than navd writes for a tree within --max-tree-depth \(limits.maxDepth)",
                            data: ["limit": "--max-tree-depth", "max": .int(limits.maxDepth)])
        }
        return NavError(.corruptState, "\(what) is not valid JSON (\(error))")
    }

    /// A saved session, checked: its tree and facts as saved JSON text. The tree is read in place
    /// from the parsed text (the facts, parsed first, are a value: the same parser reads both).
    public func session(_ name: String, graph: NavigationGraph, version: Int, nextId: Int, tree: String, facts: String,
                 parser: JSONParser) throws(NavError) -> Session {
        let facts = try parse(parser, facts, "the saved facts")
        var tree = tree
        let root = try tree.withUTF8 { text in Result { () throws(NavError) in try view(parser, UnsafeRawBufferPointer(text), "the saved tree") } }.get()
        return try Session(restoring: name, graph: graph, root: root, version: version, nextId: nextId, facts: facts, limits: limits,
                           keys: parser.keys)
    }
}

/// `--ephemeral`: sessions live in memory only and start afresh at every start.
final class EphemeralStore: Store {
    func load(graph: NavigationGraph) throws(StateError) -> [Session] { [] }
    func sessionChanged(_ s: Session) {}
    func sessionOpened(_ s: Session) {}
    func sessionClosed(_ name: String) {}
    func factsChanged(_ s: Session, changes: JSONObject) {}
    func keyRemembered(_ s: Session, key: String, reply: Result<JSONText, NavError>) {}
    var hasPendingWrites: Bool { false }
    var writesNothing: Bool { true }
    func flush(graph: NavigationGraph) throws(StateError) {}
    func close() {}
}

/// How hard a commit is pushed to disk before its reply leaves navd (like Redis's appendfsync).
public enum Durability: String, Sendable, CaseIterable {
    /// fsync per group of commits: survives power loss.
    case full
    /// Written to the file (the kernel's cache) per group: survives `kill -9` of navd, not power loss.
    case process
}

/// A store that cannot be opened, read or written; the message says which file and why.
public struct StateError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }

    /// A write that failed (`what`: "cannot append to PATH") with the system's reason, and where the
    /// file system is full or the user past a quota, what to do about it.
    static func writeFailed(_ what: String, errno e: Int32) -> StateError {
        StateError(description: "\(what): \(String(cString: strerror(e)))" + (e == ENOSPC || e == EDQUOT ? fullAdvice : ""))
    }

    /// What a full file system asks of whoever runs navd.
    static let fullAdvice = "; its file system is full: free space there, or give --state a file elsewhere, and start navd again (every navigation navd acknowledged is in the state file)"
}
