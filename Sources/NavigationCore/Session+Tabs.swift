import JSON
import NavGraph

/// Tabs: selecting one, and what `dismiss` does at the first screen of the selected tab (`back:`),
/// with the tab history a container with `back: history` keeps.
extension Session {
    /// `back:` of the tabs container `shell` (the root's tabs, or a tab container navigated to).
    func tabBack(of shell: Node) -> TabBack {
        shell.coordinator < 0 ? graph.rootBack : graph.coordinators[shell.coordinator].tabBack
    }

    /// Selects tab `i` of `shell`, recording the change (`select`, with the container's `history`
    /// when it keeps one). A container with `back: history` remembers the tab it leaves; one with
    /// another `back:` keeps none (a history kept under a graph reloaded since goes now).
    func select(_ i: Int, in shell: Node, changes: inout ChangeLog) {
        if tabBack(of: shell) != .history {
            shell.tabHistory = nil
        } else if shell.selected != i {
            let left = shell.selected
            var h = shell.tabHistory ?? []
            h.removeAll { $0 == left || $0 == i }
            h.append(left)
            shell.tabHistory = h
        }
        shell.selected = i
        changes.record("select", parent: shell, index: i, tabHistory: shell.tabHistory)
    }

    /// The tab a dismiss at the first screen of `shell`'s selected tab goes back to, by its `back:`;
    /// nil when there is none (the dismiss then does what it does without `back:`).
    func tabToGoBack(in shell: Node) -> Int? {
        switch tabBack(of: shell) {
        case .none: return nil
        case .firstTab: return shell.selected == 0 ? nil : 0
        case .order: return shell.selected == 0 ? nil : shell.selected - 1
        case .history: return shell.tabHistory?.last
        }
    }

    /// Goes back to tab `i` of `shell`: it leaves the history, and the tab left is not remembered.
    func goBack(to i: Int, in shell: Node, changes: inout ChangeLog) {
        wentBackIn = shell.coordinator
        if var h = shell.tabHistory {
            h.removeAll { $0 == i }
            shell.tabHistory = h.isEmpty ? nil : h
        }
        shell.selected = i
        changes.record("select", parent: shell, index: i, tabHistory: shell.tabHistory)
    }
}
