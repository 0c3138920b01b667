import CPostgres
import Logging
import NavServer
import UV

#if canImport(Glibc)
import Glibc
#endif

/// The rows of a query's result, as text (libpq's text format; NULL is nil).
struct PGRows {
    var rows: [[String?]] = []

    subscript(_ row: Int, _ column: Int) -> String? { rows[row][column] }
}

/// Why a query did not complete: the server refused it (`sqlState` set, e.g. a fencing check), or
/// the connection is down.
struct PGFailure: Error, CustomStringConvertible {
    let message: String
    /// The five-character SQLSTATE PostgreSQL gave (nil: the connection failed).
    let sqlState: String?
    var description: String { message }
    var connectionLost: Bool { sqlState == nil }
}

/// One libpq connection driven by navd's libuv loop: the socket is watched with a ``Poll`` handle,
/// queries are sent with `PQsendQueryParams` and read with `PQconsumeInput`/`PQgetResult` as the
/// socket becomes readable, so the loop never waits for PostgreSQL. Queries run one at a time in
/// the order they were asked. `LISTEN` notifications arrive through ``onNotification``. When the
/// connection fails, every waiting query fails, ``onDown`` runs and the connection is opened again
/// (`PQconnectStart`/`PQconnectPoll`, also on the loop) with a growing delay; ``onUp`` runs when it
/// is back.
final class PGConnection {
    private let loop: EventLoop
    let conninfo: String
    private let logger: Logger
    private var conn: OpaquePointer?
    private var poll: Poll?
    private var connecting = false
    private var retryTimer: Timer?
    private var retryDelayMs: UInt64 = 50
    /// From `head`: the query in flight (once `sent`), then those waiting to be sent. Those before
    /// `head` are answered, dropped in bulk so that answering one does not move the rest.
    private var queue: [(sql: String, params: [String?], done: (Result<PGRows, PGFailure>) -> Void)] = []
    private var head = 0
    private var sent = false
    private var current = PGRows()
    private var currentError: PGFailure?
    private(set) var isUp = false
    private var closed = false
    /// The most queries that may wait; past it ``query(_:_:_:)`` fails at once (a bound on memory
    /// while PostgreSQL is slow).
    static let maxQueued = 10_000

    /// How long a query may wait for PostgreSQL's answer before the connection is given up (and
    /// opened again): a server that stops answering must not hold navd's commits forever.
    var queryTimeoutMs: UInt64 = 5_000
    private var watchdog: Timer?

    var onNotification: ((String, String) -> Void)?
    var onDown: ((String) -> Void)?
    var onUp: (() -> Void)?

    init(loop: EventLoop, conninfo: String, logger: Logger) {
        self.loop = loop
        self.conninfo = conninfo
        self.logger = logger
    }

    // MARK: Before serving (blocking)

    /// Opens the connection, waiting for it: used once at startup, before navd serves anyone.
    func connectNow() throws(StateError) {
        let c = PQconnectdb(conninfo)
        guard let c, PQstatus(c) == CONNECTION_OK else {
            let why = c.map { Self.errorText($0) } ?? "out of memory"
            PQfinish(c)
            throw StateError(description: "cannot connect to PostgreSQL (\(Self.redacted(conninfo))): \(why); start PostgreSQL or correct --store (a libpq connection string: postgres://USER@HOST/DATABASE, or host=… dbname=… user=…)")
        }
        conn = c
    }

