import JSON
import NavGraph
import NavigationCore
import RPC

/// `update`, declared in `Protocol/methods/update.json`: its spec and param enum are
/// generated from that file.
enum UpdateMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.update, UpdateParam.self) { call in
            call.answer { () throws(RPCError) -> Updated in
                let p = try Params<UpdateParam>(call)
                let r = try decode(p, state: call.session(p))
                return try asRPC { () throws(NavError) in try n.update(r, by: call.client) }
            }
        }
    }

    static func decode(_ p: Params<UpdateParam>, state: SessionState) throws(RPCError) -> UpdateRequest {
        let node = try p.requiredString(.node, "the id of the live screen whose params to change")
        guard let with = try p.objectParam(.with) else {
            throw .invalidParams("`update` needs \"with\": the fields to merge into the screen's params (null removes one)", data: ["param": "with"])
        }
        return UpdateRequest(state: state, node: node, with: with, push: try p.bool(.push) ?? false)
    }
}
