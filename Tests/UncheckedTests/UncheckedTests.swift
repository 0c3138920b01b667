import Foundation
import Testing
@testable import Unchecked

final class Item {
    let n: Int
    init(_ n: Int) { self.n = n }
}

/// The fenced module on its own: unretained references, C context pointers, the unretained table.
@Suite struct UncheckedTests {
    @Test func anUnretainedReferenceReadsItsObjectWithoutKeepingIt() {
        let a = Item(1), b = Item(2)
        let r = Unretained(a)
        #expect(r.object === a && r.with { $0.n } == 1)
        #expect(r === Unretained(a) && !(r === Unretained(b)))
        #expect(Unretained<Item>(opaque: r.opaque).object === a)
        let array = [a, b]
        #expect(Unretained.element(1, of: array).object === b)
        // It counts nothing: the object goes when its last counted reference does.
        weak var gone: Item?
        var kept: Unretained<Item>?
        do {
            let c = Item(3)
            gone = c
            kept = Unretained(c)
        }
        #expect(gone == nil && kept != nil)
    }

    /// The array a loop walks keeps every element alive, even when the loop empties the array it
    /// came from and drops the elements' other references (under `make test-asan` too).
    @Test func aLoopOverAnArrayWithoutCountingKeepsEveryElementAlive() {
        var source: ContiguousArray<Item>? = [Item(1), Item(2), Item(3)]
        weak var last: Item?
        last = source?.last
        var seen: [Int] = []
        let walked = source!
        walked.forEachUncounted { item in
            source = nil  // the loop's own copy holds them
            seen.append(item.n)
        }
        #expect(seen == [1, 2, 3] && last != nil)
        _ = consume walked
        #expect(last == nil, "nothing more holds them once the loop's array goes")
    }

    @Test func aCContextIsRetainedUntilTakenBack() {
        weak var gone: Item?
        var pointer: UnsafeMutableRawPointer?
        do {
            let item = Item(7)
            gone = item
            pointer = CContext.retain(item)
        }
        #expect(gone != nil, "C's reference keeps it")
        #expect(CContext.peek(pointer!, as: Item.self).n == 7)
        #expect(CContext.take(pointer!, as: Item.self).n == 7)
        #expect(gone == nil, "taken back: released")
        do {
            let item = Item(8)
            gone = item
            pointer = CContext.retain(item)
        }
        CContext.release(pointer!, as: Item.self)
        #expect(gone == nil)
    }

    @Test func theTableListsByKeyThroughGrowthAndRemoval() {
        let table = UnretainedTable<Item>()
        let items = (0..<1000).map(Item.init)
        for i in items { table.insert(i, key: i.n * 3) }
        #expect(table.count == 1000)
        #expect(table[-1] == nil && table[1] == nil)
        #expect(items.allSatisfy { table[$0.n * 3] === $0 })
        // Removing every other key keeps the rest findable (entries move back into the gaps).
        for i in items where i.n % 2 == 0 { table.remove(key: i.n * 3) }
        #expect(table.count == 500)
        #expect(items.allSatisfy { (table[$0.n * 3] === $0) == ($0.n % 2 == 1) })
        let replacement = Item(-1)
        table.insert(replacement, key: 3)
        #expect(table[3] === replacement && table.count == 500)
        table.removeAll()
        #expect(table.count == 0 && table[9] == nil)
    }

    @Test func randomInsertsAndRemovalsMatchADictionary() {
        var rng = SystemRandomNumberGenerator()
        let table = UnretainedTable<Item>()
        var model: [Int: Item] = [:]
        let pool = (0..<64).map(Item.init)
        for _ in 0..<20_000 {
            let key = Int.random(in: 0..<200, using: &rng)
            if Bool.random(using: &rng) {
                let item = pool[Int.random(in: 0..<64, using: &rng)]
                table.insert(item, key: key)
                model[key] = item
            } else {
                table.remove(key: key)
                model[key] = nil
            }
        }
        #expect(table.count == model.count)
        #expect((0..<200).allSatisfy { table[$0] === model[$0] })
    }

