import Foundation
import JSON
import NavTesting
import Testing

/// Redirecting preconditions: a declared `redirect:`, a provider's or a command's `{redirect}`, loops.
@Suite struct RedirectTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Cart, Loop1, Promo, Deal, Sale]}
          Cart: {preconditions: [signedIn]}
          SignIn: {setup: {type: object, required: [next], properties: {next: {type: string}}}}
          Loop1: {preconditions: [toLoop2]}
          Loop2: {preconditions: [toLoop1]}
          Promo: {preconditions: [askPromo]}
          Deal: {preconditions: [cmdRedirect]}
          Sale: {}
          Hidden: {}
        preconditions:
          signedIn: {check: {fact: signedIn, equals: true}, redirect: {to: SignIn, by: present, with: {next: app.Cart}}}
          toLoop2: {check: {fact: x, equals: 1}, redirect: Loop2}
          toLoop1: {check: {fact: x, equals: 1}, redirect: Loop1}
          askPromo: {provider: true, timeout: 2s}
          cmdRedirect: {command: [sh, -c, "cat >/dev/null; echo '{\\"redirect\\": {\\"to\\": \\"app.Sale\\"}}'; exit 1"]}
        """

    @Test func aDeclaredRedirectGoesElsewhereAndSaysSo() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let r = try c.call("navigate", ["to": "Cart"])
        #expect(r["redirected"] == [["from": "app.Cart", "precondition": "app.signedIn", "to": "app.SignIn"]], "\(r)")
        let tree = try c.call("tree")
        let top = tree["root"]?["children"]?.arrayValue?.first?["presented"]?["children"]?.arrayValue?.first
        #expect(top?["coordinator"] == "app.SignIn" && top?["params"] == ["next": "app.Cart"], "SignIn is not in Home's opens, but the graph declared it: \(tree)")
        try c.call("dismiss")
        try c.call("context.set", ["facts": ["signedIn": true]])
        #expect(try c.call("navigate", ["to": "Cart"])["redirected"] == nil)
    }

    @Test func aRedirectWithoutByShowsItsTargetTheWayTheTargetAllows() throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Inbox, Outbox]}
              Inbox: {preconditions: [signedIn]}
              Outbox: {preconditions: [verified]}
              Login: {presentations: [present]}
              Verify: {}
            preconditions:
              signedIn: {check: {fact: signedIn, equals: true}, redirect: Login}
              verified: {check: {fact: verified, equals: true}, redirect: Verify}
            """
        let d = try Daemon(graph: graph)
        let c = try d.client()
        // Login is never pushed: the redirect of a push presents it, as navigate without `by` would.
        let r = try c.call("navigate", ["to": "Inbox"])
        #expect(r["redirected"]?.arrayValue?.first?["to"] == "app.Login", "\(r)")
        var tree = try c.call("tree")
        let home = tree["root"]?["children"]?.arrayValue?.first
        #expect(home?["presented"]?["children"]?.arrayValue?.first?["coordinator"] == "app.Login", "\(tree)")
        try c.call("dismiss")
        // Verify allows push: the redirect keeps the navigation's style.
        #expect(try c.call("navigate", ["to": "Outbox"])["redirected"]?.arrayValue?.first?["to"] == "app.Verify")
        tree = try c.call("tree")
        #expect(tree["root"]?["children"]?.arrayValue?.compactMap { $0["coordinator"]?.stringValue } == ["app.Home", "app.Verify"], "\(tree)")
        // A style the navigation names that the target does not allow gives way too.
        try c.call("dismiss")
        #expect(try c.call("navigate", ["to": "Inbox", "by": "replace"])["redirected"]?.arrayValue?.first?["to"] == "app.Login")
        tree = try c.call("tree")
        #expect(tree["root"]?["children"]?.arrayValue?.first?["presented"]?["children"]?.arrayValue?.first?["coordinator"] == "app.Login", "\(tree)")
    }

    @Test func loopsAreDetected() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let e = try c.callError("navigate", ["to": "Loop1"])
        #expect(e["data"]?["kind"] == "preconditionFailed" && e["data"]?["redirects"] == ["app.Loop1", "app.Loop2", "app.Loop1"], "\(e)")
        #expect(try c.call("tree")["version"] == 0, "nothing committed")
    }

    @Test func providersAndCommandsMayAnswerARedirect() throws {
        let d = try Daemon(graph: Self.graph)
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.askPromo"]])
        let c = try d.client()
        let id = try c.send("navigate", ["to": "Promo"])
        let ask = try provider.serverRequest("precondition.evaluate")
        try provider.respond(to: ask, result: ["passed": false, "redirect": ["to": "app.Sale"]])
        let r = try c.reply(to: id)
        #expect(r["result"]?["redirected"]?.arrayValue?.first?["to"] == "app.Sale", "\(r)")
        try c.call("dismiss")
        // A redirect a provider answers must still be one the source opens.
        let id2 = try c.send("navigate", ["to": "Promo"])
        try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": false, "redirect": "app.Hidden"])
        let refused = try c.reply(to: id2)
        #expect(refused["error"]?["data"]?["kind"] == "notAllowed" && refused["error"]?["data"]?["redirectedTo"] == "app.Hidden", "\(refused)")
        let deal = try c.call("navigate", ["to": "Deal"], timeout: 10)
        #expect(deal["redirected"]?.arrayValue?.first?["to"] == "app.Sale", "a command's first line: \(deal)")
    }
}

