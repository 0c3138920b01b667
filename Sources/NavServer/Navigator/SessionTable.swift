import NavigationCore
#if canImport(Glibc)
import Glibc
#endif

/// The navigator's sessions by name, with how many each uid opened (navd's own uid for those
/// nobody opened) kept as sessions come and go (`byUid`): `session.open` looks its uid's count up instead of
/// counting every session (which made opening N sessions quadratic), and their names in the order
/// they were opened, so `session.list` answers a page at a time for the cost of the page.
struct SessionTable {
    private(set) var byName: [String: SessionState] = [:]
    private(set) var byUid = UidCounts()
    /// What each uid's sessions hold, in bytes (``DataAccount``): `--max-data-bytes` is shared by it.
    let data: DataPool
    /// Names by the sequence number each session got when it was opened; a closed session leaves a
    /// hole (an empty name: names are never empty), squeezed out once holes outnumber names.
    private var order: [(seq: Int, name: String)] = []
    private var holes = 0
    private var nextSeq = 1

    subscript(name: String) -> SessionState? {
        get { byName[name] }
        set {
            let old = byName[name]
            if let old { uncount(old) }
            if let new = newValue {
                let uid = SessionTable.uid(of: new)
                byUid.add(uid)
                new.session.account = data.account(for: uid)
                if let old, old.listSeq != 0 {
                    new.listSeq = old.listSeq
                } else {
                    new.listSeq = nextSeq
                    nextSeq += 1
                    order.append((new.listSeq, name))
                }
            } else if let old {
                unlist(old)
            }
            byName[name] = newValue
        }
    }

    @discardableResult
    mutating func removeValue(forKey name: String) -> SessionState? {
        guard let old = byName.removeValue(forKey: name) else { return nil }
        uncount(old)
        unlist(old)
        return old
    }

    /// Up to `limit` names of sessions opened after sequence number `after` (0: from the first), and
    /// the number to go on from when there may be more.
    func page(after: Int, limit: Int) -> (names: [String], next: Int?) {
        var lo = 0, hi = order.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if order[mid].seq <= after { lo = mid + 1 } else { hi = mid }
        }
        var names: [String] = []
        var last = after
        var i = lo
        while i < order.count && names.count < limit {
            if !order[i].name.isEmpty {
                names.append(order[i].name)
                last = order[i].seq
            }
            i += 1
        }
        return (names, names.count == limit && i < order.count ? last : nil)
    }

    /// Leaves a hole where `s` was listed.
    private mutating func unlist(_ s: SessionState) {
        var lo = 0, hi = order.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if order[mid].seq < s.listSeq { lo = mid + 1 } else { hi = mid }
        }
        guard lo < order.count, order[lo].seq == s.listSeq, !order[lo].name.isEmpty else { return }
        order[lo].name = ""
        holes += 1
        if holes > 1024 && holes > order.count - holes {
            order.removeAll { $0.name.isEmpty }
            holes = 0
        }
    }

    var count: Int { byName.count }
    var keys: Dictionary<String, SessionState>.Keys { byName.keys }
    var values: Dictionary<String, SessionState>.Values { byName.values }

    private mutating func uncount(_ s: SessionState) {
        byUid.remove(SessionTable.uid(of: s))
        s.session.account = nil
    }

    init(data: DataPool) { self.data = data }

    private static func uid(of s: SessionState) -> UInt32 { s.session.owner ?? getuid() }
}
