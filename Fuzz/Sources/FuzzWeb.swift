import NavWebServer

/// nav-web's HTTP head parser: whatever the bytes, an answer within the limits; a head read from
/// the whole input is read the same from any longer input that starts with it (what follows a head
/// is the next request's), and every shorter prefix of it waits for more or is refused; the quick
/// look for a head's end (`mayEnd`) sees every head's.
func fuzzHTTP(_ data: UnsafeRawBufferPointer) {
    let bytes = Array(data)
    let whole = HTTPHead.parse(bytes)
    switch whole {
    case .incomplete:
        require(bytes.count <= HTTPHead.maxHeadBytes, "more than the limit still waits: \(bytes.count) bytes")
    case .head(let head, let length):
        require(length <= bytes.count && length <= HTTPHead.maxHeadBytes, "a head longer than its input or the limit")
        require(head.target.hasPrefix("/") && head.fields.count <= HTTPHead.maxHeaders, "a head outside the syntax was read")
        require(head.fields.allSatisfy { $0.name == $0.name.lowercased() }, "a field name not in lower case")
        require(HTTPHead.parse(bytes[..<length]) == whole, "the head alone reads differently")
        require(HTTPHead.mayEnd(Array(bytes[..<length]), from: 0), "a head whose end mayEnd does not see")
        let cut = Int(bytes.first ?? 0) % max(length, 1)
        if case .head = HTTPHead.parse(bytes[..<cut]) { require(false, "a prefix of a head was read as a head") }
    case .refused(let status, let reason):
        require([400, 413, 431, 501, 505].contains(status) && !reason.isEmpty, "refused with \(status): \(reason)")
    }
}

/// nav-web's WebSocket reader: the same events whether the bytes come at once or cut at a point the
/// input chooses; no message past the limit; nothing after a close or a failure.
func fuzzWebSocket(_ data: UnsafeRawBufferPointer) {
    let maxMessage = 1024
    let bytes = Array(data)
    var whole = WebSocketReader(maxMessage: maxMessage)
    let once = whole.feed(bytes)
    var split = WebSocketReader(maxMessage: maxMessage)
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % bytes.count
    let twice = split.feed(bytes[..<cut]) + split.feed(bytes[cut...])
    require(once == twice, "cut at \(cut): \(once) against \(twice)")
    for (i, event) in once.enumerated() {
        switch event {
        case .text(let t): require(t.utf8.count <= maxMessage, "a message past the limit")
        case .binary(let n): require(n <= maxMessage, "a message past the limit")
        case .close, .fail: require(i == once.count - 1, "events after a close or a failure")
        default: break
        }
    }
}
