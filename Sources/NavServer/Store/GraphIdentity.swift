import JSON
import NavGraph

/// A graph's identity in the state file: 16 hexadecimal digits of a 64-bit FNV-1a hash of what
/// `graph.describe` answers for it (coordinators, setups, routes, links, preconditions). A log's
/// reload record and each snapshot row name the graph they were written under, so that a start
/// can tell state written under another graph (and say so) from state written under its own.
public enum GraphIdentity {
    public static func of(_ graph: NavigationGraph) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in JSONWriter.encode(graph.describe()) {
            hash ^= UInt64(b)
            hash &*= 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
