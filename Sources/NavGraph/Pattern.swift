/// A setup schema's `pattern`, compiled once at load and matched in time linear in the string:
/// its program is a Thompson NFA run over all of its states at once, as RE2 and Go's regexp do,
/// never backtracking. A graph's pattern is hostile input like the rest of the file: a pattern such
/// as `^(a+)+$` took a backtracking matcher seconds on a string of 30 characters, with the event
/// loop blocked.
///
/// The syntax is ECMA-262's (JSON Schema's) without what only backtracking gives: alternation,
/// groups (`(…)`, `(?:…)`, `(?<name>…)`), the quantifiers `*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`
/// (lazy forms too: they match the same strings), `.`, `^`, `$`, `\b`, `\B`, classes with ranges,
/// `\d \w \s` and their negations, and the escapes of characters. Backreferences, lookahead and
/// lookbehind are refused, as are a repetition count above ``maxCount`` and a program longer than
/// ``maxInstructions``. Characters are Unicode scalars. The match is unanchored, as JSON Schema's
/// `pattern` is: some part of the string must match.
public struct Pattern: Sendable {
    /// The longest program (each character, class, assertion and branch one instruction; `x{3}`
    /// three copies of `x`): matching costs at most this much per character of the string.
    public static let maxInstructions = 1_000
    /// The largest count in `{n}`, `{n,}` or `{n,m}`.
    public static let maxCount = 1_000
    /// The deepest nesting of groups.
    public static let maxDepth = 100

    public let source: String
    private let program: [Instruction]
    private let sets: [ScalarSet]

    public init(_ source: String) throws(PatternError) {
        self.source = source
        var parser = PatternParser(Array(source.unicodeScalars))
        let tree = try parser.parse()
        var compiler = PatternCompiler()
        try compiler.emit(tree)
        compiler.program.append(.match)
        program = compiler.program
        // Each class once, however many copies of it the program holds (`[…]{500}`).
        sets = parser.sets
    }

    /// The most steps one check takes (a state of the program visited at a position of the
    /// string): about the string's length times the states the pattern keeps alive at once. A
    /// check that would take more stops, ``Outcome/tooCostly``, after about 6 ms (release build).
    public static let maxSteps = 1_000_000

    public enum Outcome: Sendable, Equatable {
        case matches
        case doesNotMatch
        /// Stopped after ``Pattern/maxSteps``: the string is too long for this pattern.
        case tooCostly
    }

    /// Whether some part of `s` matches (false too when the check is ``Outcome/tooCostly``).
    public func matches(_ s: String) -> Bool { check(s) == .matches }

    /// Whether some part of `s` matches, in at most ``maxSteps`` steps.
    public func check(_ s: String) -> Outcome {
        var steps = 0
        var current: [Int] = [], next: [Int] = []
        current.reserveCapacity(program.count)
        next.reserveCapacity(program.count)
        // The position each instruction was last added at: a state is in a list at most once.
        var addedAt = [Int](repeating: -1, count: program.count)
        var stack: [Int] = []
        var it = s.unicodeScalars.makeIterator()
        var previous: Unicode.Scalar? = nil
        var here = it.next()
        var position = 0

        /// Adds `pc` and what it reaches without reading a character, at `position` (between
        /// `before` and `after`); true once the match instruction is reached.
        func add(_ pc: Int, to list: inout [Int], at position: Int, before: Unicode.Scalar?, after: Unicode.Scalar?) -> Bool {
            stack.append(pc)
            while let pc = stack.popLast() {
                guard addedAt[pc] != position else { continue }
                addedAt[pc] = position
                steps &+= 1
                switch program[pc] {
                case .match:
                    stack.removeAll(keepingCapacity: true)
                    return true
                case .jump(let to): stack.append(to)
                case .split(let a, let b):
                    stack.append(b)
                    stack.append(a)
                case .start: if before == nil { stack.append(pc + 1) }
                case .end: if after == nil { stack.append(pc + 1) }
                case .boundary(let wanted):
                    if (Self.isWord(before) != Self.isWord(after)) == wanted { stack.append(pc + 1) }
                case .scalar, .any, .set: list.append(pc)
                }
            }
            return false
        }

        while true {
            // A match may start here (unanchored).
            if add(0, to: &current, at: position, before: previous, after: here) { return .matches }
            guard let c = here else { return .doesNotMatch }
            steps &+= current.count
            if steps > Self.maxSteps { return .tooCostly }
            let following = it.next()
            for pc in current {
                let advances: Bool
                switch program[pc] {
                case .scalar(let x): advances = c.value == x
                case .any: advances = !Self.isLineTerminator(c)
                case .set(let i): advances = sets[i].contains(c.value)
                default: advances = false
                }
                if advances, add(pc + 1, to: &next, at: position + 1, before: c, after: following) { return .matches }
            }
            swap(&current, &next)
            next.removeAll(keepingCapacity: true)
            previous = c
            here = following
            position += 1
        }
    }

