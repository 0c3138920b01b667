/// What the sessions of one uid hold (their setup models with their histories, and their facts,
/// as JSON bytes), kept as they change: a session given an account (``Session/account``) adds to it
/// whatever its `paramsBytes` and `factsBytes` gain, and gives it back as they shrink or when it
/// leaves the account. The server's `--max-data-bytes` is held against their total and shared between uids by them.
public final class DataAccount {
    public let uid: UInt32
    unowned let pool: DataPool
    public private(set) var bytes = 0

    init(uid: UInt32, pool: DataPool) {
        self.uid = uid
        self.pool = pool
    }

    @inline(__always)
    func add(_ delta: Int) {
        guard delta != 0 else { return }
        let before = bytes
        bytes += delta
        pool.changed(by: delta, from: before, to: bytes)
    }
}

/// Every uid's ``DataAccount``, their total and how many hold any: each in constant time.
public final class DataPool {
    public private(set) var total = 0
    /// Uids whose sessions hold any bytes.
    public private(set) var holders = 0
    private var accounts: [UInt32: DataAccount] = [:]

    public init() {}

    /// The account of `uid`, made the first time it is asked for.
    public func account(for uid: UInt32) -> DataAccount {
        if let a = accounts[uid] { return a }
        let a = DataAccount(uid: uid, pool: self)
        accounts[uid] = a
        return a
    }

    /// What the sessions of `uid` hold.
    public func bytes(of uid: UInt32) -> Int { accounts[uid]?.bytes ?? 0 }

    fileprivate func changed(by delta: Int, from before: Int, to after: Int) {
        total += delta
        if before == 0 && after != 0 { holders += 1 } else if before != 0 && after == 0 { holders -= 1 }
    }
}
