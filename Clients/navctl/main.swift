import ArgumentParser
import BuildInfo
import Foundation
import JSON
import NavClient

/// Options every subcommand shares. They may also be given before the subcommand
/// (`navctl --json tree`, `navctl --socket PATH tree`): ``GlobalOptions`` moves them after it.
struct Common: ParsableArguments {
    @Option(help: "navd's socket (default: $NAVD_SOCKET, else $XDG_RUNTIME_DIR/navd.sock, else /tmp/navd-<uid>/navd.sock).")
    var socket: String?

    @Option(help: "Session (default: main).")
    var session: String?

    @Flag(help: "Print navd's JSON result instead of a human summary.")
    var json = false

    @Flag(help: "No colour (as NO_COLOR does).")
    var noColor = false

    @Option(help: "Give up (and cancel a pending navigation) after this many seconds without an answer; exit status 1.")
    var timeout: Double?

    var color: Bool { !noColor && isatty(1) == 1 && (ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty }

    func client() throws -> NavClient {
        do { return try NavClient(socketPath: socket) } catch let e as NavClientError {
            FileHandle.standardError.write(Data("navctl: \(terminalSafe(e.message))\n".utf8))
            throw ExitCode(2)
        }
    }

    func params(_ extra: JSONObject = [:]) -> JSONObject {
        var p = extra
        if let session { p["session"] = .string(session) }
        return p
    }

    /// Calls navd; errors go to stderr as `navctl: KIND (CODE): MESSAGE`, exit status 1. While a
    /// navigation is pending, says on stderr what it waits for; Ctrl-C (or SIGTERM) cancels it and
    /// exits with 130, `--timeout` cancels it and exits with 1. With `noWait`, a navigation that has to
    /// wait is left to navd (sent `detach: true`) and reported as pending.
    func run(_ method: String, _ extra: JSONObject = [:], noWait: Bool = false, human: (JSONValue) -> String) throws {
        let c = try client()
        var pending: JSONValue?
        c.interruptingSignals = [SIGINT, SIGTERM]
        c.onNotification = { n in
            guard n["method"]?.stringValue == "navigationPending", let p = n["params"] else { return }
            pending = p
            explainPending(p, noWait: noWait)
            if noWait { throw StopWaiting() }
        }
        do {
            let r = try c.call(method, params(extra), timeout: timeout)
            // JSON escapes control characters itself; text from navd shows them as \u{…}.
            print(json ? terminalSafeJSON(JSONWriter.string(r)) : terminalSafe(human(r), keeping: ["\n", "\t"]))
            if r["ok"] == .bool(false) {
                // An answer that says it failed (graph.reload of a broken graph) is a failure too.
                FileHandle.standardError.write(Data("navctl: \(method) answered ok: false\n".utf8))
                throw ExitCode(1)
            }
        } catch is StopWaiting {
            let p = pending ?? .null
            print(json ? terminalSafeJSON(JSONWriter.string(["pending": p])) : terminalSafe("pending \(p["navigation"]?.stringValue ?? "?"): waits for \(p["waitingFor"]?.stringValue ?? "?")"))
        } catch let e as NavClientError where e.kind == "interrupted" || e.kind == "timeout" {
            let nav = pending?["navigation"]?.stringValue.map { terminalSafe($0) }
            if let nav {
                c.interruptingSignals = []
                if (try? c.call("cancel", params(["navigation": .string(nav)]), timeout: 2)) != nil {
                    FileHandle.standardError.write(Data("navctl: cancelled \(nav)\n".utf8))
                }
            }
            if e.kind == "interrupted" { throw ExitCode(130) }
            FileHandle.standardError.write(Data("navctl: timeout: no answer from navd within \(timeout ?? 0) s\(nav.map { " (\($0) was cancelled)" } ?? "")\n".utf8))
            throw ExitCode(1)
        } catch let e as NavClientError {
            try fail(e)
        }
    }

    /// The setup model of coordinator `target` (or of the route's target), and its name, from the
    /// running navd's graph: nil when navd cannot say (the values of `--with` are then read as JSON
    /// when they parse). A short name (`Product`, `showProduct`) finds the one it ends.
    func setupModel(of target: String, route: Bool) -> (JSONValue?, String) {
        guard let c = try? NavClient(socketPath: socket), let g = try? c.call("graph.describe", timeout: 5) else { return (nil, target) }
        func find(_ section: String, _ name: String) -> (String, JSONValue)? {
            guard let all = g[section]?.objectValue else { return nil }
            if let v = all[name] { return (name, v) }
            let matches = all.filter { $0.key.hasSuffix("." + name) }
            return matches.count == 1 ? matches.first.map { ($0.key, $0.value) } : nil
        }
        var name = target
        if route {
            guard let r = find("routes", target)?.1, let to = r["to"]?.stringValue else { return (nil, target) }
            name = to
        }
        guard let (full, coordinator) = find("coordinators", name) else { return (nil, target) }
        return (coordinator["setup"], full)
    }

    /// The setup model of the coordinator of live node `node` (``setupModel(of:route:)``).
    func setupModelOfNode(_ node: String) -> (JSONValue?, String) {
        guard let c = try? NavClient(socketPath: socket), let t = try? c.call("tree", params(), timeout: 5) else { return (nil, node) }
        func walk(_ n: JSONValue) -> String? {
            if n["id"]?.stringValue == node { return n["coordinator"]?.stringValue }
            for c in n["children"]?.arrayValue ?? [] { if let f = walk(c) { return f } }
            return n["presented"].flatMap(walk)
        }
        guard let coordinator = walk(t["root"] ?? .null) else { return (nil, node) }
        return setupModel(of: coordinator, route: false)
    }

    /// Reports an error navd answered and exits (1; 2 when navd cannot be reached).
    func fail(_ e: NavClientError) throws -> Never {
        if json {
            print(terminalSafeJSON(JSONWriter.string(["error": ["code": .int(e.code), "kind": .string(e.kind), "message": .string(e.message), "data": e.data]])))
        }
        FileHandle.standardError.write(Data("navctl: \(terminalSafe(e.kind)) (\(e.code)): \(terminalSafe(e.message))\n".utf8))
        throw ExitCode(e.code == 0 ? 2 : 1)
    }

    /// What a pending navigation waits for, and how to end the wait, on stderr.
    func explainPending(_ p: JSONValue, noWait: Bool = false) {
        let nav = p["navigation"]?.stringValue ?? "?"
        var text = "navctl: \(nav) to \(p["to"]?.stringValue ?? "?") waits for precondition `\(p["waitingFor"]?.stringValue ?? "?")`"
        if let flow = p["flow"], let node = flow["node"]?.stringValue {
            let s = session.map { " --session \($0)" } ?? ""
            text += "\nnavctl: navd presented the recovery flow \(flow["coordinator"]?.stringValue ?? "?") as \(node): finish it with `navctl complete \(node)\(s) --result JSON` (or `--cancel`)"
        }
        text += noWait
            ? "\nnavctl: --no-wait: navd goes on with it after navctl exits; `navctl cancel \(nav)\(session.map { " --session \($0)" } ?? "")` cancels it\n"
            : "\nnavctl: Ctrl-C cancels the navigation\n"
        FileHandle.standardError.write(Data(terminalSafe(text, keeping: ["\n"]).utf8))
    }
}

/// Names from the running navd's graph for shell completion: `section` is "coordinators" or
/// "routes". Uses `--socket` from the words typed so far; none when navd cannot be reached.
func graphNames(_ section: String) -> CompletionKind {
    .custom { words, _, prefix in
        var socket: String?
        if let i = words.firstIndex(of: "--socket"), i + 1 < words.count {
            socket = words[i + 1]
        } else if let w = words.first(where: { $0.hasPrefix("--socket=") }) {
            socket = String(w.dropFirst("--socket=".count))
        }
        guard let c = try? NavClient(socketPath: socket), let g = try? c.call("graph.describe", timeout: 2) else { return [] }
        // Candidates are data: bash's compgen -W expands $(…) and backticks in its word list, so
        // only plain names (letters, digits, _, -, .) are offered, whatever the server sends.
        return (g[section]?.objectValue?.keys.sorted() ?? []).filter { $0.hasPrefix(prefix) && isCompletable($0) }
    }
}

/// Whether a name from a server may be offered to the shell for completion: letters, digits, `_`,
/// `-` and `.`, nothing a shell expands.
func isCompletable(_ name: String) -> Bool {
    !name.isEmpty && name.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "_-.".unicodeScalars.contains($0) }
}

