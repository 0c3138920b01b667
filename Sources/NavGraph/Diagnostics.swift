/// A position in a graph file: 1-based line and column, as editors count them.
public struct SourceLocation: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }

    public static func < (a: SourceLocation, b: SourceLocation) -> Bool {
        (a.file, a.line, a.column) < (b.file, b.line, b.column)
    }
}

/// One problem found while loading a graph, printed like a compiler's:
/// `FILE:LINE:COLUMN: error: MESSAGE`.
public struct Diagnostic: Sendable, Hashable, CustomStringConvertible {
    public enum Severity: String, Sendable { case error, warning }

    public var severity: Severity
    public var location: SourceLocation
    public var message: String

    public init(_ severity: Severity, _ location: SourceLocation, _ message: String) {
        self.severity = severity
        self.location = location
        self.message = message
    }

    public var description: String { "\(location): \(severity.rawValue): \(message)" }
}

/// The diagnostics of one load, kept in the order the files are read and sorted on output.
public struct Diagnostics: Sendable {
    public private(set) var all: [Diagnostic] = []

    public init() {}

    mutating func error(_ at: SourceLocation, _ message: String) { all.append(Diagnostic(.error, at, message)) }
    mutating func warning(_ at: SourceLocation, _ message: String) { all.append(Diagnostic(.warning, at, message)) }

    public var hasErrors: Bool { all.contains { $0.severity == .error } }
    public var errors: [Diagnostic] { sorted.filter { $0.severity == .error } }
    public var warnings: [Diagnostic] { sorted.filter { $0.severity == .warning } }

    /// Sorted by file, line and column; errors before warnings at one position.
    public var sorted: [Diagnostic] {
        all.enumerated().sorted { a, b in
            if a.element.location != b.element.location { return a.element.location < b.element.location }
            if a.element.severity != b.element.severity { return a.element.severity == .error }
            return a.offset < b.offset
        }.map(\.element)
    }
}

/// Whether `s` is a name as the graph's names and session names are written: letters, digits, `_`,
/// `-`, and `.` where `dots` (session names; a graph's own names are unqualified, without dots).
/// Nothing a shell or a terminal would read as code or a control sequence.
public func isPlainName(_ s: String, dots: Bool = false) -> Bool {
    !s.isEmpty && s.utf8.allSatisfy { b in
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2D || (dots && b == 0x2E)
    }
}

/// The first character of `s` that ``isPlainName(_:dots:)`` does not allow, written so that it
/// shows (a control character as \u{…}).
public func firstUnplainCharacter(_ s: String, dots: Bool = false) -> String? {
    for ch in s where !isPlainName(String(ch), dots: dots) {
        if ch == " " { return "a space" }
        return ch.unicodeScalars.allSatisfy { $0.properties.generalCategory == .control || $0.value == 0x7F || $0 == " " }
            ? ch.unicodeScalars.map { "\\u{\(String($0.value, radix: 16))}" }.joined() : "`\(ch)`"
    }
    return nil
}
