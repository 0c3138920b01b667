import JSON
import NavGraph
import NavigationCore

/// A graph's identity in the state file: 16 hexadecimal digits of a 64-bit FNV-1a hash of what
/// `graph.describe` answers for it (coordinators, setups, routes, links, preconditions). A log's
/// reload record and each snapshot row name the graph they were written under, so that a start
/// can tell state written under another graph (and say so) from state written under its own.
public enum GraphIdentity {
    public static func of(_ graph: NavigationGraph) -> String {
        hash(JSONWriter.encode(graph.describe()))
    }

    /// The tabs `graph` declares (``TabLayout``) as JSON text, and an id of them made the same way
    /// (the same tabs, the same id, whatever else the graph changed): what cluster rows name.
    public static func tabs(of graph: NavigationGraph) -> (id: String, text: String) {
        let text = JSONWriter.encode(TabLayout(graph).json)
        return (hash(text), String(decoding: text, as: UTF8.self))
    }

    private static func hash(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            hash ^= UInt64(b)
            hash &*= 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
