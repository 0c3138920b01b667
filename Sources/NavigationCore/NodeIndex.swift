import JSON
import NavGraph

/// The nodes of a tree by id. Ids are the ones ``Session`` makes ("n" and a number), so the index is
/// keyed by the number: hashing an integer is much cheaper than hashing a string, and every
/// navigation looks nodes up, adds some and removes others. A string that is not such an id finds
/// nothing. The nodes are not counted (``NodeTable``, TreeLinks.swift): the tree holds every node it
/// lists, and a node is in the index exactly while it is in the tree.
final class NodeIndex {
    private let table = NodeTable()

    /// The number of an id made by ``Session/newId()``: "n", then digits without a leading zero.
    static func number(_ id: String) -> Int? {
        var s = id
        return s.withUTF8 { number(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// ``number(_:)`` of an id's UTF-8 (read in place from a saved tree).
    static func number(bytes b: UnsafeRawBufferPointer) -> Int? {
        guard b.count >= 2, b.count <= 19, b[0] == UInt8(ascii: "n"), b[1] != UInt8(ascii: "0") || b.count == 2 else { return nil }
        var n = 0
        for i in 1..<b.count {
            let d = b[i] &- UInt8(ascii: "0")
            guard d < 10 else { return nil }
            n = n * 10 + Int(d)
        }
        return n
    }

    subscript(id: String) -> Node? {
        guard let k = Self.number(id) else { return nil }
        return table[k]
    }

    subscript(number k: Int) -> Node? { table[k] }
    /// The coordinator of node `k` (-1: none, or no such node), read without counting a reference.
    func coordinator(ofNode k: Int) -> Int { table.read(k) { $0.coordinator } ?? -1 }

    func insert(_ n: Node) { table.insert(n, key: n.number) }

    func remove(_ n: Node) { table.remove(key: n.number) }

    var count: Int { table.count }

    func removeAll() { table.removeAll() }
}
