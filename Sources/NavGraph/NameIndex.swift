import JSON
import Unchecked

/// Names → indices, fixed once built. Navigations look up the coordinator or route a client names
/// on every request; this table hashes the name's bytes a word at a time and compares candidates
/// by bytes, where a `Dictionary` would run its seeded SipHash. Names given as strings are looked
/// up by their bytes too.
/// Lookups only: nothing on the request path inserts.
public struct NameIndex: Sendable {
    /// Every name.
    public let keys: [String]
    /// The table, in one array of words (one buffer, nothing to retain per slot): slot `i` is words
    /// `2i` (its value + 1; 0: empty) and `2i + 1` (its name's `length << 32 | offset`), and the
    /// names' bytes follow the slots, back to back.
    private let words: [UInt64]
    private let mask: Int

    public init(_ entries: [String: Int]) {
        var size = 8
        while size < entries.count * 2 { size *= 2 }
        mask = size - 1
        var slots = [(name: String, value: Int)?](repeating: nil, count: size)
        for (name, value) in entries {
            var i = Self.hash(name) & mask
            while slots[i] != nil { i = (i + 1) & mask }
            slots[i] = (name, value)
        }
        keys = Array(entries.keys)
        var bytes: [UInt8] = []
        var words = [UInt64](repeating: 0, count: 2 * size)
        for (i, slot) in slots.enumerated() {
            guard let slot else { continue }
            words[2 * i] = UInt64(slot.value + 1)
            words[2 * i + 1] = UInt64(slot.name.utf8.count) << 32 | UInt64(bytes.count)
            bytes += slot.name.utf8
        }
        bytes += [UInt8](repeating: 0, count: (8 - bytes.count % 8) % 8)
        words += bytes.withUnsafeBytes { raw in (0..<raw.count / 8).map { raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self) } }
        self.words = words
    }

    @inline(__always)
    static func hash(_ name: String) -> Int {
        var s = name
        return s.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }

    /// Names are short (a module, a dot and a name): up to 16 bytes are hashed as two overlapping
    /// 8-byte words (a multiply and a few shifts, where a byte-at-a-time hash is a chain of one
    /// multiply per byte); longer names fold in a word at a time.
    @inline(__always)
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

    /// The value of the name whose UTF-8 is `utf8` (read in place from a request), or nil.
    public subscript(utf8 utf8: UnsafeRawBufferPointer) -> Int? {
        var i = Self.hash(utf8) & mask
        let n = UInt64(truncatingIfNeeded: utf8.count)
        return words.withUnsafeBufferPointer { words in
            let bytes = UnsafeRawPointer(words.baseAddress! + 2 * (mask + 1))
            while case let value = words[2 * i], value != 0 {
                let span = words[2 * i + 1]
                if span >> 32 == n && (n == 0 || bytesEqual(bytes + Int(truncatingIfNeeded: span & 0xFFFF_FFFF), utf8.baseAddress!, count: utf8.count)) {
                    return Int(truncatingIfNeeded: value) - 1
                }
                i = (i + 1) & mask
            }
            return nil
        }
    }

    public subscript(name: String) -> Int? {
        var s = name
        return s.withUTF8 { self[utf8: UnsafeRawBufferPointer($0)] }
    }
}
