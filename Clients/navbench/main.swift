import ArgumentParser
import BuildInfo
import Foundation
import Histogram
import JSON
import NavClient
import UV

/// navbench: N connections, each in its own session, doing navigate/dismiss pairs with P requests in
/// flight; K subscribers watch the first connection's (busy) session. One libuv loop drives everything.
/// Prints one line of figures.
///
/// Requests are encoded once through ``NavCall`` and only the id changes; replies are matched by a
/// scan of their `"id"` (navd writes `jsonrpc`, `id`, then `result` or `error`), so the generator
/// stays cheap next to the daemon it measures.
@main
struct NavBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "navbench",
        abstract: "Load generator for navd: navigate/dismiss pairs, pipelined, with subscribers.",
        discussion: """
        Prints one line: rps p50_us p99_us p999_us max_us notif_rps notif_all_rps errors … \
        (latency from the write of a request to the read of its reply, HdrHistogram, 3 digits). \
        Exit status 1 when any error was seen.
        """,
        version: BuildInfo.versionLine("navbench"))

    @Option(help: "navd's socket (default: $NAVD_SOCKET, else $XDG_RUNTIME_DIR/navd.sock, else /tmp/navd-<uid>.sock).")
    var socket: String?

    @Option(help: "Connections doing navigate/dismiss pairs, each in its own session.")
    var connections = 10

    @Option(help: "Requests in flight per connection (pipelining depth).")
    var depth = 1

    @Option(help: "Measured seconds.")
    var duration = 3.0

    @Option(help: "Seconds of load before measuring.")
    var warmup = 0.5

    @Option(help: "Connections subscribed to the first connection's session.")
    var subscribers = 0

    @Option(help: "Coordinator to push (default: the first one the root screen opens that a dry run accepts).")
    var to: String?

    @Option(name: .customLong("with-json"), help: "Setup model for --to, as JSON.")
    var withJSON: String?

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    mutating func validate() throws {
        guard connections >= 1, depth >= 1, subscribers >= 0, duration > 0, warmup >= 0 else {
            throw ValidationError("--connections and --depth must be at least 1, --subscribers at least 0, --duration above 0")
        }
        // Each connection keeps a slot per request in flight, and subscribers an array of counts:
        // bounded, where --depth or --subscribers 9223372036854775807 asked for exabytes.
        guard connections <= 100_000, depth <= 100_000, subscribers <= 100_000 else {
            throw ValidationError("--connections, --depth and --subscribers are at most 100000")
        }
        // Their milliseconds go to a timer as a UInt64: a day at the most (1e300 or inf trapped).
        guard duration <= 86_400, warmup <= 86_400 else {
            throw ValidationError("--duration and --warmup are at most 86400 seconds (a day), not \(duration) and \(warmup)")
        }
    }

    func run() throws {
        let path = NavClient.defaultSocketPath(explicit: socket)
        let target: (String, JSONValue?)
        do {
            target = try chooseTarget(path)
        } catch let e as NavClientError {
            FileHandle.standardError.write(Data("navbench: \(e.message)\n".utf8))
            throw ExitCode(2)
        }
        let bench = Bench(path: path, connections: connections, depth: depth, subscribers: subscribers,
                          warmup: warmup, duration: duration, to: target.0, with: target.1)
        let r = bench.run()
        print(json ? r.json : r.line)
        if r.errors > 0 {
            if let why = bench.firstError { FileHandle.standardError.write(Data("navbench: first error: \(why)\n".utf8)) }
            throw ExitCode(1)
        }
    }

    /// `--to` / `--with-json`, else a push target of the root screen that a dry run accepts.
    func chooseTarget(_ path: String) throws -> (String, JSONValue?) {
        let setup = try withJSON.map { text -> JSONValue in
            do { return try JSONParser(maxDepth: 64).parse(text) } catch { throw ValidationError("--with-json is not valid JSON: \(error)") }
        }
        let c = try NavClient(socketPath: path)
        if let to { return (to, setup) }
        let graph = try c.describeGraph()
        let session = "navbench-probe-\(getpid())"
        let tree = try c.openSession(session)
        defer { try? c.closeSession(session) }
        guard let top = tree.top?["coordinator"]?.stringValue else { throw NavClientError.connection("no visible screen") }
        let coordinators = graph["coordinators"]?.objectValue ?? [:]
        for candidate in coordinators[top]?["opens"]?.arrayValue?.compactMap(\.stringValue) ?? [] {
            guard let d = coordinators[candidate], d["kind"]?.stringValue == "screen",
                  d["presentations"]?.arrayValue?.contains("push") == true,
                  d["preconditions"]?.arrayValue?.isEmpty ?? true, d["access"]?.arrayValue?.isEmpty ?? true else { continue }
            let with = sampleSetup(d["setup"])
            if (try? c.navigate(to: candidate, with: with, session: session, dryRun: true)) != nil { return (candidate, with) }
        }
        throw NavClientError(code: 0, kind: "usage", message: "no coordinator the root screen \(top) opens can be pushed without preconditions; pass --to TARGET [--with-json JSON]", data: .null)
    }

    /// A setup model filling each required field with a plain value of its type.
    func sampleSetup(_ schema: JSONValue?) -> JSONValue? {
        guard let schema, let required = schema["required"]?.arrayValue?.compactMap(\.stringValue), !required.isEmpty else { return nil }
        var o = JSONObject()
        for name in required {
            let p = schema["properties"]?[name]
            if let first = p?["enum"]?.arrayValue?.first { o[name] = first; continue }
            switch p?["type"]?.stringValue {
            case "integer", "number": o[name] = .int(max(1, p?["minimum"]?.intValue ?? 1))
            case "boolean": o[name] = true
            default: o[name] = .string(String(repeating: "1", count: max(1, p?["minLength"]?.intValue ?? 1)))
            }
        }
        return .object(o)
    }
}

