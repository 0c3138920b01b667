/// Why navd stops.
public enum StopCause: Equatable, Sendable, CustomStringConvertible {
    /// SIGTERM or SIGINT.
    case signal(Int32)
    /// ``Server/shutdown()`` was called (an embedding program, a test).
    case asked
    /// The state file could not be written: nothing unsaved may be acknowledged.
    case stateFileFailed(String)
    /// Another process took this node's registration in the shared store.
    case leaseLost(String)

    /// A fault, not a request: the process exits with a non-zero status so that a supervisor restarts it.
    public var isFault: Bool {
        switch self {
        case .signal, .asked: false
        case .stateFileFailed, .leaseLost: true
        }
    }

    public var description: String {
        switch self {
        case .signal(let s): "signal \(s)"
        case .asked: "asked to stop"
        case .stateFileFailed(let why): "cannot write the state file: \(why)"
        case .leaseLost(let why): "lost the cluster lease: \(why)"
        }
    }
}

/// Where the server is in its life. Every way of stopping (a signal, a store that cannot write, a
/// lost lease, a call) goes through ``Server/stop(_:)``, and every callback the loop makes into the
/// server (a signal, the end of an iteration, a commit's answer, the shared store's news, a closed
/// connection or stream) asks the phase before it acts.
public enum ServerPhase: Equatable, Sendable {
    /// Accepting connections and serving requests.
    case serving
    /// No new connection; the connections write what they have and close; a commit being stored
    /// ends first. Nothing new is taken from the shared store.
    case stopping(StopCause)
    /// Every connection closed, the store flushed and closed, the handlers released: only the last
    /// output of closed connections may still drain before the loop stops.
    case stopped(StopCause)

    var cause: StopCause? {
        switch self {
        case .serving: nil
        case .stopping(let c), .stopped(let c): c
        }
    }

    var isServing: Bool { self == .serving }
    var isStopped: Bool { if case .stopped = self { true } else { false } }
}
