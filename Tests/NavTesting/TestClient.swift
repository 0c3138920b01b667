import Foundation
import JSON

#if canImport(Glibc)
import Glibc
#endif

/// Errors of the test helpers.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}

/// A blocking JSON-RPC client over a Unix socket, for tests: it sends raw bytes or requests and reads
/// replies and notifications with a timeout. Notifications that arrive while waiting for a reply are kept.
public final class TestClient {
    public let fd: Int32
    private var buffer: [UInt8] = []
    private var nextId = 1
    private let parser = JSONParser(maxDepth: 512)
    /// Notifications received and not yet taken.
    public var notifications: [JSONValue] = []
    /// Replies that arrived while waiting for another one.
    public var earlyReplies: [JSONValue] = []
    /// Requests from navd (with an id) received and not yet taken.
    public var serverRequests: [JSONValue] = []

    public init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket() failed") }
        let rc = UnixSocketAddress(path).connect(fd)
        // The descriptor is closed by deinit, which runs when a fully initialized instance throws:
        // closing it here too would close whatever descriptor another thread was given since.
        guard rc == 0 else { throw TestFailure("connect(\(path)) failed: errno \(errno)") }
    }

    deinit { Glibc.close(fd) }

    /// Closes the connection now.
    public func close() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Ends what this client sends and keeps reading (as `echo … | socat` does at the end of its input).
    public func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

    public func sendRaw(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw TestFailure("send failed: errno \(errno)")
            }
            off += n
        }
    }

    public func sendRaw(_ text: String) throws { try sendRaw(Array(text.utf8)) }

    /// Sends a request and returns its id.
    @discardableResult
    public func send(_ method: String, _ params: JSONValue? = nil, id: JSONValue? = nil) throws -> JSONValue {
        let rid = id ?? .int(nextId)
        nextId += 1
        var o: JSONObject = ["jsonrpc": "2.0", "id": rid, "method": .string(method)]
        if let params { o["params"] = params }
        try sendRaw(JSONWriter.encode(.object(o)) + [0x0A])
        return rid
    }

    /// Sends a notification (no id).
    public func notify(_ method: String, _ params: JSONValue? = nil) throws {
        var o: JSONObject = ["jsonrpc": "2.0", "method": .string(method)]
        if let params { o["params"] = params }
        try sendRaw(JSONWriter.encode(.object(o)) + [0x0A])
    }

    /// The number of whole lines received so far, read without waiting for any more (what navd had
    /// written when this is called, whatever the build's speed); they are consumed.
    public func countLinesReceived() throws -> Int {
        while true {
            let n = receive(flags: Int32(MSG_DONTWAIT))
            if n > 0 { continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK { throw TestFailure("recv failed: errno \(errno)") }
            break
        }
        guard let last = buffer.lastIndex(of: 0x0A) else { return 0 }
        let lines = buffer[...last].reduce(0) { $1 == 0x0A ? $0 + 1 : $0 }
        buffer.removeFirst(last + 1)
        return lines
    }

    /// Reads one line (without its newline); nil at end of stream.
    public func readLine(timeout: Double = 10) throws -> [UInt8]? {
        let deadline = Date().addingTimeInterval(timeout)
        var scanned = 0  // bytes of `buffer` known to hold no newline (a long line is scanned once)
        while true {
            if let nl = buffer[scanned...].firstIndex(of: 0x0A) {
                let line = Array(buffer[..<nl])
                buffer.removeFirst(nl + 1)
                return line
            }
            scanned = buffer.count
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw TestFailure("timed out after \(timeout) s waiting for a message") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let pr = poll(&pfd, 1, Int32(remaining * 1000))
            if pr == 0 { continue }
            let n = receive(flags: 0)
            if n == 0 { return buffer.isEmpty ? nil : { let b = buffer; buffer = []; return b }() }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                if errno == ECONNRESET { return nil }
                throw TestFailure("recv failed: errno \(errno)")
            }
        }
    }

    /// One `recv` into `buffer`: how many bytes came (0 at the end of the stream), or -1 with `errno` set.
    private func receive(flags: Int32) -> Int {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, flags) }
        if n > 0 { buffer.append(contentsOf: chunk[0..<n]) }
        return n
    }

    /// Reads the next message of any kind; nil at end of stream.
    public func readMessage(timeout: Double = 10) throws -> JSONValue? {
        guard let line = try readLine(timeout: timeout) else { return nil }
        do { return try parser.parse(line) } catch {
            throw TestFailure("navd sent invalid JSON (\(error)): \(String(decoding: line.prefix(200), as: UTF8.self))")
        }
    }

    /// Reads until the reply with `id` arrives; notifications and server requests are kept aside.
    public func reply(to id: JSONValue, timeout: Double = 10) throws -> JSONValue {
        if let i = earlyReplies.firstIndex(where: { $0["id"] == id }) { return earlyReplies.remove(at: i) }
        while true {
            guard let m = try readMessage(timeout: timeout) else { throw TestFailure("connection closed before the reply to \(id)") }
            if m["method"] != nil {
                if m["id"] != nil { serverRequests.append(m) } else { notifications.append(m) }
                continue
            }
            if m["id"] == id { return m }
            // A reply to another request sent earlier (replies may come out of order): keep it.
            earlyReplies.append(m)
        }
    }

    /// Calls `method` and returns its result, throwing ``RPCFailure`` on an error reply.
    @discardableResult
    public func call(_ method: String, _ params: JSONValue? = nil, timeout: Double = 10) throws -> JSONValue {
        let id = try send(method, params)
        let r = try reply(to: id, timeout: timeout)
        if let e = r["error"] { throw RPCFailure(error: e) }
        return r["result"] ?? .null
    }

    /// Calls `method` expecting an error; returns the error object.
    public func callError(_ method: String, _ params: JSONValue? = nil, timeout: Double = 10) throws -> JSONValue {
        let id = try send(method, params)
        let r = try reply(to: id, timeout: timeout)
        guard let e = r["error"] else { throw TestFailure("expected an error from \(method), got \(r)") }
        return e
    }

    /// Waits for the next notification named `method` (already received ones first).
    public func notification(_ method: String, timeout: Double = 10) throws -> JSONValue {
        if let i = notifications.firstIndex(where: { $0["method"]?.stringValue == method }) {
            return notifications.remove(at: i)
        }
        while true {
            guard let m = try readMessage(timeout: timeout) else { throw TestFailure("connection closed while waiting for \(method)") }
            if m["method"]?.stringValue == method && m["id"] == nil { return m }
            if m["method"] != nil && m["id"] != nil { serverRequests.append(m) } else { notifications.append(m) }
        }
    }

    /// Waits for a request from navd named `method`.
    public func serverRequest(_ method: String, timeout: Double = 10) throws -> JSONValue {
        if let i = serverRequests.firstIndex(where: { $0["method"]?.stringValue == method }) {
            return serverRequests.remove(at: i)
        }
        while true {
            guard let m = try readMessage(timeout: timeout) else { throw TestFailure("connection closed while waiting for \(method)") }
            if m["method"]?.stringValue == method && m["id"] != nil { return m }
            if m["method"] != nil && m["id"] != nil { serverRequests.append(m) } else { notifications.append(m) }
        }
    }

    /// Answers a request from navd.
    public func respond(to request: JSONValue, result: JSONValue) throws {
        try sendRaw(JSONWriter.encode(["jsonrpc": "2.0", "id": request["id"] ?? .null, "result": result]) + [0x0A])
    }

    /// Whether the peer closed the connection within `timeout` (data before the close is discarded).
    /// The close is the event awaited: the timeout only bounds a failing test, so it is generous
    /// (an AddressSanitizer build on a busy machine took over 5 s to answer a batch of 5,000).
    public func waitForClose(timeout: Double = 30) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            do {
                if try readLine(timeout: max(0.01, deadline.timeIntervalSinceNow)) == nil { return true }
            } catch is TestFailure { return false }
        }
        return false
    }
}

/// An error reply, as thrown by ``TestClient/call(_:_:timeout:)``.
public struct RPCFailure: Error, CustomStringConvertible {
    public let error: JSONValue
    public var code: Int? { error["code"]?.intValue }
    public var kind: String? { error["data"]?["kind"]?.stringValue }
    public var message: String { error["message"]?.stringValue ?? "" }
    public var description: String { "RPC error \(error)" }
}
