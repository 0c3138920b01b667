import Unchecked

#if canImport(Glibc)
import Glibc
#endif

/// One log file read whole at start: its records, and how it ends. A log ends cleanly (zeros or
/// the file's end after its last record), or with a **torn** record — the last write a crash cut
/// short: the record's own bytes end in zeros or at the file's end, and no whole record follows —
/// or it is **damaged**: a record that cannot be read with whole records after it, a record whose
/// bytes were all written yet fail their checksums, zeros where a record should be with written
/// bytes after them, a file shorter than navd made it, a header that fails its checksum. Only a
/// torn record is cut without asking (what the crash left was never acknowledged); damage stops navd.
struct LogScan {
    enum Ending: Equatable {
        case clean
        /// A torn last record at `offset` (`bytes` were written of it).
        case torn(offset: Int, bytes: Int)
        /// Damage at `offset`; `intactAfter` are the offsets of whole records found after it.
        case damaged(offset: Int, reason: String, intactAfter: [Int])
    }

    let path: String
    let bytes: [UInt8]
    /// Each record's offset and payload.
    var records: [(offset: Int, payload: Range<Int>)] = []
    var ending = Ending.clean
    /// The first format (`navdlog1`, read once to convert a state file).
    var firstFormat = false

    /// Reads the log at `path`; no file is an empty log.
    init(path: String) throws(StateError) {
        self.path = path
        bytes = try LogScan.readFile(path)
        bytes.withByteView { scan($0) }
    }

    private mutating func scan(_ b: ByteView) {
        // Nothing written (a file made, or emptied, by a start a crash cut short): nothing was logged in it.
        if LogRecord.writtenEnd(b, from: 0) == 0 { return }
        if b.count >= 8 && LogRecord.magicV1.indices.allSatisfy({ b[$0] == LogRecord.magicV1[$0] }) {
            firstFormat = true
            var offset = 8
            while case .some(.some(let range)) = LogRecord.readV1(b, at: offset) {
                records.append((offset, range))
                offset = range.upperBound
            }
            return
        }
        guard let header = LogRecord.readFileHeader(b) else {
            ending = .damaged(offset: 0, reason: "its header (the first \(LogRecord.fileHeaderSize) bytes) is not a navd log header or fails its checksum", intactAfter: [])
            return
        }
        var offset = LogRecord.fileHeaderSize
        var seq: UInt32 = 1
        while offset < b.count {
            switch LogRecord.read(b, at: offset, seq: seq, salt: header.salt) {
            case .record(let range):
                records.append((offset, range))
                offset = range.upperBound
                seq &+= 1
                continue
            case .zeros:
                let written = LogRecord.writtenEnd(b, from: offset)
                if written > offset {
                    ending = .damaged(offset: offset, reason: "zeros stand where record \(seq) should, and bytes were written after them (up to byte \(written))",
                                      intactAfter: intact(b, after: offset, seq: seq, salt: header.salt))
                }
            case .bad(let reason):
                let after = intact(b, after: offset, seq: seq, salt: header.salt)
                if !after.isEmpty {
                    ending = .damaged(offset: offset, reason: reason + ", and whole records follow it", intactAfter: after)
                } else if let cut = tornLength(b, at: offset, seq: seq, salt: header.salt) {
                    ending = .torn(offset: offset, bytes: cut)
                } else {
                    ending = .damaged(offset: offset, reason: reason + "; its bytes were all written, so it was changed after it was written, not cut short by a crash",
                                      intactAfter: [])
                }
            }
            break
        }
        if case .damaged = ending {} else if b.count < header.size {
            ending = .damaged(offset: b.count, reason: "the file ends at byte \(b.count) but navd made it \(header.size) bytes long: it was cut", intactAfter: [])
        }
    }

    /// When the record at `offset` is what a cut write leaves (its header or its payload ends in
    /// zeros or at the file's end), the bytes of it that were written; nil when it was written whole.
    private func tornLength(_ b: ByteView, at offset: Int, seq: UInt32, salt: UInt64) -> Int? {
        let written = LogRecord.writtenEnd(b, from: offset)
        if offset + LogRecord.headerSize > written { return written - offset }
        let length = Int(LogRecord.load(b, at: offset, count: 4))
        let headerHolds = LogRecord.headerCRC(salt: salt, length: UInt32(length), seq: UInt32(LogRecord.load(b, at: offset + 4, count: 4)),
                                              payloadCRC: UInt32(LogRecord.load(b, at: offset + 8, count: 4))) == UInt32(LogRecord.load(b, at: offset + 12, count: 4))
        if headerHolds && offset + LogRecord.headerSize + length > written { return written - offset }
        return nil
    }

    /// The offsets of whole records after `offset` (at most 1,000 listed: what a refusal names).
    private func intact(_ b: ByteView, after offset: Int, seq: UInt32, salt: UInt64) -> [Int] {
        var out: [Int] = []
        var at = offset
        var next = seq
        while out.count < 1000, let found = LogRecord.nextValid(b, after: at, seq: next, salt: salt) {
            out.append(found.offset)
            next = found.seq &+ 1
            let length = Int(LogRecord.load(b, at: found.offset, count: 4))
            at = found.offset + LogRecord.headerSize + length - 1
        }
        return out
    }

    /// The payload of an intact record found at `offset` after damage.
    func payload(at offset: Int) -> Range<Int> {
        let length = bytes.withByteView { Int(LogRecord.load($0, at: offset, count: 4)) }
        return (offset + LogRecord.headerSize)..<(offset + LogRecord.headerSize + length)
    }

    /// The bytes of the file at `path` (none when there is no such file). A symbolic link is refused.
    static func readFile(_ path: String) throws(StateError) -> [UInt8] {
        let f = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if f < 0 {
            if errno == ENOENT { return [] }
            throw StateError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { Glibc.close(f) }
        var st = stat()
        guard fstat(f, &st) == 0 else { throw StateError(description: "cannot read \(path): \(String(cString: strerror(errno)))") }
        let (bytes, failure) = FileBytes.read(f, size: Int(st.st_size))
        if failure != 0 { throw StateError(description: "cannot read \(path): \(String(cString: strerror(failure)))") }
        return bytes
    }
}
