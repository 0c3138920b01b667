import JSON
import UV

#if canImport(Glibc)
import Glibc
#endif

/// What held navd's loop longest, as Redis's `SLOWLOG`: every read whose handling took
/// `--slowlog-threshold` or more (from the read to the end of the answers it gave; meanwhile no
/// other client was served) is kept, the newest `--slowlog-max-len`, for `slowlog.get`, and so is
/// work outside reads that took as long (a timer's, a child's exit, a signal's, the end of an
/// iteration that stores commits and writes output: ``UV/StallWatch``). A read is the unit because
/// its requests are handled together (a pipelining client's, a batch's) and their answers leave
/// together; each entry names the methods it answered and how many times.
///
/// Its cost on the request path is one comparison a read: the read's time is the one its answers'
/// latencies already take (``Dispatcher/settleAnswers(readBy:)``); other callbacks cost two clock
/// reads each, and an iteration's end two.
final class SlowLog {
    /// One read, or other work of the loop, that held it.
    struct Entry {
        let id: Int
        /// When it ended, in seconds since 1970 (UTC).
        let at: Double
        let ns: UInt64
        /// A client's read (`kind` "read"), or nil for work outside reads.
        let read: Read?
        /// Outside reads: the kind of libuv handle whose callback it was (`timer`, `signal`,
        /// `process`, `poll`, `fs_event`, `check`, `listener`), or `flush` (the end of an iteration:
        /// commits stored, output written, a slice of the store's background work)…
        let kind: String
        /// …and what navd used it for.
        let what: String?
    }

    /// A slow read: the client's, and what it carried.
    struct Read {
        let connection: Int
        let client: String?
        let uid: UInt32?
        let answers: Int
        /// Replies to navd's own requests it carried (a provider's answers).
        let responses: Int
        /// The methods it answered, with how many times, most answered first (at most
        /// ``methodsMost``).
        let methods: [(name: String, count: Int)]
    }

    /// The most methods named per entry (a read of a batch may answer up to `--max-batch` requests of
    /// every method).
    static let methodsMost = 8

    /// Reads that take at least this long are kept (`--slowlog-threshold`)…
    let thresholdNs: UInt64
    /// …which dispatch compares each read's time with: `UInt64.max` when none are kept
    /// (`--slowlog-max-len 0`).
    var effectiveThresholdNs: UInt64 { maxLen > 0 ? thresholdNs : .max }
    let maxLen: Int
    /// The kept entries, oldest first, in a ring of at most ``maxLen``.
    private var ring: [Entry] = []
    private var start = 0
    /// Slow reads since navd started (`slowlog.reset` forgets entries, not this): the next entry's id.
    private(set) var total = 0
    /// Slow reads not logged yet: the log says one line a second at most, with how many it left out.
    private var unlogged = 0
    private var loggedAt: UInt64 = 0

    init(thresholdNs: UInt64, maxLen: Int) {
        self.thresholdNs = thresholdNs
        self.maxLen = maxLen
    }

    var count: Int { ring.count }

    /// Keeps a slow read; answers whether it should be logged now (at most once a second), and how
    /// many slow reads were left out of the log since the last line.
    func record(_ make: (_ id: Int, _ at: Double) -> Entry, now: UInt64) -> (log: Bool, leftOut: Int) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let entry = make(total, Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9)
        total += 1
        if ring.count < maxLen {
            ring.append(entry)
        } else {
            ring[start] = entry
            start = (start + 1) % maxLen
        }
        guard loggedAt == 0 || now &- loggedAt >= 1_000_000_000 else {
            unlogged += 1
            return (false, 0)
        }
        loggedAt = now
        defer { unlogged = 0 }
        return (true, unlogged)
    }

    /// The kept entries, newest first, from the newest whose id is below `before` (nil: the newest).
    func newest(before: Int? = nil) -> some Sequence<Entry> {
        // Kept entries' ids are consecutive, the newest `total - 1`.
        let skip = before.map { max(0, total - $0) } ?? 0
        return (min(skip, ring.count)..<ring.count).lazy.map { i in self.ring[(self.start + self.ring.count - 1 - i) % self.ring.count] }
    }

    /// Forgets every entry; answers how many there were.
    func reset() -> Int {
        let n = ring.count
        ring = []
        start = 0
        return n
    }

    /// An entry as `slowlog.get` answers it.
    static func object(_ e: Entry) -> JSONValue {
        var o: JSONObject = [
            "id": .int(e.id), "at": .double((e.at * 1000).rounded() / 1000), "ms": .double(Double(e.ns / 1_000) / 1_000),
            "kind": .string(e.kind),
        ]
        if let what = e.what { o["what"] = .string(what) }
        guard let r = e.read else { return .object(o) }
        o["connection"] = .int(r.connection)
        if let c = r.client { o["client"] = .string(c) }
        if let u = r.uid { o["uid"] = .int(Int(u)) }
        o["answers"] = .int(r.answers)
        o["responses"] = .int(r.responses)
        o["methods"] = .object(JSONObject(r.methods.map { ($0.name, JSONValue.int($0.count)) }))
        return .object(o)
    }
}
