import JSON
import Synchronization
import Unchecked

/// How one message is delimited on the stream: one byte, copied with every message at no cost.
public struct Framing: Sendable, Hashable, CustomStringConvertible {
    /// 0: newline, 1: `Content-Length`, 2 and up: a registered ``FrameFormat``.
    @usableFromInline let raw: UInt8

    @inlinable init(raw: UInt8) { self.raw = raw }

    /// One JSON text per line, `\n`-terminated (`\r\n` accepted). The default.
    @inlinable public static var newline: Framing { Framing(raw: 0) }
    /// `Content-Length: N\r\n\r\n` then N bytes, as in the Language Server Protocol.
    @inlinable public static var contentLength: Framing { Framing(raw: 1) }
    /// The framing of another kind of stream (WebSocket frames, length prefixes…), registered once
    /// with ``FrameFormats/register(_:)`` by the stream that speaks it.
    public static func custom(_ id: FrameFormatID) -> Framing { Framing(raw: id.index &+ 2) }

    @inlinable public var isNewline: Bool { raw == 0 }
    @inlinable public var isContentLength: Bool { raw == 1 }
    /// The registered format, for a custom framing.
    public var format: FrameFormatID? { raw >= 2 ? FrameFormatID(index: raw &- 2) : nil }

    public var description: String {
        switch raw {
        case 0: "newline"
        case 1: "contentLength"
        default: "custom(\(raw - 2))"
        }
    }

    /// Appends a framed `body` to `out`.
    public static func append(_ view: ByteView, _ framing: Framing, to out: inout [UInt8]) {
        let body = view.raw
        if framing.isNewline {
            out.append(contentsOf: body)
            out.append(UInt8(ascii: "\n"))
        } else if let id = framing.format {
            let format = FrameFormats.format(id)
            out.append(contentsOf: format.header(bodyLength: body.count))
            out.append(contentsOf: body)
            out.append(contentsOf: format.trailer)
        } else {
            out.append(contentsOf: "Content-Length: \(body.count)\r\n\r\n".utf8)
            out.append(contentsOf: body)
        }
    }

    public static func append(_ view: ByteView, _ framing: Framing, to out: ByteBuffer) {
        append(size: view.count, framing, to: out) { $0.append(contentsOf: view.raw) }
    }

    /// Appends a framed body of `size` bytes that `write` appends in place (no copy of it made
    /// first); the header, which may name the length, comes before it.
    public static func append(size: Int, _ framing: Framing, to out: ByteBuffer, _ write: (ByteBuffer) -> Void) {
        out.reserve(size + 32)
        func body() {
            let start = out.count
            write(out)
            precondition(out.count - start == size, "a framed body of \(out.count - start) bytes where its header gave \(size)")
        }
        if framing.isNewline {
            body()
            out.append(UInt8(ascii: "\n"))
        } else if let id = framing.format {
            let format = FrameFormats.format(id)
            format.header(bodyLength: size).withUnsafeBytes { out.append(contentsOf: $0) }
            body()
            format.trailer.withUnsafeBytes { out.append(contentsOf: $0) }
        } else {
            out.append("Content-Length: \(size)\r\n\r\n")
            body()
        }
    }

    public static func frame(_ body: [UInt8], _ framing: Framing) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(body.count + 32)
        body.withUnsafeBytes { append(ByteView($0), framing, to: &out) }
        return out
    }
}

/// How a kind of stream frames each message it sends: bytes before the body (which may depend on
/// its length) and after it. A WebSocket's text frame is a header and no trailer; a line is no
/// header and a newline.
public protocol FrameFormat: Sendable {
    func header(bodyLength: Int) -> [UInt8]
    var trailer: [UInt8] { get }
}

/// A registered ``FrameFormat``, as ``Framing/custom(_:)`` names it.
public struct FrameFormatID: Sendable, Hashable {
    let index: UInt8
}

/// The frame formats of every kind of stream navd serves besides its sockets' two framings.
public enum FrameFormats {
    private static let registry = Mutex<[any FrameFormat]>([])

    /// Registers `format` (once per kind of stream, e.g. in a `static let`; at most 254 kinds);
    /// answers its framing.
    public static func register(_ format: any FrameFormat) -> Framing {
        registry.withLock { list in
            precondition(list.count < 254, "at most 254 frame formats")
            list.append(format)
            return .custom(FrameFormatID(index: UInt8(list.count - 1)))
        }
    }

