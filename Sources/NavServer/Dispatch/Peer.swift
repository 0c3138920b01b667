import JSON
import NavigationCore
import RPC
import UV
import Unchecked

/// A client as dispatch knows it, over its connection: who it is (name, roles, token), what it
/// follows (subscriptions, the session its last request used), the requests navd sent it, and a
/// batch it is being answered a slice at a time. The navigator sees it as a ``Client``; the
/// connection hands it its messages (``ConnectionHandler``).
final class Peer {
    let connection: Connection
    let dispatcher: Dispatcher
    var clientName: String?
    /// Roles granted by the policy for this peer's uid and its token (`hello {token}`); computed again
    /// when the policy is reloaded, so a revoked uid or token loses its roles on open connections.
    /// (Kept in a ``RoleHolder``, which a ``Caller`` may borrow for a request: ``Client/roles``
    /// reads them, ``grant(_:)`` sets them.)
    let roleHolder: RoleHolder
    /// The roles this client keeps of those granted (`hello {keepRoles}`), for the rest of the
    /// connection; nil: all of them.
    var keptRoles: Set<String>?
    /// The token this client presented in `hello`, if the policy knew it.
    var token: String?
    /// The session this client's last request used (see ``Navigator/state(_:for:)``).
    var lastSession: SessionState?
    /// Sessions this client is subscribed to.
    var subscriptions: Set<String> = []
    /// Whether its subscriptions hear `stackChanged` in the compact form unless `subscribe` says
    /// otherwise (`hello {notifications: "compact"}`).
    var prefersCompact = false
    /// Requests navd sent to this client, by id.
    var outbound: [Int: OutboundRequest] = [:]
    /// Run once when the client goes away, for cleanup by the navigator.
    private var goneHooks: [(any Client) -> Void] = []
    /// A batch answered a slice per loop iteration; its connection holds its other input meanwhile.
    var pendingBatch: PendingBatch? {
        didSet { connection.workHeld = pendingBatch != nil }
    }

    init(connection: Connection, dispatcher: Dispatcher, roles: Set<String>) {
        self.connection = connection
        self.dispatcher = dispatcher
        roleHolder = RoleHolder(roles)
    }

    /// Gives the peer `granted` (what the policy grants its uid and token), less what it gave up.
    func grant(_ granted: Set<String>) {
        roleHolder.roles = keptRoles.map { granted.intersection($0) } ?? granted
    }

    var id: Int { connection.id }
    var credentials: PeerCredentials? { connection.credentials }
}

extension Peer: ConnectionHandler {
    @inline(__always)
    func received(_ body: ByteView, framing: Framing) {
        dispatcher.handleMessage(body, framing: framing, from: self)
    }

    func willReceive(lines: ByteView) -> Bool {
        dispatcher.parser.beginBatch(lines)
        return true
    }

    func readEnded(batched: Bool) {
        if batched { dispatcher.parser.endBatch() }
        dispatcher.settleAnswers(readBy: self)
    }

    func continueHeldWork() { dispatcher.continueBatch(self) }

    var listens: Bool { !subscriptions.isEmpty }

    func connectionClosed() {
        let pending = outbound
        outbound = [:]
        for (_, r) in pending {
            r.timer.close()
            r.completion?(.failure(RPCError(.clientGone, "the client disconnected before answering \(r.method)")))
            r.released?()
        }
        let hooks = goneHooks
        goneHooks = []
        for h in hooks { h(self) }
        dispatcher.peerClosed(self)
    }
}

extension Peer: Client {
    var uid: UInt32? { connection.credentials?.uid }
    var isClosed: Bool { connection.isClosed }

    func whenGone(_ body: @escaping (any Client) -> Void) {
        goneHooks.append(body)
    }

    var isBackedUp: Bool { connection.isBackedUp }

    func whenDrained(_ body: @escaping () -> Void) { connection.whenDrained(body) }
}
