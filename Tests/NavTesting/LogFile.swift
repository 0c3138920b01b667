import CChecksum
import Foundation

/// navd's log file (`STATE.log`) as the tests read and write it, independently of navd's own code:
/// a 32-byte header ("navdlog2", salt, size, checksum), then records of a 16-byte header (length,
/// sequence, payload CRC-32C, header CRC-32C over salt, length, sequence and payload CRC) and a
/// JSON payload.
public struct LogFile {
    public var salt: UInt64
    /// The size the header declares (0: the file grows with its records).
    public var size: Int
    public var payloads: [[UInt8]]

    /// The records of `bytes`, read as far as they hold.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 32, Array(bytes[0..<8]) == Array("navdlog2".utf8) else { return nil }
        salt = LogFile.load(bytes, 8, 8)
        size = Int(LogFile.load(bytes, 16, 8))
        payloads = LogFile.records(bytes).map { Array(bytes[($0.offset + 16)..<($0.offset + 16 + $0.length)]) }
    }

    public init(salt: UInt64 = UInt64.random(in: 1...UInt64.max), size: Int = 0, payloads: [[UInt8]]) {
        self.salt = salt
        self.size = size
        self.payloads = payloads
    }

    public init?(path: String) {
        guard let d = FileManager.default.contents(atPath: path) else { return nil }
        self.init([UInt8](d))
    }

    /// Each record's offset and payload length, in order, while their checksums and sequence hold.
    public static func records(_ bytes: [UInt8]) -> [(offset: Int, length: Int)] {
        guard bytes.count >= 32 else { return [] }
        let salt = load(bytes, 8, 8)
        var out: [(Int, Int)] = []
        var off = 32
        var seq: UInt64 = 1
        while off + 16 <= bytes.count {
            let len = Int(load(bytes, off, 4))
            guard load(bytes, off + 4, 4) == seq, off + 16 + len <= bytes.count, len > 0 else { break }
            let crc = UInt32(load(bytes, off + 8, 4))
            guard crc32c(Array(bytes[(off + 16)..<(off + 16 + len)])) == crc,
                  headerCRC(salt: salt, length: UInt32(len), seq: UInt32(seq), crc: crc) == UInt32(load(bytes, off + 12, 4)) else { break }
            out.append((off, len))
            off += 16 + len
            seq += 1
        }
        return out
    }

    /// The file's bytes: its header and records, then zeros up to `size`.
    public var bytes: [UInt8] {
        var b = Array("navdlog2".utf8)
        LogFile.put(salt, 8, into: &b)
        LogFile.put(UInt64(size), 8, into: &b)
        LogFile.put(UInt64(LogFile.crc32c(b)), 8, into: &b)
        for (i, p) in payloads.enumerated() {
            let crc = LogFile.crc32c(p)
            LogFile.put(UInt64(p.count), 4, into: &b)
            LogFile.put(UInt64(i + 1), 4, into: &b)
            LogFile.put(UInt64(crc), 4, into: &b)
            LogFile.put(UInt64(LogFile.headerCRC(salt: salt, length: UInt32(p.count), seq: UInt32(i + 1), crc: crc)), 4, into: &b)
            b += p
        }
        if b.count < size { b += [UInt8](repeating: 0, count: size - b.count) }
        return b
    }

    public func write(to path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

    static func headerCRC(salt: UInt64, length: UInt32, seq: UInt32, crc: UInt32) -> UInt32 {
        var b: [UInt8] = []
        put(salt, 8, into: &b)
        put(UInt64(length), 4, into: &b)
        put(UInt64(seq), 4, into: &b)
        put(UInt64(crc), 4, into: &b)
        return crc32c(b)
    }

    public static func crc32c(_ b: [UInt8]) -> UInt32 { b.withUnsafeBytes { navd_crc32c($0.baseAddress, $0.count) } }

    static func load(_ b: [UInt8], _ at: Int, _ n: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<n { v |= UInt64(b[at + i]) << (8 * UInt64(i)) }
        return v
    }

    static func put(_ v: UInt64, _ n: Int, into b: inout [UInt8]) {
        for i in 0..<n { b.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }
}
