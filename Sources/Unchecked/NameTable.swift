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

    /// Names are short (a method, a param, a module, a dot and a name): up to 16 bytes are hashed as
    /// two overlapping 8-byte words (a multiply and a few shifts, where a byte-at-a-time hash is a
    /// chain of one multiply per byte); longer names fold in a word at a time. Every byte counts, so
    /// a graph's thousands of look-alike names (`m.Screen1`, `m.Screen2`, …) spread over the table.
    @inlinable @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
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
        var h = (a ^ (b &* 0xC2B2_AE3D_27D4_EB4F) ^ UInt64(n)) &* 0x9E37_79B9_7F4A_7C15
        h ^= h >> 32
        return Int(truncatingIfNeeded: h)
    }

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
        var i = Self.hash(key.raw) & mask
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

        /// Every word back to zero.
        @inlinable @inline(__always)
        public func clear() { words.update(repeating: 0) }
    }
}
