import JSON
import NavGraph
import NavigationCore
import RPC

/// What several navigation methods decode alike. Each method's file (`Methods/<Name>.swift`) decodes
/// its params (read in place from the request) into the navigator's requests
/// (`Navigator/Requests.swift`) or arguments and gives the navigator's answer back. What is wrong
/// with a param's shape is answered there; what is wrong with it for the graph, the tree or the
/// limits, by the navigator.
enum NavigationParams {
    /// Refuses a value larger than `limit` bytes of JSON.
    static func checkSize(_ v: JSONValue, _ what: String, limit: Int, param: String) throws(RPCError) {
        let size = v.encodedSize
        if size > limit {
            throw .limitExceeded("\(what) is \(size) bytes of JSON; it may be at most \(limit)", limit: param, max: limit)
        }
    }
}

extension Call {
    /// Runs `body`, which answers the call itself (now or later), or answers the error it throws.
    @inline(__always)
    func answerOrRun(_ body: () throws(RPCError) -> Void) {
        do { try body() } catch { fail(error) }
    }
}

/// `popUpTo: {to, inclusive?}` (`navigate` and `open`).
func popUpToParam(_ pop: JSONValue) throws(RPCError) -> (to: String, inclusive: Bool) {
    guard let target = pop["to"]?.stringValue, pop.objectValue?.keys.allSatisfy({ $0 == "to" || $0 == "inclusive" }) == true else {
        throw .invalidParams("\"popUpTo\" must be {to: COORDINATOR_OR_NODE, inclusive?: bool}, like {\"to\": \"shop.Home\"}", data: ["param": "popUpTo"])
    }
    var inclusive = false
    if let i = pop["inclusive"] {
        guard case .bool(let b) = i else { throw .invalidParams("\"popUpTo.inclusive\" must be true or false", data: ["param": "popUpTo"]) }
        inclusive = b
    }
    return (target, inclusive)
}

/// Runs a navigator entry point (which throws only ``NavError``) where the methods layer answers:
/// its error as the JSON-RPC error it sends.
@inline(__always)
func asRPC<R>(_ body: () throws(NavError) -> R) throws(RPCError) -> R {
    do throws(NavError) { return try body() } catch { throw error.rpc }
}

extension NavigatorLimits {
    /// ``checkName(_:_:param:)`` as the methods layer answers it.
    func checkParamName(_ name: String, _ what: @autoclosure () -> String, param: String) throws(RPCError) {
        try asRPC { () throws(NavError) in try checkName(name, what(), param: param) }
    }
}
