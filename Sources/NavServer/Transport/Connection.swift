import JSON
import Logging
import RPC
import UV
import Unchecked
#if canImport(Glibc)
import Glibc
#endif

/// What a connection hands its messages to: the layer above (dispatch's peer). A connection calls
/// up only through this and ``ConnectionSetDelegate``.
protocol ConnectionHandler: AnyObject {
    /// One message read, with the framing it came in.
    func received(_ body: ByteView, framing: Framing)
    /// A read of several whole lines is about to be handed over one message at a time: true if the
    /// handler indexed them at once.
    func willReceive(lines: ByteView) -> Bool
    /// The messages of one read (or of held input resumed) were handed over; `batched`: the
    /// handler indexed them at once (``willReceive(lines:)`` answered true).
    func readEnded(batched: Bool)
    /// Runs the next slice of work the handler holds back this connection's input for
    /// (``Connection/workHeld``).
    func continueHeldWork()
    /// The connection closed; called once.
    func connectionClosed()
    /// Whether the client hears something without asking (its subscriptions): one that finished
    /// sending keeps hearing it until it closes its socket.
    var listens: Bool { get }
}

/// One client connection: its stream, framing state, coalesced output, and flow control (held
/// input, back-pressure, closing after the last answer). Knows nothing of what the messages mean.
/// Confined to the loop thread.
final class Connection {
    let id: Int
    /// The set creates, owns and outlives its connections. A strong reference: the cycle lasts while
    /// the set lists the connection and ends when it drops it. (A weak reference would give the set
    /// a side table and every retain/release the slow path; an unchecked `unowned` one costs an
    /// atomic retain at every use, which a strong `let` does not.)
    let owner: ConnectionSet
    let stream: any ClientStream
    /// Where its messages go; given by the layer above when the connection is accepted, dropped when
    /// it closes (which ends the cycle between the two).
    var handler: (any ConnectionHandler)?
    /// The stream when it is a socket, as it is whenever navd serves: the calls every notification
    /// and flush makes (queued bytes, writes) go to it directly rather than through the protocol,
    /// counting no reference: `stream` holds the same object for the connection's life.
    private let pipe: Unretained<PipeStream>?
    /// A socket's framings (newline or `Content-Length`, message by message)…
    private var decoder: FrameDecoder
    /// …or the stream's own (``ClientStream/messageDecoder(maxMessage:)``).
    private let ownDecoder: (any MessageDecoder)?
    /// Output not yet handed to the stream; flushed once per loop iteration (or at once after a read
    /// that carried a single request, see ``received(_:)``).
    let output: ByteBuffer
    /// A writer into ``output``, kept: one made for each message would retain and release the
    /// buffer every time.
    var outputWriter: JSONWriter
    /// Notifications shared with other subscribers: a range of the set's broadcast log that follows
    /// `output`. It is written from the log itself at flush, so a notification is not copied once per
    /// subscriber; anything else sent meanwhile first copies the range into `output` (order is kept).
    var sharedStart = 0, sharedEnd = 0
    /// At least what the stream holds queued: what it held after the last write (it only shrinks
    /// until the next one). Checked first on every notification queued (``markDirty()``), where
    /// asking the stream costs a load through it per subscriber.
    var queuedBound = 0
    /// The framing of the last message received (used for notifications and requests from navd).
    var lastFraming: Framing = .newline
    /// Who is at the other end (a Unix socket knows).
    let credentials: PeerCredentials?
    private(set) var isClosed = false
    var readPaused = false
    var isDirty = false
    /// Set while a read of this connection is handled: output it queues joins the iteration's flush
    /// when the read ends (``received(_:)``), so that an answer sent at once never joins it.
    private(set) var reading = false

    /// Set while the set holds output (a commit is being stored, ``ConnectionSet/holdOutput()``): the
    /// stream is not read, and output stays queued.
    var gated = false

    /// ``closeAfterFlush()`` was asked while output had to wait: it closes after the next flush.
    var closesAfterFlush = false

    /// Run once, the next time this client has read everything navd sent it (``whenDrained(_:)``).
    var drainHooks: [() -> Void] = []