/// Ends a call's wait when navd reports the navigation pending (`--no-wait`).
struct StopWaiting: Error {}

/// Moves the options every subcommand shares from before the subcommand to after it, so that
/// `navctl --json --socket S tree` means `navctl tree --json --socket S` (as git -C, kubectl
/// --context or redis-cli -s work). Only the leading run of shared options moves.
enum GlobalOptions {
    static let valued: Set<String> = ["--socket", "--session", "--timeout"]
    static let flags: Set<String> = ["--json", "--no-color"]
    /// Subcommands that are groups of subcommands.
    static let groups: Set<String> = ["session"]

    static func reorder(_ args: [String]) -> [String] {
        var moved: [String] = []
        var i = 0
        while i < args.count {
            let a = args[i]
            let name = a.split(separator: "=", maxSplits: 1).first.map(String.init) ?? a
            if flags.contains(a) || (valued.contains(name) && a.contains("=")) {
                moved.append(a)
                i += 1
            } else if valued.contains(a), i + 1 < args.count {
                moved += [a, args[i + 1]]
                i += 2
            } else {
                break
            }
        }
        guard !moved.isEmpty, i < args.count else { return args }
        // A group of subcommands (`session open`) takes them after its subcommand.
        if groups.contains(args[i]), i + 1 < args.count, !args[i + 1].hasPrefix("-") {
            return [args[i], args[i + 1]] + moved + args[(i + 2)...]
        }
        return [args[i]] + moved + args[(i + 1)...]
    }
}

