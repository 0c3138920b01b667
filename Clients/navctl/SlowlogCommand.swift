import ArgumentParser
import Foundation
import JSON
import NavClient

/// `navctl slowlog`: the reads that held navd's loop longest (slowlog.get), as `redis-cli slowlog get`.
struct Slowlog: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the reads that held navd's loop longest, newest first (slowlog.get); --reset forgets them (slowlog.reset).",
        discussion: """
            A read is kept when handling it took --slowlog-threshold (navd's option, 10 ms by default) \
            or more, while no other client was served; navd keeps the newest --slowlog-max-len (128). \
            Needs the role admin (navd's own uid holds it).
            """)
    @OptionGroup var common: Common
    @Option(help: "Show at most this many (the newest).") var limit: Int?
    @Flag(help: "Forget the reads kept (slowlog.reset) rather than show them.") var reset = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit is \(limit); give 1 or more") }
        if reset && limit != nil { throw ValidationError("--reset forgets every read kept; it takes no --limit") }
    }

    func run() throws {
        if reset {
            try common.run("slowlog.reset") { r in "forgot \(r["forgotten"]?.intValue ?? 0) slow reads" }
            return
        }
        try common.run("slowlog.get", limit.map { ["limit": .int($0)] } ?? [:]) { r in Slowlog.table(r) }
    }

    /// One line per slow read, newest first, under a line that says what is kept.
    static func table(_ r: JSONValue) -> String {
        let entries = r["entries"]?.arrayValue ?? []
        let threshold = r["thresholdMs"]?.doubleValue ?? 0
        let summary = "slow reads (\(threshold.formatted()) ms or more) since navd started: \(r["total"]?.intValue ?? 0); kept: the newest \(r["kept"]?.intValue ?? 0), at most \(r["maxLen"]?.intValue ?? 0)"
        guard !entries.isEmpty else { return summary }
        let now = Date().timeIntervalSince1970
        var rows = [["ID", "AGO", "MS", "CONN", "CLIENT", "UID", "ANSWERS", "REPLIES", "METHODS"]]
        for e in entries {
            let methods = (e["methods"]?.objectValue.map { Array($0) } ?? []).map { "\($0.key):\($0.value.intValue ?? 0)" }
            rows.append([
                "\(e["id"]?.intValue ?? 0)",
                duration(max(0, Int(now - (e["at"]?.doubleValue ?? now)))),
                String(format: "%.3f", e["ms"]?.doubleValue ?? 0),
                "\(e["connection"]?.intValue ?? 0)",
                terminalSafe(e["client"]?.stringValue ?? "-"),
                e["uid"]?.intValue.map(String.init) ?? "-",
                "\(e["answers"]?.intValue ?? 0)",
                "\(e["responses"]?.intValue ?? 0)",
                terminalSafe(methods.joined(separator: ",")),
            ])
        }
        return summary + "\n" + columns(rows, left: [4])
    }
}
