import Logging
import NavigationCore
import UV

/// The end of every loop iteration: the store writes the iteration's commits first, then the
/// transport sends what the iteration queued, so that nothing unsaved is acknowledged.
extension Server: DispatchHost {
    /// Whether replies must wait for the end of the iteration: commits not yet in the state file.
    var repliesWait: Bool { commitInFlight || store.hasPendingWrites }

    /// For an answer that may leave before the end of the iteration (a read that carried one
    /// request): writes the iteration's commits now when the store writes them itself without
    /// waiting on the disk (`--durability process`: a copy into the log's mapped segment, else one
    /// `write()`), so that the answer need not wait for the others of the iteration. False when it
    /// cannot: a commit in flight, a store that writes in the background or syncs each write
    /// (`full`), navd stopping.
    /// A write that fails is not retried: navd stops at the end of the iteration, nothing of it
    /// acknowledged.
    func saveCommitsNow() -> Bool {
        guard !commitInFlight, phase.isServing, stateFailedInRead == nil else { return false }
        guard store.hasPendingWrites else { return true }
        guard !store.flushesInBackground, !store.flushSyncs else { return false }
        do { try store.flush(graph: graph) } catch {
            stateFailedInRead = error
            return false
        }
        return !store.hasPendingWrites
    }

    func connectionClosed() { finishIfDone() }

    func streamsClosed() {
        if phase.isStopped { loop.stop() }
    }

    func flushAll() {
        // The iteration's mark is its own: taken now, whatever this iteration's end does. It was
        // made after the loop's wait (``markReset`` forgets marks before each poll: from a mark of
        // a callback that ran after the last iteration's end, an idle second's wait was counted as
        // a flush of 1,000 ms).
        let mark = loop.clockMark
        loop.clockMark = 0
        // While a store across the network writes a commit, nothing is read, handled or sent.
        if commitInFlight || phase.isStopped { return }
        if let error = stateFailedInRead { return stateFileFailed(error) }
        transport.handleReadyInput()
        // What follows the reads is timed for the slow log (the reads are, each on its own), from
        // the end of the iteration's last read or timed callback when there was one.
        let started = loop.stallWatch == nil ? 0 : loop.clockMark != 0 ? loop.clockMark : mark != 0 ? mark : EventLoop.hrtime
        var stored = false, sliced = false
        defer { if started != 0 { flushTimed(since: started, stored: stored, sliced: sliced) } }
        // Commits reach the state file before any reply or notification of this iteration leaves.
        if store.hasPendingWrites {
            stored = true
            if store.flushesInBackground {
                beginCommit()
                return
            }
            // `full`: a write waits for the disk; while more requests are ready to be read, one more
            // turn of the loop lets them join this group (a few turns at most).
            if store.flushSyncs && gatheredTurns < 4 && phase.isServing && loop.hasReadyEvents {
                gatheredTurns += 1
                return
            }
            gatheredTurns = 0
            do { try store.flush(graph: graph) } catch {
                return stateFileFailed(error)
            }
        }
        transport.flush()
        if store.hasBackgroundWork {
            sliced = true
            storeSlice()
        }
    }

    /// The end of an iteration that started at `started` held the loop: kept in the slow log when
    /// it took `--slowlog-threshold` or more, with what it did.
    @inline(__always)
    private func flushTimed(since started: UInt64, stored: Bool, sliced: Bool) {
        loop.clockMark = 0
        let ns = EventLoop.hrtime &- started
        guard let watch = loop.stallWatch, ns >= watch.thresholdNs else { return }
        let what = ((stored ? ["commits stored"] : []) + ["output written"] + (sliced ? ["a slice of the store's background work"] : []))
        dispatcher.noteStall(Handle.Label(kind: "flush", what: what.joined(separator: ", ")), ns: ns)
    }

    /// The state file could not be written: navd stops, so that nothing unsaved is acknowledged.
    private func stateFileFailed(_ error: StateError) {
        logger.critical("cannot write the state file; stopping so that nothing unsaved is acknowledged", metadata: ["navd.error": "\(error)"])
        stop(.stateFileFailed("\(error)"))
    }

    /// One slice of the store's background work, after this iteration's replies left; while more
    /// remains the loop keeps turning (an idle handle), so that it ends without waiting for traffic.
    private func storeSlice() {
        do { try store.backgroundSlice(graph: graph) } catch {
            return stateFileFailed(error)
        }
        if store.hasBackgroundWork {
            if storeWork == nil { storeWork = Idle(loop: loop) }
            storeWork?.start()
        } else {
            storeWork?.stop()
        }
    }

    // MARK: Commits written in the background

    /// Has the store write this iteration's commits; until it answers, connections are not read
    /// and their output waits (group commit: what arrives meanwhile goes into the next commit).
    private func beginCommit() {
        commitInFlight = true
        transport.holdOutput()
        store.beginFlush(graph: graph) { [unowned self] error in self.commitEnded(error) }
    }

    private func commitEnded(_ error: StateError?) {
        commitInFlight = false
        if let error {
            // Nothing of the commit is stored: no reply or notification that depends on it may leave.
            logger.error("a commit was not stored; its clients are disconnected and its sessions read again", metadata: ["navd.error": "\(error)"])
            navigator.notificationsDropped(for: transport.dropHeldOutput())
        }
        if store.hasPendingWrites && !(phase.cause?.isFault ?? false) {
            // Changes made while the commit was written (a precondition ended): theirs go first
            // (not when navd stops on a fault: nothing more can be stored).
            beginCommit()
            return
        }
        transport.releaseOutput()
        finishIfDone()
    }
}
