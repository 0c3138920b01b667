import Foundation
import JSON
import NavTesting
import Testing

/// Navigation semantics through the socket on the example app: flow steps follow `opens`, tabs keep
/// their declared identity.
@Suite struct SemanticsEndToEndTests {
    @Test func aCheckoutStepCannotSkipPayment() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.call("context.set", ["facts": ["loggedIn": true, "cart.items": 2]])
        try c.call("navigate", ["to": "cart.Cart", "by": "select"])
        let flow = try c.call("navigate", ["to": "cart.Checkout", "by": "present"], timeout: 15)
        #expect(flow["version"] != nil, "\(flow)")
        let skip = try c.callError("navigate", ["to": "cart.Confirm"])
        #expect(skip["code"] == -32003 && skip["data"]?["kind"] == "notAllowed" && skip["data"]?["to"] == "cart.Confirm", "\(skip)")
    }

    @Test func tabsSurviveReplaceAndComeBackAfterRoot() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.call("navigate", ["to": "shop.Product", "by": "replace", "with": ["id": "p1"]])
        try c.call("navigate", ["to": "account.Account", "by": "select"])
        let home = try c.call("navigate", ["to": "shop.Home", "by": "select"])
        #expect(home["visible"]?.arrayValue?.count == 3, "\(home)")
        try c.call("navigate", ["to": "shop.Home", "by": "root"])
        let back = try c.call("navigate", ["to": "cart.Cart", "by": "select"])
        let tree = try c.call("tree")
        #expect(tree["root"]?["kind"] == "tabs" && tree["root"]?["selected"] == 1, "\(tree)")
        #expect(back["version"] == tree["version"])
    }
}

/// Pop-to, results to screens, live params, reset and hints, through the socket.
@Suite struct RouterSemanticsTests {
    static let graph = """
        root: {tabs: [Home, Settings]}
        coordinators:
          Home: {opens: [List, Editor]}
          Settings: {}
          List: {opens: [Item, Editor]}
          Item:
            setup: {type: object, required: [id], properties: {id: {type: string}, title: {type: string, maxLength: 10}}}
            opens: [Item, Editor]
          Editor: {presentations: [present, push]}
        """

