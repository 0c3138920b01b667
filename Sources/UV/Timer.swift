import CLibUV

/// A libuv timer.
public final class Timer: Handle {
    private var callback: (() -> Void)?

    public init(loop: EventLoop) {
        super.init(size: MemoryLayout<uv_timer_t>.size, kind: "timer")
        uv_timer_init(loop.raw, ptr)
        retainForLoop()
    }

    private var ptr: UnsafeMutablePointer<uv_timer_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_timer_t.self) }

    /// Fires `callback` after `milliseconds`, then every `repeat` milliseconds if non-zero.
    public func start(milliseconds: UInt64, repeat rep: UInt64 = 0, _ callback: @escaping () -> Void) {
        guard !isClosing else { return }
        self.callback = callback
        uv_timer_start(ptr, { t in
            let me = Handle.from(t!.pointee.data, as: Timer.self)
            me.timed { me.callback?() }
        }, milliseconds, rep)
    }

    public func stop() { if !isClosing { uv_timer_stop(ptr) } }

    override func didClose() { callback = nil }
}

/// A libuv check handle: runs its callback once per loop iteration, right after I/O was polled.
/// navd uses it to flush every connection's coalesced output once per iteration.
public final class Check: Handle {
    private var callback: (() -> Void)?

    public init(loop: EventLoop) {
        super.init(size: MemoryLayout<uv_check_t>.size, kind: "check")
        uv_check_init(loop.raw, ptr)
        retainForLoop()
    }

    private var ptr: UnsafeMutablePointer<uv_check_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_check_t.self) }

    /// Runs `callback` once per iteration; `timed`: as other handles' callbacks are when the loop
    /// has a ``EventLoop/stallWatch`` (false: its owner times what it should, as navd's flush does,
    /// whose reads of held input are timed as reads).
    public func start(timed: Bool = true, _ callback: @escaping () -> Void) {
        self.callback = callback
        if timed {
            uv_check_start(ptr) { c in
                let me = Handle.from(c!.pointee.data, as: Check.self)
                me.timed { me.callback?() }
            }
        } else {
            uv_check_start(ptr) { c in
                Handle.from(c!.pointee.data, as: Check.self).callback?()
            }
        }
    }

    public func stop() { if !isClosing { uv_check_stop(ptr) } }
    override func didClose() { callback = nil }
}

/// A libuv prepare handle: runs its callback once per iteration, right before the loop polls for
/// I/O (where it may wait). navd uses it to forget the loop's ``EventLoop/clockMark`` there, so
/// that a mark seen while I/O is handled was made after the wait.
public final class Prepare: Handle {
    private var callback: (() -> Void)?

    public init(loop: EventLoop) {
        super.init(size: MemoryLayout<uv_prepare_t>.size, kind: "prepare")
        uv_prepare_init(loop.raw, ptr)
        retainForLoop()
    }

    private var ptr: UnsafeMutablePointer<uv_prepare_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_prepare_t.self) }

    /// Runs `callback` once per iteration (not timed: it is for bookkeeping that costs nothing).
    public func start(_ callback: @escaping () -> Void) {
        self.callback = callback
        uv_prepare_start(ptr) { p in
            Handle.from(p!.pointee.data, as: Prepare.self).callback?()
        }
    }

    public func stop() { if !isClosing { uv_prepare_stop(ptr) } }
    override func didClose() { callback = nil }
}

/// A libuv idle handle: while started, the loop polls without blocking.
public final class Idle: Handle {
    public init(loop: EventLoop) {
        super.init(size: MemoryLayout<uv_idle_t>.size, kind: "idle")
        uv_idle_init(loop.raw, ptr)
        retainForLoop()
    }
    private var ptr: UnsafeMutablePointer<uv_idle_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_idle_t.self) }
    public func start() { uv_idle_start(ptr) { _ in } }
    public func stop() { if !isClosing { uv_idle_stop(ptr) } }
}

/// A libuv signal watcher.
public final class Signal: Handle {
    private var callback: ((Int32) -> Void)?

    public init(loop: EventLoop) {
        super.init(size: MemoryLayout<uv_signal_t>.size, kind: "signal")
        uv_signal_init(loop.raw, ptr)
        retainForLoop()
    }

    private var ptr: UnsafeMutablePointer<uv_signal_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_signal_t.self) }

    public func start(signal: Int32, _ callback: @escaping (Int32) -> Void) {
        self.callback = callback
        uv_signal_start(ptr, { s, signum in
            let me = Handle.from(s!.pointee.data, as: Signal.self)
            me.timed { me.callback?(signum) }
        }, signal)
    }

    override func didClose() { callback = nil }
}
