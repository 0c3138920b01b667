import CSQLite
import JSON
import NavGraph
import NavigationCore

#if canImport(Glibc)
import Glibc
#endif

/// Sessions (tree, version, id counter, facts) in an SQLite file. Commits of one loop iteration
/// are written in one transaction (group commit) before any reply of that iteration is sent.
/// Tells SQLite that this process uses it from one thread only (navd: its loop's thread): no
/// mutexes, no memory statistics. Call it before the first state file opens; later it changes
/// nothing. A process that opens state files from several threads at once (the tests) must not:
/// SQLite's own global state (its VFS list) would then be unguarded.
public func useSQLiteFromOneThreadOnly() {
    _ = navsql_configure_single_thread()
}

final class SQLiteStore: Store {
    static let schemaVersion = 1
    static let applicationId: Int32 = 0x6E61_7664  // "navd"

    private var db: OpaquePointer?

    private var upsert: OpaquePointer?
    private var delete: OpaquePointer?
    private var insertKey: OpaquePointer?
    private var trimKeys: OpaquePointer?
    private var deleteKeys: OpaquePointer?
    private var insertLayout: OpaquePointer?
    /// The graphs whose tab layout the file holds (``recordLayout(of:)``).
    private var recordedLayouts: Set<String> = []
    /// `BEGIN` and `COMMIT`, prepared once (`sqlite3_exec` compiles its SQL at every call).
    private var begin: OpaquePointer?
    private var commit: OpaquePointer?
    /// Where each session's tree is written before it is bound (kept: no allocation per flush).
    private var treeText = JSONWriter(capacity: 4096)
    /// What was told since the last flush.
    private var pending = PendingWrites()
    /// Orders the `keys` rows (the newest `Session.maxKeys` of a session are kept).
    private var keySeq = 0
    let path: String
    /// The write-ahead log's pages at which SQLite copies it into the file (`wal_autocheckpoint`).
    private var checkpointPages = 1000
    private(set) var transactions = 0
    /// How saved sessions are read back and checked.
    private let saved: SavedSessions
    /// With `--repair`: a saved session that breaks a rule is set aside (moved to the `set_aside`
    /// table, with the reason) instead of stopping navd.
    private let repair: Bool
    /// The sessions `load` set aside, and why.
    private(set) var setAside: [(session: String, reason: String)] = []

