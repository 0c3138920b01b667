#if canImport(Glibc)
import Glibc
#endif

/// Byte buffers lent for a short while and given back, one slot of each kind per thread: text that
/// is written, copied out once and forgotten (a commit's changes) reuses the same memory every
/// time instead of allocating a buffer object and its bytes for each commit. Per thread, because
/// sessions of different threads (tests) may commit at once; a slot found empty (its buffer still
/// lent, or never made) makes a new buffer, so a buffer that is never given back costs only itself.
public enum ScratchBuffers {
    /// The kinds of buffer lent, each with a slot of its own.
    public enum Slot: Int, CaseIterable, Sendable {
        case changes, compactChanges
    }

    /// Buffers larger than this are not kept once given back (a commit that wrote a whole tree).
    public static let keptCapacity = 16 * 1024

    /// One key per slot: the slot's buffer, retained, or nil.
    private static let keys: [pthread_key_t] = Slot.allCases.map { _ in
        var key = pthread_key_t()
        let rc = pthread_key_create(&key) { p in
            if let p { Unmanaged<ByteBuffer>.fromOpaque(p).release() }
        }
        precondition(rc == 0, "pthread_key_create failed (\(rc))")
        return key
    }

    /// An empty buffer of `slot`'s kind, taken from this thread's slot (a new one of `capacity`
    /// bytes when the slot is empty).
    @inline(__always)
    public static func borrow(_ slot: Slot, capacity: Int) -> ByteBuffer {
        let key = keys[slot.rawValue]
        guard let p = pthread_getspecific(key) else { return ByteBuffer(capacity: capacity) }
        pthread_setspecific(key, nil)
        return Unmanaged<ByteBuffer>.fromOpaque(p).takeRetainedValue()
    }

    /// Gives `buffer` back to this thread's slot (emptied; dropped when it grew past
    /// ``keptCapacity`` or when the slot was filled meanwhile). Nothing may use it after.
    @inline(__always)
    public static func giveBack(_ buffer: ByteBuffer, to slot: Slot) {
        guard buffer.capacity <= keptCapacity else { return }
        let key = keys[slot.rawValue]
        guard pthread_getspecific(key) == nil else { return }
        buffer.removeAll()
        pthread_setspecific(key, Unmanaged.passRetained(buffer).toOpaque())
    }
}
