import CChecksum
import JSON
import Unchecked

/// The records of navd's append-only log (`STATE.log` beside the state file). The file starts with
/// a 32-byte header,
///
///     "navdlog2" · u64 salt · u64 size · u32 CRC-32C of the 24 bytes before it · u32 zero
///
/// (the salt is drawn anew for each log file; `size` is the length navd gave the file, which is at
/// least that long: a shorter one was cut), then records, each
///
///     u32 length · u32 sequence · u32 CRC-32C of the payload · u32 CRC-32C of (salt, length, sequence, payload CRC) · payload
///
/// (little endian): the header's checksum covers the length, so a damaged length is found, not
/// taken for the end; sequences count 1, 2, 3 … in each file, so a record out of its place (moved,
/// swapped, left from another file) is found too. After the last record the file holds zeros (the
/// size it was given in advance) or ends. A payload is one JSON object (it never holds a zero
/// byte), by kind:
///
/// - `{"c": session, "v": version, "n": id counter, "cc": [changes]}`: a commit, its `stackChanged`
///   changes in the compact form (`"ch"` in place of `"cc"`: in the full form, as navd writes them
///   while a subscriber hears that form, and as navd wrote every commit before it kept the compact one);
/// - `{"s": session, "v": version, "n": id counter, "t": tree, "f": facts, "o": owner?}`: a session's
///   whole state (opened, rebuilt by a graph reload, or a commit whose changes were not recorded);
/// - `{"f": session, "set": {…}}`: facts merged into its facts (a null value removes one), as
///   `context.set` or a recovery's `recover.facts` gave them; `{"f": session, "facts": {…}}`, all
///   its facts, as navd wrote them before (read still);
/// - `{"k": session, "key": key, "r": reply}`: a keyed navigation's reply;
/// - `{"x": session}`: closed;
/// - `{"g": graph, "sessions": n, "layout": tabs}`: the graph was reloaded (its identity,
///   ``GraphIdentity``, and the tabs it declares, ``TabLayout``); the next `n` records are the
///   whole state of every session, rebuilt for it: what came before them is replaced;
/// - `{"l": graph, "layout": tabs}`: the first record of a log file, before any other: the graph
///   its records are written under and the tabs it declares (a restart on a graph that moved
///   them refuses the sessions holding them).
enum LogRecord {
    static let magic: [UInt8] = Array("navdlog2".utf8)
    /// The first format (u32 length, u32 payload CRC): read when a state file of it is converted.
    static let magicV1: [UInt8] = Array("navdlog1".utf8)
    static let fileHeaderSize = 32
    static let headerSize = 16
    /// The largest payload navd reads back (a record claiming more is corrupt, not a reason to allocate).
    static let maxPayload = 1 << 30

