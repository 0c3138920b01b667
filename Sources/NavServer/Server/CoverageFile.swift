import Glibc
import JSON
import Logging
import NavGraph
import NavigationCore
import UV

/// Coverage kept with the durable state: `STATE.coverage` beside the state file holds every
/// run as its JSON report (what `coverage.report` gives, read back by ``Coverage/add(report:graph:)``),
/// written when counts changed, every ``CoverageFile/interval`` milliseconds and at shutdown (a
/// temporary file renamed over the old: a crash leaves the old or the new, never half of one).
/// A crash loses at most the last interval's counts; a clean stop none. The write runs on the
/// loop: a graph so large that one write takes long is written less often (at most 2 % of the
/// loop's time: after a write of `d`, none for 50 `d`).
final class CoverageFile {
    static let interval: UInt64 = 2_000
    /// The largest file read back (a run's size is fixed by its graph; 16 runs of a large graph).
    static let maxBytes = 64 << 20
    let path: String
    let logger: Logger
    var timer: Timer?
    /// ``CoverageRuns/mark`` when last written.
    var writtenMark = -1
    /// No timed write before this (``EventLoop/hrtime``, nanoseconds): 50 times the last write's time after it.
    var quietUntil: UInt64 = 0
    /// Closes the descriptor of the file a write replaced, held open across the rename so that
    /// the rename frees nothing: the last close frees its blocks (a discard the disk is asked to
    /// do and waited for, 0.2–0.5 ms here). The server closes it on libuv's thread pool.
    var closeReplaced: (Int32) -> Void = StateFiles.closeHere

    init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
    }

    /// Adds the saved runs to `runs`; a missing file is no run, a damaged one is logged and left.
    func restore(into runs: inout CoverageRuns, graph: NavigationGraph) {
        // The size first: a file larger than any navd writes is not read into memory at all.
        var st = stat()
        if lstat(path, &st) == 0 && Int(st.st_size) > CoverageFile.maxBytes {
            logger.warning("coverage not read back: larger than navd writes; it is replaced at the next write",
                           metadata: ["navd.coverage": "\(path)", "navd.bytes": "\(st.st_size)", "navd.max": "\(CoverageFile.maxBytes)"])
            return
        }
        let bytes: [UInt8]
        do { bytes = try LogScan.readFile(path) } catch {
            logger.warning("coverage not read back", metadata: ["navd.coverage": "\(path)", "navd.error": "\(error)"])
            return
        }
        guard !bytes.isEmpty else { return }
        guard bytes.count <= CoverageFile.maxBytes, let saved = try? JSONParser(maxDepth: 64).parse(bytes) else {
            logger.warning("coverage not read back: not a coverage file navd wrote; it is replaced at the next write",
                           metadata: ["navd.coverage": "\(path)", "navd.bytes": "\(bytes.count)"])
            return
        }
        let (count, skipped) = runs.restore(saved, graph: graph)
        logger.info("coverage read back", metadata: ["navd.coverage": "\(path)", "navd.runs": "\(count)", "navd.skipped": "\(skipped)"])
        writtenMark = runs.mark
    }

    /// Writes `runs` if they changed since the last write.
    func write(_ runs: CoverageRuns, graph: NavigationGraph) {
        let mark = runs.mark
        guard mark != writtenMark else { return }
        let bytes = JSONWriter.encode(runs.saved(graph: graph))
        let temporary = path + ".new"
        let f = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard f >= 0 else { return failed("cannot create \(temporary)") }
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(f, $0.baseAddress! + off, $0.count - off) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                Glibc.close(f)
                return failed("cannot write \(temporary)")
            }
            off += n
        }
        Glibc.close(f)
        let replaced = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)  // never waits (a FIFO put there)
        guard rename(temporary, path) == 0 else {
            failed("cannot rename \(temporary) to \(path)")
            if replaced >= 0 { Glibc.close(replaced) }
            return
        }
        if replaced >= 0 { closeReplaced(replaced) }
        writtenMark = mark
    }

    private func failed(_ what: String) {
        logger.warning("coverage not saved", metadata: ["navd.coverage": "\(path)", "navd.error": "\(what): \(String(cString: strerror(errno)))"])
    }
}

extension Server {
    /// Keeps coverage beside the state file `statePath` (see ``CoverageFile``): reads it back now.
    public func keepCoverage(beside statePath: String) {
        let file = CoverageFile(path: statePath + ".coverage", logger: logger)
        file.closeReplaced = { [loop] in loop.closeInBackground($0) }
        file.restore(into: &navigator.coverage, graph: graph)
        coverageFile = file
    }

    /// Starts writing coverage on a timer (``start()`` calls it).
    func startCoverageWrites() {
        guard let file = coverageFile else { return }
        let t = Timer(loop: loop).labelled("coverage file written")
        t.start(milliseconds: CoverageFile.interval, repeat: CoverageFile.interval) { [unowned self] in
            let now = EventLoop.hrtime
            guard now >= file.quietUntil, file.writtenMark != self.navigator.coverage.mark else { return }
            file.write(self.navigator.coverage, graph: self.graph)
            file.quietUntil = now + (EventLoop.hrtime - now) * 50
        }
        t.unref()
        file.timer = t
    }

    /// The last write, at shutdown.
    func stopCoverageWrites() {
        guard let file = coverageFile else { return }
        file.closeReplaced = StateFiles.closeHere  // the loop may not turn again
        file.write(navigator.coverage, graph: graph)
        file.timer?.close()
        file.timer = nil
    }
}
