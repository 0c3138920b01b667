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

    /// Connects to the socket at `path`; `completion` receives nil on success, on a later turn of
    /// the loop. A listener whose queue of connections not yet accepted is full answers a Unix
    /// socket's connect at once with EAGAIN, where a blocking connect would wait for room (a burst
    /// of clients connecting at once, a server busy for a moment): the connect is tried again, after
    /// 1 ms and then twice as long each time up to 100 ms, for `patience` milliseconds (default
    /// 10 s), and only then fails with EAGAIN. Closing the stream meanwhile ends it with ECANCELED.
    public static func connect(loop: EventLoop, path: String, patience: UInt64 = 10_000,
                               _ completion: @escaping (PipeStream, UVError?) -> Void) -> PipeStream {
        let s = PipeStream(loop: loop)
        Connecting(stream: s, path: path, deadline: loop.now + patience, completion: completion).attempt(after: 0)
        return s
    }

    /// One connect of ``connect(loop:path:patience:_:)``, its attempts made on a timer.
    private final class Connecting {
        let stream: PipeStream
        let path: String
        let deadline: UInt64
        var completion: ((PipeStream, UVError?) -> Void)?
        let timer: Timer
        var delay: UInt64 = 1

        init(stream: PipeStream, path: String, deadline: UInt64, completion: @escaping (PipeStream, UVError?) -> Void) {
            self.stream = stream
            self.path = path
            self.deadline = deadline
            self.completion = completion
            timer = Timer(loop: stream.loop)
        }

        /// The next attempt after `ms` milliseconds (the first after none: the answer always comes
        /// after `connect` returned). The timer's callback holds this attempt until it ends.
        func attempt(after ms: UInt64) {
            timer.start(milliseconds: ms) { [self] in attemptNow() }
        }

        private func attemptNow() {
            guard !stream.isClosing else { return finish(UVError(Int32(UV_ECANCELED.rawValue))) }
            var fd: Int32 = -1
            let rc = navuv_unix_connect(path, &fd)
            if rc == 0 {
                let opened = uv_pipe_open(stream.pipe, fd)
                if opened < 0 { Glibc.close(fd) }
                return finish(opened < 0 ? UVError(opened) : nil)
            }
            if rc == -EAGAIN && stream.loop.now < deadline {
                let wait = min(delay, deadline - stream.loop.now)
                delay = min(delay * 2, 100)
                return attempt(after: wait)
            }
            finish(UVError(rc))
        }

        private func finish(_ error: UVError?) {
            timer.close()
            let done = completion
            completion = nil
            done?(stream, error)
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
