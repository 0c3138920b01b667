import ArgumentParser
import Foundation
import JSON
import NavClient

/// Options every subcommand shares. They may also be given before the subcommand
/// (`navctl --json tree`, `navctl --socket PATH tree`): ``GlobalOptions`` moves them after it.
struct Common: ParsableArguments {
    @Option(help: "navd's socket (default: $NAVD_SOCKET, else $XDG_RUNTIME_DIR/navd.sock, else /tmp/navd-<uid>.sock).")
    var socket: String?

    @Option(help: "Session (default: main).")
    var session: String?

    @Flag(help: "Print navd's JSON result instead of a human summary.")
    var json = false

    @Flag(help: "No colour (as NO_COLOR does).")
    var noColor = false

    @Option(help: "Give up (and cancel a pending navigation) after this many seconds without an answer; exit status 1.")
    var timeout: Double?

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout.isFinite) {
            throw ValidationError("--timeout is a number of seconds greater than 0, such as 5 or 0.5, not \(timeout)")
        }
    }

    var color: Bool { !noColor && isatty(1) == 1 && (ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty }

    func client() throws -> NavClient {
        do {
            let c = try NavClient(socketPath: socket)
            // Named in navd's client.list and logs, as nav-tui and nav-web name themselves. An error
            // navd answers is left to the call that follows; a server that is not navd, a lost
            // connection or a timeout is reported here.
            do { try c.call(.hello(client: "navctl"), timeout: timeout) } catch let e as NavClientError where e.code == 0 {
                guard e.kind == "timeout" else { try fail(e) }
                FileHandle.standardError.write(Data("navctl: timeout: no answer from navd within \(timeout ?? 0) s\n".utf8))
                throw ExitCode(1)
            }
            return c
        } catch let e as NavClientError {
            FileHandle.standardError.write(Data("navctl: \(terminalSafe(e.message))\n".utf8))
            throw ExitCode(2)
        }
    }

    func params(_ extra: JSONObject = [:]) -> JSONObject {
        var p = extra
        if let session { p["session"] = .string(session) }
        return p
    }

    /// Every page of a listing method (`session.list`, `client.list`: each answer's `next` passed as
    /// the following call's `after`), its `key` arrays joined in order into the last answer; over
    /// `connection` when given (a command that goes on to act on what it listed), else a new one.
    func allPages(_ method: String, _ extra: JSONObject = [:], key: String, on connection: NavClient? = nil) throws -> (answer: JSONValue, items: [JSONValue]) {
        let c = try connection ?? client()
        var answer: JSONValue = [:]
        var items: [JSONValue] = []
        var after: JSONValue?
        do {
            repeat {
                var p = extra
                if let after { p["after"] = after }
                answer = try c.call(method, params(p), timeout: timeout)
                items += answer[key]?.arrayValue ?? []
                after = answer["next"]
            } while after != nil
        } catch let e as NavClientError {
            try fail(e)
        }
        if case .object(var o) = answer { o[key] = .array(items); answer = .object(o) }
        return (answer, items)
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
            explainPending(p, noWait: noWait, first: pending == nil)
            pending = p
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
                if (try? c.call("cancel", params(["navigation": .string(nav)]), timeout: 2))?["cancelled"] == .bool(true) {
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
        return setupModelOfNode(node, in: t)
    }

    /// The visible top screen's id and its setup model, as ``setupModelOfNode(_:)`` gives it.
    func visibleTopAndSetupModel() throws -> (node: String, schema: JSONValue?, owner: String) {
        let t: JSONValue
        do { t = try client().call("tree", params(), timeout: timeout ?? 10) } catch let e as NavClientError { try fail(e) }
        guard let top = t["visible"]?.arrayValue?.last?.stringValue else { try fail(NavClientError(code: -32009, kind: "unknownNode", message: "the session shows no screen")) }
        let (schema, owner) = setupModelOfNode(top, in: t)
        return (top, schema, owner)
    }

    /// The id of the innermost flow on the visible path (``TreeMirror/visibleFlow``); an error
    /// that says so when the visible path holds none.
    func visibleFlow() throws -> String {
        let t: JSONValue
        do { t = try client().call("tree", params(), timeout: timeout ?? 10) } catch let e as NavClientError { try fail(e) }
        guard let id = TreeMirror(snapshot: t).visibleFlow?["id"]?.stringValue else {
            try fail(NavClientError(code: -32010, kind: "flowNotActive", message: "no flow is on the visible path of session `\(session ?? "main")`; name the flow to complete (navctl tree shows each flow's node id)"))
        }
        return id
    }

    private func setupModelOfNode(_ node: String, in t: JSONValue) -> (JSONValue?, String) {
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
    /// `first`: the first of its notifications (how to end the wait is said once).
    func explainPending(_ p: JSONValue, noWait: Bool = false, first: Bool = true) {
        let nav = p["navigation"]?.stringValue ?? "?"
        var text = "navctl: \(nav) to \(p["to"]?.stringValue ?? "?") waits for precondition `\(p["waitingFor"]?.stringValue ?? "?")`"
        if let r = p["recovering"] {
            text += r["provider"].map { ", recovering: provider `\($0.stringValue ?? "?")` asked" } ?? ", recovering: `\(r["command"]?.stringValue ?? "?")` runs"
        } else if p["afterRecovery"] == true {
            text += ", asked again after its recovery"
        }
        if let flow = p["flow"], let node = flow["node"]?.stringValue {
            let s = session.map { " --session \($0)" } ?? ""
            text += "\nnavctl: navd presented the recovery flow \(flow["coordinator"]?.stringValue ?? "?") as \(node): finish it with `navctl complete \(node)\(s) --result JSON` (or `--cancel`)"
        }
        text += noWait
            ? "\nnavctl: --no-wait: navd goes on with it after navctl exits; `navctl cancel \(nav)\(session.map { " --session \($0)" } ?? "")` cancels it\n"
            : first ? "\nnavctl: Ctrl-C cancels the navigation\n" : "\n"
        FileHandle.standardError.write(Data(terminalSafe(text, keeping: ["\n"]).utf8))
    }
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
    static let groups: Set<String> = ["session", "client"]

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
