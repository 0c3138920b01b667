import Foundation

/// HTTP/1.1 as nav-web speaks it (RFC 9112): requests without a body (GET and HEAD), read as a head
/// of at most ``maxHeadBytes`` bytes and ``maxHeaders`` fields; answers with a length, kept alive
/// unless the client or the answer closes. A head that breaks the syntax is answered with the
/// status that names the fault (400, 413, 431, 501, 505) and the connection is closed.
public struct HTTPRequestHead: Equatable, Sendable {
    public var method: String
    /// The request target as sent (`/path?query`).
    public var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var minorVersion: Int
    /// Field names in lower case, in the order sent.
    public var fields: [(name: String, value: String)]

    public static func == (a: HTTPRequestHead, b: HTTPRequestHead) -> Bool {
        a.method == b.method && a.target == b.target && a.minorVersion == b.minorVersion
            && a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.value) == b.fields.map(\.value)
    }

    /// The target's path (before `?`).
    public var path: Substring { target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0] }

    /// The first value of query parameter `name`, percent-decoded.
    public func query(_ name: String) -> String? {
        guard let q = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: q)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if HTTPHead.percentDecoded(kv[0]) == name { return kv.count == 2 ? HTTPHead.percentDecoded(kv[1]) : "" }
        }
        return nil
    }

    /// The first value of field `name` (lower case).
    public func field(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Every value of field `name` (lower case).
    public func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

    /// Whether the comma-separated field `name` holds `token` (case-insensitive), as `Connection`.
    public func fieldHasToken(_ name: String, _ token: String) -> Bool {
        values(name).contains { $0.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == token } }
    }

    /// Whether the connection stays open after the answer: HTTP/1.1 unless `Connection: close`,
    /// HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool {
        minorVersion >= 1 ? !fieldHasToken("connection", "close") : fieldHasToken("connection", "keep-alive")
    }
}

public enum HTTPHead {
    /// The most bytes a request's head (its line and fields) may take.
    public static let maxHeadBytes = 16 * 1024
    /// The most fields a request may carry.
    public static let maxHeaders = 100

    public enum Outcome: Equatable, Sendable {
        /// More bytes are needed (fewer than ``maxHeadBytes`` so far).
        case incomplete
        /// A head, taking the first `length` bytes.
        case head(HTTPRequestHead, length: Int)
        /// A head that cannot be served: the status to answer, and why, for the client.
        case refused(status: Int, reason: String)
    }

