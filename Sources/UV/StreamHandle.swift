import CLibUV
import Unchecked

/// A libuv stream (a pipe or a terminal): reads arrive through ``startReading(_:)``; writes are
/// written at once when the kernel takes them, else queued with their bytes copied once, and the
/// total not yet taken is ``queuedBytes``. ``PipeStream`` and ``TTY`` add how they are opened.
public class StreamHandle: Handle {
    public typealias ReadHandler = (ReadEvent) -> Void

    /// What a read callback reports.
    public enum ReadEvent {
        /// Bytes read, valid until the handler returns.
        case data(ByteView)
        case end
        case error(UVError)
    }

    let loop: EventLoop
    private var onRead: ReadHandler?
    /// Called when all queued writes have been taken by the kernel (never once the stream is closing).
    public var onDrain: (() -> Void)?

    init(loop: EventLoop, size: Int) {
        self.loop = loop
        super.init(size: size, kind: "stream")
    }

    var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self) }

    /// Reads into the loop's shared buffer; `handler` consumes each chunk before it returns.
    public func startReading(_ handler: @escaping ReadHandler) {
        guard !isClosing else { return }
        onRead = handler
        uv_read_start(stream, { h, suggested, buf in
            Handle.with(h!.pointee.data, as: StreamHandle.self) { me in
                buf!.pointee = uv_buf_init(me.loop.readBuffer, UInt32(me.loop.readBufferSize))
            }
        }, { s, nread, buf in
            Handle.with(s!.pointee.data, as: StreamHandle.self) { me in
                if nread > 0 {
                    me.onRead?(.data(ByteView(UnsafeRawBufferPointer(start: buf!.pointee.base, count: nread))))
                } else if nread == Int(UV_EOF.rawValue) {
                    me.onRead?(.end)
                } else if nread < 0 {
                    me.onRead?(.error(UVError(Int32(nread))))
                }
            }
        })
    }

    /// Stops reading (back-pressure); ``resumeReading()`` starts again with the same handler.
    public func pauseReading() { if !isClosing { uv_read_stop(stream) } }

    public func resumeReading() {
        if let h = onRead { startReading(h) }
    }

    /// Bytes handed to libuv that the kernel has not taken yet.
    public final var queuedBytes: Int { isClosing ? 0 : stream.pointee.write_queue_size }

    /// Writes `bytes`: as much as the socket takes at once, the rest queued (copied once).
    public func write(_ bytes: ByteView) {
        write(bytes, ByteView(UnsafeRawBufferPointer(start: nil, count: 0)))
    }

    /// Writes `first` then `second` (one `writev`): as much as the socket takes at once, the rest
    /// queued (copied once, into one buffer).
    public func write(_ firstView: ByteView, _ secondView: ByteView) {
        let first = firstView.raw, second = secondView.raw
        let total = first.count + second.count
        guard !isClosing, total > 0 else { return }
        var offset = 0
        if stream.pointee.write_queue_size == 0 {
            var bufs = (uv_buf_init(UnsafeMutableRawPointer(mutating: first.baseAddress)?.assumingMemoryBound(to: CChar.self), UInt32(first.count)),
                        uv_buf_init(UnsafeMutableRawPointer(mutating: second.baseAddress)?.assumingMemoryBound(to: CChar.self), UInt32(second.count)))
            let n = withUnsafeMutableBytes(of: &bufs) { raw -> Int32 in
                let b = raw.baseAddress!.assumingMemoryBound(to: uv_buf_t.self)
                // Empty parts are left out: a zero-length iovec is legal but pointless.
                if first.count == 0 { return uv_try_write(stream, b + 1, 1) }
                return uv_try_write(stream, b, second.count == 0 ? 1 : 2)
            }
            if n == Int32(total) { return }
            if n > 0 { offset = Int(n) }
        }
        let remaining = total - offset
        let mem = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<uv_write_t>.size + remaining, alignment: 16)
        let req = mem.assumingMemoryBound(to: uv_write_t.self)
        let data = mem + MemoryLayout<uv_write_t>.size
        // Copy what the kernel did not take: the rest of `first` (if any), then of `second`.
        var at = 0
        if offset < first.count {
            data.copyMemory(from: first.baseAddress! + offset, byteCount: first.count - offset)
            at = first.count - offset
        }
        let secondFrom = max(0, offset - first.count)
        if second.count > secondFrom {
            (data + at).copyMemory(from: second.baseAddress! + secondFrom, byteCount: second.count - secondFrom)
        }
        var buf = uv_buf_init(data.assumingMemoryBound(to: CChar.self), UInt32(remaining))
        let rc = uv_write(req, stream, &buf, 1) { req, status in
            let s = req!.pointee.handle!
            UnsafeMutableRawPointer(req!).deallocate()
            guard let d = s.pointee.data else { return }
            let me = Handle.from(d, as: StreamHandle.self)
            // Writes cancelled by a close do not drain: the owner may be gone with the close.
            if s.pointee.write_queue_size == 0 && !me.isClosing { me.onDrain?() }
        }
        if rc < 0 { mem.deallocate() }
    }

    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write(ByteView($0)) }
    }

    /// Shuts the write side down once queued writes are flushed, then closes the handle.
    public func shutdownAndClose(then: (() -> Void)? = nil) {
        shutdownWriting { [self] in close(then: then) }
    }

    /// Shuts the write side down once queued writes are flushed (the peer reads its end) and keeps
    /// reading: for a close that lets the peer read everything sent before it (closing with unread
    /// bytes would reset the connection and could lose them). `then` runs once the shutdown is done
    /// (or could not be made), unless the stream was closed meanwhile.
    public func shutdownWriting(then: (() -> Void)? = nil) {
        guard !isClosing else { return }
        let req = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        let box = ShutdownBox(then)
        req.pointee.data = CContext.retain(box)
        let rc = uv_shutdown(req, stream) { req, _ in
            let box = CContext.take(req!.pointee.data, as: ShutdownBox.self)
            let s = req!.pointee.handle!
            req!.deallocate()
            if s.pointee.data != nil { box.then?() }
        }
        if rc < 0 {
            CContext.release(req.pointee.data, as: ShutdownBox.self)
            req.deallocate()
            then?()
        }
    }

    private final class ShutdownBox {
        let then: (() -> Void)?
        init(_ then: (() -> Void)?) { self.then = then }
    }

    override func didClose() {
        onRead = nil
        onDrain = nil
    }
}
