/// How many unknown tokens `hello` takes from each uid: a short burst, then a steady few a second
/// (a generic cell rate, as a token bucket: one instant per uid). A uid past its rate is refused
/// without its token being looked at, so a local user guessing a policy's tokens tries
/// ``perSecond`` a second, not the hundreds of thousands a second `hello` answers at (460,000 on
/// one connection, BENCHMARKS.md): an eight-character random token then lasts years. Per uid, so one user's guessing never refuses another's token.
struct TokenGuesses {
    /// Unknown tokens a uid may give at once…
    static let burst = 20
    /// …and a second after that.
    static let perSecond = 10
    static var intervalMs: UInt64 { UInt64(1_000 / perSecond) }

    /// Per uid, the instant (loop milliseconds) by which its unknown tokens so far are paid for.
    private var paidBy: [UInt32: UInt64] = [:]
    /// Entries are dropped once paid for, when the table has doubled since it was last swept.
    private var sweepAt = 64

    /// How long `uid` must wait before a token of its is looked at (0: now).
    func wait(_ uid: UInt32, now: UInt64) -> UInt64 {
        guard let paid = paidBy[uid] else { return 0 }
        let allowance = UInt64(Self.burst - 1) * Self.intervalMs
        return paid > now + allowance ? paid - now - allowance : 0
    }

    /// `uid` gave a token the policy does not hold.
    mutating func failed(_ uid: UInt32, now: UInt64) {
        paidBy[uid] = max(paidBy[uid] ?? now, now) + Self.intervalMs
        if paidBy.count >= sweepAt {
            paidBy = paidBy.filter { $0.value > now }
            sweepAt = max(64, paidBy.count * 2)
        }
    }

    /// Uids with unknown tokens not yet paid for (for tests).
    var uids: Int { paidBy.count }
}
