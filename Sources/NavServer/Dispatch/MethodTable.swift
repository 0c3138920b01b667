import JSON
import RPC
import Unchecked

/// Every method navd answers, each with what it is, declared once in `Protocol/methods/<name>.json`
/// (as Redis's command table is made from `src/commands/*.json`) and generated into a ``Spec``: its
/// params, whether it changes sessions or the daemon, which param names the session it acts on, and
/// the roles that may call it. Found by the name's bytes as read from the request (a
/// ``NameTable``, rebuilt when a method is registered): no `String` is made, and a lookup copies and
/// retains nothing. `MethodDeclarationTests` checks each declaration against what the method does.
final class MethodTable {
    typealias Handler = (Call) -> Void

    /// What one method is.
    struct Spec: Sendable, Equatable {
        let name: String
        /// Its params' names, as on the wire.
        let params: [String]
        /// Whether it may change a session or the daemon (a commit, facts, sessions, the graph): such
        /// methods are refused while the store cannot write (cluster mode), and only they may make
        /// the store write.
        let changes: Bool
        /// Whether it may add to what sessions hold (nodes, params, facts, sessions): refused past
        /// `--max-data-bytes`.
        var grows = false
        /// Which session it acts on, for cluster mode's look-up before it is dispatched.
        let session: SessionUse
        /// The roles that may call it (any one of them); empty: every client. Checked by dispatch
        /// before the method runs.
        var roles: [String] = []
    }

    /// How a method uses a session.
    enum SessionUse: Sendable, Equatable {
        /// None (or all of them).
        case none
        /// The one the first of these params present names (none present: `main`); a session another
        /// node owns is answered `moved`.
        case acts(on: [String])
        /// The same, but a session another node owns is served here (a subscriber hears it through
        /// the store).
        case watches(_ params: [String])

        /// The params that name the session, in the order they are looked at.
        var params: [String] {
            switch self {
            case .none: return []
            case .acts(let p), .watches(let p): return p
            }
        }
    }

    /// One registered method. A class: a closure kept in an array or a tuple is stored at the most
    /// general abstraction and comes back wrapped in a reabstraction thunk (a call through each);
    /// a class's property keeps it as written.
    final class Entry {
        let spec: Spec
        let handler: Handler
        /// Cluster mode: what answers it for a session another node owns, when its spec watches
        /// sessions (dispatch chooses, so that no handler asks where a session is).
        let remoteHandler: Handler?
        /// Whether only some roles may call it (read on every request: a flag, not the list).
        let isRestricted: Bool
        /// Its answers, errors and latencies (`stats.methods`).
        var counts = MethodCounts()
        /// Where each param's value sits in the request being read (``Params``): one table per
        /// method of each server, reused by every request (a request's params are read before its
        /// handler returns and before another request is read, on the server's one loop thread; a
        /// table copied along with each `Params` value stalled on store forwarding). Per server, so
        /// that servers on several threads (tests) never share it.
        let paramPositions: ScratchWords
        /// Its params' names (``ParamName/table``), read per request without a lazy global's check.
        let paramTable: ParamTable
        /// The params that name the session it acts on or watches (``SessionUse``), as indices
        /// into its params: the first given names it (``Call/session(_:)``).
        let sessionParams: [Int]
        init(_ spec: Spec, _ handler: @escaping Handler, remote: Handler? = nil, params: ParamTable) {
            self.spec = spec
            paramTable = params
            self.handler = handler
            remoteHandler = remote
            isRestricted = !spec.roles.isEmpty
            paramPositions = ScratchWords(count: spec.params.count)
            sessionParams = spec.session.params.compactMap { spec.params.firstIndex(of: $0) }
        }
    }
    /// The entries and their names, made and replaced together.
    private final class Index {
        let entries: [Entry]
        /// Every name, by entry index.
        let names: NameTable

        init(_ entries: [Entry]) {
            self.entries = entries
            names = NameTable(entries.map(\.spec.name))
        }
    }
    private var index = Index([])
    private var entries: [Entry] { index.entries }

    init() {}

    /// Registers (or replaces) the method `spec` declares (`Generated/MethodDeclarations.swift`, made
    /// from `Protocol/methods/<name>.json`), whose params are the cases of `P` (generated with it).
    /// A method whose spec watches sessions (``SessionUse/watches(_:)``) may give `remote`, what
    /// answers it for a session another node owns (cluster mode); dispatch chooses between them.
    func register<P: ParamName>(_ spec: Spec, _: P.Type, remote: Handler? = nil, _ handler: @escaping Handler) {
        precondition(P.table.names == spec.params, "\(spec.name): the param enum \(P.self) is not the one generated for it")
        if remote != nil {
            guard case .watches = spec.session else { preconditionFailure("\(spec.name) does not watch sessions: it has no remote handler") }
        }
        rebuild(entries.filter { $0.spec.name != spec.name } + [Entry(spec, handler, remote: remote, params: P.table)])
    }

    /// Forgets every method (at shutdown: handlers hold the server).
    func removeAll() { rebuild([]) }

    private func rebuild(_ list: [Entry]) {
        index = Index(list)
    }

    /// The registered name `name` is likely a typo of (`Ping`, `ping `, `navigte`), for the error that
    /// answers an unknown method; none for a name longer than any method's could be by a typo
    /// (the comparison is quadratic in the name's length).
    func likely(_ name: String) -> String? {
        guard name.utf8.count <= 64 else { return nil }
        return suggestion(for: String(name.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()), among: entries.lazy.map(\.spec.name))
    }

    /// Every registered name.
    var keys: [String] { entries.map(\.spec.name) }

    /// Every declaration, in registration order.
    var specs: [Spec] { entries.map(\.spec) }

    /// Each method called since navd started, with its counts, by name (`stats.methods`).
    var countsObject: JSONObject {
        JSONObject(uniqueMembers: entries.filter { $0.counts.answers > 0 }.sorted { $0.spec.name < $1.spec.name }
            .map { (key: $0.spec.name, value: JSONValue.object($0.counts.object)) })
    }

    /// The entry named `name`, read without counting a reference (nor is the index): valid while
    /// the table holds it, which it replaces only when a method is registered, never while a
    /// request is dispatched.
    func entry(named name: ByteView) -> Unretained<Entry>? {
        Unretained(index).with { ix in ix.names.index(of: name).map { Unretained(ix.entries[$0]) } }
    }

    /// The entry of `name` (tests, and handlers made into text again).
    subscript(name: String) -> Entry? { ByteView.of(name) { entry(named: $0)?.object } }
}
