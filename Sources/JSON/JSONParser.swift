import CSimdJSON
import Unchecked

/// Why a byte sequence is not an acceptable JSON document.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable { case syntax, invalidUTF8, tooDeep, empty }
    public let kind: Kind
    public let detail: String
    /// For a syntax error: where the document goes wrong (``JSONSyntaxLocator``).
    public var location: JSONSyntaxLocator.Location?

    public init(kind: Kind, detail: String, location: JSONSyntaxLocator.Location? = nil) {
        self.kind = kind
        self.detail = detail
        self.location = location
    }
    public var description: String {
        switch kind {
        case .syntax: return "invalid JSON: \(detail)"
        case .invalidUTF8: return "the message is not valid UTF-8"
        case .tooDeep: return "JSON nested deeper than allowed"
        case .empty: return "the message is empty"
        }
    }
}

/// The parser seam: every JSON document navd reads goes through here. It is backed by simdjson
/// (through the CSimdJSON shim) and reuses its buffers, so one instance per thread should be kept.
public final class JSONParser {
    private let raw: OpaquePointer
    /// The deepest nesting of arrays and objects accepted, as simdjson counts it (see ``deepestNesting``).
    public var maxDepth: Int

    /// How many arrays and objects a document may nest, one in another: ``maxDepth`` less one
    /// (simdjson counts the document as a level: a parser of depth 8 takes 7 nested arrays; an
    /// empty one innermost is not counted).
    public var deepestNesting: Int { maxDepth - 1 }

    public init(maxDepth: Int = 64) {
        raw = navjson_parser_new()
        self.maxDepth = maxDepth
    }

    deinit {
        navjson_parser_free(raw)
        madeTape.deallocate()
        madeStrings.deallocate()
    }

    /// Counts parses, so that a ``JSONView`` of an earlier document can be caught (debug builds).
    @usableFromInline private(set) var generation = 0

