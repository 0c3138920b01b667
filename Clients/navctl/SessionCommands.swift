import ArgumentParser
import Foundation
import JSON
import NavClient

// The commands that read or manage sessions: tree, watch, set, session, sessions, stats.

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
        do {
            while let n = try c.nextNotification() {
                let method = n["method"]?.stringValue ?? "?"
                let line = common.json ? terminalSafeJSON(JSONWriter.string(n)) : terminalSafe("\(method) \(JSONWriter.string(n["params"] ?? .null))")
                FileHandle.standardOutput.write(Data((line + "\n").utf8))  // unbuffered: one line per notification
                seen += 1
                if let count, seen >= count { return }
            }
        } catch let e as NavClientError {
            // navd said why it closes the connection (client.kill, a limit): the connection is lost.
            FileHandle.standardError.write(Data("navctl: \(terminalSafe(e.kind)) (\(e.code)): \(terminalSafe(e.message))\n".utf8))
            throw ExitCode(2)
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

struct SessionList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List sessions.")
    @OptionGroup var common: Common
    func run() throws { try Sessions.list(common) }
}

struct Sessions: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List sessions (as session list).")
    /// Every page of `session.list` (navd answers at most 10,000 names at a time), in order.
    static func list(_ common: Common) throws {
        let (answer, names) = try common.allPages("session.list", key: "sessions")
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

struct Reload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reload the graph (graph.reload, as i3-msg reload): its diagnostics one per line; exit 1 when navd keeps the graph in force.",
        discussion: "Needs the role admin (navd's own uid holds it). A graph that leaves out a coordinator live nodes show is refused unless --force, which removes those nodes.")
    @OptionGroup var common: Common
    @Flag(help: "Remove live nodes whose coordinator the new graph lacks (or declares as another kind), rather than refuse the reload.")
    var force = false
    @Option(help: "Load the graph from this directory (when the policy allows it, allowReloadPath), not from where it came.")
    var path: String?

    func run() throws {
        var extra: JSONObject = [:]
        if force { extra["force"] = true }
        if let path { extra["path"] = .string(path) }
        try common.run("graph.reload", extra) { r in
            let warnings = (r["warnings"]?.arrayValue ?? []).compactMap(\.stringValue)
            guard r["ok"] == true else {
                let errors = (r["errors"]?.arrayValue ?? []).compactMap(\.stringValue)
                return (errors + (r["hint"]?.stringValue.map { ["(\($0))"] } ?? [])).joined(separator: "\n")
            }
            let removed = r["removedNodes"]?.intValue ?? 0
            let head = "graph reloaded: graph version \(r["version"]?.intValue ?? 0)" + (removed > 0 ? ", \(removed) node\(removed == 1 ? "" : "s") removed" : "")
            return ([head] + warnings).joined(separator: "\n")
        }
    }
}

struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a copy of navd's state files beside them (state.backup, as redis-cli bgsave) and print where; navd --state PATH restores it.",
        discussion: "Needs the role admin (navd's own uid holds it). navd goes on serving while it copies; the command returns once the copy is on disk. Move the files elsewhere for the backup to outlive the disk.")
    @OptionGroup var common: Common

    func run() throws {
        try common.run("state.backup", [:]) { r in
            let files = (r["files"]?.arrayValue ?? []).compactMap(\.stringValue)
            let head = "backup written: \(r["state"]?.stringValue ?? "") (\(r["bytes"]?.intValue ?? 0) bytes copied in \(r["ms"]?.intValue ?? 0) ms)"
            return ([head] + files.dropFirst().map { "  with \($0)" }).joined(separator: "\n")
        }
    }
}
