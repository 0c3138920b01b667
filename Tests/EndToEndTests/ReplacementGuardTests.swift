import Foundation
import JSON
import NavTesting
import Testing

/// Navigations that replace screens (`replace`, `root`, a `select` bringing tabs back, `reset`,
/// `open`) run the `leave:` guards of
/// what they remove, unless `force: true` (go_router's `onExit` on `go()`).
@Suite struct ReplacementGuardTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Editor, List]}
          Editor: {opens: [List], leave: [saved]}
          List: {}
        links:
          "/list": [Home, List]
        preconditions:
          saved: {check: {fact: saved, equals: true}}
        """

    func daemonOnTheEditor() throws -> (Daemon, TestClient) {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try c.call("navigate", ["to": "Editor"])
        return (d, c)
    }

    @Test(arguments: [
        ("navigate", ["to": "List", "by": "replace"] as JSONValue),
        ("navigate", ["to": "Home", "by": "root"] as JSONValue),
        ("open", ["url": "/list"] as JSONValue),
        ("reset", ["to": ["Home", "List"]] as JSONValue),
        ("reset", [:] as JSONValue),
    ])
    func aReplacementRunsTheGuardsOfWhatItRemovesUnlessForced(method: String, params: JSONValue) throws {
        let (d, c) = try daemonOnTheEditor()
        _ = d
        let refused = try c.callError(method, params)
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(method) \(refused)")
        let tree = try c.call("tree")
        #expect(tree["version"] == 1, "nothing changed: \(tree)")
        guard case .object(var forced) = params else { return }
        forced["force"] = true
        let r = try c.call(method, .object(forced))
        #expect(r["version"] == 2, "\(method) with force: \(r)")
    }

    /// A `select` that brings back the declared tabs (a `root` navigation replaced them) removes
    /// what the root held: their leave guards run first, as a replacement's do.
    @Test func aSelectThatBringsTheTabsBackRunsTheGuardsOfWhatItRemoves() throws {
        let d = try Daemon(graph: """
            root: {tabs: [Home, Other]}
            coordinators:
              Home: {opens: [Editor]}
              Other: {}
              Editor: {leave: [saved]}
            preconditions:
              saved: {check: {fact: saved, equals: true}}
            """)
        let c = try d.client()
        try c.call("navigate", ["to": "Editor", "by": "root"])
        let refused = try c.callError("navigate", ["to": "Other", "by": "select"])
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(refused)")
        #expect(try c.call("tree")["version"] == 1, "the editor stays")
        #expect(try c.call("navigate", ["to": "Other", "by": "select", "force": true])["version"] == 2)
        #expect(try c.call("tree")["root"]?["kind"] == "tabs")
    }

    /// A leave guard lets what removes its screen go on or refuses it: a redirect a provider
    /// answers for it (or one the precondition declares) refuses the replacement, and never takes
    /// the place of the link's screens, whose own preconditions have not run yet.
    @Test(arguments: [
        ("open", ["url": "/list"] as JSONValue),
        ("navigate", ["to": "List", "by": "replace"] as JSONValue),
        ("navigate", ["to": "Home", "by": "root"] as JSONValue),
    ])
    func aLeaveGuardDoesNotRedirectWhatRemovesItsScreen(method: String, params: JSONValue) throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Editor, List, Elsewhere]}
              Editor: {opens: [List], leave: [asked, declared]}
              List: {preconditions: [never]}
              Elsewhere: {}
            links:
              "/list": [Home, List]
            preconditions:
              asked: {provider: true}
              declared: {check: {fact: kept, equals: true}, redirect: {to: Elsewhere}}
              never: {check: {fact: never, equals: true}}
            """)
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        let c = try d.client()
        try c.call("navigate", ["to": "Editor"])
        let id = try c.send(method, params)
        try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": false, "redirect": "app.Elsewhere"])
        let refused = try #require(try c.reply(to: id)["error"])
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.asked", "\(refused)")
        let reason = refused["data"]?["reason"]?.stringValue ?? ""
        #expect(reason.contains("a leave guard can only"), "\(refused)")
        #expect(try c.call("tree")["version"] == 1, "the editor stays")
        // The declared redirect of a guard that fails is not followed either.
        let id2 = try c.send(method, params)
        try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": true])
        let declared = try #require(try c.reply(to: id2)["error"])
        #expect(declared["data"]?["kind"] == "preconditionFailed" && declared["data"]?["precondition"] == "app.declared", "\(declared)")
        #expect(try c.call("tree")["version"] == 1, "the editor stays")
    }

    /// A redirect that replaces screens the navigation itself would not (`redirect: {to, by: root}`
    /// of a pushed target) runs the leave guards of what it removes, unless `force`.
    @Test func aRedirectThatReplacesScreensRunsTheirLeaveGuards() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Editor]}
              Editor: {opens: [Promo], leave: [saved]}
              Promo: {preconditions: [nope]}
              Landing: {}
            preconditions:
              saved: {check: {fact: saved, equals: true}}
              nope: {check: {fact: never, equals: true}, redirect: {to: Landing, by: root}}
            """)
        let c = try d.client()
        try c.call("navigate", ["to": "Editor"])
        let refused = try c.callError("navigate", ["to": "Promo"])
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(refused)")
        #expect(try c.call("tree")["version"] == 1, "the editor stays")
        let forced = try c.call("navigate", ["to": "Promo", "force": true])
        #expect(forced["version"] == 2 && forced["redirected"]?.arrayValue?.first?["to"] == "app.Landing", "\(forced)")
    }

    @Test func aGuardThatPassesLetsTheReplacementThrough() throws {
        let (d, c) = try daemonOnTheEditor()
        _ = d
        try c.call("context.set", ["facts": ["saved": true]])
        let r = try c.call("open", ["url": "/list"])
        #expect(r["version"] == 2)
        let stack = try c.call("tree")["root"]?["children"]?.arrayValue?.map { $0["coordinator"] }
        #expect(stack == ["app.Home", "app.List"])
    }
}

/// What comes while a navigation or a dismiss waits for its preconditions (a screen pushed from
/// lower in the stack) is not removed by it unasked: the leave guards it ran were those of what it
/// would remove when it was planned.
@Suite struct GuardsOfWhatCameWhileWaitingTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [List, Gated]}
          List: {opens: [Item, Draft, Other, Kept]}
          Item: {opens: [Gated, Instead]}
          Gated: {preconditions: [asked]}
          Instead: {}
          Draft: {leave: [askLeave]}
          Other: {}
          Kept: {leave: [saved]}
        preconditions:
          asked: {provider: asked}
          askLeave: {provider: askLeave}
          saved: {check: {fact: saved, equals: true}}
        """

    /// Home, List, Item; `request` from Item waits on the provider of `asked` while Kept (guarded by
    /// `saved`, which fails) is pushed from List; then the provider passes it.
    func waitWhileKeptIsPushed(_ request: JSONValue, answer: JSONValue = ["passed": true]) throws -> (d: Daemon, c: TestClient, item: JSONValue, reply: JSONValue) {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client(), provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        let list = try c.call("navigate", ["to": "List"])["node"]!
        let item = try c.call("navigate", ["to": "Item"])["node"]!
        let id = try c.send("navigate", request)
        let ask = try provider.serverRequest("precondition.evaluate")
        try c.call("navigate", ["to": "Kept", "from": list])
        try provider.respond(to: ask, result: answer)
        return (d, c, item, try c.reply(to: id))
    }

    @Test(arguments: [
        ["to": "Gated", "popUpTo": ["to": "Home"]] as JSONValue,
        ["to": "Gated", "by": "replace"] as JSONValue,
        ["to": "Gated", "by": "root"] as JSONValue,
    ])
    func aNavigationThatWaitedDoesNotRemoveAGuardedScreenThatCameMeanwhile(request: JSONValue) throws {
        let (d, c, item, reply) = try waitWhileKeptIsPushed(request)
        _ = d
        #expect(reply["error"]?["data"]?["kind"] == "conflict" && reply["error"]?["data"]?["preconditions"] == ["app.saved"], "\(request): \(reply)")
        let tree = try c.call("tree")
        let stack = tree["root"]?["children"]?.arrayValue?.map { $0["coordinator"] } ?? []
        #expect(stack == ["app.Home", "app.List", "app.Item", "app.Kept"] && tree["version"] == 3, "nothing changed: \(tree)")
        // Asked again, the guard runs first and says no.
        guard case .object(var from) = request else { return }
        from["from"] = item
        let again = try c.callError("navigate", .object(from))
        #expect(again["data"]?["kind"] == "preconditionFailed" && again["data"]?["precondition"] == "app.saved", "\(again)")
    }

    /// Redirected by the provider's answer, after the guarded screen came: the pop it keeps still
    /// removes what came since it was planned.
    @Test func aRedirectKeepsTheCheckOfWhatCame() throws {
        let (d, c, _, reply) = try waitWhileKeptIsPushed(["to": "Gated", "popUpTo": ["to": "List"]], answer: ["passed": false, "redirect": "app.Instead"])
        _ = d
        #expect(reply["error"]?["data"]?["kind"] == "conflict" && reply["error"]?["data"]?["preconditions"] == ["app.saved"], "\(reply)")
        let stack = try c.call("tree")["root"]?["children"]?.arrayValue?.map { $0["coordinator"] } ?? []
        #expect(stack == ["app.Home", "app.List", "app.Item", "app.Kept"], "nothing changed: \(stack)")
    }

    @Test func aForcedReplacementThatWaitedRemovesWhatCame() throws {
        let (d, c, _, reply) = try waitWhileKeptIsPushed(["to": "Gated", "by": "replace", "force": true])
        _ = d
        #expect(reply["result"]?["version"] == 4, "\(reply)")
        let stack = try c.call("tree")["root"]?["children"]?.arrayValue?.map { $0["coordinator"] } ?? []
        #expect(stack == ["app.Home", "app.List", "app.Gated"])
    }

    /// A dismiss waiting on the guard of the screen shown dismisses that screen once the guard
    /// passes, not what is on top by then; a guarded screen pushed above it meanwhile stops it.
    @Test(arguments: [("Other", true), ("Kept", false)])
    func aDismissThatWaitedDismissesTheScreenItAskedAbout(pushed: String, dismisses: Bool) throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client(), provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.askLeave"]])
        let list = try c.call("navigate", ["to": "List"])["node"]!
        let draft = try c.call("navigate", ["to": "Draft"])["node"]!
        let id = try c.send("dismiss")
        let ask = try provider.serverRequest("precondition.evaluate")
        let above = try c.call("navigate", ["to": .string(pushed), "from": list])["node"]!
        try provider.respond(to: ask, result: ["passed": true])
        let reply = try c.reply(to: id)
        let stack = try c.call("tree")["root"]?["children"]?.arrayValue?.map { $0["coordinator"] } ?? []
        if dismisses {
            #expect(reply["result"]?["removed"] == [draft, above], "Draft and what came above it: \(reply)")
            #expect(stack == ["app.Home", "app.List"])
        } else {
            #expect(reply["error"]?["data"]?["kind"] == "conflict" && reply["error"]?["data"]?["preconditions"] == ["app.saved"], "\(reply)")
            #expect(stack == ["app.Home", "app.List", "app.Draft", "app.Kept"])
        }
    }
}