/// A mistake in the command line found after parsing it: said on stderr in one line, exit status 64
/// (EX_USAGE, as for the options ArgumentParser refuses).
func usageError(_ message: String) -> ExitCode {
    FileHandle.standardError.write(Data("navctl: \(message)\n".utf8))
    return ExitCode(64)
}

func parseJSON(_ text: String, what: String) throws -> JSONValue {
    do { return try JSONParser(maxDepth: 64).parse(text) } catch {
        throw usageError("\(what) is not valid JSON: \(error)")
    }
}

/// `k=v` pairs: v is JSON when it parses (numbers, true, {"a":1}), else a string. With `schema`
/// (a setup model's JSON Schema), each value is read as its field's type says: a string field takes
/// `id=7` as "7" (or a JSON string, `id="7"`), a number, boolean, object or array field JSON.
func pairs(_ items: [String], option: String = "", schema: JSONValue? = nil, owner: String = "") throws -> JSONObject {
    var o = JSONObject()
    for item in items {
        guard let eq = item.firstIndex(of: "="), eq != item.startIndex else {
            throw usageError("\(option.isEmpty ? "" : option + " ")`\(item)` is not KEY=VALUE: write it as id=p1 (a string), n=7 (a number), "
                             + "tags='[\"a\"]' (JSON)\(option == "--with" ? ", or the whole setup as --with-json '{\"id\":\"p1\"}'" : "")")
        }
        let k = String(item[..<eq]), v = String(item[item.index(after: eq)...])
        let parsed = try? JSONParser(maxDepth: 64).parse(v)
        switch fieldTypes(schema, k) {
        case ["string"]:
            if v.hasPrefix("\""), case .string = parsed { o[k] = parsed } else { o[k] = .string(v) }
        case let types where !types.isEmpty && !types.contains("string"):
            guard let parsed, types.contains(jsonType(parsed)) || (types.contains("number") && jsonType(parsed) == "integer") else {
                let t = types.joined(separator: " or ")
                throw usageError("\(option) \(item): field \(k) of \(owner) is \(t == "integer" || t == "object" || t == "array" ? "an" : "a") \(t); "
                                 + "write it as \(k)=\(example(types[0]))")
            }
            o[k] = parsed
        default:
            o[k] = parsed ?? .string(v)
        }
    }
    return o
}

