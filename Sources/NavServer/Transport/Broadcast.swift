import JSON
import RPC
import Unchecked

/// Notifications to many connections, encoded once per framing.
extension ConnectionSet {
    // MARK: Broadcast

    /// Sends one notification to `targets`, encoding it once per framing in use: the line goes into the
    /// broadcast log and every newline subscriber refers to it; each other framing's form (a
    /// `Content-Length` header, a stream's own frame) is built when first needed and copied.
    func broadcast(method: String, params: JSONValue, to targets: some Sequence<Connection>) {
        broadcast(method, to: ContiguousArray(targets)) { params.encode(into: &$0) }
    }

    /// Sends one notification to `targets`; `params` writes its params.
    func broadcast(_ method: String, to targets: ContiguousArray<Connection>, params: (inout JSONWriter) -> Void) {
        let log = broadcastLog
        let start = log.count
        var w = JSONWriter(into: log)
        RPCEncoder.notification(method: method, into: &w, params: params)
        let bodyEnd = log.count
        log.append(UInt8(ascii: "\n"))
        deliver(start, bodyEnd, log.count, to: targets)
    }

    /// Hands the notification at `start..<end` of the broadcast log (its body ends at `bodyEnd`) to
    /// every target. A function of its own: the loop compiles to less when it shares no frame with
    /// the encoding.
    @inline(never)
    private func deliver(_ start: Int, _ bodyEnd: Int, _ end: Int, to targets: ContiguousArray<Connection>) {
        let log = broadcastLog
        var headed: ByteBuffer?
        /// The notification in each other framing met so far (few: one per kind of stream).
        var framed: [(framing: Framing, bytes: ByteBuffer)] = []
        var sent = 0
        // The array holds every target for the whole loop: no retain and release per subscriber.
        targets.forEachUncounted { c in
            guard !c.isClosed else { return }
            let framing = c.lastFraming
            if framing.isNewline {
                c.sendShared(start, end)
            } else if framing.isContentLength {
                if headed == nil {
                    let h = ByteBuffer(capacity: bodyEnd - start + 32)
                    log.withByteView { Framing.append($0.bytes(start..<bodyEnd), .contentLength, to: h) }
                    headed = h
                }
                headed!.withUnsafeBytes { c.sendRaw(ByteView($0)) }
            } else {
                let bytes: ByteBuffer
                if let known = framed.first(where: { $0.framing == framing }) {
                    bytes = known.bytes
                } else {
                    bytes = ByteBuffer(capacity: bodyEnd - start + 32)
                    log.withByteView { Framing.append($0.bytes(start..<bodyEnd), framing, to: bytes) }
                    framed.append((framing, bytes))
                }
                bytes.withUnsafeBytes { c.sendRaw(ByteView($0)) }
            }
            sent += 1
        }
        stats.notificationsSent += sent
    }
}
