#if canImport(Glibc)
import Glibc
#endif

/// The bytes of an open file, read to its end: the log scan's and the policy file's reading.
enum FileBytes {
    /// Up to `size` bytes of `fd` from its start (`pread`, so the offset is left as it was), read
    /// into the array's own storage (no zeros written first, no copy after: a log is made in advance
    /// at its full size, mostly zeros); fewer at the file's end. `failure` is the errno of a read
    /// that failed, else 0.
    static func read(_ fd: Int32, size: Int) -> (bytes: [UInt8], failure: Int32) {
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            var off = 0
            while off < size {
                let n = pread(fd, buffer.baseAddress! + off, size - off, off_t(off))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    break
                }
                if n == 0 { break }
                off += n
            }
            initialized = off
        }
        return (bytes, failure)
    }
}