    @Test func aNameTableFindsEveryNameByItsBytesAndNothingElse() {
        // Names that share lengths, first, middle and last bytes (the hash's inputs) collide.
        var names = ["", "a", "ab", "ba", "navigate", "navigatf", "session.open", "session.list", "x" + String(repeating: "y", count: 40)]
        names += (0..<200).map { "m\($0 % 10)\($0)z" }
        let table = NameTable(names)
        #expect(table.count == names.count)
        for (i, n) in names.enumerated() {
            #expect(ByteView.of(n) { table.index(of: $0) } == i, "\(n)")
            #expect(ByteView.of(n) { table.matches(i, $0) })
        }
        for absent in ["b", "navigatg", "session.opem", "m0 0z", "x" + String(repeating: "y", count: 39), "aa"] {
            #expect(ByteView.of(absent) { table.index(of: $0) } == nil, "\(absent)")
        }
        #expect(NameTable([]).index(of: ByteView(UnsafeRawBufferPointer(start: nil, count: 0))) == nil)
    }

    @Test func lookAlikeNamesSpreadOverTheTable() {
        // A graph's names differ in their last bytes: every byte must move a name's slot, or a
        // look-up walks a run of the names that share the rest.
        for pattern in ["app.S#", "m.S#", "shop.Screen#", "feature.Item#", "module.VeryLongScreenName#", "#", "m.Screen#WithASuffixPastSixteenBytes"] {
            let names = (0..<10_000).map { pattern.replacingOccurrences(of: "#", with: "\($0)") }
            let table = NameTable(names)
            let probes = names.map { n in ByteView.of(n) { table.probes(of: $0) } }
            let absent = (10_000..<12_000).map { n in ByteView.of(pattern.replacingOccurrences(of: "#", with: "\(n)")) { table.probes(of: $0) } }
            let mean = Double(probes.reduce(0, +)) / Double(probes.count)
            #expect(mean < 2, "\(pattern): \(mean) probes a name on average")
            #expect(probes.max()! <= 32 && absent.max()! <= 32, "\(pattern): \(probes.max()!) probes at most, \(absent.max()!) for an absent name")
            #expect(names.enumerated().allSatisfy { i, n in ByteView.of(n) { table.index(of: $0) } == i })
        }
    }

    @Test func bytesAreEqualExactlyWhenEveryByteIs() {
        for n in 0...40 {
            let a = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
            #expect(a.withUnsafeBytes { x in a.withUnsafeBytes { y in n == 0 || bytesEqual(x.baseAddress!, y.baseAddress!, count: n) } })
            for i in 0..<n {
                var b = a
                b[i] ^= 0x20
                #expect(!a.withUnsafeBytes { x in b.withUnsafeBytes { y in bytesEqual(x.baseAddress!, y.baseAddress!, count: n) } }, "length \(n), byte \(i)")
            }
        }
    }

    @Test func scratchWordsStartZeroedAndKeepWhatIsWritten() {
        let s = ScratchWords(count: 8)
        #expect(s.words.allSatisfy { $0 == 0 } && s.words.count == 8)
        s.words[3] = 42
        #expect(s.words[3] == 42)
    }

    @Test func scratchWordsAreReadAndWrittenThroughTheirView() {
        let s = ScratchWords(count: 4)
        let w = s.view
        w[2] = 9
        #expect(s.words[2] == 9 && w[2] == 9)
    }