    @Test func dismissToPopsToTheNearestMatchInOneCommit() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let list = try c.call("navigate", ["to": "List"])["node"]!
        try c.call("navigate", ["to": "Item", "with": ["id": "1"]])
        try c.call("navigate", ["to": "Item", "with": ["id": "2"]])
        let editor = try c.call("navigate", ["to": "Editor", "by": "present"])
        #expect(editor["version"] == 4)
        let popped = try c.call("dismiss", ["to": "List"])
        #expect(popped["version"] == 5, "one commit")
        #expect(popped["removed"]?.arrayValue?.count == 4, "\(popped)")
        #expect(try c.call("tree")["visible"]?.arrayValue?.last == list)
        try c.call("navigate", ["to": "Item", "with": ["id": "3"]])
        let inclusive = try c.call("dismiss", ["to": "List", "inclusive": true])
        #expect(inclusive["removed"]?.arrayValue?.first == list)
        let nothing = try c.callError("dismiss", ["to": "Home"])
        #expect(nothing["data"]?["kind"] == "unknownNode", "nothing above Home: \(nothing)")
        let unknown = try c.callError("dismiss", ["to": "Nowhere"])
        #expect(unknown["data"]?["kind"] == "unknownTarget", "\(unknown)")
        let noSession = try c.callError("tree", ["session": ""])
        #expect(noSession["data"]?["kind"] == "unknownTarget" && noSession["message"]?.stringValue?.hasPrefix("\"session\" is empty") == true, "\(noSession)")
        for form: (String, JSONValue) in [("dismiss", ["to": ""]), ("navigate", ["to": ""])] {
            let empty = try c.callError(form.0, form.1)
            #expect(empty["data"]?["kind"] == "unknownTarget" && empty["message"]?.stringValue?.hasPrefix("\"to\" is empty") == true, "\(empty)")
        }
        // A node id of no node is no node (the same as `dismiss {node}` and `popUpTo` say), not an
        // unknown coordinator; one of a node off the visible path says so.
        for form: (String, JSONValue) in [("dismiss", ["to": "n99"]), ("navigate", ["to": "List", "popUpTo": ["to": "n99"]])] {
            let gone = try c.callError(form.0, form.1)
            #expect(gone["data"]?["kind"] == "unknownNode" && gone["data"]?["to"] == "n99", "\(gone)")
            #expect(gone["message"]?.stringValue?.hasPrefix("no node `n99` in session `main`") == true, "\(gone)")
        }
        let alone = try c.callError("dismiss", ["inclusive": true])
        #expect(alone["data"]?["kind"] == "invalidParams" && alone["data"]?["param"] == "inclusive", "inclusive without to: \(alone)")
    }

    @Test func dismissWithAResultTellsTheScreenBelow() throws {
        let d = try Daemon(graph: Self.graph)
        let watcher = try d.client()
        try watcher.call("subscribe")
        let c = try d.client()
        let list = try c.call("navigate", ["to": "List"])["node"]!
        let editor = try c.call("navigate", ["to": "Editor", "by": "present", "from": list])["node"]!
        try c.call("dismiss", ["result": ["saved": true]])
        let n = try c.notification("screenResult")
        #expect(n["params"] == ["session": "main", "node": editor, "to": list, "result": ["saved": true]], "\(n)")
        #expect(try watcher.notification("screenResult")["params"]?["to"] == list)
    }

    @Test func updateMergesValidatedParamsAndPublishesThem() throws {
        let d = try Daemon(graph: Self.graph)
        let watcher = try d.client()
        var mirror = try watcher.call("subscribe")
        let c = try d.client()
        try c.call("navigate", ["to": "List"])
        let item = try c.call("navigate", ["to": "Item", "with": ["id": "1"]])["node"]!
        let r = try c.call("update", ["node": item, "with": ["title": "Hello"]])
        #expect(r["node"]?["params"] == ["id": "1", "title": "Hello"], "\(r)")
        let bad = try c.callError("update", ["node": item, "with": ["title": "far too long a title"]])
        #expect(bad["data"]?["kind"] == "invalidSetup" && bad["data"]?["pointer"] == "/title", "\(bad)")
        let removeRequired = try c.callError("update", ["node": item, "with": ["id": .null]])
        #expect(removeRequired["data"]?["kind"] == "invalidSetup")
        var last: JSONValue = .null
        while last["params"]?["version"] != r["version"] { last = try watcher.notification("stackChanged") }
        #expect(last["params"]?["changes"]?.arrayValue?.first?["op"] == "update", "\(last)")
        mirror = try watcher.call("tree")
        #expect(JSONWriter.string(mirror).contains("\"title\":\"Hello\""))
        // An update that changes no value is still its own commit, published like any other.
        let same = try c.call("update", ["node": item, "with": ["title": "Hello", "subtitle": .null]])
        #expect(same["version"]?.intValue == (r["version"]?.intValue ?? 0) + 1 && same["node"]?["params"] == ["id": "1", "title": "Hello"], "\(same)")
        while last["params"]?["version"] != same["version"] { last = try watcher.notification("stackChanged") }
        #expect(last["params"]?["changes"]?.arrayValue?.first?["op"] == "update", "\(last)")
    }

    @Test func updatesCannotGrowAScreensParamsPastTheMessageLimit() throws {
        let d = try Daemon(graph: Self.graph, arguments: ["--max-message", "3000"])
        let c = try d.client()
        let home = try c.call("tree")["visible"]?.arrayValue?.last ?? .null
        let chunk = JSONValue.string(String(repeating: "x", count: 1200))
        try c.call("update", ["node": home, "with": ["a": chunk]])
        let refused = try c.callError("update", ["node": home, "with": ["b": chunk, "c": chunk]])
        #expect(refused["code"] == -32012 && refused["data"]?["kind"] == "limitExceeded" && refused["data"]?["limit"] == "--max-message", "\(refused)")
        #expect(try c.call("tree")["root"]?["children"]?.arrayValue?.first?["children"]?.arrayValue?.first?["params"]?["b"] == nil, "nothing merged")
    }

    @Test func resetGoesBackToTheDeclaredRootOrBuildsAStack() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try c.call("navigate", ["to": "List"])
        try c.call("navigate", ["to": "Home", "by": "root"])
        let fresh = try c.call("reset")
        let tree = try c.call("tree")
        #expect(tree["root"]?["kind"] == "tabs" && tree["version"] == fresh["version"], "\(tree)")
        let built = try c.call("reset", ["to": ["Home", "List", ["to": "Item", "with": ["id": "7"]], ["to": "Editor", "by": "present"]]])
        let after = try c.call("tree")
        let home = after["root"]?["children"]?.arrayValue?.first?["children"]?.arrayValue ?? []
        #expect(after["version"] == built["version"] && home.map { $0["coordinator"] } == ["app.Home", "app.List", "app.Item"], "\(after)")
        #expect(home.last?["params"] == ["id": "7"] && home.last?["presented"]?["children"]?.arrayValue?.first?["coordinator"] == "app.Editor", "\(after)")
        let bad = try c.callError("reset", ["to": ["Home", "List", ["to": "Item"]]])
        #expect(bad["data"]?["kind"] == "invalidSetup", "\(bad)")
        let skipped = try c.callError("reset", ["to": ["Home", ["to": "Item", "with": ["id": "1"]]]])
        #expect(skipped["data"]?["kind"] == "notAllowed" && skipped["data"]?["to"] == "app.Item", "Home does not open Item: \(skipped)")
        #expect(try c.call("tree")["version"] == built["version"], "a refused reset changes nothing")
    }

    @Test func navigateWithPopUpToPopsAndPushesInOneCommit() throws {
        let d = try Daemon(graph: Self.graph)
        let watcher = try d.client()
        try watcher.call("subscribe")
        let c = try d.client()
        let list = try c.call("navigate", ["to": "List"])["node"]!
        try c.call("navigate", ["to": "Item", "with": ["id": "1"]])
        try c.call("navigate", ["to": "Item", "with": ["id": "2"]])
        let r = try c.call("navigate", ["to": "Item", "with": ["id": "3"], "popUpTo": ["to": "List"]])
        #expect(r["version"] == 4, "one commit: \(r)")
        var last: JSONValue = .null
        while last["params"]?["version"] != 4 { last = try watcher.notification("stackChanged") }
        #expect(last["params"]?["changes"]?.arrayValue?.map { $0["op"] } == ["pop", "push"], "\(last)")
        let home = try c.call("tree")["root"]?["children"]?.arrayValue?.first?["children"]?.arrayValue ?? []
        #expect(home.map { $0["coordinator"] } == ["app.Home", "app.List", "app.Item"] && home.last?["params"] == ["id": "3"])
        let presented = try c.call("navigate", ["to": "Editor", "by": "present", "popUpTo": ["to": list, "inclusive": true]])
        #expect(presented["visible"]?.arrayValue?.count == 5, "Home presents the editor: \(presented)")
        let replace = try c.callError("navigate", ["to": "List", "by": "replace", "popUpTo": ["to": "Home"]])
        #expect(replace["data"]?["kind"] == "invalidParams" && replace["data"]?["param"] == "popUpTo", "\(replace)")
        try c.call("dismiss")
        let nowhere = try c.callError("navigate", ["to": "Editor", "popUpTo": ["to": "Settings"]])
        #expect(nowhere["data"]?["kind"] == "unknownNode", "Settings is not on the visible path: \(nowhere)")
        let shape = try c.callError("navigate", ["to": "Editor", "popUpTo": "Home"])
        #expect(shape["data"]?["kind"] == "invalidParams")
    }

    /// A `navigate {popUpTo}` that waited for its preconditions while another tab was selected pops
    /// the stack its match is in and is placed there, from the screen the pop left on top, as a push
    /// that waited is placed on its source's stack: not on the tab the user now sees.
    @Test func aPopUpToThatWaitedIsPlacedInItsMatchsStack() throws {
        let d = try Daemon(graph: """
            root: {tabs: [Home, Settings]}
            coordinators:
              Home: {opens: [List, Wait]}
              Settings: {}
              List: {opens: [Item, Gated]}
              Item: {opens: [Gated]}
              Gated: {preconditions: [asked], opens: [Item]}
              Wait: {preconditions: [asked]}
            preconditions:
              asked: {provider: asked}
            """)
        let c = try d.client(), provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        let home = try c.call("tree")["visible"]?.arrayValue?.last ?? .null
        let list = try c.call("navigate", ["to": "List"])["node"]!
        try c.call("navigate", ["to": "Item"])
        let id = try c.send("navigate", ["to": "Gated", "popUpTo": ["to": "List"]])
        let ask = try provider.serverRequest("precondition.evaluate")
        try c.call("navigate", ["to": "Settings", "by": "select", "from": home])
        try provider.respond(to: ask, result: ["passed": true])
        let placed = try c.reply(to: id)
        #expect(placed["result"]?["version"] == 4, "\(placed)")
        var tree = try c.call("tree")
        var tabs = tree["root"]?["children"]?.arrayValue ?? []
        #expect(tabs.first?["children"]?.arrayValue?.map { $0["coordinator"] } == ["app.Home", "app.List", "app.Gated"], "popped to List, Gated pushed on it: \(tree)")
        #expect(tabs.last?["children"]?.arrayValue?.map { $0["coordinator"] } == ["app.Settings"], "the tab shown is left alone: \(tree)")
        #expect(tree["root"]?["selected"] == 1 && placed["result"]?["visible"] == tree["visible"], "\(tree)")

        // Inclusive: the match goes too, and the target is placed from the screen below it (List).
        try c.call("navigate", ["to": "Home", "by": "select"])
        try c.call("navigate", ["to": "Item"])
        let again = try c.send("navigate", ["to": "Gated", "popUpTo": ["to": "Gated", "inclusive": true]])
        let second = try provider.serverRequest("precondition.evaluate")
        try c.call("navigate", ["to": "Settings", "by": "select", "from": home])
        try provider.respond(to: second, result: ["passed": true])
        #expect(try c.reply(to: again)["result"]?["version"] == 8)
        tree = try c.call("tree")
        tabs = tree["root"]?["children"]?.arrayValue ?? []
        let stack = tabs.first?["children"]?.arrayValue ?? []
        #expect(stack.map { $0["coordinator"] } == ["app.Home", "app.List", "app.Gated"] && stack[1]["id"] == list, "\(tree)")
        #expect(tabs.last?["children"]?.arrayValue?.count == 1 && tree["root"]?["selected"] == 1, "\(tree)")

        // Nothing above the match, the first screen of its tab (no pop): placed from it all the same.
        try c.call("navigate", ["to": "Home", "by": "select"])
        try c.call("dismiss", ["to": "Home"])
        let settings = try c.call("tree")["root"]?["children"]?.arrayValue?.last?["children"]?.arrayValue?.first?["id"] ?? .null
        let third = try c.send("navigate", ["to": "Wait", "popUpTo": ["to": "Home"]])
        let asked = try provider.serverRequest("precondition.evaluate")
        // (From a screen of the other tab: one from Home would supersede the navigation waiting.)
        try c.call("navigate", ["to": "Settings", "by": "select", "from": settings])
        try provider.respond(to: asked, result: ["passed": true])
        let thirdReply = try c.reply(to: third)
        #expect(thirdReply["result"]?["version"] == 12, "\(thirdReply)")
        tree = try c.call("tree")
        tabs = tree["root"]?["children"]?.arrayValue ?? []
        #expect(tabs.first?["children"]?.arrayValue?.map { $0["coordinator"] } == ["app.Home", "app.Wait"], "\(tree)")
        #expect(tabs.last?["children"]?.arrayValue?.map { $0["coordinator"] } == ["app.Settings"] && tree["root"]?["selected"] == 1, "\(tree)")
    }

    @Test func hintsAreCarriedIntoStackChanged() throws {
        let d = try Daemon(graph: Self.graph)
        let watcher = try d.client()
        try watcher.call("subscribe")
        let c = try d.client()
        try c.call("navigate", ["to": "List", "hints": ["animated": false, "transition": "fade"]])
        let n = try watcher.notification("stackChanged")
        #expect(n["params"]?["hints"] == ["animated": false, "transition": "fade"], "\(n)")
        #expect(n["params"]?["changes"]?.arrayValue?.first?["hints"] == ["animated": false, "transition": "fade"], "and in the navigation's change: \(n)")
        let big = try c.callError("navigate", ["to": "Editor", "hints": ["x": .string(String(repeating: "h", count: 5000))]])
        #expect(big["data"]?["kind"] == "limitExceeded", "\(big)")
        let notObject = try c.callError("navigate", ["to": "Editor", "hints": "fast"])
        #expect(notObject["data"]?["kind"] == "invalidParams")
    }
}

