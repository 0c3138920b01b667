import JSON
import NavGraph
import NavigationCore
import RPC

/// `provide`, declared in `Protocol/methods/provide.json`: its spec and param enum are
/// generated from that file.
enum ProvideMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.provide, ProvideParam.self) { call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<ProvideParam>(call)
                let asked = try p.stringArray(.preconditions) ?? []
                let names = try asRPC { () throws(NavError) in try n.provide(asked, by: call.client) }
                return ["ok": true, "preconditions": .array(names.map(JSONValue.string))]
            }
        }
    }
}
