import NavGraph
import Testing

/// `open` tries only the links whose required segments (literals and parameters) the path's first
/// segments fit: the first of them that matches must be the first of all the graph's links that
/// matches, whatever the patterns share.
@Suite struct LinkIndexTests {
    @Test func theLinksTriedFindTheFirstDeclaredMatchForEveryPath() throws {
        var rng = SystemRandomNumberGenerator()
        let literals = ["a", "b", "c"]
        for round in 0..<20 {
            // Patterns of up to four segments over three literals and parameters, some ending in an
            // optional segment or a wildcard; the same literal prefixes recur in many of them.
            var patterns: [String] = []
            while patterns.count < 40 {
                var segments: [String] = []
                var params = 0
                for _ in 0..<Int.random(in: 0...4, using: &rng) {
                    if Int.random(in: 0..<10, using: &rng) < 6 {
                        segments.append(literals.randomElement(using: &rng)!)
                    } else {
                        segments.append(":p\(params)")
                        params += 1
                    }
                }
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: segments.append(":p\(params)?"); params += 1
                case 1: segments.append("*p\(params)"); params += 1
                default: break
                }
                let pattern = "/" + segments.joined(separator: "/")
                if params > 0, !patterns.contains(pattern) { patterns.append(pattern) }
            }
            let fields = (0..<6).map { "p\($0): {type: string}" }.joined(separator: ", ")
            let yaml = """
                root: {stack: Home}
                coordinators:
                  Home: {opens: [T]}
                  T: {setup: {type: object, properties: {\(fields)}}}
                links:
                \(patterns.map { p in
                    let used = p.split(separator: "/").filter { $0.hasPrefix(":") || $0.hasPrefix("*") }
                        .map { s in s.dropFirst().replacingOccurrences(of: "?", with: "") }
                    return "  \"\(p)\": [Home, {to: T, with: {\(used.map { "\($0): \":\($0)\"" }.joined(separator: ", "))}}]"
                }.joined(separator: "\n"))
                """
            let (loaded, diagnostics) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: yaml)], baseDirectory: "/")
            let graph = try #require(loaded, "round \(round): \(diagnostics.sorted.map(\.description).joined(separator: "\n"))")
            for _ in 0..<200 {
                let path = (0..<Int.random(in: 0...5, using: &rng)).map { _ in
                    Substring(Int.random(in: 0..<4, using: &rng) == 0 ? "x" : literals.randomElement(using: &rng)!)
                }
                let first = graph.links.indices.first { graph.links[$0].match(pathSegments: path) != nil }
                let tried = graph.linksMaybeMatching(path)
                #expect(tried == tried.sorted(), "declaration order")
                #expect(tried.first { graph.links[$0].match(pathSegments: path) != nil } == first,
                        "/\(path.joined(separator: "/")) among \(patterns)")
            }
        }
    }
}
