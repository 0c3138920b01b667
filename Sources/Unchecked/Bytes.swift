#if canImport(Glibc)
import Glibc
#endif

/// Whether `count` bytes at `a` and `b` are equal. Names compared on the request path (JSON-RPC keys,
/// method, param and session names) are short: up to 16 bytes are compared with two overlapping loads
/// of each side, where a call to `memcmp` would cost more than the comparison; longer runs use `memcmp`.
@inlinable @inline(__always)
public func bytesEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count n: Int) -> Bool {
    if n >= 8 {
        guard n <= 16 else { return memcmp(a, b, n) == 0 }
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
