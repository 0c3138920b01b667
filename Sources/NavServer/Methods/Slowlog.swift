import JSON
import RPC

/// `slowlog.get`, declared in `Protocol/methods/slowlog.get.json`: the reads that held the loop
/// longest (``SlowLog``), newest first, as Redis's `SLOWLOG GET`. Its role, `admin`, is declared with
/// it: an entry names another client's connection.
enum SlowlogGetMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.slowlogGet, SlowlogGetParam.self) { [server] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<SlowlogGetParam>(call)
                try p.acceptUnused(.session)
                let log = server.dispatcher.slowlog
                let limit = try p.int(.limit) ?? max(log.maxLen, 1)
                guard limit >= 1 else {
                    throw .invalidParams("`slowlog.get`'s \"limit\" is \(limit); give 1 or more entries (at most \(log.maxLen) are kept, --slowlog-max-len)", data: ["param": "limit"])
                }
                return [
                    "entries": .array(log.newest(limit).map(SlowLog.object)), "kept": .int(log.count), "total": .int(log.total),
                    "thresholdMs": .double(Double(log.thresholdNs / 1_000) / 1_000), "maxLen": .int(log.maxLen),
                ]
            }
        }
    }
}

/// `slowlog.reset`, declared in `Protocol/methods/slowlog.reset.json`: forgets the slow reads kept,
/// as Redis's `SLOWLOG RESET`.
enum SlowlogResetMethod: NavdMethod {
    static func register(in methods: MethodTable, _ server: Server) {
        methods.register(.slowlogReset, SlowlogResetParam.self) { [server] call in
            call.answer { () throws(RPCError) -> JSONValue in
                let p = try Params<SlowlogResetParam>(call)
                try p.acceptUnused(.session)
                return ["forgotten": .int(server.dispatcher.slowlog.reset())]
            }
        }
    }
}