    init(id: Int, owner: ConnectionSet, stream: any ClientStream) {
        self.id = id
        self.owner = owner
        self.stream = stream
        output = ByteBuffer(capacity: 16)
        outputWriter = JSONWriter(into: output)
        self.pipe = (stream as? PipeStream).map(Unretained.init)  // `stream` holds it
        self.decoder = FrameDecoder(maxMessage: owner.limits.maxMessage)
        self.ownDecoder = stream.messageDecoder(maxMessage: owner.limits.maxMessage)
        self.credentials = stream.peerCredentials()
        // These closures hold the connection strongly; the cycle ends when the stream closes (its
        // handlers are dropped then), so every callback finds the connection alive.
        stream.onDrain = { self.drained() }
    }

    func start() {
        stream.startReading { event in
            switch event {
            case .data(let bytes): self.received(bytes)
            case .end: self.peerFinishedSending()
            case .error(let e): self.close(reason: "read failed: \(e)")
            }
        }
    }

    /// When it connected and when navd last read from it (``EventLoop/hrtime``): `client.list`'s
    /// age and idle time.
    let openedAt = EventLoop.hrtime
    private(set) var lastReadAt: UInt64 = 0

    /// Requests received whose reply has not been sent yet.
    private(set) var awaiting = 0
    /// Requests received since it connected (`client.list`'s `requests`).
    private(set) var requests = 0
    /// The client shut down its side (as `socat` does after its input): answer what it asked, then close.
    var peerDone = false

    /// The end of the client's input. A client that only finished sending (`shutdown(SHUT_WR)`, as
    /// `echo … | socat` does) still gets the replies it waits for; one that closed its socket can
    /// read nothing more, so it is gone now: what it waited for is cancelled at once.
    private func peerFinishedSending() {
        peerDone = true
        stream.pauseReading()
        if !holdsInput && stream.peerHungUp {
            close(reason: nil)
            return
        }
        if owesNothing { closeAfterFlush() } else { owner.watchForHangUp(self) }
    }

    /// Nothing more for a client that finished sending: no answer due, no input held, no
    /// subscription to hear (`echo subscribe | socat -t 5` hears five seconds of changes).
    private var owesNothing: Bool { awaiting == 0 && !holdsInput && !(handler?.listens ?? false) }

    /// What becomes of a client that finished sending, checked while it is watched: `gone` when it
    /// has since closed its socket (nobody is left to read; what it waited for is cancelled),
    /// `done` when nothing more is owed to it (its subscriptions ended), else nil. Input still held
    /// is handled first, as at the end of its input.
    enum HalfClosedEnd { case gone, done }
    var halfClosedEnd: HalfClosedEnd? {
        guard peerDone, !isClosed, !holdsInput else { return nil }
        if stream.peerHungUp { return .gone }
        return owesNothing ? .done : nil
    }

    func requestDispatched() {
        awaiting += 1
        requests &+= 1
    }

    func requestAnswered() {
        awaiting -= 1
        if peerDone && !isClosed && owesNothing {
            // Close once this iteration's output is flushed.
            closeSoon()
        }
    }

    private func closeSoon() {
        guard !isClosed else { return }
        let t = Timer(loop: owner.loop).labelled("a connection closed after its output")
        t.start(milliseconds: 0) {
            t.close()
            self.closeAfterFlush()
        }
    }

