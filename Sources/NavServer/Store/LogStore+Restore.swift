import JSON
import NavGraph
import NavigationCore

#if canImport(Glibc)
import Glibc
#endif

/// Starting: the logs are read whole (``LogScan``), then replayed over the snapshot. A torn last
/// record is cut (the crash that cut it came before its reply); damage stops navd, naming the file,
/// the byte, the last good record and what follows the damage, unless `--repair`, which keeps the
/// damaged log aside and says what it dropped. The last graph reload in the logs replaces what came
/// before it: the snapshot's rows and the records before it are not read (their keys are kept).
extension LogStore {
    public func load(graph: NavigationGraph) throws(StateError) -> [Session] {
        lastGraph = graph
        restoreReport = []
        restoreWarnings = []
        // A compaction the crash interrupted left the log it was writing into the snapshot: first.
        var scans = [try LogScan(path: oldLogPath), try LogScan(path: logPath)]
        if let i = scans.firstIndex(where: { if case .damaged = $0.ending { true } else { false } }) {
            let what = damage(scans, at: i)
            guard repair else {
                throw StateError(description: what + " navd does not start on a log it cannot read whole, and does not compact it away. Start it once with --repair to keep the damaged log aside (\(scans[i].path).corrupt-TIME) and serve what comes before the damage, dropping what is listed; or restore the state files from a backup")
            }
            let stamp = LogStore.stamp()
            for j in i..<scans.count where !scans[j].bytes.isEmpty {
                let aside = scans[j].path + ".corrupt-" + stamp
                guard rename(scans[j].path, aside) == 0 else {
                    throw StateError(description: "cannot keep \(scans[j].path) aside as \(aside): \(String(cString: strerror(errno)))")
                }
                if j > i {
                    restoreWarnings.append("--repair: \(scans[j].path) follows the damaged log and was written after it: kept aside as \(aside), not replayed; dropped: \(summary(scans[j], scans[j].records.map(\.offset)))")
                    scans[j].records = []
                } else {
                    restoreWarnings.append("--repair: " + what + " The log is kept aside as \(aside); what comes before the damage is replayed.")
                }
            }
        }
        for s in scans {
            if case .torn(let offset, let bytes) = s.ending {
                restoreWarnings.append("\(s.path): its last record (at byte \(offset), \(bytes) bytes of it written) was cut short by a crash while it was written; it was never acknowledged, and is dropped")
            }
        }
        return try replay(scans, graph: graph)
    }

    /// One line saying where scan `i` is damaged, what was read before, and what follows.
    private func damage(_ scans: [LogScan], at i: Int) -> String {
        let s = scans[i]
        guard case .damaged(let offset, let reason, let intact) = s.ending else { return "" }
        var text = "\(s.path) is damaged at byte \(offset): \(reason)."
        if let last = s.records.last, let head = describe(s, last.payload) {
            text += " The last good record before it is at byte \(last.offset) (\(head))."
        } else {
            text += " No record before it could be read."
        }
        if !intact.isEmpty { text += " After the damage: \(summary(s, intact))." }
        let later = scans[(i + 1)...].filter { !$0.records.isEmpty }
        for l in later { text += " \(l.path), written after it, holds \(summary(l, l.records.map(\.offset)))." }
        return text
    }

    /// "N records: session main versions 11–19, …" for the records at `offsets` of `scan`.
    private func summary(_ scan: LogScan, _ offsets: [Int]) -> String {
        var versions: [String: (low: Int, high: Int)] = [:]
        var order: [String] = []
        var other = 0
        let parser = saved.parser()
        for o in offsets {
            guard let p = try? record(scan.bytes, scan.payload(at: o), parser), let name = LogStore.session(of: p) else { other += 1; continue }
            let v = p["v"]?.intValue
            if versions[name] == nil { order.append(name) }
            let known = versions[name] ?? (Int.max, Int.min)
            versions[name] = (min(known.low, v ?? known.low), max(known.high, v ?? known.high))
        }
        let listed = order.prefix(10).map { name -> String in
            let r = versions[name]!
            return r.low == Int.max ? "session \"\(name)\"" : r.low == r.high ? "session \"\(name)\" version \(r.low)" : "session \"\(name)\" versions \(r.low)–\(r.high)"
        }
        var text = "\(offsets.count) whole record\(offsets.count == 1 ? "" : "s")"
        if !listed.isEmpty { text += " (" + listed.joined(separator: ", ") + (order.count > 10 ? ", and \(order.count - 10) more sessions" : "") + ")" }
        if other > 0 { text += ", \(other) of other kinds" }
        return text
    }

