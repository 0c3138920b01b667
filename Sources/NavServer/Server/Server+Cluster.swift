import Logging
import NavigationCore
import RPC

/// Cluster mode (`--store postgres://…`), the server's side: what the shared store reports goes to
/// the navigator, except changing requests turned away while PostgreSQL cannot be reached and the
/// stop when this node lost its lease.
extension Server: ClusterEvents {
    // Nothing new is taken from the store once navd stops (``ServerPhase``).

    public func sessionsClaimed(_ sessions: [Session], own: Bool) {
        guard phase.isServing else { return }
        navigator.sessionsClaimed(sessions, own: own)
    }

    public func sessionsLost(_ names: [String]) {
        guard phase.isServing else { return }
        navigator.sessionsLost(names)
    }

    public func changeNotified(_ payload: String) {
        guard phase.isServing else { return }
        navigator.changeNotified(payload)
    }

    public func sessionClosedElsewhere(_ name: String) {
        guard phase.isServing else { return }
        navigator.sessionClosedElsewhere(name)
    }

    public func pendingAsked(_ name: String) {
        guard phase.isServing else { return }
        navigator.pendingAsked(name)
    }

    /// While the store cannot write, the methods declared as changing (``MethodTable/Spec/changes``)
    /// are answered `unavailable` (``Dispatcher/run(_:_:lookedUp:)``).
    public func storeAvailabilityChanged(_ available: Bool, reason: String) {
        if available {
            // Notifications of other nodes' sessions may have been lost meanwhile.
            navigator.refetchMirrors()
            guard refusingChanges != nil else { return }
            refusingChanges = nil
            logger.notice("changes are accepted again", metadata: ["navd.reason": "\(reason)"])
        } else if refusingChanges == nil {
            refusingChanges = reason
        }
    }

    public func leaseLost(_ why: String) {
        guard !(phase.cause?.isFault ?? false) else { return }
        logger.critical("this node lost its registration in PostgreSQL: another navd process registered under the same --node; stopping (exit status 1)", metadata: ["navd.error": "\(why)"])
        stop(.leaseLost(why))
    }
}
