import Foundation
import JSON
import NavTesting
import Testing

/// Cases of other routers' own test suites that map onto navd, replayed through the socket: each
/// peer action becomes navd calls, each expected state is compared with navd's `tree`. Each test
/// names the peer test it comes from. What does not map, or maps onto a behaviour navd lacks, is
/// listed in Protocol/PROTOCOL.md §11.
///
/// React Navigation, `packages/routers/src/__tests__/StackRouter.test.tsx`: routes `baz`, `bar`,
/// `qux` are coordinators of one stack that may open each other.
@Suite struct PeerConformanceTests {
    static let stackGraph = """
        root: {stack: baz}
        coordinators:
          baz: {opens: [bar, qux, baz], setup: {type: object, properties: {answer: {type: integer}}}}
          bar: {opens: [baz, qux, bar], setup: {type: object, properties: {answer: {type: integer}, foo: {type: string}}}}
          qux: {opens: [baz, bar, qux], setup: {type: object, properties: {answer: {type: integer}, test: {type: string}}}}
        """

    /// The root stack as (coordinator without module, params) pairs, bottom first.
    static func stack(_ c: TestClient) throws -> [String] {
        let children = try c.call("tree")["root"]?["children"]?.arrayValue ?? []
        return children.map { n in
            let name = (n["coordinator"]?.stringValue ?? "?").replacingOccurrences(of: "app.", with: "")
            let params = n["params"].map { JSONWriter.string($0) } ?? "{}"
            return params == "{}" ? name : "\(name)\(params)"
        }
    }

    func daemonWithStack(_ names: [String]) throws -> (Daemon, TestClient) {
        let d = try Daemon(graph: Self.stackGraph)
        let c = try d.client()
        for n in names.dropFirst() { try c.call("navigate", ["to": .string(n)]) }
        return (d, c)
    }

    /// StackRouter.test.tsx, "handles navigate action": navigate('qux', {answer: 42}) on
    /// [baz, bar] pushes qux; navigate('baz', {answer: 42}) pushes a second baz.
    @Test func handlesNavigateAction() throws {
        var (d, c) = try daemonWithStack(["baz", "bar"])
        try c.call("navigate", ["to": "qux", "with": ["answer": 42]])
        #expect(try Self.stack(c) == ["baz", "bar", "qux{\"answer\":42}"])
        _ = d
        (d, c) = try daemonWithStack(["baz", "bar"])
        try c.call("navigate", ["to": "baz", "with": ["answer": 42]])
        #expect(try Self.stack(c) == ["baz", "bar", "baz{\"answer\":42}"])
    }

    /// StackRouter.test.tsx, "doesn't navigate to nonexistent screen": the router answers null (no
    /// change); navd answers `unknownTarget` and the tree stays.
    @Test func doesNotNavigateToANonexistentScreen() throws {
        let (d, c) = try daemonWithStack(["baz", "bar"])
        _ = d
        let e = try c.callError("navigate", ["to": "far", "with": ["answer": 42]])
        #expect(e["data"]?["kind"] == "unknownTarget")
        #expect(try Self.stack(c) == ["baz", "bar"])
        #expect(try c.call("tree")["version"] == 1)
    }

    /// StackRouter.test.tsx, "getId is scoped to route name for navigate": navigating to bar with
    /// params another route's screen also has pushes a new bar (identity belongs to one name).
    @Test func identityIsScopedToTheRouteName() throws {
        let (d, c) = try daemonWithStack(["baz"])
        _ = d
        // The peer's starting state [qux {test: a}, baz {foo: a}], built with reset {to}.
        try c.call("reset", ["to": [["to": "qux", "with": ["test": "a"]], ["to": "baz", "with": ["foo": "a"]]]])
        try c.call("navigate", ["to": "bar", "with": ["foo": "a"]])
        #expect(try Self.stack(c) == ["qux{\"test\":\"a\"}", "baz{\"foo\":\"a\"}", "bar{\"foo\":\"a\"}"])
    }

    /// StackRouter.test.tsx, "handles pop action" (its first case): pop on [baz, bar, qux] leaves
    /// [baz, bar]; navd's `dismiss` removes the visible top.
    @Test func handlesPopAction() throws {
        let (d, c) = try daemonWithStack(["baz", "bar", "qux"])
        _ = d
        try c.call("dismiss")
        #expect(try Self.stack(c) == ["baz", "bar"])
    }
}
