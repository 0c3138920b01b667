import Foundation
import JSON
import Logging
import NavGraph
import NavigationCore
import Testing
import UV
@testable import NavServer

/// A store whose writes fail once told to: what it was told stays pending.
final class FailingStore: Store {
    var failing = false
    var pending = false
    var flushes = 0
    var closed = false
    func load(graph: NavigationGraph) throws(StateError) -> [Session] { [] }
    func sessionChanged(_ s: Session) { pending = true }
    func sessionOpened(_ s: Session) { pending = true }
    func sessionClosed(_ name: String) { pending = true }
    func factsChanged(_ s: Session, changes: JSONObject) { pending = true }
    func keyRemembered(_ s: Session, key: String, reply: Result<JSONText, NavError>) { pending = true }
    var hasPendingWrites: Bool { pending }
    func flush(graph: NavigationGraph) throws(StateError) {
        flushes += 1
        if failing { throw StateError(description: "disk full (a test)") }
        pending = false
    }
    func close() { closed = true }
}

/// Stopping is one state machine (``ServerPhase``): a call, a signal, a store that cannot write and
/// a lost lease all go through ``Server/stop(_:)``; callbacks that come after it do nothing.
extension InProcess {
    @Suite struct ShutdownTests {
        func run(_ p: InProcessServer, until done: () -> Bool) {
            for _ in 0..<200 where !done() { p.server.loop.runOnce(wait: false) }
        }

        /// Replies wait for the end of the iteration only with a store that writes: `--ephemeral`'s
        /// writes nothing, and the transport does not ask (a single request's answer leaves at once).
        @Test func repliesWaitOnlyForAStoreThatWrites() {
            let p = InProcessServer()
            #expect(!p.server.transport.repliesMayWait && !p.server.transport.repliesWait)
            let store = FailingStore()
            p.server.store = store
            #expect(p.server.transport.repliesMayWait && !p.server.transport.repliesWait)
            store.pending = true
            #expect(p.server.transport.repliesWait)
            p.server.store = EphemeralStore()
            #expect(!p.server.transport.repliesMayWait && !p.server.transport.repliesWait)
        }

        /// Found by the session fuzz target, which makes a server per input: each left its loop open
        /// (an epoll descriptor, an eventfd and a pipe) and stayed in memory (the server and its
        /// dispatcher, the dispatcher and its connections held each other), until the process ran
        /// out of room. A stopped server releases every handle, its loop closes, and nothing of it
        /// is kept.
        @Test func aStoppedServerReleasesEveryHandleClosesItsLoopAndIsFreed() throws {
            weak var server: Server?, dispatcher: Dispatcher?, transport: ConnectionSet?, loop: EventLoop?, navigator: Navigator?
            do {
                let p = InProcessServer()
                (server, dispatcher, transport, loop, navigator) = (p.server, p.server.dispatcher, p.server.transport, p.server.loop, p.server.navigator)
                let c = p.client()
                #expect(try p.call(c, #"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{}}"#)["result"] != nil)
                c.send(#"{"jsonrpc":"2.0","id":2,"method":"navigate","params":{"to":"shop.Product","with":{"id":"p1"}}}"# + "\n")
                p.server.shutdown()
                #expect(p.server.run(), "a handle was left open, so the loop could not close: \(p.server.loop.openHandles)")
            }
            #expect(server == nil && dispatcher == nil && transport == nil && loop == nil && navigator == nil,
                    "kept: server \(server != nil), dispatcher \(dispatcher != nil), transport \(transport != nil), loop \(loop != nil), navigator \(navigator != nil)")
        }

        /// A client that went away is forgotten: its connection and its peer are freed.
        @Test func aClosedConnectionIsFreed() throws {
            let p = InProcessServer()
            weak var connection: Connection?, peer: Peer?
            do {
                let s = MemoryStream(credentials: PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
                let c = try #require(p.server.transport.attach(s))
                (connection, peer) = (c, p.server.dispatcher.peers[c.id])
                #expect(try p.call(s, #"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{}}"#)["result"] != nil)
                s.peerHungUp = true
                s.finishSending()
                for _ in 0..<20 where p.server.dispatcher.peers[c.id] != nil { p.server.loop.runOnce(wait: false) }
            }
            #expect(connection == nil && peer == nil && p.server.dispatcher.peers.isEmpty)
        }

        @Test func aStopAnswersWhatWasAskedThenStopsAndIgnoresLateNews() throws {
            let p = InProcessServer()
            let store = FailingStore()
            p.server.store = store
            let c = p.client()
            c.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"navigate\",\"params\":{\"to\":\"shop.Product\",\"with\":{\"id\":\"p1\"}}}\n")
            p.server.shutdown()
            #expect(p.server.isShuttingDown)
            run(p) { p.server.phase.isStopped }
            #expect(p.server.phase == .stopped(.asked) && p.server.failure == nil)
            // The answer was written before the connection closed, after its commit was stored.
            let out = String(decoding: c.takeOutput(), as: UTF8.self)
            #expect(out.contains("\"version\":1"), "\(out)")
            #expect(store.flushes >= 1 && !store.pending && store.closed)
            // News from a shared store after the stop is not taken.
            let late = Session(name: "late", graph: p.server.graph)
            p.server.sessionsClaimed([late], own: true)
            #expect(p.server.navigator.sessions["late"] == nil)
            // Stopping again changes nothing.
            p.server.stop(.signal(15))
            #expect(p.server.phase == .stopped(.asked))
        }

        /// The state file cannot be written: no answer of that iteration leaves, its clients are
        /// disconnected, and navd stops with a fault (a non-zero exit).
        @Test func aStoreThatCannotWriteStopsWithAFaultAndAcknowledgesNothing() throws {
            let p = InProcessServer()
            let store = FailingStore()
            store.failing = true
            p.server.store = store
            let c = p.client()
            c.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"navigate\",\"params\":{\"to\":\"shop.Product\",\"with\":{\"id\":\"p1\"}}}\n")
            run(p) { p.server.phase.isStopped }
            guard case .stopped(.stateFileFailed(let why)) = p.server.phase else { Issue.record("\(p.server.phase)"); return }
            #expect(why.contains("disk full") && p.server.failure?.contains("cannot write the state file") == true)
            #expect(c.takeOutput().isEmpty, "nothing unsaved is acknowledged")
            #expect(c.isClosed && p.server.transport.isEmpty)
        }

        /// A lost lease while navd was already stopping on a signal still makes it a fault.
        @Test func aLostLeaseDuringAStopStillCountsAsAFault() throws {
            let p = InProcessServer()
            let c = p.client()
            // A client that never reads keeps the stop from finishing at once.
            c.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
            p.server.commitInFlight = true  // a commit being stored holds the stop
            p.server.stop(.signal(15))
            #expect(p.server.phase == .stopping(.signal(15)) && p.server.failure == nil)
            p.server.leaseLost("another node took it")
            #expect(p.server.phase == .stopping(.leaseLost("another node took it")))
            #expect(p.server.failure?.contains("lost the cluster lease") == true && c.isClosed)
            // The commit's answer finishes the stop.
            p.server.commitInFlight = false
            p.server.finishIfDone()
            #expect(p.server.phase == .stopped(.leaseLost("another node took it")))
            p.server.leaseLost("again")
            #expect(p.server.phase == .stopped(.leaseLost("another node took it")))
        }
    }
}
