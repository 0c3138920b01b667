/// Text from a server made safe to write to a terminal: every control character (C0 but those
/// `keeping`, DEL, C1) is written as `\u{…}`, so an ESC, BEL or CSI sequence in a name, a param,
/// a fact or a result shows as text and never moves the cursor, retitles the window or rings. So is
/// every bidirectional formatting character (``isBidiControl(_:)``): a terminal that lays out
/// right-to-left text would otherwise show `{"id":"\u{202E}gnp.exe"}` as `{"id":"exe.png"}`, the
/// "Trojan Source" trick; written out, what is shown is what navd holds.
public func terminalSafe(_ text: String, keeping: Set<Unicode.Scalar> = []) -> String {
    func isControl(_ u: Unicode.Scalar) -> Bool { u.value < 0x20 || (0x7F...0x9F).contains(u.value) || isBidiControl(u) }
    guard text.unicodeScalars.contains(where: { isControl($0) && !keeping.contains($0) }) else { return text }
    var out = String.UnicodeScalarView()
    for u in text.unicodeScalars {
        if isControl(u) && !keeping.contains(u) {
            out.append(contentsOf: "\\u{\(String(u.value, radix: 16, uppercase: true))}".unicodeScalars)
        } else {
            out.append(u)
        }
    }
    return String(out)
}

/// The characters that reorder the text around them when shown (Unicode's bidirectional
/// formatting characters: the marks U+200E, U+200F and U+061C, the embeddings and overrides
/// U+202A–U+202E, the isolates U+2066–U+2069), which compilers and code hosts flag in source for
/// the same reason.
public func isBidiControl(_ u: Unicode.Scalar) -> Bool {
    switch u.value {
    case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
}

/// JSON text (as a JSON writer makes it) made safe to write to a terminal and still the same JSON:
/// DEL and the C1 controls (U+0080–U+009F, which a terminal may take as CSI and the like), which a
/// writer may leave raw inside strings, and the bidirectional formatting characters
/// (``isBidiControl(_:)``), are written as `\uXXXX` escapes. C0 controls are escaped by every JSON
/// writer already; outside strings JSON holds none of these.
public func terminalSafeJSON(_ json: String) -> String {
    func escaped(_ u: Unicode.Scalar) -> Bool { (0x7F...0x9F).contains(u.value) || isBidiControl(u) }
    guard json.unicodeScalars.contains(where: escaped) else { return json }
    var out = String.UnicodeScalarView()
    for u in json.unicodeScalars {
        if escaped(u) {
            let hex = String(u.value, radix: 16, uppercase: true)
            out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
        } else {
            out.append(u)
        }
    }
    return String(out)
}