    private func received(_ bytes: ByteView) {
        // The handler, held once for the whole read rather than once per message.
        guard !isClosed, let handler else { return }
        reading = true
        defer {
            reading = false
            // (Listed already when it was dirty before this read: flushing it twice costs a check.)
            if isDirty && !isClosed { owner.dirty.append(self) }
        }
        // From the end of the last read or timed callback of this poll when there was one (libuv's
        // read of these bytes came after it), else from now: one look at the clock a read, not two.
        let mark = owner.loop.clockMark
        owner.readStartedAt = mark != 0 ? mark : EventLoop.hrtime
        lastReadAt = owner.readStartedAt
        (sliceSpent, handledInSlice) = (false, 0)
        owner.stats.bytesIn += bytes.count
        var messages = 0
        let (batched, firstNewline) = beginBatch(bytes, handler)
        defer { handler.readEnded(batched: batched) }
        do {
            if let own = ownDecoder {
                try own.feed(bytes) { framing, body -> Bool in
                    messages += 1
                    return self.handle(framing, body, handler)
                }
            } else {
                try decoder.feed(bytes, firstNewline: firstNewline) { framing, body -> Bool in
                    messages += 1
                    return self.handle(framing, body, handler)
                }
            }
            // A read that carried one message is a client waiting for that answer before it sends
            // again: the answer leaves now, while the loop goes on with other connections, instead
            // of at the end of the iteration. A client that pipelines gets its answers together at
            // the end of the iteration, one write for many. Nothing is acknowledged before it is in
            // the state file: with commits waiting to be saved, the store writes them first when it
            // can at once (`--durability process`), else the answer waits for the iteration's end.
            if messages == 1 && isDirty && hasOwnOutput && owner.repliesMayLeaveNow() { flush() }
        } catch {
            framingFailed(error)
            return
        }
        afterInput()
    }

    /// Handles one message; answers whether to go on with the next one now (see ``mustHold``).
    @inline(__always)
    private func handle(_ framing: Framing, _ body: ByteView, _ handler: any ConnectionHandler) -> Bool {
        guard !isClosed else { return false }
        lastFraming = framing
        handler.received(body, framing: framing)
        // Every few messages, and after each large one (its checks may cost milliseconds: a setup
        // field against its pattern), whether this client's turn is over (``TransportLimits/inputSlice``).
        handledInSlice &+= 1
        if handledInSlice & clockLookMask == 0 || body.count > Connection.largeMessage { lookAtTheClock() }
        return !mustHold
    }

    /// Ends this client's turn once it has had its slice; and from how much each message took so
    /// far, how often to look again: after every message while they cost an eighth of a slice or
    /// more each (small requests with large answers, such as `context.get` of thousands of facts,
    /// where a look every few messages let a turn run four times its slice), else every few.
    private func lookAtTheClock() {
        let spent = EventLoop.hrtime &- owner.readStartedAt
        let slice = owner.limits.inputSlice
        if spent > slice { sliceSpent = true }
        clockLookMask = spent / UInt64(handledInSlice) >= slice / UInt64(Connection.messagesPerClockLook) ? 0 : Connection.messagesPerClockLook - 1
    }

    /// How often (in messages) a client's turn looks at the clock: a power of two. A look costs
    /// about as much as the rest of the check; a client pipelining 16 requests looks twice.
    static let messagesPerClockLook: UInt32 = 8
    /// A message longer than this (bytes) is followed by a look at the clock.
    static let largeMessage = 1_024

    /// Holds the rest of the input when handling must stop, and notes how long an unfinished
    /// message has waited.
    private func afterInput() {
        guard !isClosed else { return }
        guard countInput(partial: hasPartialMessage) else { return }
        if mustHold {
            hold()
        } else if hasPartialMessage {  // none once cut (``cutForInput(limit:)``) and closing
            if partialSince == 0 { partialSince = owner.loop.now }
        } else {
            partialSince = 0
        }
    }

    private func framingFailed(_ error: FramingError) {
        let rpcError: RPCError
        switch error {
        case .messageTooLarge(let limit):
            rpcError = .invalidRequest(
                "message larger than \(limit) bytes (the --max-message limit); the connection will close",
                kind: .messageTooLarge, data: ["limit": .int(limit)])
        case .badHeader(let why):
            rpcError = .invalidRequest("malformed Content-Length header: \(why); the connection will close",
                                       kind: .badHeader)
        }
        owner.logger.warning("closing connection after a framing error",
                              metadata: ["navd.client": "\(id)", "navd.error": "\(rpcError.message)"])
        close(telling: rpcError)
    }

    /// Tells the client why it is disconnected (an error answering no request: `id` null, in the
    /// framing it used last), then closes once that is written.
    func close(telling error: RPCError) {
        var w = JSONWriter()
        RPCEncoder.error(id: .null, error: error, into: &w)
        sendFramed(w.bytes, lastFraming)
        closeAfterFlush()
    }

    private var hasPartialMessage: Bool { ownDecoder?.hasPartialMessage ?? decoder.hasPartialMessage }