struct Figures {
    let rps, notifRPS, notifAllRPS: Double
    let p50, p99, p999, max: Double
    let ok, errors, connections, depth, subscribers: Int
    let seconds: Double

    var line: String {
        String(format: "rps=%.0f p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f notif_rps=%.0f notif_all_rps=%.0f errors=%d ok=%d conns=%d depth=%d subs=%d secs=%.2f",
               rps, p50, p99, p999, max, notifRPS, notifAllRPS, errors, ok, connections, depth, subscribers, seconds)
    }

    var json: String {
        JSONWriter.string(["rps": .double(rps), "p50_us": .double(p50), "p99_us": .double(p99), "p999_us": .double(p999),
                           "max_us": .double(max), "notif_rps": .double(notifRPS), "notif_all_rps": .double(notifAllRPS),
                           "errors": .int(errors), "ok": .int(ok), "conns": .int(connections), "depth": .int(depth),
                           "subs": .int(subscribers), "secs": .double(seconds)])
    }
}

/// Splits each incoming chunk into lines.
struct LineBuffer {
    private var pending: [UInt8] = []

    mutating func lines(_ data: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var start = 0
        if !pending.isEmpty {
            guard let nl = data.firstIndex(of: 10) else { pending.append(contentsOf: data); return }
            pending.append(contentsOf: data[0..<nl])
            pending.withUnsafeBytes { body($0) }
            pending.removeAll(keepingCapacity: true)
            start = nl + 1
        }
        while start < data.count, let nl = data[start...].firstIndex(of: 10) {
            body(UnsafeRawBufferPointer(rebasing: data[start..<nl]))
            start = nl + 1
        }
        if start < data.count { pending.append(contentsOf: data[start...]) }
    }
}

/// The id of a reply line and whether it is a success, by scanning `{"jsonrpc":"2.0","id":N,"result"…`.
/// Lines without an `"id"` right after `jsonrpc` are notifications or unexpected: nil.
func scanReply(_ line: UnsafeRawBufferPointer) -> (id: Int, ok: Bool)? {
    let prefix = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
    guard line.count > prefix.count + 2, line.starts(with: prefix) else { return nil }
    var i = prefix.count, id = 0, digits = 0
    while i < line.count, line[i] >= 48, line[i] <= 57 {
        id = id * 10 + Int(line[i] - 48)
        i += 1
        digits += 1
    }
    guard digits > 0, i + 3 < line.count, line[i] == 44, line[i + 1] == 34 else { return nil }
    return (id, line[i + 2] == 114) // `r`esult, else `e`rror
}

