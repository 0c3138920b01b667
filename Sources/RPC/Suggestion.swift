// Names a client or a graph probably meant: the graph's diagnostics, navd's `methodNotFound` and
// navctl's unknown commands all say "did you mean …" from here.

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
