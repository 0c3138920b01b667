/// A fixed number of counters in one allocation, added to without a bounds or uniqueness check: the
/// owner computes every index from its own bounds (navigation coverage counts on the commit path,
/// where an array's checks cost as much as the counting). Zeroed when made, freed with it.
public final class Counters {
    @usableFromInline let base: UnsafeMutablePointer<Int>
    public let count: Int

    public init(count: Int) {
        self.count = max(count, 1)
        base = .allocate(capacity: self.count)
        base.initialize(repeating: 0, count: self.count)
    }

    /// Counters followed by `constants` (tables the owner reads with ``read(_:)``), in one allocation.
    public init(count: Int, then constants: [Int]) {
        self.count = max(count, 1) + constants.count
        base = .allocate(capacity: self.count)
        base.initialize(repeating: 0, count: max(count, 1))
        (base + max(count, 1)).initialize(from: constants, count: constants.count)
    }

    deinit { base.deallocate() }

    /// Adds one to counter `i`, which the caller keeps within `0..<count`.
    @inlinable @inline(__always)
    public func add(_ i: Int) { base[i] &+= 1 }

    /// Counter `i`, unchecked: the caller keeps `i` within `0..<count`.
    @inlinable @inline(__always)
    public func read(_ i: Int) -> Int { base[i] }

    /// Counter `i`, checked (reports and restores, off the commit path).
    public subscript(i: Int) -> Int {
        get {
            precondition(i >= 0 && i < count, "counter \(i) of \(count)")
            return base[i]
        }
        set {
            precondition(i >= 0 && i < count, "counter \(i) of \(count)")
            base[i] = newValue
        }
    }
}
