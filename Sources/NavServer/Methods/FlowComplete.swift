import JSON
import NavGraph
import NavigationCore
import RPC

/// `flowComplete`, declared in `Protocol/methods/flowComplete.json`: its spec and param enum are
/// generated from that file.
enum FlowCompleteMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.flowComplete, FlowCompleteParam.self) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<FlowCompleteParam>(call)
                let state = try call.session(p)
                let flow = try p.requiredString(.flow, "the id of the flow node to complete")
                n.flowComplete(FlowCompleteRequest(state: state, flow: flow, outcome: try outcome(p)), call)
            }
        }
    }

    /// `flowComplete`'s one outcome: `result`, `error` ({message, data?}) or `cancelled: true`.
    static func outcome(_ p: Params<FlowCompleteParam>) throws(RPCError) -> Session.FlowOutcome {
        let given = ([.result, .error, .cancelled] as [FlowCompleteParam]).filter { p.has($0) }.map { "\($0)" }
        guard given.count == 1 else {
            throw .invalidParams("`flowComplete` needs exactly one of \"result\", \"error\" ({message, data?}) or \"cancelled\": true; got \(given.isEmpty ? "none" : given.joined(separator: ", "))",
                                 data: ["param": "result"])
        }
        switch given[0] {
        case "result": return .result(p.value(.result)!)
        case "error":
            guard let e = try p.objectParam(.error), e["message"]?.stringValue != nil else {
                throw .invalidParams("\"error\" must be an object {message: string, data?: any}", data: ["param": "error"])
            }
            return .error(.object(e))
        default:
            guard try p.bool(.cancelled) == true else { throw .invalidParams("\"cancelled\" must be true", data: ["param": "cancelled"]) }
            return .cancelled
        }
    }
}
