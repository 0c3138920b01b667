/// Strings made to match a setup field's `pattern`, so that exploration and the test plan can
/// navigate to a screen whose id is written `^t[0-9]+$` or `^[A-Z]{3}-\d{4}$`. It reads the
/// regular expressions graphs use (literals, `.`, classes `[a-z0-9_-]` and `[^…]`, `\d \w \s`
/// and their negations, groups, `|`, `? * + {n} {n,} {n,m}`, anchors) and gives up (no string)
/// on what it does not read (lookaround, back references). A string made is a guess, which
/// the schema validates as any other candidate: a wrong one is never used.
///
/// Bounded, as the pattern comes from a graph file: at most ``maxPattern`` characters read,
/// ``maxDepth`` nested groups, ``maxLength`` characters made, ``maxSteps`` parts written for
/// each string (nested repetitions multiply: `((()*)*)*` taken 64 times each is 64³ writes of
/// nothing).
public enum PatternSample {
    public static let maxPattern = 1024
    public static let maxDepth = 32
    public static let maxLength = 512
    public static let maxSteps = 100_000

    /// Strings matching `pattern`: each repetition taken its least number of times, then ever
    /// more (1, 2, 4 … 64 more, as its bound allows) so that a `minLength` can be met.
    public static func strings(_ pattern: String, maxSteps: Int = maxSteps) -> [String] {
        guard pattern.count <= maxPattern else { return [] }
        var parser = Parser(chars: Array(pattern))
        guard let node = parser.parseAlternation(depth: 0), parser.i == parser.chars.count else { return [] }
        var out: [String] = []
        for extra in [0, 1, 2, 4, 8, 16, 32, 64] {
            var made: [Character] = []
            var steps = maxSteps
            guard node.write(extra: extra, into: &made, steps: &steps), !out.contains(String(made)) else { continue }
            out.append(String(made))
        }
        return out
    }

    indirect enum Node {
        case literal(Character)
        /// A class: its members (ranges), or everything else when negated.
        case set([ClosedRange<Character>], negated: Bool)
        case sequence([Node])
        case alternation([Node])
        case repetition(Node, min: Int, max: Int?)
        /// An anchor or a boundary: nothing to write.
        case empty

        /// Writes one matching string, each repetition taken `extra` times more than its least;
        /// false when it would pass ``maxLength``, a class admits nothing made here, or it takes
        /// more than `steps` parts written.
        func write(extra: Int, into s: inout [Character], steps: inout Int) -> Bool {
            steps -= 1
            guard steps >= 0 else { return false }
            switch self {
            case .literal(let c):
                s.append(c)
            case .set(let ranges, let negated):
                guard let c = negated
                    ? Self.plain.first(where: { c in !ranges.contains { $0.contains(c) } })
                    : Self.pick(ranges) else { return false }
                s.append(c)
            case .sequence(let parts):
                for p in parts where !p.write(extra: extra, into: &s, steps: &steps) { return false }
            case .alternation(let options):
                // The first option that writes (`(a|b)` gives a).
                for o in options {
                    var attempt = s
                    if o.write(extra: extra, into: &attempt, steps: &steps) { s = attempt; return s.count <= PatternSample.maxLength }
                }
                return false
            case .repetition(let node, let min, let max):
                let times = Swift.min(max ?? Int.max, min + extra)
                for _ in 0..<times {
                    let before = s.count
                    guard node.write(extra: extra, into: &s, steps: &steps), s.count <= PatternSample.maxLength else { return false }
                    // A part that wrote nothing writes nothing again (`(^)*`, `(a{0})+`): once is enough.
                    if s.count == before { break }
                }
            case .empty:
                break
            }
            return s.count <= PatternSample.maxLength
        }

        /// Characters tried for a negated class and `.`, in order.
        static let plain: [Character] = ["x", "a", "1", "_", "-", "A", "0", " ", "."]

        /// A member of a class: a letter or digit it admits first (`[-._a-z]` gives a), else its
        /// first member.
        static func pick(_ ranges: [ClosedRange<Character>]) -> Character? {
            for c in plain.prefix(3) where ranges.contains(where: { $0.contains(c) }) { return c }
            for r in ranges {
                for c in ["a", "A", "1", "0"] as [Character] where r.contains(c) { return c }
            }
            return ranges.first?.lowerBound
        }
    }

    /// A recursive-descent reader of the pattern; nil for what it does not read.
    struct Parser {
        let chars: [Character]
        var i = 0

        mutating func parseAlternation(depth: Int) -> Node? {
            guard depth <= PatternSample.maxDepth else { return nil }
            var options: [Node] = []
            while true {
                guard let seq = parseSequence(depth: depth) else { return nil }
                options.append(seq)
                guard i < chars.count, chars[i] == "|" else { break }
                i += 1
            }
            return options.count == 1 ? options[0] : .alternation(options)
        }

        mutating func parseSequence(depth: Int) -> Node? {
            var parts: [Node] = []
            while i < chars.count, chars[i] != "|", chars[i] != ")" {
                guard let atom = parseAtom(depth: depth), let quantified = parseQuantifier(atom) else { return nil }
                parts.append(quantified)
            }
            return parts.count == 1 ? parts[0] : .sequence(parts)
        }

