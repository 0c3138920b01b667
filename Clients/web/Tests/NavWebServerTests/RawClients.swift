import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The raw clients the tests speak to nav-web's server with: blocking sockets to 127.0.0.1, each
/// run on a thread of its own by ``offThePool(_:)``.

struct SocketFailure: Error, CustomStringConvertible { let description: String }

/// Runs blocking socket work on a thread of its own: a test's blocking read must not hold one of
/// the few threads Swift's concurrency shares with the server it is waiting for.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { done in
        Thread { done.resume(with: Result { try work() }) }.start()
    }
}

/// A blocking TCP connection to 127.0.0.1:`port`, reads timing out after 20 s.
func tcpConnect(port: Int, sendBuffer: Int32? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SocketFailure(description: "socket: \(errno)") }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var tv = timeval(tv_sec: 20, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    if var size = sendBuffer { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
    let connected = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { let e = errno; close(fd); throw SocketFailure(description: "connect to port \(port): \(e)") }
    return fd
}

/// Sets how long a send may block (0: without end) before it fails with EAGAIN.
func setSendTimeout(_ fd: Int32, seconds: Int) {
    var tv = timeval(tv_sec: seconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
}

/// Writes every byte; with `untilClosed`, a connection the peer resets or closes ends the write
/// without an error (a server may answer a frame before reading all of it).
func sendAll(_ fd: Int32, _ bytes: [UInt8], untilClosed: Bool = false) throws {
    var sent = 0
    while sent < bytes.count {
        let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n <= 0 && untilClosed && (errno == ECONNRESET || errno == EPIPE) { return }
        guard n > 0 else { throw SocketFailure(description: "send: \(errno)") }
        sent += n
    }
}

/// One HTTP/1.1 exchange: the request as given (it asks the server to close the connection), the
/// response read to its end, a chunked body joined.
struct HTTPResponse: Sendable {
    let status: Int
    /// Names in lower case, in the order they came.
    let headers: [(name: String, value: String)]
    let body: String

    init(port: Int, request: String) throws {
        let fd = try tcpConnect(port: port)
        defer { close(fd) }
        try sendAll(fd, Array(request.utf8))
        var raw: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 { throw SocketFailure(description: "recv: \(errno)") }
            if n == 0 { break }
            raw += buffer[0..<n]
        }
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        guard let split = raw.indices.first(where: { raw[$0...].starts(with: end) }) else {
            throw SocketFailure(description: "no HTTP response head in \(String(decoding: raw, as: UTF8.self))")
        }
        let lines = String(decoding: raw[..<split], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines[0].split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw SocketFailure(description: "status line \(lines[0])") }
        self.status = status
        headers = lines.dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var payload = Array(raw[(split + end.count)...])
        if headers.contains(where: { $0.name == "transfer-encoding" && $0.value.lowercased().contains("chunked") }) {
            payload = try Self.joined(chunks: payload)
        }
        body = String(decoding: payload, as: UTF8.self)
    }

    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    private static func joined(chunks: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var at = 0
        while true {
            guard let lineEnd = chunks[at...].firstIndex(of: UInt8(ascii: "\r")),
                  let size = Int(String(decoding: chunks[at..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16),
                  lineEnd + 2 + size <= chunks.count else { throw SocketFailure(description: "a malformed chunk at \(at)") }
            if size == 0 { return out }
            out += chunks[(lineEnd + 2)..<(lineEnd + 2 + size)]
            at = lineEnd + 2 + size + 2
        }
    }
}

/// A WebSocket client written from RFC 6455 over a blocking TCP socket, so that the test sends the
/// exact headers a browser sends. Used by one thread at a time (``offThePool(_:)``).
final class RawWebSocket: @unchecked Sendable {
    struct Refused: Error { let response: String }
    let fd: Int32
    private var input: [UInt8] = []

    init(port: Int, headers: [String]) throws {
        // A small send buffer: a frame the server refuses part way is always cut by its reset, as
        // on a loaded machine, rather than only when the kernel cannot take the whole frame at once.
        fd = try tcpConnect(port: port, sendBuffer: 16_384)
        let request = (["GET /ws HTTP/1.1", "Host: localhost:\(port)", "Upgrade: websocket", "Connection: Upgrade",
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"] + headers)
            .joined(separator: "\r\n") + "\r\n\r\n"
        try write(Array(request.utf8))
        var head = ""
        while !head.hasSuffix("\r\n\r\n") {
            guard let b = try byte() else { break }
            head.append(Character(UnicodeScalar(b)))
        }
        // deinit closes the descriptor (it runs when a fully initialized instance throws): closing
        // it here too would close whatever descriptor another test's thread was given since.
        guard head.hasPrefix("HTTP/1.1 101") else { throw Refused(response: head) }
    }

    deinit { close(fd) }

    /// Writes every byte; with `untilClosed`, a connection the server resets or closes ends the write
    /// without an error (the server may answer a frame before reading all of it).
    private func write(_ bytes: [UInt8], untilClosed: Bool = false) throws {
        try sendAll(fd, bytes, untilClosed: untilClosed)
    }

    private func byte() throws -> UInt8? {
        if input.isEmpty {
            var buf = [UInt8](repeating: 0, count: 65_536)
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return nil }
            input = Array(buf[0..<n].reversed())
        }
        return input.popLast()
    }

    private func bytes(_ n: Int) throws -> [UInt8] {
        try (0..<n).map { _ in guard let b = try byte() else { throw Refused(response: "connection closed") }; return b }
    }

    /// Sends one masked text frame (a client's frames are masked); `untilClosed` as in ``write(_:untilClosed:)``.
    func send(_ text: String, untilClosed: Bool = false) throws {
        let frame = ProtocolTests.frame(1, Array(text.utf8))
        try write(frame, untilClosed: untilClosed)
    }

    /// Sends `bytes` as they are (a frame the test builds itself).
    func sendRaw(_ bytes: [UInt8]) throws { try write(bytes) }

    /// The next frame: its opcode and payload.
    func frame() throws -> (opcode: UInt8, payload: [UInt8]) {
        let h = try bytes(2)
        var length = Int(h[1] & 0x7F)
        if length == 126 { length = try bytes(2).reduce(0) { $0 << 8 | Int($1) } }
        if length == 127 { length = try bytes(8).reduce(0) { $0 << 8 | Int($1) } }
        return (h[0] & 0x0F, try bytes(length))
    }

    /// The next text message.
    func receive() throws -> String {
        while true {
            let f = try frame()
            if f.opcode == 1 { return String(decoding: f.payload, as: UTF8.self) }
            if f.opcode == 8 { throw Refused(response: "closed") }
        }
    }

    /// The code of the close frame the server sends next (text messages before it are skipped).
    func closeCode() throws -> Int {
        while true {
            let f = try frame()
            if f.opcode == 8 { return f.payload.count >= 2 ? Int(f.payload[0]) << 8 | Int(f.payload[1]) : 1005 }
        }
    }
}

/// A value handed back from a test's own thread (a JSON result: only read after the thread ends).
struct SendableAny: @unchecked Sendable { let value: Any }

/// Sends `request` as it is and reads until the server closes: every byte it answered.
func exchange(port: Int, _ request: [UInt8]) throws -> String {
    let fd = try tcpConnect(port: port)
    defer { close(fd) }
    try sendAll(fd, request)
    var raw: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        raw += buffer[0..<n]
    }
    return String(decoding: raw, as: UTF8.self)
}
