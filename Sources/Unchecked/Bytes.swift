#if canImport(Glibc)
import Glibc
#endif

/// Whether `count` bytes at `a` and `b` are equal. Names compared on the request path (JSON-RPC keys,
/// method, param and session names) are short: up to 16 bytes are compared with two overlapping loads
/// of each side, up to 32 with four, where a call to `memcmp` would cost more than the comparison;
/// longer runs use `memcmp`.
@inlinable @inline(__always)
public func bytesEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count n: Int) -> Bool {
    if n >= 8 {
        if n > 16 {
            guard n <= 32 else { return memcmp(a, b, n) == 0 }
            return a.loadUnaligned(as: UInt64.self) == b.loadUnaligned(as: UInt64.self)
                && a.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == b.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                && a.loadUnaligned(fromByteOffset: n - 16, as: UInt64.self) == b.loadUnaligned(fromByteOffset: n - 16, as: UInt64.self)
                && a.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self) == b.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
        }
        return a.loadUnaligned(as: UInt64.self) == b.loadUnaligned(as: UInt64.self)
            && (a + (n - 8)).loadUnaligned(as: UInt64.self) == (b + (n - 8)).loadUnaligned(as: UInt64.self)
    }
    if n >= 4 {
        return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
            && (a + (n - 4)).loadUnaligned(as: UInt32.self) == (b + (n - 4)).loadUnaligned(as: UInt32.self)
    }
    if n > 0 {
        return a.load(as: UInt8.self) == b.load(as: UInt8.self)
            && a.load(fromByteOffset: n >> 1, as: UInt8.self) == b.load(fromByteOffset: n >> 1, as: UInt8.self)
            && a.load(fromByteOffset: n - 1, as: UInt8.self) == b.load(fromByteOffset: n - 1, as: UInt8.self)
    }
    return true
}

/// Bytes borrowed for the length of a call — a message in the loop's read buffer, a name read in
/// place from a request — as the layers hand them to each other instead of raw pointers (as
/// swift-nio's `ByteBufferView`). Read through its accessors; the pointer underneath is made and
/// used only inside this fence and the JSON and buffer types that make views. A view does not own
/// its bytes: it is valid while what it was made from is (the call it is given to).
public struct ByteView: RandomAccessCollection {
    @usableFromInline let base: UnsafeRawPointer?
    public let count: Int

    /// A view of `raw`'s bytes (the buffer types and the JSON reader make views).
    @inlinable @inline(__always)
    public init(_ raw: UnsafeRawBufferPointer) {
        base = raw.baseAddress
        count = raw.count
    }

    public typealias Index = Int
    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { count }

    @inlinable @inline(__always)
    public subscript(i: Int) -> UInt8 {
        precondition(i >= 0 && i < count, "a byte past the view")
        return base!.load(fromByteOffset: i, as: UInt8.self)
    }

    /// The bytes as the buffer types and the JSON reader take them (within this fence's users).
    @inlinable @inline(__always)
    public var raw: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// The bytes as text (invalid UTF-8 repaired).
    public var string: String { String(decoding: raw, as: UTF8.self) }

    /// Whether the bytes are exactly `other`'s.
    @inlinable @inline(__always)
    public func equals(_ other: ByteView) -> Bool {
        count == other.count && (count == 0 || bytesEqual(base!, other.base!, count: count))
    }

    /// Whether the bytes are exactly the UTF-8 of `name` (compared on the request path).
    @inlinable @inline(__always)
    public func equals(_ name: StaticString) -> Bool {
        count == name.utf8CodeUnitCount && (count == 0 || bytesEqual(base!, name.utf8Start, count: count))
    }

    /// Whether the bytes are exactly `bytes` (a name kept as bytes).
    @inlinable @inline(__always)
    public func equals(_ bytes: [UInt8]) -> Bool {
        count == bytes.count && (count == 0 || bytes.withUnsafeBufferPointer { bytesEqual(base!, $0.baseAddress!, count: count) })
    }

    /// Whether the bytes are exactly the UTF-8 of `name`.
    @inlinable @inline(__always)
    public func equals(_ name: String) -> Bool {
        var n = name
        return n.withUTF8 { b in
            guard count == b.count else { return false }
            guard let pa = base, let pb = b.baseAddress else { return count == 0 }
            return bytesEqual(pa, pb, count: count)
        }
    }

    /// Runs `body` with a view of `string`'s UTF-8 (a look-up by a name held as a `String`).
    @inlinable
    public static func of<R>(_ string: String, _ body: (ByteView) throws -> R) rethrows -> R {
        var s = string
        return try s.withUTF8 { try body(ByteView(UnsafeRawBufferPointer($0))) }
    }
}

extension ByteView {
    /// No bytes.
    public static var empty: ByteView { ByteView(UnsafeRawBufferPointer(start: nil, count: 0)) }

    /// The bytes at `range` of this view (a message within a read, a header within a message).
    @inlinable @inline(__always)
    public func bytes(_ range: Range<Int>) -> ByteView {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "bytes past the view")
        return ByteView(UnsafeRawBufferPointer(start: base.map { $0 + range.lowerBound }, count: range.count))
    }

    /// The bytes from `start` to the end.
    @inlinable @inline(__always)
    public func bytes(from start: Int) -> ByteView { bytes(start..<count) }

    /// Where the first `byte` at or after `start` is, or nil (`memchr`).
    @inlinable @inline(__always)
    public func firstIndex(of byte: UInt8, from start: Int) -> Int? {
        guard let base, start >= 0, start < count, let p = memchr(base + start, Int32(byte), count - start) else { return nil }
        return UnsafeRawPointer(p) - base
    }

    /// The `T` stored little-endian at byte `offset` (unaligned; within the view).
    @inlinable @inline(__always)
    public func loadLittleEndian<T: FixedWidthInteger>(at offset: Int, as: T.Type) -> T {
        precondition(offset >= 0 && offset + MemoryLayout<T>.size <= count, "a load past the view")
        return T(littleEndian: base!.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// The index after the last nonzero byte at or after `start` (`start` when there is none): where
    /// the written part of a file made in advance with zeros ends. Whole blocks of zeros are passed
    /// with `memcmp`, so that the zeros of a large file cost little in any build.
    public func endOfNonzero(from start: Int) -> Int {
        precondition(start >= 0, "a start before the view")
        var end = count
        guard let base, start < end else { return end }
        let block = zeroBlockSize
        while end - block >= start && memcmp(base + (end - block), zeroBlock, block) == 0 { end -= block }
        while end > start && base.load(fromByteOffset: end - 1, as: UInt8.self) == 0 { end -= 1 }
        return end
    }

    /// The bytes as one contiguous buffer: what lets `Array.append(contentsOf:)` copy a view at once.
    @inlinable
    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        try raw.withMemoryRebound(to: UInt8.self) { try body($0) }
    }
}

/// The block of zeros ``ByteView/endOfNonzero(from:)`` compares with (never written).
private let zeroBlockSize = 4096
private nonisolated(unsafe) let zeroBlock = UnsafeRawPointer(UnsafeMutableRawPointer(calloc(zeroBlockSize, 1)!))

extension Array where Element == UInt8 {
    /// Runs `body` with a view of the array's bytes.
    @inlinable @inline(__always)
    public func withByteView<R, E: Error>(_ body: (ByteView) throws(E) -> R) throws(E) -> R {
        let r: Result<R, E> = withUnsafeBytes { raw in
            do throws(E) { return .success(try body(ByteView(raw))) } catch { return .failure(error) }
        }
        return try r.get()
    }
}

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
