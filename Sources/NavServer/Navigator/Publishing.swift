import JSON
import NavGraph
import NavigationCore
import Unchecked

/// What a commit tells the world: the store, the session's subscribers (`stackChanged`), the
/// clients of flows that ended (`flowCompleted`), and navigations whose source it removed.
extension Navigator {
    /// Publishes a commit. Called before the reply to the request that caused it, so a subscribed
    /// requester sees the change first. `key`: the commit is that keyed navigation's (its reply is
    /// remembered after this).
    func publish(_ commit: Commit, in state: SessionState, hints: JSONValue? = nil, key: String? = nil) {
        commits += 1
        state.withSession { s in publish(commit, of: s, in: state, hints: hints, key: key) }
    }

    @inline(__always)
    private func publish(_ commit: Commit, of s: Session, in state: SessionState, hints: JSONValue?, key: String?) {
        s.syncAccount()
        store.sessionCommitted(s, changes: commit.changeText, compact: commit.compactText, key: key)
        if placementRecordsAlways || !state.subscribers.isEmpty {
            placement.publish({ StackChanged(session: s.name, ref: state.ref, version: commit.version, changes: commit.changeText,
                                             compactChanges: commit.compactText, visible: .current(s), hints: hints) },
                              of: s, to: state, via: publisher)
        }
        if let ended = commit.endedList {
            for f in ended {
                coverage.forEachActive { $0.flowEnded(f.coordinator, completed: f.status == .completed) }
                announceEnd(of: f, in: state)
            }
        }
        // Navigations pending from removed nodes are cancelled.
        if !commit.removedNumbers.isEmpty && !pendingBySource.isEmpty {
            for id in commit.removed {
                if let p = pendingBySource[SessionKey(s.name, id)] {
                    // Dismissed, replaced, or gone with the stack a link or reset replaced: the
                    // version says which commit (its stackChanged).
                    finish(p, .failure(NavError(.cancelled, "the navigation was cancelled: its source `\(id)` left the tree at version \(commit.version)",
                                                data: ["navigation": .string(p.id), "version": .int(commit.version)])))
                }
            }
        }
    }

    /// Tells the session's subscribers, and the client that started it, that flow `f` ended.
    private func announceEnd(of f: EndedFlow, in state: SessionState) {
        let s = state.session
        var p: JSONObject = [
            "session": .string(s.name), "flow": .string(f.id),
            "coordinator": .string(s.graph.coordinators[f.coordinator].name), "status": .string(f.status.rawValue),
        ]
        if let r = f.result { p.append("result", r) }
        if let e = f.error { p.append("error", e) }
        let starter = state.flowStarters.removeValue(forKey: f.id)
        notifySubscribers("flowCompleted", .object(p), of: state, also: starter)
        flowEnded(f, in: state)
    }

    /// Sends notification `method` (any but `stackChanged`) to the session's subscribers, here and
    /// on other nodes (cluster mode, after the changes published before it), and to `also`.
    func notifySubscribers(_ method: String, _ params: JSONValue, of state: SessionState, also: (any Client)? = nil) {
        publisher.notify(method, params, to: state.audience, also: also)
        placement.relay(method, params, of: state.session, again: false)
    }
}
