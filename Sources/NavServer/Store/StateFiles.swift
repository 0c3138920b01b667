#if canImport(Glibc)
import Glibc
#endif

/// The state file and the files beside it are navd's own, as its socket is: before any is opened,
/// each that exists must be a regular file (not a symbolic link) of navd's uid that nobody else may
/// write, in a directory of navd's uid (or root's) that nobody else may write. Otherwise another
/// user could have planted one for navd to read (a log replayed into sessions) or could read and
/// change what navd writes. navd makes its files 0600 and its own directory 0700.
public enum StateFiles {
    /// Closes a descriptor on the calling thread: how a file navd is done with (a compacted log, a
    /// replaced coverage file) is closed when nothing else is asked, and once the loop may not turn
    /// again. While it turns, the server closes them on libuv's thread pool instead
    /// (``EventLoop/closeInBackground(_:)``), where freeing a large file does not hold it.
    static let closeHere: @Sendable (Int32) -> Void = { _ = Glibc.close($0) }

    /// The files a state file `path` brings: the SQLite snapshot and its journal, the log, a log
    /// whose compaction a crash cut short, a new log not yet renamed into place, the next log made
    /// ahead (`full` durability).
    public static func all(_ path: String) -> [String] {
        [path, path + "-wal", path + "-shm", path + "-journal", path + ".log", path + ".log.old", path + ".log.new", path + ".log.spare",
         path + ".coverage", path + ".coverage.new"]
    }

    /// The directory `path` is in.
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Refuses `path`'s directory or any of its files that another user owns or may write; one line saying why.
    public static func check(_ path: String, uid: uid_t = getuid()) throws(StateError) {
        if path.hasSuffix("/") { throw directoryGiven(path) }
        let dir = directory(of: path)
        var st = stat()
        guard stat(dir, &st) == 0 else {
            throw StateError(description: "the state file's directory \(dir) cannot be read: \(String(cString: strerror(errno))); create it (mkdir -m 700 \(dir)) or give another --state PATH")
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw StateError(description: "\(dir) is not a directory; give --state a path in a directory") }
        if st.st_uid != uid && st.st_uid != 0 {
            throw StateError(description: "the state file's directory \(dir) belongs to uid \(st.st_uid), not to navd's uid \(uid): its owner could replace navd's files; use a directory of your own (the default is $XDG_STATE_HOME/navd)")
        }
        if st.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            throw StateError(description: "the state file's directory \(dir) is writable by other users (mode \(octal(st.st_mode & 0o7777))): they could plant files navd would read as its own; use a directory only you may write (chmod go-w \(dir), or the default $XDG_STATE_HOME/navd)")
        }
        for file in all(path) {
            guard lstat(file, &st) == 0 else {
                if errno == ENOENT { continue }
                throw StateError(description: "cannot read \(file): \(String(cString: strerror(errno)))")
            }
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                if file == path, (st.st_mode & S_IFMT) == S_IFDIR { throw directoryGiven(path) }
                let what = (st.st_mode & S_IFMT) == S_IFLNK ? "a symbolic link" : "not a regular file"
                throw StateError(description: "\(file) is \(what): navd reads and writes its state files only as regular files of its own; remove it")
            }
            if st.st_uid != uid {
                throw StateError(description: "\(file) belongs to uid \(st.st_uid), not to navd's uid \(uid): navd does not read state files another user made (they could put sessions and facts in it, or read navd's); remove it, or give another --state PATH")
            }
            if st.st_mode & (S_IWGRP | S_IWOTH) != 0 {
                throw StateError(description: "\(file) is writable by other users (mode \(octal(st.st_mode & 0o7777))): what is in it cannot be trusted; check it, then chmod 600 \(file)")
            }
        }
    }

    /// A directory given where the state file's own path belongs (`--state /var/lib/navd`).
    private static func directoryGiven(_ path: String) -> StateError {
        let dir = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        return StateError(description: "\(path) is a directory: --state takes the path of navd's state file, which navd creates, such as --state \(dir == "/" ? "" : dir)/navd.sqlite (its log and journal go beside it, in that directory)")
    }

    private static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }
}
