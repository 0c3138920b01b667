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

/// The closest of `candidates` to `word` when it is close enough to be a likely typo.
public func suggestion<S: Sequence>(for word: String, among candidates: S) -> String? where S.Element == String {
    let w = Array(word.lowercased().unicodeScalars)
    var best: (String, Int)?
    for c in candidates {
        let d = editDistance(w, Array(c.lowercased().unicodeScalars))
        if best == nil || d < best!.1 { best = (c, d) }
    }
    guard let (name, distance) = best else { return nil }
    let limit = max(1, min(3, (w.count + 2) / 3))
    return distance <= limit ? name : nil
}

/// Damerau-Levenshtein distance (adjacent transpositions count as one edit).
func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var prev2 = [Int](repeating: 0, count: b.count + 1)
    var prev = Array(0...b.count)
    var cur = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        cur[0] = i
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                cur[j] = min(cur[j], prev2[j - 2] + 1)
            }
        }
        (prev2, prev, cur) = (prev, cur, prev2)
    }
    return prev[b.count]
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
