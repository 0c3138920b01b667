import CLibUV

/// A libuv fs-event handle (inotify on Linux): tells when an entry of a watched directory changes
/// (written, created, removed, renamed), by name. An editor's save comes as a burst of events
/// (a temporary file written, renamed over the old, its mode set): callers wait for it to settle.
public final class FileWatch: Handle {
    private var callback: ((String?, Int32) -> Void)?

    public init(loop: EventLoop) throws(UVError) {
        super.init(size: MemoryLayout<uv_fs_event_t>.size, kind: "fs_event")
        let rc = uv_fs_event_init(loop.raw, ptr)
        guard rc == 0 else { throw UVError(rc) }
        retainForLoop()
    }

    private var ptr: UnsafeMutablePointer<uv_fs_event_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_fs_event_t.self) }

    /// Watches `path` (a directory: the entries in it, not below it), calling `callback(name,
    /// status)` for each change: `name` the entry's (nil when the system does not say), `status`
    /// < 0 a libuv error (the watch may have ended: the directory was removed).
    public func start(path: String, _ callback: @escaping (String?, Int32) -> Void) throws(UVError) {
        guard !isClosing else { return }
        self.callback = callback
        let rc = uv_fs_event_start(ptr, { h, name, _, status in
            let me = Handle.from(h!.pointee.data, as: FileWatch.self)
            me.timed { me.callback?(name.map { String(cString: $0) }, status) }
        }, path, 0)
        guard rc == 0 else { throw UVError(rc) }
    }

    public func stop() { if !isClosing { uv_fs_event_stop(ptr) } }

    override func didClose() { callback = nil }
}
