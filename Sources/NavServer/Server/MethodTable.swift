import JSON

/// Method name → handler, found by the name's bytes as read from the request (no `String` is made
/// and nothing is hashed on the request path): names are grouped by length, then compared.
struct MethodTable {
    typealias Handler = (Call) -> Void
    /// One registered method (a class: the handler comes back out as stored, with no thunk).
    private final class Entry {
        let name: [UInt8]
        let handler: Handler
        init(_ name: [UInt8], _ handler: @escaping Handler) {
            self.name = name
            self.handler = handler
        }
    }
    private var byLength: [[Entry]] = []

    /// Registers (or replaces, or with nil removes) the handler of `name`.
    subscript(name: String) -> Handler? {
        get { Array(name.utf8).withUnsafeBytes { handler(named: $0) } }
        set {
            let bytes = Array(name.utf8)
            while byLength.count <= bytes.count { byLength.append([]) }
            byLength[bytes.count].removeAll { $0.name == bytes }
            if let newValue { byLength[bytes.count].append(Entry(bytes, newValue)) }
        }
    }

    /// Every registered name.
    var keys: [String] { byLength.flatMap { $0.map { String(decoding: $0.name, as: UTF8.self) } } }

    func handler(named name: UnsafeRawBufferPointer) -> Handler? {
        guard name.count < byLength.count else { return nil }
        for entry in byLength[name.count] {
            if JSONView.bytes(name, equal: entry.name) { return entry.handler }
        }
        return nil
    }
}
