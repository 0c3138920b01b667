import JSON
import Unchecked

/// Names → values, fixed once built: a coordinator or a route by its qualified or unique
/// unqualified name. Navigations look up the name a client gives on every request, by its bytes
/// as read (a ``NameTable``, navd's one table of names, where a `Dictionary` would run its seeded
/// SipHash on a `String` made first). Lookups only: nothing on the request path inserts.
public struct NameIndex: Sendable {
    /// Every name.
    public let keys: [String]
    private let table: NameTable
    /// The value of each name, by its index in ``keys``.
    private let values: [Int]

    public init(_ entries: [String: Int]) {
        keys = Array(entries.keys)
        values = keys.map { entries[$0]! }
        table = NameTable(keys)
    }

    /// The value of the name whose UTF-8 is `name` (read in place from a request), or nil.
    @inline(__always)
    public subscript(bytes name: ByteView) -> Int? {
        guard let i = table.index(of: name) else { return nil }
        return values[i]
    }

    public subscript(name: String) -> Int? { ByteView.of(name) { self[bytes: $0] } }
}
