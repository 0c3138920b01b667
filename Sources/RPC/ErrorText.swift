import JSON

/// Bounds on what an error echoes of a request. A message quotes what the client sent (a name, a
/// URL, a param) so that a developer sees what was wrong; a client that sends a name of 200 KB
/// would otherwise get it back, twice, in one reply (and in the state file, for a keyed one).
/// Redis answers an unknown command with its first 128 characters; navd keeps a quoted run's
/// start and end, so the message still says what would be right (its suggestions come last).
public enum ErrorText {
    /// A run of a message without a space longer than this is shortened to its first
    /// ``keptHead`` and last ``keptTail`` bytes, with `…` and the bytes left out between them.
    public static let maxRunBytes = 256
    static let keptHead = 160
    static let keptTail = 32
    /// A message longer than this after its runs are shortened (many long runs) keeps its first
    /// and last parts.
    public static let maxMessageBytes = 4096
    /// A string of `data` (top level: `url`, `session`, `route`, `param`, …) longer than this is
    /// cut to it, ending with `…`.
    public static let maxDataStringBytes = 1024

    /// `message`, its overlong runs shortened. A message within ``maxRunBytes`` is returned as it is.
    public static func message(_ message: String) -> String {
        guard message.utf8.count > maxRunBytes else { return message }
        let bytes = Array(message.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(min(bytes.count, maxMessageBytes + 64))
        var start = 0
        var shortened = false
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != 0x20 && bytes[end] != 0x0A { end += 1 }
            if end - start > maxRunBytes {
                let head = edge(bytes, start + keptHead, from: start)
                let tail = edge(bytes, end - keptTail, from: head)
                out += bytes[start..<head]
                out += Array("… (\(tail - head) bytes left out) …".utf8)
                out += bytes[tail..<end]
                shortened = true
            } else {
                out += bytes[start..<end]
            }
            if end < bytes.count { out.append(bytes[end]) }
            start = end + 1
        }
        if out.count > maxMessageBytes {
            let head = edge(out, maxMessageBytes - 1024, from: 0)
            let tail = edge(out, out.count - 960, from: head)
            out = Array(out[..<head]) + Array("… (\(tail - head) bytes left out) …".utf8) + Array(out[tail...])
            shortened = true
        }
        return shortened ? String(decoding: out, as: UTF8.self) : message
    }

    /// `data`, its top-level strings longer than ``maxDataStringBytes`` cut.
    public static func data(_ data: JSONObject) -> JSONObject {
        guard data.contains(where: { ($0.value.stringValue?.utf8.count ?? 0) > maxDataStringBytes }) else { return data }
        var bounded: JSONObject = [:]
        for member in data {
            if let s = member.value.stringValue, s.utf8.count > maxDataStringBytes {
                bounded.append(member.key, .string(cut(s, toBytes: maxDataStringBytes)))
            } else {
                bounded.append(member.key, member.value)
            }
        }
        return bounded
    }

    /// `text` when it is at most `limit` UTF-8 bytes long, else its start cut on a character's edge
    /// and `…`, within `limit` bytes together.
    public static func cut(_ text: String, toBytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        let bytes = Array(text.utf8.prefix(limit))
        let end = edge(bytes, limit - 3, from: 0)  // "…" is 3 bytes
        return String(decoding: bytes[..<end], as: UTF8.self) + "…"
    }

    /// `i` moved back to the first byte of the character it falls in (never before `from`).
    private static func edge(_ bytes: [UInt8], _ i: Int, from: Int) -> Int {
        var i = max(i, from)
        while i > from && i < bytes.count && bytes[i] & 0xC0 == 0x80 { i -= 1 }
        return i
    }
}
