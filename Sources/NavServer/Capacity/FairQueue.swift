/// Work waiting its turn, one queue per uid, served uid by uid in turn (round robin): one user who
/// queues thousands of jobs delays only itself, as systemd's per-user slices share the CPU. A job
/// leaves when it is taken (``pop(where:)``) or withdrawn (``remove(_:)``), each in constant time
/// (amortised), so a client that queues and withdraws over and over cannot grow it.
struct FairQueue<Job> {
    /// Where a job waits, to withdraw it.
    struct Ticket: Hashable {
        let uid: UInt32
        let seq: Int
    }

    /// One uid's jobs by sequence number; `head` is the oldest that may still be there.
    private struct Line {
        var jobs: [Int: Job] = [:]
        var head = 0
        var tail = 0

        /// Adds a job; its sequence number.
        mutating func push(_ job: Job) -> Int {
            jobs[tail] = job
            tail += 1
            return tail - 1
        }

        /// Takes the oldest job still waiting.
        mutating func takeOldest() -> Job? {
            while head < tail {
                head += 1
                if let job = jobs.removeValue(forKey: head - 1) { return job }
            }
            return nil
        }
    }

    /// Each uid's line, changed where it is (`lines[uid, default:]`, `lines[uid]?.`): a `Line` copied
    /// out would share its jobs with the dictionary's, and the next change would copy them all.
    private var lines: [UInt32: Line] = [:]
    /// The uids with waiting jobs, in turn; `turn` is the next to be served.
    private var ring: [UInt32] = []
    private var turn = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Jobs of `uid` waiting.
    func count(of uid: UInt32) -> Int { lines[uid]?.jobs.count ?? 0 }

    mutating func append(_ job: Job, uid: UInt32) -> Ticket {
        if lines[uid]?.jobs.isEmpty ?? true { ring.append(uid) }
        let seq = lines[uid, default: Line()].push(job)
        count += 1
        return Ticket(uid: uid, seq: seq)
    }

    /// Withdraws a waiting job; false if it is not waiting (taken or withdrawn already).
    @discardableResult
    mutating func remove(_ t: Ticket) -> Bool {
        guard lines[t.uid]?.jobs.removeValue(forKey: t.seq) != nil else { return false }
        count -= 1
        if lines[t.uid]!.jobs.isEmpty { drop(t.uid) }
        return true
    }

    /// Whether a job of a uid for which `allowed` holds waits.
    func hasJob(where allowed: (UInt32) -> Bool) -> Bool { ring.contains(where: allowed) }

    /// The oldest job of the next uid in turn for which `allowed` holds; nil when none may go now.
    mutating func pop(where allowed: (UInt32) -> Bool) -> Job? {
        var tried = 0
        while tried < ring.count {
            if turn >= ring.count { turn = 0 }
            let uid = ring[turn]
            tried += 1
            guard allowed(uid), let job = lines[uid]?.takeOldest() else {
                turn += 1
                continue
            }
            count -= 1
            if lines[uid]?.jobs.isEmpty ?? true { drop(uid) } else { turn += 1 }
            return job
        }
        return nil
    }

    private mutating func drop(_ uid: UInt32) {
        lines[uid] = nil
        if let i = ring.firstIndex(of: uid) {
            ring.remove(at: i)
            if turn > i { turn -= 1 }
        }
    }
}
