import Foundation
import JSON
import NavClient
import NavTesting
import Testing
import UV
#if canImport(Glibc)
import Glibc
#endif

let postgresCanRun: Bool = {
    if let why = PostgresServer.unavailableReason {
        print("ClusterTests skipped: \(why)")
        return false
    }
    return true
}()

// MARK: Load driver

final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var acked: [String: [Int]] = [:]
    private(set) var failures: [String] = []
    private var unavailable = false
    private var count = 0

    func record(_ s: String, _ r: (versions: [Int], failures: [String], sawUnavailable: Bool)) {
        lock.withLock {
            acked[s] = r.versions
            failures += r.failures
            unavailable = unavailable || r.sawUnavailable
        }
    }
    func acknowledge() { lock.withLock { count += 1 } }
    var acknowledged: Int { lock.withLock { count } }
    var sawUnavailable: Bool { lock.withLock { unavailable } }
    func versions(_ s: String) -> [Int] { lock.withLock { acked[s] ?? [] } }
}

/// Navigates session `s` (alternating tabs, each navigation keyed) until `stop`, through whichever
/// node answers: a refused connection or a closed one moves to the next socket, `moved` is followed
/// by NavClient, `unavailable` is retried after the delay navd asks for. Answers the acknowledged
/// versions in order.
func driveSession(_ s: String, sockets: [String], start: Int, until stop: Flag, results: Results) -> (versions: [Int], failures: [String], sawUnavailable: Bool) {
    var versions: [Int] = []
    var failures: [String] = []
    var sawUnavailable = false
    var next = start
    var client: NavClient?
    var n = 0
    while !stop.isSet {
        n += 1
        let key = "\(s)-\(n)"
        let tab = n % 2 == 0 ? "shop.Home" : "cart.Cart"
        var attempts = 0
        var last = ""
        // A navigation in flight when the load stops is still retried to its answer (it may have
        // been committed by a node that was killed before replying), for at most 20 seconds more.
        var stoppedAt: Date?
        while true {
            attempts += 1
            if stoppedAt == nil && stop.isSet { stoppedAt = Date() }
            if attempts > 2_000 || (stoppedAt.map { Date().timeIntervalSince($0) > 20 } ?? false) {
                failures.append("\(key): no answer after \(attempts) attempts; last: \(last)")
                return (versions, failures, sawUnavailable)
            }
            do {
                if client == nil {
                    next += 1
                    client = try NavClient(socketPath: sockets[(next - 1) % sockets.count])
                }
                let r = try client!.call("navigate", ["session": .string(s), "to": .string(tab), "by": "select", "key": .string(key)], timeout: 5)
                guard let v = r["version"]?.intValue else {
                    failures.append("\(key): no version in \(r)")
                    break
                }
                versions.append(v)
                results.acknowledge()
                break
            } catch let e as NavClientError {
                last = "\(e) via \(client?.socketPath ?? "-")"
                switch e.kind {
                case "connect", "connection", "timeout", "moved":
                    client = nil
                    usleep(20_000)
                case "unavailable":
                    sawUnavailable = true
                    client = nil
                    usleep(UInt32(min(e.data["retryAfterMs"]?.intValue ?? 100, 500)) * 1_000)
                default:
                    failures.append("\(key): \(e)")
                    return (versions, failures, sawUnavailable)
                }
            } catch {
                failures.append("\(key): \(error)")
                return (versions, failures, sawUnavailable)
            }
        }
    }
    return (versions, failures, sawUnavailable)
}

/// Acknowledged navigations of `sessions` as PostgreSQL holds them (their versions summed).
func countAcknowledged(_ pg: PostgresServer, _ sessions: [String]) throws -> Int {
    let list = sessions.map { "'\($0)'" }.joined(separator: ",")
    return Int(try pg.psql("SELECT coalesce(sum(version), 0) FROM navd_sessions WHERE name IN (\(list))")) ?? 0
}

/// Polls `condition` (a state outside this process: PostgreSQL's tables, another process) until it
/// holds.
func waitUntil(timeout: Double, _ what: String = "condition", _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return }
        usleep(50_000)
    }
    throw TestFailure("\(what): not met within \(timeout) s")
}

/// `method` called through `client` until a node serves the session (after a takeover: while the
/// lease of the node that died runs, the call is answered `unavailable` or `moved`, or the socket
/// is not there yet); its result.
func callOnceServed(_ client: NavClient, _ method: String, _ params: JSONObject, _ what: String) throws -> JSONValue {
    var served: JSONValue = .null
    try waitUntil(timeout: 10, what) {
        do {
            served = try client.call(method, params)
            return true
        } catch let e as NavClientError where e.kind == "unavailable" || e.kind == "moved" || e.kind == "connect" {
            return false
        }
    }
    return served
}
