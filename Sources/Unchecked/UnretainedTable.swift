/// Objects by a non-negative integer key, held without counting references: something else must
/// keep every listed object alive while it is listed (a session's tree holds the nodes its index
/// lists, and a node is listed exactly while it is in the tree).
///
/// Open addressing with linear probing (Fibonacci hashing: keys that are consecutive numbers are
/// spread by a multiply), at most half full, in storage of its own: keys are compared without
/// touching the objects, so probing counts no references. Removal moves later entries of a probe
/// run back into the gap (no tombstones).
public final class UnretainedTable<Element: AnyObject> {
    /// Each slot's key + 1 (0: empty), and its object.
    @usableFromInline var keys: UnsafeMutablePointer<Int>
    @usableFromInline var objects: UnsafeMutablePointer<Unretained<Element>?>
    @usableFromInline var capacity = 16
    @usableFromInline var shift = 60  // 64 - log2(capacity)
    @usableFromInline var used = 0

    public init() {
        keys = .allocate(capacity: 16)
        keys.initialize(repeating: 0, count: 16)
        objects = .allocate(capacity: 16)
        objects.initialize(repeating: nil, count: 16)
    }

    deinit {
        keys.deallocate()
        objects.deallocate()
    }

    @inlinable @inline(__always)
    func home(_ key: Int) -> Int {
        Int(truncatingIfNeeded: (UInt64(truncatingIfNeeded: key) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    /// The slot holding `key`, or nil.
    @inlinable @inline(__always)
    func slot(of key: Int) -> Int? {
        let mask = capacity &- 1
        let stored = key &+ 1
        var i = home(key)
        while keys[i] != 0 {
            if keys[i] == stored { return i }
            i = (i &+ 1) & mask
        }
        return nil
    }

    /// The object listed under `key`, or nil (also for a negative key).
    @inlinable
    public subscript(key: Int) -> Element? {
        guard key >= 0, let i = slot(of: key) else { return nil }
        return objects[i]!.with { $0 }
    }

    /// What `body` reads of the object listed under `key`, without counting a reference to it; nil
    /// when nothing is listed there.
    @inlinable
    public func read<T>(_ key: Int, _ body: (Element) -> T) -> T? {
        guard key >= 0, let i = slot(of: key) else { return nil }
        return objects[i]!.with(body)
    }

    /// Lists `object` under `key` (a negative key lists nothing), replacing what was listed there.
    @inlinable
    public func insert(_ object: Element, key: Int) {
        guard key >= 0 else { return }
        if (used + 1) * 2 > capacity { grow() }
        let mask = capacity &- 1
        let stored = key &+ 1
        var i = home(key)
        while keys[i] != 0 {
            if keys[i] == stored {
                objects[i] = Unretained(object)
                return
            }
            i = (i &+ 1) & mask
        }
        keys[i] = stored
        objects[i] = Unretained(object)
        used += 1
    }

    /// Removes what is listed under `key`, if anything.
    @inlinable
    public func remove(key: Int) {
        guard key >= 0, var i = slot(of: key) else { return }
        keys[i] = 0
        objects[i] = nil
        used -= 1
        let mask = capacity &- 1
        var j = i
        while true {
            j = (j &+ 1) & mask
            guard keys[j] != 0 else { return }
            let h = home(keys[j] &- 1)
            let stays = i <= j ? (i < h && h <= j) : (i < h || h <= j)
            if !stays {
                keys[i] = keys[j]
                objects[i] = objects[j]
                keys[j] = 0
                objects[j] = nil
                i = j
            }
        }
    }

    @usableFromInline
    func grow() {
        let oldKeys = keys, oldObjects = objects, oldCapacity = capacity
        capacity *= 2
        shift -= 1
        keys = .allocate(capacity: capacity)
        keys.initialize(repeating: 0, count: capacity)
        objects = .allocate(capacity: capacity)
        objects.initialize(repeating: nil, count: capacity)
        used = 0
        for i in 0..<oldCapacity where oldKeys[i] != 0 {
            oldObjects[i]!.with { insert($0, key: oldKeys[i] &- 1) }
        }
        oldKeys.deallocate()
        oldObjects.deallocate()
    }

    /// How many objects are listed.
    public var count: Int { used }

    public func removeAll() {
        keys.update(repeating: 0, count: capacity)
        objects.update(repeating: nil, count: capacity)
        used = 0
    }
}
