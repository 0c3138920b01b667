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

        private static func live(_ e: (state: SessionState, seq: Int)) -> Bool {
            !e.state.isClosed && e.seq >= e.state.session.oldestKeySeq
        }

        /// Counts in `count` keys and `bytes` of `state`'s session, numbered `seqs`, then forgets the
        /// uid's oldest keys past the limits.
        mutating func add(_ state: SessionState, seqs: Range<Int>, count: Int, bytes: Int, limits: NavigatorLimits) {
            self.count += count
            self.bytes += bytes
            for seq in seqs { queue.append((state, seq)) }
            trim(limits: limits)
        }

        /// Forgets the oldest keys past the limits; drops the entries of keys already forgotten.
        private mutating func trim(limits: NavigatorLimits) {
            while count > limits.maxKeysPerUid || bytes > limits.maxKeyBytesPerUid, head < queue.count {
                let e = queue[head]
                head += 1
                guard Self.live(e) else { continue }
                count -= 1
                bytes -= e.state.session.forgetOldestKey()
            }
            // Entries of keys forgotten by their own session, or of closed sessions, are dropped in bulk.
            if head >= 1024 && head * 2 >= queue.count {
                queue.removeFirst(head)
                head = 0
            }
            if queue.count - head > 2 * count + 1024 {
                queue = queue[head...].filter(Self.live)
                head = 0
            }
        }
    }

    /// Each uid's count, changed where it is (`byUid[uid, default:]`, `removeValue`): a `Uid` copied
    /// out would share its queue with the dictionary's, and the next append would copy the whole queue.
    private(set) var byUid: [UInt32: Uid] = [:]

    /// Remembers `key` in `state`'s session, then forgets the uid's oldest keys past the limits.
    mutating func remember(_ state: SessionState, key: String, _ reply: Result<JSONText, NavError>, limits: NavigatorLimits) {
        let s = state.session
        let (count, bytes) = (s.keyed.count, s.keyBytes)
        s.remember(key: key, reply)
        byUid[s.owner ?? getuid(), default: Uid()].add(state, seqs: s.keySeq - 1..<s.keySeq, count: s.keyed.count - count,
                                                       bytes: s.keyBytes - bytes, limits: limits)
    }

    /// Counts in the keys of a session restored or rebuilt (oldest first).
    mutating func adopt(_ state: SessionState, limits: NavigatorLimits) {
        let s = state.session
        guard !s.keyed.isEmpty else { return }
        byUid[s.owner ?? getuid(), default: Uid()].add(state, seqs: s.oldestKeySeq..<s.keySeq, count: s.keyed.count,
                                                       bytes: s.keyBytes, limits: limits)
    }

    /// A session closed: its keys no longer count.
    mutating func closed(_ state: SessionState) {
        let s = state.session
        let uid = s.owner ?? getuid()
        guard var u = byUid.removeValue(forKey: uid) else { return }
        u.count -= s.keyed.count
        u.bytes -= s.keyBytes
        if u.count > 0 { byUid[uid] = u }
    }
}