/// The JSON Schema types a setup model gives field `name` (none when it says nothing).
func fieldTypes(_ schema: JSONValue?, _ name: String) -> [String] {
    switch schema?["properties"]?[name]?["type"] {
    case .string(let t): [t]
    case .array(let ts): ts.compactMap(\.stringValue)
    default: []
    }
}

func jsonType(_ v: JSONValue) -> String {
    switch v {
    case .null: "null"
    case .bool: "boolean"
    case .int: "integer"
    case .double: "number"
    case .string: "string"
    case .array: "array"
    case .object: "object"
    }
}

func example(_ type: String) -> String {
    switch type {
    case "integer": "7"
    case "number": "1.5"
    case "boolean": "true"
    case "object": "'{\"key\":\"value\"}'"
    case "array": "'[\"a\",\"b\"]'"
    case "null": "null"
    default: "text"
    }
}

func summary(_ r: JSONValue) -> String {
    var parts: [String] = []
    if let n = r["node"]?.stringValue, !n.isEmpty { parts.append("node \(n)") }
    if let v = r["version"]?.intValue { parts.append("version \(v)") }
    if let removed = r["removed"]?.arrayValue, !removed.isEmpty { parts.append("removed \(removed.compactMap(\.stringValue).joined(separator: " "))") }
    if let vis = r["visible"]?.arrayValue { parts.append("visible \(vis.compactMap(\.stringValue).joined(separator: " > "))") }
    if let then = r["then"] {
        if let e = then["error"] {
            parts.append("then failed: \(e["data"]?["kind"]?.stringValue ?? "?"): \(e["message"]?.stringValue ?? "")")
        } else {
            parts.append("then \(summary(then))")
        }
    }
    return parts.joined(separator: ", ")
}