/// Leave guards: `leave:` preconditions run before a dismiss removes their screen.
@Suite struct LeaveGuardTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [List, Editor]}
          List: {opens: [Editor]}
          Editor: {leave: [saved, confirmed], presentations: [push, present]}
        preconditions:
          saved: {check: {fact: saved, equals: true}}
          confirmed: {provider: true, timeout: 5s}
        """

    @Test func aGuardThatSaysNoKeepsTheScreen() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try c.call("navigate", ["to": "List"])
        let editor = try c.call("navigate", ["to": "Editor"])["node"]!
        let refused = try c.callError("dismiss")
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(refused)")
        let said = refused["message"]?.stringValue ?? ""
        #expect(said.contains("leave guard `app.saved` of `app.Editor`"), "\(refused)")
        let popping = try c.callError("dismiss", ["to": "Home"])
        #expect(popping["data"]?["kind"] == "preconditionFailed", "popping over the editor is guarded too: \(popping)")
        #expect(try c.call("tree")["visible"]?.arrayValue?.last == editor)
    }

    @Test func aPopUpToOverAGuardedScreenRunsItsGuardFirst() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let list = try c.call("navigate", ["to": "List"])["node"]!
        let editor = try c.call("navigate", ["to": "Editor"])["node"]!
        let refused = try c.callError("navigate", ["to": "Editor", "from": list, "popUpTo": ["to": "List"]])
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(refused)")
        #expect(try c.call("tree")["visible"]?.arrayValue?.last == editor, "nothing popped")
    }

    @Test func theDismissWaitsForTheProviderAndCanBeCancelled() throws {
        let d = try Daemon(graph: Self.graph)
        let prompt = try d.client()
        try prompt.call("provide", ["preconditions": ["app.confirmed"]])
        let c = try d.client()
        try c.call("context.set", ["facts": ["saved": true]])
        let editor = try c.call("navigate", ["to": "Editor", "by": "present"])["node"]!
        // The user is asked; the dismiss waits, and other requests are answered meanwhile.
        let id = try c.send("dismiss")
        let ask = try prompt.serverRequest("precondition.evaluate")
        #expect(ask["params"]?["navigation"]?["leaving"] == editor, "\(ask)")
        #expect(try c.call("ping") == "pong")
        try prompt.respond(to: ask, result: ["passed": true])
        let done = try c.reply(to: id)
        #expect(done["result"]?["removed"]?.arrayValue?.contains(editor) == true, "\(done)")
        // Asked again, and cancelled before the answer: the screen stays.
        let second = try c.call("navigate", ["to": "Editor", "by": "present"])["node"]!
        let id2 = try c.send("dismiss")
        let ask2 = try prompt.serverRequest("precondition.evaluate")
        let nav = try #require(ask2["params"]?["navigation"]?["id"])
        #expect(try c.call("cancel", ["navigation": nav])["cancelled"] == true)
        #expect(try c.reply(to: id2)["error"]?["data"]?["kind"] == "cancelled")
        #expect(try c.call("tree")["visible"]?.arrayValue?.last == second)
    }
}

/// Tab containers anywhere: a tab bar presented in a modal or pushed on a stack.
@Suite struct TabContainerTests {
    static let graph = """
        root: {tabs: [Home, Inbox]}
        coordinators:
          Home: {opens: [Settings, Detail]}
          Inbox: {}
          Settings: {tabs: [General, Privacy], presentations: [present, push]}
          General: {opens: [Detail]}
          Privacy: {}
          Detail: {}
        """

    @Test func presentSelectPushAndDismissATabBarInAModal() throws {
        let d = try Daemon(graph: Self.graph)
        let watcher = try d.client()
        try watcher.call("subscribe")
        let c = try d.client()
        let r = try c.call("navigate", ["to": "Settings", "by": "present"])
        var tree = try c.call("tree")
        let shell = tree["root"]?["children"]?.arrayValue?.first?["children"]?.arrayValue?.first?["presented"]?["children"]?.arrayValue?.first
        #expect(shell?["kind"] == "tabs" && shell?["coordinator"] == "app.Settings" && shell?["id"] == r["node"], "\(tree)")
        #expect(shell?["children"]?.arrayValue?.map { $0["children"]?.arrayValue?.first?["coordinator"] } == ["app.General", "app.Privacy"])
        // select finds the tab in the innermost tab bar of the visible path, not the root's.
        let privacy = try c.call("navigate", ["to": "Privacy", "by": "select"])
        tree = try c.call("tree")
        #expect(tree["visible"]?.arrayValue?.last == privacy["node"], "\(tree)")
        #expect(try c.callError("navigate", ["to": "General", "by": "push"])["data"]?["kind"] == "notAllowed")
        try c.call("navigate", ["to": "General", "by": "select"])
        try c.call("navigate", ["to": "Detail"])
        try c.call("dismiss")
        // Dismissing a tab's first screen dismisses the whole tab bar, and with it the modal.
        let gone = try c.call("dismiss")
        #expect(gone["removed"]?.arrayValue?.contains(r["node"] ?? .null) == true, "\(gone)")
        #expect(try c.call("tree")["visible"]?.arrayValue?.count == 3)
        // Selecting a root tab still works when no inner tab bar declares it.
        #expect(try c.call("navigate", ["to": "Inbox", "by": "select"])["version"] != nil)
        var n = 0
        while try watcher.notification("stackChanged")["params"]?["version"] != 7 { n += 1 }
        #expect(n < 7)
    }

    @Test func aPushedTabBarSurvivesARestart() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("graph"), withIntermediateDirectories: true)
        try Self.graph.write(toFile: dir.file("graph/app.yaml"), atomically: true, encoding: .utf8)
        let args = ["--graph", dir.file("graph"), "--state", dir.file("state.sqlite")]
        var before: JSONValue = .null
        do {
            let d = try Daemon(arguments: args, socketPath: dir.file("d.sock"))
            let c = try d.client()
            try c.call("navigate", ["to": "Settings", "by": "push"])
            try c.call("navigate", ["to": "Privacy", "by": "select"])
            before = try c.call("tree")
            d.stop(signal: SIGKILL)
        }
        let d2 = try Daemon(arguments: args, socketPath: dir.file("d.sock"))
        let c2 = try d2.client()
        #expect(try c2.call("tree") == before)
        try c2.call("navigate", ["to": "General", "by": "select"])
        #expect(try c2.call("navigate", ["to": "Detail"])["version"] == 4)
    }
}