/// Ability sets through the socket: `opens` naming a set admits exactly its coordinators.
@Suite struct AbilitySetEndToEndTests {
    @Test func aSetInOpensAdmitsItsCoordinatorsAndNoOthers() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            abilities: {browse: [Product, Search]}
            coordinators:
              Home: {opens: [browse]}
              Product: {opens: [browse, Basket]}
              Search: {}
              Basket: {}
            """)
        let c = try d.client()
        try c.call("navigate", ["to": "Search"])
        try c.call("dismiss")
        try c.call("navigate", ["to": "Product"])
        try c.call("navigate", ["to": "Basket"])
        try c.call("dismiss")
        try c.call("dismiss")
        let refused = try c.callError("navigate", ["to": "Basket"])
        #expect(refused["data"]?["kind"] == "notAllowed" && (refused["message"]?.stringValue ?? "").contains("app.Product, app.Search"), "\(refused)")
        let described = try c.call("graph.describe")
        let home = described["coordinators"]?["app.Home"]
        #expect(home?["opens"] == ["app.Product", "app.Search"], "\(String(describing: home))")
    }
}

/// Optional and wildcard link segments and `link.resolve`, through the socket.
@Suite struct ReverseLinkEndToEndTests {
    @Test func openAndResolveAreInverse() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Docs, Search]}
              Docs: {setup: {type: object, required: [path], properties: {path: {type: string}}}}
              Search: {setup: {type: object, properties: {q: {type: string}, page: {type: integer}}}}
            links:
              "/docs/*path": [Home, {to: Docs, with: {path: ":path"}}]
              "/search/:q?/:page?": [Home, {to: Search, with: {q: ":q", page: ":page"}}]
            """)
        let c = try d.client()
        for url in ["/docs/guide/intro%20page.md", "/search", "/search/boots", "/search/boots/3"] {
            try c.call("open", ["url": .string(url)])
            let r = try c.call("link.resolve")
            #expect(r["url"] == .string(url), "\(url): \(r)")
        }
        let tree = try c.call("tree")
        #expect(tree["root"]?["children"]?.arrayValue?.last?["params"] == ["q": "boots", "page": 3], "\(tree)")
        let home = tree["root"]?["children"]?.arrayValue?.first?["id"] ?? .null
        let none = try c.callError("link.resolve", ["node": home])
        #expect(none["code"] == -32011 && none["data"]?["kind"] == "noMatchingLink", "\(none)")
        let gone = try c.callError("link.resolve", ["node": "n404"])
        #expect(gone["data"]?["kind"] == "unknownNode")
    }
}