    private static func isWord(_ c: Unicode.Scalar?) -> Bool {
        guard let v = c?.value else { return false }
        return (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A) || v == 0x5F
    }

    private static func isLineTerminator(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        return v == 0x0A || v == 0x0D || v == 0x2028 || v == 0x2029
    }
}

/// Why a pattern is refused: what is wrong and where (a 0-based offset in Unicode scalars).
public struct PatternError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public let offset: Int
    public var description: String { "\(message) (at character \(offset + 1))" }
}

private enum Instruction: Sendable {
    case scalar(UInt32)
    case any
    case set(Int)
    case split(Int, Int)
    case jump(Int)
    case start
    case end
    case boundary(Bool)
    case match
}

/// A class: its ranges (sorted and merged once the class is read: looked up by halving), the
/// classes it holds negated (`[\D]`), and whether it is negated itself.
private struct ScalarSet: Sendable {
    var ranges: [ClosedRange<UInt32>] = []
    var excluding: [[ClosedRange<UInt32>]] = []
    var negated = false

    func contains(_ v: UInt32) -> Bool {
        var found = Self.holds(ranges, v)
        if !found { found = excluding.contains { !Self.holds($0, v) } }
        return found != negated
    }

    /// Whether sorted, disjoint `ranges` hold `v`.
    private static func holds(_ ranges: [ClosedRange<UInt32>], _ v: UInt32) -> Bool {
        var lo = 0, hi = ranges.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ranges[mid].upperBound < v { lo = mid + 1 } else { hi = mid }
        }
        return lo < ranges.count && ranges[lo].lowerBound <= v
    }

    /// Sorts and merges the ranges (overlapping or adjacent ones become one).
    mutating func normalize() {
        ranges.sort { $0.lowerBound < $1.lowerBound }
        var merged: [ClosedRange<UInt32>] = []
        merged.reserveCapacity(ranges.count)
        for r in ranges {
            if let last = merged.last, r.lowerBound <= last.upperBound &+ 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                merged.append(r)
            }
        }
        ranges = merged
    }

    static let digit: [ClosedRange<UInt32>] = [0x30...0x39]
    static let word: [ClosedRange<UInt32>] = [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A]
    /// ECMA-262's white space and line terminators.
    static let space: [ClosedRange<UInt32>] = [0x09...0x0D, 0x20...0x20, 0xA0...0xA0, 0x1680...0x1680, 0x2000...0x200A,
                                               0x2028...0x2029, 0x202F...0x202F, 0x205F...0x205F, 0x3000...0x3000, 0xFEFF...0xFEFF]
}

private indirect enum Node {
    case empty
    case scalar(UInt32)
    case any
    /// A class, by its index among the parser's ``PatternParser/sets``.
    case set(Int)
    case start
    case end
    case boundary(Bool)
    case sequence([Node])
    case alternation([Node])
    case repetition(Node, min: Int, max: Int?)

    var isAssertion: Bool {
        switch self {
        case .start, .end, .boundary: return true
        default: return false
        }
    }
}

private struct PatternParser {
    let s: [Unicode.Scalar]
    var i = 0
    var depth = 0
    /// The classes read, each normalized.
    var sets: [ScalarSet] = []

    private mutating func intern(_ set: ScalarSet) -> Node {
        var set = set
        set.normalize()
        sets.append(set)
        return .set(sets.count - 1)
    }

    init(_ s: [Unicode.Scalar]) { self.s = s }

    private func fail(_ message: String, at offset: Int? = nil) -> PatternError {
        PatternError(message: message, offset: min(offset ?? i, max(0, s.count - 1)))
    }

    private var peek: Unicode.Scalar? { i < s.count ? s[i] : nil }

