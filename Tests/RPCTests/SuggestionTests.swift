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
