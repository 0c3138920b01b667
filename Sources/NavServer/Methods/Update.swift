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
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<UpdateParam>(call)
                let state = try n.state(p.given(.session), for: call.client)
                let node = try p.requiredString(.node, "the id of the live screen whose params to change")
                guard let with = try p.objectParam(.with) else {
                    throw .invalidParams("`update` needs \"with\": the fields to merge into the screen's params (null removes one)", data: ["param": "with"])
                }
                let push = try p.bool(.push) ?? false
                do throws(NavError) { return try n.update(node, with: with, push: push, in: state, by: call.client) } catch { throw error.rpc }
            }
        }
    }
}
