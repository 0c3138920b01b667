import JSON

/// Names stored back to back in raw memory of their own, each found by its index: a lookup table's
/// names compared with a request's bytes without a `String` and without reference counting (two
/// pointers, copied freely). Whoever makes it owns the memory and calls ``deallocate()`` once.
struct PackedNames {
    private let bytes: UnsafeMutableRawBufferPointer
    /// Each name's `length << 32 | start` in ``bytes``.
    private let spans: UnsafeMutableBufferPointer<UInt64>

    init<Names: Collection<String>>(_ names: Names) {
        let utf8 = names.map { Array($0.utf8) }
        bytes = .allocate(byteCount: utf8.reduce(0) { $0 + $1.count }, alignment: 1)
        spans = .allocate(capacity: utf8.count)
        var at = 0
        for (i, b) in utf8.enumerated() {
            spans[i] = UInt64(b.count) << 32 | UInt64(at)
            b.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: bytes[at..<at + b.count]).copyMemory(from: $0) }
            at += b.count
        }
    }

    func deallocate() {
        bytes.deallocate()
        spans.deallocate()
    }

    var count: Int { spans.count }

    /// Whether name `i` is `key`, byte for byte (lengths first).
    @inline(__always)
    func matches(_ i: Int, _ key: UnsafeRawBufferPointer) -> Bool {
        let n = key.count
        return spans[i] >> 32 == UInt64(truncatingIfNeeded: n)
            && (n == 0 || bytesEqual(key.baseAddress!, bytes.baseAddress! + Int(truncatingIfNeeded: spans[i] & 0xFFFF_FFFF), count: n))
    }
}
