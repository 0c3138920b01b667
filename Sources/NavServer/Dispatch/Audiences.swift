import JSON

/// The navigator's notifications, delivered to its clients' connections: dispatch is the
/// navigator's ``Publisher``.
extension Dispatcher: Publisher {
    func makeAudience() -> any Audience { Recipients(tally: audienceTally) }

    var audienceMembers: Int { audienceTally.members }

    func notify(_ method: String, to audience: any Audience, also: (any Client)?, except: (any Client)?, params: (inout JSONWriter) -> Void) {
        // Every audience is made by `makeAudience`, and every client is a peer.
        let recipients = audience as! Recipients
        var targets = recipients.list
        if let extra = also as? Peer, !recipients.contains(extra.connection) { targets.append(extra.connection) }
        if let except = except as? Peer { targets.removeAll { $0 === except.connection } }
        guard !targets.isEmpty else { return }
        transport.broadcast(method, to: targets, params: params)
    }

    func disconnectAll(reason: String) { transport.closeAll(reason: reason) }
}

/// How many connections listen to all audiences together.
final class AudienceTally {
    var members = 0
}

/// An audience as connections: an array every notification walks (positions by id, so a client
/// leaves in constant time), counted in its dispatcher's tally.
final class Recipients: Audience {
    private(set) var list: ContiguousArray<Connection> = []
    private var positions: [Int: Int] = [:]
    private let tally: AudienceTally

    init(tally: AudienceTally) { self.tally = tally }

    deinit { tally.members -= list.count }

    func contains(_ c: Connection) -> Bool { positions[c.id] != nil }

    func add(_ client: any Client) {
        guard let c = (client as? Peer)?.connection, positions[c.id] == nil else { return }
        positions[c.id] = list.count
        list.append(c)
        tally.members += 1
    }

    func remove(_ id: Int) {
        guard let i = positions.removeValue(forKey: id) else { return }
        tally.members -= 1
        let last = list.removeLast()
        if i < list.count {
            list[i] = last
            positions[last.id] = i
        }
    }
}
