import ArgumentParser
import Foundation
import JSON
import NavClient

/// `navctl slowlog`: the reads and other work that held navd's loop longest (slowlog.get), as
/// `redis-cli slowlog get`, every page of them.
struct Slowlog: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the reads and other work that held navd's loop longest, newest first (slowlog.get); --reset forgets them (slowlog.reset).",
        discussion: """
            A read is kept when handling it took --slowlog-threshold (navd's option, 10 ms by default) \
            or more, while no other client was served; so is work outside reads that took as long (a timer's, a child's exit, the end of an iteration that stores commits and \
            writes output: KIND and WHAT say which). navd keeps the newest --slowlog-max-len (128). \
            Needs the role admin (navd's own uid holds it).
            """)
    @OptionGroup var common: Common
    @Option(help: "Show at most this many (the newest).") var limit: Int?
    @Flag(help: "Forget the entries kept (slowlog.reset) rather than show them.") var reset = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit is \(limit); give 1 or more") }
        if reset && limit != nil { throw ValidationError("--reset forgets every read kept; it takes no --limit") }
    }

    func run() throws {
        if reset {
            try common.run("slowlog.reset") { r in "forgot \(r["forgotten"]?.intValue ?? 0) entries" }
            return
        }
        print(Slowlog.table(try pages()))
    }

    /// The entries of as many pages as `--limit` asks for (all kept without it), in one answer.
    private func pages() throws -> JSONValue {
        let c = try common.client()
        var answer: JSONValue = [:], entries: [JSONValue] = []
        var after: JSONValue?
        do {
            repeat {
                var p: JSONObject = [:]
                if let limit { p["limit"] = .int(limit - entries.count) }
                if let after { p["after"] = after }
                answer = try c.call("slowlog.get", common.params(p), timeout: common.timeout)
                entries += answer["entries"]?.arrayValue ?? []
                after = answer["next"]
            } while after != nil && entries.count < (limit ?? .max)
        } catch let e as NavClientError {
            try common.fail(e)
        }
        if case .object(var o) = answer { o["entries"] = .array(entries); answer = .object(o) }
        return answer
    }

    /// One line per slow read or callback, newest first, under a line that says what is kept. A
    /// read's last column names the methods it answered; other work's, what it was.
    static func table(_ r: JSONValue) -> String {
        let entries = r["entries"]?.arrayValue ?? []
        let threshold = r["thresholdMs"]?.doubleValue ?? 0
        let summary = "slow reads and callbacks (\(threshold.formatted()) ms or more) since navd started: \(r["total"]?.intValue ?? 0); kept: the newest \(r["kept"]?.intValue ?? 0), at most \(r["maxLen"]?.intValue ?? 0)"
        guard !entries.isEmpty else { return summary }
        let now = Date().timeIntervalSince1970
        var rows = [["ID", "AGO", "MS", "KIND", "CONN", "CLIENT", "UID", "ANSWERS", "REPLIES", "WHAT"]]
        for e in entries {
            let isRead = e["kind"]?.stringValue == "read"
            let methods = (e["methods"]?.objectValue.map { Array($0) } ?? []).map { "\($0.key):\($0.value.intValue ?? 0)" }
            rows.append([
                "\(e["id"]?.intValue ?? 0)",
                duration(secondsSince(e["at"]?.doubleValue, now: now)),
                String(format: "%.3f", e["ms"]?.doubleValue ?? 0),
                terminalSafe(e["kind"]?.stringValue ?? "-"),
                e["connection"]?.intValue.map(String.init) ?? "-",
                terminalSafe(e["client"]?.stringValue ?? "-"),
                e["uid"]?.intValue.map(String.init) ?? "-",
                isRead ? "\(e["answers"]?.intValue ?? 0)" : "-",
                isRead ? "\(e["responses"]?.intValue ?? 0)" : "-",
                terminalSafe(isRead ? methods.joined(separator: ",") : e["what"]?.stringValue ?? "-"),
            ])
        }
        return summary + "\n" + columns(rows, left: [3, 5, 9])
    }
}

/// Whole seconds from `at` to `now`; 0 for a time to come or one that is not a number (an answer
/// from something that is not navd must not stop navctl: `Int(_:)` traps past its range).
func secondsSince(_ at: Double?, now: Double) -> Int {
    guard let at else { return 0 }
    let ago = now - at
    return ago > 0 && ago < 1e15 ? Int(ago) : ago >= 1e15 ? Int(1e15) : 0
}
