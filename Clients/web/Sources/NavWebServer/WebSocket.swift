import Foundation

/// The WebSocket protocol (RFC 6455) on the server's side, without extensions: the opening
/// handshake's answer, the client's frames read into messages, the server's frames written.
enum WebSocket {
    /// The `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key` (§4.2.2).
    static func accept(key: String) -> String {
        Data(SHA1.digest(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
    }

    /// Whether `key` is what §4.1 asks for: 16 bytes, base64-encoded.
    static func validKey(_ key: String) -> Bool {
        Data(base64Encoded: key)?.count == 16
    }

    enum Opcode: UInt8 {
        case continuation = 0
        case text = 1
        case binary = 2
        case close = 8
        case ping = 9
        case pong = 10
    }

    /// A frame as the server sends it (never masked), the whole message in one frame.
    static func frame(_ opcode: Opcode, _ payload: some Collection<UInt8>) -> [UInt8] {
        var out = frameHead(opcode, count: payload.count)
        out.append(contentsOf: payload)
        return out
    }

    /// The head of a server frame of `count` payload bytes (the payload follows it).
    static func frameHead(_ opcode: Opcode, count: Int) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode.rawValue]
        if count < 126 {
            out.append(UInt8(count))
        } else if count <= 0xFFFF {
            out += [126, UInt8(count >> 8), UInt8(count & 0xFF)]
        } else {
            out.append(127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: count >> shift)) }
        }
        return out
    }

    /// Whether a close frame may carry `code` (RFC 6455 7.4): the defined codes but 1004-1006 and
    /// 1015 (never sent), or a registered or private one (3000-4999).
    static func mayBeSent(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }

    /// A close frame with `code` (and `reason`, cut to fit a control frame's 125 bytes).
    static func closeFrame(_ code: UInt16, _ reason: String = "") -> [UInt8] {
        frame(.close, [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8.prefix(123)))
    }
}

/// Reads a client's frames into messages: checks each frame as §5 says (masked, no reserved bits,
/// known opcodes, control frames short and whole, continuation frames only inside a message, text
/// valid UTF-8), and refuses a message past ``maxMessage`` as soon as a frame's head says so,
/// before its payload arrives. What it reads is bounded by ``maxMessage`` plus one frame's head.
public struct WebSocketReader {
    public enum Event: Equatable, Sendable {
        case text(String)
        case binary(count: Int)
        case ping([UInt8])
        case pong
        /// The client's close frame: its status code, if it sent one.
        case close(UInt16?)
        /// A protocol error: close the connection with `code`, telling the client `reason`.
        case fail(UInt16, String)
    }

    public let maxMessage: Int
    private var buffer: [UInt8] = []
    private var message: [UInt8] = []
    /// The opcode of the message whose frames are arriving (text or binary), nil between messages.
    private var messageOpcode: WebSocket.Opcode?
    /// After a close or a failure nothing more is read.
    public private(set) var finished = false

    public init(maxMessage: Int) { self.maxMessage = maxMessage }