/// Recovery that continues: `recover.facts` says what a completed recovery flow establishes.
@Suite struct RecoveryFactsTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Protected]}
          Protected: {preconditions: [signedIn]}
          SignIn:
            flow: {start: Credentials, result: {type: object, required: [user], properties: {user: {type: string}}}}
          Credentials: {}
        preconditions:
          signedIn:
            check: {fact: signedIn, equals: true}
            recover: {flow: SignIn, facts: {signedIn: true, user: "$result.user", missing: "$result.nothing"}}
        """

    /// A navigation to Protected, waiting on the SignIn flow it presented: the daemon, the client,
    /// the navigate's request id and the flow's id.
    func navigateIntoRecovery() throws -> (Daemon, TestClient, JSONValue, JSONValue) {
        let d = try Daemon(graph: Self.graph)
        let app = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        let id = try app.send("navigate", ["to": "Protected"])
        let presented = try watcher.notification("stackChanged")
        let flow = try #require(presented["params"]?["changes"]?.arrayValue?.first?["node"]?["children"]?.arrayValue?.first?["id"])
        return (d, app, id, flow)
    }

    @Test func aCompletedRecoveryFlowSetsItsFactsAndTheNavigationProceeds() throws {
        let (d, app, id, flow) = try navigateIntoRecovery()
        _ = d
        // No context.set: the graph says what signing in establishes.
        try app.call("flowComplete", ["flow": flow, "result": ["user": "{with.x} $result.user"]])
        let done = try app.reply(to: id)
        #expect(done["result"]?["version"] == 3, "\(done)")
        let facts = try app.call("context.get")["facts"]
        #expect(facts == ["signedIn": true, "user": "{with.x} $result.user"], "taken from the result as it is, never read again: \(String(describing: facts))")
    }

    @Test func aCancelledRecoveryFlowSetsNothing() throws {
        let (d, app, id, flow) = try navigateIntoRecovery()
        _ = d
        try app.call("flowComplete", ["flow": flow, "cancelled": true])
        #expect(try app.reply(to: id)["error"]?["data"]?["kind"] == "preconditionFailed")
        #expect(try app.call("context.get")["facts"] == [:])
    }

    /// The client that waited on a recovery flow gave up (Ctrl-C, a timeout: it disconnected, or it
    /// sent `cancel`). The flow it presented is closed with it, so the same navigation asked again
    /// recovers afresh (the flow left on top used to refuse it: its steps open nothing of the app),
    /// and completing that flow proceeds and sets its facts. "half-close" is `echo … | socat -t 2`:
    /// it finishes sending, waits for the reply, then gives up and closes its socket; navd, which had
    /// already read the end of its input, still notices it is gone.
    @Test func aCancelledNavigationClosesTheRecoveryFlowItPresented() throws {
        let d = try Daemon(graph: Self.graph)
        let watcher = try d.client()
        try watcher.call("subscribe")
        for how in ["disconnect", "cancel", "half-close"] {
            let app = try d.client()
            let id = try app.send("navigate", ["to": "Protected"])
            let presented = try watcher.notification("stackChanged")
            let flow = try #require(presented["params"]?["changes"]?.arrayValue?.first?["node"]?["children"]?.arrayValue?.first?["id"])
            let pending = try watcher.notification("navigationPending")
            if how == "disconnect" {
                app.close()
            } else if how == "half-close" {
                app.finishSending()
                let deadline = Date().addingTimeInterval(10)
                while try watcher.call("stats")["halfClosed"] != 1 && Date() < deadline { usleep(5_000) }
                #expect(try watcher.call("stats")["halfClosed"] == 1, "navd read the end of its input and still owes it an answer")
                app.close()
            } else {
                try app.call("cancel", ["navigation": pending["params"]?["navigation"] ?? .null])
                #expect(try app.reply(to: id)["error"]?["data"]?["kind"] == "cancelled")
            }
            let closed = try watcher.notification("stackChanged")
            #expect(closed["params"]?["changes"]?.arrayValue?.first?["op"] == "dismiss", "\(how): \(closed)")
            #expect(closed["params"]?["changes"]?.arrayValue?.first?["removed"]?.arrayValue?.contains(flow) == true, "\(how): \(closed)")
        }
        let again = try d.client()
        let id = try again.send("navigate", ["to": "Protected"])
        let presented = try watcher.notification("stackChanged")
        let flow = try #require(presented["params"]?["changes"]?.arrayValue?.first?["node"]?["children"]?.arrayValue?.first?["id"])
        try again.call("flowComplete", ["flow": flow, "result": ["user": "ann"]])
        #expect(try again.reply(to: id)["result"]?["node"] != nil)
        #expect(try again.call("context.get")["facts"]?["signedIn"] == true)
    }

    @Test func recoverFactsAreCheckedByNavdCheck() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try """
            root: {stack: Home}
            coordinators: {Home: {}}
            preconditions:
              a: {check: {fact: x, equals: 1}, recover: {command: [true], facts: {x: 1}}}
              b: {check: {fact: x, equals: 1}, recover: {provider: fix, facts: {x: 1}}}
            """.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["check", dir.path])
        let lines = r.stderr.split(separator: "\n").filter { $0.contains("`recover.facts` of `app.") && $0.contains("goes with `recover.flow`") }
        #expect(r.status == 1 && lines.count == 2, "\(r.stderr)")
    }
}

/// A flow's `then`: where navigation continues when it completes.
@Suite struct FlowThenTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Checkout, Quick, Thanks]}
          Checkout:
            flow:
              start: Pay
              result: {type: object, required: [orderId], properties: {orderId: {type: string}}}
              then: {to: Receipt, with: {orderId: "$result.orderId"}}
            opens: [Thanks]
          Pay: {}
          Quick: {flow: {start: Pay2, then: Receipt}}
          Pay2: {}
          Receipt:
            setup: {type: object, required: [orderId], properties: {orderId: {type: string}}}
            preconditions: [ready]
          Thanks: {}
        preconditions:
          ready: {check: {fact: ready, notEquals: false}}
        """

    @Test func theDeclaredThenNavigatesWithTheResult() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let flow = try c.call("navigate", ["to": "Checkout", "by": "present"])["node"]!
        let r = try c.call("flowComplete", ["flow": flow, "result": ["orderId": "o-7"]])
        #expect(r["then"]?["node"] != nil && r["then"]?["version"] == 3, "\(r)")
        let tree = try c.call("tree")
        let top = tree["root"]?["children"]?.arrayValue?.last
        #expect(top?["coordinator"] == "app.Receipt" && top?["params"] == ["orderId": "o-7"], "\(tree)")
    }

    /// A flow completed in a tab not selected goes on there, from the screen its end leaves on top
    /// in that tab, and the tab shown stays as it is.
    @Test func aFlowInATabNotShownGoesOnInItsTab() throws {
        let d = try Daemon(graph: """
            root: {tabs: [Home, Settings]}
            coordinators:
              Home: {opens: [Checkout]}
              Settings: {}
              Checkout: {flow: {start: Pay, then: Thanks}}
              Pay: {}
              Thanks: {}
            """)
        let c = try d.client()
        let home = try c.call("tree")["visible"]?.arrayValue?.last ?? .null
        let flow = try c.call("navigate", ["to": "Checkout"])["node"]!
        try c.call("navigate", ["to": "Settings", "by": "select"])
        let r = try c.call("flowComplete", ["flow": flow, "result": [:]])
        #expect(r["then"]?["version"] == 4, "\(r)")
        let tree = try c.call("tree")
        let tabs = tree["root"]?["children"]?.arrayValue ?? []
        let stack = tabs.first?["children"]?.arrayValue ?? []
        #expect(stack.map { $0["coordinator"] } == ["app.Home", "app.Thanks"] && stack.first?["id"] == home, "\(tree)")
        #expect(tabs.last?["children"]?.arrayValue?.map { $0["coordinator"] } == ["app.Settings"] && tree["root"]?["selected"] == 1, "\(tree)")
    }

    @Test func theNavigateThatStartsTheFlowMaySayOtherwise() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let flow = try c.call("navigate", ["to": "Checkout", "by": "present", "then": ["to": "Thanks", "by": "push"]])["node"]!
        let r = try c.call("flowComplete", ["flow": flow, "result": ["orderId": "o-8"]])
        #expect(r["then"]?["version"] == 3, "\(r)")
        let top = try c.call("tree")["root"]?["children"]?.arrayValue?.last
        #expect(top?["coordinator"] == "app.Thanks")
        try c.call("dismiss")
        let notOpened = try c.callError("navigate", ["to": "Checkout", "then": "Home"])
        #expect(notOpened["data"]?["kind"] == "notAllowed" && notOpened["data"]?["param"] == "then", "Checkout neither opens Home nor declares it: \(notOpened)")
        let shape = try c.callError("navigate", ["to": "Thanks", "then": "Receipt"])
        #expect(shape["data"]?["kind"] == "invalidParams" && shape["data"]?["param"] == "then", "\(shape)")
    }

    @Test func aThenThatCannotGoIsReportedAndTheFlowStillEnds() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        // Quick's then gives Receipt no orderId: the navigation is refused, the flow completed.
        let flow = try c.call("navigate", ["to": "Quick"])["node"]!
        let r = try c.call("flowComplete", ["flow": flow, "result": ["x": 1]])
        #expect(r["version"] == 2 && r["then"]?["error"]?["data"]?["kind"] == "invalidSetup", "\(r)")
        // A then whose preconditions fail is answered once they have run.
        try c.call("context.set", ["facts": ["ready": false]])
        let second = try c.call("navigate", ["to": "Checkout"])["node"]!
        let failed = try c.call("flowComplete", ["flow": second, "result": ["orderId": "o-9"]])
        #expect(failed["then"]?["error"]?["data"]?["kind"] == "preconditionFailed", "\(failed)")
        #expect(try c.call("tree")["visible"]?.arrayValue?.count == 2, "back on Home")
        // Cancelling a flow goes nowhere.
        let third = try c.call("navigate", ["to": "Checkout"])["node"]!
        let cancelled = try c.call("flowComplete", ["flow": third, "cancelled": true])
        #expect(cancelled["then"] == nil, "\(cancelled)")
    }

    /// A flow first in the root stack (an onboarding at the root) or in a tab cannot leave the tree
    /// by itself: completed, it ends as its `then` takes its place (by root; by replace, and by push
    /// or present as a replace of it), in one commit, after the then's preconditions; a then that
    /// fails leaves it live.
    @Test func aFlowFirstInItsStackEndsAsItsThenTakesItsPlace() throws {
        let d = try Daemon(graph: """
            root: {stack: Onboarding}
            coordinators:
              Onboarding:
                flow: {steps: [Welcome, Terms], result: {type: object, required: [name], properties: {name: {type: string}}}}
                then: {to: Tabs, by: root, with: {name: "$result.name"}}
              Welcome: {}
              Terms: {}
              Tabs: {tabs: [Feed, Setup], setup: {type: object, properties: {name: {type: string}}}, preconditions: [ready]}
              Feed: {}
              Setup: {flow: {steps: [S1], then: Done}}
              S1: {}
              Done: {}
            preconditions:
              ready: {check: {fact: ready, notEquals: false}}
            """)
        let c = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        let flow = try c.call("tree")["visible"]!.arrayValue![1]
        // A cancel has no then: still refused, saying what would do.
        let cancel = try c.callError("flowComplete", ["flow": flow, "cancelled": true])
        #expect(cancel["data"]?["kind"] == "notAllowed" && cancel["message"]?.stringValue?.contains("first node of the root stack") == true, "\(cancel)")
        // A then whose precondition fails: flowComplete fails with its error, and the flow stays.
        try c.call("context.set", ["facts": ["ready": false]])
        let failed = try c.callError("flowComplete", ["flow": flow, "result": ["name": "Ada"]])
        #expect(failed["data"]?["kind"] == "preconditionFailed", "\(failed)")
        #expect(try c.call("tree")["visible"]?.arrayValue?[1] == flow)
        try c.call("context.set", ["facts": ["ready": true]])
        let r = try c.call("flowComplete", ["flow": flow, "result": ["name": "Ada"]])
        #expect(r["version"] == 1 && r["then"]?["version"] == 1 && r["removed"]?.arrayValue?.contains(flow) == true, "\(r)")
        let tree = try c.call("tree")
        let tabs = tree["root"]?["children"]?.arrayValue?.first
        #expect(tabs?["coordinator"] == "app.Tabs" && tabs?["params"] == ["name": "Ada"], "\(tree)")
        // Subscribers hear the one commit, then the flow completed with its result.
        #expect(try watcher.notification("stackChanged")["params"]?["version"] == 1)
        let ended = try watcher.notification("flowCompleted")["params"]
        #expect(ended?["flow"] == flow && ended?["status"] == "completed" && ended?["result"] == ["name": "Ada"], "\(String(describing: ended))")
        // A flow first in a tab, whose then (a push, named by no style) takes its place there.
        try c.call("navigate", ["to": "Setup", "by": "select"])
        let setup = try c.call("tree")["visible"]!.arrayValue!.dropLast().last!
        let replaced = try c.call("flowComplete", ["flow": setup, "result": [:]])
        #expect(replaced["then"]?["version"] == 3, "\(replaced)")
        let second = try c.call("tree")["root"]?["children"]?.arrayValue?.first?["children"]?.arrayValue?[1]
        #expect(second?["children"]?.arrayValue?.map { $0["coordinator"] } == ["app.Done"], "\(String(describing: second))")
    }

    /// A precondition of such a `then` that redirects sends it elsewhere: the redirect's target takes
    /// the flow's place (the then's style kept), the flow completed, the reply saying so.
    @Test func aFlowFirstInItsStackWhoseThenIsRedirected() throws {
        let d = try Daemon(graph: """
            root: {stack: Onboarding}
            coordinators:
              Onboarding: {flow: {steps: [Welcome]}, then: {to: Home, by: root}}
              Welcome: {}
              Home: {preconditions: [ready]}
              Later: {}
            preconditions:
              ready: {check: {fact: ready, equals: true}, redirect: {to: Later}}
            """)
        let c = try d.client()
        let flow = try c.call("subscribe")["visible"]!.arrayValue![1]
        let r = try c.call("flowComplete", ["flow": flow, "result": [:]])
        #expect(r["version"] == 1 && r["then"]?["redirected"]?.arrayValue?.first?["to"] == "app.Later" && r["removed"]?.arrayValue?.count == 3, "\(r)")
        let tree = try c.call("tree")
        #expect(tree["root"]?["children"]?.arrayValue?.map { $0["coordinator"] } == ["app.Later"], "\(tree)")
        let ended = try c.notification("flowCompleted")["params"]
        #expect(ended?["flow"] == flow && ended?["status"] == "completed", "\(String(describing: ended))")
    }
}
