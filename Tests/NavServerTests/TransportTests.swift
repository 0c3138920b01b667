import Foundation
import JSON
import Logging
import RPC
import Testing
import UV
import Unchecked
@testable import NavServer

#if canImport(Glibc)
import Glibc
#endif

/// The transport alone: connections over ``MemoryStream``s, a handler of its own above them (no
/// dispatch, no navigator). What a message means is the handler's business; these tests check what
/// the transport promises: whole messages in their framing, output written once per iteration,
/// back-pressure, limits, notifications shared, closing after the last answer.
@Suite struct TransportTests {
    /// Answers each message with `reply(body)` (nothing when it returns nil), records what it heard.
    final class EchoHandler: ConnectionHandler {
        let connection: Connection
        var heard: [(body: String, framing: Framing)] = []
        var reply: (String) -> String? = { "ok:" + $0 }
        var continued = 0
        var closed = 0
        /// Holds input for this many iterations after the next message (a batch answered in slices).
        var holdFor = 0
        var listens = false

        init(_ c: Connection) { connection = c }

        func received(_ body: ByteView, framing: Framing) {
            let text = body.string
            heard.append((text, framing))
            connection.requestDispatched()
            if let r = reply(text) {
                connection.send(framing) { w in for b in r.utf8 { w.raw(b) } }
            }
            connection.requestAnswered()
            if holdFor > 0 { connection.workHeld = true }
        }

        func willReceive(lines: ByteView) -> Bool { false }
        func readEnded(batched: Bool) {}

        func continueHeldWork() {
            continued += 1
            holdFor -= 1
            if holdFor <= 0 { connection.workHeld = false }
        }

        func connectionClosed() { closed += 1 }
    }

    final class Host: ConnectionSetDelegate {
        var handlers: [Int: EchoHandler] = [:]
        var closedIds: [Int] = []
        var repliesWait = false
        /// What ``saveCommitsNow()`` answers (a store that can write at once), and how often it was asked.
        var savesAtOnce = false
        var savesAsked = 0
        /// Every answer makes a change to store (as each navigation does).
        var changesKeepComing = false
        var streamsClosedCount = 0
        func saveCommitsNow() -> Bool {
            savesAsked += 1
            if savesAtOnce && !changesKeepComing { repliesWait = false }
            return savesAtOnce
        }
        func accepted(_ c: Connection) -> any ConnectionHandler {
            let h = EchoHandler(c)
            handlers[c.id] = h
            return h
        }
        func closed(_ c: Connection) { closedIds.append(c.id) }
        func streamsClosed() { streamsClosedCount += 1 }
    }

    let loop = EventLoop()
    let host = Host()
    let set: ConnectionSet
    let flusher: Check

    init() { (set, flusher) = Self.make(TransportLimits(), loop: loop, host: host) }

    static func make(_ limits: TransportLimits, loop: EventLoop, host: Host) -> (ConnectionSet, Check) {
        let set = ConnectionSet(loop: loop, logger: Logger(label: "test"), limits: limits)
        set.delegate = host
        // The end of each iteration, as the server does it.
        let f = Check(loop: loop)
        f.start {
            set.handleReadyInput()
            set.flush()
        }
        return (set, f)
    }

    func client(uid: UInt32 = getuid(), into set: ConnectionSet? = nil) -> (MemoryStream, Connection?) {
        let s = MemoryStream(credentials: PeerCredentials(pid: getpid(), uid: uid, gid: getgid()))
        return (s, (set ?? self.set).attach(s))
    }

    func iterate(_ n: Int = 3) { for _ in 0..<n { loop.runOnce(wait: false) } }

    func text(_ s: MemoryStream) -> String { String(decoding: s.takeOutput(), as: UTF8.self) }

