import Foundation
import JSON
import NavTesting
import Testing

/// Cases of go_router's own tests (flutter/packages, `packages/go_router/test/go_router_test.dart`)
/// that map onto navd, through the socket. A go_router `GoRoute` path is a navd link (`go` is
/// `open`, `push` is `open {by: push}`, `pop` is `dismiss`), a named route is a navd route, a
/// redirect is a precondition's `redirect:` (top-level: a graph-level guard), `pop(result)` is
/// `dismiss {result}`, a `StatefulShellRoute`'s branches are tabs. PROTOCOL.md §11 lists every test
/// read and why the others do not map.
@Suite struct GoRouterConformanceTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Login, Page1, Page2, Family, Person, Ok, Dialog]}
          Login: {}
          Page1: {opens: [Page2, Page1, Dialog], setup: {type: object, properties: {param1: {type: string}}}}
          Page2: {opens: [Page1, Page2]}
          Family: {opens: [Person], setup: {type: object, required: [fid], properties: {fid: {type: string}}}}
          Person: {setup: {type: object, required: [fid, pid], additionalProperties: false, properties: {fid: {type: string}, pid: {type: string}}}}
          Ok: {setup: {type: object, required: [ok], properties: {ok: {type: string}}}}
          Dialog: {presentations: [present]}
        routes:
          home: {to: Home, by: root}
          login: {to: Login}
          family: {to: Family}
          person: {to: Person}
        links:
          "/": [Home]
          "/login": [Home, Login]
          "/page1?param1=:param1": [Home, {to: Page1, with: {param1: ":param1"}}]
          "/page1/:param1": [Home, {to: Page1, with: {param1: ":param1"}}]
          "/page2": [Home, Page2]
          "/family/:fid": [Home, {to: Family, with: {fid: ":fid"}}]
          "/family?fid=:fid": [Home, {to: Family, with: {fid: ":fid"}}]
          "/family/:fid/person/:pid": [Home, {to: Family, with: {fid: ":fid"}}, {to: Person, with: {fid: ":fid", pid: ":pid"}}]
          "/person?fid=:fid&pid=:pid": [Home, {to: Person, with: {fid: ":fid", pid: ":pid"}}]
          "/:ok": [Home, {to: Ok, with: {ok: ":ok"}}]
        """

    func daemon(_ graph: String = graph) throws -> (Daemon, TestClient) {
        let d = try Daemon(graph: graph)
        return (d, try d.client())
    }

    static func stack(_ c: TestClient) -> [String] { PeerConformanceTests.stack(c) }

    /// "match home route", "match 2nd top level route", "… with subroutes", "match sub-route",
    /// "match sub-routes", "match top level route when location has trailing /", "… has scheme/host
    /// and has trailing /" (and (2)), "If there is more than one route to match, use the first match."
    /// (`/:ok` after the literal paths), "return first matching route if too many subroutes" (the
    /// first declared of distinct patterns), the `_effectiveInitialLocation()` cases (scheme and
    /// authority, no path, with a trailing slash, with a query), "match no routes" (an error, the tree
    /// stays), "preserve path param case", "preserve query param case", "preserve path param spaces
    /// and slashes", "preserve query param spaces and slashes" (raw, and form-encoded with `+`).
    @Test(arguments: [
        ("/", ["Home"]),
        ("/login", ["Home", "Login"]),
        ("/login/", ["Home", "Login"]),
        ("https://www.domain.com/?bar=baz", ["Home"]),
        ("https://www.domain.com/login/", ["Home", "Login"]),
        ("https://domain.com", ["Home"]),
        ("https://domain.com/", ["Home"]),
        ("https://domain.com?param=1", ["Home"]),
        ("/family/f2", ["Home", "Family{\"fid\":\"f2\"}"]),
        ("/family/F2", ["Home", "Family{\"fid\":\"F2\"}"]),
        ("/family?fid=F2", ["Home", "Family{\"fid\":\"F2\"}"]),
        ("/family/f2/person/p1", ["Home", "Family{\"fid\":\"f2\"}", "Person{\"fid\":\"f2\",\"pid\":\"p1\"}"]),
        ("/user", ["Home", "Ok{\"ok\":\"user\"}"]),
        ("/page1/param%20w%2F%20spaces%20and%20slashes", ["Home", "Page1{\"param1\":\"param w/ spaces and slashes\"}"]),
        ("/page1?param1=param w/ spaces and slashes", ["Home", "Page1{\"param1\":\"param w/ spaces and slashes\"}"]),
        ("/page1?param1=param+w%2F+spaces+and+slashes", ["Home", "Page1{\"param1\":\"param w/ spaces and slashes\"}"]),
    ])
    func aLocationBuildsItsStack(url: String, expected: [String]) throws {
        let (d, c) = try daemon()
        _ = d
        try c.call("open", ["url": .string(url)])
        #expect(Self.stack(c) == expected, "\(url)")
    }

    /// "match no routes": no route matches, an error, nothing changes. ("match path case
    /// insensitively" does not hold: navd matches a path as written.)
    @Test func aLocationNoLinkMatchesIsAnError() throws {
        let (d, c) = try daemon()
        _ = d
        for url in ["/foo/bar", "/FaMiLy/f2/person/p1"] {
            #expect(try c.callError("open", ["url": .string(url)])["data"]?["kind"] == "noMatchingLink", "\(url)")
        }
        #expect(Self.stack(c) == ["Home"])
    }

    /// "can correctly pop stacks of repeated pages", "repeatedly pops imperative route does not
    /// crash", "push + query param", "keep param in nested
    /// route", "Handles the Android back button correctly", "Handles the Android back button
    /// correctly with ShellRoute" (pops one screen at a time), "Should pop from the correct
    /// navigator when parentNavigatorKey is set".
    @Test func pushAndPop() throws {
        var (d, c) = try daemon()
        try c.call("open", ["url": "/page1"])
        for url in ["/page2", "/page1", "/page2"] { try c.call("open", ["url": .string(url), "by": "push"]) }
        #expect(Self.stack(c) == ["Home", "Page1", "Page2", "Page1", "Page2"])
        try c.call("dismiss")
        #expect(Self.stack(c) == ["Home", "Page1", "Page2", "Page1"])

        (d, c) = try daemon()
        try c.call("open", ["url": "/family?fid=f2"])
        try c.call("open", ["url": "/person?fid=f2&pid=p1", "by": "push"])
        #expect(Self.stack(c) == ["Home", "Family{\"fid\":\"f2\"}", "Person{\"fid\":\"f2\",\"pid\":\"p1\"}"])

        (d, c) = try daemon()
        try c.call("open", ["url": "/family/f1/person/p2", "by": "push"])
        #expect(Self.stack(c) == ["Home", "Person{\"fid\":\"f1\",\"pid\":\"p2\"}"], "only the matched screen is pushed")

        // "repeatedly pops imperative route does not crash": a dialog over a pushed screen, twice.
        (d, c) = try daemon()
        try c.call("open", ["url": "/page1"])
        for _ in 0..<2 {
            try c.call("navigate", ["to": "Dialog", "by": "present"])
            try c.call("dismiss")
            #expect(Self.stack(c) == ["Home", "Page1"])
        }

        (d, c) = try daemon()
        try c.call("open", ["url": "/family/f2/person/p1"])
        try c.call("dismiss")
        #expect(Self.stack(c) == ["Home", "Family{\"fid\":\"f2\"}"])
        try c.call("dismiss")
        #expect(Self.stack(c) == ["Home"])
        _ = d
    }

    /// "report correct url": "on push with optionURLReflectImperativeAPIs = true", "on pop", "on
    /// pop twice", "on pop with path parameters" (and case 2), "router state" (the location and its
    /// parameters), "preserve path param spaces and slashes" of named routes (the location made
    /// from params opens them again). navd's `link.resolve` always follows the tree ("on push" with
    /// the option off does not hold).
    @Test func theLocationFollowsTheTree() throws {
        let (d, c) = try daemon()
        _ = d
        try c.call("open", ["url": "/family/f2/person/p1"])
        #expect(try c.call("link.resolve")["url"] == "/family/f2/person/p1")
        try c.call("dismiss")
        #expect(try c.call("link.resolve")["url"] == "/family/f2")
        try c.call("dismiss")
        #expect(try c.call("link.resolve")["url"] == "/")
        try c.call("open", ["url": "/login", "by": "push"])
        #expect(try c.call("link.resolve")["url"] == "/login")
        try c.call("reset", ["to": ["Home", ["to": "Page1", "with": ["param1": "param w/ spaces and slashes"]]]])
        let url = try c.call("link.resolve")["url"]?.stringValue ?? ""
        try c.call("reset")
        try c.call("open", ["url": .string(url)])
        #expect(Self.stack(c) == ["Home", "Page1{\"param1\":\"param w/ spaces and slashes\"}"], "\(url)")
    }

    /// Named routes: "match home route", "match 2nd top level route", "match sub-route", "match w/
    /// params", "sparsely named routes" hold; "match no routes", "cannot match case insensitive",
    /// "too few params" (twice) and "too many params" are errors that change nothing.
    @Test func namedRoutes() throws {
        let (d, c) = try daemon()
        _ = d
        try c.call("navigate", ["route": "login"])
        try c.call("navigate", ["route": "home"])
        #expect(Self.stack(c) == ["Home"])
        try c.call("navigate", ["route": "person", "with": ["fid": "f2", "pid": "p1"]])
        #expect(Self.stack(c) == ["Home", "Person{\"fid\":\"f2\",\"pid\":\"p1\"}"])
        try c.call("navigate", ["route": "home"])
        let refused: [(JSONValue, String)] = [
            (["route": "work"], "unknownTarget"),
            (["route": "PeRsOn", "with": ["fid": "f2", "pid": "p1"]], "unknownTarget"),
            (["route": "person", "with": ["fid": "f2"]], "invalidSetup"),
            (["route": "family"], "invalidSetup"),
            (["route": "person", "with": ["fid": "f2", "pid": "p1", "extra": "x"]], "invalidSetup"),
        ]
        for (params, kind) in refused {
            #expect(try c.callError("navigate", params)["data"]?["kind"] == .string(kind), "\(params)")
        }
        #expect(Self.stack(c) == ["Home"])
    }

    /// "empty path", "lack of leading / on top-level route", "error: duplicate path param", "match
    /// too many routes" (two routes of one name), "If there is more than one route to match, use
    /// the first match" (two links of one path: navd refuses the graph instead), "empty name":
    /// `navd check` refuses the graph, saying where.
    @Test(arguments: [
        ("links:\n  \"\": [Home]\n", "app.yaml:6:3"),
        ("links:\n  \"foo\": [Home]\n", "app.yaml:6:3"),
        ("links:\n  \"/:id/:blah/:id\": [Home]\n", "app.yaml:6:3"),
        ("links:\n  \"/a\": [Home]\n  \"/a\": [Home]\n", "app.yaml:7:3"),
        ("routes:\n  home: {to: Home}\n  home: {to: Home}\n", "app.yaml:7:3"),
        ("routes:\n  \"\": {to: Home}\n", "app.yaml:6:3"),
    ])
    func graphsGoRouterRefusesNavdRefuses(tail: String, at: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        try ("root: {stack: Home}\ncoordinators:\n  Home: {}\n" + "preconditions: {}\n" + tail)
            .write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["check", dir.path])
        let out = r.stdout + r.stderr
        #expect(r.status != 0 && out.contains("\(at): error:"), "\(tail): \(out)")
    }

    // MARK: redirects

    /// A top-level redirect (a graph-level guard: not signed in → Login) and route-level ones
    /// (Dummy → Login, Dummy1 → Dummy2 → Home, Loop1 ↔ Loop2).
    static let redirectGraph = """
        root: {stack: Home}
        guards:
          - {precondition: signedIn, except: [Home, Loop1, Loop2]}
        coordinators:
          Home: {opens: [Login, Dummy, Dummy1, Book, Loop1, Other]}
          Login: {}
          Other: {}
          Other2: {}
          Dummy: {opens: [Dummy2], preconditions: [toOther]}
          Dummy1: {preconditions: [toDummy2]}
          Dummy2: {preconditions: [toOther2]}
          Book: {setup: {type: object, properties: {bookId: {type: string}}}, preconditions: [asked]}
          Loop1: {preconditions: [toLoop2]}
          Loop2: {preconditions: [toLoop1]}
        routes:
          dummy: {to: Dummy}
        links:
          "/dummy": [Home, Dummy]
          "/dummy/dummy2": [Home, Dummy, Dummy2]
          "/book/:bookId": [Home, {to: Book, with: {bookId: ":bookId"}}]
        preconditions:
          signedIn: {check: {fact: user, exists: true}, redirect: Login}
          toOther: {check: {fact: never, exists: true}, redirect: Other}
          toDummy2: {check: {fact: never, exists: true}, redirect: Dummy2}
          toOther2: {check: {fact: never, exists: true}, redirect: Other2}
          toLoop1: {check: {fact: never, exists: true}, redirect: Loop1}
          toLoop2: {check: {fact: never, exists: true}, redirect: Loop2}
          asked: {provider: true, timeout: 10s}
        """

    /// "top-level redirect", "top-level redirect w/ named routes", "top-level redirect take
    /// priority over route level": the guard sends every guarded navigation to Login first (the
    /// coordinator's own redirect never runs). Signed in: "route-level redirect", "route-level
    /// redirect w/ named routes", "multiple mixed redirect" (a chain), "parent route level redirect
    /// take priority over child" (in a link, the first screen that redirects wins).
    @Test func redirects() throws {
        let (d, c) = try daemon(Self.redirectGraph)
        _ = d
        for request in [("open", ["url": "/dummy"] as JSONValue), ("navigate", ["route": "dummy"] as JSONValue)] {
            let r = try c.call(request.0, request.1)
            #expect(r["redirected"]?.arrayValue?.map { $0["precondition"] } == ["app.signedIn"], "\(r)")
            #expect(Self.stack(c).last == "Login")
            try c.call("reset")
        }
        try c.call("context.set", ["facts": ["user": "ann"]])
        try c.call("open", ["url": "/dummy"])
        #expect(Self.stack(c) == ["Home", "Other"])
        try c.call("reset")
        try c.call("navigate", ["route": "dummy"])
        #expect(Self.stack(c) == ["Home", "Other"])
        try c.call("reset")
        let chain = try c.call("navigate", ["to": "Dummy1"])
        #expect(chain["redirected"]?.arrayValue?.map { $0["to"] } == ["app.Dummy2", "app.Other2"], "\(chain)")
        try c.call("reset")
        try c.call("open", ["url": "/dummy/dummy2"])
        #expect(Self.stack(c) == ["Home", "Other"])
    }

    /// "route-level redirect loop" does not hold (go_router shows a page; navd refuses), the loops
    /// of "top-level redirect loop", "mixed redirect loop", "top-level redirect loop w/ query
    /// params" and "redirect limit" do: an error naming the chain, nothing changed.
    @Test func aRedirectLoopIsAnError() throws {
        let (d, c) = try daemon(Self.redirectGraph)
        _ = d
        let e = try c.callError("navigate", ["to": "Loop1"])
        #expect(e["data"]?["kind"] == "preconditionFailed" && e["data"]?["redirects"] != nil, "\(e)")
        #expect(Self.stack(c) == ["Home"])
    }

    /// "works correctly with async redirect", "route-level redirect state", "top-level redirect
    /// state contains path parameters", "sub-sub-route-level redirect params": a redirect decided
    /// later (a provider) is awaited, and is told the location's parameters.
    @Test func aRedirectDecidedLaterIsToldTheParameters() throws {
        let (d, c) = try daemon(Self.redirectGraph)
        _ = d
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        try c.call("context.set", ["facts": ["user": "ann"]])
        let id = try c.send("open", ["url": "/book/0"])
        let ask = try provider.serverRequest("precondition.evaluate")
        #expect(ask["params"]?["navigation"]?["with"] == ["bookId": "0"], "\(ask)")
        #expect(Self.stack(c) == ["Home"], "nothing yet")
        try provider.respond(to: ask, result: ["passed": false, "redirect": "app.Login"])
        let r = try c.reply(to: id)
        #expect(r["result"]?["redirected"] != nil, "\(r)")
        #expect(Self.stack(c) == ["Home", "Login"])
    }

    // MARK: results, tabs, restoration

    /// "calls [push] on closest GoRouter and waits for result", "calls [pop] on closest GoRouter
    /// with result", "can complete leaf route", "Should pop dialog if it is present": the screen
    /// below (or the one that presented a dialog) hears the result (`screenResult`).
    @Test func popWithAResult() throws {
        let (d, c) = try daemon()
        _ = d
        try c.call("subscribe")
        try c.call("open", ["url": "/login"])
        try c.call("dismiss", ["result": true])
        #expect(try c.notification("screenResult")["params"]?["result"] == true)
        try c.call("navigate", ["to": "Dialog", "by": "present"])
        try c.call("dismiss", ["result": "picked"])
        let n = try c.notification("screenResult")
        #expect(n["params"]?["result"] == "picked" && Self.stack(c) == ["Home"], "\(n)")
    }

    /// A `StatefulShellRoute` is navd's tabs: "Builds StatefulShellRoute", "Navigation with
    /// goBranch is correctly handled in StatefulShellRoute" (an unknown branch is an error),
    /// "Navigates to correct nested navigation tree in StatefulShellRoute and maintains state",
    /// "StatefulShellRoute supports nested routes with params", "Pops from the correct Navigator in
    /// a StatefulShellRoute when the Android back button is pressed", and the restoration tests
    /// "Restores state correctly", "Restores state of branches in StatefulShellRoute correctly"
    /// (every tab's stack is there after `kill -9`, as a state file keeps it).
    @Test func branchesAreTabsAndSurviveARestart() throws {
        let graph = """
            root: {tabs: [A, B, C, D]}
            coordinators:
              A: {opens: [DetailA]}
              B: {opens: [DetailB]}
              C: {}
              D: {}
              DetailA: {}
              DetailB: {}
            links:
              "/a": [A]
              "/a/detailA": [A, DetailA]
              "/b": [B]
              "/b/detailB": [B, DetailB]
              "/c": [C]
            """
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock")
        var before: JSONValue = .null
        do {
            let d = try Daemon(graph: graph, arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            try c.call("open", ["url": "/a/detailA"])
            try c.call("open", ["url": "/b/detailB"])
            #expect(PeerConformanceTests.tab(c) == "B")
            try c.call("dismiss")
            for (tab, i) in [("B", 1), ("C", 2), ("D", 3)] {
                try c.call("navigate", ["to": .string(tab), "by": "select"])
                #expect(try c.call("tree")["root"]?["selected"] == .int(i))
            }
            #expect(try c.callError("navigate", ["to": "DetailB", "by": "select"])["data"]?["kind"] == "notAllowed")
            try c.call("navigate", ["to": "A", "by": "select"])
            let tabA = try c.call("tree")["root"]?["children"]?.arrayValue?[0]["children"]?.arrayValue?.map { $0["coordinator"] }
            #expect(tabA == ["app.A", "app.DetailA"], "tab A kept its stack")
            before = try c.call("tree")
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(graph: graph, arguments: ["--state", state], socketPath: sock)
        let c = try d.client()
        #expect(try c.call("tree") == before)
        try c.call("dismiss")
        try c.call("open", ["url": "/a/detailA"])
        let detail = try c.call("tree")["root"]?["children"]?.arrayValue?[0]["children"]?.arrayValue?.last?["id"]
        #expect(detail != before["visible"]?.arrayValue?.last, "a new detail screen, fresh")
    }

    /// "works correctly with async redirect": a top-level redirect (a graph-level guard) decided
    /// later by a provider; nothing changes until it answers, then the navigation goes to Login.
    @Test func anAsyncTopLevelRedirect() throws {
        let graph = """
            root: {stack: Home}
            guards:
              - {precondition: asked, except: [Home, Login]}
            coordinators:
              Home: {opens: [Page, Login]}
              Page: {}
              Login: {}
            links:
              "/page": [Home, Page]
            preconditions:
              asked: {provider: true, timeout: 10s}
            """
        let (d, c) = try daemon(graph)
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        let id = try c.send("open", ["url": "/page"])
        let ask = try provider.serverRequest("precondition.evaluate")
        #expect(Self.stack(c) == ["Home"])
        try provider.respond(to: ask, result: ["passed": false, "redirect": "app.Login"])
        let r = try c.reply(to: id)
        #expect(r["result"]?["redirected"] != nil, "\(r)")
        #expect(Self.stack(c) == ["Home", "Login"])
    }
}

