import JSON
import NavGraph
import NavigationCore

#if canImport(Glibc)
import Glibc
#endif

/// A state file kept as an SQLite snapshot (`STATE`, readable with `sqlite3`) and an append-only
/// log beside it (`STATE.log`, ``LogRecord``): every commit appends its changes (not its whole
/// tree), each loop iteration's records go to the log in one `write()` before any reply of the
/// iteration leaves (`full` durability: and one `fdatasync`), and when the log outgrows its
/// threshold the sessions changed since the last snapshot are written to the snapshot in one
/// transaction and the log starts again. Starting replays the log over the snapshot.
public final class LogStore: Store {
    let snapshot: SQLiteStore
    let logPath: String
    private let durability: Durability
    private let saved: SavedSessions
    private var fd: Int32 = -1
    /// This iteration's records, written by `flush` in one `write()`.
    private var records = JSONWriter(capacity: 64 * 1024)
    /// The log's size on disk.
    private(set) var logSize = 0
    /// The log size at which the snapshot is rewritten and the log starts again, at least: it is
    /// `compactRatio` times the snapshot's size when that is more (``threshold``), as Redis grows
    /// its rewrite threshold with the file, so that a large snapshot is not rewritten for a few commits.
    let compactAt: Int
    let compactRatio: Int
    /// The threshold now: the larger of `compactAt` and `compactRatio` times the snapshot as last written.
    private(set) var threshold: Int
    /// What the snapshot lacks: sessions changed, closed, keys remembered since it was written.
    private var unsnapshotted = PendingKeys(epoch: 1)
    private(set) var compactions = 0

    /// `compactAt`: the log size that triggers a snapshot (default: 16 MiB).
    public init(path: String, durability: Durability, saved: SavedSessions, repair: Bool, compactAt: Int = 16 << 20,
                compactRatio: Int = 3) throws(StateError) {
        snapshot = try SQLiteStore(path: path, durability: durability, saved: saved, repair: repair)
        logPath = path + ".log"
        self.durability = durability
        self.saved = saved
        self.compactAt = compactAt
        self.compactRatio = compactRatio
        threshold = compactAt
        counts = SavedSessions.SessionCounts(saved)
    }

    // MARK: Store

    public var wantsChanges: Bool { true }

    public func sessionCommitted(_ s: Session, changes: JSONText?) {
        guard let changes else { return sessionChanged(s) }
        LogRecord.append(to: &records) { w in
            LogStore.head(&w, "{\"c\":", s)
            w.raw(",\"ch\":")
            changes.bytes.withUnsafeBytes { w.buffer.append(contentsOf: $0) }
            w.raw(UInt8(ascii: "}"))
        }
        unsnapshotted.change(s)
    }

    /// The start of a commit's or a state's record: its kind's key with the session, then its
    /// version and id counter.
    private static func head(_ w: inout JSONWriter, _ key: StaticString, _ s: Session) {
        w.raw(key)
        w.write(.string(s.name))
        w.raw(",\"v\":")
        w.write(int: s.version)
        w.raw(",\"n\":")
        w.write(int: s.idCounter)
    }

