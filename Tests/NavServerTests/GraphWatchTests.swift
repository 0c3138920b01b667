import Foundation
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
    /// The symbolic links on the graph's path, each watched in the directory that holds it: a
    /// relative path is taken from the working directory, and no more than ``GraphWatch/maxLinks``.
    @Test func theLinksOnTheGraphsPathAreFound() throws {
        var template = Array("/tmp/navd-test-XXXXXX".utf8CString)
        let root = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { _ = try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/releases/2/graph", withIntermediateDirectories: true)
        #expect(symlink("releases/2", root + "/current") == 0)
        #expect(GraphWatch.links(on: root + "/current/graph", cwd: "/").map { "\($0.directory) \($0.name)" } == ["\(root) current"])
        #expect(GraphWatch.links(on: "./current/./graph", cwd: root).map { "\($0.directory) \($0.name)" } == ["\(root) current"])
        #expect(GraphWatch.links(on: root + "/releases/2/graph", cwd: "/").isEmpty)
        var path = root
        for i in 0..<10 {
            #expect(symlink(".", path + "/l\(i)") == 0)
            path += "/l\(i)"
        }
        #expect(GraphWatch.links(on: path, cwd: "/").count == GraphWatch.maxLinks)
    }
}