    @Test func messagesAreHandedOverWholeInTheirFraming() throws {
        let (s, c) = client()
        let h = try #require(c.flatMap { host.handlers[$0.id] })
        s.send("{\"a\":1}\n{\"b\"")
        s.send(":2}\nContent-Length: 7\r\n\r\n{\"c\":3}")
        s.send("Content-Len")
        s.send("gth: 2\r\n\r\n[]")
        iterate()
        #expect(h.heard.map(\.body) == ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}", "[]"])
        #expect(h.heard.map(\.framing) == [.newline, .newline, .contentLength, .contentLength])
        // Each answer in the framing of its message.
        #expect(text(s) == "ok:{\"a\":1}\nok:{\"b\":2}\nContent-Length: 10\r\n\r\nok:{\"c\":3}Content-Length: 5\r\n\r\nok:[]")
        #expect(set.stats.bytesIn > 0 && set.stats.bytesOut > 0)
    }

    @Test func aMessageLargerThanTheLimitClosesTheConnectionWithAnError() throws {
        var limits = TransportLimits()
        limits.maxMessage = 64
        let (set, f) = Self.make(limits, loop: loop, host: host)
        defer { f.close() }
        let (s, c) = client(into: set)
        s.send(String(repeating: "x", count: 100) + "\n")
        iterate()
        let out = text(s)
        #expect(out.contains("\"kind\":\"messageTooLarge\"") && out.contains("the --max-message limit"), "\(out)")
        #expect(c?.isClosed == true && host.closedIds == [c!.id] && host.handlers[c!.id]?.closed == 1)
        #expect(set.isEmpty)
    }

    /// A client that asks faster than it reads stops being read past its mark, and is read again
    /// (its held messages handled) once it has read its output.
    @Test func aClientThatDoesNotReadStopsBeingReadThenResumes() throws {
        var limits = TransportLimits()
        limits.readPauseThreshold = 1_000
        let (set, f) = Self.make(limits, loop: loop, host: host)
        defer { f.close() }
        let (s, c) = client(into: set)
        let h = try #require(c.flatMap { host.handlers[$0.id] })
        h.reply = { _ in String(repeating: "y", count: 300) }
        s.send(String(repeating: "{}\n", count: 10))
        iterate()
        // 300 bytes per answer: handling stops once more than 1,000 wait unread.
        #expect(h.heard.count == 4 && c!.holdsInput)
        #expect(s.takeOutput().count == 4 * 301)
        iterate()
        #expect(h.heard.count == 8)
        _ = s.takeOutput()
        iterate()
        #expect(h.heard.count == 10 && !c!.holdsInput)
    }

    /// A client of a set whose --max-output is 4,096 bytes, each request answered with 1,500 bytes,
    /// after it sent two requests and navd wrote both answers (3,002 bytes queued). The read-pause
    /// mark is min(threshold, maxOutput / 2) = 2,048: two answers pass it, reading stops.
    func clientHoldingTwoAnswers() throws -> (set: ConnectionSet, flusher: Check, stream: MemoryStream, connection: Connection) {
        var limits = TransportLimits()
        limits.maxOutput = 4_096
        limits.readPauseThreshold = 1 << 20
        let (set, f) = Self.make(limits, loop: loop, host: host)
        let (s, c) = client(into: set)
        let h = try #require(c.flatMap { host.handlers[$0.id] })
        h.reply = { _ in String(repeating: "z", count: 1_500) }
        s.send("{}\n{}\n")
        iterate()
        return (set, f, s, c!)
    }

    @Test func aClientHoldingMoreThanMaxOutputIsDisconnected() throws {
        let (set, f, s, c) = try clientHoldingTwoAnswers()
        defer { f.close() }
        #expect(!c.isClosed)
        // What it holds grows past --max-output only if navd writes more: a third answer, sent by
        // the layer above regardless (a notification), is one too many.
        c.send(.newline) { w in for _ in 0..<1_500 { w.raw(UInt8(ascii: "n")) } }
        #expect(c.isClosed && set.stats.slowClientsDropped == 1)
        _ = s
    }