final class Bench {
    let loop = EventLoop()
    let path: String
    let connections, depth, subscribers: Int
    let warmup, duration: Double
    let to: String
    let with: JSONValue?
    var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    var measuring = false
    var finished = false
    var ok = 0, errors = 0
    var firstError: String?
    var notifications: [Int]
    var workers: [Worker] = []
    var watchers: [PipeStream] = []
    /// Load connections whose session is open, and subscribers whose subscription is answered.
    var ready = 0
    var watchersReady = 0
    /// Starts the warm-up once every connection is ready.
    var onAllReady: (() -> Void)?
    var stoppedAt: UInt64 = 0
    let session0: String

    init(path: String, connections: Int, depth: Int, subscribers: Int, warmup: Double, duration: Double, to: String, with: JSONValue?) {
        self.path = path
        self.connections = connections
        self.depth = depth
        self.subscribers = subscribers
        self.warmup = warmup
        self.duration = duration
        notifications = Array(repeating: 0, count: subscribers)
        session0 = "navbench-\(getpid())-0"
        self.to = to
        self.with = with
    }

    /// A request line split around its id: prefix + id + suffix.
    static func split(_ call: NavCall) -> ([UInt8], [UInt8]) {
        let marker = 987_654_321_012
        let bytes = call.line(id: marker)
        let digits = Array(String(marker).utf8)
        let at = bytes.indices.first { bytes[$0...].starts(with: digits) }!
        return (Array(bytes[..<at]), Array(bytes[(at + digits.count)...]))
    }

    func fail(_ why: String) {
        errors += 1
        if firstError == nil { firstError = why }
    }

    func run() -> Figures {
        for k in 0..<subscribers { startWatcher(k) }
        if subscribers == 0 { startWorkers() }
        let timer = UV.Timer(loop: loop)
        var measuredFrom: UInt64 = 0
        var notificationsAtStart: [Int] = []
        let setupDeadline = UV.Timer(loop: loop)
        setupDeadline.start(milliseconds: 10_000) { [unowned self] in
            if self.ready < self.connections {
                self.fail("connections not ready after 10 s (\(self.ready) of \(self.connections))")
                self.stop()
            }
        }
        onAllReady = { [unowned self] in
            setupDeadline.close()
            timer.start(milliseconds: UInt64(self.warmup * 1000)) {
                self.measuring = true
                self.ok = 0
                measuredFrom = EventLoop.hrtime
                notificationsAtStart = self.notifications
                timer.start(milliseconds: UInt64(self.duration * 1000)) { self.stop() }
            }
        }
        loop.run()
        let span = measuredFrom == 0 ? 0 : Double(stoppedAt - measuredFrom) / 1e9
        let delivered = zip(notifications, notificationsAtStart).map { $0 - $1 }
        let us = { (p: Double) in Double(self.histogram.valueAtPercentile(p)) / 1000 }
        timer.close()
        if !setupDeadline.isClosing { setupDeadline.close() }
        for w in workers { w.stream?.close() }
        for s in watchers { s.close() }
        loop.run()
        loop.close()
        closeSessions()
        return Figures(rps: span > 0 ? Double(ok) / span : 0,
                       notifRPS: span > 0 ? Double(delivered.reduce(0, +)) / span : 0,
                       notifAllRPS: span > 0 ? Double(delivered.min() ?? 0) / span : 0,
                       p50: us(50), p99: us(99), p999: us(99.9), max: Double(histogram.max) / 1000,
                       ok: ok, errors: errors, connections: connections, depth: depth, subscribers: subscribers, seconds: span)
    }

    func stop() {
        guard !finished else { return }
        finished = true
        measuring = false
        stoppedAt = EventLoop.hrtime
        loop.stop()
    }

    /// Closes the benchmark's sessions so a durable navd does not keep them.
    func closeSessions() {
        guard let c = try? NavClient(socketPath: path) else { return }
        for w in workers { try? c.closeSession(w.session) }
    }

    func workerReady() {
        ready += 1
        if ready == connections { onAllReady?() }
    }

