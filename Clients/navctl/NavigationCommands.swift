import ArgumentParser
import Foundation
import JSON
import NavClient

// The commands that navigate: navigate, route, dismiss, update, reset, link, complete, open, cancel.

struct Navigate: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Navigate to a coordinator.")
    @OptionGroup var common: Common
    @Argument(help: "Target coordinator, such as shop.Product.", completion: graphNames("coordinators")) var target: String
    @Option(help: "push, present, replace, root or select.") var by: String?
    @OptionGroup var setup: SetupOptions
    @Option(help: "Idempotency key.") var key: String?
    @Flag(help: "Validate only; commit nothing.") var dryRun = false
    @Option(help: "Pop to this coordinator or node first (one commit).", completion: graphNames("coordinators")) var popUpTo: String?
    @Flag(help: "With --pop-up-to: pop that screen too.") var inclusive = false
    @Option(name: .customLong("hint"), help: "Presentation hint KEY=VALUE for front-ends (repeatable), such as animated=false.") var hints: [String] = []
    @Option(help: "For a flow: where navigation continues when it completes, a coordinator or {\"to\", \"with\"} as JSON.") var then: String?
    @OptionGroup var reuse: ExistingOptions
    @Flag(help: "With --by replace or root: remove guarded screens without running their leave guards.") var force = false
    @Flag(help: "Do not wait for preconditions: a navigation that has to wait is left to navd (it goes on after navctl exits) and reported as pending.") var noWait = false
    func run() throws {
        var p: JSONObject = ["to": .string(target)]
        if let by { p["by"] = .string(by) }
        if force { p["force"] = true }
        try setup.apply(to: &p, common: common, target: target)
        reuse.apply(to: &p)
        if let key { p["key"] = .string(key) }
        if dryRun { p["dryRun"] = true }
        if let popUpTo { p["popUpTo"] = ["to": .string(popUpTo), "inclusive": .bool(inclusive)] }
        if !hints.isEmpty { p["hints"] = .object(try pairs(hints)) }
        if let then { p["then"] = then.hasPrefix("{") ? try parseJSON(then, what: "--then") : .string(then) }
        p["progress"] = true
        if noWait { p["detach"] = true }
        try common.run("navigate", p, noWait: noWait, human: summary)
    }
}

/// `--existing` and `--merge`, shared by `navigate` and `route`.
struct ExistingOptions: ParsableArguments {
    @Option(help: "When the stack already shows the target: push (a new screen, the default), top (keep the screen on top and give it the params) or pop (go back to the nearest one, else push).")
    var existing: String?
    @Flag(help: "With --existing top or pop, or --by select: merge --with into the params of the screen found or of the tab's first screen instead of replacing them.") var merge = false

    func apply(to p: inout JSONObject) {
        if let existing { p["existing"] = .string(existing) }
        if merge { p["merge"] = true }
    }
}

/// `--with`, `--with-json` and `--from`, shared by `navigate` and `route`.
struct SetupOptions: ParsableArguments {
    @Argument(help: "Setup fields KEY=VALUE after the target, as --with gives them: navctl navigate shop.Product id=p1.") var fields: [String] = []
    @Option(name: .customLong("with"), help: "Setup field KEY=VALUE (repeatable).") var with: [String] = []
    @Option(help: "The whole setup as JSON.") var withJson: String?
    @Option(help: "Source node id (default: the visible top).") var from: String?

    /// `target`: the coordinator (or with `route`, the route) whose setup model types the values of `--with`.
    func apply(to p: inout JSONObject, common: Common, target: String, route: Bool = false) throws {
        let given = fields + with
        let (schema, owner) = given.isEmpty ? (nil, target) : common.setupModel(of: target, route: route)
        var w = try pairs(fields, schema: schema, owner: owner)
        for (k, v) in try pairs(with, option: "--with", schema: schema, owner: owner) { w[k] = v }
        if let withJson { for (k, v) in try parseJSON(withJson, what: "--with-json").objectValue ?? [:] { w[k] = v } }
        if !w.isEmpty { p["with"] = .object(w) }
        if let from { p["from"] = .string(from) }
    }
}

struct Route: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Navigate by a route name.")
    @OptionGroup var common: Common
    @Argument(help: "A route of the graph, such as showProduct.", completion: graphNames("routes")) var name: String
    @OptionGroup var setup: SetupOptions
    @OptionGroup var reuse: ExistingOptions
    @Flag(help: "Do not wait for preconditions: a navigation that has to wait is left to navd and reported as pending.") var noWait = false
    func run() throws {
        var p: JSONObject = ["route": .string(name)]
        try setup.apply(to: &p, common: common, target: name, route: true)
        reuse.apply(to: &p)
        p["progress"] = true
        if noWait { p["detach"] = true }
        try common.run("navigate", p, noWait: noWait, human: summary)
    }
}

struct Dismiss: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Dismiss a node (default: the visible top), or pop to a screen with --to.")
    @OptionGroup var common: Common
    @Argument var node: String?
    @Option(help: "Pop to the nearest screen of this coordinator (or this node) on the visible path.", completion: graphNames("coordinators")) var to: String?
    @Flag(help: "With --to: dismiss that screen too.") var inclusive = false
    @Option(help: "A result for the screen below, as JSON (sent as screenResult).") var result: String?
    @Flag(help: "With --result (an object): merge it into the params of the screen below, so that it stays.") var merge = false
    func run() throws {
        var p: JSONObject = [:]
        if let node { p["node"] = .string(node) }
        if let to { p["to"] = .string(to) }
        if inclusive { p["inclusive"] = true }
        if let result { p["result"] = try parseJSON(result, what: "--result") }
        if merge { p["merge"] = true }
        try common.run("dismiss", p, human: summary)
    }
}

