/// Names fixed once built, found by the bytes a request carries: no `String` is made and nothing
/// is counted. The names lie back to back in memory of the table's own; ``index(of:)`` hashes the
/// key's length and three of its bytes into an open-addressing table of indices (at most half
/// full), then compares bytes once; ``matches(_:_:)`` compares with one name, for tables short
/// enough to scan.
public final class NameTable: @unchecked Sendable {
    /// The names' bytes, back to back.
    @usableFromInline let bytes: UnsafeMutableRawBufferPointer
    /// Each name's `length << 32 | start` in ``bytes``.
    @usableFromInline let spans: UnsafeMutableBufferPointer<UInt64>
    /// Hash → name index + 1 (0: empty).
    @usableFromInline let slots: UnsafeMutableBufferPointer<Int32>
    @usableFromInline let mask: Int

    public init(_ names: [String]) {
        let utf8 = names.map { Array($0.utf8) }
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: utf8.reduce(0) { $0 + $1.count }, alignment: 1)
        let spans = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: utf8.count)
        var at = 0
        for (i, b) in utf8.enumerated() {
            spans[i] = UInt64(b.count) << 32 | UInt64(at)
            b.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: bytes[at..<at + b.count]).copyMemory(from: $0) }
            at += b.count
        }
        var size = 64
        while size < utf8.count * 2 { size *= 2 }
        let mask = size - 1
        let slots = UnsafeMutableBufferPointer<Int32>.allocate(capacity: size)
        slots.initialize(repeating: 0)
        for (n, b) in utf8.enumerated() {
            var i = b.withUnsafeBytes { Self.hash($0) } & mask
            while slots[i] != 0 { i = (i + 1) & mask }
            slots[i] = Int32(n + 1)
        }
        self.bytes = bytes
        self.spans = spans
        self.slots = slots
        self.mask = mask
    }

    deinit {
        bytes.deallocate()
        spans.deallocate()
        slots.deallocate()
    }

    public var count: Int { spans.count }

    @inlinable @inline(__always)
    static func hash(_ name: UnsafeRawBufferPointer) -> Int {
        let n = name.count
        return n == 0 ? 0 : n &* 131 &+ Int(name[0]) &* 31 &+ Int(name[n &- 1]) &* 7 &+ Int(name[n >> 1])
    }

    /// Whether name `i` is `key`, byte for byte (lengths first).
    @inlinable @inline(__always)
    public func matches(_ i: Int, _ key: UnsafeRawBufferPointer) -> Bool {
        let n = key.count
        let span = spans[i]
        return span >> 32 == UInt64(truncatingIfNeeded: n)
            && (n == 0 || bytesEqual(key.baseAddress!, bytes.baseAddress! + Int(truncatingIfNeeded: span & 0xFFFF_FFFF), count: n))
    }

    /// The index of the name whose bytes are `key`, or nil.
    @inlinable
    public func index(of key: UnsafeRawBufferPointer) -> Int? {
        var i = Self.hash(key) & mask
        while slots[i] != 0 {
            let e = Int(slots[i]) &- 1
            if matches(e, key) { return e }
            i = (i &+ 1) & mask
        }
        return nil
    }
}

/// Words that one owner reuses for every use, one use at a time on one thread (a method's table of
/// where each param sits in the request being read): allocated once, zeroed, freed with it.
public final class ScratchWords: @unchecked Sendable {
    public let words: UnsafeMutableBufferPointer<UInt32>

    public init(count: Int) {
        words = .allocate(capacity: count)
        words.initialize(repeating: 0)
    }

    deinit { words.deallocate() }
}
