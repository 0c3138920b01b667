/// The bytes of a short `String` read straight from its two words, without the standard library's
/// generic access (which copies a small string to the stack and calls a closure over it): names,
/// keys and short values are written into JSON on every durable commit and notification.
///
/// On 64-bit platforms Swift's `String` is two words, frozen by its ABI. A *small* string (at most
/// 15 UTF-8 bytes) keeps its bytes in them, in order, from the first byte of the first word; the
/// last byte of the second word holds its form: bit 5 (the word's bit 61) marks a small string, the
/// low four bits its count, and the bytes past the count are zero. Any other string (stored in an
/// object, bridged, or on a platform where this does not hold) gives nil: callers then take the
/// standard library's way.
public struct SmallStringBytes {
    /// Bytes 0 to 7 and 8 to 15 of the string's storage (little-endian: byte 0 is the low byte of `low`);
    /// the bytes past ``count`` are zero, except the form byte at offset 15.
    public let low: UInt64
    public let high: UInt64
    /// The number of UTF-8 bytes, 0 to 15.
    public let count: Int
    /// The room writing one as a JSON string takes: its quotes and the 16 bytes stored at once
    /// (``store(to:)``).
    public static let jsonBytes = 18

    /// The bytes of `s` when it is small, else nil.
    @inlinable @inline(__always)
    public init?(_ s: String) {
        #if arch(x86_64) || arch(arm64)
        let words = unsafeBitCast(s, to: (UInt64, UInt64).self)
        guard words.1 & (1 << 61) != 0 else { return nil }
        low = words.0
        high = words.1
        count = Int(truncatingIfNeeded: (words.1 >> 56) & 0xF)
        #else
        return nil
        #endif
    }

    /// Whether any of the string's bytes is one JSON must escape: a control character (below 0x20),
    /// a quote or a backslash (bytes from 0x80, UTF-8's multi-byte sequences, pass unchanged).
    /// Eight bytes at a time: a byte `b` of a word `x` is flagged when `b - 0x20`, `(b ^ 0x22) - 1` or
    /// `(b ^ 0x5C) - 1` borrows while `b`'s own high bit is clear. A borrow can flag only bytes above
    /// a flagged one, and every byte past the count is above every byte of the string: masking those
    /// lanes off leaves exactly the string's own.
    @inlinable @inline(__always)
    public var needsEscape: Bool {
        let lanes = SmallStringBytes.laneMasks(count)
        return SmallStringBytes.flags(low) & lanes.low | SmallStringBytes.flags(high) & lanes.high != 0
    }

    @inlinable @inline(__always)
    static func flags(_ x: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let quote = x ^ (ones &* 0x22), backslash = x ^ (ones &* 0x5C)
        return ((x &- ones &* 0x20) & ~x | (quote &- ones) & ~quote | (backslash &- ones) & ~backslash) & highBits
    }

    /// The high bit of each of the first `n` byte lanes (0 to 15) across the two words.
    @inlinable @inline(__always)
    static func laneMasks(_ n: Int) -> (low: UInt64, high: UInt64) {
        let highBits: UInt64 = 0x8080_8080_8080_8080
        if n >= 8 {
            return (highBits, highBits & ((1 << UInt64(8 * (n - 8))) &- 1))
        }
        return (highBits & ((1 << UInt64(8 * n)) &- 1), 0)
    }

    /// Stores the 16 bytes (the string's and what follows them) at `to`, which must have room for 16.
    @inlinable @inline(__always)
    public func store(to: UnsafeMutableRawPointer) {
        to.storeBytes(of: low, as: UInt64.self)
        (to + 8).storeBytes(of: high, as: UInt64.self)
    }
}

extension SmallStringBytes {
    /// The bytes of a small string whose two words are `words` (as ``low`` and ``high`` hold them).
    @inlinable @inline(__always)
    public init(words: (UInt64, UInt64)) {
        low = words.0
        high = words.1
        count = Int(truncatingIfNeeded: (words.1 >> 56) & 0xF)
    }

    /// The small string whose two words are `words` (as ``low`` and ``high`` hold them, or as
    /// ``asciiWords(_:count:)`` makes them): only where strings are laid out so, the platforms where
    /// those give words at all.
    @inlinable @inline(__always)
    public static func string(words: (UInt64, UInt64)) -> String {
        unsafeBitCast(words, to: String.self)
    }

    /// The two words of the small string whose bytes are the first `count` (at most 15) of `words`
    /// (byte 0 the low byte of the first word), every one ASCII and the rest zero, as the caller
    /// made them (see ``asciiString(_:)``), with no copy and no check; nil where strings are not laid
    /// out so.
    @inlinable @inline(__always)
    public static func asciiWords(_ words: (UInt64, UInt64), count: Int) -> (UInt64, UInt64)? {
        #if arch(x86_64) || arch(arm64)
        assert(count <= 15 && (words.0 | words.1) & 0x8080_8080_8080_8080 == 0, "not a short ASCII text")
        return (words.0, words.1 | UInt64(0xE0 | count) << 56)  // immortal, ASCII, small; the count
        #else
        return nil
        #endif
    }

    /// `bytes` as a `String` when they are at most 15 ASCII bytes, made straight in the two words of
    /// a small string (the form ``init(_:)`` reads: the bytes in order, zeros after them, and in the
    /// last byte the small and ASCII bits with the count), without the standard library's UTF-8
    /// validation, which every byte below 0x80 passes. Anything else gives nil: callers then take
    /// the standard library's way.
    @inlinable @inline(__always)
    public static func asciiString(_ bytes: UnsafeRawBufferPointer) -> String? {
        #if arch(x86_64) || arch(arm64)
        let n = bytes.count
        guard n <= 15 else { return nil }
        var words: (UInt64, UInt64) = (0, 0)
        if n > 0 { withUnsafeMutableBytes(of: &words) { $0.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: n) } }
        guard (words.0 | words.1) & 0x8080_8080_8080_8080 == 0 else { return nil }
        words.1 |= UInt64(0xE0 | n) << 56  // immortal, ASCII, small; the count
        return unsafeBitCast(words, to: String.self)
        #else
        return nil
        #endif
    }
}