    /// Runs `sql` and waits for its rows: only before serving (schema, registration, restore).
    func runNow(_ sql: String, _ params: [String?] = []) throws(StateError) -> PGRows {
        guard let conn else { throw StateError(description: "PostgreSQL: not connected") }
        let res = withParams(params) { n, values in PQexecParams(conn, sql, n, nil, values, nil, nil, 0) }
        defer { PQclear(res) }
        switch PQresultStatus(res) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK: return Self.rows(of: res)
        default:
            throw StateError(description: "PostgreSQL: \(Self.resultError(res)) (in \(sql.prefix(60))…)")
        }
    }

    /// From now on the connection is driven by the loop.
    func startAsync() throws(StateError) {
        guard let conn else { throw StateError(description: "PostgreSQL: not connected") }
        PQsetnonblocking(conn, 1)
        do {
            try watch()
        } catch {
            throw StateError(description: "cannot watch PostgreSQL's socket: \(error)")
        }
        isUp = true
    }

    // MARK: On the loop

    /// Runs `sql` after the queries asked before it; `done` runs once, on the loop.
    func query(_ sql: String, _ params: [String?] = [], _ done: @escaping (Result<PGRows, PGFailure>) -> Void) {
        guard isUp, queuedQueries < Self.maxQueued else {
            done(.failure(PGFailure(message: isUp ? "more than \(Self.maxQueued) queries wait for PostgreSQL" : "PostgreSQL is not connected", sqlState: nil)))
            return
        }
        queue.append((sql, params, done))
        if !sent { sendNext() }
    }

    var queuedQueries: Int { queue.count - head }

    private func sendNext() {
        guard let conn, isUp, !sent, head < queue.count else { return }
        let q = queue[head]
        let ok = withParams(q.params) { n, values in PQsendQueryParams(conn, q.sql, n, nil, values, nil, nil, 0) }
        guard ok == 1 else {
            failed(Self.errorText(conn))
            return
        }
        sent = true
        current = PGRows()
        currentError = nil
        armWatchdog()
        flushOutput()
    }

    /// Gives the connection up if the query sent (or the connection being opened) is not done
    /// within ``queryTimeoutMs``.
    private func armWatchdog() {
        let w = watchdog ?? Timer(loop: loop).labelled("PostgreSQL query timed out")
        watchdog = w
        w.start(milliseconds: queryTimeoutMs) { [unowned self] in
            if sent || connecting { failed("PostgreSQL did not answer within \(queryTimeoutMs) ms") }
        }
    }

    /// Hands libpq's buffered output to the socket; watches for writability while some is left.
    private func flushOutput() {
        guard let conn else { return }
        switch PQflush(conn) {
        case 0: startPoll([.readable])
        case 1: startPoll([.readable, .writable])
        default: failed(Self.errorText(conn))
        }
    }

    private func watch() throws(UVError) {
        guard let conn else { return }
        let fd = PQsocket(conn)
        if let p = poll, p.fd == fd { return }
        poll?.close()
        poll = try Poll(loop: loop, fd: fd).labelled("PostgreSQL answered")
    }

    private func startPoll(_ events: Poll.Events) {
        poll?.start(events) { [unowned self] ready, status in
            if status < 0 {
                failed("polling PostgreSQL's socket failed: \(UVError(status))")
                return
            }
            if connecting {
                continueConnecting()
                return
            }
            if ready.contains(.writable) { flushOutput() }
            if ready.contains(.readable) { readInput() }
        }
    }

    private func readInput() {
        guard let conn else { return }
        guard PQconsumeInput(conn) == 1 else {
            failed(Self.errorText(conn))
            return
        }
        while let n = PQnotifies(conn) {
            let channel = String(cString: n.pointee.relname)
            let payload = String(cString: n.pointee.extra)
            PQfreemem(n)
            onNotification?(channel, payload)
            if self.conn == nil { return }
        }
        while sent, PQisBusy(conn) == 0 {
            guard let res = PQgetResult(conn) else {
                // The query's last result: it is complete.
                sent = false
                watchdog?.stop()
                let q = queue[head]
                head += 1
                if head == queue.count {
                    queue.removeAll(keepingCapacity: true)
                    head = 0
                } else if head >= 64 && head * 2 >= queue.count {
                    queue.removeFirst(head)
                    head = 0
                }
                let outcome: Result<PGRows, PGFailure> = currentError.map { .failure($0) } ?? .success(current)
                current = PGRows()
                q.done(outcome)
                if self.conn == nil { return }
                sendNext()
                return
            }
            switch PQresultStatus(res) {
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK: current = Self.rows(of: res)
            default:
                let state = PQresultErrorField(res, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? "XX000"
                currentError = PGFailure(message: Self.resultError(res), sqlState: state)
            }
            PQclear(res)
        }
        if PQstatus(conn) == CONNECTION_BAD { failed(Self.errorText(conn)) }
    }

    /// The connection failed: every waiting query fails, and it is opened again later.
    private func failed(_ why: String) {
        let wasUp = isUp
        isUp = false
        connecting = false
        sent = false
        watchdog?.stop()
        poll?.close()
        poll = nil
        PQfinish(conn)
        conn = nil
        let waiting = queue[head...]
        queue = []
        head = 0
        let failure = PGFailure(message: "the connection to PostgreSQL failed: \(why)", sqlState: nil)
        for q in waiting { q.done(.failure(failure)) }
        if wasUp { onDown?(why) }
        scheduleReconnect()
    }

    private func scheduleReconnect() {
        guard !closed else { return }
        let t = retryTimer ?? Timer(loop: loop).labelled("PostgreSQL reconnected")
        retryTimer = t
        t.start(milliseconds: retryDelayMs) { [unowned self] in self.reconnect() }
        retryDelayMs = min(retryDelayMs * 2, 1_000)
    }

    private func reconnect() {
        guard !closed, conn == nil else { return }
        guard let c = PQconnectStart(conninfo), PQstatus(c) != CONNECTION_BAD else {
            scheduleReconnect()
            return
        }
        conn = c
        PQsetnonblocking(c, 1)
        connecting = true
        armWatchdog()
        continueConnecting()
    }

    private func continueConnecting() {
        guard let conn else { return }
        do { try watch() } catch {
            connecting = false
            poll = nil
            PQfinish(conn)
            self.conn = nil
            scheduleReconnect()
            return
        }
        switch PQconnectPoll(conn) {
        case PGRES_POLLING_READING: startPoll([.readable])
        case PGRES_POLLING_WRITING: startPoll([.writable])
        case PGRES_POLLING_OK:
            connecting = false
            watchdog?.stop()
            isUp = true
            retryDelayMs = 50
            startPoll([.readable])
            logger.notice("connected to PostgreSQL again")
            onUp?()
        default:
            connecting = false
            poll?.close()
            poll = nil
            PQfinish(conn)
            self.conn = nil
            scheduleReconnect()
        }
    }

    func close() {
        closed = true
        retryTimer?.close()
        retryTimer = nil
        watchdog?.close()
        watchdog = nil
        poll?.close()
        poll = nil
        PQfinish(conn)
        conn = nil
        isUp = false
    }

    // MARK: libpq values

    private func withParams<R>(_ params: [String?], _ body: (Int32, [UnsafePointer<CChar>?]) -> R) -> R {
        let copies: [UnsafeMutablePointer<CChar>?] = params.map { $0.flatMap { strdup($0) } }
        defer { for p in copies { free(p) } }
        return body(Int32(params.count), copies.map { $0.map { UnsafePointer($0) } })
    }

    private static func rows(of res: OpaquePointer?) -> PGRows {
        var out = PGRows()
        let n = PQntuples(res), m = PQnfields(res)
        out.rows.reserveCapacity(Int(n))
        for r in 0..<n {
            var row: [String?] = []
            row.reserveCapacity(Int(m))
            for c in 0..<m {
                row.append(PQgetisnull(res, r, c) == 1 ? nil : String(cString: PQgetvalue(res, r, c)))
            }
            out.rows.append(row)
        }
        return out
    }

    static func errorText(_ conn: OpaquePointer) -> String {
        String(cString: PQerrorMessage(conn)).trimmingTrailingNewlines()
    }

    static func resultError(_ res: OpaquePointer?) -> String {
        guard let res else { return "out of memory" }
        return String(cString: PQresultErrorMessage(res)).trimmingTrailingNewlines()
    }

    /// The connection string without its password, for messages.
    static func redacted(_ conninfo: String) -> String {
        if !conninfo.contains("://") {
            // key=value form: hide password=…
            return conninfo.split(separator: " ").map { $0.hasPrefix("password=") ? "password=***" : String($0) }.joined(separator: " ")
        }
        guard let at = conninfo.range(of: "@"), let scheme = conninfo.range(of: "://"), scheme.upperBound < at.lowerBound else {
            return conninfo
        }
        let userinfo = conninfo[scheme.upperBound..<at.lowerBound]
        guard let colon = userinfo.firstIndex(of: ":") else { return conninfo }
        return String(conninfo[..<colon]) + ":***" + String(conninfo[at.lowerBound...])
    }
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var s = self
        while s.last == "\n" { s.removeLast() }
        return s
    }
}
