import JSON
import NavGraph
import NavigationCore
import UV
import Unchecked

#if canImport(Glibc)
import Glibc
#endif

/// A state file kept as an SQLite snapshot (`STATE`, readable with `sqlite3`) and an append-only
/// log beside it (`STATE.log`, ``LogRecord``): every commit appends its changes (not its whole
/// tree). A loop iteration's records are checksummed together and go to the log before any reply
/// of the iteration leaves (``flush(graph:)``): with `process` durability, copied into the log's
/// segment, mapped into memory (in the kernel's cache at once, as `write()` puts it); where the
/// segment is not mapped (no room reserved for it on the disk) and with `full` durability, in one
/// `write()` (`full`: the log opened `O_DSYNC`). A request that came alone in its read has the
/// records made so far stored at once, so that its answer need not wait for the end of the
/// iteration (``Server/saveCommitsNow()``). When the log outgrows its
/// threshold the sessions changed since the last snapshot are written to the snapshot a slice at a
/// time and the log starts again. Starting replays the log over the snapshot
/// (`LogStore+Restore.swift`).
public final class LogStore: Store {
    let snapshot: SQLiteStore
    let logPath: String
    let durability: Durability
    let saved: SavedSessions
    let repair: Bool
    var fd: Int32 = -1
    /// The descriptor of the log a compaction is writing into the snapshot (`STATE.log.old`), kept
    /// open until the compaction removes that file, so that its removal frees nothing on the loop:
    /// the last close, which frees the file's pages (milliseconds for a 16 MiB log), is then made
    /// by ``closeRetired``, as Redis closes a rewritten AOF on a background thread.
    private var retiredFd: Int32 = -1
    /// Closes a retired log's descriptor; the server closes it on libuv's thread pool
    /// (``EventLoop/closeInBackground(_:)``). By default, here.
    public var closeRetired: (Int32) -> Void = StateFiles.closeHere
    /// `full` durability: makes the next segment ahead (``sparePath``: zeros written and synced) on
    /// libuv's thread pool, so that a compaction's start renames it into place where it would
    /// write and sync a segment of zeros on the loop (about 50 ms for 20 MiB on this machine's
    /// disk: every client waited). The server gives it (``EventLoop/zeroFileInBackground(_:size:_:)``);
    /// nil: each segment is made when it is needed.
    public var makeSpare: ((_ path: String, _ size: Int, _ done: @escaping (Int32) -> Void) -> Void)?
    private enum Spare {
        case none, making, failed
        case ready(size: Int)
    }
    private var spare = Spare.none
    /// The next segment made ahead (`full` durability; a crash may leave one half made: it is
    /// made again).
    var sparePath: String { logPath + ".spare" }
    /// Whether the next segment is made ahead and ready (`stats.state.spare`).
    var spareState: String {
        switch spare {
        case .none: "none"
        case .making: "making"
        case .ready: "ready"
        case .failed: "failed"
        }
    }

    /// Starts making the next segment ahead, with `full` durability and a ``makeSpare``, unless one
    /// is made or being made: once the log is half way to its threshold (``flush(graph:)``), so
    /// that a navd whose log never fills writes no spare, and one that fills it has its spare
    /// long before the compaction. A spare that cannot be made (no room on the disk) is tried
    /// again when the log next starts a segment, which then is made the old way.
    private func prepareSpare() {
        guard durability == .full, let makeSpare, case .none = spare, fd >= 0 else { return }
        let path = sparePath, size = segmentSize
        unlink(path)  // one a crash left, perhaps half made
        spare = .making
        makeSpare(path, size) { [weak self] error in
            guard let self, self.fd >= 0 else {
                if error == 0 { unlink(path) }  // the store closed meanwhile
                return
            }
            self.spare = error == 0 ? .ready(size: size) : .failed
        }
    }