        mutating func parseAtom(depth: Int) -> Node? {
            let c = chars[i]
            i += 1
            switch c {
            case "^", "$": return .empty
            case ".": return .set([], negated: true)
            case "[": return parseClass()
            case "(":
                if i < chars.count, chars[i] == "?" {
                    // Only non-capturing and named groups; lookaround and flags are not read.
                    if i + 1 < chars.count, chars[i + 1] == ":" {
                        i += 2
                    } else if i + 1 < chars.count, chars[i + 1] == "<" || chars[i + 1] == "P",
                              let close = chars[i...].firstIndex(of: ">"),
                              chars[(i + 2)..<close].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "<" }) {
                        i = close + 1
                    } else {
                        return nil
                    }
                }
                guard let inner = parseAlternation(depth: depth + 1), i < chars.count, chars[i] == ")" else { return nil }
                i += 1
                return inner
            case ")", "*", "+", "?", "{", "|": return nil
            case "\\": return parseEscape(inClass: false).map { $0.node }
            default: return .literal(c)
            }
        }

        /// `\d`, `\w`, `\.` …: a class or a literal. Back references and `\p{…}` are not read.
        mutating func parseEscape(inClass: Bool) -> (node: Node, ranges: [ClosedRange<Character>]?)? {
            guard i < chars.count else { return nil }
            let c = chars[i]
            i += 1
            let digit: [ClosedRange<Character>] = ["0"..."9"]
            let word: [ClosedRange<Character>] = ["a"..."z", "A"..."Z", "0"..."9", "_"..."_"]
            let space: [ClosedRange<Character>] = [" "..." ", "\t"..."\t", "\n"..."\n", "\r"..."\r"]
            switch c {
            case "d": return (.set(digit, negated: false), digit)
            case "w": return (.set(word, negated: false), word)
            case "s": return (.set(space, negated: false), space)
            case "D": return inClass ? nil : (.set(digit, negated: true), nil)
            case "W": return inClass ? nil : (.set(word, negated: true), nil)
            case "S": return inClass ? nil : (.set(space, negated: true), nil)
            case "b", "B", "A", "z", "Z": return inClass ? nil : (.empty, nil)
            case "t": return (.literal("\t"), ["\t"..."\t"])
            case "n": return (.literal("\n"), ["\n"..."\n"])
            case "r": return (.literal("\r"), ["\r"..."\r"])
            case "1"..."9", "p", "P", "k", "u", "x", "c": return nil
            default:
                guard !c.isLetter && !c.isNumber else { return nil }
                return (.literal(c), [c...c])
            }
        }

        mutating func parseClass() -> Node? {
            var negated = false
            if i < chars.count, chars[i] == "^" { negated = true; i += 1 }
            var ranges: [ClosedRange<Character>] = []
            var first = true
            while i < chars.count {
                var c = chars[i]
                if c == "]" && !first { i += 1; return .set(ranges, negated: negated) }
                first = false
                i += 1
                if c == "\\" {
                    guard let e = parseEscape(inClass: true), let r = e.ranges else { return nil }
                    if r.count != 1 || r[0].lowerBound != r[0].upperBound { ranges += r; continue }
                    c = r[0].lowerBound
                } else if c == "[" {
                    return nil  // `[[:alpha:]]` and set operations are not read
                }
                if i + 1 < chars.count, chars[i] == "-", chars[i + 1] != "]" {
                    var hi = chars[i + 1]
                    i += 2
                    if hi == "\\" {
                        guard let e = parseEscape(inClass: true), let r = e.ranges, r.count == 1, r[0].lowerBound == r[0].upperBound else { return nil }
                        hi = r[0].lowerBound
                    }
                    guard c <= hi else { return nil }
                    ranges.append(c...hi)
                } else {
                    ranges.append(c...c)
                }
            }
            return nil  // no closing `]`
        }

        /// `?`, `*`, `+`, `{n}`, `{n,}`, `{n,m}` after an atom (a lazy or possessive mark after
        /// one is read and changes nothing here).
        mutating func parseQuantifier(_ atom: Node) -> Node? {
            guard i < chars.count else { return atom }
            var node: Node
            switch chars[i] {
            case "?": i += 1; node = .repetition(atom, min: 0, max: 1)
            case "*": i += 1; node = .repetition(atom, min: 0, max: nil)
            case "+": i += 1; node = .repetition(atom, min: 1, max: nil)
            case "{":
                guard let close = chars[i...].firstIndex(of: "}") else { return atom }
                let body = String(chars[(i + 1)..<close])
                let parts = body.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
                // Counts are ASCII digits only, as the pattern's matcher reads them (`Int` would take
                // `-1` and `+3`, and a negative count broke the writing).
                func count(_ text: Substring) -> Int? { text.allSatisfy { $0.isASCII && $0.isNumber } ? Int(text) : nil }
                guard let lo = count(parts[0]), lo <= PatternSample.maxLength else { return nil }
                var hi: Int? = lo
                if parts.count == 2 {
                    if parts[1].isEmpty { hi = nil } else {
                        guard let h = count(parts[1]), h >= lo else { return nil }
                        hi = h
                    }
                }
                i = close + 1
                node = .repetition(atom, min: lo, max: hi)
            default:
                return atom
            }
            if i < chars.count, chars[i] == "?" || chars[i] == "+" { i += 1 }
            return node
        }
    }
}
