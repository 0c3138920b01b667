import Foundation
import Testing

@testable import JSON

@Suite struct ScratchBuffersTests {
    @Test func aBufferNobodyHoldsIsLentAgainEmpty() {
        // Each test runs on a thread of its own pool; the slot is per thread, so whatever is there first is left.
        var a: ByteBuffer? = ScratchBuffers.borrow(.changes, capacity: 64)
        a!.append(contentsOf: Array("[{\"op\":\"push\"}]".utf8))
        let first = ObjectIdentifier(a!)
        a = nil
        let b = ScratchBuffers.borrow(.changes, capacity: 64)
        #expect(ObjectIdentifier(b) == first)
        #expect(b.count == 0)
    }

    @Test func textStillHeldKeepsItsBytes() {
        let a = ScratchBuffers.borrow(.changes, capacity: 64)
        a.append(contentsOf: Array("[1]".utf8))
        let held = LentText(a)
        // Held: the next borrower gets a buffer of its own, and writing into it leaves the text as it was.
        let b = ScratchBuffers.borrow(.changes, capacity: 64)
        #expect(b !== a)
        b.append(contentsOf: Array("[2,3]".utf8))
        #expect(held.bytes == Array("[1]".utf8))
        // The slot now keeps the new buffer: lent again once it is dropped, never the held one.
        let bId = ObjectIdentifier(b)
        _ = consume b
        let c = ScratchBuffers.borrow(.changes, capacity: 64)
        #expect(ObjectIdentifier(c) == bId)
        #expect(held.bytes == Array("[1]".utf8))
    }

    @Test func slotsAreSeparateAndLargeBuffersAreNotLentAgain() {
        var full: ByteBuffer? = ScratchBuffers.borrow(.changes, capacity: 64)
        var compact: ByteBuffer? = ScratchBuffers.borrow(.compactChanges, capacity: 64)
        #expect(full !== compact)
        let fullId = ObjectIdentifier(full!), compactId = ObjectIdentifier(compact!)
        full = nil
        compact = nil
        #expect(ObjectIdentifier(ScratchBuffers.borrow(.compactChanges, capacity: 64)) == compactId)
        #expect(ObjectIdentifier(ScratchBuffers.borrow(.changes, capacity: 64)) == fullId)
        var big: ByteBuffer? = ScratchBuffers.borrow(.changes, capacity: 64)
        big!.reserve(ScratchBuffers.keptCapacity + 1)
        weak let bigRef = big
        big = nil
        #expect(bigRef != nil)  // kept by the slot until the next borrow
        let next = ScratchBuffers.borrow(.changes, capacity: 64)
        #expect(bigRef == nil)  // dropped by the slot, not lent again
        #expect(next.capacity <= ScratchBuffers.keptCapacity)
    }

    @Test func eachThreadHasItsOwnSlot() {
        let mine = ScratchBuffers.borrow(.changes, capacity: 64)
        let mineId = ObjectIdentifier(mine)
        _ = consume mine
        // The other thread's borrow cannot take this thread's buffer, free as it is.
        let other = Thread.runAndWait { ObjectIdentifier(ScratchBuffers.borrow(.changes, capacity: 64)) }
        #expect(other != mineId)
        #expect(ObjectIdentifier(ScratchBuffers.borrow(.changes, capacity: 64)) == mineId)
    }

    /// A thread's slots keep their buffers while it runs and release them when it ends (awaited with
    /// pthread_join: the key's destructor has run by then).
    @Test func aThreadsBuffersGoWhenItEnds() {
        final class Seen: @unchecked Sendable {
            weak var full: ByteBuffer?
            weak var compact: ByteBuffer?
            var keptWhileRunning = false
        }
        let seen = Seen()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { p in
            let seen = Unmanaged<Seen>.fromOpaque(p!).takeRetainedValue()
            seen.full = ScratchBuffers.borrow(.changes, capacity: 64)
            seen.compact = ScratchBuffers.borrow(.compactChanges, capacity: 64)
            seen.keptWhileRunning = seen.full != nil && seen.compact != nil  // the slots' references
            return nil
        }, Unmanaged.passRetained(seen).toOpaque())
        #expect(rc == 0)
        pthread_join(thread, nil)
        #expect(seen.keptWhileRunning)
        #expect(seen.full == nil && seen.compact == nil)
    }
}

extension Thread {
    /// Runs `body` on a new thread and waits for its result.
    fileprivate static func runAndWait<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: T?
        let t = Thread {
            result = body()
            done.signal()
        }
        t.start()
        done.wait()
        return result!
    }
}