    /// "session main, version 10" of a record's payload.
    private func describe(_ scan: LogScan, _ payload: Range<Int>) -> String? {
        guard let p = try? record(scan.bytes, payload, saved.parser()) else { return nil }
        if let g = p["g"]?.stringValue { return "a reload to graph \(g)" }
        guard let name = LogStore.session(of: p) else { return nil }
        return p["v"]?.intValue.map { "session \"\(name)\", version \($0)" } ?? "session \"\(name)\""
    }

    /// The time in the names of files set aside and of backups, UTC (`20261205T231502Z`; with
    /// `milliseconds`, `20261205T231502.123Z`, so that backups made within a second differ): names
    /// sort as they were made.
    static func stamp(milliseconds: Bool = false) -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var t = ts.tv_sec
        var tm = tm()
        gmtime_r(&t, &tm)
        var buf = [CChar](repeating: 0, count: 32)
        let n = strftime(&buf, buf.count, "%Y%m%dT%H%M%S", &tm)
        let ms = ts.tv_nsec / 1_000_000
        let fraction = !milliseconds ? "" : ms < 10 ? ".00\(ms)" : ms < 100 ? ".0\(ms)" : ".\(ms)"
        return String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self) + fraction + "Z"
    }

    /// What a replay counts, for the report.
    private struct Counted {
        var kinds: [String: Int] = [:]
        var versions: [String: (from: Int, to: Int)] = [:]
        var order: [String] = []

        mutating func saw(_ kind: String, _ name: String, from: Int?, to: Int?) {
            kinds[kind, default: 0] += 1
            if versions[name] == nil {
                order.append(name)
                versions[name] = (from ?? to ?? 0, to ?? from ?? 0)
            } else if let to {
                versions[name]!.to = max(versions[name]!.to, to)
            }
        }
    }

    /// The snapshot's sessions brought forward by the records of `scans`.
    private func replay(_ scans: [LogScan], graph: NavigationGraph) throws(StateError) -> [Session] {
        var records = scans.indices.flatMap { i in scans[i].records.map { (scan: i, offset: $0.offset, payload: $0.payload) } }
        let parser = saved.parser()
        dropKeyedCommitWithoutKey(&records, scans, parser)
        let reload = lastCompleteReload(&records, scans, parser)
        var byName: [String: Session] = [:]
        var order: [String] = []
        var replayed = Set<String>()
        var setAside = Set<String>()
        var snapshotNames: [String] = []
        var earlierKeys: [(session: String, key: String, reply: Result<JSONText, NavError>, logged: Bool)] = []
        counts = SavedSessions.SessionCounts(saved)
        if let reload {
            // The snapshot's rows and the records before the reload are replaced; their keys stay.
            snapshotNames = try snapshot.sessionNames()
            earlierKeys = try keysBefore(reload, records, scans, parser)
            restoreReport.append("snapshot \(snapshot.path): \(snapshotNames.count) sessions, replaced by the graph reload in the log")
        } else {
            let sessions = try snapshot.load(graph: graph, compactionCutShort: !scans[0].bytes.isEmpty)  // scans[0]: STATE.log.old
            for s in sessions {
                byName[s.name] = s
                order.append(s.name)
                _ = counts.admit(s)
            }
            setAside = Set(snapshot.setAside.map(\.session))
            restoreReport.append("snapshot \(snapshot.path): \(sessions.count) sessions")
        }
        var counted = Counted()
        var statesToCome = 0
        var reloadAt = (path: "", offset: 0)
        // --repair: the sessions whose records break a rule, and why; set aside after the replay.
        var broken: [String: String] = [:]
        // The tabs of the graph the records were written under (a segment's first record, and a
        // reload's, say; nil: a log of a navd that did not write them).
        var logLayout: TabLayout?
        for index in (reload ?? 0)..<records.count {
            let r = records[index]
            let path = scans[r.scan].path
            var about: (name: String, isState: Bool)?
            do throws(NavError) {
                let payload = RecordMembers(try saved.view(parser, scans[r.scan].bytes[r.payload], "a log record"))
                about = (payload.c ?? payload.s ?? payload.f ?? payload.k)?.string.map { ($0, payload.s != nil) }
                if payload.l != nil {
                    logLayout = payload.layout.flatMap { TabLayout(json: $0.value(keys: parser.keys)) }
                    continue
                }
                if index == reload {
                    let reloadPayload = payload.record.value(keys: parser.keys)
                    let n = try reloadRecord(reloadPayload, graph: graph)
                    logLayout = reloadPayload["layout"].flatMap(TabLayout.init(json:))
                    counted.kinds["graph reload", default: 0] += 1
                    statesToCome = n
                    reloadAt = (path, r.offset)
                    if n == 0 { adopt(earlierKeys, into: byName) }
                    continue
                }
                if statesToCome > 0 {
                    guard payload.s != nil else {
                        throw NavError(.corruptState, "the graph reload at byte \(reloadAt.offset) announces \(statesToCome) more sessions' states than follow it")
                    }
                }
                let before = payload.s == nil ? (payload.c ?? payload.f ?? payload.k)?.string.flatMap { byName[$0]?.version } : nil
                guard let name = try apply(payload, keys: parser.keys, graph: graph, byName: &byName, order: &order, setAside: &setAside) else {
                    counted.kinds["dropped (session set aside)", default: 0] += 1
                    continue
                }
                replayed.insert(name)
                if payload.s != nil || payload.x != nil { broken[name] = nil }  // replaced or closed since
                let kind = payload.c != nil ? "commits" : payload.s != nil ? "states" : payload.f != nil ? "facts" : payload.k != nil ? "keys" : "closes"
                counted.saw(kind, name, from: before, to: byName[name]?.version)
                if statesToCome > 0 {
                    statesToCome -= 1
                    if statesToCome == 0 { adopt(earlierKeys, into: byName) }
                }
            } catch {
                guard repair, let about, index != reload else {
                    throw StateError(description: "cannot replay \(path) at byte \(r.offset): \(error.message). Start navd with the graph and limits the log was written with; or start it once with --repair to set the session aside and serve the others\(about.map { " (session \"\($0.name)\")" } ?? ""); or move \(path) aside to start from the snapshot \(snapshot.path) alone")
                }
                // The session goes aside with what it had; the reload's count goes on.
                broken[about.name] = "its log record at byte \(r.offset) of \(path) cannot be replayed: \(error.message)"
                setAside.insert(about.name)
                if let gone = byName.removeValue(forKey: about.name) { counts.remove(gone) }
                counted.kinds["dropped (session set aside)", default: 0] += 1
                if about.isState && statesToCome > 0 {
                    statesToCome -= 1
                    if statesToCome == 0 { adopt(earlierKeys, into: byName) }
                }
            }
        }
        if statesToCome > 0 {
            throw StateError(description: "\(reloadAt.path) is damaged at byte \(reloadAt.offset): its graph reload is followed by \(statesToCome) fewer sessions' states than it announces. Start navd once with --repair, or restore the state files from a backup")
        }
        // The sessions in the order they were opened (a name closed and opened again, last), each
        // once: a close leaves its name in `order` (removing it there was a scan per close).
        var listed = Set<String>()
        order = order.reversed().filter { byName[$0] != nil && listed.insert($0).inserted }.reversed()
        // Each replayed session is checked against the tree's rules, as a saved one is, and its tabs
        // against those of the graph the log was written under, where the graph moved them.
        let movedTabs = logLayout.flatMap { $0 != TabLayout(graph) ? $0 : nil }
        for name in order where replayed.contains(name) {
            guard let s = byName[name] else { continue }
            do throws(NavError) {
                try s.checkReplayed()
                if let movedTabs { try Session.checkTabs(of: s.root, graph: graph, savedUnder: movedTabs) }
            } catch {
                guard repair else {
                    throw StateError(description: "session \"\(name)\" replayed from \(logPath) breaks a rule: \(error.message). Start navd with the graph and limits the log was written with; or start it once with --repair to set the session aside and serve the others; or move \(logPath) aside to start from the snapshot \(snapshot.path) alone")
                }
                broken[name] = "replayed from \(logPath), it breaks a rule: \(error.message)"
                counts.remove(s)
                byName[name] = nil
            }
        }
        order.removeAll { byName[$0] == nil }
        if !broken.isEmpty { try setAsideFromLog(broken.sorted { $0.key < $1.key }, scans) }
        let sessions = order.compactMap { byName[$0] }
        try carry(sessions, byName, replayed: replayed.subtracting(broken.keys), earlierKeys: earlierKeys, snapshotNames: snapshotNames)
        report(scans, counted)
        // The replayed state becomes the snapshot now; the log starts again (a torn tail, a record
        // cut off by a crash and never acknowledged, goes with it).
        updateThreshold()
        try compact(graph: graph)
        if fd < 0 { try startSegment(graph: graph) }  // nothing to compact: a new log all the same
        return sessions
    }

    /// A graph reload record: the count of sessions' states that follow it (its graph, when not the
    /// one given, is warned about: the sessions are checked against the graph given).
    private func reloadRecord(_ payload: JSONValue, graph: NavigationGraph) throws(NavError) -> Int {
        guard let id = payload["g"]?.stringValue, let n = payload["sessions"]?.intValue, n >= 0 else {
            throw NavError(.corruptState, "a graph reload record lacks its graph or its count of sessions")
        }
        if id != snapshot.identity(of: graph) {
            restoreWarnings.append("the log's last graph reload was to graph \(id); navd was given graph \(snapshot.identity(of: graph)): the sessions are checked against the graph given")
        }
        return n
    }

    /// `--repair`: the logs are kept whole beside the state (`LOG.set-aside-TIME`, linked, before the
    /// compaction that follows replaces them), and each session in `broken` is set aside in the
    /// snapshot's `set_aside` table (the state the snapshot held, or its name alone), with why and
    /// where its records are kept. Nothing of it is written into the new snapshot.
    private func setAsideFromLog(_ broken: [(key: String, value: String)], _ scans: [LogScan]) throws(StateError) {
        let stamp = LogStore.stamp()
        var kept: [String] = []
        for scan in scans where !scan.records.isEmpty {
            let aside = scan.path + ".set-aside-" + stamp
            guard link(scan.path, aside) == 0 else {
                throw StateError(description: "cannot keep \(scan.path) aside as \(aside): \(String(cString: strerror(errno)))")
            }
            kept.append(aside)
        }
        if durability == .full { syncDirectory() }
        let keptIn = "its log records are kept in " + kept.joined(separator: " and ")
        for (name, reason) in broken {
            try snapshot.setAsideReplayed(name, reason: reason + "; " + keptIn)
            unsnapshotted.close(name)  // its row and keys leave the snapshot; nothing of it is written
            restoreWarnings.append("--repair: session \"\(name)\" is set aside (the state file's set_aside table holds what the snapshot had of it) and not served: \(reason); \(keptIn)")
        }
    }

    /// What replay changed, carried into the next snapshot: each replayed session, keys logged
    /// before a reload for the sessions that stay, and the sessions closed since the snapshot.
    private func carry(_ sessions: [Session], _ byName: [String: Session], replayed: Set<String>,
                       earlierKeys: [(session: String, key: String, reply: Result<JSONText, NavError>, logged: Bool)],
                       snapshotNames: [String]) throws(StateError) {
        for s in sessions where replayed.contains(s.name) { unsnapshotted.change(s) }
        for k in earlierKeys where k.logged { if let s = byName[k.session] { unsnapshotted.remember(s, key: k.key, reply: k.reply) } }
        for name in replayed where byName[name] == nil { unsnapshotted.close(name) }
        for name in snapshotNames where byName[name] == nil { unsnapshotted.close(name) }
    }

    /// The last graph reload of the log that reached it whole. A reload's record is followed by the
    /// state of every session, all stored before its reply or any later record; when the log ends
    /// inside that group (the crash came in the middle of the copy or the `write()` that stored
    /// them, which can end cleanly after any of them; or a torn write, or damage --repair cut),
    /// the reload was never acknowledged: it and the states after it are
    /// dropped from `records`, and the log is read as it was before it.
    private func lastCompleteReload(_ records: inout [(scan: Int, offset: Int, payload: Range<Int>)], _ scans: [LogScan], _ parser: JSONParser) -> Int? {
        while let g = records.lastIndex(where: { r in LogStore.starts(scans[r.scan].bytes, r.payload, with: "{\"g\":") }) {
            let r = records[g]
            let announced = (try? record(scans[r.scan].bytes, r.payload, parser))?["sessions"]?.intValue ?? -1
            let following = records[(g + 1)...].prefix { LogStore.starts(scans[$0.scan].bytes, $0.payload, with: "{\"s\":") }.count
            let atTheEnd = records[g...].allSatisfy { $0.scan == records.last!.scan }
            if following < announced && following == records.count - g - 1 && atTheEnd {
                restoreWarnings.append("\(scans[r.scan].path): the graph reload at byte \(r.offset) was cut short (\(following) of its \(announced) sessions' states reached the log): it was never acknowledged, and is dropped")
                records.removeSubrange(g...)
                continue
            }
            return g
        }
        return nil
    }

    /// A keyed navigation's commit (`{"key":…,"c":…}`) is followed by its key's record (`{"k":…}`)
    /// before its reply or any other leaves; the records between the two are those its commit made
    /// (a flow it ended resumed another navigation). When the log ends between them, torn or cleanly
    /// (a crash in the middle of the copy or the `write()` that stored them), the commit was never
    /// acknowledged:
    /// replayed without its key, a retry after the crash would apply it a second time. It and the
    /// records after it are dropped from `records`. Only keyed commits and key records are read.
    private func dropKeyedCommitWithoutKey(_ records: inout [(scan: Int, offset: Int, payload: Range<Int>)], _ scans: [LogScan], _ parser: JSONParser) {
        guard let last = records.last else { return }
        var waiting: [String: (index: Int, session: String, key: String)] = [:]
        for (i, r) in records.enumerated() {
            let bytes = scans[r.scan].bytes
            let keyed = LogStore.starts(bytes, r.payload, with: "{\"key\":")
            guard keyed || (!waiting.isEmpty && LogStore.starts(bytes, r.payload, with: "{\"k\":")) else { continue }
            guard let p = try? saved.view(parser, bytes[r.payload], "a log record") else { continue }  // replay says what is wrong
            let m = RecordMembers(p)
            guard let name = (keyed ? m.c : m.k)?.string, let key = m.key?.string else { continue }
            let id = name + "\u{0}" + key
            if keyed { waiting[id] = (i, name, key) } else { waiting[id] = nil }
        }
        guard let first = waiting.values.min(by: { $0.index < $1.index }) else { return }
        // Only at the end of the last log, and only records of its session after it (what its commit
        // makes): what a crash leaves. Else the log holds what no navd writes, and it is replayed as
        // it is, with a warning, rather than drop records that may have been acknowledged.
        let tail = records[first.index...]
        let sameSession = tail.allSatisfy { r in
            guard r.scan == last.scan, let p = try? saved.view(parser, scans[r.scan].bytes[r.payload], "a log record") else { return false }
            let m = RecordMembers(p)
            return (m.c ?? m.s ?? m.f ?? m.k ?? m.x)?.string == first.session
        }
        let r = records[first.index]
        guard sameSession else {
            restoreWarnings.append("\(scans[r.scan].path): the navigation of session \"\(first.session)\" with key \"\(first.key)\" committed at byte \(r.offset) has no key's record after it, yet records of other sessions or logs follow it: replayed as it is (its key is not remembered)")
            return
        }
        let after = records.count - first.index - 1
        restoreWarnings.append("\(scans[r.scan].path): the navigation of session \"\(first.session)\" with key \"\(first.key)\" committed at byte \(r.offset), and the log ends before its key's record: the crash came before its reply, so it was never acknowledged, and is dropped\(after > 0 ? " with the \(after) record\(after == 1 ? "" : "s") its commit made after it" : "") (a retry of it applies it once)")
        records.removeSubrange(first.index...)
    }

    /// The keys a snapshot replaced by a reload keeps: its own, then those the log adds (or drops,
    /// with a session closed) before the reload.
    private func keysBefore(_ reload: Int, _ records: [(scan: Int, offset: Int, payload: Range<Int>)], _ scans: [LogScan], _ parser: JSONParser) throws(StateError)
        -> [(session: String, key: String, reply: Result<JSONText, NavError>, logged: Bool)] {
        var earlierKeys: [(session: String, key: String, reply: Result<JSONText, NavError>, logged: Bool)] =
            try snapshot.savedKeys().map { ($0.session, $0.key, $0.reply, false) }
        // A close drops the keys its session had so far: where it came in the list, by session (one
        // pass at the end, not a scan of the list at each close).
        var closedAt: [String: Int] = [:]
        for r in records[..<reload] {
            let bytes = scans[r.scan].bytes
            if LogStore.starts(bytes, r.payload, with: "{\"k\":") || LogStore.starts(bytes, r.payload, with: "{\"x\":") {
                guard let p = try? record(bytes, r.payload, parser) else { continue }
                if let name = p["x"]?.stringValue { closedAt[name] = earlierKeys.count }
                if let name = p["k"]?.stringValue, let key = p["key"]?.stringValue, let text = p["r"]?.stringValue,
                   let reply = KeyedReply.decode(text: text, parser: parser) {
                    earlierKeys.append((name, key, reply, true))
                }
            }
        }
        guard !closedAt.isEmpty else { return earlierKeys }
        return earlierKeys.enumerated().compactMap { i, k in
            if let closed = closedAt[k.session], i < closed { return nil }
            return k
        }
    }

    /// Remembers the keys kept from before a reload in the sessions that came through it.
    private func adopt(_ keys: [(session: String, key: String, reply: Result<JSONText, NavError>, logged: Bool)], into byName: [String: Session]) {
        for k in keys { byName[k.session]?.remember(key: k.key, k.reply) }
    }

    /// The report's lines on the logs.
    private func report(_ scans: [LogScan], _ c: Counted) {
        for s in scans where !s.records.isEmpty {
            restoreReport.append("\(s.path): \(s.records.count) records read\(s.firstFormat ? " (first format, converted)" : "")")
        }
        guard !c.kinds.isEmpty else { return }
        let kinds = c.kinds.keys.sorted().map { "\(c.kinds[$0]!) \($0)" }.joined(separator: ", ")
        let listed = c.order.prefix(20).map { name in
            let v = c.versions[name]!
            return v.from == v.to ? "\(name) v\(v.to)" : "\(name) v\(v.from)→v\(v.to)"
        }
        restoreReport.append("replayed \(kinds) for \(c.order.count) sessions: " + listed.joined(separator: ", ") + (c.order.count > 20 ? ", and \(c.order.count - 20) more" : ""))
    }

    /// A record's payload, parsed.
    private func record(_ bytes: [UInt8], _ payload: Range<Int>, _ parser: JSONParser) throws(NavError) -> JSONValue {
        try saved.parse(parser, bytes[payload], "a log record")
    }

    /// The session a record is about, whatever its kind (nil: a reload, or not a record).
    private static func session(of p: JSONValue) -> String? { (p["c"] ?? p["s"] ?? p["f"] ?? p["k"] ?? p["x"])?.stringValue }

    private static func starts(_ bytes: [UInt8], _ payload: Range<Int>, with prefix: StaticString) -> Bool {
        guard payload.count >= prefix.utf8CodeUnitCount else { return false }
        return prefix.withUTF8Buffer { p in p.indices.allSatisfy { bytes[payload.lowerBound + $0] == p[$0] } }
    }

    /// A log record's members, found in one pass over its payload read in place (valid until the
    /// parser parses again): a restart reads every record since the last compaction.
    private struct RecordMembers {
        let record: JSONView
        var c, s, f, k, x, v, n, t, o, r, l, cc, ch, key, set, facts, layout: JSONView?

        private init(record: JSONView) { self.record = record }

        init(_ record: JSONView) {
            var m = RecordMembers(record: record)
            record.forEachMember { key, value in
                switch key.count {
                case 1:
                    switch key.first {
                    case UInt8(ascii: "c"): m.c = value
                    case UInt8(ascii: "s"): m.s = value
                    case UInt8(ascii: "f"): m.f = value
                    case UInt8(ascii: "k"): m.k = value
                    case UInt8(ascii: "x"): m.x = value
                    case UInt8(ascii: "v"): m.v = value
                    case UInt8(ascii: "n"): m.n = value
                    case UInt8(ascii: "t"): m.t = value
                    case UInt8(ascii: "o"): m.o = value
                    case UInt8(ascii: "r"): m.r = value
                    case UInt8(ascii: "l"): m.l = value
                    default: break
                    }
                case 2 where key.equals("cc"): m.cc = value
                case 2 where key.equals("ch"): m.ch = value
                case 3 where key.equals("key"): m.key = value
                case 3 where key.equals("set"): m.set = value
                case 5 where key.equals("facts"): m.facts = value
                case 6 where key.equals("layout"): m.layout = value
                default: break
                }
            }
            self = m
        }
    }

    /// Applies one record to the sessions being restored; answers the session it is about (nil: a
    /// record of a session `--repair` set aside, dropped). Values copied out of the record take
    /// their object keys from `keys`.
    private func apply(_ p: RecordMembers, keys: StringCache, graph: NavigationGraph, byName: inout [String: Session], order: inout [String],
                       setAside: inout Set<String>) throws(NavError) -> String? {
        if let name = p.c?.string {
            if setAside.contains(name) { return nil }
            guard let s = byName[name] else { throw NavError(.corruptState, "a commit of session \"\(name)\", which is not open") }
            let compact = p.cc
            guard let v = p.v?.int, let n = p.n?.int, let changes = compact ?? p.ch else {
                throw NavError(.corruptState, "a commit record of session \"\(name)\" lacks its version, id counter or changes")
            }
            if v <= s.version { return name }  // the snapshot holds it already
            try s.replay(changes: changes.value(keys: keys), compact: compact != nil, version: v, nextId: n)
            return name
        }
        if let name = p.s?.string {
            guard let v = p.v?.int, let n = p.n?.int, let tree = p.t, let facts = p.f else {
                throw NavError(.corruptState, "a state record of session \"\(name)\" lacks its version, id counter, tree or facts")
            }
            let old = byName[name]
            if let old, v < old.version { return name }
            let s = try Session(restoring: name, graph: graph, root: tree, version: v, nextId: n, facts: facts.value(keys: keys),
                                limits: saved.limits, keys: keys)
            if let o = p.o?.int {
                guard let uid = UInt32(exactly: o) else { throw NavError(.corruptState, "owner \(o) of session \"\(name)\" is not a uid") }
                s.owner = uid
            }
            setAside.remove(name)
            if let old { s.adoptKeys(of: old) } else {
                if let problem = counts.admit(s) { throw NavError(.limitExceeded, problem) }
                order.append(name)
            }
            byName[name] = s
            return name
        }
        if let name = p.f?.string {
            if setAside.contains(name) { return nil }
            guard let s = byName[name], p.set != nil || p.facts != nil else {
                throw NavError(.corruptState, "a facts record of session \"\(name)\" holds neither \"set\" nor \"facts\", or its session is not open")
            }
            if let set = p.set { try s.replayFactChanges(set.value(keys: keys)) } else if let facts = p.facts { try s.replayFacts(facts.value(keys: keys)) }
            return name
        }
        if let name = p.k?.string {
            if setAside.contains(name) { return nil }
            guard let s = byName[name], let key = p.key?.string, let text = p.r?.string,
                  let reply = KeyedReply.decode(text: text, parser: replyParser) else {
                throw NavError(.corruptState, "a key record of session \"\(name)\" is not whole, or its session is not open")
            }
            s.remember(key: key, reply)
            unsnapshotted.remember(s, key: key, reply: reply)
            return name
        }
        if let name = p.x?.string {
            setAside.remove(name)
            if let gone = byName[name] { counts.remove(gone) }
            byName[name] = nil
            // Its row and keys leave the snapshot, before a session opened again under the name is written.
            unsnapshotted.close(name)
            return name
        }
        throw NavError(.corruptState, "a record of an unknown kind")
    }
}