    init(path: String, durability: Durability, saved: SavedSessions = SavedSessions(ServerConfiguration(socketPath: "")), repair: Bool = false) throws(StateError) {
        self.path = path
        self.saved = saved
        self.repair = repair
        var st = stat()
        let exists = stat(path, &st) == 0
        if exists && (st.st_mode & S_IFMT) == S_IFREG && st.st_size == 0 {
            throw StateError(description: "the state file \(path) is empty (0 bytes): it is not a navd state file, and starting afresh on it would hide whatever emptied it; remove it to start with fresh sessions, or give another --state PATH")
        }
        // A new file is made private from its first byte (SQLite would make it 0644, less the umask:
        // another user could open it then and read what navd writes later through that descriptor).
        if !exists && errno == ENOENT {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 { Glibc.close(fd) }
        }
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, nil) == SQLITE_OK else {
            let msg = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            let code = handle.map { sqlite3_system_errno($0) } ?? 0
            let why = code != 0 ? String(cString: strerror(code)) : nil
            sqlite3_close(handle)
            let dir = StateFiles.directory(of: path)
            throw StateError(description: "cannot open the state file \(path): \(msg)\(why.map { " (\($0))" } ?? ""); navd creates it and its log beside it, so \(dir) must be a directory navd may write in; or give another --state PATH")
        }
        db = handle
        do {
            try check()
            // Sessions and facts are private to the user, like the socket: an older file of navd's
            // made so once it is known to be navd's (a --state naming another file leaves it as it
            // was), before the journal beside it (which takes its mode) or a session is written.
            chmod(path, 0o600)
            try exec("PRAGMA journal_mode=WAL")
            try exec("PRAGMA synchronous=\(durability == .full ? "FULL" : "OFF")")
            // `process`: the write-ahead log copied into the file every 128 pages (512 KiB), not
            // every 1,000: a compaction slice that ends in a checkpoint then holds the loop about
            // 1 ms more, not 4-5. `full` keeps SQLite's default: each checkpoint syncs the file.
            if durability != .full {
                checkpointPages = 128
                try exec("PRAGMA wal_autocheckpoint=128")
            }
            try exec("CREATE TABLE IF NOT EXISTS sessions (name TEXT PRIMARY KEY, version INTEGER NOT NULL, next_id INTEGER NOT NULL, tree TEXT NOT NULL, facts TEXT NOT NULL)")
            // The uid that opened each session (NULL: navd's own); files written before it get the column.
            if try int("SELECT count(*) FROM pragma_table_info('sessions') WHERE name = 'owner'") == 0 {
                try exec("ALTER TABLE sessions ADD COLUMN owner INTEGER")
            }
            // The graph each row was written under (GraphIdentity; NULL: a file from before it).
            if try int("SELECT count(*) FROM pragma_table_info('sessions') WHERE name = 'graph'") == 0 {
                try exec("ALTER TABLE sessions ADD COLUMN graph TEXT")
            }
            // The tabs each graph of `sessions.graph` declared (TabLayout): a restart on a graph that
            // moved them is told apart from one that kept them (files without it: by count alone).
            try exec("CREATE TABLE IF NOT EXISTS graph_tabs (graph TEXT PRIMARY KEY, tabs TEXT NOT NULL)")
            insertLayout = try prepare("INSERT OR IGNORE INTO graph_tabs (graph, tabs) VALUES (?1, ?2)")
            begin = try prepare("BEGIN")
            commit = try prepare("COMMIT")
            upsert = try prepare("INSERT INTO sessions (name, version, next_id, tree, facts, owner, graph) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(name) DO UPDATE SET version = ?2, next_id = ?3, tree = ?4, facts = ?5, owner = ?6, graph = ?7")
            delete = try prepare("DELETE FROM sessions WHERE name = ?1")
            // A navigation's key and its reply, so that a retry after a reply lost to a crash gets
            // that reply instead of navigating twice (files without the table get it here).
            try exec("CREATE TABLE IF NOT EXISTS keys (session TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, reply TEXT NOT NULL, PRIMARY KEY (session, key))")
            insertKey = try prepare("INSERT OR IGNORE INTO keys (session, key, seq, reply) VALUES (?1, ?2, ?3, ?4)")
            try exec("CREATE INDEX IF NOT EXISTS keys_by_session ON keys (session, seq)")
            // Keeps a session's newest Session.maxKeys keys, whatever other sessions wrote meanwhile.
            trimKeys = try prepare("DELETE FROM keys WHERE session = ?1 AND seq <= (SELECT seq FROM keys WHERE session = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)")
            deleteKeys = try prepare("DELETE FROM keys WHERE session = ?1")
            keySeq = try int("SELECT coalesce(max(seq), 0) FROM keys")
        } catch {
            close()
            throw error
        }
    }

    /// Refuses a file that is not navd's or comes from a newer navd; stamps a new one.
    private func check() throws(StateError) {
        let app = try int("PRAGMA application_id")
        let version = try int("PRAGMA user_version")
        let tables = try int("SELECT count(*) FROM sqlite_master")
        if app == 0 && version == 0 && tables == 0 {
            // Pages freed by closed sessions and forgotten keys go back to the file system
            // (``releaseFreePages(_:)``), a few at a time.
            try exec("PRAGMA auto_vacuum=INCREMENTAL")
            try exec("PRAGMA application_id=\(SQLiteStore.applicationId)")
            try exec("PRAGMA user_version=\(SQLiteStore.schemaVersion)")
            return
        }
        guard app == Int(SQLiteStore.applicationId) else {
            throw StateError(description: "\(path) is an SQLite file that navd did not create (application_id \(app)); choose another --state file or remove it")
        }
        guard version <= SQLiteStore.schemaVersion else {
            throw StateError(description: "\(path) was written by a newer navd (state schema \(version), this navd reads up to \(SQLiteStore.schemaVersion)); upgrade navd or use another --state file")
        }
    }

    private func exec(_ sql: String) throws(StateError) {
        var err: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(db, sql, nil, nil, &err) != SQLITE_OK {
            let msg = err.map { String(cString: $0) } ?? "error"
            sqlite3_free(err)
            throw StateError(description: "state file \(path): \(msg) (in \(sql.prefix(40))…)")
        }
    }

    private func prepare(_ sql: String) throws(StateError) -> OpaquePointer? {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else {
            throw StateError(description: "state file \(path): \(String(cString: sqlite3_errmsg(db)))")
        }
        return stmt
    }

    private func int(_ sql: String) throws(StateError) -> Int {
        let s = try prepare(sql)
        defer { sqlite3_finalize(s) }
        guard sqlite3_step(s) == SQLITE_ROW else {
            throw StateError(description: "\(path) is not a readable SQLite file: \(String(cString: sqlite3_errmsg(db)))")
        }
        return Int(sqlite3_column_int64(s, 0))
    }

    /// Brings the file itself up to date for a backup (its write-ahead log copied in and emptied),
    /// then stops SQLite from writing it until ``resumeCheckpoints()``: commits go on into the
    /// write-ahead log alone, so the file can be copied as it is now. Throws when another process
    /// reads it (`sqlite3`), which keeps the log from being emptied.
    func holdFileForBackup() throws(StateError) {
        let s = try prepare("PRAGMA wal_checkpoint(TRUNCATE)")
        defer { sqlite3_finalize(s) }
        guard sqlite3_step(s) == SQLITE_ROW else {
            throw StateError(description: "state file \(path): \(String(cString: sqlite3_errmsg(db)))")
        }
        let busy = sqlite3_column_int64(s, 0)
        let frames = sqlite3_column_int64(s, 1)
        let copied = sqlite3_column_int64(s, 2)
        guard busy == 0, frames <= 0 || frames == copied else {
            throw StateError(description: "another process is reading the state file \(path) (an sqlite3 shell?), so its write-ahead log cannot be copied into it; close that reader and ask again")
        }
        try exec("PRAGMA wal_autocheckpoint=0")
    }

    /// SQLite copies its write-ahead log into the file again, as before ``holdFileForBackup()``.
    func resumeCheckpoints() {
        try? exec("PRAGMA wal_autocheckpoint=\(checkpointPages)")
    }

    /// The bytes of the database's live pages (pages less free ones, its write-ahead log's
    /// included): what the data takes, whatever the file's size.
    func liveBytes() -> Int {
        max(0, ((try? int("PRAGMA page_count")) ?? 0) - ((try? int("PRAGMA freelist_count")) ?? 0)) * ((try? int("PRAGMA page_size")) ?? 0)
    }

    /// The database's size in pages, free ones included.
    func fileBytes() -> Int {
        ((try? int("PRAGMA page_count")) ?? 0) * ((try? int("PRAGMA page_size")) ?? 0)
    }

    /// Gives up to `pages` free pages back to the file system (files made with `auto_vacuum`
    /// incremental; a file of an older navd keeps its free pages for reuse); returns how many it gave.
    @discardableResult
    func releaseFreePages(_ pages: Int) -> Int {
        let before = (try? int("PRAGMA freelist_count")) ?? 0
        guard before > 0 else { return 0 }
        try? exec("PRAGMA incremental_vacuum(\(pages))")
        return max(0, before - ((try? int("PRAGMA freelist_count")) ?? before))
    }

    /// Graph identities, by graph (a few: the graphs sessions were built with since the start).
    private var identities: [ObjectIdentifier: (graph: NavigationGraph, identity: String)] = [:]

    /// `graph`'s identity (``GraphIdentity``), computed once per graph.
    func identity(of graph: NavigationGraph) -> String {
        if let known = identities[ObjectIdentifier(graph)] { return known.identity }
        let id = GraphIdentity.of(graph)
        if identities.count > 16 { identities.removeAll() }
        identities[ObjectIdentifier(graph)] = (graph, id)
        return id
    }

    /// A text column of the current row; NULL (a hand-edited file) is refused.
    private func text(_ stmt: OpaquePointer?, _ column: Int32) throws(StateError) -> String {
        guard let p = sqlite3_column_text(stmt, column) else {
            throw StateError(description: "\(path) holds NULL where navd writes text (column \(column) of a saved row); the file was edited by hand or is corrupt: move it aside to start with fresh sessions")
        }
        return String(cString: p)
    }

    func load(graph: NavigationGraph) throws(StateError) -> [Session] { try load(graph: graph, compactionCutShort: false) }

    /// Every saved session, rebuilt against `graph` and checked as a request is. One that breaks a
    /// rule stops navd with the session and the rule named, or (`--repair`) is set aside.
    /// `compactionCutShort`: a compaction was writing the log beside it (`STATE.log.old`) into this
    /// file when navd stopped. navd before 2026-12-03 wrote keys before the sessions they belong to,
    /// so keys of a session not written yet may be there: they are left out and removed (that log
    /// holds the session and its keys, and replaying it brings them back).
    func load(graph: NavigationGraph, compactionCutShort: Bool) throws(StateError) -> [Session] {
        let s = try prepare("SELECT name, version, next_id, tree, facts, owner, graph FROM sessions ORDER BY name <> 'main', name")  // "main" first: it always exists, and counts
        defer { sqlite3_finalize(s) }
        let parser = saved.parser()
        var out: [Session] = []
        var counts = SavedSessions.SessionCounts(saved)
        var broken: [(session: String, reason: String)] = []
        // Rows written under another graph are checked against the tabs it declared, where it moved them.
        let layouts = try savedLayouts(), current = TabLayout(graph), currentIdentity = identity(of: graph)
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw StateError(description: "cannot read \(path): \(String(cString: sqlite3_errmsg(db)))") }
            let name = try text(s, 0)
            do throws(NavError) {
                let session = try saved.session(name, graph: graph, version: Int(sqlite3_column_int64(s, 1)), nextId: Int(sqlite3_column_int64(s, 2)),
                                                tree: try texts(s, 3), facts: try texts(s, 4), parser: parser)
                if sqlite3_column_type(s, 5) != SQLITE_NULL {
                    let owner = sqlite3_column_int64(s, 5)
                    guard let uid = UInt32(exactly: owner) else { throw NavError(.corruptState, "owner \(owner) is not a uid") }
                    session.owner = uid
                }
                if let g = sqlite3_column_text(s, 6).map({ String(cString: $0) }), g != currentIdentity, let layout = layouts[g], layout != current {
                    try Session.checkTabs(of: session.root, graph: graph, savedUnder: layout)
                }
                if let problem = counts.admit(session) { throw NavError(.limitExceeded, problem) }
                out.append(session)
            } catch {
                var under = ""
                if let g = sqlite3_column_text(s, 6).map({ String(cString: $0) }), g != identity(of: graph) {
                    under = " (it was saved under graph \(g); the graph navd was given is \(identity(of: graph)))"
                }
                guard repair else {
                    throw StateError(description: "cannot restore session \"\(name)\" from \(path): \(error.message)\(under). Start navd with the graph it was saved with and the same limits; or start it once with --repair to set such sessions aside (kept in the file's set_aside table) and serve the others; or move \(path) aside (or give another --state PATH, or --ephemeral) to start with fresh sessions")
                }
                broken.append((name, error.message + under))
            }
        }
        sqlite3_reset(s)
        for b in broken { try setSessionAside(b.session, reason: b.reason) }
        setAside = broken
        try loadKeys(into: out, orphansExpected: compactionCutShort)
        return out
    }

    /// A text column as ``text(_:_:)`` reads it, for code that throws ``NavError``.
    private func texts(_ stmt: OpaquePointer?, _ column: Int32) throws(NavError) -> String {
        do { return try text(stmt, column) } catch { throw NavError(.corruptState, error.description) }
    }

    /// `--repair` of a session whose log records cannot be replayed (``LogStore``): its row, the
    /// state the snapshot holds, moves to the `set_aside` table with why (a session the log opened
    /// has a row of its name and reason alone), and navd serves the others.
    func setAsideReplayed(_ name: String, reason: String) throws(StateError) {
        try setSessionAside(name, reason: reason)
        setAside.append((name, reason))
    }

    /// Moves session `name`'s row to the `set_aside` table (made when first needed), with why, and
    /// forgets its keys: the rest of the file is served, the session's data is kept for a person to
    /// look at. A session without a row gets one of its name and reason alone.
    private func setSessionAside(_ name: String, reason: String) throws(StateError) {
        try exec("CREATE TABLE IF NOT EXISTS set_aside (name TEXT NOT NULL, version INTEGER, next_id INTEGER, tree TEXT, facts TEXT, owner INTEGER, reason TEXT NOT NULL, at TEXT NOT NULL)")
        let move = try prepare("INSERT INTO set_aside SELECT name, version, next_id, tree, facts, owner, ?2, datetime('now') FROM sessions WHERE name = ?1")
        defer { sqlite3_finalize(move) }
        let note = try prepare("INSERT INTO set_aside (name, reason, at) VALUES (?1, ?2, datetime('now'))")
        defer { sqlite3_finalize(note) }
        try run(begin)
        do throws(StateError) {
            try run(move) {
                navsql_bind_text($0, 1, name, -1)
                navsql_bind_text($0, 2, reason, -1)
            }
            if sqlite3_changes(db) == 0 {
                try run(note) {
                    navsql_bind_text($0, 1, name, -1)
                    navsql_bind_text($0, 2, reason, -1)
                }
            }
            try run(delete) { navsql_bind_text($0, 1, name, -1) }
            try run(deleteKeys) { navsql_bind_text($0, 1, name, -1) }
            try run(commit)
        } catch {
            try? exec("ROLLBACK")
            throw error
        }
    }

    /// Each session's remembered keys, oldest first. A key of a session the file does not hold is
    /// corrupt, unless `orphansExpected` (``load(graph:compactionCutShort:)``): then it is removed.
    private func loadKeys(into sessions: [Session], orphansExpected: Bool) throws(StateError) {
        let byName = Dictionary(sessions.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var orphans = 0
        for k in try savedKeys() {
            guard let session = byName[k.session] else {
                guard orphansExpected else {
                    throw StateError(description: "key \"\(k.key)\" of session \"\(k.session)\" in \(path) is corrupt: the file holds no such session; move \(path) aside (or give another --state PATH, or --ephemeral) to start with fresh sessions")
                }
                orphans += 1
                continue
            }
            session.remember(key: k.key, k.reply)
        }
        if orphans > 0 { try exec("DELETE FROM keys WHERE session NOT IN (SELECT name FROM sessions)") }
    }

    /// The names of the saved sessions (their rows not read: a graph reload in the log replaces them).
    func sessionNames() throws(StateError) -> [String] {
        let s = try prepare("SELECT name FROM sessions")
        defer { sqlite3_finalize(s) }
        var out: [String] = []
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { return out }
            guard rc == SQLITE_ROW else { throw StateError(description: "cannot read \(path): \(String(cString: sqlite3_errmsg(db)))") }
            out.append(try text(s, 0))
        }
    }

    /// Every remembered key with its session and reply, oldest first.
    func savedKeys() throws(StateError) -> [(session: String, key: String, reply: Result<JSONText, NavError>)] {
        var out: [(session: String, key: String, reply: Result<JSONText, NavError>)] = []
        let s = try prepare("SELECT session, key, reply FROM keys ORDER BY seq")
        defer { sqlite3_finalize(s) }
        let parser = saved.parser()
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw StateError(description: "cannot read \(path): \(String(cString: sqlite3_errmsg(db)))") }
            let name = try text(s, 0)
            let key = try text(s, 1)
            guard let result = KeyedReply.decode(text: try text(s, 2), parser: parser) else {
                throw StateError(description: "key \"\(key)\" of session \"\(name)\" in \(path) is corrupt; move \(path) aside (or give another --state PATH, or --ephemeral) to start with fresh sessions")
            }
            out.append((name, key, result))
        }
        return out
    }

    // MARK: Store

    func keyRemembered(_ s: Session, key: String, reply: Result<JSONText, NavError>) { pending.remember(s, key: key, reply: reply) }
    func sessionChanged(_ s: Session) { pending.change(s) }
    func sessionOpened(_ s: Session) { pending.change(s) }
    func factsChanged(_ s: Session, changes: JSONObject) { pending.change(s) }
    func sessionClosed(_ name: String) { pending.close(name) }

    var hasPendingWrites: Bool { !pending.isEmpty }

    /// Writes every session changed since the last flush in one transaction.
    func flush(graph: NavigationGraph) throws(StateError) {
        guard hasPendingWrites else { return }
        try run(begin)
        do throws(StateError) {
            let closed = pending.closed, keys = pending.keys
            var layoutsWritten: [String] = []
            for name in closed {
                try run(delete) { navsql_bind_text($0, 1, name, -1) }
                try run(deleteKeys) { navsql_bind_text($0, 1, name, -1) }
            }
            for k in keys where !closed.contains(k.session) {
                keySeq += 1
                let seq = keySeq
                try run(insertKey) {
                    navsql_bind_text($0, 1, k.session, -1)
                    navsql_bind_text($0, 2, k.key, -1)
                    sqlite3_bind_int64($0, 3, Int64(seq))
                    navsql_bind_text($0, 4, k.reply, -1)
                }
            }
            // Keep the newest Session.maxKeys of each session that remembered keys, as it does in memory.
            for name in Set(keys.map(\.session)) where !closed.contains(name) {
                try run(trimKeys) {
                    navsql_bind_text($0, 1, name, -1)
                    sqlite3_bind_int64($0, 2, Int64(Session.maxKeys))
                }
            }
            for (_, s) in pending.changed {
                // The tree written straight from the nodes (no value built for each node), into the
                // store's own buffer, which SQLite reads in place while the statement steps.
                treeText.buffer.removeAll(keepingAtMost: 1 << 20)
                s.root.write(into: &treeText, s.graph)
                let factsText = s.facts.isEmpty ? "{}" : JSONWriter.string(.object(s.sortedFacts))
                sqlite3_reset(upsert)
                navsql_bind_text(upsert, 1, s.name, -1)
                sqlite3_bind_int64(upsert, 2, Int64(s.version))
                sqlite3_bind_int64(upsert, 3, Int64(s.idCounter))
                navsql_bind_text(upsert, 5, factsText, -1)
                if let owner = s.owner { sqlite3_bind_int64(upsert, 6, Int64(owner)) } else { sqlite3_bind_null(upsert, 6) }
                let graphIdentity = identity(of: s.graph)
                navsql_bind_text(upsert, 7, graphIdentity, -1)
                if !recordedLayouts.contains(graphIdentity) { try recordLayout(of: s.graph, graphIdentity, into: &layoutsWritten) }
                let done = treeText.buffer.withUnsafeBytes { text -> Bool in
                    navsql_bind_text_in_place(upsert, 4, text.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(text.count))
                    defer { sqlite3_bind_null(upsert, 4) }  // the binding must not outlive the text
                    return sqlite3_step(upsert) == SQLITE_DONE
                }
                guard done else { throw lastError() }
            }
            try run(commit)
            recordedLayouts.formUnion(layoutsWritten)
        } catch {
            try? exec("ROLLBACK")
            throw error
        }
        transactions += 1
        pending.removeAll()
    }

    /// Writes the tabs `graph` declares (``TabLayout``) under its identity, once per graph, within
    /// the transaction that writes the first row under it.
    private func recordLayout(of graph: NavigationGraph, _ graphIdentity: String, into written: inout [String]) throws(StateError) {
        guard !written.contains(graphIdentity) else { return }
        let text = JSONWriter.string(TabLayout(graph).json)
        try run(insertLayout) {
            navsql_bind_text($0, 1, graphIdentity, -1)
            navsql_bind_text($0, 2, text, -1)
        }
        written.append(graphIdentity)
        // Each graph reload adds one: past a few, those no row names go (one scan of the rows per
        // `maxLayouts` graphs, as cheap beside the reloads that made them).
        if recordedLayouts.count + written.count > SQLiteStore.maxLayouts { try pruneLayouts(keeping: graphIdentity) }
    }

    /// The graph layouts kept before those no row names are removed.
    static let maxLayouts = 16

    /// Removes the layouts of graphs no row names (but `keeping`'s, whose row is being written).
    private func pruneLayouts(keeping: String) throws(StateError) {
        let prune = try prepare("DELETE FROM graph_tabs WHERE graph <> ?1 AND graph NOT IN (SELECT graph FROM sessions WHERE graph IS NOT NULL)")
        defer { sqlite3_finalize(prune) }
        try run(prune) { navsql_bind_text($0, 1, keeping, -1) }
        let left = try prepare("SELECT graph FROM graph_tabs")
        defer { sqlite3_finalize(left) }
        recordedLayouts = []
        while sqlite3_step(left) == SQLITE_ROW {
            if let g = sqlite3_column_text(left, 0) { recordedLayouts.insert(String(cString: g)) }
        }
    }

    /// The tab layouts the file holds, by graph identity (one that does not read as a layout is left out).
    private func savedLayouts() throws(StateError) -> [String: TabLayout] {
        let s = try prepare("SELECT graph, tabs FROM graph_tabs")
        defer { sqlite3_finalize(s) }
        let parser = saved.parser()
        var out: [String: TabLayout] = [:]
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { return out }
            guard rc == SQLITE_ROW else { throw StateError(description: "cannot read \(path): \(String(cString: sqlite3_errmsg(db)))") }
            guard let g = sqlite3_column_text(s, 0).map({ String(cString: $0) }), let t = sqlite3_column_text(s, 1).map({ String(cString: $0) }),
                  let value = try? saved.parse(parser, t, "a graph's tab layout"), let layout = TabLayout(json: value) else { continue }
            recordedLayouts.insert(g)
            out[g] = layout
        }
    }

    /// Resets a prepared statement, binds its parameters with `bind`, and steps it to its end.
    private func run(_ stmt: OpaquePointer?, _ bind: (OpaquePointer?) -> Void = { _ in }) throws(StateError) {
        sqlite3_reset(stmt)
        bind(stmt)
        guard sqlite3_step(stmt) == SQLITE_DONE else { throw lastError() }
    }

    private func lastError() -> StateError {
        StateError(description: "cannot write \(path): \(String(cString: sqlite3_errmsg(db)))" + (sqlite3_errcode(db) == SQLITE_FULL ? StateError.fullAdvice : ""))
    }

    func close() {
        for stmt in [upsert, delete, insertKey, trimKeys, deleteKeys, insertLayout, begin, commit] { sqlite3_finalize(stmt) }
        (upsert, delete, insertKey, trimKeys, deleteKeys, insertLayout, begin, commit) = (nil, nil, nil, nil, nil, nil, nil, nil)
        sqlite3_close(db)
        db = nil
    }
}
