import CLibUV

/// A libuv poll handle: watches a file descriptor another library owns (libpq's connection socket)
/// for readability and writability. libuv does not read or write it; the callback does.
public final class Poll: Handle {
    public struct Events: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: Int32(UV_READABLE.rawValue))
        public static let writable = Events(rawValue: Int32(UV_WRITABLE.rawValue))
    }

    private var callback: ((Events, Int32) -> Void)?
    public let fd: Int32

    /// Watches `fd` (a socket); fails if libuv cannot (the descriptor is not pollable).
    public init(loop: EventLoop, fd: Int32) throws(UVError) {
        self.fd = fd
        super.init(size: MemoryLayout<uv_poll_t>.size, kind: "poll")
        let rc = uv_poll_init_socket(loop.raw, ptr, fd)
        guard rc == 0 else { throw UVError(rc) }
        retainForLoop()
    }

    private var ptr: UnsafeMutablePointer<uv_poll_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_poll_t.self) }

    /// Calls `callback(events, status)` whenever one of `events` is ready (status < 0: a libuv error).
    /// Calling it again changes the events watched.
    public func start(_ events: Events, _ callback: @escaping (Events, Int32) -> Void) {
        guard !isClosing else { return }
        self.callback = callback
        uv_poll_start(ptr, events.rawValue) { p, status, events in
            let me = Handle.from(p!.pointee.data, as: Poll.self)
            me.timed { me.callback?(Events(rawValue: events), status) }
        }
    }

    public func stop() { if !isClosing { uv_poll_stop(ptr) } }
    override func didClose() { callback = nil }
}
