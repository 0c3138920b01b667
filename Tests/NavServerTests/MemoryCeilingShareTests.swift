import Testing
@testable import NavServer
@testable import NavigationCore

/// `--max-memory` shared between uids as the other capacities are: below the reserve anyone adds;
/// in the reserve only a uid whose sessions hold less than an even split; past the ceiling nobody.
/// The heap is read at most every 100 ms.
@Suite struct MemoryCeilingShareTests {
    final class Heap { var bytes = 0 }

    @Test func theReserveGoesToLightUidsAndThePastCeilingToNobody() {
        let heap = Heap()
        let pool = DataPool()
        var ceiling = MemoryCeiling(max: 1000, data: pool, readHeap: { heap.bytes })
        let heavy = pool.account(for: 1), light = pool.account(for: 2)
        heavy.add(700)
        light.add(50)
        var now: UInt64 = 1
        func refuses(_ uid: UInt32) -> Bool {
            now += 100
            return ceiling.refuses(uid, now: now)
        }
        heap.bytes = 900  // the ceiling less its 10 % reserve: anyone
        #expect(!refuses(1) && !refuses(2) && !refuses(3))
        heap.bytes = 950  // in the reserve: those under an even split (750 / 3 = 250)
        #expect(refuses(1) && !refuses(2) && !refuses(3))
        let r = ceiling.refusal("navigate", uid: 1)
        #expect(r.data["limit"] == "--max-memory" && r.data["held"] == 700 && r.data["reserve"] == 100, "\(r)")
        heap.bytes = 1001  // past it: nobody
        #expect(refuses(1) && refuses(2) && refuses(3))
        #expect(ceiling.refusal("navigate", uid: 2).data["held"] == nil)
        // One uid alone takes all but the reserve.
        light.add(-50)
        heap.bytes = 901
        #expect(refuses(1))
        heap.bytes = 899
        #expect(!refuses(1))
    }

    @Test func theHeapIsReadAtMostEveryHundredMilliseconds() {
        let heap = Heap()
        var reads = 0
        var ceiling = MemoryCeiling(max: 1000, readHeap: { reads += 1; return heap.bytes })
        #expect(!ceiling.refuses(1, now: 5) && reads == 1)
        heap.bytes = 2000
        #expect(!ceiling.refuses(1, now: 104) && reads == 1, "read again within 100 ms")
        #expect(ceiling.refuses(1, now: 105) && reads == 2)
    }
}
