import JSON
import NavigationCore
import RPC
#if canImport(Glibc)
import Glibc
#endif

/// How much of one resource each uid holds, kept as it is taken and given back: the total, one
/// uid's part and how many uids hold any, each in constant time (no request counts by scanning).
struct UidCounts {
    private(set) var byUid: [UInt32: Int] = [:]
    private(set) var total = 0

    subscript(uid: UInt32) -> Int { byUid[uid] ?? 0 }

    /// Uids holding at least one.
    var users: Int { byUid.count }

    mutating func add(_ uid: UInt32, _ n: Int = 1) {
        byUid[uid, default: 0] += n
        total += n
    }

    mutating func remove(_ uid: UInt32, _ n: Int = 1) {
        let left = (byUid[uid] ?? n) - n
        byUid[uid] = left > 0 ? left : nil
        total -= n
    }
}

/// How uids share one capacity of navd (connections, sessions, pending navigations, command
/// children, a provider's requests): work-conserving, as the kernel's CPU shares are. One uid alone
/// may take all of it but a reserve (``reservePercent``, at least one); the reserve goes only to uids
/// holding less than an even split, so while one uid (or several) holds everything else, another
/// is still served. Work that waits for a share (command slots, provider requests) waits in a
/// ``FairQueue``, uid by uid in turn, so as running work ends the holders converge on even
/// parts. A hard per-uid cap (`--max-…-per-uid`) is there for operators who want one; it is off
/// by default, as PostgreSQL's per-role `CONNECTION LIMIT` is.
struct FairShare: Sendable {
    /// The part of every capacity kept for uids other than the heaviest.
    static let reservePercent = 10

    /// The whole capacity (`--max-connections`, `--max-sessions`, …).
    let limit: Int
    /// The hard per-uid cap, 0 for none.
    let cap: Int
    /// The options that set them, as refusals name them.
    let option: String
    let capOption: String

    init(limit: Int, cap: Int = 0, option: String, capOption: String) {
        self.limit = limit
        self.cap = cap
        self.option = option
        self.capOption = capOption
    }

    /// Kept back from the heaviest uid: 10 % of the limit, at least 1 when the limit allows one.
    var reserve: Int { limit < 2 ? 0 : max(1, limit * FairShare.reservePercent / 100) }

    /// What any one uid may hold whatever the others do.
    var open: Int { limit - reserve }

    enum Verdict: Equatable {
        case admitted
        /// Everything is taken.
        case full
        /// Only the reserve is left, and this uid holds an even share or more.
        case reserved
        /// The uid is at the per-uid cap.
        case capped
    }

    /// Whether `uid` may take one more of what `counts` holds; `freeing` are given back first (a
    /// navigation that supersedes another), `freeingOwn` of them the uid's own; `ahead` of the uid's
    /// are taken first (its jobs queued before this one).
    func verdict(for uid: UInt32, in counts: UidCounts, freeing: Int = 0, freeingOwn: Int = 0, ahead: Int = 0) -> Verdict {
        let total = counts.total - freeing + ahead
        let held = counts[uid] - freeingOwn + ahead
        if total >= limit { return .full }
        if cap > 0 && held >= cap { return .capped }
        if total < open { return .admitted }
        // In the reserve: only below an even split between the holders (this uid among them) and
        // one more, so a newcomer is never the one kept out.
        let others = counts.users - (counts[uid] > 0 ? 1 : 0)
        return held < limit / (others + 2) ? .admitted : .reserved
    }

    /// The error refusing `uid` one more of what `counts` holds (`verdict` is not `.admitted`),
    /// naming the option that sets the limit, what the uid holds and what to do; `what` is the
    /// plural noun ("sessions"), `advice` what the client can do about it.
    func refusal(_ v: Verdict, uid: UInt32, in counts: UidCounts, what: String, advice: String,
                 kind: ErrorKind = .limitExceeded) -> NavError {
        let held = counts[uid]
        switch v {
        case .admitted, .full:
            return NavError(kind, "navd holds \(counts.total) \(what), the most it keeps (the \(option) limit); \(advice)",
                            data: ["limit": .string(option), "max": .int(limit)])
        case .reserved:
            return NavError(kind, "uid \(uid) holds \(held) of navd's \(limit) \(what), and the last \(reserve) (\(FairShare.reservePercent) %) are kept for users holding less than an even share (the \(option) limit, shared between uids); \(advice)",
                            data: ["limit": .string(option), "max": .int(limit), "held": .int(held), "reserve": .int(reserve)])
        case .capped:
            return NavError(kind, "uid \(uid) holds \(held) \(what), the most one user may (the \(capOption) limit); \(advice)",
                            data: ["limit": .string(capOption), "max": .int(cap), "held": .int(held)])
        }
    }
}