    /// Parses a complete document held in `bytes` and returns a view of it, read in place. The view
    /// (and every view taken from it) is valid until this parser parses again.
    public func view(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONView {
        try view(bytes, padded: false)
    }

    /// The readable bytes that must follow a document parsed with `padded: true`.
    public static let padding = Int(NAVJSON_PADDING)

    /// As ``view(_:)``; with `padded`, the caller promises ``padding`` readable bytes after `bytes`
    /// (whatever they hold), and the document is parsed in place instead of copied first.
    /// `bytes` parsed in place, as a view of them was handed over (see the raw overload).
    @inline(__always)
    public func view(_ bytes: ByteView, padded: Bool) throws(JSONParseError) -> JSONView { try view(bytes.raw, padded: padded) }

    public func view(_ bytes: UnsafeRawBufferPointer, padded: Bool) throws(JSONParseError) -> JSONView {
        generation &+= 1
        var tape: UnsafePointer<UInt64>? = nil
        var strings: UnsafePointer<UInt8>? = nil
        let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
        let rc = padded && base != nil
            ? navjson_parse_padded(raw, base, bytes.count, UInt32(clamping: maxDepth), &tape, &strings)
            : navjson_parse(raw, base, bytes.count, UInt32(clamping: maxDepth), &tape, &strings)
        guard rc == Int32(NAVJSON_OK), let tape, let strings else {
            let detail = String(cString: navjson_last_error(raw))
            switch rc {
            case Int32(NAVJSON_ERR_UTF8): throw JSONParseError(kind: .invalidUTF8, detail: detail)
            case Int32(NAVJSON_ERR_DEPTH): throw JSONParseError(kind: .tooDeep, detail: detail)
            case Int32(NAVJSON_ERR_EMPTY): throw JSONParseError(kind: .empty, detail: detail)
            default:
                // The slow path only: where the document goes wrong, as simdjson does not say.
                let at = JSONSyntaxLocator.locate(bytes)
                throw JSONParseError(kind: .syntax, detail: at?.description ?? detail, location: at)
            }
        }
        // Word 0 is the root word; the document's value starts at word 1.
        return JSONView(tape: tape, strings: strings, index: 1, parser: self, generation: generation)
    }

    /// Indexes `lines` (complete lines followed by ``padding`` readable bytes) in one pass, so that
    /// the lines parsed next, in order, with `padded: true`, cost less each. The results are those of
    /// parsing each line alone (a line the index does not match, or any other parse, ends the batch
    /// and is parsed alone). Call ``endBatch()`` before the bytes change.
    /// Indexes `lines` (see the raw overload) when they are handed over as a view.
    @inline(__always)
    public func beginBatch(_ lines: ByteView) { beginBatch(lines.raw) }

    public func beginBatch(_ lines: UnsafeRawBufferPointer) {
        guard let base = lines.baseAddress else { return }
        navjson_batch_begin(raw, base.assumingMemoryBound(to: CChar.self), lines.count, UInt32(clamping: maxDepth))
    }

    public func endBatch() { navjson_batch_end(raw) }

    /// Parses the value at `part` of `line` (followed by ``padding`` readable bytes, as for
    /// `padded: true`), a line whose other bytes the caller has read and checked itself; in a
    /// batch, the line's other structural characters are passed over (`before`: how many the caller
    /// expects before `part`, looked at first; 0 for no guess), so that the next line is parsed from
    /// the batch's index. The view is valid as ``view(_:padded:)``'s. An error says only that the
    /// part is not one acceptable value (the caller parses the line whole to tell why).
    public func view(part: Range<Int>, of line: ByteView, before: Int = 0) -> JSONView? {
        generation &+= 1
        var tape: UnsafePointer<UInt64>? = nil
        var strings: UnsafePointer<UInt8>? = nil
        guard let base = line.raw.baseAddress?.assumingMemoryBound(to: CChar.self),
              navjson_parse_part(raw, base + part.lowerBound, part.count, base + line.count, UInt32(clamping: before),
                                 UInt32(clamping: maxDepth), &tape, &strings) == Int32(NAVJSON_OK),
              let tape, let strings
        else { return nil }
        return JSONView(tape: tape, strings: strings, index: 1, parser: self, generation: generation)
    }

    /// In a batch, passes over the structural characters of `line`, which the caller read itself
    /// (`count`: how many it expects, looked at first; 0 for no guess).
    public func skip(line: ByteView, count: Int = 0) {
        generation &+= 1
        guard let base = line.raw.baseAddress?.assumingMemoryBound(to: CChar.self) else { return }
        navjson_batch_skip(raw, base + line.count, UInt32(clamping: count))
    }

    /// The longest string ``made(integer:string:)`` takes.
    public static let madeStringMost = 64

    /// Words of a tape and a string buffer for ``made(integer:string:)``: an integer (two words),
    /// then a string (one), its 32-bit length, bytes and a zero.
    private let madeTape = UnsafeMutablePointer<UInt64>.allocate(capacity: 3)
    private let madeStrings = UnsafeMutablePointer<UInt8>.allocate(capacity: 4 + madeStringMost + 1)

    /// Views of an integer and of a string (at most ``madeStringMost`` bytes) that were read from a
    /// document by other means than this parser, as if parsed: valid, as a parsed document's, until
    /// this parser parses again or makes others.
    public func made(integer: Int, string: ByteView) -> (integer: JSONView, string: JSONView) {
        precondition(string.count <= Self.madeStringMost, "a made string is at most \(Self.madeStringMost) bytes")
        madeTape[0] = UInt64(UInt8(ascii: "l")) << 56
        madeTape[1] = UInt64(bitPattern: Int64(integer))
        madeTape[2] = UInt64(UInt8(ascii: "\"")) << 56
        UnsafeMutableRawPointer(madeStrings).storeBytes(of: UInt32(string.count).littleEndian, as: UInt32.self)
        if let from = string.raw.baseAddress {
            // Short: copied a word at a time (the last word overlapping), not through memmove.
            let to = UnsafeMutableRawPointer(madeStrings + 4), n = string.count
            if n >= 8 {
                var k = 0
                while k + 8 <= n {
                    to.storeBytes(of: from.loadUnaligned(fromByteOffset: k, as: UInt64.self), toByteOffset: k, as: UInt64.self)
                    k += 8
                }
                to.storeBytes(of: from.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self), toByteOffset: n - 8, as: UInt64.self)
            } else {
                for k in 0..<n { to.storeBytes(of: from.load(fromByteOffset: k, as: UInt8.self), toByteOffset: k, as: UInt8.self) }
            }
        }
        madeStrings[4 + string.count] = 0
        let tape = UnsafePointer(madeTape), strings = UnsafePointer(madeStrings)
        return (JSONView(tape: tape, strings: strings, index: 0, parser: self, generation: generation),
                JSONView(tape: tape, strings: strings, index: 2, parser: self, generation: generation))
    }

    /// How many documents were parsed from a batch's index so far.
    public var batchedDocuments: Int { Int(navjson_batched(raw)) }

    /// The strings of object keys this parser made, for the next documents: saved trees and log
    /// records repeat a few keys many times over (a restart reads a hundred thousand trees). Also
    /// for values a reader copies out of this parser's views (``JSONView/value(keys:)``).
    public private(set) lazy var keys = StringCache()

    /// Parses a complete document held in `bytes` into a tree.
    public func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONValue {
        try view(bytes).value(keys: keys)
    }

    public func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        try parse { body in bytes.withUnsafeBytes(body) }
    }

    public func parse(_ bytes: ArraySlice<UInt8>) throws(JSONParseError) -> JSONValue {
        try parse { body in bytes.withUnsafeBytes(body) }
    }

    public func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        var text = text
        // In place when the string is stored contiguously (as navd's own are), else copied once.
        return try parse { body in text.withUTF8 { body(UnsafeRawBufferPointer($0)) } }
    }

    /// Parses the bytes `lend` lends to its argument (the closures of `withUnsafeBytes` and its
    /// kin throw untyped errors, so the parse's result is carried out as a `Result`).
    private func parse(_ lend: ((UnsafeRawBufferPointer) -> Result<JSONValue, JSONParseError>) -> Result<JSONValue, JSONParseError>)
        throws(JSONParseError) -> JSONValue {
        try lend { b in Result { () throws(JSONParseError) in try parse(b) } }.get()
    }
}