    /// The spare segment, open for synchronous writes, if it is ready and still what was made (a
    /// regular file of navd's, of the size made); else nil, and it is removed.
    private func takeSpare() -> (fd: Int32, size: Int)? {
        guard case .ready(let size) = spare else { return nil }
        spare = .none
        let f = open(sparePath, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_DSYNC)
        var st = stat()
        guard f >= 0, fstat(f, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_uid == getuid(), Int(st.st_size) == size else {
            if f >= 0 { Glibc.close(f) }
            unlink(sparePath)
            return nil
        }
        return (f, size)
    }

    /// This iteration's records, their checksums filled in by `flush` (``LogRecord/seal(_:salt:)``),
    /// which then copies them into the ``mapping`` where they fit, else writes them in one `write()`.
    /// An iteration that makes more than ``recordsHeld`` (a graph reload rewriting many sessions)
    /// has them stored as they pass it.
    private var records = JSONWriter(capacity: 64 * 1024)
    /// The segment mapped into memory (`process` durability, where its room on the disk was
    /// reserved): a record copied into it is in the kernel's cache, as `write()` puts it, without
    /// a system call.
    private var mapping: MappedFile?
    /// Mappings of segments the log moved past, given back a slice per loop iteration
    /// (``backgroundSlice(graph:)``), oldest first.
    private var retiredMappings: [MappedFile] = []
    /// What one loop iteration unmaps of a retired mapping (about 0.1 ms).
    static let unmapPerSlice = 1 << 20
    /// The log file's salt (in its header and every record's header checksum) and the sequence of
    /// its next record.
    private var salt: UInt64 = 0
    private var nextSeq: UInt32 = 1
    /// The size the log file was given (its header says it): records past it grow it first.
    private var fileSize = 0
    /// The log's size on disk.
    private(set) var logSize = 0
    /// The log size at which the snapshot is rewritten and the log starts again, at least: it is
    /// `compactRatio` times the snapshot's live pages when that is more (``threshold``), as Redis
    /// grows its rewrite threshold with the data, so that a large snapshot is not rewritten for a
    /// few commits.
    let compactAt: Int
    let compactRatio: Int
    /// The threshold now: the larger of `compactAt` and `compactRatio` times the snapshot's live data.
    private(set) var threshold: Int
    /// What the snapshot lacks: sessions changed, closed, keys remembered since it was written.
    var unsnapshotted = PendingKeys(epoch: 1)
    /// Reads keyed replies of key records (a record's own parser holds views of it meanwhile).
    lazy var replyParser = saved.parser()
    private(set) var compactions = 0
    /// What the last start read and replayed, one line each (the server logs them).
    public internal(set) var restoreReport: [String] = []
    /// Warnings of the last start (a torn tail cut, a damaged log kept aside by `--repair`).
    public internal(set) var restoreWarnings: [String] = []

    /// `compactAt`: the log size that triggers a snapshot (default: 16 MiB).
    public init(path: String, durability: Durability, saved: SavedSessions, repair: Bool, compactAt: Int = 16 << 20,
                compactRatio: Int = 3) throws(StateError) {
        try StateFiles.check(path)
        snapshot = try SQLiteStore(path: path, durability: durability, saved: saved, repair: repair)
        logPath = path + ".log"
        self.durability = durability
        self.saved = saved
        self.repair = repair
        self.compactAt = compactAt
        self.compactRatio = compactRatio
        threshold = compactAt
        counts = SavedSessions.SessionCounts(saved)
        // A spare a navd that was killed left (perhaps half made): the state holds nothing in it.
        unlink(sparePath)
    }

    // MARK: Store

    public var wantsChanges: Bool { true }
    public var takesCompactChanges: Bool { true }

    /// Appends one record to this iteration's.
    @inline(__always)
    private func log(_ body: (inout JSONWriter) -> Void) {
        if segmentLayout != nil { writeSegmentLayout() }
        LogRecord.append(to: &records, seq: nextSeq, body)
        recordEnded()
    }

    /// After each record: the next one's sequence, and the held records stored once they pass
    /// ``recordsHeld``.
    @inline(__always)
    private func recordEnded() {
        nextSeq &+= 1
        if records.buffer.count >= LogStore.recordsHeld { storeHeldRecords() }
    }

    /// Records past ``recordsHeld`` are stored at once (rare: out of the request's path): copied
    /// into the mapping, else written. A write that fails is thrown by the next `flush`, which
    /// stops navd before anything of the iteration is acknowledged.
    @inline(never)
    private func storeHeldRecords() {
        storeMapped()
        guard !records.buffer.isEmpty, fd >= 0, heldWriteFailed == nil else { return }
        do { try writeRecords() } catch { heldWriteFailed = error }
    }

    /// The most bytes of records held for the end of the iteration before they are stored.
    static let recordsHeld = 1 << 20
    /// A write of records past ``recordsHeld`` that failed: the next `flush` throws it.
    private var heldWriteFailed: StateError?

    /// Seals the records made so far and copies them into the mapped segment, where they fit; else
    /// they wait for `flush`, which grows the file and writes them.
    @inline(__always)
    private func storeMapped() {
        guard let m = mapping, records.buffer.count <= m.size - logSize else { return }
        LogRecord.seal(&records, salt: salt)
        records.buffer.withByteView { m.store($0, at: logSize) }
        recordsStored()
    }

    /// The records made so far are in the file: the log is that much longer.
    @inline(__always)
    private func recordsStored() {
        logSize += records.buffer.count
        records.buffer.removeAll(keepingAtMost: 1 << 20)
    }

    /// A commit's record holds its changes in the compact form when it was built (`cc`), else in
    /// the full one (`ch`). A keyed navigation's begins with its key (`{"key":…,"c":…}`): its key's
    /// record follows before any reply leaves, and a log that ends between the two (a crash in the
    /// middle of a copy or a `write()`, or a store that flushed between them) ends with a commit
    /// never acknowledged, which restore
    /// drops (``LogStore/load(graph:)``) rather than replay it without its key, so that a retry
    /// after the crash applies it once.
    public func sessionCommitted(_ s: Session, changes: LentText?, compact: LentText?, key: String?) {
        // (Each text bound where it lies: `compact ?? changes` made a copy, one retain and release.)
        if let compact {
            commitRecord(s, compact, compact: true, key: key)
        } else if let changes {
            commitRecord(s, changes, compact: false, key: key)
        } else {
            sessionChanged(s)
        }
    }

    /// Written in place, not through log(_:): a closure capturing the session and the text
    /// retained and released both on every commit.
    @inline(__always)
    private func commitRecord(_ s: Session, _ text: LentText, compact: Bool, key: String?) {
        if segmentLayout != nil { writeSegmentLayout() }
        let start = records.buffer.count
        if key == nil, s.nameIsPlain, let name = SmallStringBytes(s.name) {
            // The usual commit's header and head in one reservation.
            let version = s.version, counter = s.idCounter
            records.reserving(LogRecord.headerSize + 24 + SmallStringBytes.jsonBytes + 2 * ReservedOutput.maxIntBytes) { o in
                o.zeros16()
                o.raw("{\"c\":")
                o.string(name)
                LogStore.counters(&o, version, counter)
                o.raw(compact ? ",\"cc\":" : ",\"ch\":")
            }
        } else {
            _ = LogRecord.begin(in: &records)
            if let key {
                records.raw("{\"key\":")
                records.write(string: key)
                LogStore.head(&records, ",\"c\":", s)
            } else {
                LogStore.head(&records, "{\"c\":", s)
            }
            records.raw(compact ? ",\"cc\":" : ",\"ch\":")
        }
        text.encode(into: &records)
        records.raw(UInt8(ascii: "}"))
        LogRecord.end(in: &records, from: start, seq: nextSeq)
        recordEnded()
        unsnapshotted.change(s)
    }

    /// The start of a commit's or a state's record: its kind's key with the session, then its
    /// version and id counter.
    private static func head(_ w: inout JSONWriter, _ key: StaticString, _ s: Session) {
        w.raw(key)
        w.write(string: s.name)
        let version = s.version, counter = s.idCounter
        w.reserving(10 + 2 * ReservedOutput.maxIntBytes) { LogStore.counters(&$0, version, counter) }
    }

    /// `,"v":version,"n":counter` (at most 10 + 2 × ``ReservedOutput/maxIntBytes`` bytes).
    @inline(__always)
    private static func counters(_ o: inout ReservedOutput, _ version: Int, _ counter: Int) {
        o.raw(",\"v\":")
        o.int(version)
        o.raw(",\"n\":")
        o.int(counter)
    }

    public func sessionChanged(_ s: Session) {
        log { w in
            LogStore.head(&w, "{\"s\":", s)
            w.raw(",\"t\":")
            s.root.write(into: &w, s.graph)
            w.raw(",\"f\":")
            w.write(.object(s.sortedFacts))
            if let owner = s.owner {
                w.raw(",\"o\":")
                w.write(int: Int(owner))
            }
            w.raw(UInt8(ascii: "}"))
        }
        unsnapshotted.change(s)
    }

    public func sessionOpened(_ s: Session) { sessionChanged(s) }

    /// Records what changed, not every fact: a session's facts may be thousands, and a
    /// `context.set` of one of them wrote them all (about 400 KB a request at 9,000 facts).
    public func factsChanged(_ s: Session, changes: JSONObject) {
        log { w in
            w.raw("{\"f\":")
            w.write(.string(s.name))
            w.raw(",\"set\":")
            w.write(.object(changes))
            w.raw(UInt8(ascii: "}"))
        }
        unsnapshotted.change(s)
    }

    public func keyRemembered(_ s: Session, key: String, reply: Result<JSONText, NavError>) {
        log { w in
            w.raw("{\"k\":")
            w.write(.string(s.name))
            w.raw(",\"key\":")
            w.write(.string(key))
            w.raw(",\"r\":")
            w.write(.string(KeyedReply.text(reply)))
            w.raw(UInt8(ascii: "}"))
        }
        unsnapshotted.remember(s, key: key, reply: reply)
    }

    public func sessionClosed(_ name: String) {
        log { w in
            w.raw("{\"x\":")
            w.write(.string(name))
            w.raw(UInt8(ascii: "}"))
        }
        unsnapshotted.close(name)
    }

    /// A reload record: what follows it (the state of each of `sessions` sessions, rebuilt for
    /// `graph`) replaces what came before it.
    public func graphReloaded(_ graph: NavigationGraph, sessions: Int) {
        lastGraph = graph
        let identity = snapshot.identity(of: graph)
        log { w in
            w.raw("{\"g\":")
            w.write(.string(identity))
            w.raw(",\"sessions\":")
            w.write(int: sessions)
            w.raw(",\"layout\":")
            w.write(TabLayout(graph).json)
            w.raw(UInt8(ascii: "}"))
        }
    }

    /// Records not in the file yet, or a log past its threshold (`flush` then starts the compaction).
    public var hasPendingWrites: Bool { !records.buffer.isEmpty || heldWriteFailed != nil || (compactionDue && fd >= 0) }

    /// The log passed its threshold and no compaction is under way.
    private var compactionDue: Bool { logSize >= threshold && compacting == nil }
    public var flushSyncs: Bool { durability == .full }

    /// Fills in the checksums of this iteration's records and appends them: a copy into the mapped
    /// segment where they fit, else one `write()` (`full`: the log is opened O_DSYNC); a write that
    /// fails stops navd: nothing of it is acknowledged. Past the threshold, starts a
    /// compaction (``compactionSlice(graph:)`` does the rest, a slice per loop iteration).
    public func flush(graph: NavigationGraph) throws(StateError) {
        guard hasPendingWrites else { return }
        lastGraph = graph  // a reload's graph names the coordinators the snapshot writes at close
        if let failed = heldWriteFailed { throw failed }
        storeMapped()
        if !records.buffer.isEmpty { try writeRecords() }  // not mapped, or past the mapping's end
        if compactionDue { try beginCompaction(graph: graph) }
        if durability == .full && logSize >= threshold / 2, case .none = spare { prepareSpare() }
    }

    /// Seals the records made so far and writes them in one `write()`, growing the file first
    /// where they pass the size it was given.
    private func writeRecords() throws(StateError) {
        LogRecord.seal(&records, salt: salt)
        if fileSize > 0 && logSize + records.buffer.count > fileSize { try growFile(to: logSize + records.buffer.count) }
        let failed = records.buffer.withByteView { writeFully($0, at: logSize) }
        if failed != 0 {
            throw StateError.writeFailed("cannot append to \(logPath)", errno: failed)
        }
        recordsStored()
    }

    /// Records that pass the size the file was given: it is made larger first (then its header
    /// says so), so that a file shorter than its header says was cut.
    private func growFile(to needed: Int) throws(StateError) {
        // The rest of the segment is written with write(): it passed the size it was mapped with.
        retireMapping()
        let size = max(needed + (64 << 10), fileSize * 2)
        var failed: Int32 = ftruncate(fd, off_t(size)) == 0 ? 0 : errno
        if failed == 0 { failed = LogRecord.fileHeader(salt: salt, size: size).withByteView { writeFully($0, at: 0) } }
        guard failed == 0 else { throw StateError.writeFailed("cannot grow \(logPath)", errno: failed) }
        fileSize = size
    }

    // MARK: Compaction

    /// The log a compaction is writing into the snapshot, renamed (`STATE.log.old`): a crash
    /// before the compaction ends replays it before the new log.
    var oldLogPath: String { logPath + ".old" }

    /// A compaction under way: what the snapshot lacks as the old log left it, written a slice at a time.
    private var compacting: (pending: PendingKeys.Items, next: Int, started: UInt64)?

    /// The most sessions written into the snapshot or removed from it in one slice (about a
    /// millisecond's worth); a key counts as a tenth of one. A slice also ends once the sessions it
    /// wrote hold ``bytesPerSlice`` of params (a few large trees are as much work as many small
    /// ones). A closed session counts as a whole one: removing its row frees its tree's pages,
    /// about as much work as writing it (800 closes of sessions with 8 KB of setup in one slice held
    /// the loop 22 ms).
    static let sessionsPerSlice = 80
    static let bytesPerSlice = 256 << 10

    /// Free pages of the snapshot still to give back to the file system after the last compaction,
    /// ``pagesPerRelease`` per loop iteration: 1,024 at once held the loop 17 ms (after 3,000
    /// sessions with 8 KB of setup each were closed).
    private var pagesToRelease = 0
    static let pagesPerRelease = 64
    static let pagesReleasedPerCompaction = 1024

    public var hasBackgroundWork: Bool { compacting != nil || pagesToRelease > 0 || !retiredMappings.isEmpty }

    /// The segment's mapping, if any, is given back in slices from now on.
    private func retireMapping() {
        if let m = mapping { retiredMappings.append(m) }
        mapping = nil
    }

    /// Renames the log to `STATE.log.old`, starts a new one, and keeps what the snapshot lacks as
    /// the work of the compaction; changes from now on are the new log's.
    private func beginCompaction(graph: NavigationGraph) throws(StateError) {
        guard rename(logPath, oldLogPath) == 0 else {
            throw StateError(description: "cannot rename \(logPath) to \(oldLogPath): \(String(cString: strerror(errno)))")
        }
        try startSegment(graph: graph, keepingOld: true)
        compacting = (unsnapshotted.items, 0, monotonicNanoseconds())
        unsnapshotted = PendingKeys(epoch: unsnapshotted.epoch + 1)
    }

    /// Writes the next slice of a compaction into the snapshot (one transaction); the last slice
    /// removes the old log. Each session is written under the graph it was built with: one listed
    /// before a graph reload keeps its own (the reload's records, in the new log, replace it).
    /// After a compaction, gives the snapshot's next ``pagesPerRelease`` free pages back instead;
    /// before anything else, the next ``unmapPerSlice`` of a retired segment's mapping.
    public func backgroundSlice(graph: NavigationGraph) throws(StateError) {
        if let m = retiredMappings.first {
            if m.giveBack(LogStore.unmapPerSlice) { retiredMappings.removeFirst() }
            return
        }
        if compacting != nil { return try compactionSlice(graph: graph) }
        if pagesToRelease > 0 {
            let released = snapshot.releaseFreePages(LogStore.pagesPerRelease)
            pagesToRelease = released < LogStore.pagesPerRelease ? 0 : pagesToRelease - released
            if pagesToRelease == 0 { updateThreshold() }
        }
    }

    func compactionSlice(graph: NavigationGraph, last: Bool = true) throws(StateError) {
        guard let c = compacting else { return }
        let sliceStart = monotonicNanoseconds()
        let work = c.pending.work
        var i = c.next, budget = LogStore.sessionsPerSlice * 10, bytes = 0
        while i < work.count && budget > 0 && bytes < LogStore.bytesPerSlice {
            switch work[i] {
            case .closed(let name):
                snapshot.sessionClosed(name)
                budget -= 10
                // The closes go in slices of their own: a session reopened under a closed name comes after them.
                if i + 1 < work.count, case .closed = work[i + 1] {} else { budget = 0 }
            case .key(let k): snapshot.keyRemembered(k.session, key: k.key, reply: k.reply); budget -= 1
            case .changed(let s):
                snapshot.sessionChanged(s)
                budget -= 10
                bytes += s.paramsBytes + 64 * s.nodeCount
            }
            i += 1
        }
        try snapshot.flush(graph: graph)
        let sliceMs = Double(monotonicNanoseconds() - sliceStart) / 1e6
        maxSliceMs = max(maxSliceMs, sliceMs)
        if i < work.count || !last {
            compacting = (c.pending, i, c.started)
            return
        }
        guard unlink(oldLogPath) == 0 || errno == ENOENT else {
            throw StateError(description: "cannot remove \(oldLogPath): \(String(cString: strerror(errno)))")
        }
        if durability == .full { syncDirectory() }
        retire()
        compacting = nil
        compactions += 1
        lastCompactionMs = Double(monotonicNanoseconds() - c.started) / 1e6
        pagesToRelease = LogStore.pagesReleasedPerCompaction
        updateThreshold()
    }

    /// Brings the snapshot up to date at once (at start, after replaying, and at a clean stop):
    /// the compaction under way, then what the snapshot lacks; the log starts again.
    func compact(graph: NavigationGraph) throws(StateError) {
        while compacting != nil { try compactionSlice(graph: graph) }
        guard !unsnapshotted.isEmpty || logSize > LogRecord.fileHeaderSize || access(oldLogPath, F_OK) == 0 else { return }
        compacting = (unsnapshotted.items, 0, monotonicNanoseconds())
        unsnapshotted = PendingKeys(epoch: unsnapshotted.epoch + 1)
        while let c = compacting, c.next < c.pending.work.count { try compactionSlice(graph: graph, last: false) }
        compacting = nil
        snapshot.releaseFreePages(LogStore.pagesReleasedPerCompaction)
        pagesToRelease = 0
        updateThreshold()
        try startSegment(graph: graph)
        if unlink(oldLogPath) == 0, durability == .full { syncDirectory() }
        compactions += 1
    }

    /// The threshold for the snapshot as it is now: its live pages, not its file (free pages,
    /// left by closed sessions and forgotten keys, do not count).
    func updateThreshold() {
        threshold = compactRatio == 0 ? compactAt : max(compactAt, compactRatio * snapshot.liveBytes())
    }

    /// The directory's entries on the disk (a rename or removal of a log, `full`).
    func syncDirectory() {
        let dir = open(StateFiles.directory(of: logPath), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            _ = fsync(dir)
            Glibc.close(dir)
        }
    }

    /// The log starts again in a new file: made beside it (`STATE.log.new`) with its header (a new
    /// salt) and zeros up to `segmentSize` (records overwrite zeros and the file's size does not
    /// change), then renamed over it in one step, so that a crash leaves the old log or the new one,
    /// never a log cut short. `full` writes the zeros and syncs them once, so that each synchronous
    /// write puts the records alone on the disk, not the file's metadata too: ahead, on libuv's
    /// thread pool (``makeSpare``), where the server gives it the way; `process` reserves the
    /// file's room without writing (`posix_fallocate`) and maps it (``mapping``), or where it cannot
    /// reserve it, makes the file that long without writing (a sparse file). Where the disk has no
    /// room for the segment, the log grows with its records. No file is truncated in place: on ext4 a file truncated to
    /// zero and written again has its data flushed when it is closed (`auto_da_alloc`), which held
    /// the loop 10 to 18 ms at each compaction.
    /// `keepingOld`: the log it replaces stays open (``retiredFd``) until its compaction ends.
    func startSegment(graph: NavigationGraph, keepingOld: Bool = false) throws(StateError) {
        // Records waiting for `flush` were numbered for the log they were made in.
        assert(records.buffer.isEmpty, "a new log segment while records wait to be written")
        var path = logPath + ".new"
        var size = segmentSize
        var reserved = false
        let made = durability == .full ? takeSpare() : nil
        if made != nil { path = sparePath } else { unlink(path) }
        let f = made?.fd ?? open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | (durability == .full ? O_DSYNC : 0), 0o600)
        guard f >= 0 else { throw StateError.writeFailed("cannot create \(path)", errno: errno) }
        if let made {
            // Made ahead, its zeros written and synced: renamed into place with its header.
            size = made.size
            preallocated = true
        } else if durability == .full {
            // No spare ready: the zeros through a descriptor without O_DSYNC, then synced once, here.
            let plain = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
            let ok: Int32 = plain >= 0 ? EventLoop.writeZeros(fd: plain, size: size) : errno
            if plain >= 0 { Glibc.close(plain) }
            preallocated = ok == 0
            if !preallocated { _ = ftruncate(f, 0) }  // a file of its own, never written: nothing to flush
        } else {
            // The segment's room is reserved on the disk (no data written), so that a store into its
            // mapping never meets a full disk; where it cannot be, the file is made that long without
            // it (sparse) and written with write().
            reserved = posix_fallocate(f, 0, off_t(size)) == 0
            preallocated = reserved || ftruncate(f, off_t(size)) == 0
        }
        let newSalt = UInt64.random(in: 1...UInt64.max)
        let header = LogRecord.fileHeader(salt: newSalt, size: preallocated ? size : 0)
        // A mapped segment gets its header through the mapping: written with write(), it would put
        // the file's first page in the page cache alone, and the first 2 MiB could not be mapped
        // as one huge page (``MappedFile``).
        let newMapping = reserved ? MappedFile(fd: f, size: size) : nil
        var failed: Int32 = 0
        if let newMapping {
            header.withByteView { newMapping.store($0, at: 0) }
        } else {
            failed = header.withByteView { writeFully($0, at: 0, fd: f) }
        }
        if failed == 0 && rename(path, logPath) != 0 { failed = errno }
        guard failed == 0 else {
            Glibc.close(f)
            unlink(path)
            throw StateError.writeFailed("cannot write \(logPath)", errno: failed)
        }
        if durability == .full { syncDirectory() }
        if fd >= 0 {
            if keepingOld {
                retire()
                retiredFd = fd
            } else {
                Glibc.close(fd)
            }
        }
        fd = f
        salt = newSalt
        nextSeq = 1
        fileSize = preallocated ? size : 0
        logSize = LogRecord.fileHeaderSize
        retireMapping()
        mapping = newMapping
        // The segment's first record, written before its first other one (a log nothing was written
        // to stays empty): the tabs of the graph its records are written under.
        segmentLayout = (snapshot.identity(of: graph), TabLayout(graph).json)
        // A spare that could not be made is tried again for this segment (half way, ``flush``).
        if case .failed = spare { spare = .none }
    }