    // MARK: Input held across reads

    /// What the set last counted of this connection's held input (``ConnectionSet/inputCounted(_:_:)``).
    var inputCounted = 0

    /// Tells the set what the decoder holds now, when it changed (most reads leave nothing behind:
    /// `partial` false and nothing counted before, checked without asking the decoder). Answers
    /// whether the connection is still open (the count may cut it, ``cutForInput(limit:)``).
    @inline(__always)
    private func countInput(partial: Bool) -> Bool {
        guard partial || inputCounted != 0 else { return true }
        let held = ownDecoder?.heldBytes ?? decoder.heldBytes
        if held != inputCounted { owner.inputCounted(self, held) }
        return !isClosed
    }

    /// All clients together hold more than `--max-total-input` of unfinished messages and this one's
    /// uid and share are the largest: what it holds is dropped, it is told why, and it closes (the
    /// rest of its stream cannot be read without the part dropped).
    func cutForInput(limit: Int) {
        guard !isClosed else { return }
        let held = inputCounted
        owner.stats.inputHoldersDropped += 1
        owner.logger.warning("disconnecting a client holding unfinished messages: all clients together passed --max-total-input",
                             metadata: ["navd.client": "\(id)", "navd.held": "\(held)", "navd.limit": "\(limit)"])
        if let own = ownDecoder { own.discard() } else { decoder.discard() }
        partialSince = 0
        stream.pauseReading()
        owner.inputCounted(self, 0)
        close(telling: RPCError(.limitExceeded,
            "navd holds more than \(limit) bytes of messages that have not fully arrived, from all clients together (the --max-total-input limit), and this connection held \(held) of them, the most of the user holding the most; send each message whole and large ones one at a time; the connection will close",
            data: ["limit": "--max-total-input", "max": .int(limit), "held": .int(held)]))
    }

    // MARK: Holding input

    /// Set while navd has stopped handling this client's messages: its unsent output passed the
    /// mark (it reads slower than it asks), or the layer above holds work back (``workHeld``).
    /// Reading is paused and what was read stays in the decoder until ``resumeInput()``.
    private(set) var holdsInput = false
    /// Entered in the set's list of connections whose held input is handled next iteration.
    var queuedForInput = false
    /// Set by the layer above while it holds work back from this connection's input (a large batch
    /// handled a slice per loop iteration): input waits, and ``ConnectionHandler/continueHeldWork()``
    /// runs each iteration until it is cleared.
    var workHeld = false
    /// Set when this client's input has been handled for ``TransportLimits/inputSlice`` in this loop
    /// iteration (pipelined requests that each cost much): the rest waits for the next iteration,
    /// after the other clients' reads, as held input does.
    private(set) var sliceSpent = false
    /// Messages handled since the turn began, for ``messagesPerClockLook``.
    private var handledInSlice: UInt32 = 0
    /// The clock is looked at when `handledInSlice & clockLookMask` is 0: every
    /// ``messagesPerClockLook`` messages, or every one while they cost much (``lookAtTheClock()``).
    private var clockLookMask: UInt32 = Connection.messagesPerClockLook - 1
    /// When the kept bytes of an unfinished message began to wait (loop time in ms; 0: none).
    private(set) var partialSince: UInt64 = 0

    /// Bytes this client has not read yet: coalesced output, shared notifications, the stream's queue.
    var unsentBytes: Int { output.count + (sharedEnd - sharedStart) + queuedBytes }

    /// Output handed to the stream that its reader has not taken yet.
    var queuedBytes: Int {
        if let pipe { return pipe.with { $0.queuedBytes } }
        return stream.queuedBytes
    }

    func write(_ bytes: ByteView) {
        if let pipe { return pipe.with { $0.write(bytes) } }
        stream.write(bytes)
    }

    func write(_ first: ByteView, _ second: ByteView) {
        if let pipe { return pipe.with { $0.write(first, second) } }
        stream.write(first, second)
    }

    /// Output past which navd stops reading this client's requests (back-pressure).
    var pauseMark: Int { owner.limits.pauseMark }

