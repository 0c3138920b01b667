import JSON
import NavGraph
import NavTesting
import Testing
@testable import NavigationCore

/// A session's account holds what its setup models and facts hold once synced (the server syncs at
/// each commit and change of facts), through navigations, dismissals and facts, and gives it all
/// back when the session leaves it.
@Suite struct DataAccountTests {
    let graph = coreGraph()

    func session() -> Session { Session(name: "t", graph: graph) }

    @discardableResult
    func go(_ s: Session, _ r: NavigateRequest) throws -> Commit {
        try s.commit(try s.plan(r, caller: Caller()))
    }

    @Test func anAccountFollowsItsSessionsBytes() throws {
        let pool = DataPool()
        let a = pool.account(for: 1000), b = pool.account(for: 1001)
        let s = session(), t = session()
        try s.setFacts(["before": "joined"])
        s.account = a
        t.account = b
        func held() -> Int { s.paramsBytes + s.factsBytes }
        #expect(a.bytes == held() && a.bytes > 0 && b.bytes == t.paramsBytes + t.factsBytes && pool.holders == 2)
        let joined = a.bytes
        try go(s, NavigateRequest(to: "Product", with: ["id": .string(String(repeating: "p", count: 5000))]))
        try s.setFacts(["big": .string(String(repeating: "f", count: 3000))])
        #expect(a.bytes == joined, "counted at the next sync")
        s.syncAccount()
        #expect(a.bytes == held() && a.bytes > 8000)
        try go(t, NavigateRequest(to: "Product", with: ["id": "t"]))
        t.syncAccount()
        #expect(b.bytes == t.paramsBytes + t.factsBytes && pool.total == a.bytes + b.bytes)
        _ = try s.dismiss(nil)
        try s.setFacts(["big": .null])
        s.syncAccount()
        #expect(a.bytes == held() && a.bytes < 100)
        // Left unsynced, then moved: the account gives back what it held of the session.
        try go(s, NavigateRequest(to: "Product", with: ["id": "unsynced"]))
        // Moved to another account (a session read again under another owner), then out of any.
        s.account = b
        #expect(a.bytes == 0 && pool.holders == 1 && b.bytes == held() + t.paramsBytes + t.factsBytes)
        s.account = nil
        t.account = nil
        #expect(pool.total == 0 && pool.holders == 0 && b.bytes == 0)
    }
}
