import Foundation
import JSON
import NavClient
import NavTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A Unix socket served by a thread that runs `talk` on each connection it accepts (`accepts`
/// false: it never accepts, its queue of connections full).
final class FakeServer: @unchecked Sendable {
    let dir = TempDir()
    let path: String
    private let fd: Int32
    private var held: [Int32] = []
    /// Whether the accepting thread runs: it closes the listener itself once `deinit` has shut it
    /// down, so that no accept can reach a descriptor number another test has been given since.
    private var accepting = false

    init(accepts: Bool = true, talk: @escaping @Sendable (Int32) -> Void = { _ in }) throws {
        path = dir.file("fake.sock")
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let addr = UnixSocketAddress(path)
        let bound = addr.bind(fd)
        guard bound == 0, listen(fd, accepts ? 16 : 0) == 0 else { throw TestFailure("cannot listen on \(path)") }
        if accepts {
            let listener = fd
            accepting = true
            Thread.detachNewThread {
                while true {
                    let c = accept(listener, nil, nil)
                    if c < 0 { close(listener); return }
                    Thread.detachNewThread {
                        talk(c)
                        close(c)
                    }
                }
            }
        } else {
            // Fill the queue of connections waiting to be accepted: the next connect cannot complete.
            for _ in 0..<4 {
                let x = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
                _ = fcntl(x, F_SETFL, O_NONBLOCK)
                _ = addr.connect(x)
                held.append(x)
            }
        }
    }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        if !accepting { close(fd) }
        for x in held { close(x) }
        dir.remove()
    }

    /// Reads one line from `c`, then sends `bytes` (as often as `times`).
    static func answer(_ bytes: [UInt8], times: Int = 1) -> @Sendable (Int32) -> Void {
        { c in
            var b = [UInt8](repeating: 0, count: 4096)
            _ = recv(c, &b, b.count, 0)
            for _ in 0..<times where bytes.withUnsafeBytes({ send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) >= 0 {}
            usleep(300_000)
        }
    }
}

/// NavClient and navctl against a server that is not navd, or not well: only their own errors
/// (kind `protocol`, `timeout`, `connection`), within their bounds.
@Suite struct HostileServerTests {
    @Test(arguments: ["not json\n", "[1,2\n", "\u{1}\n"])
    func garbageIsAProtocolError(_ text: String) throws {
        let s = try FakeServer(talk: FakeServer.answer(Array(text.utf8)))
        let c = try NavClient(socketPath: s.path)
        #expect(throws: NavClientError.self) { try c.ping() }
        do { try c.ping() } catch let e as NavClientError { #expect(e.kind == "protocol" || e.kind == "connection", "\(e)") }
    }

    @Test func deepNestingIsAProtocolError() throws {
        let deep = Array(repeating: UInt8(ascii: "["), count: 100_000) + Array(repeating: UInt8(ascii: "]"), count: 100_000) + [10]
        let s = try FakeServer(talk: FakeServer.answer(deep))
        let c = try NavClient(socketPath: s.path)
        do {
            try c.ping()
            Issue.record("a reply nested 100,000 deep was accepted")
        } catch let e as NavClientError {
            #expect(e.kind == "protocol" && e.message.contains("deeper"), "\(e)")
        }
    }

    @Test func anEndlessLineStopsAtTheLineLimit() throws {
        let s = try FakeServer(talk: FakeServer.answer(Array(repeating: UInt8(ascii: "x"), count: 1 << 20), times: 40))
        let c = try NavClient(socketPath: s.path)
        do {
            try c.ping()
            Issue.record("a 40 MiB line was accepted")
        } catch let e as NavClientError {
            #expect(e.kind == "protocol" && e.message.contains("longer than \(NavClient.maxLine)"), "\(e)")
        }
    }

    @Test func aServerThatNeverAcceptsTimesTheConnectOut() throws {
        let s = try FakeServer(accepts: false)
        let start = Date()
        do {
            _ = try NavClient(socketPath: s.path, connectTimeout: 0.5)
            Issue.record("connected to a server that never accepts")
        } catch let e as NavClientError {
            #expect(e.kind == "timeout", "\(e)")
        }
        #expect(Date().timeIntervalSince(start) < 3)
    }

    @Test func aServerThatStopsReadingTimesTheCallOut() throws {
        let s = try FakeServer(talk: { _ in usleep(5_000_000) })
        let c = try NavClient(socketPath: s.path)
        let start = Date()
        do {
            try c.call("navigate", ["to": "x", "with": ["ref": .string(String(repeating: "r", count: 8 << 20))]], timeout: 0.5)
            Issue.record("a call to a server that reads nothing returned")
        } catch let e as NavClientError {
            #expect(e.kind == "timeout", "\(e)")
        }
        #expect(Date().timeIntervalSince(start) < 3)
    }

    /// navctl says what is wrong and exits 2, as when navd cannot be reached.
    @Test func navctlReportsAServerThatIsNotNavd() throws {
        let s = try FakeServer(talk: FakeServer.answer(Array("garbage\n".utf8)))
        let r = try runCommand(Repo.binary("navctl"), ["--socket", s.path, "tree"])
        #expect(r.status == 2 && r.stderr.contains("protocol"), "\(r.status): \(r.stderr)")
        let empty = try runCommand(Repo.binary("navctl"), ["--socket", "", "tree"])
        #expect(empty.status == 2 && empty.stderr.contains("empty"), "\(empty.stderr)")
    }
}
