import JSON
import Unchecked

/// Method name → handler, found by the name's bytes as read from the request (a ``NameTable``,
/// rebuilt when a method is registered): no `String` is made, and a lookup copies and retains
/// nothing.
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
    /// Every name, by entry index.
    private var names = NameTable([])

    init() {}

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
        entries = list
        names = NameTable(list.map(\.name))
    }

    /// Every registered name.
    var keys: [String] { entries.map(\.name) }

    func handler(named name: UnsafeRawBufferPointer) -> Handler? {
        guard let e = names.index(of: name) else { return nil }
        return entries[e].handler
    }
}