/// The tree, indented, with the visible path marked `▶` (coloured on a terminal).
func renderTree(_ t: JSONValue, color: Bool) -> String {
    let visible = Set(t["visible"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    var out = "session \(t["session"]?.stringValue ?? "?") version \(t["version"]?.intValue ?? 0)\n"
    func walk(_ n: JSONValue, _ depth: Int, _ label: String) {
        let id = n["id"]?.stringValue ?? "?"
        let kind = n["kind"]?.stringValue ?? "?"
        var line = String(repeating: "  ", count: depth) + label
        switch kind {
        case "screen", "flow":
            line += "\(n["coordinator"]?.stringValue ?? "?") [\(id)]"
            if kind == "flow" { line += " (flow)" }
            if let p = n["params"], p != .object([:]) { line += " " + JSONWriter.string(p) }
            if let h = n["paramsHistory"]?.arrayValue, !h.isEmpty { line += " (earlier params: \(h.count), back restores \(JSONWriter.string(h[h.count - 1])))" }
        case "tabs": line += "tabs " + (n["coordinator"]?.stringValue.map { "\($0) " } ?? "") + "[\(id)] selected \(n["selected"]?.intValue ?? 0)"
        default: line += "stack [\(id)]"
        }
        let mark = visible.contains(id) ? "▶ " : "  "
        out += (color && visible.contains(id) ? "\u{1B}[1;32m" + mark + line + "\u{1B}[0m" : mark + line) + "\n"
        for c in n["children"]?.arrayValue ?? [] { walk(c, depth + 1, "") }
        if let p = n["presented"] { walk(p, depth + 1, "presents ") }
    }
    walk(t["root"] ?? .null, 0, "")
    return String(out.dropLast())
}

@main
struct Main {
    static func main() {
        Navctl.main(GlobalOptions.reorder(Array(CommandLine.arguments.dropFirst())))
    }
}

struct Navctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "navctl",
        abstract: "Drive navd from the command line (like i3-msg or redis-cli).",
        discussion: """
            Options every subcommand takes (--socket, --session, --json, --no-color, --timeout) may \
            also come before it: navctl --session s1 tree.

            EXIT STATUS
              0    done (with --no-wait: the navigation is pending in navd)
              1    navd answered an error or ok: false, or --timeout passed
              2    navd cannot be reached, or the connection was lost
              64   a wrong command line (an option, KEY=VALUE, JSON)
              130  interrupted (Ctrl-C): the pending navigation was cancelled
            """,
        version: BuildInfo.versionLine("navctl"),
        subcommands: [Navigate.self, Route.self, Dismiss.self, Complete.self, Cancel.self, Open.self, Update.self, Reset.self, Link.self, Tree.self,
                      Watch.self, Set_.self, SessionCommand.self, Sessions.self, Stats.self, Provide.self, Call.self])
}

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
    @Option(name: .customLong("with"), help: "Setup field KEY=VALUE (repeatable).") var with: [String] = []
    @Option(help: "The whole setup as JSON.") var withJson: String?
    @Option(help: "Source node id (default: the visible top).") var from: String?

    /// `target`: the coordinator (or with `route`, the route) whose setup model types the values of `--with`.
    func apply(to p: inout JSONObject, common: Common, target: String, route: Bool = false) throws {
        let (schema, owner) = with.isEmpty ? (nil, target) : common.setupModel(of: target, route: route)
        var w = try pairs(with, option: "--with", schema: schema, owner: owner)
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
    @Argument(help: "The screen's node id.") var node: String
    @Argument(help: "Fields KEY=VALUE (VALUE is JSON when it parses).") var fields: [String] = []
    @Flag(help: "Keep the params it had: a dismiss of the screen restores them before it removes the screen.") var push = false
    func run() throws {
        let (schema, owner) = fields.isEmpty ? (nil, node) : common.setupModelOfNode(node)
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
    static let configuration = CommandConfiguration(abstract: "Complete a flow with a result, an error or a cancel.")
    @OptionGroup var common: Common
    @Argument var flow: String
    @Option(help: "The result, as JSON.") var result: String?
    @Option(help: "Fail the flow with this message.") var error: String?
    @Flag(help: "Cancel the flow.") var cancel = false
    func run() throws {
        var p: JSONObject = ["flow": .string(flow)]
        if let result { p["result"] = try parseJSON(result, what: "--result") }
        if let error { p["error"] = ["message": .string(error)] }
        if cancel { p["cancelled"] = true }
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

struct Tree: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the tree, the visible path marked ▶.")
    @OptionGroup var common: Common
    func run() throws { try common.run("tree") { renderTree($0, color: common.color) } }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Subscribe and print notifications, one per line.")
    @OptionGroup var common: Common
    @Option(help: "Stop after this many notifications.") var count: Int?
    func run() throws {
        let c = try common.client()
        do { try c.call("subscribe", common.params()) } catch let e as NavClientError { try common.fail(e) }
        var seen = 0
        while let n = try c.nextNotification() {
            let method = n["method"]?.stringValue ?? "?"
            let line = common.json ? terminalSafeJSON(JSONWriter.string(n)) : terminalSafe("\(method) \(JSONWriter.string(n["params"] ?? .null))")
            FileHandle.standardOutput.write(Data((line + "\n").utf8))  // unbuffered: one line per notification
            seen += 1
            if let count, seen >= count { return }
        }
    }
}

struct Set_: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "set", abstract: "Set session facts KEY=VALUE (VALUE is JSON when it parses).")
    @OptionGroup var common: Common
    @Argument var facts: [String]
    func run() throws {
        try common.run("context.set", ["facts": .object(try pairs(facts))]) { r in
            (r["facts"]?.objectValue ?? [:]).map { "\($0.key)=\(JSONWriter.string($0.value))" }.joined(separator: "\n")
        }
    }
}

/// `navctl session open|close|list NAME`: sessions as a unit of their own (as `tmux new-session`,
/// `kill-session`, `ls`).
struct SessionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session", abstract: "Open, close or list sessions.",
        subcommands: [SessionOpen.self, SessionClose.self, SessionList.self])
}

struct SessionOpen: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "open", abstract: "Open a session (its tree starts at the graph's root); an open one is left as it is.")
    @OptionGroup var common: Common
    @Argument(help: "The session's name.") var name: String
    func run() throws {
        try common.run("session.open", ["name": .string(name)]) { r in
            "session \(r["session"]?.stringValue ?? name) version \(r["version"]?.intValue ?? 0)"
        }
    }
}

