import Testing
@testable import NavServer
@testable import NavigationCore

/// `--max-data-bytes` shared between uids as the other capacities are: under the reserve anyone
/// adds; in the reserve only a uid whose sessions hold less than an even split; past the ceiling
/// nobody.
@Suite struct DataCeilingShareTests {
    @Test func theReserveGoesToLightUidsAndWhatIsPastTheCeilingToNobody() {
        let pool = DataPool()
        let ceiling = DataCeiling(max: 1000, data: pool)
        let heavy = pool.account(for: 1), light = pool.account(for: 2), other = pool.account(for: 3)
        heavy.add(850)
        light.add(50)
        // 900: the ceiling less its 10 % reserve, which anyone may reach.
        #expect(!ceiling.refuses(1) && !ceiling.refuses(2) && !ceiling.refuses(4))
        other.add(50)
        // 950, in the reserve: those under an even split (950 / 4 = 237) add, the heaviest does not.
        #expect(ceiling.refuses(1) && !ceiling.refuses(2) && !ceiling.refuses(3) && !ceiling.refuses(4) && ceiling.refuses(nil))
        let r = ceiling.refusal("navigate", uid: 1)
        #expect(r.data["limit"] == "--max-data-bytes" && r.data["held"] == 850 && r.data["reserve"] == 100, "\(r)")
        light.add(60)
        // 1,010, past it: nobody.
        #expect(ceiling.refuses(1) && ceiling.refuses(2) && ceiling.refuses(4))
        #expect(ceiling.refusal("navigate", uid: 2).data["reserve"] == nil)
        // One uid alone may take all but the reserve.
        light.add(-110)
        other.add(-50)
        heavy.add(50)
        #expect(!ceiling.refuses(1))
        heavy.add(1)
        #expect(ceiling.refuses(1) && !ceiling.refuses(2))
    }
}
