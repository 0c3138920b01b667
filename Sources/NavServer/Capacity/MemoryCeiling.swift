import JSON
import NavigationCore
import RPC
import UV

/// `--max-memory`, as Redis's `maxmemory`: while the heap navd holds is past it, a request that may
/// add data (a method declared `x-navd-grows`: navigate, open, reset, update, context.set,
/// session.open, subscribe, provide) is refused with `limitExceeded`, and one that removes data or
/// only reads still runs, so clients can free what they hold. The per-session bounds keep one
/// session small; this keeps all of them together below what the machine has. The heap is read
/// (malloc's count, not the resident size, which keeps freed memory) at most every
/// ``sampleEveryMs``, when such a request comes: a request admitted below the line may pass it by
/// its own size.
///
/// Shared between uids as the other capacities are (``FairShare``), by what each uid's sessions
/// hold (``DataPool``): up to the ceiling less a reserve of 10 % anyone is served; in the reserve,
/// only uids whose sessions hold less than an even split of all sessions' data; past the ceiling,
/// nobody. So one uid that fills memory cannot keep another from navigating.
struct MemoryCeiling {
    let max: Int
    /// What each uid's sessions hold.
    let data: DataPool?
    static let sampleEveryMs: UInt64 = 100
    private var sampledAt: UInt64 = 0
    private var sampled = false
    /// The heap in use when last read.
    private(set) var used = 0

    /// How the heap in use is read: malloc's count (tests give another).
    private let readHeap: () -> Int

    init(max: Int, data: DataPool? = nil, readHeap: @escaping () -> Int = { EventLoop.heapInUse }) {
        self.max = max
        self.data = data
        self.readHeap = readHeap
    }

    /// The heap up to which anyone is served: the ceiling less its reserve.
    var open: Int { max - max / 100 * FairShare.reservePercent }

    /// Whether a request of `uid` that may add data is refused: the heap (read again when the last
    /// reading is older than ``sampleEveryMs``; `now`: the loop's time in milliseconds) is past
    /// the ceiling, or in its reserve while the uid's sessions hold an even split or more.
    @inline(__always)
    mutating func refuses(_ uid: UInt32?, now: UInt64) -> Bool {
        if !sampled || now &- sampledAt >= Self.sampleEveryMs { read(now: now) }
        guard used > open else { return false }
        return used > max || !isLight(uid)
    }

    /// Whether `uid`'s sessions hold less than an even split of all sessions' data (the uids
    /// holding some, plus one).
    func isLight(_ uid: UInt32?) -> Bool {
        guard let data, let uid else { return false }
        return data.bytes(of: uid) < data.total / (data.holders + 1)
    }

    @inline(never)
    private mutating func read(now: UInt64) {
        used = readHeap()
        sampledAt = now
        sampled = true
    }

    /// The refusal of `method`, which may add data, asked by `uid`.
    func refusal(_ method: String, uid: UInt32?) -> RPCError {
        var data: JSONObject = ["limit": "--max-memory", "max": .int(max), "used": .int(used)]
        let past: String
        if used > max {
            past = "past --max-memory (\(Self.mib(max)))"
        } else {
            past = "in the last \(FairShare.reservePercent) % of --max-memory (\(Self.mib(max))), kept for users whose sessions hold less than an even share, and yours hold \(Self.mib(self.data?.bytes(of: uid ?? 0) ?? 0))"
            data["held"] = .int(self.data?.bytes(of: uid ?? 0) ?? 0)
            data["reserve"] = .int(max / 100 * FairShare.reservePercent)
        }
        return RPCError(.limitExceeded,
                        "navd holds \(Self.mib(used)) of data, \(past): `\(method)` may add more and is refused; nothing was done. "
                            + "Free memory by closing sessions (session.close) or dismissing screens (dismiss and reads still work), or start navd with a larger --max-memory",
                        data: data)
    }

    private static func mib(_ bytes: Int) -> String {
        let tenths = bytes * 10 / (1 << 20)
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}
