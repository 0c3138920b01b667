import CLibUV
import Glibc
import Unchecked

/// One libuv loop. All handles made from it belong to the thread that runs it; nothing here is
/// thread-safe, by design: navd is single-threaded and callback-driven, like Redis. The two
/// exceptions, ``closeInBackground(_:)`` and ``copyInBackground(_:syncing:_:)``, run C code alone on
/// libuv's thread pool (system calls on descriptors handed to them; nothing of Swift's).
public final class EventLoop {
    let raw: UnsafeMutablePointer<uv_loop_t>
    /// One read buffer shared by every stream: reads are consumed synchronously in their callback.
    @usableFromInline let readBufferSize = 64 * 1024
    @usableFromInline let readBuffer: UnsafeMutablePointer<CChar>
    /// Readable bytes allocated after the read buffer's end, so that anything read can be handed to a
    /// parser that reads a little past its input (simdjson's padding) without being copied first.
    public static let readPadding = 64
    /// Closes handed to the thread pool and not yet done (``closeInBackground(_:)``).
    private let pendingCloses: UnsafeMutablePointer<Int32>

    public init() {
        raw = .allocate(capacity: 1)
        readBuffer = .allocate(capacity: readBufferSize + Self.readPadding)
        pendingCloses = .allocate(capacity: 1)
        pendingCloses.initialize(to: 0)
        uv_loop_init(raw)
        raw.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        navuv_ignore_sigpipe()
        navuv_unblock_signals()
    }

    /// Whether ``close()`` closed the loop.
    private var isClosed = false

    deinit {
        // A loop that was not closed still has handles, and libuv may still reach it (a child's
        // SIGCHLD is sent to every loop that started one): its memory is left as it is.
        guard isClosed else { return }
        raw.deallocate()
        readBuffer.deallocate()
        pendingCloses.deallocate()
    }

    /// Whether `bytes` lie in the shared read buffer (then at least ``readPadding`` readable bytes follow them).
    @inline(__always)
    public func isInReadBuffer(_ bytes: ByteView) -> Bool { isInReadBuffer(bytes.raw) }

    @inlinable
    public func isInReadBuffer(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let p = bytes.baseAddress else { return false }
        let start = UnsafeRawPointer(readBuffer)
        return p >= start && p + bytes.count <= start + readBufferSize
    }

    /// Runs until no active handle is left or ``stop()`` is called.
    public func run() { uv_run(raw, UV_RUN_DEFAULT) }

    /// Whether a descriptor of the loop has an event ready now (input waiting to be read).
    public var hasReadyEvents: Bool { navuv_events_ready(raw) != 0 }

    /// Runs one iteration without blocking (used while shutting down).
    public func runOnce(wait: Bool) { uv_run(raw, wait ? UV_RUN_ONCE : UV_RUN_NOWAIT) }

    /// Makes ``run()`` return after the current iteration.
    public func stop() { uv_stop(raw) }

    /// Closes the loop, once the closes handed to the thread pool are done and the handles closed
    /// last have had their close callbacks (libuv runs them at the end of the next iteration: a loop
    /// stopped in the iteration that closed them still holds them); returns false when handles are
    /// still open (a leak), and the loop's descriptors then stay open with it.
    @discardableResult
    public func close() -> Bool {
        if isClosed { return true }
        while pendingCloses.pointee > 0 { uv_run(raw, UV_RUN_ONCE) }
        var turns = 0
        while navuv_has_closing_handles(raw) != 0 && turns < Self.closingTurns {
            uv_run(raw, UV_RUN_NOWAIT)
            turns += 1
        }
        isClosed = uv_loop_close(raw) == 0
        return isClosed
    }

    /// How many iterations ``close()`` runs for close callbacks that close more handles.
    static let closingTurns = 64

    /// Closes the descriptor `fd` on libuv's thread pool, for a file whose last close is slow: one
    /// already unlinked, whose pages are freed at that close (a large log, milliseconds). The loop
    /// runs until the close is done.
    public func closeInBackground(_ fd: Int32) { navuv_close_in_background(raw, fd, pendingCloses) }

    /// One file of ``copyInBackground(_:syncing:_:)``: the first `length` bytes of the descriptor
    /// `source` (read at their offsets: it may be appended to meanwhile), then zeros up to `size`,
    /// into a new file `destination` (mode 0600; one that exists fails the copy).
    public struct FileCopy {
        public var source: Int32
        public var length: Int
        public var size: Int
        public var destination: String
        public init(source: Int32, length: Int, size: Int, destination: String) {
            self.source = source
            self.length = length
            self.size = size
            self.destination = destination
        }
    }

    /// Why ``copyInBackground(_:syncing:_:)`` failed: the system's error, and the file (nil: the
    /// directory's sync).
    public struct CopyFailure: Error {
        public let error: Int32
        public let file: String?
    }

    private final class CopyDone {
        let files: [FileCopy]
        let done: (Result<Void, CopyFailure>) -> Void
        init(files: [FileCopy], done: @escaping (Result<Void, CopyFailure>) -> Void) {
            self.files = files
            self.done = done
        }
    }

