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
    /// refused with `tooManyConnections` past `--max-connections`, or past `--max-connections-per-uid`
    /// for its uid (so that one user cannot take every slot).
    @discardableResult
    func attach(_ stream: any ClientStream) -> Connection? {
        let uid = stream.peerCredentials()?.uid ?? getuid()
        let refusal: (limit: String, message: String)?
        if connections.count >= config.maxConnections {
            refusal = ("--max-connections", "navd already serves \(config.maxConnections) connections (the --max-connections limit); try again later")
        } else if connectionsByUid[uid, default: 0] >= config.maxConnectionsPerUid {
            refusal = ("--max-connections-per-uid", "uid \(uid) already has \(config.maxConnectionsPerUid) connections to navd (the --max-connections-per-uid limit); close some first")
        } else {
            refusal = nil
        }
        if let refusal {
            stats.connectionsRefused += 1
            logger.warning("refusing a connection: \(refusal.limit) reached", metadata: ["navd.uid": "\(uid)"])
            var w = JSONWriter()
            RPCEncoder.error(id: .null, error: RPCError(.tooManyConnections, refusal.message, data: ["limit": .string(refusal.limit)]), into: &w)
            w.raw(UInt8(ascii: "\n"))
            w.bytes.withUnsafeBytes { stream.write($0) }
            drain(stream)
            return nil
        }
        connectionsByUid[uid, default: 0] += 1
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
        let uid = c.peer?.uid ?? getuid()
        let left = connectionsByUid[uid, default: 1] - 1
        connectionsByUid[uid] = left > 0 ? left : nil
        if isShuttingDown && connections.isEmpty && !commitInFlight { finishShutdown() }
    }

    func nextOutboundId() -> Int {
        outboundCounter += 1
        return outboundCounter
    }

    /// Whether replies must wait for the end of the iteration: commits not yet in the state file.
    var holdsReplies: Bool { commitInFlight || store.hasPendingWrites }

    func flushAll() {
        // While a store across the network writes a commit, nothing is read, handled or sent.
        if commitInFlight { return }
        if !readyInput.isEmpty { resumeReadyInput() }
        // Commits reach the state file before any reply or notification of this iteration leaves.
        if store.hasPendingWrites {
            if let shared = sharedStore {
                beginCommit(shared)
                return
            }
            do { try store.flush(graph: graph) } catch {
                logger.critical("cannot write the state file; stopping so that nothing unsaved is acknowledged", metadata: ["navd.error": "\(error)"])
                failure = "cannot write the state file: \(error)"
                for c in Array(connections.values) { c.close(reason: "navd cannot save its state") }
                dirty.removeAll()
                shutdown()
                return
            }
        }
        sendOutput()
    }

    /// Hands every connection's queued output to its stream.
    private func sendOutput() {
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

    // MARK: Commits written in the background

    /// Has the store write this iteration's commits; until it answers, connections are not read
    /// and their output waits (group commit: what arrives meanwhile goes into the next commit).
    private func beginCommit(_ shared: any SharedStore) {
        commitInFlight = true
        for c in connections.values { c.gateInput() }
        inputIdle?.stop()
        shared.beginFlush(graph: graph) { [unowned self] error in self.commitEnded(error) }
    }

    private func commitEnded(_ error: StateError?) {
        commitInFlight = false
        if let error {
            // Nothing of the commit is stored: no reply or notification that depends on it may
            // leave. Clients waiting for a reply are disconnected (they retry, keyed navigations
            // safely); subscribers lose the unsent notifications of versions that never were.
            logger.error("a commit was not stored; its clients are disconnected and its sessions read again", metadata: ["navd.error": "\(error)"])
            let batch = dirty
            dirty.removeAll()
            for c in batch {
                if c.hasOwnOutput { c.close(reason: "navd could not store the changes it was about to acknowledge") } else { c.dropSharedOutput() }
            }
            broadcastLog.removeAll(keepingAtMost: 1 << 20)
        }
        if let shared = sharedStore, shared.hasPendingWrites && failure == nil {
            // Changes made while the commit was written (a precondition ended): theirs go first
            // (not when navd stops on a fault: nothing more can be stored).
            beginCommit(shared)
            return
        }
        sendOutput()
        for c in Array(connections.values) { c.ungateInput() }
        if let idle = inputIdle { idle.start() }
        if isShuttingDown && connections.isEmpty { finishShutdown() }
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
