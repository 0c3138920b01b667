import JSON
import NavGraph
import UV

/// `--watch-graph`: while a developer edits the graph, navd reloads it when a module file of its
/// directory changes, as `graph.reload` (and SIGHUP) would: once the directory has been quiet for
/// ``graphSettleMs`` (an editor's save is a burst of events), so a burst is one reload. An invalid
/// graph is reported (its diagnostics, as `navd check` prints them) and the one in force stays.
extension Server {
    /// How long the graph's directory must be quiet after a change before the graph is reloaded.
    public static let graphSettleMs: UInt64 = 200

    /// Watches the graph's directory (``graphPath``; nothing for the embedded example). Throws when
    /// the system cannot watch it (inotify's limit on watches, say).
    public func watchGraph() throws(UVError) {
        stopWatchingGraph()
        guard let dir = graphPath else { return }
        let settle = Timer(loop: loop)
        let watch: FileWatch
        do {
            watch = try FileWatch(loop: loop)
            try watch.start(path: dir) { [unowned self, unowned settle] name, status in
                guard status >= 0 else {
                    self.logger.warning("the graph's directory can no longer be watched; reload it with graph.reload or SIGHUP",
                                        metadata: ["navd.graph": "\(dir)", "navd.error": "\(UVError(status))"])
                    return
                }
                // Editors' swap, backup and lock files change beside the module being edited.
                if let name, !GraphLoader.isModuleFileName(name) { return }
                settle.start(milliseconds: Server.graphSettleMs) { [unowned self] in self.reloadWatchedGraph() }
            }
        } catch {
            settle.close()
            throw error
        }
        graphWatch = (watch, settle)
    }

    func stopWatchingGraph() {
        graphWatch?.watch.close()
        graphWatch?.settle.close()
        graphWatch = nil
    }

    /// A change settled: the graph is reloaded, or why not is logged.
    private func reloadWatchedGraph() {
        guard phase.isServing else { return }
        let r = reloadGraph()
        guard r["ok"] != true else { return }  // reloadGraph logged it
        let errors = r["errors"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let hint = r["hint"]?.stringValue.map { " (\($0))" } ?? ""
        logger.error("graph not reloaded after a change to its directory, the graph in force stays: \(errors.prefix(20).joined(separator: "; "))\(hint)")
    }
}
