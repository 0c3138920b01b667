import JSON
import NavGraph
import NavigationCore
import RPC

/// `link.resolve`, declared in `Protocol/methods/link.resolve.json`: its spec and param enum are
/// generated from that file.
enum LinkResolveMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.linkResolve, LinkResolveParam.self) { call in
            call.answer { () throws(RPCError) -> ResolvedLink in
                let p = try Params<LinkResolveParam>(call)
                let r = LinkResolveRequest(state: try call.session(p), node: try p.string(.node))
                return try asRPC { () throws(NavError) in try n.resolveLink(r) }
            }
        }
    }
}
