import JSON
import NavigationCore
import Unchecked
#if canImport(Glibc)
import Glibc
#endif

/// A navigation accepted and waiting for its preconditions, then its commit.
final class PendingNavigation {
    let number: Int
    /// "nav-" and the number.
    let id: String

    static func id(_ number: Int) -> String { prefixedDecimal("nav-", number) }
    /// The number in an id made by ``id(_:)``, or nil.
    static func number(ofId id: String) -> Int? { id.hasPrefix("nav-") ? Int(id.dropFirst(4)) : nil }
    let state: SessionState
    /// What it navigates to; a precondition's redirect replaces it.
    var plan: Plan
    /// Redirects taken so far: the target left, the precondition that redirected, the new target.
    var redirects: [(from: Int, precondition: String, to: Int)] = []
    /// The navigation's `key` (idempotency), if it has one.
    let key: String?
    let caller: Caller
    var replies: [any Answer]
    /// The client that asked.
    let client: any Client
    /// The uid it counts against (its share of `--max-pending`, …): the client's, else navd's own.
    let uid: UInt32
    /// Goes on when its client disconnects (`navigate {detach: true}`, `navctl --no-wait`).
    var detached = false
    /// The client that asked gets `navigationPending` too (`navigate {progress: true}`).
    var reportsProgress = false
    /// The params of the last `navigationPending` sent for it (a `subscribe` while it waits answers
    /// them in `pending`); its end is told too (`navigationEnded`).
    var announcement: JSONValue?
    var announced: Bool { announcement != nil }
    /// Index of the precondition being evaluated.
    var step = 0
    /// Time it waited for command and provider slots so far, in ms (`--max-queue-wait`).
    var queuedMs: UInt64 = 0
    /// Recovery already tried for the current precondition.
    var recovered = false
    /// While a `recover: {command}` or `{provider}` runs: `{command: PROGRAM}` or `{provider: NAME}`,
    /// for `navigationPending`'s `recovering`.
    var recovering: JSONValue?
    var finished = false
    /// Set while its commit is made and published: what the commit removes (its own source, by
    /// `replace`, `root` or `popUpTo`) must not cancel it, since it committed.
    var committing = false
    /// Entered in the navigator's pending tables (it waits on preconditions); a navigation that commits at
    /// once never is, and finishing it skips their lookups.
    var registered = false
    /// Cancels whatever task runs now (a process, a provider request, a recovery flow).
    var cancelTask: (() -> Void)?
    /// Called with the outcome after the replies (a flow's `then` navigation answers in the reply
    /// to `flowComplete`).
    var onFinish: ((Result<JSONValue, NavError>) -> Void)?
    /// A dismiss waiting on leave guards: the node it leaves, and the dismiss it makes once they pass
    /// (instead of committing the plan, which only carries the guards).
    var leaving: String?
    /// `force: true`: no leave guard runs, a redirect's removals included.
    var force = false
    /// Whether the precondition running is a leave guard (a dismiss's, or one of those a
    /// replacement runs first): it lets the navigation go on or refuses it, and never redirects it.
    var onLeaveGuard: Bool { leaving != nil || step < plan.leaveGuards }
    var commitInstead: (() -> Result<JSONValue, NavError>)?
    /// The session's version when it was planned (a redirect keeps it): a commit at another version
    /// checks that it removes nothing guarded whose guards did not run.
    var plannedAt: Int
    /// Leave guards that passed for it under a plan a redirect replaced.
    var guardsPassedBefore: Set<LeaveGuard> = []
    /// The session's version when each leave guard it ran was last asked: a commit checks that the
    /// node it protects has had no new params since (``Node/paramsVersion``).
    var guardsAsked: [LeaveGuard: Int] = [:]
    /// A dismiss's or a `reset {}`'s: the leave guards of what it would remove now (its plan only
    /// carries those it ran).
    var guardsNow: (() -> [LeaveGuard])?

    init(number: Int, state: SessionState, plan: Plan, key: String?, caller: Caller, replies: [any Answer], client: any Client) {
        self.number = number
        self.id = Self.id(number)
        self.state = state
        self.plan = plan
        self.plannedAt = state.session.version
        self.key = key
        self.caller = caller.kept  // a navigation waits past its request
        self.replies = replies
        self.client = client
        self.uid = client.uid ?? getuid()
    }

    /// A navigation whose requester waits for its reply.
    convenience init(number: Int, state: SessionState, plan: Plan, key: String?, caller: Caller, reply: any Answer, client: any Client) {
        self.init(number: number, state: state, plan: plan, key: key, caller: caller, replies: [reply], client: client)
    }

    /// A navigation nobody waits a navigate reply for: `onFinish` hears its outcome.
    convenience init(number: Int, state: SessionState, plan: Plan, caller: Caller, client: any Client) {
        self.init(number: number, state: state, plan: plan, key: nil, caller: caller, replies: [], client: client)
    }
}
