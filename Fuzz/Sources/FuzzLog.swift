import CChecksum
import Glibc
import JSON
import NavGraph
import NavServer
import NavigationCore

/// The state file's log, replayed over an empty snapshot. The input is, by its first byte:
///
/// - `J`: its lines, each framed as a record with the right header (the replay: commits, states,
///   facts, keys, closes, reloads);
/// - `M`: lines framed so up to a blank line, then mutations of the framed file, four bytes each
///   (a position, an operation — flip bits, set a byte, cut the file there, zero 16 bytes — and a
///   value): lengths, sequences, checksums and payloads damaged. The mutated log is either refused
///   or, when no mutation reaches the last record, restored exactly as the log before them (never a
///   silent loss);
/// - anything else: the bytes after a log file's header (the framing: headers, torn and damaged records).
///
/// Small limits. navd either refuses the log with a message or restores sessions within every
/// limit, whose trees navd writes and reads back as they are.
func fuzzLog(_ data: UnsafeRawBufferPointer) {
    let bytes = Array(data)
    switch bytes.first {
    case UInt8(ascii: "J"):
        _ = restore(frame(Array(bytes.dropFirst())))
    case UInt8(ascii: "M"):
        let body = Array(bytes.dropFirst())
        var split = body.count
        for i in 0..<max(0, body.count - 1) where body[i] == 10 && body[i + 1] == 10 { split = i; break }
        let log = frame(Array(body[..<split]))
        let lastRecord = LogFrame.lastRecordOffset(log)
        var mutated = log, reachesLast = false
        var m = min(body.count, split + 2)
        while m + 4 <= body.count && !mutated.isEmpty {
            let at = (Int(body[m]) << 8 | Int(body[m + 1])) % mutated.count, value = body[m + 3]
            switch body[m + 2] % 4 {
            case 0: mutated[at] ^= value == 0 ? 1 : value
            case 1: mutated[at] = value
            case 2: mutated.removeSubrange(at...)
            default: for i in at..<min(mutated.count, at + 16) { mutated[i] = 0 }
            }
            reachesLast = reachesLast || at + (body[m + 2] % 4 == 3 ? 16 : 1) > lastRecord || body[m + 2] % 4 == 2
            m += 4
        }
        guard let after = restore(mutated), !reachesLast, mutated != log else { return }
        let before = restore(log)
        require(before == after, "a log damaged before its last record was restored with a different state, without a word: \(String(describing: before)) then \(after)")
    default:
        _ = restore(LogFrame.fileHeader(size: 0) + bytes)
    }
}

/// A log file of `lines`, each framed as a record (the file grows with its records: size 0).
private func frame(_ lines: [UInt8]) -> [UInt8] {
    var log = LogFrame.fileHeader(size: 0)
    for (i, line) in lines.split(separator: UInt8(ascii: "\n")).enumerated() { log += LogFrame.record(Array(line), seq: UInt32(i + 1)) }
    return log
}

/// Restores `log` over an empty snapshot: each session's name, version, tree and facts as navd
/// writes them, or nil when it is refused.
private func restore(_ log: [UInt8]) -> [String]? {
    let state = logFuzzDirectory + "/state.sqlite"
    for suffix in ["", "-wal", "-shm", ".log", ".log.old"] { unlink(state + suffix) }
    let f = open(state + ".log", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard f >= 0 else { return nil }
    _ = log.withUnsafeBytes { write(f, $0.baseAddress, $0.count) }
    close(f)
    var config = ServerConfiguration(socketPath: "")
    config.session.maxDepth = 12
    config.session.maxNodes = 60
    config.session.maxParamsBytes = 2048
    config.maxSessions = 8
    let saved = SavedSessions(config)
    guard let store = try? LogStore(path: state, durability: .process, saved: saved, repair: false, compactAt: 1 << 16) else { return nil }
    defer { store.close() }
    guard let sessions = try? store.load(graph: exampleGraph) else { return nil }
    require(sessions.count <= 8, "more sessions restored than --max-sessions")
    let parser = saved.parser()
    var out: [String] = []
    for s in sessions {
        require(s.root.height <= 12 && s.nodeCount <= 60 && s.paramsBytes <= 2048, "a replayed session passes a limit")
        var w = JSONWriter()
        s.root.write(into: &w, exampleGraph)
        let again = (try? parser.parse(w.bytes)).flatMap {
            try? Session(restoring: s.name, graph: exampleGraph, root: $0, version: s.version, nextId: s.idCounter, facts: .object(s.sortedFacts), limits: config.session)
        }
        require(again.map { JSONWriter.encode($0.root.json(exampleGraph)) == w.bytes } ?? false, "what navd wrote of a replayed tree does not restore to it")
        out.append("\(s.name) v\(s.version) \(String(decoding: w.bytes, as: UTF8.self)) \(JSONWriter.string(.object(s.sortedFacts)))")
    }
    return out
}

/// navd's log framing, written here from its description (LogRecord.swift), with a fixed salt.
enum LogFrame {
    static let salt: UInt64 = 0x6e61_7664_6c6f_6732

    static func fileHeader(size: Int) -> [UInt8] {
        var b = Array("navdlog2".utf8)
        put(salt, 8, &b)
        put(UInt64(size), 8, &b)
        put(UInt64(crc(b)), 8, &b)
        return b
    }

    static func record(_ payload: [UInt8], seq: UInt32) -> [UInt8] {
        let c = crc(payload)
        var h: [UInt8] = []
        put(salt, 8, &h)
        put(UInt64(payload.count), 4, &h)
        put(UInt64(seq), 4, &h)
        put(UInt64(c), 4, &h)
        var b: [UInt8] = []
        put(UInt64(payload.count), 4, &b)
        put(UInt64(seq), 4, &b)
        put(UInt64(c), 4, &b)
        put(UInt64(crc(h)), 4, &b)
        return b + payload
    }

    /// Where the last record of a framed log starts (the header's end when it has none).
    static func lastRecordOffset(_ log: [UInt8]) -> Int {
        var off = 32, last = 32
        while off + 16 <= log.count {
            last = off
            off += 16 + (Int(log[off]) | Int(log[off + 1]) << 8 | Int(log[off + 2]) << 16 | Int(log[off + 3]) << 24)
        }
        return last
    }

    static func crc(_ b: [UInt8]) -> UInt32 { b.withUnsafeBytes { navd_crc32c($0.baseAddress, $0.count) } }

    static func put(_ v: UInt64, _ n: Int, _ b: inout [UInt8]) {
        for i in 0..<n { b.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }
}

/// Where the log target writes its files (made once).
let logFuzzDirectory: String = {
    let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    var template = Array((base + "/navd-fuzz-log-XXXXXX").utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}()
