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
