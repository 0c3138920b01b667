import Foundation
import JSON
import Logging
import NavGraph
import NavigationCore
import RPC
import Testing
import UV
import Unchecked
@testable import NavServer

#if canImport(Glibc)
import Glibc
#endif

/// A client as the navigator sees it, with nothing under it: requests it is sent are kept for the
/// test to answer.
final class FakeClient: Client {
    let id: Int
    let roleHolder: RoleHolder
    let uid: UInt32?
    var isClosed = false
    var lastSession: SessionState?
    var subscriptions: Set<String> = []
    var goneHooks: [(any Client) -> Void] = []
    /// Requests the navigator sent it, by id: method, params, how to answer, how to release.
    var requests: [Int: (method: String, params: JSONValue, completion: (Result<JSONValue, RPCError>) -> Void, released: (() -> Void)?)] = [:]
    private var nextRequest = 0

    init(id: Int, uid: UInt32? = getuid(), roles: Set<String> = ["admin"]) {
        self.id = id
        self.uid = uid
        roleHolder = RoleHolder(roles)
    }

    func whenGone(_ body: @escaping (any Client) -> Void) { goneHooks.append(body) }

    func request(_ method: String, params: JSONValue, timeoutMs: UInt64, released: (() -> Void)?,
                 completion: @escaping (Result<JSONValue, RPCError>) -> Void) -> Int {
        nextRequest += 1
        requests[nextRequest] = (method, params, completion, released)
        return nextRequest
    }

    func cancelRequest(_ id: Int) { requests[id]?.released?() ; requests[id] = nil }
    var isBackedUp: Bool { false }
    func whenDrained(_ body: @escaping () -> Void) { body() }

    /// Answers every request it holds with `result`.
    func answerAll(_ result: JSONValue) {
        let all = requests
        requests = [:]
        for (_, r) in all.sorted(by: { $0.key < $1.key }) {
            r.completion(.success(result))
            r.released?()
        }
    }

    /// The client goes away.
    func leave() {
        isClosed = true
        let hooks = goneHooks
        goneHooks = []
        for h in hooks { h(self) }
    }
}

/// Answers as the navigator gives them, in order, and what each answered.
final class Answers: Answer {
    var given: [Result<JSONValue, RPCError>] = []
    func succeed(_ result: JSONValue) { given.append(.success(result)) }
    func succeed<R: JSONEncodable>(_ result: R) {
        var w = JSONWriter()
        result.encode(into: &w)
        given.append(.success((try? JSONParser(maxDepth: 512).parse(w.bytes)) ?? .null))
    }
    func fail(_ error: RPCError) { given.append(.failure(error)) }
}

/// A responder that answers into ``Answers`` (at once or deferred: the same list).
struct FakeResponder: Responder {
    let client: FakeClient
    let answers: Answers
    func succeed(_ result: JSONValue) { answers.succeed(result) }
    func succeed<R: JSONEncodable>(_ result: R) { answers.succeed(result) }
    func fail(_ error: RPCError) { answers.fail(error) }
    func deferred() -> any Answer { answers }
}

/// Notifications the navigator publishes, in order.
final class RecordingPublisher: Publisher {
    final class Members: Audience {
        var ids: Set<Int> = []
        /// Those of ``ids`` that hear the compact form.
        var compact: Set<Int> = []
        func add(_ client: any Client, compact asksCompact: Bool) {
            ids.insert(client.id)
            if asksCompact { compact.insert(client.id) } else { compact.remove(client.id) }
        }
        func remove(_ id: Int) {
            ids.remove(id)
            compact.remove(id)
        }
    }
    var sent: [(method: String, to: Set<Int>, params: JSONValue)] = []
    func makeAudience() -> any Audience { Members() }
    var audienceMembers: Int { 0 }
    func notify(_ method: String, to audience: any Audience, also: (any Client)?, except: (any Client)?, params: (inout JSONWriter) -> Void) {
        var w = JSONWriter()
        params(&w)
        var to = (audience as! Members).ids
        if let also { to.insert(also.id) }
        if let except { to.remove(except.id) }
        sent.append((method, to, (try? JSONParser(maxDepth: 512).parse(w.bytes)) ?? .null))
    }
    /// Records the full form for its members (always, as ``notify`` does), and the compact form for
    /// its compact members when there are some.
    func notifyStackChanged(to audience: any Audience, except: (any Client)?, params: (inout JSONWriter, Bool) -> Void) {
        let members = audience as! Members
        record(members.ids.subtracting(members.compact), except) { params(&$0, false) }
        if !members.compact.isEmpty { record(members.compact, except) { params(&$0, true) } }
    }
    private func record(_ ids: Set<Int>, _ except: (any Client)?, _ params: (inout JSONWriter) -> Void) {
        var w = JSONWriter()
        params(&w)
        var to = ids
        if let except { to.remove(except.id) }
        sent.append(("stackChanged", to, (try? JSONParser(maxDepth: 512).parse(w.bytes)) ?? .null))
    }
    func disconnectAll(reason: String) {}
}