    static func format(_ id: FrameFormatID) -> any FrameFormat {
        registry.withLock { $0[Int(id.index)] }
    }
}

/// A stream-level error: the byte stream cannot be read further as messages.
public enum FramingError: Error, Sendable, Equatable {
    /// A message (or a line still without its end) is larger than the limit.
    case messageTooLarge(limit: Int)
    /// The `Content-Length` header block is malformed.
    case badHeader(String)
}

/// Splits a byte stream into messages, detecting the framing of each message by its first byte:
/// `C`/`c` starts a header block (`Content-Length`), anything else a line. Handles messages split
/// across reads and many messages in one read; bytes are copied only when a message spans reads.
public struct FrameDecoder {
    public let maxMessage: Int
    /// The longest header block accepted. `Content-Length: N` and an optional `Content-Type` fit in
    /// well under it; a header that runs on without its blank line is refused at this size.
    public static let maxHeader = 1024
    public var maxHeader: Int { Self.maxHeader }
    @usableFromInline var pending: [UInt8] = []
    /// How many bytes at the start of `pending` are known to hold no newline, when it starts with a
    /// line that has not ended: the next feed searches on from there, so a line that arrives a few
    /// bytes a read is searched once in all, not again from its start at every read.
    private var searched = 0
    /// Set after a framing error: the stream cannot be resynchronised.
    public private(set) var failed = false

    public init(maxMessage: Int) { self.maxMessage = maxMessage }

    /// Whether bytes are kept: an unfinished message, or messages after a stop.
    @inlinable public var hasPartialMessage: Bool { !pending.isEmpty }
    /// The memory the kept bytes take (what was allocated for them, at least their count): what
    /// the transport counts against `--max-total-input`.
    public var heldBytes: Int { pending.capacity }

    /// Forgets what is kept and reads nothing more (the transport is closing the connection).
    public mutating func discard() {
        pending = []
        searched = 0
        failed = true
    }

    /// Feeds `input`; calls `onMessage` for each complete message body, in order, until it returns
    /// false: the bytes after that message are then kept (``hasHeldInput``) and handled by the next
    /// call (``resume(_:)``). Throws on a framing error (after delivering the messages before it).
    /// `firstNewline`: where `view`'s first newline is, when the caller looked (-1: not looked for),
    /// so that a read of one line is not scanned twice.
    public mutating func feed(_ view: ByteView, firstNewline: Int = -1, _ onMessage: (Framing, ByteView) -> Bool) throws(FramingError) {
        guard !failed else { return }
        var lineUnended = false
        if pending.isEmpty {
            let used = try Self.scan(view, maxMessage: maxMessage, maxHeader: maxHeader, failed: &failed, firstNewline: firstNewline,
                                     searched: 0, lineUnended: &lineUnended, onMessage)
            if used < view.count {
                pending.append(contentsOf: view.bytes(from: used).raw)
                searched = lineUnended ? pending.count : 0
            }
        } else {
            pending.append(contentsOf: view.raw)
            let local = pending
            pending = []
            var failedNow = false
            let limits = (maxMessage, maxHeader, searched)
            searched = 0
            defer { failed = failedNow }
            let used = try local.withByteView { (buf) throws(FramingError) in
                try Self.scan(buf, maxMessage: limits.0, maxHeader: limits.1, failed: &failedNow, firstNewline: -1,
                              searched: limits.2, lineUnended: &lineUnended, onMessage)
            }
            if used < local.count {
                // What is left is copied into a buffer of its own size once messages were taken from
                // the front: the one that held a large message is not kept for a few bytes.
                pending = used == 0 ? local : Array(local[used...])
                searched = lineUnended ? pending.count : 0
            }
        }
    }

    /// Feeds `input`, handling every message.
    public mutating func feed(_ input: ByteView, _ onMessage: (Framing, ByteView) -> Void) throws(FramingError) {
        try feed(input) { framing, body -> Bool in
            onMessage(framing, body)
            return true
        }
    }

    /// Handles the bytes kept after a stop (see ``feed(_:_:)``), again until `onMessage` returns false.
    public mutating func resume(_ onMessage: (Framing, ByteView) -> Bool) throws(FramingError) {
        try feed(.empty, onMessage)
    }