    /// Hands the retired log's descriptor to ``closeRetired`` (its file is unlinked, or about to be
    /// replaced by the next compaction's rename).
    private func retire() {
        guard retiredFd >= 0 else { return }
        closeRetired(retiredFd)
        retiredFd = -1
    }

    /// The layout record a new segment starts with, written before the segment's first other record.
    private var segmentLayout: (identity: String, layout: JSONValue)?

    private func writeSegmentLayout() {
        guard let (identity, layout) = segmentLayout else { return }
        segmentLayout = nil
        log { w in
            w.raw("{\"l\":")
            w.write(.string(identity))
            w.raw(",\"layout\":")
            w.write(layout)
            w.raw(UInt8(ascii: "}"))
        }
    }

    /// How long the last compaction took from start to end, and the longest slice of one held the
    /// loop, in milliseconds.
    private(set) var lastCompactionMs = 0.0
    private(set) var maxSliceMs = 0.0

    /// The files of a backup named `base` (`base`, `base.log.old` during a compaction, `base.log`),
    /// each as the descriptor to copy from, the bytes to copy and the size to give the copy: what a
    /// crash now would leave, once the records made so far are stored. The snapshot is brought up
    /// to date and held (SQLite writes only its write-ahead log) until ``backupDone()``; the logs
    /// are only appended to, and the copy takes their records stored so far. Throws why not
    /// (another process reads the snapshot, a file cannot be opened); nothing is then held.
    func backupFiles(to base: String) throws(BackupRefusal) -> [EventLoop.FileCopy] {
        // What this iteration logged before the request (a commit a pipelined request made just
        // before it) is in the copy: stored now rather than at the iteration's end.
        storeHeldRecords()
        if let failed = heldWriteFailed { throw BackupRefusal(reason: "writeFailed", message: failed.description) }
        do throws(StateError) {
            try snapshot.holdFileForBackup()
        } catch {
            throw BackupRefusal(reason: "stateFileBusy", message: error.description)
        }
        var files: [EventLoop.FileCopy] = []
        func add(_ source: Int32, _ name: String, length: Int? = nil) throws(BackupRefusal) {
            var st = stat()
            guard source >= 0, fstat(source, &st) == 0 else {
                let e = errno
                if source >= 0 { Glibc.close(source) }
                throw BackupRefusal(reason: "readFailed", message: "cannot read \(name) to back it up: \(String(cString: strerror(e)))")
            }
            // A log's copy ends with its records stored so far, then zeros to the file's size (the
            // size its header says it was given, or its records' end where they outgrew it).
            let size = max(Int(st.st_size), length ?? 0)
            files.append(EventLoop.FileCopy(source: source, length: length ?? size, size: size,
                                            destination: base + String(name.dropFirst(snapshot.path.count))))
        }
        do throws(BackupRefusal) {
            try add(open(snapshot.path, O_RDONLY | O_CLOEXEC), snapshot.path)
            if retiredFd >= 0 { try add(dup(retiredFd), oldLogPath) }
            if fd >= 0 { try add(dup(fd), logPath, length: logSize) }
        } catch {
            for f in files { Glibc.close(f.source) }
            snapshot.resumeCheckpoints()
            throw error
        }
        return files
    }

