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
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<LinkResolveParam>(call)
                let state = try n.state(p.given(.session), for: call.client)
                let node = try p.string(.node)
                do throws(NavError) { return try n.resolveLink(node, in: state) } catch { throw error.rpc }
            }
        }
    }
}