struct SessionClose: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "close", abstract: "Close a session: its tree, facts and pending navigations go.")
    @OptionGroup var common: Common
    @Argument(help: "The session's name.") var name: String
    func run() throws {
        try common.run("session.close", ["name": .string(name)]) { _ in "closed \(name)" }
    }
}

struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Cancel a pending navigation (its id, such as nav-3, as navigate --no-wait reported it).")
    @OptionGroup var common: Common
    @Argument(help: "The navigation's id.") var navigation: String
    func run() throws {
        try common.run("cancel", ["navigation": .string(navigation)]) { _ in "cancelled \(navigation)" }
    }
}

struct SessionList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List sessions.")
    @OptionGroup var common: Common
    func run() throws { try Sessions.list(common) }
}

struct Sessions: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List sessions (as session list).")
    /// Every page of `session.list` (navd answers at most 10,000 names at a time), in order.
    static func list(_ common: Common) throws {
        let c = try common.client()
        var answer: JSONValue = [:]
        var names: [JSONValue] = []
        var after: JSONValue?
        do {
            repeat {
                answer = try c.call("session.list", common.params(after.map { ["after": $0] } ?? [:]), timeout: common.timeout)
                names += answer["sessions"]?.arrayValue ?? []
                after = answer["next"]
            } while after != nil
        } catch let e as NavClientError {
            try common.fail(e)
        }
        if case .object(var o) = answer { o["sessions"] = .array(names); answer = .object(o) }
        print(common.json ? terminalSafeJSON(JSONWriter.string(answer)) : names.compactMap(\.stringValue).map { terminalSafe($0) }.joined(separator: "\n"))
    }
    @OptionGroup var common: Common
    func run() throws { try Sessions.list(common) }
}

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show navd's counters.")
    @OptionGroup var common: Common
    func run() throws {
        try common.run("stats") { r in (r.objectValue ?? [:]).map { "\($0.key): \(JSONWriter.string($0.value))" }.joined(separator: "\n") }
    }
}

struct Provide: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Evaluate a provider precondition for navd until interrupted.")
    @OptionGroup var common: Common
    @Argument var name: String
    @Flag(help: "Answer passed.") var pass = false
    @Option(help: "Answer failed with this reason.") var fail: String?
    @Option(help: "Run this program (no shell; words split on spaces): exit 0 passes, else its first line is the reason.") var exec: String?
    func validate() throws {
        guard [pass, fail != nil, exec != nil].filter({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of --pass, --fail REASON, --exec CMD")
        }
    }
    func run() throws {
        let c = try common.client()
        let answer: () -> JSONValue = {
            if pass { return ["passed": true, "recovered": true] }
            if let fail { return ["passed": false, "recovered": false, "reason": .string(fail)] }
            let words = exec!.split(separator: " ").map(String.init)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: words[0].contains("/") ? words[0] : "/usr/bin/env")
            p.arguments = words[0].contains("/") ? Array(words.dropFirst()) : words
            let out = Pipe()
            p.standardOutput = out
            do { try p.run() } catch { return ["passed": false, "recovered": false, "reason": .string("cannot run \(words[0])")] }
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? "exit status \(p.terminationStatus)"
            let ok = p.terminationStatus == 0
            return ["passed": .bool(ok), "recovered": .bool(ok), "reason": .string(ok ? "" : line)]
        }
        c.requestHandler = { method, _ in
            method == "precondition.evaluate" || method == "precondition.recover" ? answer() : nil
        }
        do { try c.call("provide", ["preconditions": [.string(name)]]) } catch let e as NavClientError { try common.fail(e) }
        FileHandle.standardError.write(Data("navctl: providing \(name); Ctrl-C to stop\n".utf8))
        try c.serve()
    }
}

struct Call: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Call any method with raw JSON params; prints the JSON result.")
    @OptionGroup var common: Common
    @Argument var method: String
    @Argument var params: String?
    func run() throws {
        let p = try params.map { try parseJSON($0, what: "params").objectValue ?? [:] } ?? [:]
        try common.run(method, p) { JSONWriter.string($0) }
    }
}
