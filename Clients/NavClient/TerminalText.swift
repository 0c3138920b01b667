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
