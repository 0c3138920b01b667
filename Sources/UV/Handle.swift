import CLibUV
import Unchecked

/// Base of every libuv handle wrapper. The wrapper keeps itself alive (a retained reference in
/// `handle->data`) from `init` until libuv's close callback, so a handle is closed exactly once and its
/// memory freed exactly once, whoever drops the last Swift reference.
public class Handle {
    let handle: UnsafeMutablePointer<uv_handle_t>
    private let size: Int
    public private(set) var isClosing = false
    private var onClose: (() -> Void)?
    /// What the handle is for, as a stalled callback of it is reported (``StallWatch``).
    public var label: Label

    /// A handle's kind (as libuv names it) and what its owner uses it for.
    public struct Label: Sendable {
        public var kind: String
        public var what: String
        public init(kind: String, what: String) {
            self.kind = kind
            self.what = what
        }
    }

    init(size: Int, kind: String) {
        self.size = size
        label = Label(kind: kind, what: kind)
        let mem = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        mem.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        handle = mem.assumingMemoryBound(to: uv_handle_t.self)
    }

    /// Call once the uv_*_init succeeded: from then on libuv owns a reference until close.
    func retainForLoop() {
        handle.pointee.data = CContext.retain(self)
    }

    /// Closes the handle (idempotent). `then` runs when libuv has released it.
    public func close(then: (() -> Void)? = nil) {
        guard !isClosing else { return }
        isClosing = true
        onClose = then
        uv_close(handle) { h in
            let me = CContext.take(h!.pointee.data, as: Handle.self)
            me.handle.pointee.data = nil
            me.didClose()
            let cb = me.onClose
            me.onClose = nil
            cb?()
        }
    }

    /// Subclasses release what they hold when libuv is done with the handle.
    func didClose() {}

    /// Names what the handle is for (``label``); answers the handle.
    @discardableResult
    public func labelled(_ what: String) -> Self {
        label.what = what
        return self
    }

    /// Runs a callback of the handle, timed when its loop has a ``EventLoop/stallWatch``.
    @inline(__always)
    func timed(_ body: () -> Void) {
        EventLoop.of(handle).timed(self, body)
    }

    /// Whether the handle keeps the loop alive.
    public func unref() { uv_unref(handle) }

    deinit {
        UnsafeMutableRawPointer(handle).deallocate()
    }

    @inline(__always)
    static func from<T: Handle>(_ p: UnsafeMutableRawPointer?, as: T.Type) -> T {
        CContext.peek(p!, as: T.self)
    }

    /// Runs `body` with the handle whose context is `p`, counting no reference for the call: C's
    /// reference keeps it alive until libuv's close callback, which never runs inside another
    /// callback of the same handle.
    @inline(__always)
    static func with<T: Handle, R>(_ p: UnsafeMutableRawPointer?, as: T.Type, _ body: (T) -> R) -> R {
        Unretained<T>(opaque: p!).with(body)
    }
}
