import JSON
import NavigationCore
import RPC

/// `--max-data-bytes`: what every session's setup models (with their histories) and facts hold
/// together, as JSON, counted as they change (``DataPool``, one ``DataAccount`` per uid). As Redis's
/// `maxmemory` refuses the commands that may grow memory, past it a request that may add data (a
/// method declared `x-navd-grows`: navigate, open, reset, update, context.set, session.open) is
/// refused with `limitExceeded`, while one that removes data or only reads still runs, so clients can
/// free what they hold. Shared between uids as the other capacities are (``FairShare``): up to the
/// ceiling less a reserve of 10 % anyone adds; in the reserve, only uids whose sessions hold less
/// than an even split; past the ceiling, nobody. A request admitted under the line may pass it by
/// its own size. The per-session bounds keep one session small; this keeps all of them together
/// below what the machine has.
struct DataCeiling {
    let max: Int
    /// What each uid's sessions hold.
    let data: DataPool

    /// What anyone may add up to: the ceiling less its reserve.
    let open: Int
    let reserve: Int

    init(max: Int, data: DataPool) {
        self.max = max
        self.data = data
        reserve = max / 100 * FairShare.reservePercent
        open = max - reserve
    }

    /// Whether sessions hold more than anyone may add up to: only then is a request's uid looked at
    /// (``refuses(_:)``).
    @inline(__always)
    var isNear: Bool { data.total > open }

    /// Whether a request of `uid` that may add data is refused.
    func refuses(_ uid: UInt32?) -> Bool {
        data.total > open && (data.total > max || !isLight(uid))
    }

    /// Whether `uid`'s sessions hold less than an even split of all sessions' data (the uids
    /// holding some, plus one).
    func isLight(_ uid: UInt32?) -> Bool {
        guard let uid else { return false }
        return data.bytes(of: uid) < data.total / (data.holders + 1)
    }

    /// The refusal of `method`, which may add data, asked by `uid`.
    func refusal(_ method: String, uid: UInt32?) -> RPCError {
        let held = uid.map { data.bytes(of: $0) } ?? 0
        var fields: JSONObject = ["limit": "--max-data-bytes", "max": .int(max), "held": .int(held)]
        let past: String
        if data.total > max {
            past = "more than --max-data-bytes (\(Self.mib(max)))"
        } else {
            past = "within the last \(FairShare.reservePercent) % of --max-data-bytes (\(Self.mib(max))), kept for users whose sessions hold less than an even share; yours hold \(Self.mib(held))"
            fields["reserve"] = .int(reserve)
        }
        return RPCError(.limitExceeded,
                        "sessions hold \(Self.mib(data.total)) of setup models and facts, \(past): `\(method)` may add more and is refused; nothing was done. "
                            + "Free some by closing sessions (session.close) or dismissing screens (these and reads still work), or start navd with a larger --max-data-bytes",
                        data: fields)
    }

    private static func mib(_ bytes: Int) -> String {
        let tenths = bytes * 10 / (1 << 20)
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}
