import JSON
import RPC
import UV

/// Requests navd has for one provider (`precondition.evaluate`, `precondition.recover`). At most
/// `--max-provider-requests-per-uid` are in flight at the provider for the navigations of one uid,
/// and none is sent while the provider has unread output past its mark: the others wait here, in
/// navd, and go uid by uid in turn as answers come back and the provider reads. So a client that
/// floods navigations needing a provider delays only its own, and the provider's output never
/// grows with requests it was not asked to take: it is never disconnected for them.
final class ProviderSlots {
    let provider: any Client
    private let maxPerUid: Int
    private let loop: EventLoop
    /// Requests sent and not over for the provider yet (withdrawn ones count until it answers them
    /// or their time is up), by the uid of their navigation.
    private var inFlight: [UInt32: Int] = [:]
    private var waiting = FairQueue<ProviderRequest>()
    /// A drain hook is set on the provider (one at a time).
    private var awaitingDrain = false

    init(provider: any Client, maxPerUid: Int, loop: EventLoop) {
        self.provider = provider
        self.maxPerUid = maxPerUid
        self.loop = loop
    }

    var waitingCount: Int { waiting.count }

    /// Sends `r` now if its uid has room at the provider, else queues it (its timeout runs meanwhile).
    func submit(_ r: ProviderRequest) {
        if waiting.count(of: r.uid) == 0 && mayGo(r.uid) && !provider.isBackedUp {
            send(r)
            return
        }
        r.ticket = waiting.append(r, uid: r.uid)
        r.timer = Timer(loop: loop)
        r.timer?.start(milliseconds: r.timeoutMs) { [unowned self] in
            if let t = r.ticket { waiting.remove(t) }
            r.ticket = nil
            r.finish(.failure(RPCError(.timeout, "the provider did not take the request within \(formatMs(r.timeoutMs))")))
        }
        waitForDrainIfBackedUp()
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

    private func mayGo(_ uid: UInt32) -> Bool { inFlight[uid, default: 0] < maxPerUid }

    private func send(_ r: ProviderRequest) {
        r.timer?.close()
        r.timer = nil
        let elapsed = loop.now >= r.queuedAt ? loop.now - r.queuedAt : 0
        let left = r.timeoutMs > elapsed ? r.timeoutMs - elapsed : 1
        inFlight[r.uid, default: 0] += 1
        let uid = r.uid
        r.rid = provider.request(r.method, params: r.params, timeoutMs: left, released: { [unowned self] in
            let n = inFlight[uid, default: 1] - 1
            inFlight[uid] = n > 0 ? n : nil
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
        let s = ProviderSlots(provider: provider, maxPerUid: config.maxProviderRequestsPerUid, loop: loop)
        providerSlots[provider.id] = s
        watch(provider)
        return s
    }
}
