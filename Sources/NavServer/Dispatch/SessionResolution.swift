import JSON
import NavGraph
import NavigationCore
import RPC
import Unchecked

/// The sessions served here, as dispatch finds them for a call (the navigator's table).
protocol SessionSource: AnyObject {
    /// The session `name`, or `unknownTarget` naming it.
    func session(named name: String) throws(NavError) -> SessionState
    /// Whether `name` is served here (cluster mode asks before locating it elsewhere).
    func serves(_ name: String) -> Bool
}

/// What decoding a method's params reads besides the params: the graph's names and the
/// navigator's limits. The dispatcher holds the current one (replaced when
/// the graph is) and hands it to each call (``Call/decoding``): decoding never asks the navigator.
final class DecodingContext {
    let graph: NavigationGraph
    let limits: NavigatorLimits

    init(graph: NavigationGraph, limits: NavigatorLimits) {
        self.graph = graph
        self.limits = limits
    }

    /// The coordinator a string param names by its bytes (a string is made only for a message).
    @inline(__always)
    func coordinatorIndex(named name: ByteView) -> Int? { graph.coordinatorIndex(named: name) }

    /// The same context for `graph` (a reload).
    func with(graph: NavigationGraph) -> DecodingContext { DecodingContext(graph: graph, limits: limits) }

    /// Refuses a name the limits do not allow (``NavigatorLimits/checkName(_:_:param:)``).
    func checkName(_ name: String, _ what: @autoclosure () -> String, param: String) throws(RPCError) {
        try limits.checkParamName(name, what(), param: param)
    }
}

extension Call {
    /// What decoding this call's params reads besides them (``DecodingContext``).
    var decoding: DecodingContext { withClient { $0.dispatcher.decoding } }

    /// The session the call names, as its method's spec declares (``MethodTable/SessionUse``: the
    /// first of its session params given, else `main`). Dispatch located it already (cluster
    /// mode: here, or the call was answered `moved` or handed to the method's remote handler).
    @inline(__always)
    func session<P: ParamName>(_ p: Params<P>) throws(RPCError) -> SessionState {
        try lent { peer, entry in
            Result { () throws(RPCError) in
                var given: JSONView?
                for i in entry.sessionParams {
                    guard let v = p.given(at: i) else { continue }
                    guard v.kind == .string else { throw Params<P>.wrong(entry.spec.params[i], "a string", v) }
                    given = v
                    break
                }
                return try peer.dispatcher.session(given, for: peer)
            }
        }.get()
    }
}

extension Dispatcher {
    /// The session a string param names (absent: `main`), found among those served
    /// (``SessionSource``); the client's last session is matched by its bytes first, without
    /// making a string.
    func session(_ given: JSONView?, for c: Peer) throws(RPCError) -> SessionState {
        if let cached = c.lastSession, !cached.isClosed {
            if let v = given {
                if cached.isNamed(v.stringBytes) { return cached }
            } else if cached.session.name == "main" {
                return cached
            }
        }
        let name = given?.string ?? "main"
        guard let sessions else { throw RPCError(.internalError, "no sessions are served") }
        let s = try asRPC { () throws(NavError) in try sessions.session(named: name) }
        c.lastSession = s
        return s
    }
}
