import CLibUV

/// A terminal on the loop (uv_tty_t): raw mode, window size, reads of key bytes, writes of output.
/// ``resetMode()`` restores the terminal as it was before raw mode; call it on every way out.
public final class TTY: Handle {
    public typealias ReadHandler = PipeStream.ReadEvent

    private let loop: EventLoop
    private var onRead: ((ReadHandler) -> Void)?

    /// Opens `fd` (0 for input, 1 for output) as a terminal; fails when it is not one.
    public init(loop: EventLoop, fd: Int32) throws(UVError) {
        self.loop = loop
        super.init(size: MemoryLayout<uv_tty_t>.size)
        let rc = uv_tty_init(loop.raw, tty, fd, 0)
        if rc < 0 { throw UVError(rc) }
        retainForLoop()
    }

    private var tty: UnsafeMutablePointer<uv_tty_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_tty_t.self) }
    private var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self) }

    /// Raw mode: bytes as typed, no echo, no line editing, no signals from ^C (the program decides).
    public func setRawMode() throws(UVError) {
        let rc = uv_tty_set_mode(tty, UV_TTY_MODE_RAW)
        if rc < 0 { throw UVError(rc) }
    }

    /// Restores the mode every terminal had before the first change (safe to call more than once).
    public static func resetMode() { _ = uv_tty_reset_mode() }

    /// Columns and rows.
    public func windowSize() -> (columns: Int, rows: Int)? {
        var w: Int32 = 0, h: Int32 = 0
        guard uv_tty_get_winsize(tty, &w, &h) == 0 else { return nil }
        return (Int(w), Int(h))
    }

    public func startReading(_ handler: @escaping (ReadHandler) -> Void) {
        guard !isClosing else { return }
        onRead = handler
        uv_read_start(stream, { h, _, buf in
            let me = Handle.from(h!.pointee.data, as: TTY.self)
            buf!.pointee = uv_buf_init(me.loop.readBuffer, UInt32(me.loop.readBufferSize))
        }, { s, nread, buf in
            let me = Handle.from(s!.pointee.data, as: TTY.self)
            if nread > 0 {
                me.onRead?(.data(UnsafeRawBufferPointer(start: buf!.pointee.base, count: nread)))
            } else if nread == Int(UV_EOF.rawValue) {
                me.onRead?(.end)
            } else if nread < 0 {
                me.onRead?(.error(UVError(Int32(nread))))
            }
        })
    }

    /// Writes `bytes` (copied; a terminal write is small and rare).
    public func write(_ bytes: [UInt8]) {
        guard !isClosing, !bytes.isEmpty else { return }
        let mem = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<uv_write_t>.size + bytes.count, alignment: 16)
        let req = mem.assumingMemoryBound(to: uv_write_t.self)
        let data = mem + MemoryLayout<uv_write_t>.size
        bytes.withUnsafeBytes { data.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        var buf = uv_buf_init(data.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
        let rc = uv_write(req, stream, &buf, 1) { req, _ in UnsafeMutableRawPointer(req!).deallocate() }
        if rc < 0 { mem.deallocate() }
    }

    override func didClose() { onRead = nil }
}
