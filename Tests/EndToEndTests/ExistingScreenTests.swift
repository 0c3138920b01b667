import Foundation
import JSON
import NavTesting
import Testing

/// `navigate {existing: top | pop, merge}` and a coordinator's `identity`: what the peer
/// conformance cases do not cover (errors, leave guards, subscribers, the check of the graph).
@Suite struct ExistingScreenTests {
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [List, Editor]}
          List: {opens: [Editor, List], identity: [folder], setup: {type: object, required: [folder], properties: {folder: {type: string}, sort: {type: string}}}}
          Editor: {opens: [List], leave: [saved]}
        preconditions:
          saved: {check: {fact: saved, equals: true}}
        """

    @Test func wrongOptionsAreRefusedWithTheRightForm() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try c.call("navigate", ["to": "List", "with": ["folder": "inbox"]])
        let cases: [(JSONValue, String)] = [
            (["to": "List", "with": ["folder": "inbox"], "existing": "sometimes"], "must be push"),
            (["to": "List", "with": ["folder": "inbox"], "existing": "top", "by": "present"], "goes with by: push"),
            (["to": "List", "with": ["folder": "inbox"], "merge": true], "needs existing: top or pop"),
            (["to": "List", "with": ["folder": "inbox"], "existing": "pop", "popUpTo": ["to": "Home"]], "not both"),
        ]
        for (params, says) in cases {
            let e = try c.callError("navigate", params)
            #expect(e["data"]?["kind"] == "invalidParams", "\(e)")
            let said = e["message"]?.stringValue ?? ""
            #expect(said.contains(says), "\(e)")
        }
        // A merge the setup refuses names the screen and the field, and changes nothing.
        let e = try c.callError("navigate", ["to": "List", "with": ["sort": 3], "existing": "top", "merge": true])
        #expect(e["data"]?["kind"] == "invalidSetup" && e["data"]?["pointer"] == "/sort", "\(e)")
        #expect(try c.call("tree")["version"] == 1)
    }

    @Test func existingPopRunsTheLeaveGuardsOfWhatItRemoves() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let list = try c.call("navigate", ["to": "List", "with": ["folder": "inbox"]])["node"]!
        let editor = try c.call("navigate", ["to": "Editor"])["node"]!
        let refused = try c.callError("navigate", ["to": "List", "with": ["folder": "inbox", "sort": "date"], "existing": "pop"])
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(refused)")
        #expect(try c.call("tree")["visible"]?.arrayValue?.last == editor, "nothing popped")

        try c.call("context.set", ["facts": ["saved": true]])
        let back = try c.call("navigate", ["to": "List", "with": ["folder": "inbox", "sort": "date"], "existing": "pop"])
        #expect(back["node"] == list)
        let tree = try c.call("tree")
        #expect(tree["visible"]?.arrayValue?.last == list)
        #expect(tree["root"]?["children"]?.arrayValue?.count == 2)
        #expect(tree["root"]?["children"]?.arrayValue?[1]["params"] == ["folder": "inbox", "sort": "date"])
    }

    @Test func aScreenOfAnotherIdentityIsPushedAndNothingChangedIsNotPublished() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        let inbox = try c.call("navigate", ["to": "List", "with": ["folder": "inbox"]])["node"]!
        // Same identity, same params: the screen stays, no version, no notification.
        let same = try c.call("navigate", ["to": "List", "with": ["folder": "inbox"], "existing": "top"])
        #expect(same["node"] == inbox && same["version"] == 1)
        // Another folder is another screen.
        let sent = try c.call("navigate", ["to": "List", "with": ["folder": "sent"], "existing": "top"])
        #expect(sent["node"] != inbox && sent["version"] == 2)
        // The subscriber heard versions 1 and 2 and nothing between them.
        #expect(try watcher.notification("stackChanged")["params"]?["version"] == 1)
        #expect(try watcher.notification("stackChanged")["params"]?["version"] == 2)
        // existing: pop finds the inbox below and pops to it.
        let back = try c.call("navigate", ["to": "List", "with": ["folder": "inbox"], "existing": "pop"])
        #expect(back["node"] == inbox && back["version"] == 3)
        let changes = try watcher.notification("stackChanged")["params"]?["changes"]?.arrayValue ?? []
        #expect(changes.map { $0["op"]?.stringValue ?? "?" } == ["pop"], "the params were the same: \(changes)")
    }

    @Test func anIdentityFieldTheSetupDoesNotDeclareIsAGraphError() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try "root: {stack: Home}\ncoordinators:\n  Home: {identity: [id], setup: {type: object, properties: {name: {type: string}}}}\n"
            .write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["check", dir.path])
        #expect(r.status != 0)
        let output = r.stdout + r.stderr
        #expect(output.contains("app.yaml:3:21: error: identity field `id` is not declared by the setup of `app.Home`"), "\(output)")
    }

    /// Jetpack's `popUpTo(start) { inclusive = true }`: popping the root stack's first screen too
    /// makes the target its first screen (the stack is never empty), after the leave guards of
    /// everything it removes.
    @Test func popUpToInclusiveOfTheFirstScreenMakesTheTargetTheFirst() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try c.call("navigate", ["to": "List", "with": ["folder": "inbox"]])
        try c.call("navigate", ["to": "Editor"])
        let nav: JSONValue = ["to": "List", "with": ["folder": "sent"], "popUpTo": ["to": "Home", "inclusive": true]]
        let refused = try c.callError("navigate", nav)
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["precondition"] == "app.saved", "\(refused)")
        #expect(try c.call("tree")["version"] == 2)
        try c.call("context.set", ["facts": ["saved": true]])
        let r = try c.call("navigate", nav)
        let tree = try c.call("tree")
        let stack = tree["root"]?["children"]?.arrayValue ?? []
        #expect(stack.map { $0["coordinator"] } == ["app.List"] && stack.first?["id"] == r["node"], "\(tree)")
        #expect(r["version"] == 3, "one commit")
        // Presenting from a stack left empty has no meaning: the error says what to do.
        let e = try c.callError("navigate", ["to": "Editor", "by": "present", "popUpTo": ["to": "List", "inclusive": true]])
        #expect(e["data"]?["kind"] == "invalidParams" && (e["message"]?.stringValue ?? "").contains("which a push does"), "\(e)")
    }
}

/// `navigate {existing}` that waits for its target's preconditions while a screen is pushed above
/// the one it found (from lower in the stack): `pop` still ends on that screen, `top` no longer
/// finds it on top.
@Suite struct ExistingScreenThatWaitedTests {
    @Test(arguments: ["pop", "top"])
    func whatCameAboveTheScreenFound(existing: String) throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [List]}
              List: {opens: [Item, Other]}
              Item: {setup: {type: object, properties: {id: {type: string}}}, opens: [Item], preconditions: [asked]}
              Other: {}
            preconditions:
              asked: {provider: asked}
            """)
        let c = try d.client(), provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.asked"]])
        let list = try c.call("navigate", ["to": "List"])["node"]!
        let first = try c.send("navigate", ["to": "Item", "with": ["id": "a"]])
        try provider.respond(to: try provider.serverRequest("precondition.evaluate"), result: ["passed": true])
        let item = try c.reply(to: first)["result"]?["node"] ?? .null
        let id = try c.send("navigate", ["to": "Item", "with": ["id": "b"], "existing": .string(existing)])
        let ask = try provider.serverRequest("precondition.evaluate")
        let other = try c.call("navigate", ["to": "Other", "from": list])["node"]!
        try provider.respond(to: ask, result: ["passed": true])
        let reply = try c.reply(to: id)
        let stack = try c.call("tree")["root"]?["children"]?.arrayValue ?? []
        if existing == "pop" {
            #expect(reply["result"]?["node"] == item && reply["result"]?["version"] == 4, "\(reply)")
            #expect(stack.map { $0["id"] } == [stack.first?["id"] ?? .null, list, item] && stack.last?["params"] == ["id": "b"], "Other popped: \(stack)")
        } else {
            #expect(reply["error"]?["data"]?["kind"] == "conflict" && reply["error"]?["data"]?["node"] == item, "\(reply)")
            #expect(stack.map { $0["id"] }.suffix(2) == [item, other] && stack[2]["params"] == ["id": "a"], "nothing changed: \(stack)")
        }
    }
}
