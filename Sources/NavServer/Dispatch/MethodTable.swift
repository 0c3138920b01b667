import JSON

/// Method name → handler, found by the name's bytes as read from the request: no `String` is made,
/// and a lookup is a short hash of the length and two bytes into a small open-addressing table of
/// indices, then one comparison with names stored back to back. A class whose lookup storage is
/// its own (raw memory, rebuilt when a method is registered): a lookup copies and retains nothing.
final class MethodTable {
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
    private var entries: [Entry] = []
    /// Every name, by entry index; hash → entry index + 1 (0: empty), at most half full.
    private var names = PackedNames([String]())
    private var slots = UnsafeMutableBufferPointer<Int32>.allocate(capacity: 0)
    private var mask = -1

    init() { rebuild([]) }

    deinit { release() }

    private func release() {
        names.deallocate()
        slots.deallocate()
    }

    @inline(__always)
    private static func hash(_ name: UnsafeRawBufferPointer) -> Int {
        let n = name.count
        return n == 0 ? 0 : n &* 131 &+ Int(name[0]) &* 31 &+ Int(name[n &- 1]) &* 7 &+ Int(name[n >> 1])
    }

    /// Registers (or replaces, or with nil removes) the handler of `name`.
    subscript(name: String) -> Handler? {
        get { Array(name.utf8).withUnsafeBytes { handler(named: $0) } }
        set {
            var kept = entries.filter { $0.name != name }
            if let newValue { kept.append(Entry(name, newValue)) }
            rebuild(kept)
        }
    }

    /// Forgets every method (at shutdown: handlers hold the server).
    func removeAll() { rebuild([]) }

    private func rebuild(_ list: [Entry]) {
        release()
        entries = list
        var size = 64
        while size < list.count * 2 { size *= 2 }
        mask = size - 1
        names = PackedNames(list.map(\.name))
        slots = .allocate(capacity: size)
        slots.initialize(repeating: 0)
        for (e, entry) in list.enumerated() {
            var i = Array(entry.name.utf8).withUnsafeBytes { Self.hash($0) } & mask
            while slots[i] != 0 { i = (i + 1) & mask }
            slots[i] = Int32(e + 1)
        }
    }

    /// Every registered name.
    var keys: [String] { entries.map(\.name) }

    func handler(named name: UnsafeRawBufferPointer) -> Handler? {
        var i = Self.hash(name) & mask
        while slots[i] != 0 {
            let e = Int(slots[i]) &- 1
            if names.matches(e, name) { return entries[e].handler }
            i = (i &+ 1) & mask
        }
        return nil
    }
}
