import JSON
import NavGraph
import NavigationCore

/// Where sessions are kept across restarts. The navigator tells its store about every change as
/// it happens; the server has the store write them, in one group per loop iteration (`flush`),
/// before any reply or notification of that iteration leaves navd, so nothing acknowledged is
/// lost. Stores: ``SQLiteStore`` (a state file, the default) and ``EphemeralStore``
/// (`--ephemeral`: nothing is kept). A store shared between machines implements the same calls.
protocol Store: AnyObject {
    /// The sessions kept, rebuilt against `graph` and validated (called once, before serving).
    func load(graph: NavigationGraph) throws(StateError) -> [Session]
    func sessionChanged(_ s: Session)
    func sessionOpened(_ s: Session)
    func sessionClosed(_ name: String)
    func factsChanged(_ s: Session)
    /// A keyed navigation's reply, kept so that a retry after a restart gets it too.
    func keyRemembered(_ s: Session, key: String, reply: Result<JSONText, NavError>)
    /// Changes told but not yet written: replies wait for them.
    var hasPendingWrites: Bool { get }
    /// Writes what was told since the last flush, all or nothing.
    func flush(graph: NavigationGraph) throws(StateError)
    func close()
}

/// `--ephemeral`: sessions live in memory only and start afresh at every start.
final class EphemeralStore: Store {
    func load(graph: NavigationGraph) throws(StateError) -> [Session] { [] }
    func sessionChanged(_ s: Session) {}
    func sessionOpened(_ s: Session) {}
    func sessionClosed(_ name: String) {}
    func factsChanged(_ s: Session) {}
    func keyRemembered(_ s: Session, key: String, reply: Result<JSONText, NavError>) {}
    var hasPendingWrites: Bool { false }
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
}
