import JSON
import Logging
import NavGraph
import NavigationCore
import RPC
import UV
#if canImport(Glibc)
import Glibc
#endif

/// Connections: accepting them, flushing their output once per loop iteration, and draining the
/// streams of closed ones.
extension Server {
    // MARK: Connections

    func accept(_ listener: PipeListener) {
        guard let stream = try? listener.accept() else { return }
        attach(stream)
    }

    /// Serves a client on `stream` (a socket navd accepted, or a ``MemoryStream`` in a test):
    /// refused with `tooManyConnections` past `--max-connections`.
    @discardableResult
    func attach(_ stream: any ClientStream) -> Connection? {
        if connections.count >= config.maxConnections {
            stats.connectionsRefused += 1
            logger.warning("refusing a connection: --max-connections reached",
                           metadata: ["navd.limit": "\(config.maxConnections)"])
            var w = JSONWriter()
            RPCEncoder.error(id: .null, error: RPCError(.tooManyConnections, "navd already serves \(config.maxConnections) connections (the --max-connections limit); try again later"),
                into: &w)
            w.raw(UInt8(ascii: "\n"))
            w.bytes.withUnsafeBytes { stream.write($0) }
            drain(stream)
            return nil
        }
        let c = Connection(id: nextConnectionId, server: self, stream: stream)
        nextConnectionId += 1
        c.roles = policy.roles(uid: c.peer?.uid, token: nil)
        connections[c.id] = c
        stats.connectionsAccepted += 1
        c.start()
        return c
    }

    func connectionClosed(_ c: Connection) {
        connections[c.id] = nil
        if isShuttingDown && connections.isEmpty { finishShutdown() }
    }

    func nextOutboundId() -> Int {
        outboundCounter += 1
        return outboundCounter
    }

    /// Whether replies must wait for the end of the iteration: commits not yet in the state file.
    var holdsReplies: Bool { store.hasPendingWrites }

    func flushAll() {
        if !readyInput.isEmpty { resumeReadyInput() }
        // Commits reach the state file before any reply or notification of this iteration leaves.
        if store.hasPendingWrites {
            do { try store.flush(graph: graph) } catch {
                logger.critical("cannot write the state file; stopping so that nothing unsaved is acknowledged", metadata: ["navd.error": "\(error)"])
                failure = "cannot write the state file: \(error)"
                for c in Array(connections.values) { c.close(reason: "navd cannot save its state") }
                dirty.removeAll()
                shutdown()
                return
            }
        }
        if !dirty.isEmpty {
            let batch = dirty
            dirty.removeAll(keepingCapacity: true)
            // Connections with replies first, then those that only have notifications: a requester
            // gets its answers (and can send its next requests) while the notifications are written.
            for c in batch where c.hasOwnOutput { c.flush() }
            for c in batch { c.flush() }
        }
        // Every connection that referred to the log was dirty and has just been flushed.
        broadcastLog.removeAll(keepingAtMost: 1 << 20)
    }

    // MARK: Closing streams

    /// How long a closed connection's last output may wait for its client to read it: 500 ms while
    /// navd shuts down (clients that never read must not hold the exit back), else 5 s.
    var drainTimeoutMs: UInt64 { isShuttingDown ? 500 : 5_000 }

    /// Shuts `stream` down after its queued writes, closing it outright if they are not read in time.
    func drain(_ stream: any ClientStream) {
        let id = ObjectIdentifier(stream)
        let timer = Timer(loop: loop)
        drainingStreams[id] = (stream, timer)
        timer.start(milliseconds: drainTimeoutMs) { [unowned self] in
            stream.close { [unowned self] in self.streamClosed(id) }
        }
        stream.shutdownAndClose { [unowned self] in self.streamClosed(id) }
    }

    func streamClosed(_ id: ObjectIdentifier) {
        guard let entry = drainingStreams.removeValue(forKey: id) else { return }
        entry.timer.close()
        if shutdownFinished && drainingStreams.isEmpty { loop.stop() }
    }
}
