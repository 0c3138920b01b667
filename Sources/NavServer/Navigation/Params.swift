import JSON
import NavigationCore
import RPC

/// Reads a method's named params with precise errors: a wrong type or an unknown name is an
/// `invalidParams` error naming the param (`data.param`) and what it should be.
struct Params {
    let method: String
    let object: JSONObject
    let allowed: [String]

    init(_ call: Call, allowed: [String]) throws(RPCError) {
        method = call.method
        object = call.params
        self.allowed = allowed
        for (k, _) in object where !allowed.contains(k) {
            throw RPCError.invalidParams("`\(method)` has no param \"\(k)\"; its params are \(allowed.map { "\"\($0)\"" }.joined(separator: ", "))",
                                         data: ["param": .string(k)])
        }
    }

    private func wrong(_ name: String, _ expected: String, _ v: JSONValue) -> RPCError {
        .invalidParams("\"\(name)\" must be \(expected), not \(v.typeName) \(JSONWriter.string(v))", data: ["param": .string(name)])
    }

    func string(_ name: String) throws(RPCError) -> String? {
        guard let v = object[name], !v.isNull else { return nil }
        guard case .string(let s) = v else { throw wrong(name, "a string", v) }
        return s
    }

    func requiredString(_ name: String, _ what: String) throws(RPCError) -> String {
        guard let s = try string(name) else {
            throw .invalidParams("`\(method)` needs \"\(name)\": \(what)", data: ["param": .string(name)])
        }
        return s
    }

    func int(_ name: String) throws(RPCError) -> Int? {
        guard let v = object[name], !v.isNull else { return nil }
        guard let i = v.intValue else { throw wrong(name, "an integer", v) }
        return i
    }

    func bool(_ name: String) throws(RPCError) -> Bool? {
        guard let v = object[name], !v.isNull else { return nil }
        guard case .bool(let b) = v else { throw wrong(name, "true or false", v) }
        return b
    }

    func objectParam(_ name: String) throws(RPCError) -> JSONObject? {
        guard let v = object[name], !v.isNull else { return nil }
        guard case .object(let o) = v else { throw wrong(name, "an object", v) }
        return o
    }

    func stringArray(_ name: String) throws(RPCError) -> [String]? {
        guard let v = object[name], !v.isNull else { return nil }
        guard case .array(let a) = v else { throw wrong(name, "a list of strings", v) }
        var out: [String] = []
        for x in a {
            guard case .string(let s) = x else { throw wrong(name, "a list of strings", v) }
            out.append(s)
        }
        return out
    }

    var session: String {
        get throws(RPCError) { try string("session") ?? "main" }
    }
}

extension NavError {
    var rpc: RPCError { RPCError(code: code, kind: kind.rawValue, message: message, data: data) }
}
