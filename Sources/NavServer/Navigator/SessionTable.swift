import NavigationCore
#if canImport(Glibc)
import Glibc
#endif

/// The navigator's sessions by name, with how many each uid opened (navd's own uid for those
/// nobody opened) kept as sessions come and go: `session.open` looks its uid's count up instead of
/// counting every session (which made opening N sessions quadratic).
struct SessionTable {
    private(set) var byName: [String: SessionState] = [:]
    private(set) var byUid = UidCounts()

    subscript(name: String) -> SessionState? {
        get { byName[name] }
        set {
            if let old = byName[name] { uncount(old) }
            if let new = newValue { byUid.add(SessionTable.uid(of: new)) }
            byName[name] = newValue
        }
    }

    @discardableResult
    mutating func removeValue(forKey name: String) -> SessionState? {
        guard let old = byName.removeValue(forKey: name) else { return nil }
        uncount(old)
        return old
    }

    /// Sessions `uid` opened.
    func opened(by uid: UInt32) -> Int { byUid[uid] }

    var count: Int { byName.count }
    var keys: Dictionary<String, SessionState>.Keys { byName.keys }
    var values: Dictionary<String, SessionState>.Values { byName.values }

    private mutating func uncount(_ s: SessionState) {
        byUid.remove(SessionTable.uid(of: s))
    }

    private static func uid(of s: SessionState) -> UInt32 { s.session.owner ?? getuid() }
}
