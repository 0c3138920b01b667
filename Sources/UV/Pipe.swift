import CLibUV
import Unchecked
#if canImport(Glibc)
import Glibc
#endif

/// Credentials of the process at the other end of a Unix socket.
public struct PeerCredentials: Sendable, Equatable {
    public let pid: Int32
    public let uid: UInt32
    public let gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The credentials of the peer of a connected Unix socket (`SO_PEERCRED`), or nil.
    public static func of(descriptor fd: Int32) -> PeerCredentials? {
        var pid: Int32 = 0, uid: Int32 = 0, gid: Int32 = 0
        guard navuv_peercred(fd, &pid, &uid, &gid) == 0 else { return nil }
        return PeerCredentials(pid: pid, uid: UInt32(bitPattern: uid), gid: UInt32(bitPattern: gid))
    }
}

/// A connected Unix-domain stream (see ``StreamHandle`` for reading and writing).
public final class PipeStream: StreamHandle {
    init(loop: EventLoop) {
        super.init(loop: loop, size: MemoryLayout<uv_pipe_t>.size)
        uv_pipe_init(loop.raw, pipe, 0)
        retainForLoop()
    }

    var pipe: UnsafeMutablePointer<uv_pipe_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_pipe_t.self) }

    /// Connects to the socket at `path`; `completion` receives nil on success.
    public static func connect(loop: EventLoop, path: String, _ completion: @escaping (PipeStream, UVError?) -> Void) -> PipeStream {
        let s = PipeStream(loop: loop)
        let req = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        let box = ConnectBox(stream: s, completion: completion)
        req.pointee.data = CContext.retain(box)
        uv_pipe_connect(req, s.pipe, path) { req, status in
            let box = CContext.take(req!.pointee.data, as: ConnectBox.self)
            req!.deallocate()
            box.completion(box.stream, status < 0 ? UVError(status) : nil)
        }
        return s
    }

    private final class ConnectBox {
        let stream: PipeStream
        let completion: (PipeStream, UVError?) -> Void
        init(stream: PipeStream, completion: @escaping (PipeStream, UVError?) -> Void) {
            self.stream = stream
            self.completion = completion
        }
    }

    /// Opens an existing file descriptor (a tty's or a socket's) as a stream.
    public static func open(loop: EventLoop, fd: Int32) throws(UVError) -> PipeStream {
        let s = PipeStream(loop: loop)
        let rc = uv_pipe_open(s.pipe, fd)
        if rc < 0 {
            s.close()
            throw UVError(rc)
        }
        return s
    }

    /// Whether the peer closed both directions (it closed its socket or shut down reading too),
    /// as opposed to only finishing sending (`shutdown(SHUT_WR)`, after which it still reads).
    /// Asks the kernel without waiting (`poll` with no timeout reports the hang-up).
    public var peerHungUp: Bool {
        var fd: uv_os_fd_t = -1
        guard uv_fileno(handle, &fd) == 0 else { return true }
        var p = pollfd(fd: fd, events: 0, revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLHUP | POLLERR) != 0
    }

    /// The peer's pid, uid and gid (SO_PEERCRED).
    public func peerCredentials() -> PeerCredentials? {
        var fd: uv_os_fd_t = -1
        guard uv_fileno(handle, &fd) == 0 else { return nil }
        return PeerCredentials.of(descriptor: fd)
    }
}

/// A listening Unix-domain socket.
public final class PipeListener: Listener {
    public init(loop: EventLoop) {
        super.init(loop: loop, size: MemoryLayout<uv_pipe_t>.size)
        uv_pipe_init(loop.raw, pipe, 0)
        retainForLoop()
    }

    var pipe: UnsafeMutablePointer<uv_pipe_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_pipe_t.self) }

    /// Binds to `path` with permissions `mode` (the file is created under a umask that allows only them).
    public func bind(path: String, mode: mode_t = 0o600) throws(UVError) {
        let old = umask(~mode & 0o777)
        let rc = uv_pipe_bind(pipe, path)
        umask(old)
        if rc == Int32(UV_EACCES.rawValue), !Self.directoryExists(of: path) {
            // libuv reports a missing directory as EACCES (as Windows would): say what it is.
            throw UVError.notFound
        }
        try UVError.check(rc)
        chmod(path, mode)
    }

    /// Whether the directory `path` would be made in exists.
    static func directoryExists(of path: String) -> Bool {
        let dir = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var st = stat()
        return stat(dir, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    public func listen(backlog: Int32 = 511, _ onConnection: @escaping (PipeListener) -> Void) throws(UVError) {
        try startListening(backlog: backlog) { [unowned self] in onConnection(self) }
    }

    /// Accepts one pending connection.
    public func accept() throws(UVError) -> PipeStream { try accept(into: PipeStream(loop: loop)) }
}