    /// Copies `files` on libuv's thread pool, each synced, then syncs `directory`; calls `done` on
    /// the loop's thread. A copy that fails leaves none of the files. Takes the source descriptors
    /// (closed when the copy is done, or at once when it cannot start). ``close()`` waits for it.
    public func copyInBackground(_ files: [FileCopy], syncing directory: String, _ done: @escaping (Result<Void, CopyFailure>) -> Void) {
        let box = Unmanaged.passRetained(CopyDone(files: files, done: done))
        let sources = files.map(\.source)
        let lengths = files.map { Int64($0.length) }
        let sizes = files.map { Int64($0.size) }
        var paths = files.map { strdup($0.destination) }
        defer { for p in paths { free(p) } }
        let rc = paths.withUnsafeMutableBufferPointer { p in
            p.withMemoryRebound(to: UnsafePointer<CChar>?.self) { dests in
                navuv_copy_in_background(raw, sources, lengths, sizes, dests.baseAddress, Int32(files.count), directory, { ctx, error, failed in
                    let box = Unmanaged<CopyDone>.fromOpaque(ctx!).takeRetainedValue()
                    guard error != 0 else { return box.done(.success(())) }
                    let file = Int(failed) < box.files.count ? box.files[Int(failed)].destination : nil
                    box.done(.failure(CopyFailure(error: error, file: file)))
                }, box.toOpaque(), pendingCloses)
            }
        }
        guard rc != 0 else { return }
        box.release()
        for f in files { Glibc.close(f.source) }
        done(.failure(CopyFailure(error: -rc, file: nil)))
    }

    private final class ZeroDone {
        let done: (Int32) -> Void
        init(_ done: @escaping (Int32) -> Void) { self.done = done }
    }

    /// Makes a new file `path` (mode 0600; one that exists fails) of `size` zero bytes, written
    /// and synced, on libuv's thread pool, where writing and syncing megabytes does not hold the
    /// loop; calls `done` on the loop's thread with 0 or the error number (a file that failed is
    /// removed). ``close()`` waits for it.
    public func zeroFileInBackground(_ path: String, size: Int, _ done: @escaping (Int32) -> Void) {
        let box = Unmanaged.passRetained(ZeroDone(done))
        let rc = navuv_zero_file_in_background(raw, path, Int64(size), { ctx, error in
            Unmanaged<ZeroDone>.fromOpaque(ctx!).takeRetainedValue().done(error)
        }, box.toOpaque(), pendingCloses)
        guard rc != 0 else { return }
        box.release()
        done(-rc)
    }

    /// Writes `size` zero bytes from the start of `fd` and syncs them, as ``zeroFileInBackground(_:size:_:)``
    /// does on the thread pool, on the calling thread (it blocks: for a file needed now). Returns 0 or
    /// the error number.
    public static func writeZeros(fd: Int32, size: Int) -> Int32 {
        navuv_write_zeros(fd, Int64(size))
    }

    /// The types of the handles still open (not closing), as libuv names them (`timer`, `check`,
    /// `idle`, `pipe`…): what keeps ``close()`` from closing the loop (none once it closed).
    public var openHandles: [String] {
        guard !isClosed else { return [] }
        var out = [CChar](repeating: 0, count: 4096)
        let n = navuv_open_handles(raw, &out, Int32(out.count))
        return String(decoding: out.prefix(Int(n)).map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: " ").map(String.init)
    }

    /// What times the callbacks that are not stream reads (``StallWatch``); nil: none is timed.
    public var stallWatch: StallWatch?

    /// The loop a libuv handle belongs to.
    @inline(__always)
    static func of(_ handle: UnsafeMutablePointer<uv_handle_t>) -> EventLoop {
        Unmanaged<EventLoop>.fromOpaque(handle.pointee.loop.pointee.data!).takeUnretainedValue()
    }

    /// The clock as the last timed callback or read of this iteration ended (0: none yet), for the
    /// work after them to start its own timing from without reading the clock again: the next read
    /// of the same poll, navd's iteration end. Its owner sets it back to 0 before the loop polls
    /// again (navd: a ``Prepare`` handle), so that a wait is never counted as work.
    public var clockMark: UInt64 = 0

    /// Runs the callback `body` of `handle`, timed when a ``stallWatch`` is set.
    @inline(__always)
    func timed(_ handle: Handle, _ body: () -> Void) {
        guard let watch = stallWatch else { return body() }
        let start = uv_hrtime()
        body()
        let end = uv_hrtime()
        clockMark = end
        if end &- start >= watch.thresholdNs { watch.report(handle.label, end &- start) }
    }

    /// The loop's cached time in milliseconds.
    public var now: UInt64 { uv_now(raw) }

    /// A monotonic clock in nanoseconds.
    public static var hrtime: UInt64 { uv_hrtime() }

    /// Resident set size of this process in bytes.
    public static var residentMemory: Int {
        var rss = 0
        uv_resident_set_memory(&rss)
        return rss
    }
}

/// Times the callbacks of timers, signals, file watches, polls and child exits: one that held the
/// loop `thresholdNs` or longer is reported with its handle's ``Handle/label`` (a stream's reads
/// are timed by their reader, which knows what they carried). Two clock reads a callback, only
/// while set.
public struct StallWatch {
    public var thresholdNs: UInt64
    /// The handle's label and how long its callback ran, in nanoseconds.
    public var report: (_ label: Handle.Label, _ ns: UInt64) -> Void

    public init(thresholdNs: UInt64, report: @escaping (_ label: Handle.Label, _ ns: UInt64) -> Void) {
        self.thresholdNs = thresholdNs
        self.report = report
    }
}
