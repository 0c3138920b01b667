import JSON
import Logging
import NavGraph
import NavigationCore
import RPC
import UV
#if canImport(Glibc)
import Glibc
#endif

/// Held input and output limits: a client whose output passes its mark stops being read, one that
/// holds too much is disconnected, half-sent messages time out.
extension Server {
    // MARK: Held input and output limits

    /// A connection holds input: it is handled next iteration if the connection's output is below
    /// its mark (or a batch waits for its next slice); otherwise when its output drains.
    func inputHeld(_ c: Connection) {
        guard !c.queuedForInput, !c.isClosed, c.pendingBatch != nil || c.unsentBytes <= c.pauseMark else { return }
        c.queuedForInput = true
        readyInput.append(c)
        if inputIdle == nil {
            let idle = Idle(loop: loop)
            idle.start()
            inputIdle = idle
        }
    }

    func resumeReadyInput() {
        let ready = readyInput
        readyInput.removeAll()
        for c in ready {
            c.queuedForInput = false
            c.resumeInput()
        }
        if readyInput.isEmpty, let idle = inputIdle {
            idle.close()
            inputIdle = nil
        }
    }

    /// `c` has output queued in its stream: if all clients together hold more than
    /// `--max-total-output`, those holding the most are disconnected until they hold less.
    func outputQueued(_ c: Connection) {
        backlogged[ObjectIdentifier(c)] = c
        var total = backlogged.values.reduce(0) { $0 + $1.unsentBytes }
        while total > config.maxTotalOutput, let worst = backlogged.values.max(by: { $0.unsentBytes < $1.unsentBytes }) {
            total -= worst.unsentBytes
            backlogged[ObjectIdentifier(worst)] = nil
            logger.warning("disconnecting the client holding the most unsent output: all clients together passed --max-total-output",
                           metadata: ["navd.client": "\(worst.id)", "navd.limit": "\(config.maxTotalOutput)"])
            worst.overflow()
        }
    }

    func outputDrained(_ c: Connection) { backlogged[ObjectIdentifier(c)] = nil }

    /// Disconnects clients that left part of a message unsent for longer than `--message-timeout`.
    func sweepPartialMessages() {
        let now = loop.now
        for c in Array(connections.values) where c.partialSince != 0 && now - c.partialSince >= config.messageTimeoutMs {
            logger.info("closing a connection that left part of a message unsent", metadata: ["navd.client": "\(c.id)"])
            var w = JSONWriter()
            RPCEncoder.error(id: .null, error: .invalidRequest(
                "part of a message waited \(formatMs(config.messageTimeoutMs)) for its rest (the --message-timeout limit); end every message with a newline, or send the Content-Length bytes you announced; the connection will close",
                kind: .messageTimeout, data: ["limit": .int(Int(config.messageTimeoutMs))]), into: &w)
            c.sendFramed(w.bytes, c.lastFraming)
            c.closeAfterFlush()
        }
    }
}
