import CChecksum
import JSON

/// The records of navd's append-only log (`STATE.log` beside the state file): each is
///
///     u32 length (little endian) · u32 CRC-32C of the payload · payload (`length` bytes of JSON)
///
/// after an 8-byte header `navdlog1`, up to the first zero length (the log's segment is written
/// with zeros in advance). A payload is one JSON object, by kind:
///
/// - `{"c": session, "v": version, "n": id counter, "ch": [changes]}`: a commit, its `stackChanged` changes;
/// - `{"s": session, "v": version, "n": id counter, "t": tree, "f": facts, "o": owner?}`: a session's
///   whole state (opened, rebuilt by a graph reload, or a commit whose changes were not recorded);
/// - `{"f": session, "facts": {…}}`: its facts, all of them;
/// - `{"k": session, "key": key, "r": reply}`: a keyed navigation's reply;
/// - `{"x": session}`: closed.
enum LogRecord {
    static let header: [UInt8] = Array("navdlog1".utf8)
    /// The largest payload navd reads back (a record claiming more is corrupt, not a reason to allocate).
    static let maxPayload = 1 << 30

    /// Appends one record whose payload `body` writes, filling in its length and checksum.
    static func append(to w: inout JSONWriter, _ body: (inout JSONWriter) -> Void) {
        let start = w.buffer.count
        w.buffer.append(contentsOf: [0, 0, 0, 0, 0, 0, 0, 0])
        body(&w)
        let length = w.buffer.count - start - 8
        let crc = w.buffer.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[(start + 8)...])) }
        w.buffer.overwrite(uint32: UInt32(length), at: start)
        w.buffer.overwrite(uint32: crc, at: start + 4)
    }

    /// One record read from `bytes` at `offset`: its payload's range, or why it cannot be read.
    enum Read {
        case record(Range<Int>)
        /// A zero length: the rest of the segment, written in advance, is zeros.
        case end
        /// The bytes end inside the record (a torn tail if nothing follows).
        case truncated
        /// The checksum does not match (torn if it is the last record, else corrupt).
        case badChecksum(end: Int)
    }

    static func read(_ bytes: [UInt8], at offset: Int) -> Read {
        bytes.withUnsafeBytes { read($0, at: offset) }
    }

    static func read(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Read {
        guard bytes.count - offset >= 8 else { return .truncated }
        var length = 0, crc: UInt32 = 0
        for i in 0..<4 {
            length |= Int(bytes[offset + i]) << (8 * i)
            crc |= UInt32(bytes[offset + 4 + i]) << (8 * UInt32(i))
        }
        if length == 0 && crc == 0 { return .end }
        let start = offset + 8
        guard length <= maxPayload, bytes.count - start >= length else { return .truncated }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + length)])
        guard CRC32C.checksum(payload) == crc else { return .badChecksum(end: start + length) }
        return .record(start..<(start + length))
    }
}

/// CRC-32C (Castagnoli), the checksum of iSCSI, ext4 and LevelDB's logs (``navd_crc32c``).
enum CRC32C {
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        navd_crc32c(bytes.baseAddress, bytes.count)
    }
}
