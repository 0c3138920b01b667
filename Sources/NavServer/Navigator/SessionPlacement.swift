import JSON
import NavGraph
import NavigationCore
import RPC

/// Where the navigator's sessions live: on this node alone (``OneNode``), or in a store several
/// nodes share (``Replicated``, cluster mode). The navigator asks this seam, never whether it runs
/// in a cluster: what a commit's change reaches besides subscribers here, what `session.list`
/// lists, how a session another node owns is read, and whether `main` is made here.
protocol SessionPlacement: AnyObject {
    /// Whether every session records each commit's changes, whoever subscribes (other nodes'
    /// subscribers hear them through the store).
    var recordsAlways: Bool { get }
    /// Whether this node makes `main` when the store kept none (a shared store gives it, or not).
    var makesMain: Bool { get }
    /// Sends a commit's `stackChanged` (made only when someone hears it) to the session's
    /// subscribers here and wherever else it goes.
    func publish(_ change: () -> StackChanged, of s: Session, to state: SessionState, via publisher: any Publisher)
    /// Sends another notification of the session (``Navigator/notifySubscribers(_:_:of:also:)``)
    /// wherever else its subscribers are, after what was published before it.
    func relay(_ method: String, _ params: JSONValue, of s: Session, again: Bool)
    /// `session.list`: a page of the sessions served here, or every session of the cluster with
    /// its owner.
    func list(_ r: SessionListRequest, served: SessionTable) -> SessionPage
    /// The version of `name` subscribers were last told from here (nil: the session's own).
    func storedVersion(of name: String) -> Int?
    /// Reads `name` as another node left it (nil: no node has it).
    func read(_ name: String, _ done: @escaping (Result<Session?, RPCError>) -> Void)
    /// Asks the node that owns `name` to announce its waiting navigations again (to subscribers
    /// that just joined here).
    func askPending(_ name: String)
}

/// Sessions on this node alone: a change goes to the subscribers here, `session.list` pages the
/// sessions here, and there is no other node to read from.
final class OneNode: SessionPlacement {
    var recordsAlways: Bool { false }
    var makesMain: Bool { true }

    func publish(_ change: () -> StackChanged, of s: Session, to state: SessionState, via publisher: any Publisher) {
        if !state.subscribers.isEmpty { publisher.notifyStackChanged(change, to: state.audience) }
    }

    func relay(_ method: String, _ params: JSONValue, of s: Session, again: Bool) {}

    func list(_ r: SessionListRequest, served: SessionTable) -> SessionPage {
        let page = served.page(after: r.after, limit: r.limit)
        return SessionPage(sessions: page.names.sorted(), next: page.next)
    }

    func storedVersion(of name: String) -> Int? { nil }

    func read(_ name: String, _ done: @escaping (Result<Session?, RPCError>) -> Void) {
        done(.success(nil))
    }

    func askPending(_ name: String) {}
}

/// Sessions in a store several nodes share (``SessionReplication``): a change is encoded once,
/// for the store (other nodes' subscribers) and for the subscribers here; `session.list` lists
/// every session of the cluster and its owner.
final class Replicated: SessionPlacement {
    let store: any SessionReplication
    init(_ store: any SessionReplication) { self.store = store }

    var recordsAlways: Bool { true }
    var makesMain: Bool { false }

    func publish(_ change: () -> StackChanged, of s: Session, to state: SessionState, via publisher: any Publisher) {
        let change = change()
        let body = JSONText(encoding: change)
        store.changePublished(s, body: body.bytes)
        if !state.subscribers.isEmpty {
            publisher.notifyStackChanged(to: state.audience, except: nil) { w, compact in
                if compact { change.encodeCompact(into: &w) } else { body.encode(into: &w) }
            }
        }
    }

    func relay(_ method: String, _ params: JSONValue, of s: Session, again: Bool) {
        store.notificationPublished(s, method: method, params: params, again: again)
    }

    func list(_ r: SessionListRequest, served: SessionTable) -> SessionPage {
        var owners = store.directory
        for name in served.keys { owners[name] = store.node }
        return SessionPage(sessions: owners.keys.sorted(), owners: owners)
    }

    func storedVersion(of name: String) -> Int? { store.storedVersion(of: name) }

    func read(_ name: String, _ done: @escaping (Result<Session?, RPCError>) -> Void) { store.read(name, done) }

    func askPending(_ name: String) { store.askPending(name) }
}
