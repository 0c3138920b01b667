import Foundation
import JSON
import Logging
import NavGraph
import Testing
import UV
@testable import NavServer

/// A server driven in-process: clients are ``MemoryStream``s attached to it, and the test runs the
/// server's loop itself, so transport, dispatch and navigator are tested without sockets.
final class InProcessServer {
    let server: Server

    /// A server on the example graph, or on the one module `graph` (named `app`; commands run in `directory`).
    init(config: ServerConfiguration = ServerConfiguration(socketPath: "/nonexistent"), graph: String? = nil, directory: String = "/tmp") {
        let g = graph.map { GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: $0)], baseDirectory: directory).graph! }
        server = Server(config: config, graph: g ?? GraphLoader.loadEmbeddedExample().graph!, logger: Logger(label: "test"))
        server.startServing()
    }

    /// A client, as navd's own uid (which holds `admin`) unless told otherwise.
    func client(uid: UInt32 = getuid()) -> MemoryStream {
        let s = MemoryStream(credentials: PeerCredentials(pid: getpid(), uid: uid, gid: getgid()))
        server.attach(s)
        return s
    }

    /// Runs loop iterations (at most `iterations`) until `stream` has written `count` lines; answers
    /// them parsed.
    func lines(_ stream: MemoryStream, count: Int, iterations: Int = 1_000) throws -> [JSONValue] {
        var bytes: [UInt8] = []
        var newlines = 0  // counted as output comes: counting all of it each iteration made large answers slow
        for _ in 0..<iterations where newlines < count {
            server.loop.runOnce(wait: false)
            let out = stream.takeOutput()
            newlines += out.count(where: { $0 == 10 })
            bytes += out
        }
        let lines = bytes.split(separator: 10)
        guard lines.count == count else { throw TestFailure("expected \(count) lines from navd, got \(lines.count): \(String(decoding: bytes, as: UTF8.self))") }
        return try lines.map { try JSONParser(maxDepth: 256).parse(Array($0)) }
    }

    /// Sends one request line and answers the one line navd writes back.
    func call(_ stream: MemoryStream, _ line: String) throws -> JSONValue {
        stream.send(line + "\n")
        return try lines(stream, count: 1)[0]
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Every suite that runs an in-process server. Servers share nothing mutable (each method table
/// keeps its own scratch for params), so their tests run in parallel.
@Suite struct InProcess {}

extension InProcess {
@Suite struct InMemoryTransportTests {
    @Test func requestsAndErrorsInProcess() throws {
        let p = InProcessServer()
        let c = p.client()
        #expect(try p.call(c, #"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)["result"] == "pong")
        let bad = try p.call(c, #"{"jsonrpc":"2.0","id":2,"method":"navigate","params":{"to":"shop.Nope"}}"#)
        #expect(bad["error"]?["data"]?["kind"] == "unknownTarget" && bad["id"] == 2)
        let garbage = try p.call(c, "{not json")
        #expect(garbage["error"]?["code"] == -32700 && garbage["id"] == .null)
        let batch = try p.call(c, #"[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"nope"}]"#)
        #expect(batch.arrayValue?.count == 2 && batch.arrayValue?.last?["error"]?["data"]?["kind"] == "methodNotFound")
    }

    @Test func aSubscriberSeesTheChangeBeforeTheReplyAndOthersOnlyTheirReply() throws {
        let p = InProcessServer()
        let watcher = p.client(), driver = p.client()
        let snapshot = try p.call(watcher, #"{"jsonrpc":"2.0","id":1,"method":"subscribe"}"#)
        #expect(snapshot["result"]?["version"] == 0)
        driver.send(#"{"jsonrpc":"2.0","id":7,"method":"navigate","params":{"to":"shop.Product","with":{"id":"p1"}}}"# + "\n")
        let reply = try p.lines(driver, count: 1)[0]
        #expect(reply["result"]?["version"] == 1 && reply["id"] == 7)
        let changed = try p.lines(watcher, count: 1)[0]
        #expect(changed["method"] == "stackChanged" && changed["params"]?["version"] == 1)
        // A subscribed requester: its stackChanged first, then its reply, in one flush.
        watcher.send(#"{"jsonrpc":"2.0","id":2,"method":"dismiss"}"# + "\n")
        let both = try p.lines(watcher, count: 2)
        #expect(both[0]["method"] == "stackChanged" && both[1]["id"] == 2, "\(both)")
    }

    @Test func aClientThatHangsUpCancelsWhatItWaitsFor() throws {
        let p = InProcessServer()
        let c = p.client(), watcher = p.client()
        _ = try p.call(c, #"{"jsonrpc":"2.0","id":1,"method":"navigate","params":{"route":"account"}}"#)
        c.send(#"{"jsonrpc":"2.0","id":2,"method":"navigate","params":{"route":"orders"}}"# + "\n")
        for _ in 0..<10 { p.server.loop.runOnce(wait: false) }
        #expect(try p.call(watcher, #"{"jsonrpc":"2.0","id":1,"method":"stats"}"#)["result"]?["pending"] == 1)
        c.peerHungUp = true
        c.finishSending()
        #expect(c.isClosed)
        #expect(try p.call(watcher, #"{"jsonrpc":"2.0","id":2,"method":"stats"}"#)["result"]?["pending"] == 0)
    }

    @Test func aClientThatOnlyFinishedSendingStillGetsItsReply() throws {
        let p = InProcessServer()
        let c = p.client()
        c.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n")
        c.finishSending()
        #expect(try p.lines(c, count: 1)[0]["result"] == "pong")
    }

    @Test func anotherUserNeedsAdminInProcessToo() throws {
        let p = InProcessServer()
        let stranger = p.client(uid: 65534)
        let r = try p.call(stranger, #"{"jsonrpc":"2.0","id":1,"method":"graph.reload"}"#)
        #expect(r["error"]?["data"]?["kind"] == "accessDenied")
    }

    @Test func subscribersWhoLeaveHearNothingAndTheOthersHearEveryChangeOnce() throws {
        let p = InProcessServer()
        let subscribers = (0..<5).map { _ in p.client() }
        for (i, c) in subscribers.enumerated() {
            #expect(try p.call(c, #"{"jsonrpc":"2.0","id":\#(i),"method":"subscribe"}"#)["result"]?["version"] == 0)
        }
        let driver = p.client()
        // The first leaves by unsubscribing, the third by hanging up, the last unsubscribes and
        // subscribes again: the audience loses members from its front, its middle and its end.
        _ = try p.call(subscribers[0], #"{"jsonrpc":"2.0","id":10,"method":"unsubscribe"}"#)
        subscribers[2].peerHungUp = true
        subscribers[2].finishSending()
        _ = try p.call(subscribers[4], #"{"jsonrpc":"2.0","id":11,"method":"unsubscribe"}"#)
        _ = try p.call(subscribers[4], #"{"jsonrpc":"2.0","id":12,"method":"subscribe"}"#)
        #expect(try p.call(driver, #"{"jsonrpc":"2.0","id":1,"method":"stats"}"#)["result"]?["subscriptions"] == 3)
        for v in 1...3 {
            let r = try p.call(driver, #"{"jsonrpc":"2.0","id":\#(v + 1),"method":"navigate","params":{"to":"shop.Product","with":{"id":"p\#(v)"}}}"#)
            #expect(r["result"]?["version"] == .int(v))
        }
        for i in [1, 3, 4] {
            let heard = try p.lines(subscribers[i], count: 3)
            #expect(heard.map { $0["params"]?["version"] } == [1, 2, 3], "subscriber \(i): \(heard)")
        }
        p.server.loop.runOnce(wait: false)
        #expect(subscribers[0].takeOutput().isEmpty)
    }
}
}