    /// A client that has read part of its queue is judged by what it still holds: output that fits
    /// once the queue shrank does not disconnect it (the queue as it was after the last write is
    /// only a first check), and output past the limit still does.
    @Test func aClientIsJudgedByWhatItStillHolds() throws {
        let (set, f, s, c) = try clientHoldingTwoAnswers()
        defer { f.close() }
        #expect(s.queuedBytes == 3_002 && !c.isClosed)
        #expect(s.takeOutput(upTo: 2_000).count == 2_000)  // 1,002 left queued
        // 1,002 queued + 1,501 pending fit in 4,096 (3,002 + 1,501, the queue before the read, would not).
        c.send(.newline) { w in for _ in 0..<1_500 { w.raw(UInt8(ascii: "n")) } }
        #expect(!c.isClosed && set.stats.slowClientsDropped == 0)
        // 1,002 + 1,501 + 1,701 do not.
        c.send(.newline) { w in for _ in 0..<1_700 { w.raw(UInt8(ascii: "m")) } }
        #expect(c.isClosed && set.stats.slowClientsDropped == 1)
    }

    /// One notification to several connections: encoded once, each client gets it in the framing
    /// it speaks, in order with its own answers.
    @Test func aBroadcastReachesEachClientInItsFraming() throws {
        let (a, ca) = client(), (b, cb) = client(), (lsp, cl) = client()
        lsp.send("Content-Length: 2\r\n\r\n{}")
        a.send("{}\n")
        iterate()
        _ = text(a)
        _ = text(lsp)
        set.broadcast("changed", to: [ca!, cb!, cl!]) { $0.raw("{\"v\":1}") }
        set.broadcast("changed", to: [ca!, cl!]) { $0.raw("{\"v\":2}") }
        iterate()
        let line1 = "{\"jsonrpc\":\"2.0\",\"method\":\"changed\",\"params\":{\"v\":1}}"
        let line2 = "{\"jsonrpc\":\"2.0\",\"method\":\"changed\",\"params\":{\"v\":2}}"
        #expect(text(a) == line1 + "\n" + line2 + "\n")
        #expect(text(b) == line1 + "\n")
        #expect(text(lsp) == "Content-Length: \(line1.utf8.count)\r\n\r\n\(line1)Content-Length: \(line2.utf8.count)\r\n\r\n\(line2)")
        #expect(set.stats.notificationsSent == 5)
    }

    /// One uid alone takes every connection but the reserve (10 %, at least one); another uid gets
    /// the reserve; a closed connection gives its slot back. The hard cap is opt-in.
    @Test func connectionsAreSharedBetweenUids() throws {
        var limits = TransportLimits()
        limits.connections = FairShare(limit: 10, option: "--max-connections", capOption: "--max-connections-per-uid")
        let (set, f) = Self.make(limits, loop: loop, host: host)
        defer { f.close() }
        let mine = (0..<9).map { _ in client(uid: 4242, into: set) }
        #expect(mine.allSatisfy { $0.1 != nil }, "one uid alone takes 9 of 10")
        let (tenth, refused) = client(uid: 4242, into: set)
        let out = text(tenth)
        #expect(refused == nil && out.contains("\"kind\":\"tooManyConnections\"") && out.contains("\"limit\":\"--max-connections\"")
                && out.contains("\"held\":9") && out.contains("\"reserve\":1"), "\(out)")
        let other = client(uid: 4343, into: set)
        #expect(other.1 != nil, "another uid is served from the reserve")
        let (full, _) = client(uid: 4444, into: set)
        #expect(text(full).contains("\"limit\":\"--max-connections\"") && !text(full).contains("reserve"), "everything is taken")
        #expect(set.byUid[4242] == 9 && set.byUid.total == 10 && set.stats.connectionsRefused == 2)
        // A slot freed while only the reserve is left stays in the reserve; two freed give one back.
        mine[0].1!.close(reason: nil)
        #expect(set.byUid[4242] == 8 && client(uid: 4242, into: set).1 == nil)
        mine[1].1!.close(reason: nil)
        #expect(client(uid: 4242, into: set).1 != nil && set.byUid[4242] == 8)