    func startWatcher(_ k: Int) {
        var lines = LineBuffer()
        let s = PipeStream.connect(loop: loop, path: path) { [unowned self] s, error in
            if let error { self.fail("subscriber cannot connect: \(error)"); self.stop(); return }
            // The watched session must exist before subscribing: session.open is idempotent.
            let open = NavCall.openSession(self.session0).line(id: 1), sub = NavCall.subscribe(session: self.session0).line(id: 2)
            s.write(open + sub)
            s.startReading { [unowned self] event in
                guard case .data(let d) = event else {
                    if !self.finished { self.fail("subscriber \(k) lost its connection") }
                    return
                }
                lines.lines(d.raw) { line in
                    if let r = scanReply(line) {
                        if !r.ok { self.fail("subscribe failed: \(String(decoding: line, as: UTF8.self))") }
                        if r.id == 2 {
                            self.watchersReady += 1
                            if self.watchersReady == self.subscribers { self.startWorkers() }
                        }
                    } else {
                        self.notifications[k] += 1
                    }
                }
            }
        }
        watchers.append(s)
    }

    func startWorkers() {
        for i in 0..<connections {
            let w = Worker(bench: self, index: i, session: i == 0 ? session0 : "navbench-\(getpid())-\(i)")
            workers.append(w)
            w.connect()
        }
    }

}

/// One load connection: its own session, a sliding window of `depth` requests alternating
/// navigate and dismiss, refilled in one write per read.
final class Worker {
    unowned let bench: Bench
    let index: Int
    let session: String
    let navigate: ([UInt8], [UInt8])
    let dismiss: ([UInt8], [UInt8])
    var stream: PipeStream?
    var lines = LineBuffer()
    var nextId = 10
    /// Send times by id, ring of `depth` slots (ids in flight are consecutive).
    var sentAt: [UInt64]
    var inFlight = 0
    var sequence = 0
    var out: [UInt8] = []
    var ready = false

    init(bench: Bench, index: Int, session: String) {
        self.bench = bench
        self.index = index
        self.session = session
        navigate = Bench.split(.navigate(to: bench.to, with: bench.with, session: session))
        dismiss = Bench.split(.dismiss(session: session))
        sentAt = Array(repeating: 0, count: bench.depth)
    }

    func connect() {
        stream = PipeStream.connect(loop: bench.loop, path: bench.path) { [unowned self] s, error in
            if let error { self.bench.fail("connection \(self.index) cannot connect: \(error)"); self.bench.stop(); return }
            s.write(NavCall.openSession(self.session).line(id: 1))
            s.startReading { [unowned self] event in self.read(event) }
        }
    }

    func read(_ event: PipeStream.ReadEvent) {
        guard case .data(let d) = event else {
            if !bench.finished { bench.fail("connection \(index) closed by navd"); bench.stop() }
            return
        }
        let now = EventLoop.hrtime
        lines.lines(d.raw) { line in
            guard let r = scanReply(line) else {
                bench.fail("unexpected line: \(String(decoding: line, as: UTF8.self).prefix(200))")
                return
            }
            if r.id == 1 {
                if !r.ok { bench.fail("session.open failed: \(String(decoding: line, as: UTF8.self))") }
                ready = true
                bench.workerReady()
                return
            }
            inFlight -= 1
            let t = sentAt[r.id % sentAt.count]
            if bench.measuring {
                if r.ok {
                    bench.ok += 1
                    bench.histogram.record(now &- t)
                } else {
                    bench.fail(String(decoding: line, as: UTF8.self))
                }
            } else if !r.ok {
                bench.fail(String(decoding: line, as: UTF8.self))
            }
        }
        guard ready, !bench.finished else { return }
        fill()
    }

    func fill() {
        out.removeAll(keepingCapacity: true)
        let now = EventLoop.hrtime
        while inFlight < bench.depth {
            let (pre, post) = sequence % 2 == 0 ? navigate : dismiss
            let id = nextId
            nextId += 1
            sequence += 1
            out.append(contentsOf: pre)
            out.append(contentsOf: String(id).utf8)
            out.append(contentsOf: post)
            sentAt[id % sentAt.count] = now
            inFlight += 1
        }
        if !out.isEmpty { stream?.write(out) }
    }
}
