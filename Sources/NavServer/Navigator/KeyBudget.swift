import JSON
import NavigationCore
#if canImport(Glibc)
import Glibc
#endif

/// The replies of keyed navigations kept for one uid's sessions (their owner's; navd's own uid for
/// those nobody opened), counted together: past `--max-keys-per-uid` or `--max-key-bytes-per-uid`
/// the uid's oldest key is forgotten, whichever of its sessions keeps it (each session also keeps
/// to its own 4,096 keys and 1 MiB, ``Session/maxKeys``). The queue names each key by its session
/// and number; an entry whose key its session already forgot is skipped.
struct KeyBudget {
    struct Uid {
        var count = 0
        var bytes = 0
        var queue: [(state: SessionState, seq: Int)] = []
        var head = 0
    }

    private(set) var byUid: [UInt32: Uid] = [:]

    /// Remembers `key` in `state`'s session, then forgets the uid's oldest keys past the limits.
    mutating func remember(_ state: SessionState, key: String, _ reply: Result<JSONText, NavError>, limits: NavigatorLimits) {
        let s = state.session
        let (count, bytes) = (s.keyed.count, s.keyBytes)
        s.remember(key: key, reply)
        let uid = s.owner ?? getuid()
        var u = byUid[uid] ?? Uid()
        u.count += s.keyed.count - count
        u.bytes += s.keyBytes - bytes
        u.queue.append((state, s.keySeq - 1))
        trim(&u, limits: limits)
        byUid[uid] = u
    }

    /// Counts in the keys of a session restored or rebuilt (oldest first).
    mutating func adopt(_ state: SessionState, limits: NavigatorLimits) {
        let s = state.session
        guard !s.keyed.isEmpty else { return }
        let uid = s.owner ?? getuid()
        var u = byUid[uid] ?? Uid()
        u.count += s.keyed.count
        u.bytes += s.keyBytes
        for seq in s.oldestKeySeq..<s.keySeq { u.queue.append((state, seq)) }
        trim(&u, limits: limits)
        byUid[uid] = u
    }

    /// A session closed: its keys no longer count.
    mutating func closed(_ state: SessionState) {
        let s = state.session
        let uid = s.owner ?? getuid()
        guard var u = byUid[uid] else { return }
        u.count -= s.keyed.count
        u.bytes -= s.keyBytes
        byUid[uid] = u.count > 0 ? u : nil
    }

    private func live(_ e: (state: SessionState, seq: Int)) -> Bool {
        !e.state.isClosed && e.seq >= e.state.session.oldestKeySeq
    }

    private func trim(_ u: inout Uid, limits: NavigatorLimits) {
        while u.count > limits.maxKeysPerUid || u.bytes > limits.maxKeyBytesPerUid, u.head < u.queue.count {
            let e = u.queue[u.head]
            u.head += 1
            guard live(e) else { continue }
            u.count -= 1
            u.bytes -= e.state.session.forgetOldestKey()
        }
        // Entries of keys forgotten by their own session, or of closed sessions, are dropped in bulk.
        if u.head >= 1024 && u.head * 2 >= u.queue.count {
            u.queue.removeFirst(u.head)
            u.head = 0
        }
        if u.queue.count - u.head > 2 * u.count + 1024 {
            u.queue = u.queue[u.head...].filter(live)
            u.head = 0
        }
    }
}
