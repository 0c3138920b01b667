import Foundation
import JSON
import NavTesting
import Testing

/// Cases of Jetpack Navigation's own tests (androidx, `navigation/navigation-runtime/src/
/// androidDeviceTest/kotlin/androidx/navigation/NavControllerTest.kt`) that map onto navd, through
/// the socket: a destination is a coordinator, `navigate(id, args)` is `navigate {to, with}`, an
/// action is a route, `navigate(Uri)` is `open` (`by: push` for the matched destination alone),
/// `popBackStack` is `dismiss`, `launchSingleTop` is `existing: top`, `popUpTo` is `popUpTo` (a
/// route with an argument: the node's id), `saveState()`/`restoreState` is the state file, an
/// `OnDestinationChangedListener` a subscriber. PROTOCOL.md §11 lists every test read and why the
/// others do not map.
@Suite struct JetpackConformanceTests {
    static let graph = """
        root: {stack: Start}
        coordinators:
          Start: {opens: [Second, StartWithDefault, Start, NonNullable, Route]}
          Second: {opens: [Start, Second, StartWithDefault], setup: {type: object, properties: {testKey: {type: string}, test: {type: string}, overridden: {type: string}}}}
          StartWithDefault: {opens: [Second]}
          NonNullable: {opens: [Start], setup: {type: object, required: [arg], properties: {arg: {type: integer}}}}
          Route: {opens: [Start], setup: {type: object, properties: {arg: {type: string}}}}
        routes:
          second: {to: Second, with: {overridden: action}}
        links:
          "/test/arg2": [Start, Second]
          "/test/:arg": [Start, {to: NonNullable, with: {arg: ":arg"}}]
          "/query?arg=:arg": [Start, {to: NonNullable, with: {arg: ":arg"}}]
        """

    func daemon() throws -> (Daemon, TestClient) {
        let d = try Daemon(graph: Self.graph)
        return (d, try d.client())
    }

    static func stack(_ c: TestClient) -> [String] { PeerConformanceTests.stack(c) }

    /// testGetCurrentBackStackEntry, testGetPreviousBackStackEntry,
    /// testGetPreviousBackStackEntryEmptyBackStack, testStartDestination, testSetGraph, testNavigate,
    /// testNavigateThenPop, testNavigateThenNavigateUp, testPopRoot and testPopOnEmptyStack (which
    /// do not hold: Jetpack empties the back stack, navd refuses — a stack is never empty).
    @Test func navigateAndPop() throws {
        let (d, c) = try daemon()
        _ = d
        #expect(Self.stack(c) == ["Start"])
        try c.call("navigate", ["to": "Second"])
        #expect(Self.stack(c) == ["Start", "Second"])
        try c.call("dismiss")
        #expect(Self.stack(c) == ["Start"])
        #expect(try c.callError("dismiss")["data"]?["kind"] == "unknownNode")
        #expect(Self.stack(c) == ["Start"])
    }

    /// testSetGraphTwiceSameGraph (the same graph again keeps the back stack: `graph.reload`),
    /// testMissingStartDestination and testInvalidStartDestination (`navd check` refuses them).
    /// testSetGraphTwice does not hold: a new graph keeps the sessions, checked against it.
    @Test func theGraph() throws {
        let (d, c) = try daemon()
        try c.call("navigate", ["to": "Second"])
        let before = try c.call("tree")
        let reload = try c.call("graph.reload")
        #expect(reload["ok"] == true, "\(reload)")
        #expect(try c.call("tree")["root"] == before["root"])
        _ = d
        let dir = TempDir()
        defer { dir.remove() }
        for (text, says) in [("coordinators:\n  Start: {}\n", "no module declares `root`"), ("root: {stack: Nope}\ncoordinators:\n  Start: {}\n", "`app.Nope`")] {
            try text.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
            let r = try runCommand(Repo.binary("navd"), ["check", dir.path])
            #expect(r.status != 0 && (r.stdout + r.stderr).contains(says), "\(r)")
        }
    }

