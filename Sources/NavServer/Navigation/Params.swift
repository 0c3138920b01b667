#if canImport(Glibc)
import Glibc
#endif
import JSON
import NavigationCore
import RPC

/// Reads a method's named params with precise errors: a wrong type or an unknown name is an
/// `invalidParams` error naming the param (`data.param`) and what it should be. Params are read in
/// place (``JSONView``); only the values asked for are copied out.
struct Params {
    private let methodName: JSONView
    let object: JSONView?
    /// The members given, as found by the one pass that checks their names (key bytes, key length, the
    /// value's position), so that reading a param scans a few lengths instead of walking the object again.
    /// With more than 8 members (navigate has 9 params) every read walks the object instead.
    private var members = InlineArray<8, (key: UnsafeRawPointer?, length: Int32, position: Int32)>(repeating: (nil, 0, 0))
    private var kept = 0
    private var overflowed = false

    /// The method's name, for messages.
    var method: String { methodName.string ?? "" }

    init(_ call: Call, allowed: [StaticString]) throws(RPCError) {
        methodName = call.methodName
        object = call.params.flatMap { $0.isObject ? $0 : nil }
        try object?.forEachMember { (k, v) throws(RPCError) in
            guard !allowed.contains(where: { JSONView.bytes(k, equal: $0) }) else {
                if kept < 8 {
                    members[kept] = (k.baseAddress, Int32(truncatingIfNeeded: k.count), Int32(truncatingIfNeeded: v.position))
                    kept += 1
                } else {
                    overflowed = true
                }
                return
            }
            let name = String(decoding: k, as: UTF8.self)
            throw RPCError.invalidParams("`\(call.method)` has no param \"\(name)\"; its params are \(allowed.map { "\"\($0)\"" }.joined(separator: ", "))",
                                         data: ["param": .string("\(name)")])
        }
    }

    /// The param as given (`null` included), or nil when absent; a repeated name is its last value.
    private func member(_ name: StaticString) -> JSONView? {
        guard let object else { return nil }
        if overflowed { return object.member(name) }
        let n = Int32(truncatingIfNeeded: name.utf8CodeUnitCount)
        var i = kept - 1
        while i >= 0 {
            let m = members[i]
            if m.length == n, n == 0 || memcmp(m.key!, name.utf8Start, Int(n)) == 0 { return object.view(at: Int(m.position)) }
            i -= 1
        }
        return nil
    }

    /// Whether the param is given at all (`null` included).
    func has(_ name: StaticString) -> Bool { member(name) != nil }

    /// The param as given (`null` included), copied out.
    func value(_ name: StaticString) -> JSONValue? { member(name)?.value }

    /// The param, unless absent or `null`.
    func given(_ name: StaticString) -> JSONView? {
        guard let v = member(name), !v.isNull else { return nil }
        return v
    }

    private func wrong(_ name: StaticString, _ expected: String, _ v: JSONView) -> RPCError {
        .invalidParams("\"\(name)\" must be \(expected), not \(v.typeName) \(JSONWriter.string(v.value))", data: ["param": .string("\(name)")])
    }

    func string(_ name: StaticString) throws(RPCError) -> String? {
        guard let v = given(name) else { return nil }
        guard let s = v.string else { throw wrong(name, "a string", v) }
        return s
    }

    func requiredString(_ name: StaticString, _ what: String) throws(RPCError) -> String {
        guard let s = try string(name) else {
            throw .invalidParams("`\(method)` needs \"\(name)\": \(what)", data: ["param": .string("\(name)")])
        }
        return s
    }

    func int(_ name: StaticString) throws(RPCError) -> Int? {
        guard let v = given(name) else { return nil }
        guard let i = v.int else { throw wrong(name, "an integer", v) }
        return i
    }

    func bool(_ name: StaticString) throws(RPCError) -> Bool? {
        guard let v = given(name) else { return nil }
        guard let b = v.bool else { throw wrong(name, "true or false", v) }
        return b
    }

    func objectParam(_ name: StaticString) throws(RPCError) -> JSONObject? {
        guard let v = given(name) else { return nil }
        guard v.isObject, case .object(let o) = v.value else { throw wrong(name, "an object", v) }
        return o
    }

    func stringArray(_ name: StaticString) throws(RPCError) -> [String]? {
        guard let v = given(name) else { return nil }
        guard v.isArray else { throw wrong(name, "a list of strings", v) }
        var out: [String] = []
        for x in v.elements {
            guard let s = x.string else { throw wrong(name, "a list of strings", v) }
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
