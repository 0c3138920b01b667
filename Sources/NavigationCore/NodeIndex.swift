import JSON
import NavGraph

/// `prefix` followed by `n` in decimal (node and navigation ids), without string interpolation's
/// generic machinery: ids are made on every navigation.
public func prefixedDecimal(_ prefix: StaticString, _ n: Int) -> String {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 40) { buf in
        let p = prefix.utf8CodeUnitCount
        buf.baseAddress!.update(from: prefix.utf8Start, count: p)
        var v = n.magnitude
        var digits = 0
        repeat {
            digits += 1
            v /= 10
        } while v > 0
        var at = p + (n < 0 ? 1 : 0)
        if n < 0 { buf[p] = UInt8(ascii: "-") }
        at += digits
        v = n.magnitude
        repeat {
            at -= 1
            buf[at] = UInt8(ascii: "0") + UInt8(v % 10)
            v /= 10
        } while v > 0
        return String(decoding: UnsafeBufferPointer(rebasing: buf[0..<(p + (n < 0 ? 1 : 0) + digits)]), as: UTF8.self)
    }
}

/// The nodes of a tree by id. Ids are the ones ``Session`` makes ("n" and a number), so the index is
/// keyed by the number: hashing an integer is much cheaper than hashing a string, and every
/// navigation looks nodes up, adds some and removes others. A string that is not such an id finds
/// nothing.
///
/// Open addressing with linear probing (Fibonacci hashing: node numbers are consecutive, and a
/// multiply spreads them), at most half full, in storage of its own: keys are compared without
/// touching the nodes, and the nodes are held unretained — the tree holds every node it lists (a
/// node is in the index exactly while it is in the tree), so probing counts no references.
final class NodeIndex {
    /// Each slot's node number + 1 (0: empty), and its node.
    private var keys: UnsafeMutablePointer<Int>
    private var nodes: UnsafeMutablePointer<Unmanaged<Node>?>
    private var capacity = 16
    private var shift = 60  // 64 - log2(capacity)
    private var used = 0

    init() {
        keys = .allocate(capacity: 16)
        keys.initialize(repeating: 0, count: 16)
        nodes = .allocate(capacity: 16)
        nodes.initialize(repeating: nil, count: 16)
    }

    deinit {
        keys.deallocate()
        nodes.deallocate()
    }

    /// The number of an id made by ``Session/newId()``: "n", then digits without a leading zero.
    static func number(_ id: String) -> Int? {
        var s = id
        return s.withUTF8 { b -> Int? in
            guard b.count >= 2, b.count <= 19, b[0] == UInt8(ascii: "n"), b[1] != UInt8(ascii: "0") || b.count == 2 else { return nil }
            var n = 0
            for i in 1..<b.count {
                let d = b[i] &- UInt8(ascii: "0")
                guard d < 10 else { return nil }
                n = n * 10 + Int(d)
            }
            return n
        }
    }

    @inline(__always) private func home(_ number: Int) -> Int {
        Int(truncatingIfNeeded: (UInt64(truncatingIfNeeded: number) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    /// The slot holding `number`, or nil.
    @inline(__always)
    private func slot(of number: Int) -> Int? {
        let mask = capacity &- 1
        let key = number &+ 1
        var i = home(number)
        while keys[i] != 0 {
            if keys[i] == key { return i }
            i = (i &+ 1) & mask
        }
        return nil
    }

    subscript(id: String) -> Node? {
        guard let k = Self.number(id) else { return nil }
        return self[number: k]
    }

    subscript(number k: Int) -> Node? {
        guard k >= 0, let i = slot(of: k) else { return nil }
        return nodes[i]!._withUnsafeGuaranteedRef { $0 }
    }

    func insert(_ n: Node) {
        guard n.number >= 0 else { return }
        if (used + 1) * 2 > capacity { grow() }
        let mask = capacity &- 1
        let key = n.number &+ 1
        var i = home(n.number)
        while keys[i] != 0 {
            if keys[i] == key {
                nodes[i] = Unmanaged.passUnretained(n)
                return
            }
            i = (i &+ 1) & mask
        }
        keys[i] = key
        nodes[i] = Unmanaged.passUnretained(n)
        used += 1
    }

    func remove(_ n: Node) {
        guard n.number >= 0, var i = slot(of: n.number) else { return }
        keys[i] = 0
        nodes[i] = nil
        used -= 1
        // Move later entries of the probe run back into the gap (no tombstones).
        let mask = capacity &- 1
        var j = i
        while true {
            j = (j &+ 1) & mask
            guard keys[j] != 0 else { return }
            let h = home(keys[j] &- 1)
            let stays = i <= j ? (i < h && h <= j) : (i < h || h <= j)
            if !stays {
                keys[i] = keys[j]
                nodes[i] = nodes[j]
                keys[j] = 0
                nodes[j] = nil
                i = j
            }
        }
    }

    private func grow() {
        let oldKeys = keys, oldNodes = nodes, oldCapacity = capacity
        capacity *= 2
        shift -= 1
        keys = .allocate(capacity: capacity)
        keys.initialize(repeating: 0, count: capacity)
        nodes = .allocate(capacity: capacity)
        nodes.initialize(repeating: nil, count: capacity)
        used = 0
        for i in 0..<oldCapacity where oldKeys[i] != 0 { oldNodes[i]!._withUnsafeGuaranteedRef { insert($0) } }
        oldKeys.deallocate()
        oldNodes.deallocate()
    }

    var count: Int { used }

    func removeAll() {
        keys.update(repeating: 0, count: capacity)
        nodes.update(repeating: nil, count: capacity)
        used = 0
    }
}
