import JSON
import Logging
import RPC
import UV
import Unchecked
#if canImport(Glibc)
import Glibc
#endif

/// A connection's output: coalesced answers and notifications (shared ones written from the
/// broadcast log itself), the flush once per loop iteration, input gated while a commit is
/// awaited, and what waits for the output to drain.
extension Connection {
    // MARK: Output

    /// Queues one complete message body with `framing`.
    func sendFramed(_ body: [UInt8], _ framing: Framing) {
        guard !isClosed else { return }
        if sharedEnd > sharedStart { copyShared() }
        body.withUnsafeBytes { Framing.append(ByteView($0), framing, to: output) }
        markDirty()
    }

    /// Queues one message of `size` bytes that `write` appends straight into the output buffer.
    func sendFramed(size: Int, _ framing: Framing, _ write: (ByteBuffer) -> Void) {
        guard !isClosed else { return }
        if sharedEnd > sharedStart { copyShared() }
        Framing.append(size: size, framing, to: output, write)
        markDirty()
    }

    /// Encodes one message straight into the output buffer (newline framing: no scratch buffer, no
    /// copy), or through a scratch buffer when `Content-Length` needs the length first. Answers the
    /// bytes it added; one message larger than `--max-output` is taken back (``deliver``
    /// answers an error instead) rather than disconnect the client.
    @discardableResult
    func send(_ framing: Framing, _ encode: (inout JSONWriter) -> Void) -> Int {
        guard !isClosed else { return 0 }
        if sharedEnd > sharedStart { copyShared() }
        let start = output.count
        if framing.isNewline {
            encode(&outputWriter)
            output.append(UInt8(ascii: "\n"))
        } else {
            var w = JSONWriter(capacity: 128)
            encode(&w)
            w.buffer.withUnsafeBytes { Framing.append(ByteView($0), framing, to: output) }
        }
        let size = output.count - start
        if size > owner.limits.maxOutput {
            output.truncate(to: start)
            return size
        }
        markDirty()
        return size
    }

    /// Queues bytes already framed.
    func sendRaw(_ framed: ByteView) {
        guard !isClosed else { return }
        if sharedEnd > sharedStart { copyShared() }
        output.append(contentsOf: framed.raw)
        markDirty()
    }

    /// Queues the framed notification at `start..<end` of the set's broadcast log, by reference.
    func sendShared(_ start: Int, _ end: Int) {
        guard !isClosed else { return }
        if sharedEnd == sharedStart {
            sharedStart = start
        } else if sharedEnd != start {
            copyShared()
            sharedStart = start
        }
        sharedEnd = end
        markDirty()
    }

    /// Moves the shared range into `output` (something else is sent after it).
    private func copyShared() {
        owner.broadcastLog.withByteView { log in output.append(contentsOf: log.bytes(sharedStart..<sharedEnd)) }
        sharedStart = 0
        sharedEnd = 0
    }

    /// Notes output to flush: the connection joins the iteration's list of them (``ConnectionSet/dirty``),
    /// or, while its own read is handled, joins it when the read ends, unless its answer left at once.
    func markDirty() {
        if unsentOver(owner.limits.maxOutput) {
            overflow()
            return
        }
        if !isDirty {
            isDirty = true
            if !reading { owner.dirty.append(self) }
        }
    }

    func overflow() {
        owner.stats.slowClientsDropped += 1
        owner.logger.warning(
            "disconnecting a client that does not read its output",
            metadata: ["navd.client": "\(id)", "navd.limit": "\(owner.limits.maxOutput)",
                       "navd.pending": "\(output.count + (sharedEnd - sharedStart) + queuedBytes)"])
        output.removeAll(keepingAtMost: 64 * 1024)
        sharedStart = 0
        sharedEnd = 0
        close(reason: "output exceeded --max-output")
    }

    /// Whether output of its own (replies; notifications sent with them) waits, not only shared ones.
    var hasOwnOutput: Bool { !output.isEmpty }

    // MARK: Waiting for a commit

    func gateInput() {
        guard !gated, !isClosed else { return }
        gated = true
        if !readPaused && !holdsInput && !peerDone { stream.pauseReading() }
    }

    func ungateInput() {
        guard gated else { return }
        gated = false
        if !isClosed && !readPaused && !holdsInput && !peerDone { stream.resumeReading() }
    }

    /// Forgets the notifications shared with other subscribers that are not sent yet (their commit
    /// was not stored).
    func dropSharedOutput() {
        sharedStart = 0
        sharedEnd = 0
        isDirty = false
    }

    /// Hands the coalesced output to the stream (one write per loop iteration).
    func flush() {
        if owner.outputHeld {
            // Nothing leaves before the commit it may depend on is stored.
            if !isDirty && !isClosed {
                isDirty = true
                owner.dirty.append(self)
            }
            return
        }
        isDirty = false
        defer {
            if closesAfterFlush && !isClosed {
                closesAfterFlush = false
                closeAfterFlush()
            }
        }
        let shared = sharedEnd - sharedStart
        guard !isClosed, !output.isEmpty || shared > 0 else { return }
        owner.stats.bytesOut += output.count + shared
        if shared > 0 {
            owner.broadcastLog.withByteView { log in
                output.withByteView { own in write(own, log.bytes(sharedStart..<sharedEnd)) }
            }
            sharedStart = 0
            sharedEnd = 0
        } else {
            output.withUnsafeBytes { write(ByteView($0)) }
        }
        output.removeAll(keepingAtMost: 64 * 1024)
        let queued = queuedBytes
        queuedBound = queued
        if queued > owner.limits.maxOutput {
            overflow()
        } else if queued > pauseMark {
            if !readPaused {
                readPaused = true
                stream.pauseReading()
            }
        } else if holdsInput {
            owner.inputHeld(self)  // written at once: nothing will drain, so resume from here
        }
        if queued > 0 { owner.outputQueued(self) }
    }

    /// Runs `body` once, when the client has read all its output (at once if it has).
    func whenDrained(_ body: @escaping () -> Void) {
        if unsentBytes == 0 { return body() }
        drainHooks.append(body)
    }

    /// Whether this client holds more unread output than its mark (it reads slower than it is sent).
    var isBackedUp: Bool { unsentOver(pauseMark) }

    func drained() {
        guard !isClosed else { return }
        if !drainHooks.isEmpty {
            let hooks = drainHooks
            drainHooks = []
            for h in hooks { h() }
        }
        owner.outputDrained(self)
        if readPaused {
            readPaused = false
            if !holdsInput && !gated { stream.resumeReading() }
        }
        if holdsInput { owner.inputHeld(self) }
    }
}
