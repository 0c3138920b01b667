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
        routes:
          # The peer's initial params (routeParamList) are a route's `with` defaults in navd.
          bazRoute: {to: baz, with: {foo: 21}}
          baz12: {to: baz, with: {foo: 12}}
          barRoute: {to: bar, with: {color: test}}
        """

    /// The same routes where bar and qux have an identity (the peer's `getId`: bar by `foo`, qux by `fux`).
    static let identityGraph = """
        root: {stack: baz}
        coordinators:
          baz: {opens: [bar, qux, baz], setup: {type: object, properties: {answer: {type: integer}}}}
          bar: {opens: [baz, qux, bar], identity: [foo], setup: {type: object, properties: {answer: {type: integer}, foo: {type: string}}}}
          qux: {opens: [baz, bar, qux], identity: [fux], setup: {type: object, properties: {fux: {type: string}}}}
        """

    /// The root stack as (coordinator without module, params) pairs, bottom first.
    static func stack(_ c: TestClient) -> [String] {
        guard let tree = try? c.call("tree") else { return ["(tree failed)"] }
        let children = tree["root"]?["children"]?.arrayValue ?? []
        return children.map { n in
            let name = (n["coordinator"]?.stringValue ?? "?").replacingOccurrences(of: "app.", with: "")
            let params = n["params"].map { JSONWriter.string($0) } ?? "{}"
            return params == "{}" ? name : "\(name)\(params)"
        }
    }

    func daemonWithStack(_ names: [String], graph: String = stackGraph) throws -> (Daemon, TestClient) {
        let d = try Daemon(graph: graph)
        let c = try d.client()
        for n in names.dropFirst() { try c.call("navigate", ["to": .string(n)]) }
        return (d, c)
    }

    /// Makes the root stack `steps` (the peer's starting state), as `reset {to}` builds it from the
    /// graph's root (a link keeps the bottom screen it shares with the tree).
    static func reset(_ c: TestClient, _ steps: [(String, JSONValue)]) throws {
        try c.call("reset")
        try c.call("reset", ["to": .array(steps.map { ["to": .string($0.0), "with": $0.1] })])
    }

    /// StackRouter.test.tsx, "handles navigate action": navigate('qux', {answer: 42}) on
    /// [baz, bar] pushes qux; navigate('baz', {answer: 42}) pushes a second baz.
    @Test func handlesNavigateAction() throws {
        var (d, c) = try daemonWithStack(["baz", "bar"])
        try c.call("navigate", ["to": "qux", "with": ["answer": 42]])
        #expect(Self.stack(c) == ["baz", "bar", "qux{\"answer\":42}"])
        _ = d
        (d, c) = try daemonWithStack(["baz", "bar"])
        try c.call("navigate", ["to": "baz", "with": ["answer": 42]])
        #expect(Self.stack(c) == ["baz", "bar", "baz{\"answer\":42}"])
    }

    /// StackRouter.test.tsx, "doesn't navigate to nonexistent screen": the router answers null (no
    /// change); navd answers `unknownTarget` and the tree stays.
    @Test func doesNotNavigateToANonexistentScreen() throws {
        let (d, c) = try daemonWithStack(["baz", "bar"])
        _ = d
        let e = try c.callError("navigate", ["to": "far", "with": ["answer": 42]])
        #expect(e["data"]?["kind"] == "unknownTarget")
        #expect(Self.stack(c) == ["baz", "bar"])
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
        #expect(Self.stack(c) == ["qux{\"test\":\"a\"}", "baz{\"foo\":\"a\"}", "bar{\"foo\":\"a\"}"])
    }

    /// StackRouter.test.tsx, "handles pop action": pop on [baz, bar, qux] leaves [baz, bar] (navd:
    /// `dismiss`); pop(2) leaves [baz] (`dismiss {node: bar}`, bar and what is above it); pop(4)
    /// stops at the first screen (`dismiss {to: baz}`); pop on [baz] changes nothing (navd refuses:
    /// a stack is never empty). Its cases with a `source` that is not the top keep the routes above
    /// it, which navd never does: not applicable.
    @Test func handlesPopAction() throws {
        var (d, c) = try daemonWithStack(["baz", "bar", "qux"])
        try c.call("dismiss")
        #expect(Self.stack(c) == ["baz", "bar"])
        (d, c) = try daemonWithStack(["baz", "bar", "qux"])
        let bar = try c.call("tree")["root"]?["children"]?.arrayValue?[1]["id"] ?? .null
        try c.call("dismiss", ["node": bar])
        #expect(Self.stack(c) == ["baz"])
        (d, c) = try daemonWithStack(["baz", "bar", "qux"])
        try c.call("dismiss", ["to": "baz"])
        #expect(Self.stack(c) == ["baz"])
        let e = try c.callError("dismiss")
        #expect(e["data"]?["kind"] == "unknownNode" && Self.stack(c) == ["baz"], "\(e)")
        _ = d
    }

    /// StackRouter.test.tsx, "handles pop to top action": popToTop on [baz] changes nothing, on
    /// [baz, bar, qux] leaves [baz]. navd: `dismiss {to: the first screen}` (already on top: refused,
    /// nothing changes).
    @Test func handlesPopToTopAction() throws {
        var (d, c) = try daemonWithStack(["baz"])
        #expect(try c.callError("dismiss", ["to": "baz"])["data"]?["kind"] == "unknownNode")
        #expect(Self.stack(c) == ["baz"])
        (d, c) = try daemonWithStack(["baz", "bar", "qux"])
        try c.call("dismiss", ["to": "baz"])
        #expect(Self.stack(c) == ["baz"])
        _ = d
    }

    /// StackRouter.test.tsx, "doesn't handle replace if source key isn't present when target is
    /// specified", "doesn't handle replace if screen to replace with isn't present", "doesn't
    /// push nonexistent screen", "doesn't popTo to nonexistent screen", "doesn't handle popTo if
    /// source key isn't present when target is specified": the router answers null; navd answers
    /// the error and the tree stays.
    @Test func refusedActionsChangeNothing() throws {
        let (d, c) = try daemonWithStack(["baz", "bar"])
        _ = d
        let cases: [(JSONValue, String)] = [
            (["to": "qux", "by": "replace", "from": "n999"], "unknownNode"),
            (["to": "nonexistent", "by": "replace"], "unknownTarget"),
            (["to": "far", "with": ["answer": 42]], "unknownTarget"),
            (["to": "far", "existing": "pop"], "unknownTarget"),
            (["to": "qux", "existing": "pop", "from": "n999"], "unknownNode"),
        ]
        for (params, kind) in cases {
            let e = try c.callError("navigate", params)
            #expect(e["data"]?["kind"] == .string(kind), "\(params): \(e)")
        }
        #expect(Self.stack(c) == ["baz", "bar"])
        #expect(try c.call("tree")["version"] == 1)
    }

    /// StackRouter.test.tsx, "handles push action": push('baz') on [bar] gives baz its initial
    /// params {foo: 21}; push('baz', {bar: 29}) merges them. In navd the initial params are the
    /// `with` of a route (`bazRoute`), which the request's `with` overrides field by field.
    @Test func handlesPushAction() throws {
        let (d, c) = try daemonWithStack(["baz"])
        _ = d
        try Self.reset(c, [("bar", [:])])
        try c.call("navigate", ["route": "bazRoute"])
        #expect(Self.stack(c) == ["bar", "baz{\"foo\":21}"])
        try Self.reset(c, [("bar", [:])])
        try c.call("navigate", ["route": "bazRoute", "with": ["bar": 29]])
        #expect(Self.stack(c) == ["bar", "baz{\"foo\":21,\"bar\":29}"])
    }

    /// StackRouter.test.tsx, "handles getId for push": push always adds a screen, whatever its
    /// identity (navd's default, `existing: push`).
    @Test func handlesIdentityForPush() throws {
        let (d, c) = try daemonWithStack(["baz"], graph: Self.identityGraph)
        _ = d
        try Self.reset(c, [("bar", [:]), ("bar", ["foo": "a"])])
        try c.call("navigate", ["to": "bar", "with": ["foo": "a"]])
        try c.call("navigate", ["to": "bar", "with": ["foo": "b"]])
        #expect(Self.stack(c) == ["bar", "bar{\"foo\":\"a\"}", "bar{\"foo\":\"a\"}", "bar{\"foo\":\"b\"}"])
    }

    /// StackRouter.test.tsx, "doesn't merge params on popTo to an existing screen": popTo('bar') on
    /// [baz, bar {answer: 42}, qux] gives bar its initial params alone; popTo('bar', {fruit}) on
    /// [baz, bar {answer: 42}] gives {color, fruit}. navd: `existing: pop` with the route's defaults.
    @Test func doesNotMergeParamsOnExistingPop() throws {
        let (d, c) = try daemonWithStack(["baz"])
        _ = d
        try Self.reset(c, [("baz", [:]), ("bar", ["answer": 42]), ("qux", [:])])
        try c.call("navigate", ["route": "barRoute", "existing": "pop"])
        #expect(Self.stack(c) == ["baz", "bar{\"color\":\"test\"}"])
        try Self.reset(c, [("baz", [:]), ("bar", ["answer": 42])])
        try c.call("navigate", ["route": "barRoute", "with": ["fruit": "orange"], "existing": "pop"])
        #expect(Self.stack(c) == ["baz", "bar{\"color\":\"test\",\"fruit\":\"orange\"}"])
    }

    /// StackRouter.test.tsx, "merges params on popTo to an existing screen if merge: true": the
    /// screen found keeps its params with the initial and given ones merged in. navd: `existing:
    /// pop, merge: true` (fields in navd's order: the screen's, then the new ones).
    @Test func mergesParamsOnExistingPopWithMerge() throws {
        let (d, c) = try daemonWithStack(["baz"])
        _ = d
        try Self.reset(c, [("baz", [:]), ("bar", ["answer": 42]), ("qux", [:])])
        try c.call("navigate", ["route": "barRoute", "existing": "pop", "merge": true])
        #expect(Self.stack(c) == ["baz", "bar{\"answer\":42,\"color\":\"test\"}"])
        try Self.reset(c, [("baz", [:]), ("bar", ["answer": 42])])
        try c.call("navigate", ["route": "barRoute", "with": ["fruit": "orange"], "existing": "pop", "merge": true])
        #expect(Self.stack(c) == ["baz", "bar{\"answer\":42,\"color\":\"test\",\"fruit\":\"orange\"}"])
        try Self.reset(c, [("baz", ["test": 99]), ("bar", ["answer": 42])])
        try c.call("navigate", ["route": "baz12", "with": ["color": "black"], "existing": "pop", "merge": true])
        #expect(Self.stack(c) == ["baz{\"test\":99,\"foo\":12,\"color\":\"black\"}"])
    }

    /// StackRouter.test.tsx, "updates params on navigate if already on the screen": navigate('bar',
    /// {answer: 96}) on [baz, bar {answer: 42, color: tomato}] keeps bar, its params replaced. In
    /// navd: `existing: top` (the default pushes); the screen keeps its id, one `update` change.
    @Test func updatesParamsOnNavigateIfAlreadyOnTheScreen() throws {
        let (d, c) = try daemonWithStack(["baz"])
        _ = d
        try Self.reset(c, [("baz", [:]), ("bar", ["answer": 42, "color": "tomato"])])
        let before = try c.call("tree")
        let top = try c.call("navigate", ["to": "bar", "with": ["answer": 96], "existing": "top"])
        #expect(Self.stack(c) == ["baz", "bar{\"answer\":96}"])
        #expect(top["node"] == before["root"]?["children"]?.arrayValue?[1]["id"])
        #expect(top["version"]?.intValue == (before["version"]?.intValue ?? 0) + 1)
    }

    /// StackRouter.test.tsx, "merges params on navigate when specified": navigate('bar', {answer:
    /// 96}, {merge: true}) on [baz, bar {color: tomato}] gives bar {color: tomato, answer: 96}.
    @Test func mergesParamsOnNavigateWhenSpecified() throws {
        let (d, c) = try daemonWithStack(["baz"])
        _ = d
        try Self.reset(c, [("baz", [:]), ("bar", ["color": "tomato"])])
        try c.call("navigate", ["to": "bar", "with": ["answer": 96], "existing": "top", "merge": true])
        #expect(Self.stack(c) == ["baz", "bar{\"color\":\"tomato\",\"answer\":96}"])
    }

    /// StackRouter.test.tsx, "handles getId for navigate": with bar's identity `foo`, navigating to
    /// bar {foo: a} pushes unless the screen on top is bar {foo: a}, which stays as it is (no change,
    /// the version stays).
    @Test func handlesIdentityForNavigate() throws {
        let (d, c) = try daemonWithStack(["bar"], graph: Self.identityGraph)
        _ = d
        let nav: JSONValue = ["to": "bar", "with": ["foo": "a"], "existing": "top"]
        try Self.reset(c, [("bar", [:])])
        try c.call("navigate", nav)
        #expect(Self.stack(c) == ["bar", "bar{\"foo\":\"a\"}"])

        let v = try c.call("tree")["version"]
        let same = try c.call("navigate", nav)
        #expect(Self.stack(c) == ["bar", "bar{\"foo\":\"a\"}"])
        let now = try c.call("tree")["version"]
        #expect(same["version"] == v && now == v)

        try Self.reset(c, [("bar", ["foo": "a"]), ("bar", [:])])
        try c.call("navigate", nav)
        #expect(Self.stack(c) == ["bar{\"foo\":\"a\"}", "bar", "bar{\"foo\":\"a\"}"])

        try Self.reset(c, [("bar", [:]), ("bar", ["foo": "a"])])
        try c.call("navigate", ["to": "bar", "with": ["foo": "b"], "existing": "top"])
        #expect(Self.stack(c) == ["bar", "bar{\"foo\":\"a\"}", "bar{\"foo\":\"b\"}"])
    }

    /// StackRouter.test.tsx, "handles getId for navigate" (the case where `getId` answers undefined:
    /// the new params give no identity field): the route is matched by name and takes the params.
    /// navd: a navigation whose params give none of the target's `identity` fields matches a screen
    /// of the target by name (`existing: top` or `pop`); before, it pushed a second screen.
    @Test func identityWithoutItsFieldsMatchesByName() throws {
        let (d, c) = try daemonWithStack(["bar"], graph: Self.identityGraph)
        _ = d
        try Self.reset(c, [("bar", ["foo": "a"])])
        let v = try c.call("tree")["version"]?.intValue ?? 0
        let r = try c.call("navigate", ["to": "bar", "with": ["answer": 1], "existing": "top"])
        #expect(Self.stack(c) == ["bar{\"answer\":1}"], "the screen by name took the params")
        #expect(r["version"]?.intValue == v + 1)
        try Self.reset(c, [("bar", ["foo": "a"]), ("baz", [:])])
        try c.call("navigate", ["to": "bar", "with": [:], "existing": "pop"])
        #expect(Self.stack(c) == ["bar"])
        // An identity field given is compared as before: another id pushes.
        try c.call("navigate", ["to": "bar", "with": ["foo": "b"], "existing": "top"])
        #expect(Self.stack(c) == ["bar", "bar{\"foo\":\"b\"}"])
    }

    /// StackRouter.test.tsx, "goes back to matching screen for navigate if pop: true": qux, not in
    /// [baz, bar], is pushed; baz is popped to and takes {answer: 42}; bar {answer: 42} on top takes
    /// {answer: 96}. In navd: `existing: pop`.
    @Test func goesBackToTheMatchingScreenWithExistingPop() throws {
        var (d, c) = try daemonWithStack(["baz", "bar"])
        try c.call("navigate", ["to": "qux", "with": ["answer": 42], "existing": "pop"])
        #expect(Self.stack(c) == ["baz", "bar", "qux{\"answer\":42}"])
        _ = d
        (d, c) = try daemonWithStack(["baz", "bar"])
        let r = try c.call("navigate", ["to": "baz", "with": ["answer": 42], "existing": "pop"])
        #expect(Self.stack(c) == ["baz{\"answer\":42}"])
        #expect(r["version"] == 2)  // one commit: the pop and the update
        try Self.reset(c, [("baz", [:]), ("bar", ["answer": 42])])
        try c.call("navigate", ["to": "bar", "with": ["answer": 96], "existing": "pop"])
        #expect(Self.stack(c) == ["baz", "bar{\"answer\":96}"])
    }

    /// StackRouter.test.tsx, "goes back to matching ID for navigate if pop: true": bar {foo: a} on
    /// top stays; from [bar, bar a, bar b, bar c], bar {foo: b} pops bar c.
    @Test func goesBackToTheMatchingIdentityWithExistingPop() throws {
        let (d, c) = try daemonWithStack(["bar"], graph: Self.identityGraph)
        _ = d
        try Self.reset(c, [("bar", [:]), ("bar", ["foo": "a"])])
        try c.call("navigate", ["to": "bar", "with": ["foo": "a"], "existing": "pop"])
        #expect(Self.stack(c) == ["bar", "bar{\"foo\":\"a\"}"])
        try Self.reset(c, [("bar", [:]), ("bar", ["foo": "a"]), ("bar", ["foo": "b"]), ("bar", ["foo": "c"])])
        try c.call("navigate", ["to": "bar", "with": ["foo": "b"], "existing": "pop"])
        #expect(Self.stack(c) == ["bar", "bar{\"foo\":\"a\"}", "bar{\"foo\":\"b\"}"])
    }

    // MARK: BaseRouter.test.tsx

    /// React Navigation, `packages/routers/src/__tests__/BaseRouter.test.tsx`: routes foo, bar,
    /// baz, qux; the peer's state is [foo, bar {fruit: orange}, baz {sort: latest}].
    static let baseGraph = """
        root: {stack: foo}
        coordinators:
          foo: {opens: [bar]}
          bar: {opens: [baz]}
          baz: {opens: [qux]}
          qux: {}
        """

    func baseState() throws -> (Daemon, TestClient, [String]) {
        let d = try Daemon(graph: Self.baseGraph)
        let c = try d.client()
        try c.call("reset", ["to": [["to": "foo"], ["to": "bar", "with": ["fruit": "orange"]], ["to": "baz", "with": ["sort": "latest"]]]])
        let ids = try c.call("tree")["root"]?["children"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        return (d, c, ids)
    }

    /// BaseRouter.test.tsx, "pushes new params for the focused screen with PUSH_PARAMS", "pushes new
    /// params for the source screen with PUSH_PARAMS", "pushes new params for route with no existing
    /// params with PUSH_PARAMS", "pushes new params with existing history with PUSH_PARAMS", "doesn't
    /// handle PUSH_PARAMS if source key isn't present": the params are replaced (navd: `update`
    /// with `null` for the old fields, as for REPLACE_PARAMS) and the earlier ones kept in the
    /// route's history (navd: `update {push: true}`, `paramsHistory`; a route without params had
    /// `{}`). Going back restores them before the screen leaves (React Navigation's `goBack` after
    /// `pushParams`): navd's `dismiss`, an `update` change; at most 16 are kept.
    @Test func pushesParamsThatBackRestores() throws {
        let (d, c, ids) = try baseState()
        _ = d
        func history(_ i: Int) throws -> JSONValue? { try c.call("tree")["root"]?["children"]?.arrayValue?[i]["paramsHistory"] }
        try c.call("update", ["node": .string(ids[1]), "with": ["fruit": .null, "answer": 42], "push": true])
        #expect(Self.stack(c) == ["foo", "bar{\"answer\":42}", "baz{\"sort\":\"latest\"}"])
        #expect(try history(1) == [["fruit": "orange"]])
        try c.call("update", ["node": .string(ids[2]), "with": ["sort": .null, "user": "jane"], "push": true])
        #expect(try history(2) == [["sort": "latest"]] && Self.stack(c).last == "baz{\"user\":\"jane\"}")
        try c.call("update", ["node": .string(ids[0]), "with": ["user": "jane"], "push": true])
        #expect(try history(0) == [[:]] && Self.stack(c).first == "foo{\"user\":\"jane\"}")
        try c.call("update", ["node": .string(ids[1]), "with": ["answer": .null, "fruit": "banana"], "push": true])
        #expect(try history(1) == [["fruit": "orange"], ["answer": 42]])
        #expect(try c.callError("update", ["node": "magic", "with": ["answer": 42], "push": true])["data"]?["kind"] == "unknownNode")

        // Back: baz, the visible top, takes its earlier params and stays (nothing removed, an
        // update change); then it leaves.
        let watcher = try d.client()
        try watcher.call("subscribe")
        let back = try c.call("dismiss")
        #expect(back["removed"] == [], "the screen stays: \(back)")
        let bazHistory = try history(2)
        #expect(Self.stack(c).last == "baz{\"sort\":\"latest\"}" && bazHistory == nil)
        let restored = try watcher.notification("stackChanged")
        #expect(restored["params"]?["changes"]?.arrayValue?.map { $0["op"] } == ["update"], "\(restored)")
        try c.call("dismiss")
        #expect(Self.stack(c) == ["foo{\"user\":\"jane\"}", "bar{\"fruit\":\"banana\"}"])
        try c.call("dismiss")
        #expect(Self.stack(c) == ["foo{\"user\":\"jane\"}", "bar{\"answer\":42}"])
        // Bounded: the 16 most recent earlier params are kept.
        for i in 0..<20 { try c.call("update", ["node": .string(ids[1]), "with": ["answer": .int(i)], "push": true]) }
        let kept = try history(1)?.arrayValue ?? []
        #expect(kept.count == 16 && kept.last?["answer"] == 18 && kept.first?["answer"] == 3, "\(kept)")
        // A dismiss that goes `to` a screen removes as before.
        try c.call("dismiss", ["to": "foo"])
        #expect(Self.stack(c) == ["foo{\"user\":\"jane\"}"])
    }

    /// The params history is saved with the session: a navd started again on the same state file
    /// shows it and restores from it.
    @Test func pushedParamsSurviveARestart() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite")
        try Self.baseGraph.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        var bazId = ""
        do {
            let d = try Daemon(arguments: ["--graph", dir.path, "--state", state])
            let c = try d.client()
            try c.call("navigate", ["to": "bar"])
            bazId = try c.call("navigate", ["to": "baz", "with": ["sort": "latest"]])["node"]?.stringValue ?? ""
            try c.call("update", ["node": .string(bazId), "with": ["sort": "newest"], "push": true])
            #expect(d.stop() == 0)
        }
        let d = try Daemon(arguments: ["--graph", dir.path, "--state", state])
        let c = try d.client()
        let top = try c.call("tree")["root"]?["children"]?.arrayValue?.last
        #expect(top?["id"]?.stringValue == bazId && top?["paramsHistory"] == [["sort": "latest"]], "\(top ?? .null)")
        try c.call("dismiss")
        #expect(Self.stack(c) == ["foo", "bar", "baz{\"sort\":\"latest\"}"])
    }

    /// BaseRouter.test.tsx, "sets params for the focused screen with SET_PARAMS", "merges params for
    /// the source screen with SET_PARAMS", "sets params for the source screen with SET_PARAMS",
    /// "doesn't handle SET_PARAMS if source key isn't present": navd's `update {node, with}` merges
    /// (the focused screen is the node the front-end shows; an unknown node is refused).
    @Test func setParams() throws {
        let (d, c, ids) = try baseState()
        _ = d
        try c.call("update", ["node": .string(ids[1]), "with": ["answer": 42]])
        try c.call("update", ["node": .string(ids[2]), "with": ["user": "jane"]])
        try c.call("update", ["node": .string(ids[0]), "with": ["user": "jane"]])
        #expect(Self.stack(c) == ["foo{\"user\":\"jane\"}", "bar{\"fruit\":\"orange\",\"answer\":42}", "baz{\"sort\":\"latest\",\"user\":\"jane\"}"])
        #expect(try c.callError("update", ["node": "magic", "with": ["answer": 42]])["data"]?["kind"] == "unknownNode")
    }

    /// BaseRouter.test.tsx, "replaces params for the focused screen with REPLACE_PARAMS", "adds
    /// params for the source screen with REPLACE_PARAMS", "replaces params for the source screen
    /// with REPLACE_PARAMS", "doesn't handle REPLACE_PARAMS if source key isn't present": navd's
    /// `update` replaces by removing the old fields (`null`) in the same commit.
    @Test func replaceParams() throws {
        let (d, c, ids) = try baseState()
        _ = d
        try c.call("update", ["node": .string(ids[1]), "with": ["fruit": .null, "answer": 42]])
        try c.call("update", ["node": .string(ids[0]), "with": ["user": "jane"]])
        try c.call("update", ["node": .string(ids[2]), "with": ["sort": .null, "user": "jane"]])
        #expect(Self.stack(c) == ["foo{\"user\":\"jane\"}", "bar{\"answer\":42}", "baz{\"user\":\"jane\"}"])
        #expect(try c.callError("update", ["node": "magic", "with": ["answer": 42]])["data"]?["kind"] == "unknownNode")
    }

    /// BaseRouter.test.tsx, "doesn't handle RESET if routes don't match routeNames", "doesn't
    /// handle RESET if there are no routes": refused, the tree stays.
    @Test func resetsThatCannotBeMade() throws {
        let (d, c, _) = try baseState()
        _ = d
        let before = try c.call("tree")
        #expect(try c.callError("reset", ["to": ["bar", "baz", "quz"]])["data"]?["kind"] == "unknownTarget")
        #expect(try c.callError("reset", ["to": []])["data"]?["kind"] == "invalidParams")
        #expect(try c.call("tree") == before)
    }
}
