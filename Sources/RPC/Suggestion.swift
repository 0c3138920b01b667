// Names a client or a graph probably meant: the graph's diagnostics, navd's `methodNotFound` and
// navctl's unknown commands all say "did you mean …" from here.

/// At most `limit` of `names`, then how many there are in all (`total`, when `names` are the
/// first of more: a list of thousands need not be made to be cut): a message that lists what a
/// graph declares does not grow with the graph. `none` is said when there are none.
public func briefList(_ names: [String], none: String, limit: Int = 20, total: Int? = nil) -> String {
    let count = total ?? names.count
    if count == 0 { return none }
    if count <= limit { return names.joined(separator: ", ") }
    return names.prefix(limit).joined(separator: ", ") + " … (\(count) in all)"
}

/// Words longer than this (in UTF-8 bytes) get no suggestion: no name is a typo away from one so
/// long, and a comparison costs the word's length times the name's.
public let longestSuggestedWord = 256

/// `name` lowercased, as scalars: an ASCII name byte by byte (no `String` made), others by
/// `lowercased()`.
func folded(_ name: String) -> [Unicode.Scalar] {
    var out: [Unicode.Scalar] = []
    out.reserveCapacity(name.utf8.count)
    for b in name.utf8 {
        guard b < 0x80 else { return Array(name.lowercased().unicodeScalars) }
        out.append(Unicode.Scalar(b &- 0x41 < 26 ? b | 0x20 : b))
    }
    return out
}

/// The most edits a name may be from `count` scalars and still be suggested.
@inline(__always)
func suggestionLimit(_ count: Int) -> Int { max(1, min(3, (count + 2) / 3)) }

/// The closest of `candidates` to `word` when it is close enough to be a likely typo (the first of
/// the closest, in the sequence's order). Each comparison stops once it cannot beat the best so
/// far, and one whose length alone puts it too far costs a length check.
public func suggestion<S: Sequence>(for word: String, among candidates: S) -> String? where S.Element == String {
    guard word.utf8.count <= longestSuggestedWord else { return nil }
    let w = folded(word)
    var distances = Distances(w)
    var best: (name: String, distance: Int)?
    for c in candidates {
        // Within the limit and nearer than the best so far (the first of equals stays).
        let bound = best.map { $0.distance - 1 } ?? distances.limit
        if bound < 0 { break }
        if let d = distances.to(folded(c), atMost: bound) { best = (c, d) }
    }
    return best?.name
}

/// The distances from one word to many names, each answered only when at most a bound: by the
/// bit-vector walk for a word of 1 to 64 scalars, else by the table's band.
struct Distances {
    let word: [Unicode.Scalar]
    let limit: Int
    private let bits: BitDistance?
    private var rows: DistanceRows?

    init(_ word: [Unicode.Scalar]) {
        self.word = word
        limit = suggestionLimit(word.count)
        bits = BitDistance(word)
    }

    mutating func to(_ name: [Unicode.Scalar], atMost k: Int) -> Int? {
        if abs(name.count - word.count) > k { return nil }
        if let bits { return bits.distance(to: name, atMost: k) }
        if rows == nil { rows = DistanceRows(width: word.count + limit + 1) }
        return rows!.distance(word, name, atMost: k)
    }
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

/// Names prepared once (lowercased, grouped by length) for many lookups: a suggestion compares only
/// the names whose length is within the distance that counts, and stops each comparison as soon as
/// it cannot come within it. A graph's coordinators and routes keep one each, and a schema with many
/// properties one, so that a request naming an unknown one does not walk thousands of names.
///
/// What one suggestion costs is bounded whatever the names: of each length it compares at most
/// ``comparedPerLength`` names (7 lengths at most). Where a length has no more, its answer is the
/// one ``suggestion(for:among:)`` gives for the same names in the same order. Where it has more
/// (10,000 screens `app.S0` … `app.S9999`), it compares the names nearest to the word in
/// alphabetical order and the nearest read from the end (a typo leaves either the start or the end
/// of a long name in place), half and half.
public struct SuggestionIndex: Sendable {
    private struct Candidate: Sendable {
        let order: Int
        let name: String
        let scalars: [Unicode.Scalar]
    }
    private struct Bucket: Sendable {
        var candidates: [Candidate] = []
        /// For a bucket of more than ``comparedPerLength``: positions in `candidates` in the
        /// order of their scalars, and of their scalars read backwards.
        var forwards: [Int32] = []
        var backwards: [Int32] = []
    }
    /// The most names of one length a suggestion compares.
    public static let comparedPerLength = 128
    private let byLength: [Int: Bucket]

