/// Text from a server made safe to write to a terminal: every control character (C0 but those
/// `keeping`, DEL, C1) is written as `\u{…}`, so an ESC, BEL or CSI sequence in a name, a param,
/// a fact or a result shows as text and never moves the cursor, retitles the window or rings.
public func terminalSafe(_ text: String, keeping: Set<Unicode.Scalar> = []) -> String {
    func isControl(_ u: Unicode.Scalar) -> Bool { u.value < 0x20 || (0x7F...0x9F).contains(u.value) }
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

/// JSON text (as a JSON writer makes it) made safe to write to a terminal and still the same JSON:
/// DEL and the C1 controls (U+0080–U+009F, which a terminal may take as CSI and the like), which a
/// writer may leave raw inside strings, are written as `\u00XX` escapes. C0 controls are escaped
/// by every JSON writer already; outside strings JSON holds none of these.
public func terminalSafeJSON(_ json: String) -> String {
    guard json.unicodeScalars.contains(where: { (0x7F...0x9F).contains($0.value) }) else { return json }
    var out = String.UnicodeScalarView()
    for u in json.unicodeScalars {
        if (0x7F...0x9F).contains(u.value) {
            out.append(contentsOf: "\\u00\(String(u.value, radix: 16, uppercase: true))".unicodeScalars)
        } else {
            out.append(u)
        }
    }
    return String(out)
}
