import Glibc
import JSON
import RPC
import UV

/// `state.backup`: a copy of the state files as they are at the request (a snapshot and its logs:
/// what a `kill -9` at that moment would leave, which navd restores), written beside them on
/// libuv's thread pool while the loop goes on serving, each file synced, as Redis's `BGSAVE`
/// writes its dump beside the running server. The snapshot is brought up to date first (its
/// write-ahead log copied in) and SQLite writes only its write-ahead log until the copy is done;
/// the logs are only ever appended to, and their bytes up to that moment are copied.
/// Why a backup could not start: `data.reason` (`stateFileBusy`, `readFailed`, `writeFailed`) and
/// the message.
struct BackupRefusal: Error {
    let reason: String
    let message: String
}

final class StateBackup {
    /// When it was asked (the loop's clock, ms).
    let startedAt: UInt64
    let answer: any Answer
    init(startedAt: UInt64, answer: any Answer) {
        self.startedAt = startedAt
        self.answer = answer
    }
}

extension Server {
    /// Starts a backup of the state files for `answer` (which it answers when the files are
    /// written), or answers why not.
    func backupState(_ answer: any Answer) {
        guard let file = store as? LogStore else {
            let why = !store.writesNothing
                ? "this navd keeps its sessions in PostgreSQL (--store), not in a state file: back them up with PostgreSQL's own tools (pg_dump)"
                : "this navd keeps no state file (--ephemeral): there is nothing to back up; start it with --state PATH (or without --ephemeral) to keep sessions"
            return answer.fail(RPCError(.unavailable, why, data: ["reason": "noStateFile"]))
        }
        if let running = backup {
            return answer.fail(.limitExceeded("a backup of the state files is being written (asked \(loop.now &- running.startedAt) ms ago); its reply comes when it is done: ask again after it",
                                              limit: "backupsAtOnce", max: 1))
        }
        let base = file.snapshot.path + ".backup-" + LogStore.stamp(milliseconds: true)
        let files: [EventLoop.FileCopy]
        do throws(BackupRefusal) {
            files = try file.backupFiles(to: base)
        } catch {
            return answer.fail(RPCError(.unavailable, "cannot back up the state files: \(error.message)", data: ["reason": .string(error.reason)]))
        }
        let b = StateBackup(startedAt: loop.now, answer: answer)
        backup = b
        logger.info("state backup started", metadata: ["navd.backup": "\(base)"])
        loop.copyInBackground(files, syncing: StateFiles.directory(of: base)) { [unowned self] result in
            file.backupDone()
            self.backup = nil
            let ms = Int(self.loop.now &- b.startedAt)
            switch result {
            case .success:
                let bytes = files.reduce(0) { $0 + $1.length }
                logger.info("state backup written", metadata: ["navd.backup": "\(base)", "navd.bytes": "\(bytes)", "navd.ms": "\(ms)"])
                b.answer.succeed(["state": .string(base), "files": .array(files.map { .string($0.destination) }),
                                  "bytes": .int(bytes), "ms": .int(ms)])
            case .failure(let f):
                let what = f.file ?? StateFiles.directory(of: base)
                let why = "cannot write the backup \(what): \(String(cString: strerror(f.error))); nothing of it is left"
                logger.error("state backup failed", metadata: ["navd.backup": "\(base)", "navd.error": "\(why)"])
                b.answer.fail(RPCError(.unavailable, why, data: ["reason": "writeFailed"]))
            }
            self.finishIfDone()
        }
    }
}