    /// Whether unsent bytes are over `limit`: the bound on the stream's queue first, the stream
    /// itself only when the bound is over.
    @inline(__always)
    func unsentOver(_ limit: Int) -> Bool {
        let pending = output.count + (sharedEnd - sharedStart)
        return pending + queuedBound > limit && pending + queuedBytes > limit
    }

    /// Whether handling must stop after the current message.
    var mustHold: Bool { workHeld || sliceSpent || unsentOver(pauseMark) }

    private func hold() {
        if !holdsInput {
            holdsInput = true
            stream.pauseReading()
        }
        owner.inputHeld(self)
    }

    /// Handles held input (the set calls it when the output is below the mark again, or for the
    /// next slice of a batch), until it must stop again or none is left; then reads again.
    func resumeInput() {
        guard holdsInput, !isClosed else { return }
        owner.readStartedAt = EventLoop.hrtime
        (sliceSpent, handledInSlice) = (false, 0)
        defer { handler?.readEnded(batched: false) }
        if workHeld {
            handler?.continueHeldWork()
            if isClosed { return }
            if mustHold {
                owner.inputHeld(self)
                return
            }
        }
        do {
            guard let handler else { return }
            if let own = ownDecoder {
                try own.resume { framing, body -> Bool in self.handle(framing, body, handler) }
            } else {
                try decoder.resume { framing, body -> Bool in self.handle(framing, body, handler) }
            }
        } catch {
            framingFailed(error)
            return
        }
        guard !isClosed else { return }
        if mustHold {
            owner.inputHeld(self)
            return
        }
        holdsInput = false
        let partial = hasPartialMessage
        partialSince = partial ? owner.loop.now : 0
        guard countInput(partial: partial) else { return }
        if peerDone {
            if awaiting == 0 { closeSoon() }
        } else if !readPaused && !gated {
            stream.resumeReading()
        }
    }

    /// A read of several whole lines (a pipelining client) is offered to the handler in one piece
    /// before its lines are handed over one by one (the JSON parser indexes them in one pass: stage 1
    /// of simdjson once per read, not per line). Only lines that start the read (no partial message
    /// before them) in the loop's read buffer, whose padding a parser needs; a header block
    /// (`Content-Length` framing) is left alone. Also where the read's first newline is (-1: not
    /// looked for), which the framing then need not look for again.
    private func beginBatch(_ view: ByteView, _ handler: any ConnectionHandler) -> (batched: Bool, firstNewline: Int) {
        guard ownDecoder == nil, !hasPartialMessage, view.count > 0, view[0] != UInt8(ascii: "C"), view[0] != UInt8(ascii: "c"),
              EventLoop.readPadding >= JSONParser.padding, owner.loop.isInReadBuffer(view)
        else { return (false, -1) }
        guard let first = view.firstIndex(of: 0x0A, from: 0) else { return (false, -1) }
        // The end of the last whole line (a pipelining client's read usually ends with one).
        var end = view.count
        while end > 0 && view[end - 1] != 0x0A { end -= 1 }
        guard end - 1 != first else { return (false, first) }  // one line: nothing to share
        return (handler.willReceive(lines: view.bytes(0..<end)), first)
    }

    // MARK: Closing

    /// Flushes what is queued, then closes.
    func closeAfterFlush() {
        guard !isClosed else { return }
        if owner.outputHeld {
            closesAfterFlush = true
            flush()
            return
        }
        if owner.repliesWait, isDirty || !output.isEmpty {
            // Its answers wait for their commits to be saved: it closes after the flush that sends them.
            closesAfterFlush = true
            markDirty()
            return
        }
        flush()
        guard !isClosed else { return }  // the flush found the output over --max-output and closed
        finishClose()
        owner.drain(stream)
    }

    /// Closes at once (queued output is dropped).
    func close(reason: String?) {
        guard !isClosed else { return }
        if let reason { owner.logger.info("connection closed", metadata: ["navd.client": "\(id)", "navd.reason": "\(reason)"]) }
        finishClose()
        stream.close(then: nil)
    }

    private func finishClose() {
        isClosed = true
        sharedStart = 0
        sharedEnd = 0
        let h = handler
        handler = nil
        h?.connectionClosed()
        owner.connectionClosed(self)
    }
}