    /// testInvalidNavigateViaDeepLink, testNavigateViaDeepLinkUri, testNavigationViaDeepLinkPopUpTo,
    /// testNavigateToDifferentGraphViaDeepLink (and 3x, and ToGrandchild3x),
    /// testNavigateMultipleParentsOnHierarchy, testHandleDeepLinkValid, testHandleDeepLinkAsUri,
    /// testHandleDeepLink_InvalidUri, testHandleDeepLinkActionWrongArgType_nonNullableArg,
    /// testHandleDeepLinkActionMissingQueryArg_nonNullableArg.
    @Test func deepLinks() throws {
        var (d, c) = try daemon()
        for url in ["android-app://androidx.navigation.test/invalid", "test-app://invalid/uri"] {
            #expect(try c.callError("open", ["url": .string(url)])["data"]?["kind"] == "noMatchingLink")
        }
        for _ in 0..<3 {
            try c.call("open", ["url": "android-app://androidx.navigation.test/test/arg2", "by": "push"])
            #expect(Self.stack(c) == ["Start", "Second"])
            try c.call("dismiss")
            #expect(Self.stack(c) == ["Start"])
        }
        try c.call("navigate", ["to": "Second", "popUpTo": ["to": "Start", "inclusive": true]])
        #expect(Self.stack(c) == ["Second"], "navigate with popUpTo the root, inclusive: the target alone")
        // testNavigationViaDeepLinkPopUpTo: navigate(deepLink, navOptions { popUpTo(start) }) leaves
        // the start destination and the link's destination.
        (d, c) = try daemon()
        try c.call("navigate", ["to": "StartWithDefault"])
        try c.call("navigate", ["to": "Second", "with": ["test": "x"]])
        try c.call("open", ["url": "android-app://androidx.navigation.test/test/arg2", "by": "push", "popUpTo": ["to": "Start"]])
        #expect(Self.stack(c) == ["Start", "Second"])
        try c.call("navigate", ["to": "Second"])
        try c.call("open", ["url": "android-app://androidx.navigation.test/test/arg2", "by": "push", "popUpTo": ["to": "Start", "inclusive": true]])
        #expect(Self.stack(c) == ["Second"], "inclusive of the first screen: the link's destination alone")
        let e = try c.callError("open", ["url": "android-app://androidx.navigation.test/test/arg2", "popUpTo": ["to": "Start"]])
        #expect(e["data"]?["param"] == "popUpTo", "a link that builds its whole stack replaces it: popUpTo goes with by: push")
        (d, c) = try daemon()
        try c.call("open", ["url": "android-app://androidx.navigation.test/test/arg2"])
        #expect(Self.stack(c) == ["Start", "Second"])
        // navd ignores a URL's scheme and host: the peer's `test-app://test/{arg}` is the path `/test/:arg`.
        try c.call("open", ["url": "test-app://app/test/333"])
        #expect(Self.stack(c) == ["Start", "NonNullable{\"arg\":333}"])
        for url in ["test-app://app/test/abc", "test-app://app/query"] {
            let e = try c.callError("open", ["url": .string(url)])
            #expect(e["data"]?["kind"] == "invalidSetup", "\(url): \(e)")
        }
        #expect(Self.stack(c) == ["Start", "NonNullable{\"arg\":333}"])
        _ = d
    }

    /// testNavigateWithArgs, testNavigateWithNoDefaultValue, testNavigateWithMissingNonNullableArg,
    /// testNavigateViaAction, testNavigateWithOverriddenDefaultArgs, testNavigateViaActionWithArgs
    /// (an action's default is a route's `with`, which given params override).
    @Test func arguments() throws {
        let (d, c) = try daemon()
        _ = d
        try c.call("navigate", ["to": "Second", "with": ["test": "value"]])
        #expect(Self.stack(c).last == "Second{\"test\":\"value\"}", "given, nothing else")
        try c.call("dismiss")
        #expect(try c.callError("navigate", ["to": "NonNullable"])["data"]?["kind"] == "invalidSetup")
        try c.call("navigate", ["route": "second"])
        #expect(Self.stack(c).last == "Second{\"overridden\":\"action\"}")
        try c.call("navigate", ["route": "second", "with": ["overridden": "override", "test": "value"]])
        #expect(Self.stack(c).last == "Second{\"overridden\":\"override\",\"test\":\"value\"}")
    }

    /// testNavigateOptionSingleTop, testNavigateOptionSingleTopNewArgs,
    /// testNavigateOptionSingleTopReplaceNullArgs, testNavigateOptionSingleTopNewArgsIgnore (without
    /// singleTop a new entry). navd keeps the same node where Jetpack makes a new entry; the state
    /// (destinations, arguments) is the same.
    @Test func singleTop() throws {
        let (d, c) = try daemon()
        _ = d
        try c.call("navigate", ["to": "Second"])
        try c.call("navigate", ["to": "Second", "existing": "top"])
        #expect(Self.stack(c) == ["Start", "Second"])
        try c.call("navigate", ["to": "Second", "with": ["testKey": "testValue"], "existing": "top"])
        #expect(Self.stack(c) == ["Start", "Second{\"testKey\":\"testValue\"}"])
        try c.call("reset")
        try c.call("navigate", ["to": "Start", "existing": "top"])
        #expect(Self.stack(c) == ["Start"])
        try c.call("navigate", ["to": "Second", "with": ["testKey": "testValue"]])
        #expect(Self.stack(c) == ["Start", "Second{\"testKey\":\"testValue\"}"])
    }

