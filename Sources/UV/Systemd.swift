import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// systemd's two conventions for daemons, read and spoken without libsystemd: a listening socket
/// the service manager made and passed in (socket activation, `sd_listen_fds(3)`: clients connect
/// while navd starts or restarts, and wait in the socket's queue), and the daemon's state told to
/// it (`sd_notify(3)`: ready, reloading, stopping, and the watchdog's pings).
public enum Systemd {
    /// The descriptor a passed socket has: the first after standard input, output and error.
    public static let firstPassedDescriptor: Int32 = 3

    /// A listening Unix stream socket bound to a path, passed by the service manager.
    public struct PassedSocket: Sendable, Equatable {
        public let descriptor: Int32
        /// The path it is bound to, as the service manager bound it (`ListenStream=`).
        public let path: String
    }

    /// Why the sockets passed cannot be served; the message says what the unit should say instead.
    public struct PassedSocketError: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// The socket passed to this process, or nil when none was: `LISTEN_PID` unset or naming
    /// another process (a variable inherited from a parent), or `LISTEN_FDS` 0. navd serves one
    /// socket: anything else passed (several sockets, a TCP or datagram socket, one that does not
    /// listen, an abstract address) is an error naming it.
    public static func passedSocket(environment: [String: String], pid: Int32 = getpid()) throws(PassedSocketError) -> PassedSocket? {
        guard let listenPid = environment["LISTEN_PID"], Int32(listenPid) == pid else { return nil }
        guard let text = environment["LISTEN_FDS"], let count = Int(text), count >= 0 else {
            throw PassedSocketError(description: "LISTEN_FDS is '\(environment["LISTEN_FDS"] ?? "")', not a number of sockets passed")
        }
        if count == 0 { return nil }
        guard count == 1 else {
            throw PassedSocketError(description: "the service manager passed \(count) sockets (LISTEN_FDS=\(count)\(environment["LISTEN_FDNAMES"].map { ", LISTEN_FDNAMES=\($0)" } ?? "")); navd listens on one: give its .socket unit one ListenStream= with a path")
        }
        let fd = firstPassedDescriptor
        var domain: Int32 = 0, type: Int32 = 0, listening: Int32 = 0, abstract: Int32 = 0
        var path = [CChar](repeating: 0, count: 4096)
        let rc = navuv_describe_socket(fd, &domain, &type, &listening, &path, Int32(path.count), &abstract)
        if rc < 0 {
            throw PassedSocketError(description: "the service manager's descriptor \(fd) (LISTEN_FDS=1) is not a socket navd can read: \(String(cString: strerror(-rc)))")
        }
        guard domain == AF_UNIX else {
            throw PassedSocketError(description: "the socket passed on descriptor \(fd) is not a Unix-domain socket (domain \(domain)); navd serves a socket file only: write ListenStream=/path/to/navd.sock (e.g. %t/navd.sock)")
        }
        guard type == Int32(SOCK_STREAM.rawValue) else {
            throw PassedSocketError(description: "the Unix socket passed on descriptor \(fd) is not a stream socket (type \(type)); navd speaks over a stream: use ListenStream=, not ListenDatagram= or ListenSequentialPacket=")
        }
        guard listening != 0 else {
            throw PassedSocketError(description: "the Unix socket passed on descriptor \(fd) does not listen (a connection, as Accept=yes passes): navd accepts its clients itself, so its .socket unit keeps Accept=no")
        }
        let bound = path.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        guard abstract == 0, !bound.isEmpty else {
            throw PassedSocketError(description: "the Unix socket passed on descriptor \(fd) is \(abstract != 0 ? "bound to an abstract address" : "not bound to a path"); navd's clients find it by its file: write ListenStream=/path/to/navd.sock")
        }
        return PassedSocket(descriptor: fd, path: bound)
    }

    /// Removes the socket-activation variables, as `sd_listen_fds(unset_environment: 1)` does: they
    /// were for this process alone.
    public static func forgetPassedSocketVariables() {
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
    }

    /// Tells the service manager about navd's state over `NOTIFY_SOCKET` (a service of
    /// `Type=notify`). Every message is one datagram, sent without waiting; a manager that is gone
    /// is not navd's fault, so a failed send is only reported to the caller.
    public struct Notifier: Sendable {
        /// The socket's address: a path, or an abstract address written with a leading `@`.
        public let address: String

        /// The manager's socket from `NOTIFY_SOCKET`, or nil when navd was not started by one that
        /// listens.
        public init?(environment: [String: String]) {
            guard let a = environment["NOTIFY_SOCKET"], !a.isEmpty else { return nil }
            address = a
        }

        /// Sends `state`: newline-separated `NAME=value` assignments (`READY=1`, `STATUS=…`).
        /// Returns the error number of a failed send, or nil.
        @discardableResult
        public func send(_ state: String) -> Int32? {
            let rc = state.withCString { navuv_notify(address, $0, strlen($0)) }
            return rc < 0 ? -rc : nil
        }

        /// How often to send `WATCHDOG=1`, in milliseconds: half the `WATCHDOG_USEC` the manager
        /// asks for (`WatchdogSec=`), when `WATCHDOG_PID` is unset or names this process; nil when
        /// no watchdog is asked for.
        public static func watchdogInterval(environment: [String: String], pid: Int32 = getpid()) -> UInt64? {
            guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
            if let p = environment["WATCHDOG_PID"], Int32(p) != pid { return nil }
            return max(1, usec / 2_000)
        }
    }
}

extension PipeListener {
    /// A listener on a socket that already listens (one a service manager passed): libuv takes
    /// the descriptor over, and ``listen(backlog:_:)`` starts accepting from its queue.
    public convenience init(loop: EventLoop, adopting descriptor: Int32) throws(UVError) {
        self.init(loop: loop)
        let rc = uv_pipe_open(pipe, descriptor)
        if rc < 0 {
            close()
            throw UVError(rc)
        }
    }
}
