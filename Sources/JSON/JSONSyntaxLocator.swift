/// Where a document simdjson refused goes wrong: a small validating scanner run only on that slow
/// path, so that a parse error names the line, column and byte of the first bad byte and what was
/// expected there (simdjson says only that the structure is improper). Iterative, bounded by the
/// document's size: a hostile message costs one more pass over its bytes, nothing else.
public enum JSONSyntaxLocator {
    public struct Location: Equatable, Sendable {
        /// Byte offset of the first byte that cannot continue a JSON document (0-based).
        public let offset: Int
        /// 1-based line and column (in bytes) of that byte.
        public let line: Int
        public let column: Int
        /// What the document needed there, and what it had.
        public let expected: String
        public let found: String

        public var description: String {
            "at line \(line), column \(column) (byte \(offset)): expected \(expected), found \(found)"
        }
    }

    /// The first bad byte of `bytes` as JSON, or nil when the scanner finds the document well formed
    /// (simdjson refused it for a reason of its own, such as a number out of range).
    public static func locate(_ bytes: UnsafeRawBufferPointer) -> Location? {
        var s = Scanner(bytes: bytes)
        return s.run()
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var i = 0

        enum Container { case object, array }
        /// Open containers, innermost last.
        var stack: [Container] = []

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0a || bytes[i] == 0x0d || bytes[i] == 0x09 { i += 1 }
        }

        func fail(_ expected: String, found: String? = nil, at offset: Int? = nil) -> Location {
            let at = offset ?? i
            var line = 1, lineStart = 0
            for k in 0..<min(at, bytes.count) where bytes[k] == 0x0a {
                line += 1
                lineStart = k + 1
            }
            return Location(offset: at, line: line, column: at - lineStart + 1, expected: expected, found: found ?? describe(at))
        }

        func describe(_ at: Int) -> String {
            guard at < bytes.count else { return "the end of the message" }
            let b = bytes[at]
            switch b {
            case 0x22: return "'\"'"
            case 0x20...0x7e: return "'\(Character(Unicode.Scalar(b)))'"
            case 0x0a: return "a line break"
            case 0xEF where at + 2 < bytes.count && bytes[at + 1] == 0xBB && bytes[at + 2] == 0xBF:
                return "a UTF-8 byte order mark (EF BB BF), which JSON texts do not carry; send the JSON without it"
            default: return "byte 0x" + String(b, radix: 16, uppercase: true)
            }
        }

        /// What the scanner needs next.
        enum Need { case value, firstMember, firstElement, afterValue }

        /// One pass, as a state machine over an explicit stack (no recursion: nesting costs a stack
        /// entry, bounded by the message's size).
        mutating func run() -> Location? {
            var need = Need.value
            scan: while true {
                skipSpace()
                switch need {
                case .value:
                    guard i < bytes.count else { return fail("a value") }
                    switch bytes[i] {
                    case 0x7b:
                        i += 1
                        stack.append(.object)
                        need = .firstMember
                    case 0x5b:
                        i += 1
                        stack.append(.array)
                        need = .firstElement
                    default:
                        if let e = scalar() { return e }
                        need = .afterValue
                    }
                case .firstMember:
                    if i < bytes.count, bytes[i] == 0x7d {
                        i += 1
                        stack.removeLast()
                        need = .afterValue
                    } else {
                        if let e = memberName() { return e }
                        need = .value
                    }
                case .firstElement:
                    if i < bytes.count, bytes[i] == 0x5d {
                        i += 1
                        stack.removeLast()
                        need = .afterValue
                    } else {
                        need = .value
                    }
                case .afterValue:
                    guard let container = stack.last else { break scan }
                    guard i < bytes.count else { return fail(container == .object ? "',' or '}'" : "',' or ']'") }
                    let b = bytes[i]
                    if b == 0x2c {  // ,
                        i += 1
                        if container == .object {
                            skipSpace()
                            if let e = memberName() { return e }
                        }
                        need = .value
                    } else if (container == .object && b == 0x7d) || (container == .array && b == 0x5d) {
                        i += 1
                        stack.removeLast()
                    } else {
                        return fail(container == .object ? "',' or '}' after a member" : "',' or ']' after an element")
                    }
                }
            }
            return i < bytes.count ? fail("the end of the document") : nil
        }

        /// A member name and the ':' after it.
        mutating func memberName() -> Location? {
            guard i < bytes.count, bytes[i] == 0x22 else { return fail("a member name in double quotes") }
            if let e = string() { return e }
            skipSpace()
            guard i < bytes.count, bytes[i] == 0x3a else { return fail("':' after the member name") }
            i += 1
            return nil
        }

        /// A string, number, true, false or null.
        mutating func scalar() -> Location? {
            switch bytes[i] {
            case 0x22: return string()
            case 0x2d, 0x30...0x39: return number()
            case 0x74: return literal("true")
            case 0x66: return literal("false")
            case 0x6e: return literal("null")
            default: return fail("a value (an object, array, string, number, true, false or null)")
            }
        }

