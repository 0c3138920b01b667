import NavGraph
import Testing
@testable import NavigationCore

/// An error that names what a graph declares names 20 of them and says how many there are: a
/// graph may declare a name in thousands of modules.
@Suite struct BoundedMessageTests {
    @Test func anAmbiguousNameNamesTwentyModulesAndTheirCount() throws {
        var sources = [GraphSource(file: "main.yaml", text: "root: {stack: Start}\ncoordinators:\n  Start: {}\n")]
        sources += (0..<25).map { GraphSource(file: "m\($0).yaml", text: "coordinators:\n  Home: {}\n") }
        let (loaded, diagnostics) = GraphLoader.load(sources: sources, baseDirectory: "/")
        let graph = try #require(loaded, "\(diagnostics.sorted.map(\.description))")
        do {
            _ = try graph.destination(to: "Home", route: nil)
            Issue.record("an ambiguous name was taken")
        } catch {
            #expect(error.kind == .unknownTarget)
            #expect(error.message.components(separatedBy: ".Home").count - 1 == 20 && error.message.contains("(25 in all)"), "\(error.message)")
        }
    }
}