    /// A log file's header: its salt and the size navd gave it.
    static func fileHeader(salt: UInt64, size: Int) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: fileHeaderSize)
        b.replaceSubrange(0..<8, with: magic)
        put(salt, into: &b, at: 8)
        put(UInt64(size), into: &b, at: 16)
        let crc = b.withByteView { CRC32C.checksum($0.bytes(0..<24)) }
        put(UInt64(crc), into: &b, at: 24)
        return b
    }

    /// The salt and size of a log file's header; nil when the header is not whole and true.
    static func readFileHeader(_ bytes: ByteView) -> (salt: UInt64, size: Int)? {
        guard bytes.count >= fileHeaderSize, magic.indices.allSatisfy({ bytes[$0] == magic[$0] }) else { return nil }
        let crc = CRC32C.checksum(bytes.bytes(0..<24))
        guard UInt32(truncatingIfNeeded: load(bytes, at: 24, count: 8)) == crc, load(bytes, at: 28, count: 4) == 0 else { return nil }
        let size = load(bytes, at: 16, count: 8)
        guard size <= UInt64(Int.max) else { return nil }
        return (load(bytes, at: 8, count: 8), Int(size))
    }

    /// Appends one record whose payload `body` writes, its header's checksums left to ``seal(_:salt:)``.
    static func append(to w: inout JSONWriter, seq: UInt32, _ body: (inout JSONWriter) -> Void) {
        let start = begin(in: &w)
        body(&w)
        end(in: &w, from: start, seq: seq)
    }

    /// Starts a record in `w`: room for its header, filled in by ``end(in:from:seq:)`` once the
    /// payload is written after it, and by ``seal(_:salt:)`` before the record goes to the file.
    /// Returns where the record starts.
    @inline(__always)
    static func begin(in w: inout JSONWriter) -> Int {
        let start = w.buffer.count
        w.buffer.appendZeros(headerSize)
        return start
    }

    /// Fills in the length and sequence of the record begun at `start`, whose payload is all
    /// written after it; its checksums stay zero until ``seal(_:salt:)``.
    @inline(__always)
    static func end(in w: inout JSONWriter, from start: Int, seq: UInt32) {
        let length = UInt32(w.buffer.count - start - headerSize)
        w.buffer.overwrite(uint64: UInt64(length) | UInt64(seq) << 32, at: start)  // length, then sequence
    }

    /// Fills in the checksums of the records `w` holds (each closed by ``end(in:from:seq:)``), for a
    /// log file of salt `salt`: once for the records of a loop iteration, just before they go to
    /// the file, where each record's checksum chain (the crc32 instruction waits for the one
    /// before) runs beside the next record's instead of on the path of the request that made it.
    static func seal(_ w: inout JSONWriter, salt: UInt64) {
        let sealed = w.buffer.withUnsafeMutableBytes { navd_seal_records($0.baseAddress, $0.count, salt) }
        precondition(sealed == w.buffer.count, "a log record's length passes the records written")
    }

    /// The checksum of a record's header: the file's salt, the length, the sequence and the payload's checksum.
    static func headerCRC(salt: UInt64, length: UInt32, seq: UInt32, payloadCRC: UInt32) -> UInt32 {
        navd_crc32c_record_header(salt, length, seq, payloadCRC)
    }

    /// One record read at `offset`, expecting sequence `seq`.
    enum Read: Equatable {
        case record(Range<Int>)
        /// Sixteen zero bytes where a header would be: where navd stopped writing, if only zeros follow.
        case zeros
        /// Nothing can be read there: a header cut by the file's end or failing its checksum, a
        /// sequence out of place, a payload past the end or failing its checksum.
        case bad(String)
    }

    static func read(_ bytes: ByteView, at offset: Int, seq: UInt32, salt: UInt64) -> Read {
        guard bytes.count - offset >= headerSize else { return .bad("the file ends inside a record's header") }
        let length = UInt32(load(bytes, at: offset, count: 4)), got = UInt32(load(bytes, at: offset + 4, count: 4))
        let crc = UInt32(load(bytes, at: offset + 8, count: 4)), hcrc = UInt32(load(bytes, at: offset + 12, count: 4))
        if length == 0 && got == 0 && crc == 0 && hcrc == 0 { return .zeros }
        guard headerCRC(salt: salt, length: length, seq: got, payloadCRC: crc) == hcrc else {
            return .bad("a record header fails its checksum")
        }
        guard got == seq else { return .bad("record \(got) stands where record \(seq) should") }
        let start = offset + headerSize
        guard Int(length) <= maxPayload, bytes.count - start >= Int(length) else { return .bad("record \(seq) runs past the file's end") }
        let payload = bytes.bytes(start..<(start + Int(length)))
        guard CRC32C.checksum(payload) == crc else { return .bad("record \(seq)'s payload fails its checksum") }
        return .record(start..<(start + Int(length)))
    }

    /// The first offset after `offset` where a whole record of this file starts (its header's and
    /// payload's checksums hold, with a sequence after `seq`), and its sequence: what makes damage
    /// in the middle of a log, not a torn tail. Only read when something could not be.
    static func nextValid(_ bytes: ByteView, after offset: Int, seq: UInt32, salt: UInt64) -> (offset: Int, seq: UInt32)? {
        var at = offset + 1
        let end = writtenEnd(bytes, from: offset)  // a record ends with its payload's closing brace: none starts in the zeros after
        while at + headerSize < end {
            let s = UInt32(load(bytes, at: at + 4, count: 4))
            if s >= seq, s > 0, case .record = read(bytes, at: at, seq: s, salt: salt) { return (at, s) }
            at += 1
        }
        return nil
    }

    /// The end of what was written in `bytes` from `offset`: one past the last byte that is not zero.
    static func writtenEnd(_ bytes: ByteView, from offset: Int) -> Int {
        bytes.endOfNonzero(from: offset)  // through the zeros a segment made in advance ends with
    }

    /// A first-format record (u32 length, u32 payload CRC): its payload, the end of the records
    /// (a zero length), or nil when it cannot be read.
    static func readV1(_ bytes: ByteView, at offset: Int) -> Range<Int>?? {
        guard bytes.count - offset >= 8 else { return nil }
        let length = Int(load(bytes, at: offset, count: 4)), crc = UInt32(load(bytes, at: offset + 4, count: 4))
        if length == 0 && crc == 0 { return .some(nil) }
        let start = offset + 8
        guard length <= maxPayload, bytes.count - start >= length,
              CRC32C.checksum(bytes.bytes(start..<(start + length))) == crc else { return nil }
        return .some(start..<(start + length))
    }

    static func load(_ bytes: ByteView, at offset: Int, count: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<count { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        return v
    }

    private static func put(_ v: UInt64, into b: inout [UInt8], at offset: Int) {
        for i in 0..<8 { b[offset + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(i))) }
    }
}

/// CRC-32C (Castagnoli), the checksum of iSCSI, ext4 and LevelDB's logs (``navd_crc32c``).
enum CRC32C {
    static func checksum(_ bytes: ByteView) -> UInt32 {
        navd_crc32c(bytes.raw.baseAddress, bytes.count)
    }
}