        var capped = TransportLimits()
        capped.connections = FairShare(limit: 10, cap: 2, option: "--max-connections", capOption: "--max-connections-per-uid")
        let (set2, f2) = Self.make(capped, loop: loop, host: host)
        defer { f2.close() }
        _ = client(uid: 4242, into: set2)
        _ = client(uid: 4242, into: set2)
        let (third, no) = client(uid: 4242, into: set2)
        #expect(no == nil && text(third).contains("--max-connections-per-uid"), "\(text(third))")
        #expect(client(uid: 4343, into: set2).1 != nil)
    }

    /// Unfinished messages of all clients together are held against `--max-total-input`: past it, the
    /// uid holding the most loses its connection holding the most (told why, then closed), again until
    /// all hold less than seven eighths of the limit; another uid's unfinished message is kept and
    /// completes, and a connection that sends whole messages is not touched.
    @Test func unfinishedMessagesOfAllClientsAreBoundedAndTheLargestHolderIsCut() throws {
        var limits = TransportLimits()
        limits.maxMessage = 64 * 1024
        limits.maxTotalInput = 100_000
        let (set, f) = Self.make(limits, loop: loop, host: host)
        defer { f.close() }
        func part(_ n: Int) -> String { "{\"x\":\"" + String(repeating: "a", count: n) }
        let hog = (0..<3).map { _ in client(uid: 4242, into: set) }
        let (other, oc) = client(uid: 4343, into: set)
        let (whole, wc) = client(uid: 4242, into: set)
        hog[0].0.send(part(30_000))
        hog[1].0.send(part(20_000))
        other.send(part(15_000))
        whole.send("{}\n")
        iterate()
        #expect(set.inputHeld >= 65_000 && set.inputHeld < 100_000 && hog.allSatisfy { !$0.1!.isClosed }, "\(set.inputHeld)")
        // 4242 holds ~90,000 with its third part, 4343 ~15,000: past 100,000, 4242's largest is cut;
        // that leaves ~65,000 (under 87,500), so nothing else is.
        hog[2].0.send(part(40_000))
        iterate()
        let cut = hog.filter { $0.1!.isClosed }
        #expect(cut.count == 1 && set.stats.inputHoldersDropped == 1, "\(cut.map { $0.1!.id })")
        let told = cut.first.map { text($0.0) } ?? ""
        #expect(told.contains("\"kind\":\"limitExceeded\"") && told.contains("\"limit\":\"--max-total-input\"")
                && told.contains("\"max\":100000") && told.contains("\"id\":null"), "\(told)")
        #expect(set.inputHeld < 100_000 * 7 / 8 && !oc!.isClosed && !wc!.isClosed)
        // The other uid's message completes and is handled; the whole-message client goes on.
        other.send("\"}\n")
        whole.send("{}\n")
        iterate()
        #expect(host.handlers[oc!.id]!.heard.count == 1 && host.handlers[wc!.id]!.heard.count == 2)
        // The other uid now holds nothing. It starts another message (35,000); then 4242's first part
        // grows to 50,000 and all pass the limit: 4242 (holding 70,000) loses that one, not 4343.
        other.send(part(35_000))
        iterate()
        #expect(!oc!.isClosed && hog.filter { $0.1!.isClosed }.count == 1)
        hog[0].0.send(String(repeating: "b", count: 20_000))
        iterate()
        #expect(hog[0].1!.isClosed, "\(set.inputHeld)")
        #expect(!oc!.isClosed && hog.filter { $0.1!.isClosed }.count == 2, "\(set.inputHeld)")
        // What a closed connection held is given back.
        for (_, c) in hog where !c!.isClosed { c!.close(reason: nil) }
        oc!.close(reason: nil)
        #expect(set.inputHeld == 0)
    }

    /// A client that finished sending (as `echo … | socat` does) gets the answers it waits for, then
    /// the connection closes.
    @Test func aClientThatFinishedSendingIsAnsweredThenClosed() throws {
        let (s, c) = client()
        s.send("{\"q\":1}\n{\"q\":2}\n")
        s.finishSending()
        iterate(5)
        #expect(text(s) == "ok:{\"q\":1}\nok:{\"q\":2}\n")
        #expect(c!.isClosed && host.closedIds == [c!.id])
        iterate(3)
        #expect(host.streamsClosedCount == 1, "its stream drained and closed")
    }

    /// Pipelined messages that each cost much but are small (a `context.get` of thousands of facts):
    /// once a turn finds them costly, the clock is looked at after each one, so that a turn ends
    /// within a message of its slice rather than after the next few (a look every 8 messages let a
    /// turn run four times its slice). Each message here costs 0.4 ms of a 1-ms slice.
    @Test func costlyMessagesAreTimedOneByOne() throws {
        var limits = TransportLimits()
        limits.inputSlice = 1_000_000
        let (set, f) = Self.make(limits, loop: loop, host: host)
        defer { f.close() }
        let (s, c) = client(into: set)
        let h = try #require(c.flatMap { host.handlers[$0.id] })
        h.reply = { body in
            let began = EventLoop.hrtime
            while EventLoop.hrtime &- began < 400_000 {}  // the message's cost, as work (not a wait)
            return "ok:" + body
        }
        s.send((0..<40).map { "{\"n\":\($0)}\n" }.joined())  // a memory stream's read is handled as it is sent
        var turns = [h.heard.count]
        while h.heard.count < 40 && turns.count < 40 {
            let before = h.heard.count
            loop.runOnce(wait: false)
            turns.append(h.heard.count - before)
        }
        // The first turn learns the cost at its first look (the 8th message); later turns end at
        // the first message past the slice: 3 here, fewer on a slower machine, never 8 again.
        #expect(h.heard.count == 40 && turns.first == 8, "\(turns)")
        #expect(turns.dropFirst().allSatisfy { (1...4).contains($0) }, "\(turns)")
    }

    /// The layer above may hold a connection's input (a batch answered a slice per iteration): its
    /// next messages wait, and it is asked to go on each iteration until it lets go.
    @Test func workHeldAboveHoldsTheInputUntilReleased() throws {
        let (s, c) = client()
        let h = try #require(c.flatMap { host.handlers[$0.id] })
        h.holdFor = 3
        s.send("{\"first\":1}\n{\"second\":2}\n")
        iterate(1)
        #expect(h.heard.count == 1 && c!.workHeld)
        iterate(5)
        #expect(h.continued == 3 && !c!.workHeld && h.heard.count == 2)
    }

    /// A read that carried one message while a change waits to be stored: its answer leaves at once
    /// when the store saves the change then (`--durability process`), and at the end of the
    /// iteration when it cannot (a store that syncs or writes in the background).
    @Test func aLoneAnswerLeavesAtOnceWhenTheStoreSavesWhatItWaitsFor() throws {
        final class Seen { var beforeFlush = "", atFlush = ""; var stream: MemoryStream? }
        let seen = Seen()
        let set = ConnectionSet(loop: loop, logger: Logger(label: "test"), limits: TransportLimits())
        set.delegate = host
        // The end of each iteration, noting what was written before it and what it wrote.
        let f = Check(loop: loop)
        f.start {
            guard let s = seen.stream else { return }
            seen.beforeFlush += String(decoding: s.takeOutput(), as: UTF8.self)
            set.handleReadyInput()
            set.flush()
            seen.atFlush += String(decoding: s.takeOutput(), as: UTF8.self)
        }
        defer { f.close() }
        let (s, _) = client(into: set)
        seen.stream = s
        host.repliesWait = true
        s.send("{\"a\":1}\n")
        iterate()
        #expect(host.savesAsked == 1)
        #expect(seen.beforeFlush.isEmpty, "the store could not save at once: the answer waits for the end of the iteration")
        #expect(seen.atFlush == "ok:{\"a\":1}\n")
        host.savesAtOnce = true
        s.send("{\"b\":2}\n")
        iterate()
        #expect(host.savesAsked == 2 && !host.repliesWait)
        #expect(seen.beforeFlush == "ok:{\"b\":2}\n", "saved at once: the answer left before the end of the iteration")
        #expect(seen.atFlush == "ok:{\"a\":1}\n")
    }

    /// Many lone requests in one iteration: the first few are answered at once, each after a write of
    /// the store; the rest leave together after the iteration's one write.
    @Test func aBusyIterationAnswersMostLoneRequestsTogether() throws {
        let clients = (0..<10).map { _ in client() }
        host.repliesWait = true
        host.savesAtOnce = true
        host.changesKeepComing = true
        for (s, _) in clients { s.send("{}\n") }
        iterate(1)
        #expect(clients.allSatisfy { _, c in c.flatMap { host.handlers[$0.id]?.heard.count } == 1 }, "all read in one iteration")
        #expect(host.savesAsked == ConnectionSet.savesPerIteration)
        #expect(clients.allSatisfy { s, _ in text(s) == "ok:{}\n" })
        for (s, _) in clients { s.send("{}\n") }
        iterate(1)
        #expect(host.savesAsked == 2 * ConnectionSet.savesPerIteration, "counted again in the next iteration")
    }

    /// While output is held (a commit being stored), nothing is read or sent; released, all of it leaves.
    @Test func heldOutputWaitsForItsRelease() throws {
        let (s, c) = client()
        let h = try #require(c.flatMap { host.handlers[$0.id] })
        host.repliesWait = true  // a change waits to be stored: the answer is not written at once
        s.send("{}\n")
        set.holdOutput()
        iterate()
        #expect(h.heard.count == 1 && text(s).isEmpty)
        s.send("{\"later\":1}\n")
        iterate()
        #expect(h.heard.count == 1, "not read while held")
        set.releaseOutput()
        iterate()
        let out = text(s)
        #expect(out == "ok:{}\nok:{\"later\":1}\n")
        #expect(h.heard.count == 2)
    }
}

