import Foundation
import JSON

#if canImport(Glibc)
import Glibc
#endif

/// An error navd answered: JSON-RPC code, `data.kind`, message and data.
public struct NavClientError: Error, CustomStringConvertible {
    public let code: Int
    public let kind: String
    public let message: String
    public let data: JSONValue

    public var description: String { "\(kind) (\(code)): \(message)" }
}

/// A synchronous client of navd over its Unix socket, newline-delimited JSON-RPC.
/// Notifications that arrive while waiting for a reply are queued for ``nextNotification()``.
public final class NavClient {
    public let socketPath: String
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var nextId = 1
    private let parser = JSONParser(maxDepth: 512)
    public private(set) var pendingNotifications: [JSONValue] = []
    /// Answers requests navd sends (precondition.evaluate / recover); nil answers with an error.
    public var requestHandler: ((String, JSONValue) -> JSONValue?)?

    /// `--socket`, else `$NAVD_SOCKET`, else `$XDG_RUNTIME_DIR/navd.sock`, else `/tmp/navd-<uid>.sock`.
    public static func defaultSocketPath(explicit: String? = nil) -> String {
        if let explicit { return explicit }
        let env = ProcessInfo.processInfo.environment
        if let s = env["NAVD_SOCKET"], !s.isEmpty { return s }
        if let r = env["XDG_RUNTIME_DIR"], !r.isEmpty { return r + "/navd.sock" }
        return "/tmp/navd-\(getuid()).sock"
    }

    public init(socketPath: String? = nil) throws {
        self.socketPath = NavClient.defaultSocketPath(explicit: socketPath)
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(self.socketPath.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            close(fd)
            throw NavClientError(code: 0, kind: "connect", message: "socket path too long: \(self.socketPath)", data: .null)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in for (i, b) in bytes.enumerated() { p[i] = b } }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw NavClientError(code: 0, kind: "connect",
                                 message: "cannot connect to navd at \(self.socketPath): \(why) (is navd running? start it with `make run` or pass --socket / NAVD_SOCKET)", data: .null)
        }
    }

    deinit { close(fd) }

    private func send(_ value: JSONValue) throws {
        var bytes = JSONWriter.encode(value)
        bytes.append(10)
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw NavClientError(code: 0, kind: "connection", message: "navd closed the connection", data: .null) }
            off += n
        }
    }

    /// The next message from navd; nil when navd closed the connection.
    public func readMessage() throws -> JSONValue? {
        while true {
            if let nl = buffer.firstIndex(of: 10) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                if line.isEmpty { continue }
                return try parser.parse(line)
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// Calls `method`; returns its result or throws the error navd answered.
    @discardableResult
    public func call(_ method: String, _ params: JSONObject = [:]) throws -> JSONValue {
        let id = nextId
        nextId += 1
        try send(["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": .object(params)])
        while true {
            guard let m = try readMessage() else {
                throw NavClientError(code: 0, kind: "connection", message: "navd closed the connection before answering \(method)", data: .null)
            }
            if handleIncoming(m) { continue }
            guard m["id"] == .int(id) else { continue }
            if let e = m["error"] {
                throw NavClientError(code: e["code"]?.intValue ?? 0, kind: e["data"]?["kind"]?.stringValue ?? "error",
                                     message: e["message"]?.stringValue ?? "", data: e["data"] ?? .null)
            }
            return m["result"] ?? .null
        }
    }

    /// Queues notifications and answers navd's requests; true when `m` was one of those.
    private func handleIncoming(_ m: JSONValue) -> Bool {
        guard let method = m["method"]?.stringValue else { return false }
        if let id = m["id"] {
            if let result = requestHandler?(method, m["params"] ?? .null) {
                try? send(["jsonrpc": "2.0", "id": id, "result": result])
            } else {
                try? send(["jsonrpc": "2.0", "id": id, "error": ["code": -32601, "message": .string("this client does not handle \(method)"), "data": ["kind": "methodNotFound"]]])
            }
        } else {
            pendingNotifications.append(m)
        }
        return true
    }

    /// The next notification (queued first); nil when navd closed the connection.
    public func nextNotification() throws -> JSONValue? {
        if !pendingNotifications.isEmpty { return pendingNotifications.removeFirst() }
        while let m = try readMessage() {
            if m["method"] != nil && m["id"] == nil { return m }
            _ = handleIncoming(m)
        }
        return nil
    }

    /// Serves navd's requests (for `provide`) until the connection closes.
    public func serve() throws {
        while let m = try readMessage() {
            _ = handleIncoming(m)
            pendingNotifications.removeAll()
        }
    }
}
