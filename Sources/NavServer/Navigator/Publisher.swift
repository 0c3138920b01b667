import JSON
import NavigationCore
import RPC

/// The role that may change the daemon rather than a session (`provide`, and closing or writing
/// facts into another user's session; `graph.reload` too). navd's own uid always holds it.
let adminRole = "admin"

/// A client as the navigator knows it: an id, roles and a uid to check, a few per-client notes
/// (its last session, its subscriptions), questions it can be asked (a provider's precondition),
/// and its going away. The transport's `Connection` is one; the navigator never sees a socket, a
/// framing or an output buffer, and sends nothing itself: notifications go through a
/// ``Publisher``.
protocol Client: AnyObject {
    var id: Int { get }
    /// Its roles (``roles``), where a ``Caller`` may borrow them for a request being answered.
    var roleHolder: RoleHolder { get }
    /// The peer's uid, when the transport knows it (a Unix socket does).
    var uid: UInt32? { get }
    var isClosed: Bool { get }
    /// The session its last request used (see ``Dispatcher/session(_:for:)``).
    var lastSession: SessionState? { get set }
    /// Sessions it is subscribed to (reported by `stats`).
    var subscriptions: Set<String> { get set }
    /// Runs `body` once, when the client goes away.
    func whenGone(_ body: @escaping (any Client) -> Void)
    /// Sends the client a request; `completion` runs exactly once (its answer, an error answer, a
    /// timeout after `timeoutMs`, or the client going away); `released` once the request no longer
    /// occupies the client (even after it was withdrawn). Returns the request's id.
    @discardableResult
    func request(_ method: String, params: JSONValue, timeoutMs: UInt64, released: (() -> Void)?,
                 completion: @escaping (Result<JSONValue, RPCError>) -> Void) -> Int
    /// Withdraws a request: its completion will not run.
    func cancelRequest(_ id: Int)
    /// Whether the client holds more unread output than it should be sent more of.
    var isBackedUp: Bool { get }
    /// Runs `body` once, when the client has read everything sent to it.
    func whenDrained(_ body: @escaping () -> Void)
}

extension Client {
    /// The roles it holds.
    var roles: Set<String> { roleHolder.roles }
}

/// The clients listening to one session (or one mirrored session), in whatever form the publisher
/// delivers to fastest. Made by the publisher, filled by the navigator through ``Listeners``.
protocol Audience: AnyObject {
    /// Adds `client`, hearing `stackChanged` in the compact form when `compact` (or moves it to
    /// that form if it is a member).
    func add(_ client: any Client, compact: Bool)
    func remove(_ id: Int)
}

/// Where the navigator's news goes: notifications to an audience (and one more client), and
/// turning every client away. The server implements it over its connections.
protocol Publisher: AnyObject {
    func makeAudience() -> any Audience
    /// Members of every audience it made, together (subscriptions, for `stats`), kept as they
    /// join and leave: counting them never walks the sessions.
    var audienceMembers: Int { get }
    /// Sends notification `method` to every member of `audience` but `except`, and to `also` when it
    /// is not a member; `params` writes the notification's params.
    func notify(_ method: String, to audience: any Audience, also: (any Client)?, except: (any Client)?, params: (inout JSONWriter) -> Void)
    /// Sends `stackChanged` to every member of `audience` but `except`: `params` writes its params in
    /// the compact form when its flag says so, for the members that hear that form, and in the full
    /// form for the others (each form written only when someone hears it).
    func notifyStackChanged(to audience: any Audience, except: (any Client)?, params: (inout JSONWriter, _ compact: Bool) -> Void)
    /// Disconnects every client (the node lost its right to serve).
    func disconnectAll(reason: String)
}

extension Publisher {
    func notify(_ method: String, _ params: some JSONEncodable, to audience: any Audience, also: (any Client)? = nil, except: (any Client)? = nil) {
        notify(method, to: audience, also: also, except: except) { params.encode(into: &$0) }
    }

    /// Sends the `stackChanged` that `change` makes (once per form heard: no copy of it is kept).
    func notifyStackChanged(_ change: () -> StackChanged, to audience: any Audience, except: (any Client)? = nil) {
        notifyStackChanged(to: audience, except: except) { w, compact in
            if compact { change().encodeCompact(into: &w) } else { change().encode(into: &w) }
        }
    }
}

/// Who listens to a session: the navigator's view, by client id (and which of them hear the
/// compact form), and the publisher's audience, kept in step.
struct Listeners {
    private(set) var clients: [Int: any Client] = [:]
    /// The ids of the clients that hear `stackChanged` in the compact form.
    private(set) var compact: Set<Int> = []
    let audience: any Audience

    init(_ audience: any Audience) { self.audience = audience }

    var isEmpty: Bool { clients.isEmpty }
    /// Whether some listener hears the full form.
    var wantsFull: Bool { clients.count > compact.count }
    /// Whether some listener hears the compact form.
    var wantsCompact: Bool { !compact.isEmpty }
    func contains(_ c: any Client) -> Bool { clients[c.id] != nil }
    func isCompact(_ id: Int) -> Bool { compact.contains(id) }

    /// Adds `c` (or moves it to the form asked for); false if it was already listening in that form.
    @discardableResult
    mutating func insert(_ c: any Client, compact asksCompact: Bool = false) -> Bool {
        if clients[c.id] != nil, compact.contains(c.id) == asksCompact { return false }
        clients[c.id] = c
        if asksCompact { compact.insert(c.id) } else { compact.remove(c.id) }
        audience.add(c, compact: asksCompact)
        return true
    }

    mutating func remove(_ id: Int) {
        guard clients.removeValue(forKey: id) != nil else { return }
        compact.remove(id)
        audience.remove(id)
    }
}

/// A request's way back to the client that asked, as the navigator answers it: at once, or later
/// through what ``deferred()`` gives (a navigation that waits for its preconditions). Dispatch's
/// `Call` is one (its answer written straight into the client's output); tests use their own.
protocol Responder {
    associatedtype Asker: Client
    /// The client that asked.
    var client: Asker { get }
    func succeed(_ result: JSONValue)
    /// Answers with a result of a known shape, written as it is encoded.
    func succeed<R: JSONEncodable>(_ result: R)
    func fail(_ error: RPCError)
    /// The way to answer later; this responder must not be answered then.
    func deferred() -> any Answer
    /// Runs `body` with the client that asked, counting no reference where the responder lends it
    /// (a ``Call``): what a navigation reads of its client while it is answered.
    func withClient<T>(_ body: (Asker) -> T) -> T
}

/// An answer given later (a pending navigation's, or a keyed duplicate's joining it): the first
/// answer counts.
protocol Answer: AnyObject {
    func succeed(_ result: JSONValue)
    func succeed<R: JSONEncodable>(_ result: R)
    func fail(_ error: RPCError)
}

extension Responder {
    func withClient<T>(_ body: (Asker) -> T) -> T { body(client) }

    func finish(_ result: Result<some JSONEncodable, RPCError>) {
        switch result {
        case .success(let v): succeed(v)
        case .failure(let e): fail(e)
        }
    }

    /// Answers with what `body` returns, or with the error it throws.
    func answer<R: JSONEncodable>(_ body: () throws(RPCError) -> R) {
        do { succeed(try body()) } catch { fail(error) }
    }
}