/// A kind of stream with a framing of its own, written here alone (no change to the transport):
/// each message is a 4-byte big-endian length, then the body, both ways.
final class LengthPrefixedStream: ClientStream {
    struct Format: FrameFormat {
        func header(bodyLength n: Int) -> [UInt8] { [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] }
        var trailer: [UInt8] { [] }
    }
    static let framing = FrameFormats.register(Format())

    final class Decoder: MessageDecoder {
        let maxMessage: Int
        var pending: [UInt8] = []
        init(maxMessage: Int) { self.maxMessage = maxMessage }
        var hasPartialMessage: Bool { !pending.isEmpty }
        var heldBytes: Int { pending.capacity }
        func discard() { pending = [] }
        func feed(_ input: ByteView, _ onMessage: (Framing, ByteView) -> Bool) throws(FramingError) {
            pending += input
            try resume(onMessage)
        }
        func resume(_ onMessage: (Framing, ByteView) -> Bool) throws(FramingError) {
            while pending.count >= 4 {
                let n = pending[0..<4].reduce(0) { $0 << 8 | Int($1) }
                guard n <= maxMessage else { throw .messageTooLarge(limit: maxMessage) }
                guard pending.count >= 4 + n else { return }
                let body = Array(pending[4..<(4 + n)])
                pending.removeFirst(4 + n)
                let goOn = body.withUnsafeBytes { onMessage(LengthPrefixedStream.framing, ByteView($0)) }
                if !goOn { return }
            }
        }
    }