        mutating func literal(_ word: StaticString) -> Location? {
            let w = UnsafeRawBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            for k in 0..<w.count {
                guard i + k < bytes.count, bytes[i + k] == w[k] else { return fail("`\(word)`", at: i + k) }
            }
            i += w.count
            return nil
        }

        mutating func string() -> Location? {
            i += 1  // the opening quote
            while i < bytes.count {
                let b = bytes[i]
                if b == 0x22 {
                    i += 1
                    return nil
                }
                if b < 0x20 { return fail("a character of the string (control characters are written \\n, \\t or \\u00XX)") }
                if b == 0x5c {
                    guard i + 1 < bytes.count else { return fail("an escape after '\\'", at: i + 1) }
                    let e = bytes[i + 1]
                    if e == 0x75 {  // \uXXXX
                        guard let unit = hexUnit(at: i + 2) else {
                            let k = (2...5).first { i + $0 >= bytes.count || !isHex(bytes[i + $0]) }!
                            return fail("four hex digits after \\u", at: i + k)
                        }
                        if (0xDC00...0xDFFF).contains(unit) {
                            return fail("an escape other than a lone low surrogate (\\uDC00 to \\uDFFF may only follow a high surrogate \\uD800 to \\uDBFF)",
                                        found: escapeText(at: i), at: i)
                        }
                        if (0xD800...0xDBFF).contains(unit) {
                            // A character past U+FFFF is written as a pair: the low surrogate must follow at once.
                            guard i + 7 < bytes.count, bytes[i + 6] == 0x5c, bytes[i + 7] == 0x75, let low = hexUnit(at: i + 8),
                                  (0xDC00...0xDFFF).contains(low) else {
                                return fail("a low surrogate (\\uDC00 to \\uDFFF) right after the high surrogate \(escapeText(at: i)), as a character past U+FFFF is written",
                                            at: i + 6)
                            }
                            i += 12
                            continue
                        }
                        i += 6
                        continue
                    }
                    guard [0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74].contains(e) else {
                        return fail("an escape (\\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX)", at: i + 1)
                    }
                    i += 2
                    continue
                }
                i += 1
            }
            return fail("'\"' closing the string")
        }

        /// The code unit of the four hex digits at `at`, or nil when they are not four hex digits.
        func hexUnit(at: Int) -> Int? {
            guard at + 3 < bytes.count else { return nil }
            var v = 0
            for k in 0..<4 {
                let b = bytes[at + k]
                guard isHex(b) else { return nil }
                v = v << 4 | Int(b <= 0x39 ? b - 0x30 : (b | 0x20) - 0x61 + 10)
            }
            return v
        }

        /// The `\uXXXX` escape at `at`, as written.
        func escapeText(at: Int) -> String { text(at, min(at + 6, bytes.count)) }

        func text(_ from: Int, _ to: Int) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: bytes[from..<to]), as: UTF8.self)
        }

        func isHex(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b) }
        func isDigit(_ at: Int) -> Bool { at < bytes.count && (0x30...0x39).contains(bytes[at]) }

        mutating func number() -> Location? {
            let start = i
            if let e = numberSyntax() { return e }
            // Well formed: navd holds integers exactly in 64 bits and other numbers as doubles.
            let written = text(start, i)
            let shown = written.utf8.count > 40 ? String(written.prefix(40)) + "…" : written
            if !written.utf8.contains(where: { $0 == 0x2e || $0 == 0x65 || $0 == 0x45 }) {
                if Int64(written) == nil && UInt64(written) == nil {
                    return fail("an integer from -9223372036854775808 to 18446744073709551615 (navd keeps integers exact in 64 bits; write a larger one as a string)",
                                found: shown, at: start)
                }
            } else if let d = Double(written), d.isInfinite {
                return fail("a number within a double's range (about ±1.8e308)", found: shown, at: start)
            }
            return nil
        }

        mutating func numberSyntax() -> Location? {
            if bytes[i] == 0x2d { i += 1 }
            guard isDigit(i) else { return fail("a digit") }
            if bytes[i] == 0x30 {
                i += 1
            } else {
                while isDigit(i) { i += 1 }
            }
            if i < bytes.count, bytes[i] == 0x2e {
                i += 1
                guard isDigit(i) else { return fail("a digit after the decimal point") }
                while isDigit(i) { i += 1 }
            }
            if i < bytes.count, bytes[i] == 0x65 || bytes[i] == 0x45 {
                i += 1
                if i < bytes.count, bytes[i] == 0x2b || bytes[i] == 0x2d { i += 1 }
                guard isDigit(i) else { return fail("a digit of the exponent") }
                while isDigit(i) { i += 1 }
            }
            return nil
        }
    }
}
