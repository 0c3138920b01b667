#if canImport(Glibc)
import Glibc
#endif

/// systemd's readiness notification (sd_notify(3)), without libsystemd: when the service manager
/// set `NOTIFY_SOCKET` (a path, or `@` for an abstract address), nav-web tells it `READY=1` once
/// it listens, so that its unit (`Type=notify`) counts as started only then, and a start that fails
/// (the port taken) fails `systemctl start`. The variable is taken out of the environment, so that
/// the processes nav-web starts (`navd graph`) do not speak for it.
final class ServiceManager: Sendable {
    private let address: [UInt8]

    /// The manager's socket, taken from the environment; nil when nav-web runs without one.
    static func take() -> ServiceManager? {
        guard let raw = getenv("NOTIFY_SOCKET") else { return nil }
        var bytes = Array(String(cString: raw).utf8)
        unsetenv("NOTIFY_SOCKET")
        guard !bytes.isEmpty, bytes[0] == UInt8(ascii: "/") || bytes[0] == UInt8(ascii: "@") else { return nil }
        if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }
        guard bytes.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else { return nil }
        return ServiceManager(address: bytes)
    }

    private init(address: [UInt8]) { self.address = address }

    /// Sends `state` (`READY=1`, `STATUS=…`, one assignment a line) in one datagram; a manager
    /// that is gone is not an error of nav-web's.
    func notify(_ state: String) {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: address) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + address.count)
        let bytes = Array(state.utf8)
        _ = withUnsafePointer(to: &addr) { a in
            a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), $0, length) }
        }
    }
}
