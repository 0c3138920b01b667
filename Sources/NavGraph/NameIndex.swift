import JSON

/// Names → indices, fixed once built. Navigations look up the coordinator or route a client names
/// on every request; this table hashes the name's bytes with FNV-1a (a few instructions a byte)
/// and compares candidates by bytes, where a `Dictionary` would run its seeded SipHash.
/// Lookups only: nothing on the request path inserts.
public struct NameIndex: Sendable {
    private var slots: [(name: String, value: Int)?]
    /// Each slot's name as bytes, for lookups by the bytes of a request (no string made).
    private var slotBytes: [[UInt8]]
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
        self.slots = slots
        slotBytes = slots.map { $0.map { Array($0.name.utf8) } ?? [] }
    }

    @inline(__always)
    static func hash(_ name: String) -> Int {
        var s = name
        return s.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }

    @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        return Int(truncatingIfNeeded: h ^ (h >> 29))
    }

    /// The value of the name whose UTF-8 is `utf8` (read in place from a request), or nil.
    public subscript(utf8 utf8: UnsafeRawBufferPointer) -> Int? {
        var i = Self.hash(utf8) & mask
        return slots.withUnsafeBufferPointer { slots in
            slotBytes.withUnsafeBufferPointer { names in
                while let slot = slots[i] {
                    if names[i].count == utf8.count
                        && names[i].withUnsafeBytes({ utf8.count == 0 || bytesEqual($0.baseAddress!, utf8.baseAddress!, count: utf8.count) }) {
                        return slot.value
                    }
                    i = (i + 1) & mask
                }
                return nil
            }
        }
    }

    public subscript(name: String) -> Int? {
        var i = Self.hash(name) & mask
        while let slot = slots[i] {
            if slot.name == name { return slot.value }
            i = (i + 1) & mask
        }
        return nil
    }

    public var keys: [String] { slots.compactMap { $0?.name } }
}
