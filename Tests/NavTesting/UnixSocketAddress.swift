#if canImport(Glibc)
import Glibc
#endif

/// A Unix socket's address, for tests that bind or connect a descriptor by hand (a listener that
/// accepts only when told, non-blocking connects that fill a queue). A path longer than
/// `sun_path` holds (107 bytes) is cut there, as the tests' paths are not.
public struct UnixSocketAddress {
    private var raw = sockaddr_un()

    public init(_ path: String) {
        raw.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &raw.sun_path) { p in
            for (i, b) in path.utf8.enumerated() where i < p.count - 1 { p[i] = b }
        }
    }

    /// `bind(2)` of `fd` to the address: 0, or -1 with `errno` set.
    public func bind(_ fd: Int32) -> Int32 {
        withUnsafePointer(to: raw) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
    }

    /// `connect(2)` of `fd` to the address: 0, or -1 with `errno` set.
    public func connect(_ fd: Int32) -> Int32 {
        withUnsafePointer(to: raw) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
    }
}
