import JSON
import NavGraph
import RPC

/// `graph.export {format?}`: the graph navd serves now, for a front-end to draw (nav-web's picture,
/// redrawn on `graphReloaded`). Declared in `Protocol/methods/graph.export.json` (its spec and
/// ``GraphExportParam`` are generated from it); decoded into a ``Request``, answered from the graph.
enum GraphExportMethod: NavdMethod {
    /// How the graph is written.
    enum Format: String, CaseIterable, Sendable {
        /// graphviz's language, as `navd graph` draws a directory's.
        case dot
        /// `graph.describe`'s object (`navd graph --format json`).
        case json
    }

    struct Request: Equatable, Sendable {
        var format: Format = .dot
    }

    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.graphExport, GraphExportParam.self) { [server] call in
            call.answer { () throws(RPCError) -> JSONText in
                let request = try decode(Params(call))
                return server.graphAnswer("export." + request.format.rawValue) { answer(request, graph: $0) }
            }
        }
    }

    static func decode(_ p: Params<GraphExportParam>) throws(RPCError) -> Request {
        try p.acceptUnused(.session)
        guard let name = try p.string(.format) else { return Request() }
        guard let format = Format(rawValue: name) else {
            let known = Format.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or ")
            throw .invalidParams("`graph.export` writes the graph as \(known); \"\(name.prefix(40))\" is not a format it knows",
                                 data: ["param": "format"])
        }
        return Request(format: format)
    }

    static func answer(_ request: Request, graph: NavigationGraph) -> JSONValue {
        switch request.format {
        case .dot: return ["format": "dot", "graph": .string(graph.dot())]
        case .json: return ["format": "json", "graph": graph.describe()]
        }
    }
}
