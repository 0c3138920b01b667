import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// Credentials of the process at the other end of a Unix socket.
public struct PeerCredentials: Sendable, Equatable {
    public let pid: Int32
    public let uid: UInt32
    public let gid: UInt32
}

/// A connected Unix-domain stream: reads arrive through ``startReading(_:)``; writes are queued with
/// their bytes copied once (or written at once when the socket has room), and the total not yet taken by
/// the kernel is ``queuedBytes``.
public final class PipeStream: Handle {
    public typealias ReadHandler = (ReadEvent) -> Void

    /// What a read callback reports.
    public enum ReadEvent {
        case data(UnsafeRawBufferPointer)
        case end
        case error(UVError)
    }

    private let loop: EventLoop
    private var onRead: ReadHandler?
    /// Called when all queued writes have been taken by the kernel.
    public var onDrain: (() -> Void)?

    init(loop: EventLoop) {
        self.loop = loop
        super.init(size: MemoryLayout<uv_pipe_t>.size)
        uv_pipe_init(loop.raw, pipe, 0)
        retainForLoop()
    }

    var pipe: UnsafeMutablePointer<uv_pipe_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_pipe_t.self) }
    var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self) }

    /// Connects to the socket at `path`; `completion` receives nil on success.
    public static func connect(loop: EventLoop, path: String, _ completion: @escaping (PipeStream, UVError?) -> Void) -> PipeStream {
        let s = PipeStream(loop: loop)
        let req = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        let box = ConnectBox(stream: s, completion: completion)
        req.pointee.data = Unmanaged.passRetained(box).toOpaque()
        uv_pipe_connect(req, s.pipe, path) { req, status in
            let box = Unmanaged<ConnectBox>.fromOpaque(req!.pointee.data).takeRetainedValue()
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

    public func startReading(_ handler: @escaping ReadHandler) {
        guard !isClosing else { return }
        onRead = handler
        uv_read_start(stream, { h, suggested, buf in
            let me = Handle.from(h!.pointee.data, as: PipeStream.self)
            buf!.pointee = uv_buf_init(me.loop.readBuffer, UInt32(me.loop.readBufferSize))
        }, { s, nread, buf in
            let me = Handle.from(s!.pointee.data, as: PipeStream.self)
            if nread > 0 {
                me.onRead?(.data(UnsafeRawBufferPointer(start: buf!.pointee.base, count: nread)))
            } else if nread == Int(UV_EOF.rawValue) {
                me.onRead?(.end)
            } else if nread < 0 {
                me.onRead?(.error(UVError(Int32(nread))))
            }
        })
    }

    /// Stops reading (back-pressure); ``resumeReading()`` starts again with the same handler.
    public func pauseReading() { if !isClosing { uv_read_stop(stream) } }

    public func resumeReading() {
        if let h = onRead { startReading(h) }
    }

    /// Bytes handed to libuv that the kernel has not taken yet.
    public var queuedBytes: Int { isClosing ? 0 : stream.pointee.write_queue_size }

    /// Writes `bytes`: as much as the socket takes at once, the rest queued (copied once).
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard !isClosing, bytes.count > 0 else { return }
        var offset = 0
        if stream.pointee.write_queue_size == 0 {
            var buf = uv_buf_init(UnsafeMutableRawPointer(mutating: bytes.baseAddress!).assumingMemoryBound(to: CChar.self),
                                  UInt32(bytes.count))
            let n = uv_try_write(stream, &buf, 1)
            if n == Int32(bytes.count) { return }
            if n > 0 { offset = Int(n) }
        }
        let remaining = bytes.count - offset
        let mem = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<uv_write_t>.size + remaining, alignment: 16)
        let req = mem.assumingMemoryBound(to: uv_write_t.self)
        let data = mem + MemoryLayout<uv_write_t>.size
        data.copyMemory(from: bytes.baseAddress! + offset, byteCount: remaining)
        var buf = uv_buf_init(data.assumingMemoryBound(to: CChar.self), UInt32(remaining))
        let rc = uv_write(req, stream, &buf, 1) { req, status in
            let s = req!.pointee.handle!
            UnsafeMutableRawPointer(req!).deallocate()
            guard let d = s.pointee.data else { return }
            let me = Handle.from(d, as: PipeStream.self)
            if s.pointee.write_queue_size == 0 { me.onDrain?() }
        }
        if rc < 0 { mem.deallocate() }
    }

    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    /// Shuts the write side down once queued writes are flushed, then closes the handle.
    public func shutdownAndClose(then: (() -> Void)? = nil) {
        guard !isClosing else { return }
        let req = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        let box = CloseBox(then)
        req.pointee.data = Unmanaged.passRetained(box).toOpaque()
        let rc = uv_shutdown(req, stream) { req, _ in
            let box = Unmanaged<CloseBox>.fromOpaque(req!.pointee.data).takeRetainedValue()
            let s = req!.pointee.handle!
            req!.deallocate()
            if let d = s.pointee.data {
                Handle.from(d, as: PipeStream.self).close(then: box.then)
            }
        }
        if rc < 0 {
            Unmanaged<CloseBox>.fromOpaque(req.pointee.data).release()
            req.deallocate()
            close(then: then)
        }
    }

    private final class CloseBox {
        let then: (() -> Void)?
        init(_ then: (() -> Void)?) { self.then = then }
    }

    /// The peer's pid, uid and gid (SO_PEERCRED).
    public func peerCredentials() -> PeerCredentials? {
        var fd: uv_os_fd_t = -1
        guard uv_fileno(handle, &fd) == 0 else { return nil }
        var pid: Int32 = 0, uid: Int32 = 0, gid: Int32 = 0
        guard navuv_peercred(fd, &pid, &uid, &gid) == 0 else { return nil }
        return PeerCredentials(pid: pid, uid: UInt32(bitPattern: uid), gid: UInt32(bitPattern: gid))
    }

    override func didClose() {
        onRead = nil
        onDrain = nil
    }
}

/// A listening Unix-domain socket.
public final class PipeListener: Handle {
    private let loop: EventLoop
    private var onConnection: ((PipeListener) -> Void)?

    public init(loop: EventLoop) {
        self.loop = loop
        super.init(size: MemoryLayout<uv_pipe_t>.size)
        uv_pipe_init(loop.raw, pipe, 0)
        retainForLoop()
    }

    var pipe: UnsafeMutablePointer<uv_pipe_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_pipe_t.self) }
    var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self) }

    /// Binds to `path` with permissions `mode` (the file is created under a umask that allows only them).
    public func bind(path: String, mode: mode_t = 0o600) throws(UVError) {
        let old = umask(~mode & 0o777)
        let rc = uv_pipe_bind(pipe, path)
        umask(old)
        try UVError.check(rc)
        chmod(path, mode)
    }

    public func listen(backlog: Int32 = 511, _ onConnection: @escaping (PipeListener) -> Void) throws(UVError) {
        self.onConnection = onConnection
        try UVError.check(uv_listen(stream, backlog) { s, status in
            guard status >= 0 else { return }
            let me = Handle.from(s!.pointee.data, as: PipeListener.self)
            me.onConnection?(me)
        })
    }

    /// Accepts one pending connection.
    public func accept() throws(UVError) -> PipeStream {
        let client = PipeStream(loop: loop)
        let rc = uv_accept(stream, client.stream)
        if rc < 0 {
            client.close()
            throw UVError(rc)
        }
        return client
    }

    override func didClose() { onConnection = nil }
}
