/// What the sessions of one uid hold (their setup models with their histories, and their facts,
/// as JSON bytes): a session given an account (``Session/account``) adds what it holds, brings it
/// up to date at each commit and change of facts (``Session/syncAccount()``), and gives it back
/// when it leaves the account. The server's `--max-data-bytes` is held against their total and shared
/// between uids by them.
public final class DataAccount {
    public let uid: UInt32
    /// The pool's totals: a strong `let`, which costs nothing to read (an `unowned` pool would
    /// cost a checked retain at each change).
    let totals: DataTotals
    public private(set) var bytes = 0

    init(uid: UInt32, totals: DataTotals) {
        self.uid = uid
        self.totals = totals
    }

    @inline(__always)
    func add(_ delta: Int) {
        bytes += delta
        totals.total += delta
    }
}

/// The total of every account of a pool.
@usableFromInline final class DataTotals {
    @usableFromInline var total = 0
    init() {}
}

/// Every uid's ``DataAccount`` and their total, in constant time; how many hold any, by a walk of
/// the accounts (one per uid that opened a session), asked only once the total is near its ceiling.
public final class DataPool {
    @usableFromInline let totals = DataTotals()
    private var accounts: [UInt32: DataAccount] = [:]

    public init() {}

    @inlinable public var total: Int { totals.total }
    /// Uids whose sessions hold any bytes.
    public var holders: Int { accounts.values.reduce(0) { $0 + ($1.bytes != 0 ? 1 : 0) } }

    /// The account of `uid`, made the first time it is asked for.
    public func account(for uid: UInt32) -> DataAccount {
        if let a = accounts[uid] { return a }
        let a = DataAccount(uid: uid, totals: totals)
        accounts[uid] = a
        return a
    }

    /// What the sessions of `uid` hold.
    public func bytes(of uid: UInt32) -> Int { accounts[uid]?.bytes ?? 0 }
}
