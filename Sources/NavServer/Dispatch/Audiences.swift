import JSON

/// The navigator's notifications, delivered to its clients' connections: dispatch is the
/// navigator's ``Publisher``.
extension Dispatcher: Publisher {
    func makeAudience() -> any Audience { Recipients(tally: audienceTally) }

    var audienceMembers: Int { audienceTally.members }

    func notify(_ method: String, to audience: any Audience, also: (any Client)?, except: (any Client)?, params: (inout JSONWriter) -> Void) {
        // Every audience is made by `makeAudience`, and every client is a peer.
        let recipients = audience as! Recipients
        var targets = recipients.full
        if !recipients.compact.isEmpty { targets.append(contentsOf: recipients.compact) }
        if let extra = also as? Peer, !recipients.contains(extra.connection) { targets.append(extra.connection) }
        if let except = except as? Peer { targets.removeAll { $0 === except.connection } }
        guard !targets.isEmpty else { return }
        transport.broadcast(method, to: targets, params: params)
    }

    func notifyStackChanged(to audience: any Audience, except: (any Client)?, params: (inout JSONWriter, _ compact: Bool) -> Void) {
        let recipients = audience as! Recipients
        let except = (except as? Peer)?.connection
        if !recipients.full.isEmpty { send(to: recipients.full, except: except, compact: false, params: params) }
        if !recipients.compact.isEmpty { send(to: recipients.compact, except: except, compact: true, params: params) }
    }

    private func send(to list: ContiguousArray<Connection>, except: Connection?, compact: Bool, params: (inout JSONWriter, Bool) -> Void) {
        var targets = list
        if let except { targets.removeAll { $0 === except } }
        if !targets.isEmpty { transport.broadcast("stackChanged", to: targets) { params(&$0, compact) } }
    }

    func disconnectAll(reason: String) { transport.closeAll(reason: reason) }
}

/// How many connections listen to all audiences together.
final class AudienceTally {
    var members = 0
}

/// An audience as connections: an array per form of `stackChanged` that every notification walks
/// (positions by id, so a client leaves in constant time), counted in its dispatcher's tally.
final class Recipients: Audience {
    /// Those that hear the full form.
    private(set) var full: ContiguousArray<Connection> = []
    /// Those that hear the compact form.
    private(set) var compact: ContiguousArray<Connection> = []
    /// Each member's place: its index in ``full``, or in ``compact`` as `-1 - index`.
    private var positions: [Int: Int] = [:]
    private let tally: AudienceTally

    init(tally: AudienceTally) { self.tally = tally }

    deinit { tally.members -= full.count + compact.count }

    func contains(_ c: Connection) -> Bool { positions[c.id] != nil }

    func add(_ client: any Client, compact asksCompact: Bool) {
        guard let c = (client as? Peer)?.connection else { return }
        if let p = positions[c.id] {
            if (p < 0) == asksCompact { return }
            remove(c.id)
        }
        if asksCompact {
            positions[c.id] = -1 - compact.count
            compact.append(c)
        } else {
            positions[c.id] = full.count
            full.append(c)
        }
        tally.members += 1
    }

    func remove(_ id: Int) {
        guard let p = positions.removeValue(forKey: id) else { return }
        tally.members -= 1
        if p >= 0 {
            Self.take(p, from: &full, positions: &positions) { $0 }
        } else {
            Self.take(-1 - p, from: &compact, positions: &positions) { -1 - $0 }
        }
    }

    /// Removes the member at `i` of `list`, the last taking its place (`position` maps an index to
    /// what ``positions`` keeps).
    private static func take(_ i: Int, from list: inout ContiguousArray<Connection>, positions: inout [Int: Int], position: (Int) -> Int) {
        let last = list.removeLast()
        if i < list.count {
            list[i] = last
            positions[last.id] = position(i)
        }
    }
}
