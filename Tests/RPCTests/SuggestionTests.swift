import NavTesting
import Testing
@testable import RPC

/// "Did you mean …": the index a graph keeps answers as the plain walk over every name does.
@Suite struct SuggestionTests {
    @Test func aNearNameIsSuggestedAndAFarOneIsNot() {
        let index = SuggestionIndex(["shop.Product", "Product", "shop.Home", "Home", "account.Login", "Login"])
        #expect(index.suggestion(for: "Prodcut") == "Product")
        #expect(index.suggestion(for: "home") == "Home")
        #expect(index.suggestion(for: "shop.Hme") == "shop.Home")
        #expect(index.suggestion(for: "Checkout") == nil)
        #expect(index.suggestion(for: "") == nil)
        #expect(SuggestionIndex([String]()).suggestion(for: "x") == nil)
    }

    /// Random names over a small alphabet (so that many are near each other, ties included) and
    /// random words, some of them edits of a name: the index gives what the plain walk gives.
    @Test(arguments: 0..<4) func theIndexAgreesWithThePlainWalk(seed: UInt64) {
        var rng = SplitMix64(seed: 0x5E6 + seed)
        let alphabet = Array("abcAB.é_")
        func word(_ n: Int) -> String { String((0..<n).map { _ in alphabet.randomElement(using: &rng)! }) }
        for _ in 0..<200 {
            let names = (0..<Int.random(in: 0...40, using: &rng)).map { _ in word(Int.random(in: 1...9, using: &rng)) }
            let index = SuggestionIndex(names)
            for _ in 0..<30 {
                var w: String
                if let name = names.randomElement(using: &rng), Bool.random(using: &rng) {
                    var chars = Array(name)
                    for _ in 0..<Int.random(in: 0...3, using: &rng) {
                        let at = Int.random(in: 0...chars.count, using: &rng)
                        switch Int.random(in: 0..<3, using: &rng) {
                        case 0: chars.insert(alphabet.randomElement(using: &rng)!, at: at)
                        case 1: if at < chars.count { chars.remove(at: at) }
                        default: if at + 1 < chars.count { chars.swapAt(at, at + 1) }
                        }
                    }
                    w = String(chars)
                } else {
                    w = word(Int.random(in: 0...10, using: &rng))
                }
                #expect(index.suggestion(for: w) == suggestion(for: w, among: names), "\(w) among \(names)")
            }
        }
    }
}

extension SuggestionTests {
    /// 10,000 names of one family: a suggestion compares at most ``SuggestionIndex/comparedPerLength``
    /// names of each length (7 lengths at most), and still finds a name a typo at its end or at its
    /// start away (the alphabetical neighbours, then those read from the end).
    @Test func aSuggestionAmongThousandsComparesABoundedFewAndFindsTheNearName() {
        let names = (0..<10_000).map { "app.S\($0)" } + (0..<10_000).map { "S\($0)" }
        let index = SuggestionIndex(names)
        let bound = 7 * SuggestionIndex.comparedPerLength
        for (word, near) in [("app.S50001", "app.S5000"), ("xpp.S5000", "app.S5000"), ("App.s7321", "app.S7321"),
                             ("app.S732", "app.S732"), ("S50001", "S5000"), ("Q7321", "S7321"), ("app.Zzzzzz", nil)] {
            var compared = 0
            #expect(index.suggestion(for: word, compared: &compared) == near, "\(word)")
            #expect(compared <= bound, "\(word): \(compared) names compared")
        }
    }

    /// A word longer than any name could be gets no suggestion and costs no comparison: a client's
    /// 900 KB session name once walked the distance table of every session's name.
    @Test func aLongWordGetsNoSuggestion() {
        let long = String(repeating: "x", count: longestSuggestedWord + 1)
        var compared = 0
        #expect(SuggestionIndex(["x", String(long.dropLast())]).suggestion(for: long, compared: &compared) == nil)
        #expect(compared == 0)
        #expect(suggestion(for: long, among: [String(long.dropLast())]) == nil)
        #expect(suggestion(for: String(long.prefix(200)), among: [String(long.prefix(199))]) == String(long.prefix(199)))
    }

    /// Names are folded as `lowercased()` folds them, ASCII byte by byte and the rest by it.
    @Test func foldingIsLowercasing() {
        var rng = SplitMix64(seed: 0xF01D)
        let alphabet = Array("aZ@[`{09._-ÉéİßΣ\u{7F}\u{0}")
        for _ in 0..<2_000 {
            let name = String((0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            #expect(folded(name) == Array(name.lowercased().unicodeScalars), "\(name)")
        }
    }

    /// The plain walk keeps the first of the nearest names, as the full table's minimum does.
    @Test(arguments: 0..<2) func thePlainWalkAgreesWithTheTable(seed: UInt64) {
        var rng = SplitMix64(seed: 0x7AB + seed)
        let alphabet = Array("abAB.é")
        func word(_ n: Int) -> String { String((0..<n).map { _ in alphabet.randomElement(using: &rng)! }) }
        for _ in 0..<500 {
            let names = (0..<Int.random(in: 0...20, using: &rng)).map { _ in word(Int.random(in: 0...6, using: &rng)) }
            let w = word(Int.random(in: 0...7, using: &rng))
            let lw = Array(w.lowercased().unicodeScalars)
            var best: (String, Int)?
            for c in names {
                let d = editDistance(lw, Array(c.lowercased().unicodeScalars))
                if best == nil || d < best!.1 { best = (c, d) }
            }
            let expected = best.flatMap { $0.1 <= suggestionLimit(lw.count) ? $0.0 : nil }
            #expect(suggestion(for: w, among: names) == expected, "\(w) among \(names)")
        }
    }
}

/// The bit-vector distance is the table's, for words of every length it takes (1 to 64 scalars,
/// ASCII and not), and says nil exactly when the table's distance passes the bound.
@Suite struct BitDistanceTests {
    @Test(arguments: 0..<4) func itAgreesWithTheTable(seed: UInt64) {
        var rng = SplitMix64(seed: 0xB17 + seed)
        let alphabet = Array("abcd.é_Z".unicodeScalars)
        func word(_ n: Int) -> [Unicode.Scalar] { (0..<n).map { _ in alphabet.randomElement(using: &rng)! } }
        for _ in 0..<3_000 {
            let a = word(Int.random(in: 1...64, using: &rng))
            var b = Bool.random(using: &rng) ? a : word(Int.random(in: 0...66, using: &rng))
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                let at = Int.random(in: 0...b.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: b.insert(alphabet.randomElement(using: &rng)!, at: at)
                case 1: if at < b.count { b.remove(at: at) }
                default: if at + 1 < b.count { b.swapAt(at, at + 1) }
                }
            }
            let exact = editDistance(a, b)
            let bits = BitDistance(a)!
            #expect(bits.distance(to: b, atMost: 64 + 66) == exact, "\(String(String.UnicodeScalarView(a))) / \(String(String.UnicodeScalarView(b)))")
            let k = Int.random(in: 0...4, using: &rng)
            #expect(bits.distance(to: b, atMost: k) == (exact <= k ? exact : nil))
        }
        #expect(BitDistance([]) == nil && BitDistance(word(65)) == nil)
    }
}