    /// Takes `bytes` and returns the events of every frame they complete.
    public mutating func feed(_ bytes: some Collection<UInt8>) -> [Event] {
        guard !finished else { return [] }
        buffer.append(contentsOf: bytes)
        var events: [Event] = []
        var at = 0
        defer { buffer.removeFirst(min(at, buffer.count)) }
        while !finished {
            guard buffer.count - at >= 2 else { break }
            let b0 = buffer[at], b1 = buffer[at + 1]
            let fin = b0 & 0x80 != 0
            guard b0 & 0x70 == 0 else { return fail(&events, 1002, "reserved bits set: no extension was agreed") }
            guard let opcode = WebSocket.Opcode(rawValue: b0 & 0x0F) else {
                return fail(&events, 1002, "unknown opcode \(b0 & 0x0F)")
            }
            guard b1 & 0x80 != 0 else { return fail(&events, 1002, "a client's frames must be masked (RFC 6455 5.1)") }
            var headLength = 2
            var length = Int(b1 & 0x7F)
            if length == 126 {
                guard buffer.count - at >= 4 else { break }
                length = Int(buffer[at + 2]) << 8 | Int(buffer[at + 3])
                headLength = 4
            } else if length == 127 {
                guard buffer.count - at >= 10 else { break }
                guard buffer[at + 2] & 0x80 == 0 else { return fail(&events, 1002, "a frame's length has its top bit set") }
                var n: UInt64 = 0
                for k in 2..<10 { n = n << 8 | UInt64(buffer[at + k]) }
                length = n > UInt64(Int.max / 2) ? Int.max / 2 : Int(n)
                headLength = 10
            }
            let isControl = opcode.rawValue >= 8
            if isControl {
                guard fin, length <= 125 else { return fail(&events, 1002, "a control frame must be whole and at most 125 bytes") }
            } else {
                if opcode == .continuation {
                    guard messageOpcode != nil else { return fail(&events, 1002, "a continuation frame outside a message") }
                } else if messageOpcode != nil {
                    return fail(&events, 1002, "a new message began before the last one ended")
                }
                if message.count + length > maxMessage {
                    return fail(&events, 1009, "a message may take at most \(maxMessage) bytes")
                }
            }
            guard buffer.count - at >= headLength + 4 + length else { break }
            let mask = Array(buffer[(at + headLength)..<(at + headLength + 4)])
            let payloadStart = at + headLength + 4
            var payload = Array(buffer[payloadStart..<(payloadStart + length)])
            for k in 0..<payload.count { payload[k] ^= mask[k & 3] }
            at = payloadStart + length
            switch opcode {
            case .ping: events.append(.ping(payload))
            case .pong: events.append(.pong)
            case .close:
                guard payload.count != 1 else { return fail(&events, 1002, "a close frame's code takes two bytes") }
                guard String(validating: payload.dropFirst(2), as: UTF8.self) != nil else {
                    return fail(&events, 1007, "a close frame's reason is not UTF-8")
                }
                let code = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
                if let code, !WebSocket.mayBeSent(code) {
                    return fail(&events, 1002, "close code \(code) is not one an endpoint may send (RFC 6455 7.4)")
                }
                finished = true
                events.append(.close(code))
            case .text, .binary, .continuation:
                if opcode != .continuation { messageOpcode = opcode }
                message.append(contentsOf: payload)
                if fin {
                    let whole = message
                    message = []
                    let kind = messageOpcode
                    messageOpcode = nil
                    if kind == .binary {
                        events.append(.binary(count: whole.count))
                    } else if let text = String(validating: whole, as: UTF8.self) {
                        events.append(.text(text))
                    } else {
                        return fail(&events, 1007, "a text message is not UTF-8")
                    }
                }
            }
        }
        return events
    }

    private mutating func fail(_ events: inout [Event], _ code: UInt16, _ reason: String) -> [Event] {
        finished = true
        buffer = []
        message = []
        events.append(.fail(code, reason))
        return events
    }
}

/// SHA-1 (FIPS 180-4), for the handshake's accept value only.
enum SHA1 {
    static func digest(_ input: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var m = input
        let bitLength = UInt64(input.count) * 8
        m.append(0x80)
        while m.count % 64 != 56 { m.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { m.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        var w = [UInt32](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: m.count, by: 64) {
            for t in 0..<16 {
                let i = chunk + t * 4
                w[t] = UInt32(m[i]) << 24 | UInt32(m[i + 1]) << 16 | UInt32(m[i + 2]) << 8 | UInt32(m[i + 3])
            }
            for t in 16..<80 {
                let x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]
                w[t] = x << 1 | x >> 31
            }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for t in 0..<80 {
                let f: UInt32, k: UInt32
                switch t {
                case 0..<20: f = (b & c) | (~b & d); k = 0x5A82_7999
                case 20..<40: f = b ^ c ^ d; k = 0x6ED9_EBA1
                case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1B_BCDC
                default: f = b ^ c ^ d; k = 0xCA62_C1D6
                }
                let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[t]
                e = d
                d = c
                c = b << 30 | b >> 2
                b = a
                a = temp
            }
            h[0] = h[0] &+ a
            h[1] = h[1] &+ b
            h[2] = h[2] &+ c
            h[3] = h[3] &+ d
            h[4] = h[4] &+ e
        }
        var out: [UInt8] = []
        out.reserveCapacity(20)
        for v in h {
            for shift: UInt32 in [24, 16, 8, 0] { out.append(UInt8(truncatingIfNeeded: v >> shift)) }
        }
        return out
    }
}
