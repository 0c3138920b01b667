import Foundation
import Testing

@testable import JSON

@Suite struct ScratchBuffersTests {
    @Test func aBufferGivenBackIsLentAgainEmpty() {
        // Each test runs on a thread of its own pool; the slot is per thread, so take what is there first.
        _ = ScratchBuffers.borrow(.changes, capacity: 64)
        let a = ScratchBuffers.borrow(.changes, capacity: 64)
        a.append(contentsOf: Array("[{\"op\":\"push\"}]".utf8))
        ScratchBuffers.giveBack(a, to: .changes)
        let b = ScratchBuffers.borrow(.changes, capacity: 64)
        #expect(b === a)
        #expect(b.count == 0)
        // Lent out: the next borrower gets a buffer of its own.
        let c = ScratchBuffers.borrow(.changes, capacity: 64)
        #expect(c !== b)
        c.append(UInt8(ascii: "x"))
        #expect(b.count == 0)
    }

    @Test func slotsAreSeparateAndLargeBuffersAreNotKept() {
        let full = ScratchBuffers.borrow(.changes, capacity: 64)
        let compact = ScratchBuffers.borrow(.compactChanges, capacity: 64)
        ScratchBuffers.giveBack(full, to: .changes)
        ScratchBuffers.giveBack(compact, to: .compactChanges)
        #expect(ScratchBuffers.borrow(.compactChanges, capacity: 64) === compact)
        #expect(ScratchBuffers.borrow(.changes, capacity: 64) === full)
        let big = ScratchBuffers.borrow(.changes, capacity: 64)
        big.reserve(ScratchBuffers.keptCapacity + 1)
        ScratchBuffers.giveBack(big, to: .changes)
        #expect(ScratchBuffers.borrow(.changes, capacity: 64) !== big)
    }

    @Test func eachThreadHasItsOwnSlot() {
        let mine = ScratchBuffers.borrow(.changes, capacity: 64)
        ScratchBuffers.giveBack(mine, to: .changes)
        let other = Thread.runAndWait { ObjectIdentifier(ScratchBuffers.borrow(.changes, capacity: 64)) }
        #expect(other != ObjectIdentifier(mine))
        #expect(ScratchBuffers.borrow(.changes, capacity: 64) === mine)
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
