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

    deinit { navjson_parser_free(raw) }

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

    /// Reads `lines` (complete lines followed by ``padding`` readable bytes) for the reads that
    /// follow, in order, so that each costs less: plain params of a request line of the form
    /// ``request(line:padded:)`` reads are read in one pass, and from the first line that needs
    /// simdjson on, what will be parsed of each line (its params; any other line whole, parsed with
    /// `padded: true`) is indexed in one pass. The results are those of reading each line alone (a
    /// parse of anything else, or one the index does not serve, ends the batch and is parsed
    /// alone). Call ``endBatch()`` before the bytes change.
    @inline(__always)
    public func beginBatch(_ lines: ByteView) { beginBatch(lines.raw) }

    public func beginBatch(_ lines: UnsafeRawBufferPointer) {
        guard let base = lines.baseAddress else { return }
        navjson_batch_begin(raw, base.assumingMemoryBound(to: CChar.self), lines.count, UInt32(clamping: maxDepth))
    }

    public func endBatch() { navjson_batch_end(raw) }

    /// The id, method and params of the request `line` when it has the form clients write,
    ///
    ///     {"jsonrpc":"2.0","id":N,"method":"NAME"}
    ///     {"jsonrpc":"2.0","id":N,"method":"NAME","params":VALUE}
    ///
    /// exactly so around an id of digits (`0` or at most 18 digits without a leading zero), a method
    /// of printable ASCII other than `"` and `\` (at most 64 bytes), and JSON
    /// whitespace only after the last brace: the envelope read by its bytes and `VALUE` alone parsed
    /// (an object or array nesting at most one level less than a message may; `padded`: the line is
    /// followed by ``padding`` readable bytes, without which a line with params is not read here).
    /// Nil for every other line, and for one whose `VALUE` does not parse: parsed whole, it reads, or
    /// is refused, as before. The views are valid as ``view(_:padded:)``'s.
    public func request(line: ByteView, padded: Bool) -> (id: JSONView, method: JSONView, params: JSONView?)? {
        generation &+= 1
        var r = navjson_request()
        guard let base = line.raw.baseAddress?.assumingMemoryBound(to: CChar.self) else { return nil }
        let kind = navjson_scan_request(raw, base, line.count, padded ? 1 : 0, UInt32(clamping: maxDepth), &r)
        guard kind != Int32(NAVJSON_NOT_SCANNED), let et = r.envelope_tape, let es = r.envelope_strings else { return nil }
        let id = JSONView(tape: et, strings: es, index: 0, parser: self, generation: generation)
        let method = JSONView(tape: et, strings: es, index: 2, parser: self, generation: generation)
        guard kind == Int32(NAVJSON_SCANNED_PARAMS), let tape = r.tape, let strings = r.strings else { return (id, method, nil) }
        return (id, method, JSONView(tape: tape, strings: strings, index: 1, parser: self, generation: generation))
    }

    /// How many documents were parsed from a batch's index so far.
    public var batchedDocuments: Int { Int(navjson_batched(raw)) }

    /// How many documents (a request line's plain params) were read in one pass, without simdjson.
    public var plainDocuments: Int { Int(navjson_plain(raw)) }

    /// For tests: `bytes` (followed by ``padding`` readable bytes) read by the one pass that plain
    /// params take and by simdjson: nil when the one pass does not take them, else whether both
    /// wrote the same tape and strings.
    public func plainReadsAsSimdjson(_ bytes: UnsafeRawBufferPointer) -> Bool? {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self) else { return nil }
        generation &+= 1
        switch navjson_plain_check(raw, base, bytes.count, UInt32(clamping: maxDepth)) {
        case -1: return nil
        case 0: return true
        default: return false
        }
    }

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
