import CThreadSlots

#if canImport(Glibc)
import Glibc
#endif

/// Byte buffers lent again once nobody holds them, one slot of each kind per thread: text that is
/// written, read a little while and dropped (a commit's changes, held by the commit until it is
/// published) reuses the same memory every time instead of allocating and copying for each commit.
///
/// A slot keeps the buffer it last lent. ``borrow(_:capacity:)`` lends it again, emptied, only when
/// the slot's reference is the only one left: a holder that keeps the text (a commit kept for
/// later) keeps its bytes, and the slot takes a new buffer instead. So nothing is given back by
/// hand and no holder ever sees its text change. Per thread, because sessions of different threads
/// (tests) may commit at once.
public enum ScratchBuffers {
    /// The kinds of buffer lent, each with a slot of its own.
    public enum Slot: Int, CaseIterable, Sendable {
        case changes, compactChanges
        /// Text written to be kept as a ``WrittenJSON`` (copied out at once).
        case written
    }

    /// Buffers larger than this are not lent again (a commit that wrote a whole tree): the slot
    /// takes a new one at the next borrow.
    public static let keptCapacity = 16 * 1024

    /// Each thread's slots are a thread-local array (`navd_thread_slots`: a slot's buffer, retained,
    /// or nil). This key only has a thread that borrowed release its buffers when it ends.
    private static let threadEnd: pthread_key_t = {
        precondition(Slot.allCases.count <= Int(NAVD_THREAD_SLOTS), "more scratch slots than navd_thread_slots has")
        var key = pthread_key_t()
        let rc = pthread_key_create(&key) { p in
            guard let slots = p?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self) else { return }
            for i in Slot.allCases.indices {
                if let b = slots[i] { Unmanaged<ByteBuffer>.fromOpaque(b).release() }
                slots[i] = nil
            }
        }
        precondition(rc == 0, "pthread_key_create failed (\(rc))")
        return key
    }()

    /// An empty buffer of `slot`'s kind: this thread's slot's buffer when nobody else holds it and
    /// it is at most ``keptCapacity`` bytes; otherwise a new one of `capacity` bytes, which the
    /// slot keeps from now on (its old buffer stays with whoever holds it).
    @inline(__always)
    public static func borrow(_ slot: Slot, capacity: Int) -> ByteBuffer {
        let slots = navd_thread_slots()!
        if let p = slots[slot.rawValue] {
            // The slot's own reference, taken for the check: unique means no text lent from it lives.
            var kept = Unmanaged<ByteBuffer>.fromOpaque(p).takeRetainedValue()
            if isKnownUniquelyReferenced(&kept) && kept.capacity <= keptCapacity {
                kept.removeAll()
                _ = Unmanaged.passRetained(kept)  // the slot's reference again; the same pointer stays in it
                return kept
            }
        } else if pthread_getspecific(threadEnd) == nil {
            pthread_setspecific(threadEnd, slots)  // this thread's first borrow
        }
        let fresh = ByteBuffer(capacity: capacity)
        slots[slot.rawValue] = Unmanaged.passRetained(fresh).toOpaque()
        return fresh
    }
}

/// Text written into a lent buffer (``ScratchBuffers``), held without a copy: as long as a
/// `LentText` lives, its bytes stay as they are (the buffer is lent again only when nothing else
/// holds it). Not for keeping: read it, or copy its ``bytes``.
public struct LentText: JSONEncodable {
    @usableFromInline let buffer: ByteBuffer

    /// The bytes written into `buffer` so far; nothing may write into it after.
    @inlinable
    public init(_ buffer: ByteBuffer) { self.buffer = buffer }

    public var count: Int { buffer.count }

    /// The bytes, valid only inside `body`.
    @inlinable @inline(__always)
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try buffer.withUnsafeBytes(body)
    }

    /// A copy of the bytes.
    public var bytes: [UInt8] { buffer.bytes }

    @inlinable @inline(__always)
    public func encode(into w: inout JSONWriter) {
        buffer.withUnsafeBytes { w.buffer.append(contentsOf: $0) }
    }
}
