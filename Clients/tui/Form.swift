import JSON

/// A small form built from a JSON Schema object (a setup model or a flow's result): one text field
/// per property, in declared order, typed values on submit. navd does the validating; its message
/// is shown in `error` and the field it points at (`data.pointer`) gets the cursor.
struct Form {
    struct Field {
        let name: String
        let type: String
        let required: Bool
        /// What the schema says about it besides its type (enum, bounds, pattern).
        let hint: String
        var text: String
    }

    let title: String
    var fields: [Field]
    var focus = 0
    var error: String?
    /// What submitting does with the built object.
    let submit: (JSONObject) -> Void

    init(title: String, schema: JSONValue?, prefill: JSONObject = [:], submit: @escaping (JSONObject) -> Void) {
        self.title = title
        self.submit = submit
        let required = Set(schema?["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        var fields: [Field] = []
        for (name, p) in schema?["properties"]?.objectValue ?? [:] {
            var hints: [String] = []
            if let e = p["enum"]?.arrayValue { hints.append("one of " + e.map { JSONWriter.string($0) }.joined(separator: ", ")) }
            for k in ["minimum", "maximum", "minLength", "maxLength", "pattern", "format"] {
                if let v = p[k] { hints.append("\(k) \(v.stringValue ?? JSONWriter.string(v))") }
            }
            let pre = prefill[name].map { $0.stringValue ?? JSONWriter.string($0) } ?? ""
            fields.append(Field(name: name, type: p["type"]?.stringValue ?? "any", required: required.contains(name),
                                hint: hints.joined(separator: ", "), text: pre))
        }
        self.fields = fields
    }

    /// Whether the schema has anything to fill in.
    var isEmpty: Bool { fields.isEmpty }

    /// The object to send: empty fields are left out (navd fills mediated ones or reports missing ones);
    /// integers, numbers, booleans and JSON objects/arrays are converted when the text parses, else sent
    /// as typed so that navd's message says what is wrong.
    var value: JSONObject {
        var o = JSONObject()
        for f in fields where !f.text.isEmpty {
            switch f.type {
            case "integer": o[f.name] = Int(f.text).map(JSONValue.int) ?? .string(f.text)
            case "number": o[f.name] = Double(f.text).map { $0 == $0.rounded() && abs($0) < 1e15 ? .int(Int($0)) : .double($0) } ?? .string(f.text)
            case "boolean": o[f.name] = f.text == "true" ? true : f.text == "false" ? false : .string(f.text)
            case "object", "array": o[f.name] = (try? JSONParser(maxDepth: 64).parse(f.text)) ?? .string(f.text)
            default: o[f.name] = .string(f.text)
            }
        }
        return o
    }

    /// Handles a key; returns false when the form is to close (escape).
    mutating func handle(_ key: Key) -> Bool {
        switch key {
        case .escape: return false
        case .tab, .down: if !fields.isEmpty { focus = (focus + 1) % fields.count }
        case .backTab, .up: if !fields.isEmpty { focus = (focus + fields.count - 1) % fields.count }
        case .backspace: if !fields.isEmpty, !fields[focus].text.isEmpty { fields[focus].text.removeLast() }
        case .enter:
            error = nil
            submit(value)
        case .char(let c): if !fields.isEmpty { fields[focus].text.append(c) }
        default: break
        }
        return true
    }

    /// Shows navd's rejection and moves to the field `data.pointer` names (`/id` → `id`).
    mutating func reject(message: String, pointer: String?) {
        error = message
        if let pointer, let name = pointer.split(separator: "/").first.map(String.init),
           let i = fields.firstIndex(where: { $0.name == name }) { focus = i }
    }

    func render(width: Int) -> [Line] {
        var lines = [Line(" " + title + " ", .title)]
        let nameWidth = min(18, (fields.map { $0.name.count + ($0.required ? 1 : 0) }.max() ?? 4) + 1)
        for (i, f) in fields.enumerated() {
            var l = Line(i == focus ? "▸ " : "  ", .key)
            let label = f.name + (f.required ? "*" : "")
            l.add(label.padding(toLength: nameWidth, withPad: " ", startingAt: 0), f.required ? .bold : .plain)
            l.add("[" + f.text + (i == focus ? "_" : "") + "]", i == focus ? .selected : .plain)
            l.add(" " + f.type + (f.hint.isEmpty ? "" : ", " + f.hint), .dim)
            lines.append(l)
        }
        if let error { lines.append(Line("✗ " + error, .error)) }
        lines.append(Line("Tab/↑↓ field  Enter submit  Esc cancel   * required", .dim))
        return lines
    }
}
