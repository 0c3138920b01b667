import JSON

/// Method name → handler, found by the name's bytes as read from the request: no `String` is made,
/// and a lookup is a short hash of the length and two bytes into a small open-addressing table of
/// indices, then one comparison with names stored back to back (no reference is counted on the way).
struct MethodTable {
    typealias Handler = (Call) -> Void
    /// One registered method. A class: a closure kept in an array or a tuple is stored at the most
    /// general abstraction and comes back wrapped in a reabstraction thunk (a call through each);
    /// a class's property keeps it as written.
    private final class Entry {
        let name: String
        let handler: Handler
        init(_ name: String, _ handler: @escaping Handler) {
            self.name = name
            self.handler = handler
        }
    }
    private var handlers: [Entry] = []
    /// Every name, back to back, and each one's `length << 32 | start`, by handler index.
    private var bytes: [UInt8] = []
    private var spans: [UInt64] = []
    /// Hash → handler index + 1 (0: empty); at most half full.
    private var slots = [Int32](repeating: 0, count: 64)

    @inline(__always)
    private static func hash(_ name: UnsafeRawBufferPointer) -> Int {
        let n = name.count
        return n == 0 ? 0 : n &* 131 &+ Int(name[0]) &* 31 &+ Int(name[n &- 1]) &* 7 &+ Int(name[n >> 1])
    }

    /// Registers (or replaces, or with nil removes) the handler of `name`.
    subscript(name: String) -> Handler? {
        get { Array(name.utf8).withUnsafeBytes { handler(named: $0) } }
        set {
            var entries = handlers.filter { $0.name != name }
            if let newValue { entries.append(Entry(name, newValue)) }
            rebuild(entries)
        }
    }

    private mutating func rebuild(_ entries: [Entry]) {
        handlers = []
        bytes = []
        spans = []
        var size = 64
        while size < entries.count * 2 { size *= 2 }
        slots = [Int32](repeating: 0, count: size)
        for entry in entries {
            let b = Array(entry.name.utf8)
            spans.append(UInt64(b.count) << 32 | UInt64(bytes.count))
            bytes += b
            handlers.append(entry)
            var i = b.withUnsafeBytes { Self.hash($0) } & (size - 1)
            while slots[i] != 0 { i = (i + 1) & (size - 1) }
            slots[i] = Int32(handlers.count)
        }
    }

    /// Every registered name.
    var keys: [String] { handlers.map(\.name) }

    func handler(named name: UnsafeRawBufferPointer) -> Handler? {
        let n = name.count
        let found: Int = slots.withUnsafeBufferPointer { slots in
            spans.withUnsafeBufferPointer { spans in
                bytes.withUnsafeBytes { all in
                    let mask = slots.count &- 1
                    var i = Self.hash(name) & mask
                    while slots[i] != 0 {
                        let e = Int(slots[i]) &- 1
                        if spans[e] >> 32 == UInt64(n)
                            && (n == 0 || bytesEqual(name.baseAddress!, all.baseAddress! + Int(spans[e] & 0xFFFF_FFFF), count: n)) {
                            return e
                        }
                        i = (i &+ 1) & mask
                    }
                    return -1
                }
            }
        }
        return found < 0 ? nil : handlers[found].handler
    }
}