    /// A backup's copy is done: SQLite may write the snapshot again.
    func backupDone() { snapshot.resumeCheckpoints() }

    /// `stats.state`: the log, its compactions.
    public func stats(mirrors: Int) -> (key: String, value: JSONObject)? {
        var o: JSONObject = [
            "snapshot": .string(snapshot.path), "log": .string(logPath), "logBytes": .int(logSize),
            "compactAt": .int(threshold), "compactions": .int(compactions), "preallocated": .bool(preallocated), "mapped": .bool(mapping != nil),
            "compacting": .bool(compacting != nil), "snapshotLiveBytes": .int(snapshot.liveBytes()),
            "snapshotFileBytes": .int(snapshot.fileBytes()),
            "lastCompactionMs": .double((lastCompactionMs * 1000).rounded() / 1000),
            "maxSliceMs": .double((maxSliceMs * 1000).rounded() / 1000),
        ]
        if durability == .full { o["spare"] = .string(spareState) }
        return ("state", o)
    }

    private func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Whether the log's file was given its size in advance (false: no room on the disk for it).
    private(set) var preallocated = false

    /// The segment's size: the compaction threshold and room for the iteration that passes it.
    private var segmentSize: Int { threshold + max(threshold / 4, 64 << 10) }

    /// Writes `bytes` at `offset`, all of them; the error number, or 0.
    private func writeFully(_ bytes: ByteView, at offset: Int, fd target: Int32? = nil) -> Int32 {
        let f = target ?? fd
        var done = 0
        while done < bytes.count {
            let n = pwrite(f, bytes.raw.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return 0
    }

    public func close() {
        // The loop may not turn again: a retired log is closed here, and no spare is made.
        closeRetired = StateFiles.closeHere
        makeSpare = nil
        if fd >= 0 {
            // A clean stop leaves a snapshot and an empty log: the next start reads no log.
            if let graph = lastGraph { try? compact(graph: graph) }
            mapping = nil
            retiredMappings = []
            Glibc.close(fd)
            fd = -1
        }
        retire()
        snapshot.close()
        // A spare made is not kept (the next start makes its own); one being made is removed when done.
        if case .ready = spare { unlink(sparePath) }
        spare = .none
    }

    /// The sessions restored so far, counted (while loading).
    var counts: SavedSessions.SessionCounts

    /// The graph sessions were last loaded or written with (for the compaction at `close`).
    var lastGraph: NavigationGraph?
}

/// What a log store's snapshot lacks since it was written: the sessions changed (their latest
/// state), closed, and the keyed replies remembered meanwhile. A changed session is found by its
/// ``Session/storeMark`` (this epoch's number), not by its name; a session closed is found by its
/// name and left where it is, marked (so that closing costs the same however many changed). A
/// session a graph reload rebuilt is a new object of the same name: the one it replaced is not
/// written, and a close marks both (their keys go too). A name closed and opened again keeps its
/// close: the compaction removes the closed session's row and keys before it writes the new one.
struct PendingKeys {
    private var changed: [Session] = []
    /// The changed sessions by name (the latest of each name), to mark one that closes.
    private var byName: [String: Session] = [:]
    /// Sessions closed since: their entries are skipped.
    private var gone: Set<ObjectIdentifier> = []
    /// Sessions replaced by a newer object of the same name (a reload's), by name: not written
    /// (their keys are, unless the name closes).
    private var superseded: [String: [ObjectIdentifier]] = [:]
    private var replaced: Set<ObjectIdentifier> = []
    private var closed: Set<String> = []
    private var keys: [(session: Session, key: String, reply: Result<JSONText, NavError>)] = []
    /// This snapshot epoch's mark (its store numbers its epochs from 1).
    let epoch: Int

    init(epoch: Int) { self.epoch = epoch }

    var isEmpty: Bool { changed.isEmpty && closed.isEmpty && keys.isEmpty }

    @inline(__always)
    mutating func change(_ s: Session) {
        guard s.storeMark != epoch else { return }
        s.storeMark = epoch
        changed.append(s)
        track(s)
    }

    /// `s` is now its name's session; an earlier object of that name is superseded.
    @inline(__always)
    private mutating func track(_ s: Session) {
        if let old = byName.updateValue(s, forKey: s.name), old !== s {
            superseded[s.name, default: []].append(ObjectIdentifier(old))
            replaced.insert(ObjectIdentifier(old))
        }
    }

    mutating func close(_ name: String) {
        if let s = byName.removeValue(forKey: name) {
            s.storeMark = 0
            gone.insert(ObjectIdentifier(s))
        }
        for id in superseded.removeValue(forKey: name) ?? [] { gone.insert(id) }
        closed.insert(name)
    }

    mutating func remember(_ session: Session, key: String, reply: Result<JSONText, NavError>) {
        track(session)
        keys.append((session, key, reply))
    }

    /// One piece of a compaction's work.
    enum Work {
        case closed(String)
        case key((session: Session, key: String, reply: Result<JSONText, NavError>))
        case changed(Session)
    }

    /// What it holds, for a compaction that writes it a slice at a time: closes first, then
    /// sessions, then keys (what a closed session had is left out). Keys come after the sessions
    /// they belong to, so a crash between slices never leaves a key of a session the snapshot does
    /// not hold (the old log replayed at the restart brings back the keys not written yet).
    struct Items {
        let work: [Work]
    }

    var items: Items {
        var work: [Work] = closed.sorted().map(Work.closed)
        work += changed.filter { !gone.contains(ObjectIdentifier($0)) && !replaced.contains(ObjectIdentifier($0)) }.map(Work.changed)
        work += keys.filter { !gone.contains(ObjectIdentifier($0.session)) }.map(Work.key)
        return Items(work: work)
    }
}