    public init(_ candidates: [String]) {
        var byLength: [Int: Bucket] = [:]
        var seen = Set<String>(minimumCapacity: candidates.count)
        for i in candidates.indices where seen.insert(candidates[i]).inserted {
            let name = candidates[i]
            let scalars = folded(name)
            byLength[scalars.count, default: Bucket()].candidates.append(Candidate(order: i, name: name, scalars: scalars))
        }
        for (length, bucket) in byLength where bucket.candidates.count > Self.comparedPerLength {
            let c = bucket.candidates
            let all = (0..<Int32(c.count)).map { $0 }
            byLength[length]!.forwards = all.sorted { Self.precedes(c[Int($0)].scalars, c[Int($1)].scalars, backwards: false) }
            byLength[length]!.backwards = all.sorted { Self.precedes(c[Int($0)].scalars, c[Int($1)].scalars, backwards: true) }
        }
        self.byLength = byLength
    }

    /// Whether `a` sorts before `b` (same length), comparing from the start or from the end.
    private static func precedes(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], backwards: Bool) -> Bool {
        let n = min(a.count, b.count)
        for i in 0..<n {
            let (x, y) = backwards ? (a[a.count - 1 - i], b[b.count - 1 - i]) : (a[i], b[i])
            if x != y { return x.value < y.value }
        }
        return a.count < b.count
    }

    /// The closest name to `word` when it is close enough to be a likely typo.
    public func suggestion(for word: String) -> String? {
        var compared = 0
        return suggestion(for: word, compared: &compared)
    }

    /// ``suggestion(for:)``, counting the names compared (for tests of its bound).
    func suggestion(for word: String, compared: inout Int) -> String? {
        guard word.utf8.count <= longestSuggestedWord else { return nil }
        let w = folded(word)
        var distances = Distances(w)
        let limit = distances.limit
        var best: (distance: Int, order: Int, name: String)?
        var n = 0
        func consider(_ c: Candidate) {
            n += 1
            let bound = best.map { $0.distance } ?? limit
            guard let d = distances.to(c.scalars, atMost: bound) else { return }
            if best == nil || d < best!.distance || (d == best!.distance && c.order < best!.order) { best = (d, c.order, c.name) }
        }
        for length in max(0, w.count - limit)...(w.count + limit) {
            guard let bucket = byLength[length] else { continue }
            if bucket.forwards.isEmpty {
                for c in bucket.candidates { consider(c) }
                continue
            }
            for (order, backwards) in [(bucket.forwards, false), (bucket.backwards, true)] {
                // The first position whose name sorts at or after the word, then outwards from it.
                var lo = 0, hi = order.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if Self.precedes(bucket.candidates[Int(order[mid])].scalars, w, backwards: backwards) { lo = mid + 1 } else { hi = mid }
                }
                var (below, above) = (lo - 1, lo)
                for k in 0..<Self.comparedPerLength / 2 {
                    let takeAbove = above < order.count && (k % 2 == 0 || below < 0)
                    if takeAbove {
                        consider(bucket.candidates[Int(order[above])])
                        above += 1
                    } else if below >= 0 {
                        consider(bucket.candidates[Int(order[below])])
                        below -= 1
                    } else {
                        break
                    }
                }
            }
        }
        compared += n
        return best?.name
    }
}

