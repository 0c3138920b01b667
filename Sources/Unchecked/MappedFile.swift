import CChecksum

#if canImport(Glibc)
import Glibc
#endif

/// A file's first `size` bytes mapped shared into memory, written by copying into them: a store
/// there is in the kernel's page cache at once, as a `write()` puts it (it survives the process,
/// `kill -9` included, and reaches the disk with the kernel's writeback), without a system call.
///
/// The file must hold its `size` bytes on the disk beforehand (`posix_fallocate`): a store into a
/// hole of a full disk, or past the end of a file cut shorter meanwhile, is a `SIGBUS`.
///
/// The mapping asks for huge pages (`MADV_HUGEPAGE`): where the file system keeps a file's page
/// cache in large folios (ext4 on recent kernels), the kernel then maps the file 2 MiB at a time,
/// so filling a segment takes a handful of faults instead of one per 4 KiB page, and allocating,
/// zeroing, unmapping and freeing its page cache costs a fraction. Where it cannot (transparent
/// huge pages off, another file system, no contiguous memory), the pages are the usual ones.
public final class MappedFile {
    @usableFromInline let base: UnsafeMutableRawPointer
    public let size: Int
    /// How much of the mapping, from its start, ``giveBack(_:)`` unmapped.
    @usableFromInline private(set) var released = 0

    /// Maps `size` bytes of the file open for reading and writing as `fd`; nil where it cannot (the
    /// error number in `errno`).
    public init?(fd: Int32, size: Int) {
        guard size > 0 else { return nil }
        let p = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
        guard let p, p != MAP_FAILED else { return nil }
        _ = madvise(p, size, MADV_HUGEPAGE)  // a request: refused, the mapping works as it is
        base = p
        self.size = size
    }

    deinit {
        if released < size { munmap(base + released, size - released) }
    }

    /// Unmaps the next `bytes` (a multiple of the page size) of a mapping no longer written, so
    /// that giving back a large one is spread over several calls (unmapping 20 MiB of written pages
    /// takes a millisecond or two); true once all of it is given back.
    public func giveBack(_ bytes: Int) -> Bool {
        let n = Swift.min(bytes, size - released)
        if n > 0 {
            munmap(base + released, n)
            released += n
        }
        return released >= size
    }

    /// Copies `bytes` to `offset`, which the caller checked: `offset + bytes.count <= size`. In
    /// address order (``navd_copy_in_order``): a process killed during the copy leaves what a cut
    /// `write()` leaves, a start of the bytes and zeros after it; `memcpy` may write a long copy's
    /// first bytes last.
    @inlinable @inline(__always)
    public func store(_ bytes: ByteView, at offset: Int) {
        precondition(offset >= released && bytes.count <= size - offset, "a store outside the mapping")
        guard let from = bytes.base else { return }
        navd_copy_in_order(base + offset, from, bytes.count)
    }
}
