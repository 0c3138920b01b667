import Testing
@testable import NavServer

/// Unknown tokens per uid: a burst of 20 at once, then one every 100 ms; other uids untouched; the
/// table forgets uids whose guesses are paid for.
@Suite struct TokenGuessesTests {
    @Test func aBurstThenTenASecondPerUid() {
        var g = TokenGuesses()
        for _ in 0..<TokenGuesses.burst {
            #expect(g.wait(7, now: 1_000) == 0)
            g.failed(7, now: 1_000)
        }
        #expect(g.wait(7, now: 1_000) == 100, "the 21st waits one interval")
        #expect(g.wait(8, now: 1_000) == 0, "another uid does not")
        #expect(g.wait(7, now: 1_099) == 1 && g.wait(7, now: 1_100) == 0)
        g.failed(7, now: 1_100)
        #expect(g.wait(7, now: 1_100) == 100, "one more at the rate, then the wait again")
        // Paid for after 2.1 s: the whole burst is back.
        #expect(g.wait(7, now: 3_100) == 0)
    }

    @Test func uidsPaidForAreForgotten() {
        var g = TokenGuesses()
        for uid in UInt32(0)..<63 { g.failed(uid, now: 0) }
        #expect(g.uids == 63)
        g.failed(1_000, now: 10_000)  // the 64th: the table is swept, the others long paid for
        #expect(g.uids == 1)
    }
}
