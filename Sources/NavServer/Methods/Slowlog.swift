import JSON
import RPC

/// `slowlog.get`, declared in `Protocol/methods/slowlog.get.json`: the reads and other work that
/// held the loop longest (``SlowLog``), newest first, as Redis's `SLOWLOG GET`, a page at a time:
/// an answer holds at most `limit` entries and stays within half of `--max-output` (100,000 entries
/// kept would not), with `next` to ask for the rest. Its role, `admin`, is declared with it: an
/// entry names another client's connection.
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
                let after = try p.int(.after)
                if let after, after < 0 {
                    throw .invalidParams("`slowlog.get`'s \"after\" is \(after), not a cursor; pass the \"next\" of the previous answer", data: ["param": "after"])
                }
                // Half of --max-output for the entries: the answer is never replaced by limitExceeded.
                let budget = server.dispatcher.limits.maxOutput / 2
                var entries: [JSONValue] = [], bytes = 0
                var next: Int?
                for e in log.newest(before: after) {
                    if entries.count == limit {
                        next = e.id + 1  // limit >= 1: a full page is never empty
                        break
                    }
                    let object = SlowLog.object(e)
                    let size = JSONWriter.encode(object).count + 1
                    if bytes + size > budget && !entries.isEmpty {
                        next = e.id + 1
                        break
                    }
                    bytes += size
                    entries.append(object)
                }
                var out: JSONObject = [
                    "entries": .array(entries), "kept": .int(log.count), "total": .int(log.total),
                    "thresholdMs": .double(Double(log.thresholdNs / 1_000) / 1_000), "maxLen": .int(log.maxLen),
                ]
                if let next { out["next"] = .int(next) }
                return .object(out)
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
