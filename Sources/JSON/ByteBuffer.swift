import Unchecked

#if canImport(Glibc)
import Glibc
#endif

/// A growable byte buffer that output is written into: appends are a bounds check and a `memcpy`,
/// with none of the uniqueness checks an `Array` makes on every append. A connection's output and
/// every ``JSONWriter`` write into one. A reference type: copies of a writer share its buffer.
public final class ByteBuffer {
    @usableFromInline var base: UnsafeMutablePointer<UInt8>
    @usableFromInline var used = 0
    @usableFromInline var allocated: Int

    public init(capacity: Int = 256) {
        allocated = Swift.max(capacity, 16)
        base = .allocate(capacity: allocated)
    }

    /// Bytes written.
    public var count: Int { used }
    public var capacity: Int { allocated }

    deinit { base.deallocate() }

    public var isEmpty: Bool { count == 0 }

    /// Makes room for `extra` more bytes.
    @inlinable @inline(__always)
    public func reserve(_ extra: Int) {
        if used + extra > allocated { grow(to: used + extra) }
    }

    @usableFromInline
    func grow(to needed: Int) {
        var c = allocated * 2
        while c < needed { c *= 2 }
        let b = UnsafeMutablePointer<UInt8>.allocate(capacity: c)
        b.update(from: base, count: used)
        base.deallocate()
        base = b
        allocated = c
    }

    @inlinable @inline(__always)
    public func append(_ byte: UInt8) {
        reserve(1)
        base[used] = byte
        used += 1
    }

    @inlinable @inline(__always)
    public func append(_ bytes: UnsafeRawPointer, count n: Int) {
        reserve(n)
        let dst = UnsafeMutableRawPointer(base + used)
        if n <= 16 { Self.copySmall(dst, bytes, n) } else { memcpy(dst, bytes, n) }
        used += n
    }

    /// Copies up to 16 bytes with two overlapping loads and stores: most of what is appended is a few
    /// bytes of JSON punctuation or a short name, where a call to `memcpy` costs more than the copy.
    @inlinable @inline(__always)
    static func copySmall(_ d: UnsafeMutableRawPointer, _ s: UnsafeRawPointer, _ n: Int) {
        if n >= 8 {
            let a = s.loadUnaligned(as: UInt64.self), b = (s + (n - 8)).loadUnaligned(as: UInt64.self)
            d.storeBytes(of: a, as: UInt64.self)
            (d + (n - 8)).storeBytes(of: b, as: UInt64.self)
        } else if n >= 4 {
            let a = s.loadUnaligned(as: UInt32.self), b = (s + (n - 4)).loadUnaligned(as: UInt32.self)
            d.storeBytes(of: a, as: UInt32.self)
            (d + (n - 4)).storeBytes(of: b, as: UInt32.self)
        } else if n > 0 {
            let a = s.load(as: UInt8.self), b = s.load(fromByteOffset: n >> 1, as: UInt8.self), c = s.load(fromByteOffset: n - 1, as: UInt8.self)
            d.storeBytes(of: a, as: UInt8.self)
            d.storeBytes(of: b, toByteOffset: n >> 1, as: UInt8.self)
            d.storeBytes(of: c, toByteOffset: n - 1, as: UInt8.self)
        }
    }

    public func append(contentsOf bytes: UnsafeRawBufferPointer) {
        guard let p = bytes.baseAddress, bytes.count > 0 else { return }
        append(p, count: bytes.count)
    }

    public func append(contentsOf bytes: [UInt8]) {
        bytes.withUnsafeBytes { append(contentsOf: $0) }
    }

    /// Appends `s` as UTF-8.
    public func append(_ s: String) {
        var s = s
        s.withUTF8 { append(contentsOf: UnsafeRawBufferPointer($0)) }
    }

    public func append(contentsOf bytes: ByteView) { append(contentsOf: bytes.raw) }

    /// A view of the bytes written so far, valid only inside `body`.
    @inline(__always)
    public func withByteView<R>(_ body: (ByteView) throws -> R) rethrows -> R {
        try body(ByteView(UnsafeRawBufferPointer(start: base, count: used)))
    }

    /// The bytes written so far, valid only inside `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: used))
    }

    /// The bytes written so far, to change in place (headers and checksums filled in after what
    /// they describe).
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: base, count: used))
    }

    /// Writes `value` little endian over the 4 bytes written at `offset` (a length or checksum
    /// filled in after what it describes was written).
    public func overwrite(uint32 value: UInt32, at offset: Int) {
        precondition(offset >= 0 && offset + 4 <= used, "overwrite past what was written")
        UnsafeMutableRawPointer(base + offset).storeBytes(of: value.littleEndian, as: UInt32.self)
    }

    /// The same for 8 bytes (two fields side by side, the first in the low half).
    public func overwrite(uint64 value: UInt64, at offset: Int) {
        precondition(offset >= 0 && offset + 8 <= used, "overwrite past what was written")
        UnsafeMutableRawPointer(base + offset).storeBytes(of: value.littleEndian, as: UInt64.self)
    }

    /// Appends `n` zero bytes (room for a header filled in later with ``overwrite(uint32:at:)``).
    @inlinable @inline(__always)
    public func appendZeros(_ n: Int) {
        reserve(n)
        (base + used).initialize(repeating: 0, count: n)
        used += n
    }

    /// A copy of the bytes written so far.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Forgets what was written after the first `n` bytes.
    public func truncate(to n: Int) { used = Swift.min(used, Swift.max(0, n)) }

    /// Forgets the content; keeps the memory unless it grew beyond `keepingAtMost` bytes.
    public func removeAll(keepingAtMost limit: Int = .max) {
        used = 0
        if allocated > limit {
            base.deallocate()
            allocated = Swift.max(256, limit)
            base = .allocate(capacity: allocated)
        }
    }
}