    let inner: MemoryStream
    init(uid: UInt32 = getuid()) { inner = MemoryStream(credentials: PeerCredentials(pid: getpid(), uid: uid, gid: getgid())) }

    func messageDecoder(maxMessage: Int) -> (any MessageDecoder)? { Decoder(maxMessage: maxMessage) }

    /// Sends `body` as one frame, cut in two reads when `split`.
    func send(_ body: String, split: Bool = false) {
        let frame = Format().header(bodyLength: body.utf8.count) + Array(body.utf8)
        if split {
            inner.send(String(decoding: frame[..<3], as: UTF8.self))
            inner.send(String(decoding: frame[3...], as: UTF8.self))
        } else {
            inner.send(String(decoding: frame, as: UTF8.self))
        }
    }

    /// The bodies navd wrote, unframed.
    func takeMessages() -> [String] {
        var out = inner.takeOutput()[...], bodies: [String] = []
        while out.count >= 4 {
            let n = out.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            bodies.append(String(decoding: out.dropFirst(4).prefix(n), as: UTF8.self))
            out = out.dropFirst(4 + n)
        }
        return bodies
    }

    var onDrain: (() -> Void)? {
        get { inner.onDrain }
        set { inner.onDrain = newValue }
    }
    func startReading(_ handler: @escaping StreamHandle.ReadHandler) { inner.startReading(handler) }
    func pauseReading() { inner.pauseReading() }
    func resumeReading() { inner.resumeReading() }
    var queuedBytes: Int { inner.queuedBytes }
    func write(_ bytes: ByteView) { inner.write(bytes) }
    func write(_ first: ByteView, _ second: ByteView) { inner.write(first, second) }
    var peerHungUp: Bool { inner.peerHungUp }
    func peerCredentials() -> PeerCredentials? { inner.peerCredentials() }
    func close(then: (() -> Void)?) { inner.close(then: then) }
    func shutdownAndClose(then: (() -> Void)?) { inner.shutdownAndClose(then: then) }
}

