import RPC
#if canImport(Glibc)
import Glibc
#endif

/// What the machine lets navd have, read at start: open descriptors (after raising the soft limit
/// to the hard one, as Redis does for `maxclients`), processes of its uid and memory. The defaults
/// of `--max-connections`, `--max-children` and `--max-data-bytes` are sized from them (``ServerConfiguration/sizedToMachine(_:)``).
public struct MachineLimits: Sendable, Equatable {
    /// `RLIMIT_NOFILE` (soft, once raised).
    public var descriptors: Int
    /// `RLIMIT_NPROC` (soft); nil when unlimited.
    public var processes: Int?
    /// The memory navd may use, in bytes: the machine's, or its cgroup's `memory.max` when lower.
    public var memory: Int

    public init(descriptors: Int, processes: Int?, memory: Int = 1 << 34) {
        self.descriptors = descriptors
        self.processes = processes
        self.memory = memory
    }

    /// Physical memory, or the cgroup's limit (v2 `memory.max`, v1 `memory.limit_in_bytes`) when it
    /// is lower, as a container sees it.
    static func memoryAvailable() -> Int {
        let pages = sysconf(Int32(_SC_PHYS_PAGES)), size = sysconf(Int32(_SC_PAGESIZE))
        var memory = pages > 0 && size > 0 ? pages * size : 1 << 34
        for file in ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"] {
            if let limit = number(in: file), limit > 0 { memory = min(memory, limit) }  // "max": no limit
        }
        return memory
    }

    /// The kernel's ceiling on a listening socket's queue of connections not yet accepted
    /// (`net.core.somaxconn`, which `listen()` silently applies), or nil when it cannot be read.
    public static func listenQueueCeiling() -> Int? {
        number(in: "/proc/sys/net/core/somaxconn")
    }

    /// The decimal number a kernel file (`/proc`, `/sys`) starts with, or nil when it cannot be
    /// read or starts with something else (cgroup's `max`).
    static func number(in file: String) -> Int? {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let (bytes, _) = FileBytes.read(fd, size: 64)
        let digits = bytes.prefix { $0 >= 0x30 && $0 <= 0x39 }
        guard !digits.isEmpty, digits.count < 19 else { return nil }
        return Int(String(decoding: digits, as: UTF8.self))
    }

    /// Raises the soft descriptor limit to the hard one (at most 1,048,576), then reads both limits.
    public static func read() -> MachineLimits {
        var lim = rlimit()
        let nofile = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        if getrlimit(nofile, &lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = min(lim.rlim_max, 1 << 20)
            setrlimit(nofile, &lim)
        }
        let descriptors = getrlimit(nofile, &lim) == 0 ? Int(clamping: min(lim.rlim_cur, 1 << 30)) : 1024
        var processes: Int?
        if getrlimit(__rlimit_resource_t(__RLIMIT_NPROC.rawValue), &lim) == 0 && lim.rlim_cur != rlim_t.max {
            processes = Int(clamping: min(lim.rlim_cur, 1 << 30))
        }
        return MachineLimits(descriptors: descriptors, processes: processes, memory: memoryAvailable())
    }

    /// Descriptors navd keeps for itself whatever the clients do: the listening socket, the state
    /// file and its log, the loop's own, logging.
    public static let ownDescriptors = 64
    /// Descriptors a running command precondition holds in navd: its stdin, stdout and stderr pipes.
    public static let descriptorsPerChild = 3
}

extension ServerConfiguration {
    /// The defaults sized to `machine`: `--max-children` at most a quarter of the uid's processes and
    /// an eighth of the descriptors (256 at most), `--max-connections` what is left of the
    /// descriptors after those children's pipes and navd's own (65,536 at most). `children` and
    /// `connections` are what the operator gave, kept as they are.
    /// `--max-data-bytes` is a quarter of the machine's memory (or its cgroup's) unless `data` is given.
    public mutating func sizedToMachine(_ machine: MachineLimits, children: Int? = nil, connections: Int? = nil, data: Int? = nil) {
        maxDataBytes = data ?? max(Limit.maxDataBytes.least, machine.memory / 4)
        var c = min(256, max(4, machine.descriptors / 8))
        if let p = machine.processes { c = min(c, max(1, p / 4)) }
        maxChildren = children ?? c
        let left = machine.descriptors - MachineLimits.ownDescriptors - MachineLimits.descriptorsPerChild * maxChildren
        maxConnections = connections ?? min(65_536, max(16, left))
    }
}

extension ServerConfiguration {
    /// The part of every shared capacity kept for uids other than the heaviest (``FairShare``).
    public static var reservePercent: Int { FairShare.reservePercent }
}
