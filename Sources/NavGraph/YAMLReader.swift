import CYaml

/// Builds a ``Doc`` straight from libyaml's events (the C parser Yams wraps), without Yams'
/// node tree and tag resolution: graph files are read as plain data, so each scalar only needs
/// its text, its style and its position. Iterative (an explicit stack), so nesting depth is
/// bounded by memory, not the thread's stack; every node made, aliases included, counts against
/// the node budget (one file's, or what the files of a graph have left).
struct YAMLReader {
    enum Failure: Error {
        /// A syntax (or encoding) error: where and what, as libyaml says it.
        case syntax(line: Int, column: Int, message: String)
        case tooManyNodes
    }

    /// A collection being built.
    private struct Frame {
        var isMap: Bool
        var location: SourceLocation
        var anchor: String?
        var items: [Doc] = []
        var pairs: [(key: String, keyLocation: SourceLocation, value: Doc)] = []
        var merged: [(key: String, keyLocation: SourceLocation, value: Doc)] = []
        var pendingKey: Doc?
        /// The line of each key in `pairs`, made once a mapping is large enough to need it.
        var lines: [String: Int] = [:]
        var nodes = 1

        /// The line of `key` if this mapping already has it.
        mutating func line(of key: String) -> Int? {
            if pairs.count <= 8 { return pairs.first { $0.key == key }?.keyLocation.line }
            if lines.isEmpty { for p in pairs { lines[p.key] = p.keyLocation.line } }
            return lines[key]
        }

        mutating func append(_ key: String, _ location: SourceLocation, _ value: Doc) {
            pairs.append((key, location, value))
            if !lines.isEmpty { lines[key] = location.line }
        }
    }

    let file: String
    var budget: Int
    /// Duplicate keys found (reported by the caller; the first entry is kept).
    var duplicates: [(key: String, at: SourceLocation, firstLine: Int)] = []
    private var anchors: [String: (doc: Doc, nodes: Int)] = [:]

    init(file: String, maxNodes: Int) {
        self.file = file
        budget = maxNodes
    }

    /// The file's single document; nil for a file without one.
    mutating func read(_ text: String) throws(Failure) -> Doc? {
        var bytes = Array(text.utf8)
        if bytes.isEmpty { bytes.append(10) }
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { throw .syntax(line: 1, column: 1, message: "out of memory") }
        defer { yaml_parser_delete(&parser) }
        return try bytes.withUnsafeBufferPointer { (buffer) throws(Failure) -> Doc? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            do throws(Failure) {
                return try readStream(&parser)
            } catch {
                throw Self.explained(error, parser.problem_mark, in: buffer)
            }
        }
    }

    /// The longest key a YAML reader takes on one line (an implicit key), in characters.
    static let maxKeyCharacters = 1024

    /// `failure`, with a hint when it is at a colon more than ``maxKeyCharacters`` into its line:
    /// libyaml then reports a key that long as a missing `,` or `}` (or `:`), which does not say
    /// what to change. JSON files are read the same way, so a JSON key that long is refused too.
    static func explained(_ failure: Failure, _ mark: yaml_mark_t, in text: UnsafeBufferPointer<UInt8>) -> Failure {
        guard case .syntax(let line, let column, let message) = failure, column > maxKeyCharacters,
              Int(mark.line) + 1 == line, character(atLine: Int(mark.line), column: Int(mark.column), in: text) == UInt8(ascii: ":") else {
            return failure
        }
        return .syntax(line: line, column: column, message: message
                       + "; is the key before this colon longer than \(maxKeyCharacters) characters? A YAML reader takes a key of at most \(maxKeyCharacters) characters on its line (and navd reads JSON files as YAML): shorten the key")
    }

    /// The first byte of the character at 0-based `line` and `column` (in characters) of `text`, or nil.
    private static func character(atLine line: Int, column: Int, in text: UnsafeBufferPointer<UInt8>) -> UInt8? {
        var i = 0
        var lines = 0
        while lines < line {
            guard let nl = text[i...].firstIndex(of: 0x0A) else { return nil }
            i = nl + 1
            lines += 1
        }
        var characters = 0
        while i < text.count && text[i] != 0x0A {
            if text[i] & 0xC0 != 0x80 {  // a character's first byte
                if characters == column { return text[i] }
                characters += 1
            }
            i += 1
        }
        return nil
    }

