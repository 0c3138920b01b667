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
struct MemoryCeiling {
    let max: Int
    static let sampleEveryMs: UInt64 = 100
    private var sampledAt: UInt64 = 0
    private var sampled = false
    /// The heap in use when last read.
    private(set) var used = 0

    init(max: Int) { self.max = max }

    /// Whether the heap is past the ceiling, read again when the last reading is older than
    /// ``sampleEveryMs`` (`now`: the loop's time in milliseconds).
    @inline(__always)
    mutating func isPast(now: UInt64) -> Bool {
        if !sampled || now &- sampledAt >= Self.sampleEveryMs { read(now: now) }
        return used > max
    }

    @inline(never)
    private mutating func read(now: UInt64) {
        used = EventLoop.heapInUse
        sampledAt = now
        sampled = true
    }

    /// The refusal of `method`, which may add data.
    func refusal(_ method: String) -> RPCError {
        RPCError(.limitExceeded,
                 "navd holds \(Self.mib(used)) of data, past --max-memory (\(Self.mib(max))): `\(method)` may add more and is refused; nothing was done. "
                     + "Free memory by closing sessions (session.close) or dismissing screens (dismiss and reads still work), or start navd with a larger --max-memory",
                 data: ["limit": "--max-memory", "max": .int(max), "used": .int(used)])
    }

    private static func mib(_ bytes: Int) -> String {
        let tenths = bytes * 10 / (1 << 20)
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}
