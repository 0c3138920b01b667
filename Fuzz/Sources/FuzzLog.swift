import CChecksum
import Glibc
import JSON
import NavGraph
import NavServer
import NavigationCore

/// The state file's log, replayed over an empty snapshot: either the input as the log's bytes
/// after its header (the framing: lengths, checksums, torn and corrupt records), or, when it starts
/// with `J`, the input's lines each framed as a record with the right checksum (the replay: commits,
/// states, facts, keys, closes). Small limits. navd either refuses the log with a message or
/// restores sessions within every limit, whose trees navd writes and reads back as they are.
func fuzzLog(_ data: UnsafeRawBufferPointer) {
    let bytes = Array(data)
    var log = Array("navdlog1".utf8)
    if bytes.first == UInt8(ascii: "J") {
        for line in bytes.dropFirst().split(separator: UInt8(ascii: "\n")) {
            let payload = Array(line)
            let crc = payload.withUnsafeBytes { navd_crc32c($0.baseAddress, $0.count) }
            for v in [UInt32(payload.count), crc] { for i in 0..<4 { log.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) } }
            log += payload
        }
    } else {
        log += bytes
    }
    let state = logFuzzDirectory + "/state.sqlite"
    for suffix in ["", "-wal", "-shm", ".log", ".log.old"] { unlink(state + suffix) }
    let f = open(state + ".log", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard f >= 0 else { return }
    _ = log.withUnsafeBytes { write(f, $0.baseAddress, $0.count) }
    close(f)
    var config = ServerConfiguration(socketPath: "")
    config.session.maxDepth = 12
    config.session.maxNodes = 60
    config.session.maxParamsBytes = 2048
    config.maxSessions = 8
    let saved = SavedSessions(config)
    guard let store = try? LogStore(path: state, durability: .process, saved: saved, repair: false, compactAt: 1 << 16) else { return }
    defer { store.close() }
    guard let sessions = try? store.load(graph: exampleGraph) else { return }
    require(sessions.count <= 8, "more sessions restored than --max-sessions")
    let parser = saved.parser()
    for s in sessions {
        require(s.root.height <= 12 && s.nodeCount <= 60 && s.paramsBytes <= 2048, "a replayed session passes a limit")
        var w = JSONWriter()
        s.root.write(into: &w, exampleGraph)
        let again = (try? parser.parse(w.bytes)).flatMap {
            try? Session(restoring: s.name, graph: exampleGraph, root: $0, version: s.version, nextId: s.idCounter, facts: .object(s.sortedFacts), limits: config.session)
        }
        require(again.map { JSONWriter.encode($0.root.json(exampleGraph)) == w.bytes } ?? false, "what navd wrote of a replayed tree does not restore to it")
    }
}

/// Where the log target writes its files (made once).
let logFuzzDirectory: String = {
    var template = Array("/tmp/navd-fuzz-log-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}()
