import CLibUV

/// A terminal on the loop (uv_tty_t): raw mode and window size on top of ``StreamHandle``'s reads and
/// writes. ``resetMode()`` restores the terminal as it was before raw mode; call it on every way out.
public final class TTY: StreamHandle {
    /// Opens `fd` (0 for input, 1 for output) as a terminal; fails when it is not one.
    public init(loop: EventLoop, fd: Int32) throws(UVError) {
        super.init(loop: loop, size: MemoryLayout<uv_tty_t>.size)
        let rc = uv_tty_init(loop.raw, tty, fd, 0)
        if rc < 0 { throw UVError(rc) }
        retainForLoop()
    }

    private var tty: UnsafeMutablePointer<uv_tty_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_tty_t.self) }

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
}
