/// Names fixed once built, found by the bytes a request carries: no `String` is made and nothing
/// is counted. The names lie back to back in memory of the table's own; ``index(of:)`` hashes the
/// key's bytes a word at a time into an open-addressing table of indices (at most half full), then
/// compares bytes; ``matches(_:_:)`` compares with one name, for tables short
/// enough to scan.
public final class NameTable: @unchecked Sendable {
    /// The names' bytes, back to back.
    @usableFromInline let bytes: UnsafeMutableRawBufferPointer
    /// Each name's `length << 32 | start` in ``bytes``.
    @usableFromInline let spans: UnsafeMutableBufferPointer<UInt64>
    /// Hash → name index + 1 (0: empty).
    @usableFromInline let slots: UnsafeMutableBufferPointer<Int32>
    @usableFromInline let mask: Int
    /// 64 less the bits of a slot's index: a name's slot is the top bits of its hash (``slot(_:)``).
    @usableFromInline let shift: Int

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
        var size = 64, shift = 58
        while size < utf8.count * 2 { size *= 2; shift -= 1 }
        let mask = size - 1
        let slots = UnsafeMutableBufferPointer<Int32>.allocate(capacity: size)
        slots.initialize(repeating: 0)
        for (n, b) in utf8.enumerated() {
            var i = b.withUnsafeBytes { Self.slot(Self.hash($0), shift) }
            while slots[i] != 0 { i = (i + 1) & mask }
            slots[i] = Int32(n + 1)
        }
        self.bytes = bytes
        self.spans = spans
        self.slots = slots
        self.mask = mask
        self.shift = shift
    }

    deinit {
        bytes.deallocate()
        spans.deallocate()
        slots.deallocate()
    }

    public var count: Int { spans.count }

    /// Names are short (a method, a param, a module, a dot and a name): up to 16 bytes are hashed as
    /// two overlapping 8-byte words (a multiply, where a byte-at-a-time hash is a chain of one
    /// multiply per byte); longer names fold in a word at a time. A multiply carries each bit of
    /// its operand only to the bits above it, so every byte counts in the product's top bits alone:
    /// the slot is taken from those (``slot(_:_:)``, Fibonacci hashing), so that a graph's thousands
    /// of look-alike names (`m.Screen1`, `m.Screen2`, …) spread over the table. (Its bottom bits,
    /// folded with the middle ones, left out the last two bytes of a name of 8 to 16: 10,000 names
    /// `app.S0` … `app.S9999` took 72 probes each on average, 502 at worst; now 1.2 and 8.)
    @inlinable @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let n = bytes.count
        guard let p = bytes.baseAddress, n > 0 else { return 0 }
        var a: UInt64, b: UInt64
        if n >= 8 {
            a = p.loadUnaligned(as: UInt64.self)
            b = (p + (n - 8)).loadUnaligned(as: UInt64.self)
            var i = 8
            while i < n - 8 {
                a = (a ^ (p + i).loadUnaligned(as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
                i += 8
            }
        } else if n >= 4 {
            a = UInt64(p.loadUnaligned(as: UInt32.self))
            b = UInt64((p + (n - 4)).loadUnaligned(as: UInt32.self))
        } else {
            a = UInt64(p.load(as: UInt8.self)) | UInt64(p.load(fromByteOffset: n >> 1, as: UInt8.self)) << 8
            b = UInt64(p.load(fromByteOffset: n - 1, as: UInt8.self))
        }
        return (a ^ (b &* 0xC2B2_AE3D_27D4_EB4F) ^ UInt64(n)) &* 0x9E37_79B9_7F4A_7C15
    }

    /// The slot of a name whose ``hash(_:)`` is `h`: its top bits.
    @inlinable @inline(__always)
    static func slot(_ h: UInt64, _ shift: Int) -> Int { Int(truncatingIfNeeded: h >> UInt64(truncatingIfNeeded: shift)) }

    /// Whether name `i` is `key`, byte for byte (lengths first).
    @inlinable @inline(__always)
    public func matches(_ i: Int, _ key: ByteView) -> Bool {
        let n = key.count
        let span = spans[i]
        return span >> 32 == UInt64(truncatingIfNeeded: n)
            && (n == 0 || bytesEqual(key.base!, bytes.baseAddress! + Int(truncatingIfNeeded: span & 0xFFFF_FFFF), count: n))
    }

    /// The index of the name whose bytes are `key`, or nil.
    @inlinable
    public func index(of key: ByteView) -> Int? {
        var i = Self.slot(Self.hash(key.raw), shift)
        while slots[i] != 0 {
            let e = Int(slots[i]) &- 1
            if matches(e, key) { return e }
            i = (i &+ 1) & mask
        }
        return nil
    }

    /// How many slots ``index(of:)`` looks at to find `key` or learn it is absent (for tests of
    /// the hash's spread).
    func probes(of key: ByteView) -> Int {
        var i = Self.slot(Self.hash(key.raw), shift), n = 1
        while slots[i] != 0 {
            if matches(Int(slots[i]) &- 1, key) { return n }
            i = (i &+ 1) & mask
            n += 1
        }
        return n
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

    /// The words as their user reads and writes them, without a reference counted per use (valid
    /// while the ``ScratchWords`` lives, which its user guarantees).
    @inlinable public var view: Words { Words(words: words) }

    @frozen
    public struct Words {
        @usableFromInline let words: UnsafeMutableBufferPointer<UInt32>

        @inlinable init(words: UnsafeMutableBufferPointer<UInt32>) { self.words = words }

        @inlinable
        public subscript(i: Int) -> UInt32 {
            @inline(__always) get { words[i] }
            @inline(__always) nonmutating set { words[i] = newValue }
        }
    }
}