    public func sessionChanged(_ s: Session) {
        LogRecord.append(to: &records) { w in
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

    public func factsChanged(_ s: Session) {
        LogRecord.append(to: &records) { w in
            w.raw("{\"f\":")
            w.write(.string(s.name))
            w.raw(",\"facts\":")
            w.write(.object(s.sortedFacts))
            w.raw(UInt8(ascii: "}"))
        }
        unsnapshotted.change(s)
    }

    public func keyRemembered(_ s: Session, key: String, reply: Result<JSONText, NavError>) {
        LogRecord.append(to: &records) { w in
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
        LogRecord.append(to: &records) { w in
            w.raw("{\"x\":")
            w.write(.string(name))
            w.raw(UInt8(ascii: "}"))
        }
        unsnapshotted.close(name)
    }

    public var hasPendingWrites: Bool { !records.buffer.isEmpty }
    public var flushSyncs: Bool { durability == .full }

    /// Appends this iteration's records in one `write()` (`full`: the log is opened O_DSYNC);
    /// a write that fails stops navd: nothing of it is acknowledged. Past the threshold, starts a
    /// compaction (``compactionSlice(graph:)`` does the rest, a slice per loop iteration).
    public func flush(graph: NavigationGraph) throws(StateError) {
        guard hasPendingWrites else { return }
        lastGraph = graph  // a reload's graph names the coordinators the snapshot writes at close
        let failed = records.buffer.withUnsafeBytes { writeFully($0, at: logSize) }
        if failed != 0 {
            throw StateError(description: "cannot append to \(logPath): \(String(cString: strerror(failed)))")
        }
        logSize += records.buffer.count
        records.buffer.removeAll(keepingAtMost: 1 << 20)
        if logSize >= threshold && compacting == nil { try beginCompaction() }
    }

    // MARK: Compaction

    /// The log a compaction is writing into the snapshot, renamed (`STATE.log.old`): a crash
    /// before the compaction ends replays it before the new log.
    var oldLogPath: String { logPath + ".old" }

    /// A compaction under way: what the snapshot lacks as the old log left it, written a slice at a time.
    private var compacting: (pending: PendingKeys.Items, next: Int, started: UInt64)?

    /// The most sessions written into the snapshot in one slice (about a millisecond's worth).
    static let sessionsPerSlice = 80

    public var hasBackgroundWork: Bool { compacting != nil }

    /// Renames the log to `STATE.log.old`, starts a new one, and keeps what the snapshot lacks as
    /// the work of the compaction; changes from now on are the new log's.
    private func beginCompaction() throws(StateError) {
        guard rename(logPath, oldLogPath) == 0 else {
            throw StateError(description: "cannot rename \(logPath) to \(oldLogPath): \(String(cString: strerror(errno)))")
        }
        Glibc.close(fd)
        fd = try openLog(truncating: true)
        try startSegment()
        if durability == .full { syncDirectory() }
        compacting = (unsnapshotted.items, 0, monotonicNanoseconds())
        unsnapshotted = PendingKeys(epoch: unsnapshotted.epoch + 1)
    }

    /// Writes the next slice of a compaction into the snapshot (one transaction); the last slice
    /// removes the old log.
    public func backgroundSlice(graph: NavigationGraph) throws(StateError) { try compactionSlice(graph: graph) }

    func compactionSlice(graph: NavigationGraph) throws(StateError) {
        guard let c = compacting else { return }
        let sliceStart = monotonicNanoseconds()
        if c.next == 0 {
            for name in c.pending.closed { snapshot.sessionClosed(name) }
            for k in c.pending.keys { snapshot.keyRemembered(k.session, key: k.key, reply: k.reply) }
        }
        let end = min(c.next + LogStore.sessionsPerSlice, c.pending.changed.count)
        for s in c.pending.changed[c.next..<end] { snapshot.sessionChanged(s) }
        try snapshot.flush(graph: graph)
        let sliceMs = Double(monotonicNanoseconds() - sliceStart) / 1e6
        maxSliceMs = max(maxSliceMs, sliceMs)
        if end < c.pending.changed.count {
            compacting = (c.pending, end, c.started)
            return
        }
        guard unlink(oldLogPath) == 0 || errno == ENOENT else {
            throw StateError(description: "cannot remove \(oldLogPath): \(String(cString: strerror(errno)))")
        }
        if durability == .full { syncDirectory() }
        compacting = nil
        compactions += 1
        lastCompactionMs = Double(monotonicNanoseconds() - c.started) / 1e6
        updateThreshold()
    }

    /// Brings the snapshot up to date at once (at start, after replaying, and at a clean stop):
    /// the compaction under way, then what the snapshot lacks; the log starts again.
    func compact(graph: NavigationGraph) throws(StateError) {
        while compacting != nil { try compactionSlice(graph: graph) }
        guard !unsnapshotted.isEmpty || logSize > LogRecord.header.count || access(oldLogPath, F_OK) == 0 else { return }
        unsnapshotted.feed(snapshot)
        try snapshot.flush(graph: graph)
        unsnapshotted = PendingKeys(epoch: unsnapshotted.epoch + 1)
        updateThreshold()
        try startSegment()
        if unlink(oldLogPath) == 0, durability == .full { syncDirectory() }
        compactions += 1
    }

    /// The threshold for the snapshot as it is now.
    private func updateThreshold() {
        threshold = compactRatio == 0 ? compactAt : max(compactAt, compactRatio * snapshot.databaseBytes())
    }

    /// The directory's entries on the disk (a rename or removal of a log, `full`).
    private func syncDirectory() {
        let slash = logPath.lastIndex(of: "/")
        let path = slash.map { $0 == logPath.startIndex ? "/" : String(logPath[..<$0]) } ?? "."
        let dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            _ = fsync(dir)
            Glibc.close(dir)
        }
    }

    /// The log's file starts with the header. `full`: it is a segment written whole in advance (the
    /// header, then zeros, `segmentSize` bytes): records overwrite zeros and the file's size does not
    /// change, so that each synchronous write puts the records alone on the disk, not the file's
    /// metadata too; the first zero length read marks the end. Where the disk has no room for the
    /// segment, or with `process` (nothing is synced), the log grows with its records.
    private func startSegment() throws(StateError) {
        var failed = LogRecord.header.withUnsafeBytes { writeFully($0, at: 0) }
        if failed == 0 && ftruncate(fd, off_t(LogRecord.header.count)) != 0 { failed = errno }
        guard failed == 0 else { throw StateError(description: "cannot write \(logPath): \(String(cString: strerror(failed)))") }
        logSize = LogRecord.header.count
        preallocated = false
        guard durability == .full else { return }
        // The zeros through a descriptor without O_DSYNC, then synced once.
        let plain = open(logPath, O_WRONLY | O_CLOEXEC)
        guard plain >= 0 else { return }
        defer { Glibc.close(plain) }
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var off = LogRecord.header.count
        while failed == 0 && off < segmentSize {
            let n = min(zeros.count, segmentSize - off)
            failed = zeros.withUnsafeBytes { writeFully(UnsafeRawBufferPointer(rebasing: $0[..<n]), at: off, fd: plain) }
            off += n
        }
        if failed == 0 && fdatasync(plain) != 0 { failed = errno }
        preallocated = failed == 0
        if !preallocated { _ = ftruncate(fd, off_t(LogRecord.header.count)) }
    }

    /// How long the last compaction took from start to end, and the longest slice of one held the
    /// loop, in milliseconds.
    private(set) var lastCompactionMs = 0.0
    private(set) var maxSliceMs = 0.0

    /// `stats.state`: the log, its compactions.
    func statsObject() -> JSONObject {
        [
            "snapshot": .string(snapshot.path), "log": .string(logPath), "logBytes": .int(logSize),
            "compactAt": .int(threshold), "compactions": .int(compactions), "preallocated": .bool(preallocated),
            "compacting": .bool(compacting != nil),
            "lastCompactionMs": .double((lastCompactionMs * 1000).rounded() / 1000),
            "maxSliceMs": .double((maxSliceMs * 1000).rounded() / 1000),
        ]
    }

    private func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Whether the log's segment was written in advance (false: no room on the disk for it).
    private(set) var preallocated = false

    /// The segment's size: the compaction threshold and room for the iteration that passes it.
    private var segmentSize: Int { threshold + max(threshold / 4, 64 << 10) }

    /// Writes `bytes` at `offset`, all of them; the error number, or 0.
    private func writeFully(_ bytes: UnsafeRawBufferPointer, at offset: Int, fd target: Int32? = nil) -> Int32 {
        let f = target ?? fd
        var done = 0
        while done < bytes.count {
            let n = pwrite(f, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return 0
    }

    public func close() {
        if fd >= 0 {
            // A clean stop leaves a snapshot and an empty log: the next start reads no log.
            if let graph = lastGraph { try? compact(graph: graph) }
            Glibc.close(fd)
            fd = -1
        }
        snapshot.close()
    }

    /// The sessions restored so far, counted (while loading).
    private var counts: SavedSessions.SessionCounts

    /// The graph sessions were last loaded or written with (for the compaction at `close`).
    private var lastGraph: NavigationGraph?

    // MARK: Loading

    /// The snapshot's sessions brought forward by the log. A torn last record (a write cut off:
    /// never acknowledged) is cut from the log; a record that fails its checksum before the end,
    /// a commit that skips a version, or a replayed session that breaks a rule stops navd, naming
    /// the byte and the session.
    public func load(graph: NavigationGraph) throws(StateError) -> [Session] {
        lastGraph = graph
        var sessions = try snapshot.load(graph: graph)
        var order = sessions.map(\.name)
        var byName = Dictionary(sessions.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        counts = SavedSessions.SessionCounts(saved)
        for s in sessions { _ = counts.admit(s) }
        var replayed = Set<String>()
        // A compaction the crash interrupted left the log it was writing into the snapshot: first.
        for path in [oldLogPath, logPath] {
            let bytes = try readLog(path)
            try replay(bytes, from: path, graph: graph, byName: &byName, order: &order, replayed: &replayed)
        }
        sessions = order.compactMap { byName[$0] }
        for s in sessions where replayed.contains(s.name) {
            do throws(NavError) { try s.checkReplayed() } catch {
                throw StateError(description: "session \"\(s.name)\" replayed from \(logPath) breaks a rule: \(error.message)")
            }
            unsnapshotted.change(s)
        }
        for name in replayed where byName[name] == nil { unsnapshotted.close(name) }
        // The replayed state becomes the snapshot now; the log starts again (a torn tail, a record
        // cut off by a crash and never acknowledged, goes with it).
        fd = try openLog(truncating: false)
        updateThreshold()
        try compact(graph: graph)
        if logSize == 0 { try startSegment() }  // nothing to compact: a new log all the same
        return sessions
    }

    /// The bytes of the log at `path` (none when there is no such file).
    private func readLog(_ path: String) throws(StateError) -> [UInt8] {
        let f = open(path, O_RDONLY | O_CLOEXEC)
        if f < 0 {
            if errno == ENOENT { return [] }
            throw StateError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { Glibc.close(f) }
        var st = stat()
        guard fstat(f, &st) == 0 else { throw StateError(description: "cannot read \(path): \(String(cString: strerror(errno)))") }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(f, $0.baseAddress! + off, $0.count - off, off_t(off)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw StateError(description: "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            off += n
        }
        return Array(bytes.prefix(off))
    }

    /// Replays the records of one log file over the sessions restored so far.
    private func replay(_ bytes: [UInt8], from path: String, graph: NavigationGraph, byName: inout [String: Session], order: inout [String],
                        replayed: inout Set<String>) throws(StateError) {
        if bytes.isEmpty { return }
        guard bytes.count >= LogRecord.header.count, Array(bytes.prefix(LogRecord.header.count)) == LogRecord.header else {
            throw StateError(description: "\(path) is not a navd log (it does not start with \"navdlog1\"); move it aside to start from the snapshot \(snapshot.path) alone")
        }
        let parser = saved.parser()
        var offset = LogRecord.header.count
        reading: while offset < bytes.count {
            switch LogRecord.read(bytes, at: offset) {
            case .end, .truncated:
                break reading
            case .badChecksum(let recordEnd):
                // Torn: the last record, cut off (only the segment's zeros, or nothing, follow it).
                if recordEnd + 8 > bytes.count || bytes[recordEnd..<(recordEnd + 8)].allSatisfy({ $0 == 0 }) { break reading }
                throw StateError(description: "\(path) is corrupt at byte \(offset): a record fails its checksum and records follow it, so what follows cannot be trusted. Move \(path) aside to start from the snapshot \(snapshot.path) (losing the changes logged since it), or restore the files from a backup")
            case .record(let range):
                do throws(NavError) {
                    let payload = try saved.parse(parser, String(decoding: bytes[range], as: UTF8.self), "a log record")
                    replayed.insert(try apply(payload, graph: graph, byName: &byName, order: &order))
                } catch {
                    throw StateError(description: "cannot replay \(path) at byte \(offset): \(error.message). Start navd with the graph and limits the log was written with, or move \(path) aside to start from the snapshot \(snapshot.path) alone")
                }
                offset = range.upperBound
            }
        }
    }

    /// Opens the log (`full`: each write returns once its data is on the disk, O_DSYNC: one call
    /// where write and fdatasync would be two).
    private func openLog(truncating: Bool) throws(StateError) -> Int32 {
        let f = open(logPath, O_RDWR | O_CREAT | O_CLOEXEC | (truncating ? O_TRUNC : 0) | (durability == .full ? O_DSYNC : 0), 0o600)
        guard f >= 0 else { throw StateError(description: "cannot open \(logPath): \(String(cString: strerror(errno)))") }
        fchmod(f, 0o600)
        return f
    }

    /// Applies one record to the sessions being restored; answers the session it is about.
    private func apply(_ p: JSONValue, graph: NavigationGraph, byName: inout [String: Session], order: inout [String]) throws(NavError) -> String {
        if let name = p["c"]?.stringValue {
            guard let s = byName[name] else { throw NavError(.corruptState, "a commit of session \"\(name)\", which is not open") }
            guard let v = p["v"]?.intValue, let n = p["n"]?.intValue, let changes = p["ch"] else {
                throw NavError(.corruptState, "a commit record of session \"\(name)\" lacks its version, id counter or changes")
            }
            if v <= s.version { return name }  // the snapshot holds it already
            try s.replay(changes: changes, version: v, nextId: n)
            return name
        }
        if let name = p["s"]?.stringValue {
            guard let v = p["v"]?.intValue, let n = p["n"]?.intValue, let tree = p["t"], let facts = p["f"] else {
                throw NavError(.corruptState, "a state record of session \"\(name)\" lacks its version, id counter, tree or facts")
            }
            let old = byName[name]
            if let old, v < old.version { return name }
            let s = try Session(restoring: name, graph: graph, root: tree, version: v, nextId: n, facts: facts, limits: saved.limits)
            if let o = p["o"]?.intValue {
                guard let uid = UInt32(exactly: o) else { throw NavError(.corruptState, "owner \(o) of session \"\(name)\" is not a uid") }
                s.owner = uid
            }
            if let old { s.adoptKeys(of: old) } else {
                if let problem = counts.admit(s) { throw NavError(.limitExceeded, problem) }
                order.append(name)
            }
            byName[name] = s
            return name
        }
        if let name = p["f"]?.stringValue {
            guard let s = byName[name], let facts = p["facts"] else { throw NavError(.corruptState, "a facts record of session \"\(name)\", which is not open") }
            try s.replayFacts(facts)
            return name
        }
        if let name = p["k"]?.stringValue {
            guard let s = byName[name], let key = p["key"]?.stringValue, let text = p["r"]?.stringValue,
                  let reply = KeyedReply.decode(try saved.parse(saved.parser(), text, "a keyed reply")) else {
                throw NavError(.corruptState, "a key record of session \"\(name)\" is not whole, or its session is not open")
            }
            s.remember(key: key, reply)
            return name
        }
        if let name = p["x"]?.stringValue {
            if let gone = byName[name] { counts.remove(gone) }
            byName[name] = nil
            order.removeAll { $0 == name }
            return name
        }
        throw NavError(.corruptState, "a record of an unknown kind")
    }


}

/// What a log store's snapshot lacks since it was written: the sessions changed (their latest
/// state), closed, and the keyed replies remembered meanwhile. A changed session is found by its
/// ``Session/storeMark`` (this epoch's number), not by its name.
struct PendingKeys {
    private var changed: [Session] = []
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
        if !closed.isEmpty { closed.remove(s.name) }
    }

    mutating func close(_ name: String) {
        for s in changed where s.name == name { s.storeMark = 0 }
        changed.removeAll { $0.name == name }
        closed.insert(name)
        keys.removeAll { $0.session.name == name }
    }

    mutating func remember(_ session: Session, key: String, reply: Result<JSONText, NavError>) {
        keys.append((session, key, reply))
    }

    /// What it holds, for a compaction that writes it a slice at a time.
    struct Items {
        let changed: [Session]
        let closed: Set<String>
        let keys: [(session: Session, key: String, reply: Result<JSONText, NavError>)]
    }

    var items: Items { Items(changed: changed, closed: closed, keys: keys) }

    /// Tells `store` all of it, as the navigator would have told it.
    func feed(_ store: SQLiteStore) {
        for name in closed { store.sessionClosed(name) }
        for s in changed { store.sessionChanged(s) }
        for k in keys { store.keyRemembered(k.session, key: k.key, reply: k.reply) }
    }
}