    /// A view's parts: sub-ranges, a byte found from a position, little-endian loads, copies.
    @Test func aByteViewIsSlicedSearchedAndLoadedWithinItsBytes() {
        let bytes: [UInt8] = Array("ab\ncd\nef".utf8) + [0x78, 0x56, 0x34, 0x12, 0, 0, 0, 0]
        bytes.withByteView { v in
            #expect(v.count == 16)
            #expect(v.bytes(3..<5).string == "cd" && v.bytes(from: 6).count == 10 && v.bytes(4..<4).count == 0)
            #expect(v.firstIndex(of: 0x0A, from: 0) == 2 && v.firstIndex(of: 0x0A, from: 3) == 5 && v.firstIndex(of: 0x0A, from: 6) == nil)
            #expect(v.firstIndex(of: 0x0A, from: 16) == nil && v.firstIndex(of: 0x0A, from: -1) == nil)
            #expect(v.loadLittleEndian(at: 8, as: UInt32.self) == 0x1234_5678 && v.loadLittleEndian(at: 8, as: UInt64.self) == 0x1234_5678)
            var copy: [UInt8] = []
            copy.append(contentsOf: v.bytes(0..<5))
            #expect(copy == Array("ab\ncd".utf8))
        }
        #expect(ByteView.empty.count == 0 && ByteView.empty.firstIndex(of: 0, from: 0) == nil)
        #expect([UInt8]().withByteView { $0.count } == 0)
    }

    /// The written end of a file made with zeros in advance: every placement of the last nonzero
    /// byte against the 4,096-byte blocks passed at once, checked against a plain backward loop.
    @Test func theEndOfNonzeroBytesIsFoundThroughBlocksOfZeros() {
        func plain(_ b: [UInt8], from start: Int) -> Int {
            var end = b.count
            while end > start && b[end - 1] == 0 { end -= 1 }
            return max(end, start)
        }
        let size = 3 * 4096 + 100
        for last in [-1, 0, 1, 4095, 4096, 4097, 8191, 8192, 3 * 4096 - 1, 3 * 4096, size - 1] {
            var bytes = [UInt8](repeating: 0, count: size)
            if last >= 0 { bytes[last] = 0x7B }
            if last > 10 { bytes[last / 2] = 1 }
            bytes.withByteView { v in
                for start in [0, 1, 4095, 4096, last, last + 1, size - 1, size] where start >= 0 && start <= size {
                    #expect(v.endOfNonzero(from: start) == plain(bytes, from: start), "last \(last), start \(start)")
                }
            }
        }
        #expect(ByteView.empty.endOfNonzero(from: 0) == 0)
        #expect([UInt8](repeating: 0, count: 5000).withByteView { $0.endOfNonzero(from: 0) } == 0)
    }

    /// Bytes stored into a mapped file are what a read of the file finds (one page cache), and the
    /// mapping is given back a slice at a time, then whole.
    @Test func storesIntoAMappedFileAreWhatItsReadsFind() throws {
        let path = NSTemporaryDirectory() + "navd-mapped-\(UInt64.random(in: 0...UInt64.max))"
        defer { unlink(path) }
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
        #expect(fd >= 0)
        defer { close(fd) }
        let size = 3 * 4096
        #expect(posix_fallocate(fd, 0, off_t(size)) == 0)
        let m = try #require(MappedFile(fd: fd, size: size))
        let text = Array("{\"c\":\"s\",\"v\":1}".utf8)
        text.withByteView { m.store($0, at: 4090) }  // across a page's end
        text.withByteView { m.store($0, at: size - text.count) }
        var read = [UInt8](repeating: 1, count: size)
        #expect(read.withUnsafeMutableBytes { pread(fd, $0.baseAddress, size, 0) } == size)
        var expected = [UInt8](repeating: 0, count: size)
        expected.replaceSubrange(4090..<(4090 + text.count), with: text)
        expected.replaceSubrange((size - text.count)..<size, with: text)
        #expect(read == expected)
        #expect(!m.giveBack(4096) && !m.giveBack(4096) && m.giveBack(4096))
        #expect(m.giveBack(4096), "nothing left to give back")
        #expect(MappedFile(fd: fd, size: 0) == nil)
        #expect(MappedFile(fd: -1, size: 4096) == nil)
    }

    @Test func decimalsArePrefixedAsInterpolationWritesThem() {
        for n in [0, 7, -7, 10, 99, 12_345, Int.max, Int.min] {
            #expect(prefixedDecimal("n", n) == "n\(n)")
        }
    }