/// The navigator alone: no transport, no dispatch. Requests are its own typed values, answers go to
/// a fake responder, notifications to a recording publisher, changes to a recording store.
@Suite struct NavigatorTests {
    /// A stack with a screen that takes a setup and one guarded by a provider.
    static let graph: NavigationGraph = {
        let text = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Item, Pay, Signup]}
              Item:
                setup: {type: object, required: [id], properties: {id: {type: string}}}
                opens: [Pay]
              Pay:
                preconditions: [authorized]
              Signup:
                flow:
                  start: Name
                  steps: [Name]
                  result: {type: object, required: [user], properties: {user: {type: string}}}
                presentations: [present]
              Name: {}
            preconditions:
              authorized: {provider: true, timeout: 5s}
            links:
              "/item/:id": [Home, {to: Item, with: {id: ":id"}}]

            """
        let (g, d) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: text)], baseDirectory: "/g")
        precondition(!d.hasErrors, "\(d.sorted)")
        return g!
    }()

    let loop = EventLoop()
    let publisher = RecordingPublisher()
    let store = RecordingStore()
    let navigator: Navigator

    init() { navigator = Self.navigator(NavigatorLimits(), loop: loop, publisher: publisher, store: store) }

    static func navigator(_ limits: NavigatorLimits, loop: EventLoop, publisher: RecordingPublisher, store: RecordingStore) -> Navigator {
        let n = Navigator(config: limits, graph: graph, logger: Logger(label: "test"), loop: loop, publisher: publisher)
        n.store = store
        return n
    }

    var main: SessionState { navigator.sessions["main"]! }

    func navigate(_ to: String, in state: SessionState? = nil, with: JSONObject? = nil, on navigator: Navigator? = nil, as client: FakeClient) -> Answers {
        let n = navigator ?? self.navigator
        let coordinator = ByteView.of(to) { n.graph.coordinatorIndex(named: $0) }
        let r = NavigateRequest(state: state ?? main, coordinator: coordinator, toName: coordinator == nil ? to : nil, with: with)
        let answers = Answers()
        n.navigate(r, FakeResponder(client: client, answers: answers))
        return answers
    }

    func failure(_ answers: Answers) -> RPCError? {
        if case .failure(let e)? = answers.given.first { e } else { nil }
    }

    @Test func aNavigationCommitsTellsTheStoreAndItsSubscribersAndAnswers() throws {
        let watcher = FakeClient(id: 1), driver = FakeClient(id: 2)
        navigator.subscribe(watcher, to: main)
        let answers = navigate("app.Item", with: ["id": "p1"], as: driver)
        let reply = try #require(try answers.given.first?.get())
        #expect(reply["version"] == 1 && reply["node"] != nil, "\(reply)")
        #expect(publisher.sent.map(\.method) == ["stackChanged"] && publisher.sent.first?.to == [1])
        #expect(publisher.sent.first?.params["changes"]?.arrayValue?.first?["op"] == "push")
        #expect(store.told == ["changed main"])
        #expect(main.session.version == 1 && main.session.visibleTop?.id == reply["node"]?.stringValue)
    }

    /// The session and facts entry points as a table: each row a call on the navigator, with the
    /// client making it, and what it gives back (a `NavError` of a kind, or a result) and tells the
    /// store. The navigator throws only `NavError`; the methods layer makes it a JSON-RPC error.
    @Test func sessionAndFactsEntryPointsAsATable() throws {
        let owner = FakeClient(id: 1, roles: []), stranger = FakeClient(id: 2, uid: 65_534, roles: [])
        let rows: [(what: String, call: () throws(NavError) -> String, expect: String, store: [String])] = [
            ("open a session", { () throws(NavError) in try self.navigator.openSession(SessionNameRequest(name: "s1"), by: owner).session.name }, "s1", ["opened s1"]),
            ("open it again: the same one", { () throws(NavError) in try self.navigator.openSession(SessionNameRequest(name: "s1"), by: owner).session.name }, "s1", []),
            ("an empty name", { () throws(NavError) in try self.navigator.openSession(SessionNameRequest(name: ""), by: owner).session.name }, "invalidParams", []),
            ("a name with a space", { () throws(NavError) in try self.navigator.openSession(SessionNameRequest(name: "a b"), by: owner).session.name }, "invalidParams", []),
            ("facts in it", { () throws(NavError) in
                JSONWriter.string(.object(try self.navigator.setFacts(ContextSetRequest(state: self.navigator.state("s1"), facts: ["loggedIn": true]), by: owner).facts)) }, #"{"loggedIn":true}"#, ["facts s1"]),
            ("facts by another uid", { () throws(NavError) in
                JSONWriter.string(.object(try self.navigator.setFacts(ContextSetRequest(state: self.navigator.state("s1"), facts: ["x": 1]), by: stranger).facts)) }, "accessDenied", []),
            ("close it by another uid", { () throws(NavError) in try self.navigator.closeSession(SessionNameRequest(name: "s1"), by: stranger); return "closed" }, "accessDenied", []),
            ("close main", { () throws(NavError) in try self.navigator.closeSession(SessionNameRequest(name: "main"), by: owner); return "closed" }, "notAllowed", []),
            ("close it", { () throws(NavError) in try self.navigator.closeSession(SessionNameRequest(name: "s1"), by: owner); return "closed" }, "closed", ["closed s1"]),
            ("a session that is not there", { () throws(NavError) in try self.navigator.state("s1").session.name }, "unknownTarget", []),
            ("provide nothing", { () throws(NavError) in (try self.navigator.provide(ProvideRequest(names: []), by: owner).preconditions ?? []).joined() }, "invalidParams", []),
            ("provide by a local name", { () throws(NavError) in (try self.navigator.provide(ProvideRequest(names: ["authorized"]), by: owner).preconditions ?? []).joined() }, "app.authorized", []),
        ]
        for row in rows {
            store.told = []
            let got: String
            do throws(NavError) { got = try row.call() } catch { got = error.kind.rawValue }
            #expect(got == row.expect, "\(row.what): \(got)")
            #expect(store.told == row.store, "\(row.what): the store heard \(store.told)")
        }
    }

    /// An unknown session's error suggests a near name while navd holds few sessions, and none past
    /// ``Navigator/suggestAmongSessions`` (a backend's thousands made each such error walk them all:
    /// 1 ms at 999 sessions, and 30 s for a name of 900 KB).
    @Test func anUnknownSessionIsNearAnOpenOneOnlyAmongFew() throws {
        let owner = FakeClient(id: 1, roles: [])
        func message(_ name: String) -> String {
            do throws(NavError) { _ = try navigator.state(name) } catch { return error.message }
            return "found"
        }
        _ = try navigator.openSession(SessionNameRequest(name: "checkout-1"), by: owner)
        #expect(message("checkuot-1").contains("no session \"checkuot-1\" (did you mean \"checkout-1\"?); open it"), "\(message("checkuot-1"))")
        #expect(!message(String(repeating: "checkout-1", count: 90_000)).contains("did you mean"))
        while navigator.sessions.count <= Navigator.suggestAmongSessions {
            _ = try navigator.openSession(SessionNameRequest(name: "s\(navigator.sessions.count)"), by: owner)
        }
        #expect(message("checkout-1") == "found")
        #expect(!message("checkuot-1").contains("did you mean"), "\(message("checkuot-1"))")
    }

    /// One row of ``everyOtherEntryPointAsATable``: what is done first on a fresh navigator (on
    /// `main`, by `driver`), the entry point called, and what it must give: the answer (an error's
    /// kind, or text the result's JSON holds), the notifications published after the set-up, and
    /// what the store heard.
    struct EntryPointRow {
        let what: String
        var given: (Navigator, FakeClient) throws -> Void = { _, _ in }
        let call: (Navigator, SessionState, FakeResponder) throws(NavError) -> JSONValue?
        let expect: String
        var notified: [String] = []
        var store: [String] = []
    }

    /// A typed result as the JSON it is sent as.
    static func encoded(_ r: some JSONEncodable) -> JSONValue {
        var w = JSONWriter()
        r.encode(into: &w)
        return (try? JSONParser(maxDepth: 64).parse(w.bytes)) ?? .null
    }

    /// Navigates `main` of `n` to `name`, answer unheard (a row's set-up).
    static func to(_ n: Navigator, _ name: String, with: JSONObject? = nil, by driver: FakeClient) {
        let r = NavigateRequest(state: n.sessions["main"]!, toName: name, with: with)
        n.navigate(r, FakeResponder(client: driver, answers: Answers()))
    }

    /// The rows: each entry point's answers, good and refused.
    static var entryPointRows: [EntryPointRow] {
        let item: (Navigator, FakeClient) throws -> Void = { n, d in to(n, "app.Item", with: ["id": "p1"], by: d) }
        return [
            EntryPointRow(what: "navigate with its setup", call: { n, s, r in
                n.navigate(NavigateRequest(state: s, toName: "app.Item", with: ["id": "p1"]), r)
                return nil
            }, expect: #""version":1"#, notified: ["stackChanged"], store: ["changed main"]),
            EntryPointRow(what: "navigate without the setup's field", call: { n, s, r in n.navigate(NavigateRequest(state: s, toName: "app.Item"), r); return nil },
                          expect: "invalidSetup"),
            EntryPointRow(what: "navigate where the screen cannot go", call: { n, s, r in n.navigate(NavigateRequest(state: s, toName: "app.Name"), r); return nil },
                          expect: "notAllowed"),
            EntryPointRow(what: "open a link", call: { n, s, r in n.open(OpenRequest(state: s, url: "/item/p2"), r); return nil },
                          expect: #""version":1"#, notified: ["stackChanged"], store: ["changed main"]),
            EntryPointRow(what: "open a link, dry run", call: { n, s, r in
                var q = OpenRequest(state: s, url: "/item/p2")
                q.dryRun = true
                n.open(q, r)
                return nil
            }, expect: #""dryRun":true"#),
            EntryPointRow(what: "open a URL no link matches", call: { n, s, r in n.open(OpenRequest(state: s, url: "/nowhere"), r); return nil },
                          expect: "noMatchingLink"),
            EntryPointRow(what: "reset to the root", given: item, call: { n, s, r in n.reset(ResetRequest(state: s, steps: nil), r); return nil },
                          expect: #""version":2"#, notified: ["stackChanged"], store: ["changed main"]),
            EntryPointRow(what: "reset at a stale version", given: item, call: { n, s, r in
                var q = ResetRequest(state: s, steps: nil)
                q.ifVersion = 0
                n.reset(q, r)
                return nil
            }, expect: "conflict"),
            EntryPointRow(what: "dismiss the top screen", given: item, call: { n, s, r in n.dismiss(DismissRequest(state: s), r); return nil },
                          expect: #""version":2"#, notified: ["stackChanged"], store: ["changed main"]),
            EntryPointRow(what: "dismiss the root: nothing to dismiss", call: { n, s, r in n.dismiss(DismissRequest(state: s), r); return nil }, expect: "unknownNode"),
            EntryPointRow(what: "complete a flow that is not there", call: { n, s, r in
                n.flowComplete(FlowCompleteRequest(state: s, flow: "n99", outcome: .cancelled), r)
                return nil
            }, expect: "flowNotActive"),
            EntryPointRow(what: "update a screen's params", given: item, call: { n, s, r throws(NavError) in
                encoded(try n.update(UpdateRequest(state: s, node: s.session.visibleTop!.id, with: ["id": "p3"]), by: r.client))
            }, expect: #""id":"p3""#, notified: ["stackChanged"], store: ["changed main"]),
            EntryPointRow(what: "update a node that is not there", call: { n, s, r throws(NavError) in
                encoded(try n.update(UpdateRequest(state: s, node: "n99", with: [:]), by: r.client))
            }, expect: "unknownNode"),
            EntryPointRow(what: "resolve the visible path's link", given: item, call: { n, s, _ throws(NavError) in
                encoded(try n.resolveLink(LinkResolveRequest(state: s)))
            }, expect: #""url":"/item/p1""#),
            EntryPointRow(what: "resolve a path no link builds", call: { n, s, _ throws(NavError) in encoded(try n.resolveLink(LinkResolveRequest(state: s))) },
                          expect: "noMatchingLink"),
            EntryPointRow(what: "read the facts named", given: { n, d in _ = try n.setFacts(ContextSetRequest(state: n.sessions["main"]!, facts: ["a": 1, "b": 2]), by: d) },
                          call: { n, s, _ in encoded(n.facts(ContextGetRequest(state: s, names: ["b", "c"]))) }, expect: #"{"facts":{"b":2}}"#),
            EntryPointRow(what: "list the sessions", call: { n, _, _ in encoded(n.sessionList(SessionListRequest())) }, expect: #""sessions":["main"]"#),
            EntryPointRow(what: "cancel a navigation that waits for its provider", given: { n, d in
                n.addProvider(["app.authorized"], FakeClient(id: 3))
                to(n, "app.Pay", by: d)
            },
                          call: { n, _, _ in encoded(n.cancel(CancelRequest(navigation: n.pending.keys.first ?? "none"))) }, expect: #"{"cancelled":true}"#,
                          notified: ["navigationEnded"]),
            EntryPointRow(what: "cancel one that is not there", call: { n, _, _ in encoded(n.cancel(CancelRequest(navigation: "nav-99"))) },
                          expect: #"{"cancelled":false}"#),
        ]
    }

    /// The navigator's other entry points as a table of (request, state) → (answer, notifications,
    /// store): the asynchronous ones answer through the responder, the others return their typed
    /// result or throw a `NavError`. Each row runs on a navigator of its own, with a subscriber on
    /// `main`.
    @Test func everyOtherEntryPointAsATable() throws {
        for row in Self.entryPointRows {
            let publisher = RecordingPublisher(), store = RecordingStore()
            let n = Self.navigator(NavigatorLimits(), loop: loop, publisher: publisher, store: store)
            let driver = FakeClient(id: 1), watcher = FakeClient(id: 2)
            n.subscribe(watcher, to: n.sessions["main"]!)
            try row.given(n, driver)
            publisher.sent = []
            store.told = []
            let answers = Answers()
            let got: String
            do throws(NavError) {
                if let result = try row.call(n, n.sessions["main"]!, FakeResponder(client: driver, answers: answers)) { answers.succeed(result) }
                switch answers.given.first {
                case .success(let v)?: got = JSONWriter.string(v)
                case .failure(let e)?: got = e.kind
                case nil: got = "no answer"
                }
            } catch { got = error.kind.rawValue }
            #expect(got == row.expect || (got.hasPrefix("{") && got.contains(row.expect)), "\(row.what): \(got)")
            #expect(answers.given.count <= 1, "\(row.what): answered \(answers.given.count) times")
            #expect(publisher.sent.map(\.method) == row.notified, "\(row.what): published \(publisher.sent.map(\.method))")
            #expect(store.told == row.store, "\(row.what): the store heard \(store.told)")
        }
    }

    @Test func errorsAreAnsweredAndChangeNothing() throws {
        let driver = FakeClient(id: 1)
        #expect(failure(navigate("app.Nope", as: driver))?.kind == "unknownTarget")
        let invalid = try #require(failure(navigate("app.Item", with: ["id": 5], as: driver)))
        #expect(invalid.kind == "invalidSetup" && invalid.data["pointer"] == "/id", "\(invalid)")
        #expect(main.session.version == 0 && store.told.isEmpty && publisher.sent.isEmpty)
    }

    /// A provider precondition: the navigation waits, the provider is asked, its answer commits it.
    @Test func aNavigationWaitsForItsProviderThenCommits() throws {
        let provider = FakeClient(id: 1), driver = FakeClient(id: 2)
        navigator.addProvider(["app.authorized"], provider)
        let pay = navigate("app.Pay", as: driver)
        #expect(pay.given.isEmpty, "it waits for the provider")
        #expect(provider.requests.count == 1 && provider.requests.values.first?.method == "precondition.evaluate")
        #expect(navigator.pending.count == 1 && main.session.version == 0)
        provider.answerAll(["passed": true])
        let done = try #require(try pay.given.first?.get())
        #expect(done["version"] == 1 && navigator.pending.isEmpty, "\(done)")
        #expect(store.told == ["changed main"])
    }

    /// The provider says no: the navigation fails, nothing changes.
    @Test func aProviderThatRefusesFailsTheNavigation() throws {
        let provider = FakeClient(id: 1), driver = FakeClient(id: 2)
        navigator.addProvider(["app.authorized"], provider)
        let pay = navigate("app.Pay", as: driver)
        provider.answerAll(["passed": false, "reason": "card declined"])
        let e = try #require(failure(pay), "\(pay.given)")
        #expect(e.kind == "preconditionFailed" && e.message.contains("card declined"), "\(e)")
        #expect(main.session.version == 0 && navigator.pending.isEmpty && store.told.isEmpty)
    }

    /// The client that asked goes away: what it waits for is cancelled, and the provider's request
    /// withdrawn.
    @Test func aClientThatLeavesCancelsWhatItWaitsFor() throws {
        let provider = FakeClient(id: 1), driver = FakeClient(id: 2)
        navigator.addProvider(["app.authorized"], provider)
        _ = navigate("app.Pay", as: driver)
        #expect(navigator.pending.count == 1 && provider.requests.count == 1)
        driver.leave()
        #expect(navigator.pending.isEmpty && provider.requests.isEmpty && main.session.version == 0)
    }

    /// Pending work is capped per client, by the navigator's own limits.
    @Test func pendingWorkIsCappedPerClient() throws {
        var limits = NavigatorLimits()
        limits.maxPendingPerConnection = 2
        let n = Self.navigator(limits, loop: loop, publisher: publisher, store: store)
        let provider = FakeClient(id: 1), driver = FakeClient(id: 2)
        n.addProvider(["app.authorized"], provider)
        let outcomes = try (0..<3).map { i in
            navigate("app.Pay", in: try n.openSession(SessionNameRequest(name: "s\(i)"), by: driver), on: n, as: driver)
        }
        #expect(n.pending.count == 2 && outcomes[0].given.isEmpty && outcomes[1].given.isEmpty)
        let refused = try #require(failure(outcomes[2]), "\(outcomes[2].given)")
        #expect(refused.data["limit"] == "--max-pending-per-connection", "\(refused)")
        driver.leave()
        #expect(n.pending.isEmpty)
    }

    /// A graph without `Item`: a session showing one refuses the swap unless forced; forced, the
    /// node goes with an ordinary commit, a pending navigation fails with `conflict`, and the
    /// session is served by the new graph.
    @Test func aReloadedGraphIsRefusedWhileANodeCannotBeShownThenForced() throws {
        let smaller = try #require(GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Pay]}
              Pay:
                preconditions: [authorized]
            preconditions:
              authorized: {provider: true}

            """)], baseDirectory: "/g").graph)
        let provider = FakeClient(id: 1), driver = FakeClient(id: 2), watcher = FakeClient(id: 3)
        navigator.addProvider(["app.authorized"], provider)
        navigator.subscribe(watcher, to: main)
        let item = try #require(try navigate("app.Item", with: ["id": "p1"], as: driver).given.first?.get()["node"]?.stringValue)
        guard case .refused(let problems) = navigator.swapGraph(to: smaller, force: false) else { Issue.record("swapped"); return }
        #expect(problems.count == 1 && problems[0].contains(item) && problems[0].contains("app.Item"), "\(problems)")
        #expect(navigator.graph !== smaller && main.session.node(item) != nil)

        let pay = navigate("app.Pay", as: driver)
        #expect(navigator.pending.count == 1)
        publisher.sent = []
        guard case .swapped(let removed) = navigator.swapGraph(to: smaller, force: true) else { Issue.record("refused"); return }
        #expect(removed == 1 && main.session.node(item) == nil && navigator.graph === smaller)
        #expect(failure(pay)?.kind == "conflict" && navigator.pending.isEmpty, "\(pay.given)")
        #expect(publisher.sent.map(\.method).contains("stackChanged"))
        // The session now plans against the new graph.
        let again = navigate("app.Item", with: ["id": "p2"], as: driver)
        #expect(failure(again)?.kind == "unknownTarget")
    }

    /// Restoring: the store's sessions are served, navigation numbers go on after theirs, and a
    /// single node tells the store about the "main" it made when the store had none.
    @Test func restoringServesTheStoresSessionsAndMakesMainOnce() throws {
        let kept = Session(name: "kept", graph: Self.graph)
        let n = Navigator(config: NavigatorLimits(), graph: Self.graph, logger: Logger(label: "test"), loop: loop, publisher: publisher)
        let other = RecordingStore()
        #expect(n.restore([kept], from: other) == 1)
        #expect(n.sessions["kept"]?.session === kept && n.sessions["main"] != nil)
        #expect(other.told == ["opened main"])
        let again = Navigator(config: NavigatorLimits(), graph: Self.graph, logger: Logger(label: "test"), loop: loop, publisher: publisher)
        let third = RecordingStore()
        _ = again.restore([Session(name: "main", graph: Self.graph)], from: third)
        #expect(third.told.isEmpty, "the store's own main is not opened again")
    }

    /// A dismiss with a result: the screen goes with an ordinary commit, the screen below hears the
    /// result (`screenResult`, to subscribers and the caller).
    @Test func aDismissRemovesTheScreenAndHandsItsResultBelow() throws {
        let watcher = FakeClient(id: 1), driver = FakeClient(id: 2)
        navigator.subscribe(watcher, to: main)
        let home = try #require(main.session.visibleTop?.id)
        let item = try #require(try navigate("app.Item", with: ["id": "p1"], as: driver).given.first?.get()["node"]?.stringValue)
        publisher.sent = []
        store.told = []
        let answers = Answers()
        navigator.dismiss(DismissRequest(state: main, result: ["picked": 3]), FakeResponder(client: driver, answers: answers))
        let reply = try #require(try answers.given.first?.get())
        #expect(reply["removed"] == [.string(item)] && main.session.visibleTop?.id == home, "\(reply)")
        #expect(publisher.sent.map(\.method) == ["stackChanged", "screenResult"] && store.told == ["changed main"])
        let result = publisher.sent[1]
        #expect(result.to == [1, 2] && result.params["node"] == .string(item) && result.params["to"] == .string(home) && result.params["result"] == ["picked": 3])
    }

    /// A flow returns its result: completing it removes it and tells its starter and the
    /// subscribers; a result that breaks the flow's schema is refused and changes nothing.
    @Test func aFlowReturnsItsResultToWhoStartedIt() throws {
        let watcher = FakeClient(id: 1), starter = FakeClient(id: 2)
        navigator.subscribe(watcher, to: main)
        let r = NavigateRequest(state: main, toName: "app.Signup", by: .present)
        let started = Answers()
        navigator.navigate(r, FakeResponder(client: starter, answers: started))
        let flow = try #require(try started.given.first?.get()["node"]?.stringValue, "\(started.given)")
        let version = main.session.version
        let bad = Answers()
        navigator.flowComplete(FlowCompleteRequest(state: main, flow: flow, outcome: .result(["user": 5])), FakeResponder(client: starter, answers: bad))
        #expect(failure(bad)?.kind == "invalidSetup" && main.session.version == version, "\(bad.given)")
        publisher.sent = []
        let done = Answers()
        navigator.flowComplete(FlowCompleteRequest(state: main, flow: flow, outcome: .result(["user": "ann"])), FakeResponder(client: starter, answers: done))
        #expect(try done.given.first?.get()["version"]?.intValue == version + 1)
        #expect(main.session.node(flow) == nil)
        let completed = try #require(publisher.sent.first { $0.method == "flowCompleted" })
        #expect(completed.to == [1, 2] && completed.params["status"] == "completed" && completed.params["result"] == ["user": "ann"], "\(completed)")
    }
}
