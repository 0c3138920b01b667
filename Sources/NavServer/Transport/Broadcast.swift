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
        broadcast(method, to: targets) { params.encode(into: &$0) }
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

/// The navigator's notifications, delivered to connections.
extension Server: Publisher {
    func makeAudience() -> any Audience { Recipients() }

    func notify(_ method: String, to audience: any Audience, also: (any Client)?, except: (any Client)?, params: (inout JSONWriter) -> Void) {
        // Every audience is made by `makeAudience`, and every client is a connection.
        let recipients = audience as! Recipients
        var targets = recipients.list
        if let extra = also as? Connection, !recipients.contains(extra) { targets.append(extra) }
        if let except { targets.removeAll { $0 === except } }
        guard !targets.isEmpty else { return }
        broadcast(method, to: targets, params: params)
    }

    func disconnectAll(reason: String) {
        for c in Array(connections.values) { c.close(reason: reason) }
    }
}

/// An audience as connections: an array every notification walks (positions by id, so a client
/// leaves in constant time).
final class Recipients: Audience {
    private(set) var list: ContiguousArray<Connection> = []
    private var positions: [Int: Int] = [:]

    func contains(_ c: Connection) -> Bool { positions[c.id] != nil }

    func add(_ client: any Client) {
        guard let c = client as? Connection, positions[c.id] == nil else { return }
        positions[c.id] = list.count
        list.append(c)
    }

    func remove(_ id: Int) {
        guard let i = positions.removeValue(forKey: id) else { return }
        let last = list.removeLast()
        if i < list.count {
            list[i] = last
            positions[last.id] = i
        }
    }
}

extension Connection: Client {
    var uid: UInt32? { peer?.uid }

    func whenGone(_ body: @escaping (any Client) -> Void) {
        onClose.append(body)
    }
}
