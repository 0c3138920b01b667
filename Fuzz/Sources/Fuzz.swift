import JSON
import NavExplore
import NavGraph
import NavigationCore
import RPC
import Unchecked

#if canImport(Glibc)
import Glibc
#endif

/// Fuzz targets for every parser a client, a graph file or a state file reaches, and for sequences of
/// requests. One binary, the target chosen by `NAVD_FUZZ_TARGET` (framing, json, graph, argv, state,
/// session, log, coverage, policy, pattern, link, and nav-web's http and websocket). Built with `-sanitize=fuzzer,address -DFUZZING`
/// (`make fuzz`) it is a libFuzzer binary; built plainly it runs the files given as arguments
/// through the target (replaying a corpus or a crash).
enum FuzzTarget: String, CaseIterable {
    case framing, json, graph, argv, state, session, log, coverage, policy, pattern, link, http, websocket

    static var current: FuzzTarget {
        guard let name = getenv("NAVD_FUZZ_TARGET").map({ String(cString: $0) }), let t = FuzzTarget(rawValue: name) else {
            say("set NAVD_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
            exit(2)
        }
        return t
    }

    func run(_ data: UnsafeRawBufferPointer) {
        switch self {
        case .framing: fuzzFraming(data)
        case .json: fuzzJSON(data)
        case .graph: fuzzGraph(data)
        case .argv: fuzzArgv(data)
        case .state: fuzzState(data)
        case .session: fuzzSession(data)
        case .log: fuzzLog(data)
        case .coverage: fuzzCoverage(data)
        case .policy: fuzzPolicy(data)
        case .pattern: fuzzPattern(data)
        case .link: fuzzLink(data)
        case .http: fuzzHTTP(data)
        case .websocket: fuzzWebSocket(data)
        }
    }
}

/// Writes a line to standard error.
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// Fails loudly: libFuzzer keeps the input that reached it.
func require(_ ok: Bool, _ what: @autoclosure () -> String) {
    if !ok {
        say("fuzz invariant broken: \(what())")
        abort()
    }
}

/// The stream split at a point taken from the input: the same messages must come out, in order,
/// as when it arrives in one read; none larger than the limit.
func fuzzFraming(_ data: UnsafeRawBufferPointer) {
    let maxMessage = 512
    /// `stops`: the decoder is stopped after every message and resumed (as a client whose output
    /// is backed up is), so that what it keeps is searched again from the right place.
    func decode(_ cuts: [Int], stops: Bool = false) -> ([[UInt8]], Bool) {
        var d = FrameDecoder(maxMessage: maxMessage)
        var out: [[UInt8]] = []
        var failed = false
        var start = 0
        let take = { (_: Framing, body: ByteView) -> Bool in
            require(body.count <= maxMessage, "a message over the limit was delivered")
            out.append(Array(body))
            return !stops
        }
        for cut in cuts + [data.count] where cut >= start {
            do {
                try d.feed(ByteView(UnsafeRawBufferPointer(rebasing: data[start..<cut])), take)
                while stops && d.hasPartialMessage {
                    let before = out.count
                    try d.resume(take)
                    if out.count == before { break }
                }
            } catch {
                failed = true
                break
            }
            start = cut
        }
        return (out, failed)
    }
    let whole = decode([])
    let cut = data.isEmpty ? 0 : Int(data[0]) % (data.count + 1)
    let split = decode([cut])
    if !whole.1 && !split.1 { require(whole.0 == split.0, "splitting the stream changed its messages") }
    // Three cuts, with a stop after every message.
    let cuts = (1...3).map { data.count > $0 ? Int(data[$0]) * 7 % (data.count + 1) : 0 }.sorted()
    let stopped = decode(cuts, stops: true)
    if !whole.1 && !stopped.1 { require(whole.0 == stopped.0, "cutting the stream in reads and stopping after each message changed its messages") }
}

/// Parse; a parsed value written and parsed again is the same value; a refusal for its syntax names
/// where the input goes wrong. A value kept as its written text (`WrittenJSON`) reads back as the
/// value, and the text made from where the value lies is the value's; the reader of written text
/// takes any input without harm.
func fuzzJSON(_ data: UnsafeRawBufferPointer) {
    _ = JSONValue(written: data)
    fuzzRequestScanner(data)
    let parser = JSONParser(maxDepth: 64)
    let v: JSONValue
    do {
        v = try parser.parse(data)
    } catch {
        if error.kind == .syntax { require(error.location != nil, "a refusal without its position: \(error.detail)") }
        return
    }
    let text = JSONWriter.encode(v)
    guard let again = try? parser.parse(text) else {
        require(false, "navd's own JSON did not parse: \(String(decoding: text.prefix(200), as: UTF8.self))")
        return
    }
    require(again == v || JSONWriter.encode(again) == text, "a value changed through write and parse")
    let written = WrittenJSON(v)
    require(Array(written.string.utf8) == text, "a value's written text is not what the writer writes")
    require(written.value == v || JSONWriter.encode(written.value) == text, "a written text read back as another value")
    guard let view = try? parser.view(data, padded: false) else { return }
    if let inPlace = WrittenJSON(view) {
        require(Array(inPlace.string.utf8) == text, "the text made where the value lies is not the value's: \(inPlace.string.prefix(200))")
    }
    // A setup checked where it lies in a request says yes only to what the full check accepts.
    for schema in fuzzSchemas where schema.accepts(inPlace: view) {
        require(schema.validate(view.value) == nil, "accepted in place, refused by the full check: \(JSONWriter.string(schema.source))")
    }
}

/// A request line the scanner reads (``RPCMessage/scanRequest(_:padded:parser:)``) is the request
/// the parser and the full reader find in it, with the same id, method and params; a line the
/// parser refuses the scanner leaves alone (so that it is refused as before, with its position).
/// The input's lines read in one batch (``JSONParser/beginBatch(_:)``) read as each line alone:
/// the same request scanned, or the same value or error parsed whole.
func fuzzRequestScanner(_ data: UnsafeRawBufferPointer) {
    let padded = Array(data) + [UInt8](repeating: 0, count: JSONParser.padding)
    let scanner = JSONParser(maxDepth: 64), reference = JSONParser(maxDepth: 64)
    padded.withUnsafeBytes { all in
        let line = ByteView(UnsafeRawBufferPointer(rebasing: all[0..<data.count]))
        guard let scanned = RPCMessage.scanRequest(line, padded: true, parser: scanner) else { return }
        guard let view = try? reference.view(data, padded: false) else {
            require(false, "the scanner read a request from a line the parser refuses")
            return
        }
        guard let r = RPCMessage.request(view) else {
            require(false, "the scanner read a request where the full reader finds none")
            return
        }
        require(scanned.id?.value == r.id?.value && scanned.method == r.method && scanned.params?.value == r.params?.value,
                "the scanner read another request than the full reader")
    }
    fuzzBatchedLines(data)
    // What the one pass over plain params takes, it writes as simdjson does.
    let plainReader = JSONParser(maxDepth: 16)
    padded.withUnsafeBytes { all in
        require(plainReader.plainReadsAsSimdjson(UnsafeRawBufferPointer(rebasing: all[0..<data.count])) != false,
                "the one pass over plain params wrote another tape than simdjson")
    }
}

/// Each line of `data`, read in a batch of all, reads as it does alone (see ``fuzzRequestScanner(_:)``).
func fuzzBatchedLines(_ data: UnsafeRawBufferPointer) {
    let padded = Array(data) + [UInt8](repeating: 0, count: JSONParser.padding)
    let batched = JSONParser(maxDepth: 16), alone = JSONParser(maxDepth: 16)
    padded.withUnsafeBytes { all in
        var lines: [Range<Int>] = []
        var start = 0
        for i in 0..<data.count where data[i] == 0x0A {
            lines.append(start..<(i > start && data[i - 1] == 0x0D ? i - 1 : i))
            start = i + 1
        }
        if start < data.count { lines.append(start..<data.count) }
        batched.beginBatch(UnsafeRawBufferPointer(rebasing: all[0..<data.count]))
        defer { batched.endBatch() }
        for r in lines {
            let raw = UnsafeRawBufferPointer(rebasing: all[r])
            let scanned = RPCMessage.scanRequest(ByteView(raw), padded: true, parser: batched).map { ($0.id?.value, $0.method, $0.params?.value) }
            let expected = RPCMessage.scanRequest(ByteView(raw), padded: true, parser: alone).map { ($0.id?.value, $0.method, $0.params?.value) }
            require(scanned?.0 == expected?.0 && scanned?.1 == expected?.1 && scanned?.2 == expected?.2 && (scanned == nil) == (expected == nil),
                    "a line scanned in a batch read otherwise than alone")
            guard scanned == nil else { continue }
            let got = Result { () throws(JSONParseError) in try batched.view(raw, padded: true).value }
            let wanted = Result { () throws(JSONParseError) in try alone.view(raw, padded: true).value }
            switch (got, wanted) {
            case (.success(let a), .success(let b)): require(a == b, "a line parsed in a batch read otherwise than alone")
            case (.failure(let a), .failure(let b)): require(a == b, "a line refused in a batch refused otherwise than alone")
            default: require(false, "a line parsed in a batch and refused alone, or the other way")
            }
        }
    }
}

/// Setup schemas of every shape `Schema.accepts(inPlace:)` treats apart: fields of one or more
/// types, non-empty strings, required ones, refused or checked extra fields, lengths, patterns,
/// enums, bounds, items and nested objects.
let fuzzSchemas: [Schema] = [
    ["type": "object", "required": ["id"], "properties": ["id": ["type": "string", "minLength": 1], "ref": ["type": "string"]], "additionalProperties": false],
    ["type": "object", "properties": ["n": ["type": "integer"], "p": ["type": "number"], "f": ["type": ["boolean", "null"]], "o": ["type": "object"], "a": ["type": "array"]]],
    ["type": "object", "required": ["id", "x"]],
    ["type": "object", "additionalProperties": ["type": "string", "maxLength": 3]],
    ["type": "object", "properties": ["s": ["type": "string", "pattern": "^[a-z]+$"], "e": ["enum": ["a", 1, nil]], "m": ["type": "integer", "minimum": 0, "maximum": 5]]],
    ["type": "object", "properties": ["l": ["type": "array", "items": ["type": "object", "required": ["k"], "properties": ["k": ["type": "string", "minLength": 2]]]]]],
    ["type": "array", "items": ["type": ["string", "integer"]]],
    ["type": "string", "minLength": 1],
].map { (source: JSONValue) -> Schema in
    var errors: [Schema.CompileError] = []
    return Schema.compile(source, errors: &errors)!
}

/// Load the input as one module file, with small limits.
/// A policy file: read, or refused with at least one error; one that is read, written as JSON
/// and read again, grants the same.
func fuzzPolicy(_ data: UnsafeRawBufferPointer) {
    let text = String(decoding: data, as: UTF8.self)
    let (policy, diagnostics) = PolicyFile.parse(text, file: "fuzz.yaml", maxNodes: 5_000)
    require((policy == nil) == diagnostics.hasErrors, "a policy with errors, or none without")
    guard let policy else { return }
    func roles(_ r: Set<String>) -> JSONValue { .array(r.sorted().map(JSONValue.string)) }
    let written: JSONValue = [
        "uids": .object(JSONObject(uniqueMembers: policy.uids.map { (String($0.key), roles($0.value)) })),
        "tokens": .object(JSONObject(uniqueMembers: policy.tokens.map { ($0.key, roles($0.value)) })),
        "allowReloadPath": .bool(policy.allowReloadPath),
    ]
    let again = PolicyFile.parse(JSONWriter.string(written), file: "again.json", maxNodes: 1 << 20)
    require(again.policy == policy, "written as JSON and read again, the policy differs: \(again.diagnostics.sorted)")
}

/// A setup schema's `pattern`: the first line compiles or is refused with a position inside it;
/// one that compiles is matched against each later line, and against the pattern's own text,
/// in time linear in the string (a run that takes long is a libFuzzer timeout). The strings
/// `navd explore` makes from it (``PatternSample``) are bounded in length and in time too.
func fuzzPattern(_ data: UnsafeRawBufferPointer) {
    let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let source = lines[0]
    let pattern: Pattern
    do {
        pattern = try Pattern(source)
    } catch {
        let n = source.unicodeScalars.count
        require(error.offset >= 0 && (error.offset < n || n == 0), "error offset \(error.offset) outside a pattern of \(n) characters: \(error)")
        return
    }
    _ = pattern.matches(source)
    for s in PatternSample.strings(source) {
        require(s.count <= PatternSample.maxLength, "`\(source)` made a sample of \(s.count) characters")
    }
    for s in lines.dropFirst() {
        // Some part matches, then so does the string with more around it.
        if pattern.matches(s) {
            let wider = pattern.check("\u{1F}" + s + "\u{1F}")
            require(wider != .doesNotMatch || source.contains("^") || source.contains("$"), "`\(source)` matches \(s) but not with more around it")
        }
    }
}

func fuzzGraph(_ data: UnsafeRawBufferPointer) {
    var limits = GraphLimits()
    limits.maxFileBytes = 64 * 1024
    limits.maxNodes = 5_000
    let text = String(decoding: data, as: UTF8.self)
    let (graph, diagnostics) = GraphLoader.load(sources: [GraphSource(file: "fuzz.yaml", text: text)], baseDirectory: "/nonexistent",
                                                limits: limits)
    require(graph != nil || diagnostics.hasErrors, "no graph and no error")
    // What `navd check` and `navd explore` do with a graph that loads: warnings, and a short walk.
    if let graph {
        _ = GraphLint.warnings(graph)
        let walk = Explorer(graph: graph, options: ExploreOptions(depth: 3, maxStates: 40)).run()
        require(walk.stateCount <= 40, "exploration passed --max-states")
        _ = walk.text
    }
}

/// The input is a template, then after a NUL byte the value of every `{with.FIELD}`: the output is
/// the template with each placeholder replaced once, so its length is bounded by the template's
/// plus one value per placeholder, and a value is never expanded again.
func fuzzArgv(_ data: UnsafeRawBufferPointer) {
    let bytes = Array(data)
    let nul = bytes.firstIndex(of: 0) ?? bytes.count
    let template = String(decoding: bytes[..<nul], as: UTF8.self)
    let value = nul < bytes.count ? String(decoding: bytes[(nul + 1)...].filter { $0 != 0 }, as: UTF8.self) : "{with.x}"
    let placeholders = template.utf8.filter { $0 == UInt8(ascii: "{") }.count
    do {
        let out = try ArgvTemplate.expand(template, to: "app.X", session: value, field: { _ in value })
        let bound = template.utf8.count + placeholders * max(value.utf8.count, 5)
        require(out.utf8.count <= bound, "expansion grew past one value per placeholder")
    } catch {
        require(false, "a value without NUL was refused")
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzTarget.current.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

// swift-format-ignore: AlwaysUseLowerCamelCase
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

/// SwiftPM links an executable's entry point as `navd_fuzz_main`: hand over to libFuzzer's driver.
@_cdecl("navd_fuzz_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var c = argc
    var v = argv
    return LLVMFuzzerRunDriver(&c, &v) { data, size in fuzzOne(data, size) }
}
#else
@main
struct Replay {
    static func main() {
        let target = FuzzTarget.current
        var n = 0
        for path in CommandLine.arguments.dropFirst() {
            guard let f = fopen(path, "rb") else { continue }
            var bytes: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 65536)
            while true {
                let r = fread(&buf, 1, buf.count, f)
                if r <= 0 { break }
                bytes += buf[0..<r]
            }
            fclose(f)
            bytes.withUnsafeBytes { target.run($0) }
            n += 1
        }
        print("replayed \(n) input(s) through \(target.rawValue)")
    }
}
#endif
