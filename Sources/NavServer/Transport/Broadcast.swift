import JSON
import Logging
import NavGraph
import NavigationCore
import RPC
import UV
import Unchecked
#if canImport(Glibc)
import Glibc
#endif

/// Notifications to many connections, encoded once per framing.
extension Server {
    // MARK: Broadcast

    /// Sends one notification to `targets`, encoding it once per framing in use: the line goes into the
    /// broadcast log and every newline subscriber refers to it; the Content-Length form is built when
    /// first needed and copied.
    func broadcast(method: String, params: JSONValue, to targets: some Sequence<Connection>) {
        broadcast(method: method, encodable: params, to: ContiguousArray(targets))
    }

    func broadcast(method: String, encodable params: some JSONEncodable, to targets: ContiguousArray<Connection>) {
        let log = broadcastLog
        let start = log.count
        var w = JSONWriter(into: log)
        RPCEncoder.notification(method: method, encodable: params, into: &w)
        let bodyEnd = log.count
        log.append(UInt8(ascii: "\n"))
        let end = log.count
        var headed: ByteBuffer?
        var sent = 0
        // The array holds every target for the whole loop: no retain and release per subscriber.
        targets.withUnsafeBufferPointer { list in
          for i in list.indices {
            Unretained(list[i]).with { c in
            guard !c.isClosed else { return }
            switch c.lastFraming {
            case .newline:
                c.sendShared(start, end)
            case .contentLength:
                if headed == nil {
                    let h = ByteBuffer(capacity: bodyEnd - start + 32)
                    log.withUnsafeBytes { Framing.append(UnsafeRawBufferPointer(rebasing: $0[start..<bodyEnd]), .contentLength, to: h) }
                    headed = h
                }
                headed!.withUnsafeBytes { c.sendRaw($0) }
            }
            sent += 1
            }
          }
        }
        stats.notificationsSent += sent
    }
}
