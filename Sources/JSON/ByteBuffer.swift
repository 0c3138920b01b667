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
        memcpy(base + used, bytes, n)
        used += n
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

    /// The bytes written so far, valid only inside `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: used))
    }

    /// A copy of the bytes written so far.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

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