/// Where `a` and `b` differ: they agree on `a[..<lo]` and `b[..<lo]`, and on `a[ha...]` and
/// `b[hb...]` (an edit never needs their common start and end).
@inline(__always)
func differingParts(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> (lo: Int, ha: Int, hb: Int) {
    var lo = 0
    while lo < a.count && lo < b.count && a[lo] == b[lo] { lo += 1 }
    var (ha, hb) = (a.count, b.count)
    while ha > lo && hb > lo && a[ha - 1] == b[hb - 1] { (ha, hb) = (ha - 1, hb - 1) }
    return (lo, ha, hb)
}

/// ``editDistance(_:_:)`` from a word of 1 to 64 scalars to many others, a column of the distance
/// table at a time in the bits of one word (Hyyrö's bit-vector algorithm with transpositions, after
/// Myers): with the common start and end set aside, a comparison costs a few instructions per
/// scalar of the other name, where the table costs a few per cell.
struct BitDistance {
    private let word: [Unicode.Scalar]
    /// Where each scalar of the word is: a bit per position.
    private var ascii = [UInt64](repeating: 0, count: 128)
    private var others: [(Unicode.Scalar, UInt64)] = []

    /// Nil for an empty word or one longer than 64 scalars (the table does those).
    init?(_ word: [Unicode.Scalar]) {
        guard !word.isEmpty, word.count <= 64 else { return nil }
        self.word = word
        for (i, c) in word.enumerated() {
            if c.value < 128 {
                ascii[Int(c.value)] |= 1 << UInt64(i)
            } else if let at = others.firstIndex(where: { $0.0 == c }) {
                others[at].1 |= 1 << UInt64(i)
            } else {
                others.append((c, 1 << UInt64(i)))
            }
        }
    }

    private func positions(of c: Unicode.Scalar) -> UInt64 {
        if c.value < 128 { return ascii[Int(c.value)] }
        return others.first { $0.0 == c }?.1 ?? 0
    }

    /// The distance from the word to `b` when it is at most `k`, else nil.
    func distance(to b: [Unicode.Scalar], atMost k: Int) -> Int? {
        let a = word
        if abs(a.count - b.count) > k { return nil }
        let (lo, ha, hb) = differingParts(a, b)
        let m = ha - lo
        if m == 0 || hb == lo { return max(m, hb - lo) }  // (within k: the lengths differ by at most k)
        // The word's part between the common start and end: its positions shifted down by `lo`.
        let kept: UInt64 = m == 64 ? ~0 : (1 << UInt64(m)) - 1
        let last: UInt64 = 1 << UInt64(m - 1)
        var (vp, vn, d0, previous): (UInt64, UInt64, UInt64, UInt64) = (~0, 0, 0, 0)
        var score = m
        var left = hb - lo
        for j in lo..<hb {
            let pm = (positions(of: b[j]) >> UInt64(lo)) & kept
            let tr = ((~d0 & pm) << 1) & previous
            d0 = (((pm & vp) &+ vp) ^ vp) | pm | vn | tr
            var hp = vn | ~(d0 | vp)
            var hn = d0 & vp
            if hp & last != 0 { score += 1 } else if hn & last != 0 { score -= 1 }
            hp = (hp << 1) | 1
            hn = hn << 1
            vp = hn | ~(d0 | hp)
            vn = hp & d0
            previous = pm
            left -= 1
            // Each scalar left lowers the distance by one at most.
            if score - left > k { return nil }
        }
        return score
    }
}

/// Three rows of the distance table, kept across the comparisons of one lookup.
struct DistanceRows {
    private var prev2: [Int]
    private var prev: [Int]
    private var cur: [Int]

    init(width: Int) {
        prev2 = [Int](repeating: 0, count: width + 1)
        prev = prev2
        cur = prev2
    }

    /// ``editDistance(_:_:)`` of `a` and `b` when it is at most `k`, else nil: their common start
    /// and end set aside (an edit never needs them), then only the cells within `k` of the
    /// diagonal (a path leaving that band costs more than `k`), stopping once no later row can
    /// come within `k`.
    mutating func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], atMost k: Int) -> Int? {
        if abs(a.count - b.count) > k { return nil }
        let (lo, ha, hb) = differingParts(a, b)
        let (m, n) = (ha - lo, hb - lo)
        if m == 0 || n == 0 { return max(m, n) }  // (within k: the lengths differ by at most k)
        if cur.count < n + 1 { self = DistanceRows(width: n) }
        let far = k + 1  // any cost past k
        for j in 0...n { prev[j] = min(j, far) }
        var prevMin = 0
        for i in 1...m {
            let (jlo, jhi) = (max(1, i - k), min(n, i + k))
            cur[jlo - 1] = jlo == 1 ? min(i, far) : far
            var rowMin = cur[jlo - 1]
            let x = a[lo + i - 1]
            for j in jlo...jhi {
                let y = b[lo + j - 1]
                var v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x == y ? 0 : 1))
                if i > 1, j > 1, x == b[lo + j - 2], a[lo + i - 2] == y { v = min(v, prev2[j - 2] + 1) }
                cur[j] = min(v, far)
                rowMin = min(rowMin, cur[j])
            }
            if jhi < n { cur[jhi + 1] = far }  // what the next row reads beyond this row's band
            // A later row's cells come from this row (+0 or more) or the one before (+1 or more).
            if rowMin > k && prevMin >= k { return nil }
            prevMin = rowMin
            (prev2, prev, cur) = (prev, cur, prev2)
        }
        return prev[n] <= k ? prev[n] : nil
    }
}
