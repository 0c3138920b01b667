import Testing
@testable import NavServer

/// `--watch-graph`'s timing: a change waits for the directory to be quiet, but a burst is reloaded
/// at most ``GraphWatch/maxWaitMs`` after it began, however long the changes go on.
@Suite struct GraphWatchTests {
    @Test func aBurstWaitsToSettleButNoLongerThanTheMaximum() {
        #expect(GraphWatch.delay(since: 1_000, now: 1_000) == GraphWatch.settleMs, "a change alone: the settling time")
        #expect(GraphWatch.delay(since: 1_000, now: 2_000) == GraphWatch.settleMs, "a burst under way, far from the maximum")
        #expect(GraphWatch.delay(since: 1_000, now: 1_000 + GraphWatch.maxWaitMs - 50) == 50, "cut to the maximum")
        #expect(GraphWatch.delay(since: 1_000, now: 1_000 + GraphWatch.maxWaitMs) == 0)
        #expect(GraphWatch.delay(since: 1_000, now: 60_000) == 0, "changes without pause: reloaded at once")
        #expect(GraphWatch.delay(since: 5_000, now: 1_000) == GraphWatch.settleMs, "a clock that went back counts as no wait")
    }
}
