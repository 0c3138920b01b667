import Foundation
import NavTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The children the tests start (navd, navctl, tools) inherit no descriptor of the test process
/// but their standard ones: the tests run side by side in one process, and a descriptor another
/// test opened (a client's socket, a pipe) kept open in a child would hold off that test's
/// hang-up or end of file until the child exited.
@Suite struct SpawnTests {
    @Test func aChildInheritsOnlyItsStandardDescriptors() throws {
        // A pipe and a socket opened the way the tests open theirs: without close-on-exec.
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let sock = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(sock >= 0)
        defer {
            close(fds[0])
            close(fds[1])
            close(sock)
        }
        // The shell lists its own descriptors (`ls` runs as its child, so /proc/$$ is the shell's).
        let r = try runSpawned(["/bin/sh", "-c", "ls /proc/$$/fd"])
        #expect(r.status == 0)
        let open = Set(r.stdout.split(whereSeparator: \.isNewline).compactMap { Int32($0) })
        #expect(open.isSubset(of: [0, 1, 2]), "the child holds \(open.sorted()); the test's pipe is \(fds), its socket \(sock)")
    }
}
