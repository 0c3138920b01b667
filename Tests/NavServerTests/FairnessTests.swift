import Foundation
import JSON
import Logging
import NavGraph
import Testing
import UV
@testable import NavServer

#if canImport(Glibc)
import Glibc
#endif

/// One request line.
func request(_ id: Int, _ method: String, _ params: JSONValue = [:]) -> String {
    JSONWriter.string(["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": params])
}

extension InProcessServer {
    /// Calls `method` as `stream`'s client; answers the reply (notifications before it are skipped).
    func call(_ stream: MemoryStream, _ id: Int, _ method: String, _ params: JSONValue = [:]) throws -> JSONValue {
        stream.send(request(id, method, params) + "\n")
        for _ in 0..<20 {
            for line in try lines(stream, count: 1) where line["id"] == .int(id) { return line }
        }
        throw TestFailure("no reply to \(method)")
    }
}

/// Another user's facts stay theirs: a recovery flow that writes facts (`recover.facts`) is
/// completed only by who may write the session's facts.
@Suite struct FactsOwnerTests {
    @Test func anotherUserCannotWriteFactsByCompletingARecoveryFlow() throws {
        let p = InProcessServer()
        let mallory = p.client(uid: 65534), owner = p.client()
        _ = try p.call(mallory, 1, "navigate", ["route": "account"])
        mallory.send(request(2, "navigate", ["route": "orders"]) + "\n")
        for _ in 0..<10 { p.server.loop.runOnce(wait: false) }
        let tree = try p.call(owner, 1, "tree")
        var flow: String?
        func find(_ n: JSONValue) {
            if n["kind"] == "flow" { flow = n["id"]?.stringValue }
            for c in n["children"]?.arrayValue ?? [] { find(c) }
            if let pr = n["presented"] { find(pr) }
        }
        find(tree["result"]!["root"]!)
        let login = try #require(flow, "the recovery flow is presented: \(tree)")
        let refused = try p.call(mallory, 3, "flowComplete", ["flow": .string(login), "result": ["user": "mallory"]])
        #expect(refused["error"]?["data"]?["kind"] == "accessDenied" && (refused["error"]?["message"]?.stringValue ?? "").contains("loggedIn"), "\(refused)")
        #expect(try p.call(owner, 2, "context.get")["result"]?["facts"] == [:], "no fact was written")
        // The session's owner completes it: the facts are set and the navigation goes on.
        let done = try p.call(owner, 3, "flowComplete", ["flow": .string(login), "result": ["user": "ann"]])
        #expect(done["result"]?["version"] != nil, "\(done)")
        #expect(try p.call(owner, 4, "context.get")["result"]?["facts"] == ["loggedIn": true, "user": "ann"])
    }
}