extension TransportTests {
    /// A stream that frames its messages its own way is served by the same transport: its messages
    /// arrive whole with its framing, its answers and notifications leave in it.
    @Test func aStreamWithAFramingOfItsOwnNeedsNoChangeToTheTransport() throws {
        let s = LengthPrefixedStream()
        let c = try #require(set.attach(s))
        let h = try #require(host.handlers[c.id])
        s.send("{\"a\":1}")
        s.send("{\"b\":2}", split: true)
        iterate()
        #expect(h.heard.map(\.body) == ["{\"a\":1}", "{\"b\":2}"] && h.heard.allSatisfy { $0.framing == LengthPrefixedStream.framing })
        #expect(s.takeMessages() == ["ok:{\"a\":1}", "ok:{\"b\":2}"])
        let (line, lc) = client()
        set.broadcast("changed", to: [c, lc!]) { $0.raw("{\"v\":1}") }
        iterate()
        let note = "{\"jsonrpc\":\"2.0\",\"method\":\"changed\",\"params\":{\"v\":1}}"
        #expect(s.takeMessages() == [note] && text(line) == note + "\n")
    }
}

extension InProcess {
    /// The same stream through dispatch and the navigator: requests answered in its framing.
    @Suite struct OwnFramingThroughDispatchTests {
        @Test func requestsOverAStreamWithItsOwnFramingAreAnswered() throws {
            let p = InProcessServer()
            let s = LengthPrefixedStream()
            p.server.attach(s)
            s.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}")
            s.send("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"navigate\",\"params\":{\"to\":\"shop.Product\",\"with\":{\"id\":\"p1\"}}}", split: true)
            var got: [String] = []
            for _ in 0..<100 where got.count < 2 {
                p.server.loop.runOnce(wait: false)
                got += s.takeMessages()
            }
            #expect(got.count == 2 && got[0] == "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"pong\"}", "\(got)")
            #expect(got.last?.contains("\"version\":1") == true, "\(got)")
        }
    }
}