/// A leave guard is asked about its screen's params: when they change while it waits (an `update`),
/// its answer was about params the screen no longer has, and what waited for it is `conflict`;
/// asked again, the guard is asked about the params the screen has now. A change to another
/// screen's params leaves the guard's answer standing.
@Suite struct GuardsAskedAboutParamsThatChangedTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [List]}
          List: {opens: [Draft]}
          Draft: {leave: [askLeave]}
        preconditions:
          askLeave: {provider: askLeave}
        """

    @Test(arguments: [
        ("dismiss", [:] as JSONValue, true), ("dismiss", [:] as JSONValue, false),
        ("navigate", ["to": "Home", "by": "root"] as JSONValue, true), ("navigate", ["to": "Home", "by": "root"] as JSONValue, false),
    ])
    func anUpdateWhileTheGuardWaitsMakesItsAnswerStale(method: String, params: JSONValue, updateTheDraft: Bool) throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client(), provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.askLeave"]])
        let list = try c.call("navigate", ["to": "List"])["node"]!
        let draft = try c.call("navigate", ["to": "Draft", "with": ["text": "a"]])["node"]!
        let id = try c.send(method, params)
        let ask = try provider.serverRequest("precondition.evaluate")
        #expect(ask["params"]?["navigation"]?["with"] == ["text": "a"], "\(ask)")
        try c.call("update", ["node": updateTheDraft ? draft : list, "with": ["text": "ab"]])
        try provider.respond(to: ask, result: ["passed": true])
        let reply = try c.reply(to: id)
        guard updateTheDraft else {
            #expect(reply["result"]?["version"] == 4, "another screen's params do not touch the guard's answer: \(reply)")
            return
        }
        let error = reply["error"]?["data"]
        #expect(error?["kind"] == "conflict" && error?["preconditions"] == ["app.askLeave"] && error?["leaving"] == draft, "\(reply)")
        let tree = try c.call("tree")
        #expect(tree["version"] == 3 && tree["root"]?["children"]?.arrayValue?.last?["params"] == ["text": "ab"], "nothing changed: \(tree)")
        // Asked again, the guard is asked about the params the draft has now.
        let again = try c.send(method, params)
        let second = try provider.serverRequest("precondition.evaluate")
        #expect(second["params"]?["navigation"]?["with"] == ["text": "ab"], "\(second)")
        try provider.respond(to: second, result: ["passed": true])
        #expect(try c.reply(to: again)["result"]?["version"] == 4)
    }
}

/// `dismiss {to}` that waits for a leave guard while another tab is selected pops the stack of the
/// screen it matched when asked, not a screen of that name in the tab shown by then.
@Suite struct DismissToThatWaitedTests {
    @Test func itPopsToTheScreenItMatchedWhenAsked() throws {
        let d = try Daemon(graph: """
            root: {tabs: [Home, Settings]}
            coordinators:
              Home: {opens: [List]}
              Settings: {opens: [List]}
              List: {opens: [Draft, Other]}
              Draft: {leave: [askLeave]}
              Other: {}
            preconditions:
              askLeave: {provider: askLeave}
            """)
        let c = try d.client(), provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.askLeave"]])
        let home = try c.call("tree")["visible"]?.arrayValue?.last ?? .null
        try c.call("navigate", ["to": "Settings", "by": "select"])
        try c.call("navigate", ["to": "List"])
        try c.call("navigate", ["to": "Other"])
        try c.call("navigate", ["to": "Home", "by": "select"])
        let list = try c.call("navigate", ["to": "List"])["node"]!
        let draft = try c.call("navigate", ["to": "Draft"])["node"]!
        let id = try c.send("dismiss", ["to": "List"])
        let ask = try provider.serverRequest("precondition.evaluate")
        try c.call("navigate", ["to": "Settings", "by": "select", "from": home])
        try provider.respond(to: ask, result: ["passed": true])
        let reply = try c.reply(to: id)
        #expect(reply["result"]?["removed"] == [draft], "\(reply)")
        let tree = try c.call("tree")
        let tabs = tree["root"]?["children"]?.arrayValue ?? []
        #expect(tabs.first?["children"]?.arrayValue?.map { $0["id"] } == [home, list], "\(tree)")
        #expect(tabs.last?["children"]?.arrayValue?.map { $0["coordinator"] } == ["app.Settings", "app.List", "app.Other"], "the tab shown is left alone: \(tree)")
        #expect(tree["root"]?["selected"] == 1)
    }
}

/// `dismiss {result, merge: true}` of a screen in a tab not shown: the screen left on top in that
/// tab takes the result, and `screenResult` names the two screens of that tab.
@Suite struct ResultOfADismissOffTheVisiblePathTests {
    @Test func theScreenLeftOnTopWhereTheDismissWasTakesIt() throws {
        let d = try Daemon(graph: """
            root: {tabs: [Home, Settings]}
            coordinators:
              Home: {opens: [List]}
              Settings: {}
              List: {opens: [Item], setup: {type: object, properties: {x: {type: integer}}}}
              Item: {}
            """)
        let c = try d.client(), watcher = try d.client()
        try watcher.call("subscribe")
        let list = try c.call("navigate", ["to": "List"])["node"]!
        let item = try c.call("navigate", ["to": "Item"])["node"]!
        let settings = try c.call("navigate", ["to": "Settings", "by": "select"])["node"]!
        let r = try c.call("dismiss", ["node": item, "result": ["x": 1], "merge": true])
        #expect(r["removed"] == [item], "\(r)")
        let tree = try c.call("tree")
        let tabs = tree["root"]?["children"]?.arrayValue ?? []
        #expect(tabs.first?["children"]?.arrayValue?.last?["id"] == list && tabs.first?["children"]?.arrayValue?.last?["params"] == ["x": 1], "\(tree)")
        #expect(tabs.last?["children"]?.arrayValue?.first?["params"] == [:], "the screen shown takes nothing: \(tree)")
        let note = try watcher.notification("screenResult")
        #expect(note["params"]?["node"] == item && note["params"]?["to"] == list && note["params"]?["to"] != settings, "\(note)")
    }
}

/// A completed flow's `then` is a navigation like any other: what it removes keeps its leave
/// guards. The flow's own end (the flow, its steps, what is above it) runs none, as `flowComplete`
/// of any flow runs none.
@Suite struct FlowThenGuardTests {
    /// A `then` by `replace` from the screen below the flow replaces that screen.
    static let below = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Editor]}
          Editor: {opens: [Wizard], leave: [saved]}
          Wizard: {flow: {steps: [Step]}, then: {to: Done, by: replace}, leave: [never]}
          Step: {}
          Done: {}
        preconditions:
          saved: {check: {fact: saved, equals: true}}
          never: {check: {fact: never, equals: true}}
        """

    func stack(_ c: TestClient) throws -> [JSONValue?] {
        try c.call("tree")["root"]?["children"]?.arrayValue?.map { $0["coordinator"] } ?? []
    }

    @Test func aThenThatReplacesTheScreenBelowTheFlowRunsItsGuards() throws {
        let d = try Daemon(graph: Self.below)
        let c = try d.client()
        try c.call("navigate", ["to": "Editor"])
        let flow = try c.call("navigate", ["to": "Wizard"])["node"]!
        let r = try c.call("flowComplete", ["flow": flow, "result": [:]])
        // The flow completed (its own guard `never` did not run); its `then` was refused by the editor's guard.
        #expect(r["version"] == 3 && r["then"]?["error"]?["data"]?["kind"] == "preconditionFailed"
                && r["then"]?["error"]?["data"]?["precondition"] == "app.saved", "\(r)")
        #expect(try stack(c) == ["app.Home", "app.Editor"])
        try c.call("context.set", ["facts": ["saved": true]])
        let again = try c.call("navigate", ["to": "Wizard"])["node"]!
        let done = try c.call("flowComplete", ["flow": again, "result": [:]])
        #expect(done["then"]?["version"] == 6, "\(done)")
        #expect(try stack(c) == ["app.Home", "app.Done"])
    }

    /// A flow first in a tab, whose `then` by `root` takes the whole tree: the other tab's screens
    /// keep their guards (`asked` on Home makes the `then` wait, for `waiting`).
    static func inATab(waiting: Bool) -> String {
        """
        root: {tabs: [Onboarding, Other]}
        coordinators:
          Onboarding: {flow: {steps: [Welcome]}, then: {to: Home, by: root}, leave: [never]}
          Welcome: {}
          Home: {preconditions: [\(waiting ? "asked" : "")]}
          Other: {opens: [Editor, Plain]}
          Editor: {leave: [saved]}
          Plain: {}
        preconditions:
          saved: {check: {fact: saved, equals: true}}
          never: {check: {fact: never, equals: true}}
          asked: {provider: asked}
        """
    }

    /// The node id of the flow first in the first tab, and the other tab's first screen.
    func tabs(_ c: TestClient) throws -> (flow: JSONValue, other: JSONValue) {
        let tabs = try c.call("tree")["root"]?["children"]?.arrayValue ?? []
        let first: [JSONValue] = tabs.map { $0["children"]?.arrayValue?.first?["id"] ?? .null }
        #expect(first.count == 2, "two tabs: \(tabs)")
        return (first[0], first[1])
    }

    @Test func aThenByRootFromATabRunsTheGuardsOfTheOtherTabs() throws {
        let d = try Daemon(graph: Self.inATab(waiting: false))
        let c = try d.client()
        let (flow, other) = try tabs(c)
        try c.call("navigate", ["to": "Editor", "from": other])
        let refused = try c.callError("flowComplete", ["flow": flow, "result": [:]])
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(refused)")
        let tree = try c.call("tree")
        #expect(tree["version"] == 1 && tree["root"]?["kind"] == "tabs", "the flow is still live: \(tree)")
        try c.call("context.set", ["facts": ["saved": true]])
        let r = try c.call("flowComplete", ["flow": flow, "result": [:]])
        #expect(r["version"] == 2 && r["then"]?["version"] == 2, "\(r)")
        #expect(try stack(c) == ["app.Home"])
    }

    /// While the `then` waits, a screen without guards comes in the other tab: the commit compares
    /// what it would remove with the guards it ran, not with the flow's own (which never run).
    @Test func aThenThatWaitedIsNotRefusedForTheFlowsOwnGuards() throws {
        let d = try Daemon(graph: Self.inATab(waiting: true))
        let c = try d.client(), provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        let (flow, other) = try tabs(c)
        let id = try c.send("flowComplete", ["flow": flow, "result": [:]])
        let ask = try provider.serverRequest("precondition.evaluate")
        try c.call("navigate", ["to": "Plain", "from": other])
        try provider.respond(to: ask, result: ["passed": true])
        let r = try c.reply(to: id)
        #expect(r["result"]?["then"]?["version"] == 2, "\(r)")
        #expect(try stack(c) == ["app.Home"])
    }
}
