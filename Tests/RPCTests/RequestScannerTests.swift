import JSON
import NavTesting
import RPC
import Testing
import Unchecked

/// The request scanner (``RPCMessage/scanRequest(_:padded:parser:)``) reads the lines it takes as the
/// parser and the full reader do, takes the form clients write, and leaves every other line to the
/// parser, in a batch as alone.
@Suite struct RequestScannerTests {
    /// Ids: the first eight of the form (one to eight digits read as one word, more a digit at a time).
    static let ids = ["0", "7", "42", "123456789012345678", "90817263", "1234567", "999999999", "10000000", "1234567890123456789", "01", "-1",
                      "1.5", "1e2", "\"x\"", "null", "", "0123456789"]
    static let methods = ["ping", "navigate", "rpc.discover", "a_b-c/d", "m", String(repeating: "m", count: 64),
                          String(repeating: "m", count: 65), "", "sp ace", "esc\\u0061", "é",
                          "ab\\n", "navigate\\u0041", "navigate\u{7F}", "dismiss\u{1}"]
    /// Params: values of every kind, lines that are not one value, and nesting at the bounds of a
    /// parser of depth 8 (7 levels; the message nests one level more than its params): 6 levels
    /// within a line shorter than twice that and beyond it, then 7.
    static let params: [String?] = [
        nil, "{}", "[]", #"{"session":"s1","to":"shop.Product","with":{"id":"42"}}"#, #"{"a":"}\"}"}"#, #"[1,"x",null,true]"#,
        #"{"a":1},"method":"other""#, "{} x", "{", #"{"a":}"#, "1", #""s""#, "null", "{}}", "[[[[[[]]]]]]", "[[[[[[[]]]]]]]",
        #"{"a":[[[[[1]]]]]}"#, #"{"a":[[[[[[1]]]]]]}"#, #"{"k":"\u00e9\ud83d\ude00"}"#, "{\"bad\":\"\u{1}\"}",
    ]
    static let endings = ["}", "}\r", "} \t", "", " }", "}}", "}x"]