    /// testNavigateThenNavigateWithPop, testNavigateThenNavigateWithPopRoot, testNavigateOptionPopUpToInAction,
    /// testNavigateWithPopUpOptionsOnly, testNavigateOptionPopSelf, testNoDestinationNoPopUpTo,
    /// testNavigateThenPopToUnknownDestination, testNavigateOptionPopUpToFurthestRouteWithArg,
    /// testNavigateOptionPopUpToClosestRouteWithArg, testNavigateOptionPopUpToRouteWithoutArg.
    @Test func popUpTo() throws {
        var (d, c) = try daemon()
        try c.call("navigate", ["to": "Second", "popUpTo": ["to": "Start", "inclusive": true]])
        #expect(Self.stack(c) == ["Second"])

        (d, c) = try daemon()
        try c.call("navigate", ["to": "Second"])
        try c.call("dismiss", ["to": "Start"])
        #expect(Self.stack(c) == ["Start"])
        try c.call("navigate", ["to": "Second"])
        try c.call("dismiss")
        #expect(Self.stack(c) == ["Start"])
        #expect(try c.callError("navigate", [:])["data"]?["kind"] == "invalidParams")
        try c.call("navigate", ["to": "Second"])
        #expect(try c.callError("dismiss", ["to": "NonNullable"])["data"]?["kind"] == "unknownNode")
        #expect(Self.stack(c) == ["Start", "Second"])

        // Start, Route(arg1), Start, Route(arg2): popUpTo a route with an argument is popUpTo its node.
        for (which, expected) in [(0, ["Start", "Start"]), (1, ["Start", "Route{\"arg\":\"arg1\"}", "Start", "Start"])] {
            (d, c) = try daemon()
            var routes: [JSONValue] = []
            for arg in ["arg1", "arg2"] {
                routes.append(try c.call("navigate", ["to": "Route", "with": ["arg": .string(arg)]])["node"] ?? .null)
                if arg == "arg1" { try c.call("navigate", ["to": "Start"]) }
            }
            try c.call("navigate", ["to": "Start", "popUpTo": ["to": routes[which], "inclusive": true]])
            #expect(Self.stack(c) == expected, "popUpTo route \(which + 1)")
        }

        (d, c) = try daemon()
        try c.call("navigate", ["to": "Second"])
        try c.call("navigate", ["to": "Start", "popUpTo": ["to": "Second", "inclusive": true]])
        #expect(Self.stack(c) == ["Start", "Start"])
        _ = d
    }

    /// testSaveRestoreStateXml, testSaveRestoreStateProgrammatic, testSaveRestoreAfterNavigateToDifferentNavGraph,
    /// testBackstackArgsBundleParceled, testSaveRestoreStateDestinationChanged: the back stack and
    /// its arguments are there after `kill -9`, and a subscriber gets them (a snapshot).
    @Test func stateSurvivesKillNine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock")
        do {
            let d = try Daemon(graph: Self.graph, arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            try c.call("navigate", ["to": "Second", "with": ["test": "value"]])
            try c.call("navigate", ["to": "StartWithDefault"])
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(graph: Self.graph, arguments: ["--state", state], socketPath: sock)
        let c = try d.client()
        #expect(Self.stack(c) == ["Start", "Second{\"test\":\"value\"}", "StartWithDefault"])
        let snapshot = try c.call("subscribe")
        #expect(snapshot["version"] == 2 && snapshot["visible"]?.arrayValue?.count == 2)
    }

    /// testNavigateFromOnDestinationChangedListener, testPopFromOnDestinationChangedListener,
    /// currentBackStackEntryFlow: a subscriber that navigates when it hears a change sees every
    /// change, in order.
    @Test func aListenerThatNavigates() throws {
        let (d, c) = try daemon()
        let listener = try d.client()
        try listener.call("subscribe")
        try c.call("navigate", ["to": "Second"])
        let first = try listener.notification("stackChanged")["params"]
        #expect(first?["version"] == 1)
        try listener.call("dismiss")
        try listener.call("navigate", ["to": "StartWithDefault"])
        let ops = try [listener.notification("stackChanged"), listener.notification("stackChanged")].map {
            $0["params"]?["changes"]?.arrayValue?.first?["op"]?.stringValue ?? "?"
        }
        #expect(ops == ["pop", "push"] && Self.stack(c) == ["Start", "StartWithDefault"], "\(ops)")
    }
}
