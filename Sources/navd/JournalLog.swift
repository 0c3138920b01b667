import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Log lines for systemd's journal, used when navd's standard error is the journal (a service's
/// stderr, which systemd names in `JOURNAL_STREAM`). Each line starts with its syslog priority
/// (`<3>` for an error, `<6>` for info: sd-daemon(3)), so the journal records it
/// (`journalctl -p warning --user -u navd` shows warnings and worse), and carries no timestamp,
/// since the journal stamps every line. Otherwise the lines are those of swift-log's
/// `StreamLogHandler`: the level, the label, the metadata sorted by key, the module, the message.
struct JournalLogHandler: LogHandler {
    /// Whether standard error is the stream `JOURNAL_STREAM` names (`DEVICE:INODE`, decimal): the
    /// variable alone may be inherited by a process whose stderr was sent elsewhere.
    static func standardErrorIsJournal(environment: [String: String]) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }

    /// The syslog priority of a level (trace is debug to syslog).
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        if let m = event.metadata { all.merge(m) { $1 } }
        if let error = event.error {
            all["error.message"] = "\(error)"
            all["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        let pretty = all.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        // Each line of a message is an entry of its own, with the priority (``StandardError``).
        StandardError.write("\(event.level) \(label):\(pretty) [\(event.source)] \(event.message)", priority: Self.priority(event.level))
    }
}

/// What navd writes to standard error outside its log (a graph's diagnostics, why it cannot
/// start): in the journal, each line with its priority too.
enum StandardError {
    static let isJournal = JournalLogHandler.standardErrorIsJournal(environment: ProcessInfo.processInfo.environment)

    /// Writes `text` and a newline; in the journal each of its lines starts with `<priority>`
    /// (3: error, 4: warning).
    static func write(_ text: String, priority: Int = 3) {
        var out = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if isJournal { out += "<\(priority)>" }
            out += line + "\n"
        }
        FileHandle.standardError.write(Data(out.utf8))
    }
}
