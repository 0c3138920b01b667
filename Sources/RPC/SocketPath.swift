#if canImport(Glibc)
import Glibc
#endif

/// Where navd listens when `--socket` names nothing, as the contract says: `$XDG_RUNTIME_DIR/navd.sock`,
/// else `/tmp/navd-<uid>.sock`. Declared once here for navd and every client (clients put
/// `$NAVD_SOCKET` first, navd `--socket`).
public enum SocketPath {
    /// The default path for `environment`. An `XDG_RUNTIME_DIR` that is empty or relative is not
    /// a runtime directory (the XDG base directory specification says to ignore it): a relative one
    /// would put navd's socket wherever navd and each client happen to start.
    public static func defaultPath(environment: [String: String], uid: uid_t = getuid()) -> String {
        if let dir = environment["XDG_RUNTIME_DIR"], dir.hasPrefix("/") { return dir + "/navd.sock" }
        return "/tmp/navd-\(uid).sock"
    }

    /// A client's path: `explicit` (its `--socket`), else `$NAVD_SOCKET`, else ``defaultPath(environment:uid:)``.
    public static func clientPath(explicit: String?, environment: [String: String]) -> String {
        if let explicit { return explicit }
        if let s = environment["NAVD_SOCKET"], !s.isEmpty { return s }
        return defaultPath(environment: environment)
    }
}
