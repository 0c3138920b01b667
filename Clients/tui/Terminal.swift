import NavClient
import UV

/// A key as nav-tui understands it, decoded from the bytes a terminal sends in raw mode.
enum Key: Equatable {
    case char(Character)
    case enter, escape, tab, backTab, backspace, up, down, left, right, interrupt

    /// Decodes one read's worth of bytes (a read holds whole escape sequences in practice).
    static func decode(_ bytes: [UInt8]) -> [Key] {
        var keys: [Key] = []
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x1b {
                if i + 2 < bytes.count, bytes[i + 1] == 0x5b || bytes[i + 1] == 0x4f {
                    switch bytes[i + 2] {
                    case 0x41: keys.append(.up)
                    case 0x42: keys.append(.down)
                    case 0x43: keys.append(.right)
                    case 0x44: keys.append(.left)
                    case 0x5a: keys.append(.backTab)
                    default: break
                    }
                    i += 3
                    // Skip the rest of longer sequences (`ESC [ 1 ; 5 A`, …) up to their final byte.
                    while i < bytes.count, bytes[i - 1] >= 0x30, bytes[i - 1] <= 0x3f, bytes[i] < 0x40 { i += 1 }
                    continue
                }
                keys.append(.escape)
                i += 1
                continue
            }
            switch b {
            case 0x0d, 0x0a: keys.append(.enter)
            case 0x09: keys.append(.tab)
            case 0x7f, 0x08: keys.append(.backspace)
            case 0x03: keys.append(.interrupt)
            default:
                // One UTF-8 scalar.
                let len = b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4
                let end = min(bytes.count, i + len)
                if b >= 0x20, let s = String(validating: bytes[i..<end], as: UTF8.self), let c = s.first { keys.append(.char(c)) }
                i = end
                continue
            }
            i += 1
        }
        return keys
    }
}

/// Text attributes of a span.
enum Style {
    case plain, dim, bold, highlight, title, error, ok, key, selected
}

/// One screen line made of styled spans, cut to the terminal's width.
struct Line {
    var spans: [(String, Style)] = []

    /// Text from navd is written through ``terminalSafe(_:keeping:)``: a control character in a
    /// name, a param or a result shows as `\u{1B}`, never as a terminal sequence.
    init(_ text: String = "", _ style: Style = .plain) { if !text.isEmpty { spans = [(terminalSafe(text), style)] } }

    mutating func add(_ text: String, _ style: Style = .plain) { spans.append((terminalSafe(text), style)) }

    var width: Int { spans.reduce(0) { $0 + $1.0.count } }
}

/// The terminal: raw mode on an alternate screen, frames written whole, restored on every way out.
final class Terminal {
    let input: TTY
    let output: TTY
    let color: Bool
    private(set) var columns = 80
    private(set) var rows = 24
    private var active = false

    init(loop: EventLoop, color: Bool) throws(UVError) {
        input = try TTY(loop: loop, fd: 0)
        output = try TTY(loop: loop, fd: 1)
        self.color = color
        updateSize()
    }

    func updateSize() {
        if let s = output.windowSize(), s.columns > 0, s.rows > 0 { (columns, rows) = s }
    }

    func enter() throws(UVError) {
        try input.setRawMode()
        active = true
        output.write(Array("\u{1b}[?1049h\u{1b}[?25l\u{1b}[2J".utf8))
    }

    /// Leaves the alternate screen, shows the cursor and restores the terminal mode.
    func leave() {
        guard active else { return }
        active = false
        output.write(Array("\u{1b}[0m\u{1b}[?25h\u{1b}[?1049l".utf8))
        TTY.resetMode()
    }

    private func sgr(_ style: Style) -> String {
        guard color else {
            switch style {
            case .highlight, .title, .selected: return "\u{1b}[7m"
            case .bold, .key: return "\u{1b}[1m"
            default: return ""
            }
        }
        switch style {
        case .plain: return ""
        case .dim: return "\u{1b}[2m"
        case .bold: return "\u{1b}[1m"
        case .highlight: return "\u{1b}[1;32m"
        case .title: return "\u{1b}[1;37;44m"
        case .error: return "\u{1b}[1;31m"
        case .ok: return "\u{1b}[32m"
        case .key: return "\u{1b}[1;33m"
        case .selected: return "\u{1b}[7m"
        }
    }

    /// Draws `lines` as the whole screen: each cut or padded to the width, missing rows cleared.
    /// Nothing is drawn once the terminal is left (replies failing at quit still ask for a redraw).
    func draw(_ lines: [Line]) {
        guard active else { return }
        var out = "\u{1b}[H"
        for row in 0..<rows {
            out += "\u{1b}[\(row + 1);1H\u{1b}[0m"
            var left = columns
            if row < lines.count {
                for (text, style) in lines[row].spans where left > 0 {
                    let cut = text.count > left ? String(text.prefix(left)) : text
                    left -= cut.count
                    let s = sgr(style)
                    out += s.isEmpty ? cut : s + cut + "\u{1b}[0m"
                }
            }
            out += "\u{1b}[K"
        }
        output.write(Array(out.utf8))
    }
}