struct Update: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Merge fields into a live screen's params (KEY=null removes one).")
    @OptionGroup var common: Common
    @Argument(help: "The screen's node id; left out (the first argument is a field), the screen the user sees.") var node: String
    @Argument(help: "Fields KEY=VALUE (VALUE is JSON when it parses).") var fields: [String] = []
    @Flag(help: "Keep the params it had: a dismiss of the screen restores them before it removes the screen.") var push = false
    func run() throws {
        var node = self.node, fields = self.fields
        let schema: JSONValue?, owner: String
        if node.contains("=") {
            // `navctl update label=home`: node ids have no `=`, so this is a field of the visible screen.
            fields.insert(node, at: 0)
            (node, schema, owner) = try common.visibleTopAndSetupModel()
        } else {
            (schema, owner) = fields.isEmpty ? (nil, node) : common.setupModelOfNode(node)
        }
        let with = try pairs(fields, schema: schema, owner: owner)
        var p: JSONObject = ["node": .string(node), "with": .object(with)]
        if push { p["push"] = true }
        try common.run("update", p) { r in
            "node \(r["node"]?["id"]?.stringValue ?? "?"), version \(r["version"]?.intValue ?? 0), params \(JSONWriter.string(r["node"]?["params"] ?? .null))"
        }
    }
}

struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reset the session to the graph's root, or to the stack of the given screens.",
        discussion: "Each SCREEN is a coordinator name or a JSON object {\"to\": NAME, \"with\": {...}, \"by\": \"present\"}.")
    @OptionGroup var common: Common
    @Argument(help: "Screens of the new stack, bottom first (none: the graph's root).") var screens: [String] = []
    @Flag(help: "Remove guarded screens without running their leave guards.") var force = false
    func run() throws {
        var p: JSONObject = [:]
        if force { p["force"] = true }
        if !screens.isEmpty {
            p["to"] = .array(try screens.map { $0.hasPrefix("{") ? try parseJSON($0, what: "a screen") : .string($0) })
        }
        try common.run("reset", p, human: summary)
    }
}

struct Link: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the URL of the visible path (or of a node) from the graph's links.")
    @OptionGroup var common: Common
    @Argument(help: "A node id (default: the visible top).") var node: String?
    func run() throws {
        try common.run("link.resolve", node.map { ["node": .string($0)] } ?? [:]) { $0["url"]?.stringValue ?? "" }
    }
}

struct Complete: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Complete a flow with a result, an error or a cancel.",
                                                    discussion: "With none of them the flow completes with the result {} (as nav-tui's c does for a flow whose result has no fields).")
    @OptionGroup var common: Common
    @Argument(help: "The flow's node id (default: the innermost flow on the visible path, the one nav-tui's c completes).") var flow: String?
    @Argument(help: "The result's fields KEY=VALUE (VALUE is JSON when it parses): navctl complete n9 orderId=o-1, or navctl complete orderId=o-1.") var fields: [String] = []
    @Option(help: "The result, as JSON.") var result: String?
    @Option(help: "Fail the flow with this message.") var error: String?
    @Flag(help: "Cancel the flow.") var cancel = false
    func run() throws {
        var fields = fields
        var flow = flow
        // A first argument KEY=VALUE is a field of the result (node ids hold no "="): the flow is the visible one.
        if let first = flow, first.contains("=") { fields.insert(first, at: 0); flow = nil }
        var p: JSONObject = ["flow": .string(try flow ?? common.visibleFlow())]
        if !fields.isEmpty && result != nil {
            throw usageError("give the result as --result JSON or as KEY=VALUE fields after the flow, not both")
        }
        if !fields.isEmpty { p["result"] = .object(try pairs(fields)) }
        if let result { p["result"] = try parseJSON(result, what: "--result") }
        if let error { p["error"] = ["message": .string(error)] }
        if cancel { p["cancelled"] = true }
        if p.count == 1 { p["result"] = .object([:]) }
        try common.run("flowComplete", p, human: summary)
    }
}

struct Open: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Open a deep link.")
    @OptionGroup var common: Common
    @Argument var url: String
    @Flag(help: "Open only the link's last screen, pushed from the visible screen (its opens decide).") var push = false
    @Flag(help: "Remove guarded screens the link replaces without running their leave guards.") var force = false
    @Option(help: "With --push: pop to this coordinator or node first (one commit).", completion: graphNames("coordinators")) var popUpTo: String?
    @Flag(help: "With --pop-up-to: pop that screen too.") var inclusive = false
    func run() throws {
        var p: JSONObject = ["url": .string(url)]
        if push { p["by"] = "push" }
        if force { p["force"] = true }
        if let popUpTo { p["popUpTo"] = ["to": .string(popUpTo), "inclusive": .bool(inclusive)] }
        try common.run("open", p, human: summary)
    }
}

struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Cancel a pending navigation (its id, such as nav-3, as navigate --no-wait reported it).")
    @OptionGroup var common: Common
    @Argument(help: "The navigation's id.") var navigation: String
    func run() throws {
        var notPending = false
        try common.run("cancel", ["navigation": .string(navigation)]) { r in
            if r["cancelled"] == .bool(true) { return "cancelled \(navigation)" }
            notPending = true
            return "nothing cancelled: \(navigation) is not pending (it committed or failed already, or no navigation has that id)"
        }
        // As an answer of ok: false: the command did not do what it was asked.
        if notPending { throw ExitCode(1) }
    }
}