    /// What ``Immutable`` holds is read by several threads at once: a compiled regex matching.
    @Test func anImmutableRegexMatchesOnSeveralThreadsAtOnce() async throws {
        let held = Immutable(try Regex<AnyRegexOutput>("^[a-z]+-([0-9]{2,4})$"))
        let results = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<64 {
                group.addTask { (try? held.value.wholeMatch(in: i % 2 == 0 ? "order-\(100 + i)" : "order-x\(i)")) != nil }
            }
            var all: [Bool] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.filter { $0 }.count == 32 && results.count == 64)
    }

    @Test func countersStartAtZeroAndKeepTheTablesAfterThem() {
        let c = Counters(count: 3, then: [7, 8])
        #expect(c.count == 5)
        #expect((0..<3).map { c.read($0) } == [0, 0, 0])
        #expect(c.read(3) == 7 && c.read(4) == 8)
        c.add(1)
        c.add(1)
        c[2] = 5
        #expect(c[1] == 2 && c[2] == 5 && c[0] == 0 && c[3] == 7)
        let none = Counters(count: 0)
        #expect(none.count == 1 && none[0] == 0)
    }

    /// 5,000 strings of 0 to 17 scalars drawn from `alphabet` (a fixed sequence for each seed).
    static func randomStrings(of alphabet: [Unicode.Scalar], seed: UInt64) -> [String] {
        var state = seed
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: state >> 33)
        }
        return (0..<5000).map { _ in
            var s = ""
            for _ in 0..<(next() % 18) { s.unicodeScalars.append(alphabet[next() % alphabet.count]) }
            return s
        }
    }

    /// A small string's bytes as its two words hold them, and whether JSON must escape any of them,
    /// against the standard library's own view of the same string.
    @Test func aSmallStringIsReadFromItsWords() {
        #expect(SmallStringBytes("") != nil && SmallStringBytes("")!.count == 0)
        #expect(SmallStringBytes("session-42")?.count == 10)  // built in place: small on 64-bit
        #expect(SmallStringBytes(String(repeating: "x", count: 16)) == nil)  // kept in an object
        let alphabet: [Unicode.Scalar] = ["a", "~", "\"", "\\", "\u{0}", "\u{1f}", " ", "!", "#", "[", "]", "é", "😀"]
        for s in Self.randomStrings(of: alphabet, seed: 0x5A11) {
            let utf8 = Array(s.utf8)
            guard let small = SmallStringBytes(s) else {
                #expect(utf8.count > 15, "\(s.debugDescription) is small")
                continue
            }
            var stored = [UInt8](repeating: 0xAA, count: 16)
            stored.withUnsafeMutableBytes { small.store(to: $0.baseAddress!) }
            #expect(small.count == utf8.count && Array(stored[..<small.count]) == utf8, "\(s.debugDescription)")
            #expect(small.needsEscape == utf8.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }, "\(s.debugDescription)")
        }
    }

    /// A string made from its bytes straight into a small string's words is the string the standard
    /// library makes of them: equal, hashed the same, with the same characters and bytes; what is
    /// not at most 15 ASCII bytes is left to the standard library.
    @Test func aShortASCIIStringIsMadeStraightIntoItsWords() {
        let alphabet: [Unicode.Scalar] = ["a", "Z", "0", "~", "\"", "\\", "\u{0}", "\u{7f}", " ", "é", "😀"]
        let everyLength = (0...16).map { String(repeating: "a", count: $0) }
        for s in everyLength + Self.randomStrings(of: alphabet, seed: 0xA5C1) {
            let utf8 = Array(s.utf8)
            let made = utf8.withUnsafeBytes { SmallStringBytes.asciiString($0) }
            guard let made else {
                #expect(utf8.count > 15 || utf8.contains { $0 >= 0x80 }, "\(s.debugDescription) was not made")
                continue
            }
            #expect(utf8.count <= 15 && !utf8.contains { $0 >= 0x80 }, "\(s.debugDescription) was made")
            #expect(made == s && made.hashValue == s.hashValue && made.count == s.count && Array(made.utf8) == utf8, "\(s.debugDescription)")
            #expect(SmallStringBytes(made)?.count == utf8.count && made.utf8.count == utf8.count)
            #expect(made + "!" == s + "!" && Set([made, s]).count == 1)
        }
    }
}