    /// Reads one request head from the start of `bytes`. Lines end with CRLF (a bare LF is read as
    /// one too); empty lines before the request line are skipped (RFC 9112 §2.2).
    public static func parse(_ bytes: some RandomAccessCollection<UInt8>) -> Outcome {
        let b = Array(bytes.prefix(maxHeadBytes + 1))
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var i = 0
        var end: Int?
        while i < b.count {
            if b[i] == 0x0A {
                var line = b[start..<i]
                if line.last == 0x0D { line = line.dropLast() }
                start = i + 1
                if line.isEmpty {
                    if !lines.isEmpty { end = start; break }
                } else {
                    lines.append(line)
                    if lines.count > maxHeaders + 1 {
                        return .refused(status: 431, reason: "the request has more than \(maxHeaders) header fields")
                    }
                }
            }
            i += 1
        }
        guard let end, end <= maxHeadBytes else {
            if b.count > maxHeadBytes {
                return .refused(status: 431, reason: "the request's line and header fields take more than \(maxHeadBytes) bytes")
            }
            return .incomplete
        }
        let requestLine = lines[0]
        let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte), !parts[1].isEmpty,
              parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .refused(status: 400, reason: "the request line is not `METHOD /path HTTP/1.1`")
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        let minor: Int
        switch version {
        case "HTTP/1.1": minor = 1
        case "HTTP/1.0": minor = 0
        default:
            guard version.hasPrefix("HTTP/") else { return .refused(status: 400, reason: "the request line is not `METHOD /path HTTP/1.1`") }
            return .refused(status: 505, reason: "nav-web speaks HTTP/1.1 and HTTP/1.0, not \(version)")
        }
        let target = String(decoding: parts[1], as: UTF8.self)
        guard target.hasPrefix("/") else {
            return .refused(status: 400, reason: "the request target must be a path starting with / (origin form), not \(target.prefix(100))")
        }
        var fields: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: 0x3A), colon > line.startIndex,
                  line[line.startIndex..<colon].allSatisfy(isTokenByte) else {
                if line.first == 0x20 || line.first == 0x09 {
                    return .refused(status: 400, reason: "a header field continues on the next line (obsolete line folding, RFC 9112 §5.2)")
                }
                return .refused(status: 400, reason: "a header line is not `Name: value`")
            }
            let value = line[(colon + 1)...].drop { $0 == 0x20 || $0 == 0x09 }
            let trimmed = value.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
            guard trimmed.allSatisfy({ $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 }) else {
                return .refused(status: 400, reason: "a header field's value holds a control character")
            }
            fields.append((String(decoding: line[line.startIndex..<colon], as: UTF8.self).lowercased(),
                           String(decoding: trimmed, as: UTF8.self)))
        }
        let head = HTTPRequestHead(method: String(decoding: parts[0], as: UTF8.self), target: target, minorVersion: minor, fields: fields)
        if !head.values("transfer-encoding").isEmpty {
            return .refused(status: 501, reason: "nav-web's requests carry no body (Transfer-Encoding is not taken)")
        }
        let lengths = head.values("content-length")
        if !lengths.isEmpty {
            guard lengths.allSatisfy({ $0 == lengths[0] }), let n = Int(lengths[0]), n >= 0, lengths[0].allSatisfy(\.isASCII) else {
                return .refused(status: 400, reason: "the Content-Length is not one number")
            }
            if n > 0 { return .refused(status: 413, reason: "nav-web's requests carry no body (this one says \(n) bytes)") }
        }
        if head.values("host").count > 1 { return .refused(status: 400, reason: "the request has more than one Host field") }
        return .head(head, length: end)
    }

    /// Whether bytes from `from` on (with the two before them) may end a head: an empty line (LF,
    /// perhaps CR, LF) or more than ``maxHeadBytes`` in all. A head arriving a byte at a time is then
    /// parsed once it may be whole, not again at every byte.
    public static func mayEnd(_ bytes: [UInt8], from: Int) -> Bool {
        if bytes.count > maxHeadBytes { return true }
        var i = max(from - 2, 0)
        while i < bytes.count {
            if bytes[i] == 0x0A {
                if i + 1 < bytes.count && bytes[i + 1] == 0x0A { return true }
                if i + 2 < bytes.count && bytes[i + 1] == 0x0D && bytes[i + 2] == 0x0A { return true }
            }
            i += 1
        }
        return false
    }

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenByte(_ c: UInt8) -> Bool {
        switch c {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): return true
        default: return false
        }
    }

    /// `%XX` sequences and `+` (a space, in a query) decoded; a malformed `%` is kept as it is.
    static func percentDecoded(_ s: Substring) -> String {
        var out: [UInt8] = []
        let u = Array(s.utf8)
        var i = 0
        while i < u.count {
            if u[i] == UInt8(ascii: "%"), i + 2 < u.count, let h = hex(u[i + 1]), let l = hex(u[i + 2]) {
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(u[i] == UInt8(ascii: "+") ? 0x20 : u[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}

/// An answer: status, fields and body; ``bytes(keepAlive:bodyless:)`` adds the length, the
/// connection's fate and the server's name.
struct HTTPAnswer {
    var status: Int
    var fields: [(String, String)]
    var body: [UInt8]

    init(status: Int, fields: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.fields = fields
        self.body = body
    }

    /// A plain-text answer.
    static func text(_ status: Int, _ body: String) -> HTTPAnswer {
        HTTPAnswer(status: status, fields: [("Content-Type", "text/plain; charset=utf-8")], body: Array(body.utf8))
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 413: return "Content Too Large"
        case 426: return "Upgrade Required"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Status"
        }
    }

    /// The answer as sent; `bodyless` for HEAD (the length said, the body left out).
    func bytes(keepAlive: Bool, bodyless: Bool = false) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(HTTPAnswer.reason(status))\r\nServer: nav-web\r\n"
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        if status != 101 {
            head += "Content-Length: \(body.count)\r\n"
            if !keepAlive { head += "Connection: close\r\n" }
        }
        head += "\r\n"
        return Array(head.utf8) + (bodyless ? [] : body)
    }
}