    mutating func parse() throws(PatternError) -> Node {
        let node = try alternation()
        if i < s.count { throw fail("`)` closes no group") }
        return node
    }

    private mutating func alternation() throws(PatternError) -> Node {
        var branches = [try sequence()]
        while peek == "|" {
            i += 1
            branches.append(try sequence())
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func sequence() throws(PatternError) -> Node {
        var items: [Node] = []
        while let c = peek, c != "|", c != ")" {
            items.append(try quantified())
        }
        return items.isEmpty ? .empty : items.count == 1 ? items[0] : .sequence(items)
    }

    private mutating func quantified() throws(PatternError) -> Node {
        let at = i
        let atom = try self.atom()
        guard let (min, max) = try quantifier() else { return atom }
        if atom.isAssertion && s[at] != "(" { throw fail("an assertion (`^`, `$`, `\\b`, `\\B`) cannot be repeated", at: at) }
        if peek == "?" { i += 1 }  // lazy: the same strings match
        if let c = peek, c == "*" || c == "+" || c == "?" || (c == "{" && lookingAtCount()) {
            throw fail("`\(c)` repeats what is already repeated; write one quantifier, or put the repeated part in a group")
        }
        return .repetition(atom, min: min, max: max)
    }

    /// `*`, `+`, `?` or `{n}`, `{n,}`, `{n,m}` at `i` (consumed), or nil. A `{` that does not
    /// begin a count is a character (as ECMA-262's web form reads it).
    private mutating func quantifier() throws(PatternError) -> (Int, Int?)? {
        switch peek {
        case "*": i += 1; return (0, nil)
        case "+": i += 1; return (1, nil)
        case "?": i += 1; return (0, 1)
        case "{":
            guard lookingAtCount() else { return nil }
            let at = i
            i += 1
            let min = try number()
            var max: Int? = min
            if peek == "," {
                i += 1
                max = peek == "}" ? nil : try number()
            }
            i += 1  // "}"
            if let max, max < min { throw fail("`{\(min),\(max)}`: the largest count is below the smallest", at: at) }
            return (min, max)
        default: return nil
        }
    }

    private func lookingAtCount() -> Bool {
        var j = i + 1
        func digits() -> Bool {
            let start = j
            while j < s.count, s[j].asciiDigit != nil { j += 1 }
            return j > start
        }
        guard digits() else { return false }
        if j < s.count, s[j] == "," {
            j += 1
            _ = digits()
        }
        return j < s.count && s[j] == "}"
    }

    private mutating func number() throws(PatternError) -> Int {
        let at = i
        var n = 0
        while let c = peek, let d = c.asciiDigit {
            n = n * 10 + d
            if n > Pattern.maxCount { throw fail("a count above \(Pattern.maxCount) (at most \(Pattern.maxCount) repetitions)", at: at) }
            i += 1
        }
        return n
    }

    private mutating func atom() throws(PatternError) -> Node {
        let at = i
        let c = s[i]
        i += 1
        switch c {
        case "(":
            if peek == "?" {
                let kind = i + 1 < s.count ? s[i + 1] : nil
                if kind == ":" {
                    i += 2
                } else if kind == "=" || kind == "!" {
                    throw fail("lookahead (`(?\(kind!)`) is not supported: navd matches patterns without backtracking", at: at)
                } else if kind == "<", i + 2 < s.count, s[i + 2] == "=" || s[i + 2] == "!" {
                    throw fail("lookbehind (`(?<\(s[i + 2])`) is not supported: navd matches patterns without backtracking", at: at)
                } else if kind == "<" {
                    // A named group: its name, then the group (names are not used: only whether it matches).
                    i += 2
                    let nameStart = i
                    while let n = peek, n != ">" {
                        guard n.properties.isAlphabetic || n.asciiDigit != nil || n == "_" || n == "$" else {
                            throw fail("a group name is letters, digits, `_` and `$`, then `>`")
                        }
                        i += 1
                    }
                    if peek != ">" || i == nameStart { throw fail("a named group is `(?<name>…)`", at: at) }
                    i += 1
                } else {
                    throw fail("`(?` begins `(?:…)` or `(?<name>…)`; other groups are not supported", at: at)
                }
            }
            depth += 1
            if depth > Pattern.maxDepth { throw fail("groups nested more than \(Pattern.maxDepth) deep", at: at) }
            let inner = try alternation()
            guard peek == ")" else { throw fail("the group opened here is not closed: add `)`", at: at) }
            i += 1
            depth -= 1
            return inner
        case "[": return intern(try characterClass(at: at))
        case ".": return .any
        case "^": return .start
        case "$": return .end
        case "\\": return try escape(at: at)
        case "*", "+", "?": throw fail("`\(c)` repeats nothing: escape it (`\\\(c)`) to match the character", at: at)
        case "{":
            i -= 1
            if lookingAtCount() { throw fail("`{` repeats nothing: escape it (`\\{`) to match the character", at: at) }
            i += 1
            return .scalar(c.value)
        default: return .scalar(c.value)
        }
    }

    /// After `\` outside a class.
    private mutating func escape(at: Int) throws(PatternError) -> Node {
        guard let c = peek else { throw fail("the pattern ends in `\\`: escape it as `\\\\`", at: at) }
        switch c {
        case "b": i += 1; return .boundary(true)
        case "B": i += 1; return .boundary(false)
        case "1"..."9": throw fail("backreferences (`\\\(c)`) are not supported: navd matches patterns without backtracking", at: at)
        case "k" where i + 1 < s.count && s[i + 1] == "<":
            throw fail("backreferences (`\\k<…>`) are not supported: navd matches patterns without backtracking", at: at)
        default:
            switch try classOrCharacter(at: at, inClass: false) {
            case .scalar(let v): return .scalar(v)
            case .ranges(let r, let negated): return intern(negated ? ScalarSet(excluding: [r]) : ScalarSet(ranges: r))
            }
        }
    }

    private enum Escaped {
        case scalar(UInt32)
        case ranges([ClosedRange<UInt32>], negated: Bool)
    }

    /// After `\`: a class escape (`\d`, …) or one character.
    private mutating func classOrCharacter(at: Int, inClass: Bool) throws(PatternError) -> Escaped {
        let c = s[i]
        i += 1
        switch c {
        case "d": return .ranges(ScalarSet.digit, negated: false)
        case "D": return .ranges(ScalarSet.digit, negated: true)
        case "w": return .ranges(ScalarSet.word, negated: false)
        case "W": return .ranges(ScalarSet.word, negated: true)
        case "s": return .ranges(ScalarSet.space, negated: false)
        case "S": return .ranges(ScalarSet.space, negated: true)
        case "t": return .scalar(0x09)
        case "n": return .scalar(0x0A)
        case "v": return .scalar(0x0B)
        case "f": return .scalar(0x0C)
        case "r": return .scalar(0x0D)
        case "b" where inClass: return .scalar(0x08)
        case "0" where peek?.asciiDigit == nil: return .scalar(0)
        case "c":
            if let l = peek, l.isASCII, l.properties.isAlphabetic {
                i += 1
                return .scalar(l.value % 32)
            }
            throw fail("`\\c` is followed by a letter (a control character)", at: at)
        case "x":
            guard let v = hex(count: 2) else { throw fail("`\\x` is followed by two hex digits", at: at) }
            return .scalar(v)
        case "u":
            if peek == "{" {
                i += 1
                var v: UInt32 = 0, digits = 0
                while let h = peek?.hexDigitValue, digits < 8 {
                    v = v * 16 + UInt32(h)
                    digits += 1
                    i += 1
                }
                guard digits > 0, peek == "}", v <= 0x10FFFF else { throw fail("`\\u{…}` holds the hex digits of a code point up to 10FFFF", at: at) }
                i += 1
                return .scalar(v)
            }
            guard let v = hex(count: 4) else { throw fail("`\\u` is followed by four hex digits, or `{…}`", at: at) }
            return .scalar(v)
        default:
            if c.isASCII && (c.properties.isAlphabetic || c.asciiDigit != nil) {
                throw fail("`\\\(c)` is not an escape navd knows: write the character, or `\\d \\w \\s \\b`, `\\t \\n`, `\\xHH`, `\\uHHHH`", at: at)
            }
            return .scalar(c.value)
        }
    }

    private mutating func hex(count: Int) -> UInt32? {
        guard i + count <= s.count else { return nil }
        var v: UInt32 = 0
        for k in 0..<count {
            guard let h = s[i + k].hexDigitValue else { return nil }
            v = v * 16 + UInt32(h)
        }
        i += count
        return v
    }

    /// After `[`.
    private mutating func characterClass(at: Int) throws(PatternError) -> ScalarSet {
        var set = ScalarSet()
        if peek == "^" {
            set.negated = true
            i += 1
        }
        func member(_ p: inout PatternParser) throws(PatternError) -> Escaped {
            let c = p.s[p.i]
            if c == "\\" {
                p.i += 1
                guard p.i < p.s.count else { throw p.fail("the pattern ends in `\\`", at: p.i - 1) }
                return try p.classOrCharacter(at: p.i - 1, inClass: true)
            }
            p.i += 1
            return .scalar(c.value)
        }
        while true {
            guard let c = peek else { throw fail("the class opened here is not closed: add `]`", at: at) }
            if c == "]" {
                i += 1
                return set
            }
            let first = try member(&self)
            if peek == "-", i + 1 < s.count, s[i + 1] != "]" {
                let dash = i
                i += 1
                let last = try member(&self)
                if case .scalar(let lo) = first, case .scalar(let hi) = last {
                    if lo > hi { throw fail("the range `\(Self.show(lo))-\(Self.show(hi))` is out of order: write the smaller end first", at: dash) }
                    set.ranges.append(lo...hi)
                    continue
                }
                // A class escape at either end: the `-` is a character (ECMA-262's web form).
                add(first, to: &set)
                set.ranges.append(0x2D...0x2D)
                add(last, to: &set)
                continue
            }
            add(first, to: &set)
        }
    }

    private func add(_ e: Escaped, to set: inout ScalarSet) {
        switch e {
        case .scalar(let v): set.ranges.append(v...v)
        case .ranges(let r, let negated):
            if negated { set.excluding.append(r) } else { set.ranges += r }
        }
    }

    private static func show(_ v: UInt32) -> String { Unicode.Scalar(v).map { String($0) } ?? "\\u{\(String(v, radix: 16))}" }
}

extension Unicode.Scalar {
    fileprivate var asciiDigit: Int? { value >= 0x30 && value <= 0x39 ? Int(value - 0x30) : nil }
    fileprivate var hexDigitValue: Int? {
        switch value {
        case 0x30...0x39: return Int(value - 0x30)
        case 0x41...0x46: return Int(value - 0x41 + 10)
        case 0x61...0x66: return Int(value - 0x61 + 10)
        default: return nil
        }
    }
}

private struct PatternCompiler {
    var program: [Instruction] = []

    private mutating func append(_ i: Instruction) throws(PatternError) {
        if program.count >= Pattern.maxInstructions {
            throw PatternError(message: "the pattern compiles to more than \(Pattern.maxInstructions) instructions (each repetition `{n}` copies what it repeats): write it shorter",
                               offset: 0)
        }
        program.append(i)
    }

    mutating func emit(_ node: Node) throws(PatternError) {
        switch node {
        case .empty: break
        case .scalar(let v): try append(.scalar(v))
        case .any: try append(.any)
        case .set(let i): try append(.set(i))
        case .start: try append(.start)
        case .end: try append(.end)
        case .boundary(let b): try append(.boundary(b))
        case .sequence(let items): for n in items { try emit(n) }
        case .alternation(let branches):
            var jumps: [Int] = []
            for (k, b) in branches.enumerated() {
                if k < branches.count - 1 {
                    let split = program.count
                    try append(.split(split + 1, -1))
                    try emit(b)
                    jumps.append(program.count)
                    try append(.jump(-1))
                    program[split] = .split(split + 1, program.count)
                } else {
                    try emit(b)
                }
            }
            for j in jumps { program[j] = .jump(program.count) }
        case .repetition(let inner, let min, let max):
            for _ in 0..<min { try emit(inner) }
            if let max {
                // Each optional copy may be skipped, ending the repetition.
                var splits: [Int] = []
                for _ in min..<max {
                    splits.append(program.count)
                    try append(.split(program.count + 1, -1))
                    try emit(inner)
                }
                for s in splits { program[s] = .split(s + 1, program.count) }
            } else {
                let loop = program.count
                try append(.split(loop + 1, -1))
                try emit(inner)
                try append(.jump(loop))
                program[loop] = .split(loop + 1, program.count)
            }
        }
    }
}