    private mutating func readStream(_ parser: inout yaml_parser_t) throws(Failure) -> Doc? {
        var stack: [Frame] = []
        var root: Doc?
        var documents = 0
        var event = yaml_event_t()
        while true {
            guard yaml_parser_parse(&parser, &event) == 1 else { throw Self.failure(parser) }
            defer { yaml_event_delete(&event) }
            let mark = event.start_mark
            let location = SourceLocation(file: file, line: Int(mark.line) + 1, column: Int(mark.column) + 1)
            var finished: (doc: Doc, nodes: Int, anchor: String?)?
            switch event.type {
            case YAML_STREAM_END_EVENT:
                return root
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    throw .syntax(line: location.line, column: location.column,
                                  message: "a second YAML document starts here (after `---`); navd reads one document per file (a graph: one module per file, each module a file of its own)")
                }
            case YAML_SCALAR_EVENT:
                let s = event.data.scalar
                let text = String(decoding: UnsafeBufferPointer(start: s.value, count: Int(s.length)), as: UTF8.self)
                let plain = s.style == YAML_PLAIN_SCALAR_STYLE || s.style == YAML_ANY_SCALAR_STYLE
                finished = (Doc(value: .scalar(text, plain: plain), location: location), 1, Self.string(s.anchor))
            case YAML_ALIAS_EVENT:
                let name = Self.string(event.data.alias.anchor) ?? ""
                guard let a = anchors[name] else {
                    throw .syntax(line: location.line, column: location.column, message: "syntax error: found undefined alias `\(name)`")
                }
                finished = (a.doc, a.nodes, nil)
            case YAML_SEQUENCE_START_EVENT:
                try spend(1)
                stack.append(Frame(isMap: false, location: location, anchor: Self.string(event.data.sequence_start.anchor)))
            case YAML_MAPPING_START_EVENT:
                try spend(1)
                stack.append(Frame(isMap: true, location: location, anchor: Self.string(event.data.mapping_start.anchor)))
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                let f = stack.removeLast()
                if f.isMap {
                    var pairs = f.pairs
                    for m in f.merged where !pairs.contains(where: { $0.key == m.key }) { pairs.append(m) }
                    finished = (Doc(value: .map(pairs), location: f.location), f.nodes, f.anchor)
                } else {
                    finished = (Doc(value: .seq(f.items), location: f.location), f.nodes, f.anchor)
                }
            default:
                break
            }
            guard let (found, nodes, anchor) = finished else { continue }
            var doc = found
            if event.type == YAML_SCALAR_EVENT || event.type == YAML_ALIAS_EVENT { try spend(nodes) }
            if let anchor { anchors[anchor] = (doc, nodes) }
            guard !stack.isEmpty else {
                root = doc
                continue
            }
            stack[stack.count - 1].nodes += nodes
            if stack[stack.count - 1].isMap {
                add(&stack[stack.count - 1], &doc)
            } else {
                stack[stack.count - 1].items.append(doc)
            }
        }
    }

    /// A key, or the value of the pending key, arrives in a mapping.
    private mutating func add(_ f: inout Frame, _ doc: inout Doc) {
        guard let key = f.pendingKey else {
            f.pendingKey = doc
            return
        }
        f.pendingKey = nil
        let name = key.text ?? key.description
        if case .scalar("<<", true) = key.value {
            // A merge key: the entries of the mapping (or mappings) it names, unless given here.
            let sources = doc.sequence ?? [doc]
            for m in sources { f.merged += m.mapping ?? [] }
            return
        }
        if let first = f.line(of: name) {
            duplicates.append((name, key.location, first))
            return
        }
        f.append(name, key.location, doc)
    }

    private mutating func spend(_ nodes: Int) throws(Failure) {
        budget -= nodes
        if budget < 0 { throw .tooManyNodes }
    }

    private static func string(_ p: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        guard let p else { return nil }
        return String(cString: UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self))
    }

    /// libyaml's error, worded as Yams words it.
    private static func failure(_ parser: yaml_parser_t) -> Failure {
        let problem = parser.problem.map { String(cString: $0) } ?? "unknown problem"
        switch parser.error {
        case YAML_READER_ERROR:
            return .syntax(line: 1, column: 1, message: "the file cannot be read as UTF-8 text: \(problem)")
        case YAML_MEMORY_ERROR:
            return .syntax(line: 1, column: 1, message: "out of memory while parsing")
        case _ where problem.hasPrefix("Maximum nesting level reached"):
            return .syntax(line: Int(parser.problem_mark.line) + 1, column: Int(parser.problem_mark.column) + 1,
                           message: "the file nests mappings and lists more than 1000 levels deep, the most the YAML reader takes; a graph needs a few levels: flatten the value")
        default:
            let ctx = parser.context.map {
                " (\(String(cString: $0)) at line \(parser.context_mark.line + 1), column \(parser.context_mark.column + 1))"
            } ?? ""
            return .syntax(line: Int(parser.problem_mark.line) + 1, column: Int(parser.problem_mark.column) + 1, message: "syntax error: \(problem)\(ctx)")
        }
    }
}
