import CLibUV
import Unchecked
#if canImport(Glibc)
import Glibc
#endif

/// A connected TCP stream (see ``StreamHandle`` for reading and writing): nav-web's HTTP and
/// WebSocket connections.
public final class TCPStream: StreamHandle {
    init(loop: EventLoop) {
        super.init(loop: loop, size: MemoryLayout<uv_tcp_t>.size)
        uv_tcp_init(loop.raw, tcp)
        retainForLoop()
    }

    var tcp: UnsafeMutablePointer<uv_tcp_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_tcp_t.self) }

    /// Sends small writes at once (no Nagle delay).
    public func setNoDelay() { _ = uv_tcp_nodelay(tcp, 1) }
}

/// A listening TCP socket.
public final class TCPListener: Listener {
    public init(loop: EventLoop) {
        super.init(loop: loop, size: MemoryLayout<uv_tcp_t>.size)
        uv_tcp_init(loop.raw, tcp)
        retainForLoop()
    }

    var tcp: UnsafeMutablePointer<uv_tcp_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_tcp_t.self) }

    /// Binds to `host` (a numeric IPv4 or IPv6 address, or a name resolved once, here) and `port`
    /// (0: any free port), then listens. A failure names the address and the reason.
    public func listen(host: String, port: Int, backlog: Int32 = 511,
                       _ onConnection: @escaping (TCPListener) -> Void) throws(UVError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
            throw UVError(Int32(UV_EAI_NONAME.rawValue))
        }
        defer { freeaddrinfo(found) }
        try UVError.check(uv_tcp_bind(tcp, first.pointee.ai_addr, 0))
        // A bind error (the address in use) is reported by listen.
        try startListening(backlog: backlog) { [unowned self] in onConnection(self) }
    }
    /// The port listened on (what port 0 chose).
    public var port: Int {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(tcp, $0, &length) }
        }
        guard rc == 0 else { return 0 }
        let family = storage.ss_family
        return withUnsafePointer(to: &storage) { p -> Int in
            if family == sa_family_t(AF_INET6) {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// Accepts one pending connection.
    public func accept() throws(UVError) -> TCPStream { try accept(into: TCPStream(loop: loop)) }
}
