import JSON
import NavGraph
import UV

/// `--watch-graph`: while a developer edits the graph, navd reloads it when a module file of its
/// directory changes, as `graph.reload` (and SIGHUP) would: once the directory has been quiet for
/// ``GraphWatch/settleMs`` (an editor's save is a burst of events), so a burst is one reload, and
/// at the latest ``GraphWatch/maxWaitMs`` after a burst began (a tool that rewrites files without
/// pause still has its graph taken). An invalid graph is reported (its diagnostics, as `navd check`
/// prints them, and `graphReloadRefused` to front-ends) and the one in force stays.
final class GraphWatch {
    /// How long the graph's directory must be quiet after a change before the graph is reloaded.
    static let settleMs: UInt64 = 200
    /// The longest a change waits for the directory to be quiet.
    static let maxWaitMs: UInt64 = 2_000

    let watch: FileWatch
    let settle: Timer
    /// When (the loop's clock, ms) the first change not yet reloaded came.
    var burstStart: UInt64?

    init(watch: FileWatch, settle: Timer) {
        self.watch = watch
        self.settle = settle
    }

    /// The wait before reloading, a change having come at `now` (it starts a burst when none is
    /// waiting).
    func delay(now: UInt64) -> UInt64 {
        let start = burstStart ?? now
        burstStart = start
        return GraphWatch.delay(since: start, now: now)
    }

    /// The wait before reloading a burst that began at `start`, its latest change at `now`: the
    /// settling time, cut so that the reload comes at most ``maxWaitMs`` after the burst began.
    static func delay(since start: UInt64, now: UInt64) -> UInt64 {
        let waited = now >= start ? now - start : 0
        return waited >= maxWaitMs ? 0 : min(settleMs, maxWaitMs - waited)
    }

    func close() {
        watch.close()
        settle.close()
    }
}

extension Server {
    /// Watches the graph's directory (``graphPath``; nothing for the embedded example). Throws when
    /// the system cannot watch it (inotify's limit on watches, say).
    public func watchGraph() throws(UVError) {
        stopWatchingGraph()
        guard let dir = graphPath else { return }
        let settle = Timer(loop: loop)
        let watch: FileWatch
        do {
            watch = try FileWatch(loop: loop)
        } catch {
            settle.close()
            throw error
        }
        let w = GraphWatch(watch: watch, settle: settle)
        do {
            try watch.start(path: dir) { [unowned self, unowned w] name, status in
                guard status >= 0 else {
                    self.logger.warning("the graph's directory can no longer be watched; reload it with graph.reload or SIGHUP",
                                        metadata: ["navd.graph": "\(dir)", "navd.error": "\(UVError(status))"])
                    return
                }
                // Editors' swap, backup and lock files change beside the module being edited.
                if let name, !GraphLoader.isModuleFileName(name) { return }
                w.settle.start(milliseconds: w.delay(now: self.loop.now)) { [unowned self, unowned w] in
                    w.burstStart = nil
                    self.reloadWatchedGraph()
                }
            }
        } catch {
            w.close()
            throw error
        }
        graphWatch = w
    }

    func stopWatchingGraph() {
        graphWatch?.close()
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
