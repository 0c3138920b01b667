import Glibc
import JSON
import NavGraph
import UV

/// `--watch-graph`: while a developer edits the graph, navd reloads it when a module file of its
/// directory changes, as `graph.reload` (and SIGHUP) would: once the directory has been quiet for
/// ``GraphWatch/settleMs`` (an editor's save is a burst of events), so a burst is one reload, and
/// at the latest ``GraphWatch/maxWaitMs`` after a burst began (a tool that rewrites files without
/// pause still has its graph taken). A burst reloads only when what a load would read changed
/// (``GraphFingerprint``): a module file written, renamed over, added, removed or re-linked, so an
/// editor's swap file reloads nothing and a directory of links swapped at once (a Kubernetes
/// ConfigMap's `..data`) is seen. A symbolic link on the graph's path (a deployment's `current`) is
/// watched in its own directory: pointed elsewhere, the watch follows it. An invalid graph is
/// reported (its diagnostics, as `navd check` prints them, and `graphReloadRefused` to front-ends)
/// and the one in force stays.
final class GraphWatch {
    /// How long the graph's directory must be quiet after a change before the graph is reloaded.
    static let settleMs: UInt64 = 200
    /// The longest a change waits for the directory to be quiet.
    static let maxWaitMs: UInt64 = 2_000
    /// The most symbolic links on the graph's path that are watched.
    static let maxLinks = 8

    /// The graph's path, as given.
    let path: String
    /// The graph's directory (inotify watches where the path led when it started).
    let watch: FileWatch
    let settle: Timer
    /// The directories holding a symbolic link of the graph's path, each watched for the link's name.
    var links: [FileWatch] = []
    /// When (the loop's clock, ms) the first change not yet reloaded came.
    var burstStart: UInt64?
    /// What the last load of the directory read (the watch's or another reload's).
    var fingerprint: GraphFingerprint

    init(path: String, watch: FileWatch, settle: Timer) {
        self.path = path
        self.watch = watch
        self.settle = settle
        fingerprint = GraphLoader.fingerprint(directory: path)
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

    /// The symbolic links on `path` (made absolute from `cwd`), each as the directory that holds it
    /// and its name, nearest the root first; at most ``maxLinks``.
    static func links(on path: String, cwd: String) -> [(directory: String, name: String)] {
        let absolute = path.hasPrefix("/") ? path : cwd + "/" + path
        var found: [(directory: String, name: String)] = []
        var prefix = ""
        for part in absolute.split(separator: "/", omittingEmptySubsequences: true) where part != "." {
            let directory = prefix.isEmpty ? "/" : prefix
            prefix += "/" + part
            var st = stat()
            guard lstat(prefix, &st) == 0, (st.st_mode & S_IFMT) == S_IFLNK else { continue }
            found.append((directory, String(part)))
            if found.count == maxLinks { break }
        }
        return found
    }

    /// The process's working directory ("/" when it cannot be said).
    static var currentDirectory: String {
        guard let cwd = getcwd(nil, 0) else { return "/" }
        defer { free(cwd) }
        return String(cString: cwd)
    }

    func close() {
        watch.close()
        settle.close()
        for l in links { l.close() }
        links = []
    }
}

extension Server {
    /// Watches the graph's directory (``graphPath``; nothing for the embedded example), and the
    /// symbolic links on its path. Throws when the system cannot watch the directory (inotify's
    /// limit on watches, say).
    public func watchGraph() throws(UVError) {
        stopWatchingGraph()
        guard let dir = graphPath else { return }
        let settle = Timer(loop: loop).labelled("graph reloaded after its file changed")
        let watch: FileWatch
        do {
            watch = try FileWatch(loop: loop).labelled("graph directory watched")
        } catch {
            settle.close()
            throw error
        }
        let w = GraphWatch(path: dir, watch: watch, settle: settle)
        do {
            try startWatchingDirectory(w)
        } catch {
            w.close()
            throw error
        }
        for link in GraphWatch.links(on: dir, cwd: GraphWatch.currentDirectory) {
            do {
                let l = try FileWatch(loop: loop).labelled("graph path's links watched")
                w.links.append(l)
                try l.start(path: link.directory) { [unowned self, unowned w] name, status in
                    guard status >= 0, name == nil || name == link.name else { return }
                    self.graphPathMoved(w)
                }
            } catch {
                logger.warning("a symbolic link on the graph's path cannot be watched: pointed elsewhere, the graph is reloaded by graph.reload or SIGHUP",
                               metadata: ["navd.link": "\(link.directory)/\(link.name)", "navd.error": "\(error)"])
            }
        }
        graphWatch = w
    }

    private func startWatchingDirectory(_ w: GraphWatch) throws(UVError) {
        try w.watch.start(path: w.path) { [unowned self, unowned w] _, status in
            guard status >= 0 else {
                self.logger.warning("the graph's directory can no longer be watched; reload it with graph.reload or SIGHUP",
                                    metadata: ["navd.graph": "\(w.path)", "navd.error": "\(UVError(status))"])
                return
            }
            self.graphDirectoryChanged(w)
        }
    }

    /// Something changed in the graph's directory: the reload waits for the burst to settle.
    private func graphDirectoryChanged(_ w: GraphWatch) {
        w.settle.start(milliseconds: w.delay(now: loop.now)) { [unowned self, unowned w] in
            w.burstStart = nil
            self.reloadWatchedGraph(w)
        }
    }

    /// A symbolic link on the graph's path changed: the directory's watch starts again where the
    /// path leads now (while a link is being replaced it may lead nowhere: the next change retries).
    private func graphPathMoved(_ w: GraphWatch) {
        w.watch.stop()
        do {
            try startWatchingDirectory(w)
        } catch {
            logger.debug("the graph's path leads nowhere for now", metadata: ["navd.graph": "\(w.path)", "navd.error": "\(error)"])
            return
        }
        graphDirectoryChanged(w)
    }

    func stopWatchingGraph() {
        graphWatch?.close()
        graphWatch = nil
    }

    /// A change settled: the graph is reloaded when a load would read other files, or why not is
    /// logged.
    private func reloadWatchedGraph(_ w: GraphWatch) {
        guard phase.isServing else { return }
        guard GraphLoader.fingerprint(directory: w.path) != w.fingerprint else {
            logger.debug("the graph's directory changed but none of its module files did: nothing to reload", metadata: ["navd.graph": "\(w.path)"])
            return
        }
        let r = reloadGraph()
        guard r["ok"] != true else { return }  // reloadGraph logged it
        let errors = r["errors"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let hint = r["hint"]?.stringValue.map { " (\($0))" } ?? ""
        logger.error("graph not reloaded after a change to its directory, the graph in force stays: \(errors.prefix(20).joined(separator: "; "))\(hint)")
    }
}