    /// A line of the scanned form, or near it: id, method, params and ending drawn from the pools.
    static func line(_ rng: inout SplitMix64) -> (text: [UInt8], canonical: Bool) {
        let id = ids[Int(rng.next() % UInt64(ids.count))]
        let method = methods[Int(rng.next() % UInt64(methods.count))]
        let p = params[Int(rng.next() % UInt64(params.count))]
        let ending = rng.next() % 3 == 0 ? endings[Int(rng.next() % UInt64(endings.count))] : "}"
        var text = #"{"jsonrpc":"2.0","id":"# + id + #","method":""# + method + "\""
        if let p { text += #","params":"# + p }
        text += ending
        if rng.next() % 16 == 0 { text = text.replacingOccurrences(of: #""id":"#, with: #""id": "#) }
        let canonical = ids.prefix(8).contains(id) && methods.prefix(6).contains(method)
            && (p == nil || [1, 2, 3, 4, 5, 14, 16, 18].contains(params.firstIndex(of: p)!)) && ending.hasPrefix("}")
            && !ending.hasPrefix("}}") && !ending.hasPrefix("}x") && !text.contains(#""id": "#)
        return (Array(text.utf8), canonical)
    }

    @Test func scannedLinesAreTheRequestsTheParserReadsAndOthersParseAsBefore() throws {
        var rng = SplitMix64(seed: 0x5CA7)
        let batched = JSONParser(maxDepth: 8), alone = JSONParser(maxDepth: 8)
        var scanned = 0, canonicals = 0
        for _ in 0..<2_000 {
            let count = 1 + Int(rng.next() % 12)
            var buffer: [UInt8] = []
            var lines: [(range: Range<Int>, canonical: Bool)] = []
            for _ in 0..<count {
                // Now and then a line the scanner does not take: parsed whole, in the same batch.
                let (text, canonical) = rng.next() % 5 == 0
                    ? (Array(#"{"method":"dismiss","jsonrpc":"2.0","id":3,"params":{"session":"s"}}"#.utf8), false) : Self.line(&rng)
                lines.append((buffer.count..<(buffer.count + text.count), canonical))
                buffer += text + [0x0A]
            }
            buffer += [UInt8](repeating: 0x20, count: JSONParser.padding)
            try buffer.withUnsafeBytes { all in
                batched.beginBatch(UnsafeRawBufferPointer(rebasing: all[0..<(lines.last!.range.upperBound + 1)]))
                defer { batched.endBatch() }
                for (r, canonical) in lines {
                    let raw = UnsafeRawBufferPointer(rebasing: all[r])
                    let text = String(decoding: raw, as: UTF8.self)
                    let expected = Result { () throws(JSONParseError) in try alone.view(raw) }
                    if let s = RPCMessage.scanRequest(ByteView(raw), padded: true, parser: batched) {
                        scanned += 1
                        let v = try #require(try? expected.get(), "scanned a line the parser refuses: \(text)")
                        let r = try #require(RPCMessage.request(v), "scanned a line that is no request: \(text)")
                        #expect(s.id?.value == r.id?.value && s.method == r.method && s.params?.value == r.params?.value, "\(text)")
                    } else {
                        #expect(!canonical, "the scanner left a line of its form: \(text)")
                        // Parsed whole in the batch: the same value or the same error as alone.
                        let got = Result { () throws(JSONParseError) in try batched.view(raw, padded: true).value }
                        switch (expected.map { $0.value }, got) {
                        case (.success(let a), .success(let b)): #expect(a == b, "\(text)")
                        case (.failure(let a), .failure(let b)): #expect(a == b, "\(text)")
                        default: Issue.record("\(text): alone \(expected.map { $0.value }), batched \(got)")
                        }
                    }
                    if canonical { canonicals += 1 }
                }
            }
        }
        #expect(canonicals > 500 && scanned >= canonicals, "\(scanned) lines scanned, \(canonicals) of the scanned form")
        // Scanned lines keep the batch's index in step: the params of later lines come from it.
        #expect(batched.batchedDocuments > 1_000, "\(batched.batchedDocuments) documents parsed from a batch's index")
    }

    /// Scanned lines, with params and without, keep the batch's index in step: a line after them that
    /// the scanner leaves is still parsed from the index, not alone. Plain params are read in one
    /// pass, others from the index.
    @Test func aLineAfterScannedOnesIsParsedFromTheBatch() throws {
        let parser = JSONParser(maxDepth: 64)
        let lines = [#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, #"{"jsonrpc":"2.0","id":2,"method":"navigate","params":{"to":"x"}}"#,
                     #"{"jsonrpc":"2.0","id":3,"method":"navigate","params":{"to":"\u0078","n":1.5}}"#,
                     #"{"jsonrpc":"2.0","id":4,"method":"navigate","params":{"to":"y"}}"#,
                     #"{"method":"dismiss","jsonrpc":"2.0","id":5,"params":{"session":"s"}}"#]
        let text = Array((lines.joined(separator: "\n") + "\n").utf8)
        let buffer = text + [UInt8](repeating: 0, count: JSONParser.padding)
        buffer.withUnsafeBytes { all in
            parser.beginBatch(UnsafeRawBufferPointer(rebasing: all[0..<text.count]))
            defer { parser.endBatch() }
            var start = 0
            var views: [ByteView] = []
            for l in lines {
                views.append(ByteView(UnsafeRawBufferPointer(rebasing: all[start..<(start + l.utf8.count)])))
                start += l.utf8.count + 1
            }
            let (batched, plain) = (parser.batchedDocuments, parser.plainDocuments)
            #expect(RPCMessage.scanRequest(views[0], padded: true, parser: parser)?.method == "ping")
            #expect(RPCMessage.scanRequest(views[1], padded: true, parser: parser)?.params?.value == ["to": "x"])
            #expect(RPCMessage.scanRequest(views[2], padded: true, parser: parser)?.params?.value == ["to": "x", "n": 1.5])
            #expect(RPCMessage.scanRequest(views[3], padded: true, parser: parser)?.params?.value == ["to": "y"])
            #expect(RPCMessage.scanRequest(views[4], padded: true, parser: parser) == nil)
            let whole = try? parser.view(views[4].raw, padded: true)
            #expect(whole?.value["params"] == ["session": "s"])
            #expect(parser.plainDocuments - plain == 2, "the params of lines 2 and 4 in one pass")
            #expect(parser.batchedDocuments - batched == 2, "the params of line 3 and line 5 from the index")
        }
    }

    /// What the one pass over plain params takes, it writes exactly as simdjson does (tape and
    /// strings), and it takes every plain document: random documents of every kind it reads, then
    /// each with one byte changed (taken or not, never written otherwise).
    @Test func plainParamsAreReadAsSimdjsonReadsThem() throws {
        var rng = SplitMix64(seed: 0x91A1)
        let parser = JSONParser(maxDepth: 16)
        func plain(_ depth: Int) -> String {
            switch rng.next() % (depth > 4 ? 5 : 7) {
            case 0: return "\"" + String(repeating: "a", count: Int(rng.next() % 40)) + "\""
            case 1: return ["\"s3\"", "\"shop.Product\"", "\"~ !#$%&'()*+,-./:;<=>?@[]^_`{|}\"", "\"\""][Int(rng.next() % 4)]
            case 2: return ["0", "7", "-1", "42", "123456789012345678", "-123456789012345678", "10"][Int(rng.next() % 7)]
            case 3: return ["true", "false", "null"][Int(rng.next() % 3)]
            case 4: return "{}"
            case 5: return "[" + (0..<Int(rng.next() % 4)).map { _ in plain(depth + 1) }.joined(separator: ",") + "]"
            default:
                return "{" + (0..<Int(rng.next() % 4)).map { i in "\"k\(i)\(String(repeating: "x", count: Int(rng.next() % 18)))\":" + plain(depth + 1) }
                    .joined(separator: ",") + "}"
            }
        }
        let odd: [UInt8] = [0x20, 0x22, 0x5C, 0x2E, 0x65, 0x7F, 0x80, 0xC3, 0x01, 0x30, 0x2D, 0x7D, 0x5D, 0x2C, 0x3A]
        var same = 0
        for _ in 0..<5_000 {
            var doc = Array(plain(0).utf8)
            let padded = doc + [UInt8](repeating: 0x22, count: JSONParser.padding)
            padded.withUnsafeBytes { all in
                let r = parser.plainReadsAsSimdjson(UnsafeRawBufferPointer(rebasing: all[0..<doc.count]))
                #expect(r == true, "\(String(decoding: doc, as: UTF8.self))")
            }
            doc[Int(rng.next() % UInt64(doc.count))] = odd[Int(rng.next() % UInt64(odd.count))]
            let changed = doc + [UInt8](repeating: 0x22, count: JSONParser.padding)
            changed.withUnsafeBytes { all in
                let r = parser.plainReadsAsSimdjson(UnsafeRawBufferPointer(rebasing: all[0..<doc.count]))
                #expect(r != false, "\(String(decoding: doc, as: UTF8.self))")
                if r == true { same += 1 }
            }
        }
        #expect(same > 100, "\(same) changed documents still taken")
        // Nesting at the parser's bound and past it, and past the one pass's own bound (32).
        for (depth, levels) in [(16, 15), (16, 16), (16, 17), (64, 32), (64, 33)] {
            let deep = JSONParser(maxDepth: depth)
            let doc = Array((String(repeating: "[", count: levels) + String(repeating: "]", count: levels)).utf8)
            let padded = doc + [UInt8](repeating: 0, count: JSONParser.padding)
            let r = padded.withUnsafeBytes { deep.plainReadsAsSimdjson(UnsafeRawBufferPointer(rebasing: $0[0..<doc.count])) }
            #expect(r == (levels < depth && levels <= 32 ? true : nil), "\(levels) levels, a parser of depth \(depth)")
        }
    }

    /// Lines one byte away from the form are left to the parser, valid or not.
    @Test func nearMissesAreLeftToTheParser() {
        let parser = JSONParser(maxDepth: 64)
        for text in [#"{"jsonrpc":"2.0","id":0,"method":"ping"#, #"{"jsonrpc":"2.0","id":0,"method":"ping\#u{1}}"#,
                     #"{"jsonrpc":"2.0","id":0,"method":"pi"ng"}"#, #"{"jsonrpc":"2.0","id":00,"method":"ping"}"#,
                     #"{"jsonrpc":"2.0","id":-1,"method":"ping"}"#, #"{"jsonrpc":"2.0","id":1234567890123456789,"method":"ping"}"#,
                     #"{"jsonrpc":"2.0","id":1,"method":""}"#, #"{"jsonrpc":"2.0","id":1,"method":"m"}}"#, #"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
                     #"{"jsonrpc":"2.0","id":1,"method":"m","params":}"#, #"{"jsonrpc":"2.0","id":1,"method":"m","params":{}} x"#,
                     #"{"jsonrpc":"2.0","id":1,"method":"m","params":5}"#, #"{"jsonrpc":"2.0","id":1,"method":"m","params" :{}}"#,
                     #"{"jsonrpc":"2.0","id":1,"method":"m","params":{}"#, #" {"jsonrpc":"2.0","id":1,"method":"m"}"#,
                     #"{"jsonrpc":"2.0","id":1,"method":"m","id":2}"#, #"{"jsonrpc":"2.0","id":1,"method":"é"}"#] {
            let bytes = Array(text.utf8) + [UInt8](repeating: 0, count: JSONParser.padding)
            bytes.withUnsafeBytes { all in
                let line = ByteView(UnsafeRawBufferPointer(rebasing: all[0..<text.utf8.count]))
                #expect(RPCMessage.scanRequest(line, padded: true, parser: parser) == nil, "\(text)")
            }
        }
    }

    /// The id and method are read from the line's own bytes; params are the value parsed in place.
    @Test func theScannedFormGivesItsParts() throws {
        let parser = JSONParser(maxDepth: 64)
        let text = Array(#"{"jsonrpc":"2.0","id":123456789012345678,"method":"navigate","params":{"to":"x","with":{"id":"42"}}}"#.utf8)
            + [UInt8](repeating: 0, count: JSONParser.padding)
        try text.withUnsafeBytes { all in
            let line = ByteView(UnsafeRawBufferPointer(rebasing: all[0..<(all.count - JSONParser.padding)]))
            let r = try #require(RPCMessage.scanRequest(line, padded: true, parser: parser))
            #expect(r.id?.exactInteger == 123_456_789_012_345_678 && r.method == "navigate")
            #expect(r.params?.value == ["to": "x", "with": ["id": "42"]])
            // Without padding after it, a line with params is left to the parser; one without is not.
            #expect(RPCMessage.scanRequest(line, padded: false, parser: parser) == nil)
        }
        let bare = Array(#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#.utf8)
        try bare.withUnsafeBytes { raw in
            let r = try #require(RPCMessage.scanRequest(ByteView(raw), padded: false, parser: parser))
            #expect(r.id?.value == 0 && r.method == "ping" && r.params == nil)
        }
    }

    /// The id and method are read as a byte-by-byte walk reads them, wherever the first byte that
    /// ends them lies in a word (both are read eight bytes at a time) and whatever follows: an id
    /// of 1 to 18 digits (no leading zero), a method of 1 to 64 bytes of printable ASCII but `"` and
    /// `\`, then its quote. Padded and not, in a batch and alone.
    @Test func idsAndMethodsAreReadAsAByteWalkReadsThem() throws {
        var rng = SplitMix64(seed: 0x1D5)
        let special: [UInt8] = [0x00, 0x1F, 0x20, 0x21, 0x22, 0x2F, 0x30, 0x39, 0x3A, 0x5C, 0x7E, 0x7F, 0x80, 0xC3, 0xFF, 0x41]
        let parser = JSONParser(maxDepth: 64), batched = JSONParser(maxDepth: 64)
        var read = 0
        for round in 0..<20_000 {
            // Plain bytes, and in half of them one byte of the special ones anywhere.
            func bytes(_ n: Int, _ plain: () -> UInt8) -> [UInt8] {
                var b = (0..<n).map { _ in plain() }
                if n > 0 && rng.next() % 2 == 0 { b[Int(rng.next() % UInt64(n))] = special[Int(rng.next() % UInt64(special.count))] }
                return b
            }
            let id = bytes(Int(rng.next() % 21)) { UInt8(0x30 + rng.next() % 10) }
            let method = bytes(Int(rng.next() % 70)) { UInt8(0x61 + rng.next() % 26) }
            let text = Array(#"{"jsonrpc":"2.0","id":"#.utf8) + id + Array(#","method":""#.utf8) + method + Array(#""}"#.utf8)
            // The walk: the digits, then the plain text, each up to the first byte that ends it.
            let digits = id.prefix { (0x30...0x39).contains($0) }
            let plain = method.prefix { $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }
            let takes = !digits.isEmpty && digits.count <= 18 && digits.count == id.count && (digits.count == 1 || digits.first != 0x30)
                && !plain.isEmpty && plain.count <= 64 && plain.count == method.count
            let padded = round % 2 == 0
            let buffer = text + [0x0A] + (padded ? [UInt8](repeating: 0x37, count: JSONParser.padding) : [])
            try buffer.withUnsafeBytes { all in
                let line = ByteView(UnsafeRawBufferPointer(rebasing: all[0..<text.count]))
                var results = [RPCMessage.scanRequest(line, padded: padded, parser: parser)]
                if padded {
                    batched.beginBatch(UnsafeRawBufferPointer(rebasing: all[0..<(text.count + 1)]))
                    results.append(RPCMessage.scanRequest(line, padded: true, parser: batched))
                    batched.endBatch()
                }
                for r in results {
                    #expect((r != nil) == takes, "\(text)")
                    guard takes, let r else { continue }
                    read += 1
                    let value = try #require(r.id?.exactInteger)
                    #expect(value == Int(String(decoding: digits, as: UTF8.self)) && r.method == String(decoding: plain, as: UTF8.self), "\(text)")
                }
            }
        }
        #expect(read > 5_000, "\(read) lines read")
    }
}
