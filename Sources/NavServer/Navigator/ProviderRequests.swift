import JSON
import RPC
import UV

/// Requests navd has for one provider (`precondition.evaluate`, `precondition.recover`). At most
/// `--max-provider-requests` are in flight at the provider, shared between the uids of their
/// navigations (``FairShare``), and none is sent while the provider has unread output past its
/// mark: the others wait here, in navd, and go uid by uid in turn as answers come back and the
/// provider reads. So a client that floods navigations needing a provider delays only its own, and
/// the provider's output never grows with requests it was not asked to take: it is never
/// disconnected for them. Waiting here is not failing: a request's timeout starts when it is sent;
/// the wait is bounded by the navigation's `--max-queue-wait`.
final class ProviderSlots {
    let provider: any Client
    private let share: FairShare
    private let loop: EventLoop
    /// Requests sent and not over for the provider yet (withdrawn ones count until it answers them
    /// or their time is up), by the uid of their navigation.
    private var inFlight = UidCounts()
    private var waiting = FairQueue<ProviderRequest>()
    /// A drain hook is set on the provider (one at a time).
    private var awaitingDrain = false

    init(provider: any Client, share: FairShare, loop: EventLoop) {
        self.provider = provider
        self.share = share
        self.loop = loop
    }

    var waitingCount: Int { waiting.count }

    /// Sends `r` now if its uid has room at the provider, else queues it for at most `maxWaitMs`
    /// (its own timeout starts when it is sent); answers where it waits then: behind how many of
    /// its uid's, of how many in all; nil when it was sent.
    @discardableResult
    func submit(_ r: ProviderRequest, maxWaitMs: UInt64) -> (behind: Int, waiting: Int)? {
        if waiting.count(of: r.uid) == 0 && mayGo(r.uid) && !provider.isBackedUp {
            send(r)
            return nil
        }
        let behind = waiting.count(of: r.uid)
        r.ticket = waiting.append(r, uid: r.uid)
        r.timer = Timer(loop: loop).labelled("a provider request waited too long for its turn")
        r.timer?.start(milliseconds: maxWaitMs) { [unowned self] in
            if let t = r.ticket { waiting.remove(t) }
            r.ticket = nil
            r.timer?.close()
            r.timer = nil
            r.finish(.failure(RPCError(.timeout, "it waited \(formatMs(maxWaitMs)) for the provider to take the request (the --max-queue-wait limit): \(inFlight.total) requests are in flight at it, \(waiting.count) more wait (--max-provider-requests \(share.limit))",
                                       data: ["queued": true])))
        }
        waitForDrainIfBackedUp()
        return (behind, waiting.count)
    }

    /// Withdraws `r`: dropped if it still waits here, else withdrawn at the provider.
    func withdraw(_ r: ProviderRequest) {
        r.completion = nil
        if let t = r.ticket {
            waiting.remove(t)
            r.ticket = nil
            r.timer?.close()
            r.timer = nil
        } else if let rid = r.rid {
            provider.cancelRequest(rid)
        }
    }

    /// The provider went away: every request waiting here fails as the sent ones did.
    func providerGone() {
        while let r = waiting.pop(where: { _ in true }) {
            r.ticket = nil
            r.timer?.close()
            r.timer = nil
            r.finish(.failure(RPCError(.clientGone, "the provider disconnected")))
        }
    }

    private func mayGo(_ uid: UInt32) -> Bool { share.verdict(for: uid, in: inFlight) == .admitted }

    private func send(_ r: ProviderRequest) {
        r.timer?.close()
        r.timer = nil
        r.sent?(loop.now >= r.queuedAt ? loop.now - r.queuedAt : 0)
        inFlight.add(r.uid)
        let uid = r.uid
        r.rid = provider.request(r.method, params: r.params, timeoutMs: r.timeoutMs, released: { [unowned self] in
            inFlight.remove(uid)
            pump()
        }, completion: { result in r.finish(result) })
    }

    /// Sends what waits, uid by uid, while uids have room and the provider reads.
    private func pump() {
        if provider.isClosed { return providerGone() }
        while !waiting.isEmpty && !provider.isBackedUp, let r = waiting.pop(where: mayGo) {
            r.ticket = nil
            send(r)
        }
        waitForDrainIfBackedUp()
    }

    private func waitForDrainIfBackedUp() {
        guard !waiting.isEmpty, provider.isBackedUp, !awaitingDrain else { return }
        awaitingDrain = true
        provider.whenDrained { [weak self] in
            guard let self else { return }
            awaitingDrain = false
            pump()
        }
    }
}

/// One request for a provider, waiting in navd or sent.
final class ProviderRequest {
    let method: String
    let params: JSONValue
    let timeoutMs: UInt64
    /// The uid of the navigation it is for.
    let uid: UInt32
    let queuedAt: UInt64
    /// Runs when it is sent, with how long it waited in navd (ms).
    var sent: ((UInt64) -> Void)?
    /// Runs once with the outcome; nil once withdrawn.
    var completion: ((Result<JSONValue, RPCError>) -> Void)?
    var ticket: FairQueue<ProviderRequest>.Ticket?
    var timer: Timer?
    /// Its id at the provider, once sent.
    var rid: Int?

    init(method: String, params: JSONValue, timeoutMs: UInt64, uid: UInt32, queuedAt: UInt64,
         completion: @escaping (Result<JSONValue, RPCError>) -> Void) {
        self.method = method
        self.params = params
        self.timeoutMs = timeoutMs
        self.uid = uid
        self.queuedAt = queuedAt
        self.completion = completion
    }

    func finish(_ result: Result<JSONValue, RPCError>) {
        let c = completion
        completion = nil
        c?(result)
    }
}

extension Navigator {
    /// The request queue of `provider`, made on first use.
    func slots(of provider: any Client) -> ProviderSlots {
        if let s = providerSlots[provider.id] { return s }
        let s = ProviderSlots(provider: provider, share: config.providerRequests, loop: loop)
        providerSlots[provider.id] = s
        watch(provider)
        return s
    }
}