    /// Scans complete messages from `buf`; returns how many bytes were consumed. `searched`: bytes
    /// at the start of `buf` known to hold no newline. `lineUnended` is set when the scan stopped at
    /// a line whose newline has not come (none is in the rest of `buf`).
    private static func scan(_ buf: ByteView, maxMessage: Int, maxHeader: Int, failed: inout Bool, firstNewline: Int,
                             searched: Int, lineUnended: inout Bool,
                             _ onMessage: (Framing, ByteView) -> Bool) throws(FramingError) -> Int {
        assert(firstNewline < 0 || buf.firstIndex(of: 0x0A, from: 0) == firstNewline, "not the first newline")
        var pos = 0
        let n = buf.count
        while pos < n {
            let first = buf[pos]
            if first == UInt8(ascii: "C") || first == UInt8(ascii: "c") {
                // Header block: find the blank line.
                let header: (end: Int, body: Int)?
                do throws(FramingError) {
                    header = try findHeaderEnd(buf, from: pos, maxHeader: maxHeader)
                } catch {
                    failed = true
                    throw error
                }
                guard let (end, bodyStart) = header else { return pos }
                let length: Int
                do throws(FramingError) {
                    length = try parseContentLength(buf.bytes(pos..<end))
                } catch {
                    failed = true
                    throw error
                }
                if length > maxMessage {
                    failed = true
                    throw .messageTooLarge(limit: maxMessage)
                }
                if n - bodyStart < length { return pos }
                let goOn = onMessage(.contentLength, buf.bytes(bodyStart..<(bodyStart + length)))
                pos = bodyStart + length
                if !goOn { return pos }
            } else {
                let from = pos == 0 ? searched : pos
                guard let nl = pos == 0 && firstNewline >= 0 ? firstNewline : buf.firstIndex(of: 0x0A, from: from) else {
                    if n - pos > maxMessage {
                        failed = true
                        throw .messageTooLarge(limit: maxMessage)
                    }
                    lineUnended = true
                    return pos
                }
                var end = nl
                if end > pos && buf[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                if end - pos > maxMessage {
                    failed = true
                    throw .messageTooLarge(limit: maxMessage)
                }
                let goOn = onMessage(.newline, buf.bytes(pos..<end))
                pos = nl + 1
                if !goOn { return pos }
            }
        }
        return pos
    }

    /// Where the header block starting at `from` ends (its blank line) and its body starts; nil
    /// while the blank line has not arrived. Lines end with `\r\n`, as LSP writes them, or with a
    /// bare `\n`, as a terminal sends them. A complete line that is not `Name: value`, or a block
    /// past `maxHeader` bytes, fails at once rather than waiting for a blank line.
    private static func findHeaderEnd(_ buf: ByteView, from: Int, maxHeader: Int) throws(FramingError) -> (end: Int, body: Int)? {
        var lineStart = from
        while let nl = buf.firstIndex(of: 0x0A, from: lineStart), nl - from <= maxHeader {
            var lineEnd = nl
            if lineEnd > lineStart && buf[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            if lineEnd == lineStart { return (lineStart, nl + 1) }
            guard let colon = buf.firstIndex(of: UInt8(ascii: ":"), from: lineStart), colon < lineEnd else {
                let line = String(decoding: buf.bytes(lineStart..<min(lineEnd, lineStart + 60)), as: UTF8.self)
                throw .badHeader("header line '\(line)' has no ':'; expected 'Content-Length: N'")
            }
            lineStart = nl + 1
        }
        if buf.count - from > maxHeader {
            throw .badHeader("header block longer than \(maxHeader) bytes without an empty line")
        }
        return nil
    }

    private static func parseContentLength(_ header: ByteView) throws(FramingError) -> Int {
        let text = header.string
        var length: Int? = nil
        for line in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else {
                throw .badHeader("header line '\(line.prefix(60))' has no ':'; expected 'Content-Length: N'")
            }
            let name = line[..<colon].trimmingSpaces.lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces
            if name == "content-length" {
                guard length == nil else {
                    throw .badHeader("the header block has two Content-Length lines; send exactly one")
                }
                guard value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), value.utf8.count <= 18, let v = Int(value) else {
                    throw .badHeader("Content-Length '\(value.prefix(40))' is not a non-negative integer")
                }
                length = v
            }
        }
        guard let length else { throw .badHeader("header block has no Content-Length") }
        return length
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Substring {
    fileprivate var trimmingSpaces: String {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
