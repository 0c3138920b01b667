import JSON
import NavGraph
import NavigationCore
import RPC

/// `open`, declared in `Protocol/methods/open.json`: its spec and param enum are
/// generated from that file.
enum OpenMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        let n: Navigator = server.navigator
        methods.register(.open, OpenParam.self) { call in
            call.answerOrRun { () throws(RPCError) in
                let p = try Params<OpenParam>(call)
                let url = try p.requiredString(.url, "the deep link to open, such as \"/product/42\" or \"shop://app/product/42\"")
                guard url.utf8.count <= Navigator.maxURLBytes else {
                    throw .limitExceeded("\"url\" is \(url.utf8.count) bytes; a deep link may be at most \(Navigator.maxURLBytes), as a web server's request line",
                                         limit: "url", max: Navigator.maxURLBytes)
                }
                var r = OpenRequest(state: try call.session(p), url: url)
                r.dryRun = try p.bool(.dryRun) ?? false
                r.ifVersion = try p.int(.ifVersion)
                r.force = try p.bool(.force) ?? false
                if let by = try p.string(.by) {
                    guard by == "push" else {
                        throw .invalidParams("`open` takes by: \"push\" (the link's last screen, pushed from the visible screen as navigate would) or no \"by\" (the link builds its whole stack); not \"\(by)\"", data: ["param": "by"])
                    }
                    r.pushesLastScreen = true
                }
                if let pop = p.value(.popUpTo) {
                    guard r.pushesLastScreen else {
                        throw .invalidParams("\"popUpTo\" goes with by: \"push\" (the link's last screen is pushed from the screen the pop leaves on top); without \"by\" the link builds its whole stack, replacing the one shown", data: ["param": "popUpTo"])
                    }
                    r.popUpTo = try popUpToParam(pop)
                }
                n.open(r, call)
            }
        }
    }
}
