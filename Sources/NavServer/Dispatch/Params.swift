import JSON
import NavGraph
import NavigationCore
import RPC
import Unchecked

/// The names of one method's params: an enum whose cases are the names as they appear on the wire,
/// so a handler reads `p.string(.node)` and a misspelt name does not compile. Each conformance
/// declares `static let table = ParamTable(Self.self)`: the names as bytes, made once.
protocol ParamName: RawRepresentable<Int>, CaseIterable {
    static var table: ParamTable { get }
}

extension ParamName {
    /// The param's bit in a set of params (``Params/hasAny(_:)``): `P.bit(.a) | P.bit(.b)`.
    @inline(__always)
    static func bit(_ name: Self) -> UInt32 { 1 &<< UInt32(truncatingIfNeeded: name.rawValue) }
}

/// One method's param names, built once from the enum's case names: as strings for messages and as
/// bytes for matching a request's keys.
final class ParamTable: Sendable {
    let names: [String]
    /// The names as bytes, for matching keys (storage of the table's own, read without retaining
    /// an array per request).
    private let packed: NameTable

    init<P: ParamName>(_: P.Type) {
        precondition(P.allCases.count <= 32, "a method takes at most 32 params")
        precondition(P.allCases.enumerated().allSatisfy { $0.offset == $0.element.rawValue }, "param cases are numbered 0, 1, 2, …")
        names = P.allCases.map { "\($0)" }
        packed = NameTable(names)
    }

    /// The index of the name whose bytes are `key`, or nil.
    @inline(__always)
    func index(of key: ByteView) -> Int? {
        for i in 0..<packed.count where packed.matches(i, key) { return i }
        return nil
    }

    /// `"a", "b", "c"`, for messages.
    var list: String { names.map { "\"\($0)\"" }.joined(separator: ", ") }
}

/// Reads a method's named params with precise errors: a wrong type or an unknown name is an
/// `invalidParams` error naming the param (`data.param`) and what it should be. Params are read in
/// place (``JSONView``); only the values asked for are copied out. The one pass that checks the
/// names records where each value is, so reading a param is a shift, not a walk of the object.
struct Params<P: ParamName> {
    private let methodName: JSONView
    let object: JSONView?
    /// Where each param's value sits in the request's document, for the params in ``present``: the
    /// method's scratch in its server's table (``MethodTable/Entry/paramPositions``), which outlives
    /// every request. (Words of params not given are left as an earlier request wrote them.)
    private let positions: ScratchWords.Words
    /// The params given, one bit each by their enum's raw value (a method takes at most 32).
    private let present: UInt32

    /// The method's name, for messages.
    var method: String { methodName.string ?? "" }

    @inline(__always)
    init(_ call: borrowing Call) throws(RPCError) {
        let (method, params) = (call.methodName, call.params)
        self = try call.lent { _, entry in
            Result { () throws(RPCError) in try Params(method: method, params: params, scratch: entry.paramPositions, table: entry.paramTable) }
        }.get()
    }

    /// The params `params` of the method named `method`, their positions noted in `scratch` (one
    /// word per param, which must outlive this value): what a call's params are read as, and what
    /// a test decodes without a server.
    @inline(__always)
    init(method: JSONView, params: JSONView?, scratch: ScratchWords, table: ParamTable = P.table) throws(RPCError) {
        methodName = method
        object = params.flatMap { $0.isObject ? $0 : nil }
        let positions = scratch.view
        self.positions = positions
        guard let object else {
            present = 0
            return
        }
        let methodName = self.methodName
        var present: UInt32 = 0
        try object.forEachMember { (k, v) throws(RPCError) in
            guard let i = table.index(of: k) else {
                let name = k.string
                // (A likely typo is named; names longer than any param's are not compared.)
                let hint = name.utf8.count > 64 ? nil : suggestion(for: name, among: table.names)
                throw RPCError.invalidParams("`\(methodName.string ?? "")` has no param \"\(name)\"; \(hint.map { "did you mean \"\($0)\"? " } ?? "")its params are \(table.list)",
                                             data: ["param": .string(name)])
            }
            // A repeated name: the last value counts (positions fit 32 bits: messages are < 4 GiB).
            positions[i] = UInt32(truncatingIfNeeded: v.position)
            present |= 1 &<< UInt32(truncatingIfNeeded: i)
        }
        self.present = present
    }

    /// The param at `index` of the method's params (its enum's raw value) as given (`null`
    /// included), or nil when absent; a repeated name is its last value.
    @inline(__always)
    private func member(at index: Int) -> JSONView? {
        guard let object, present & (1 &<< UInt32(truncatingIfNeeded: index)) != 0 else { return nil }
        return object.view(at: Int(positions[index]))
    }

    @inline(__always)
    private func member(_ name: P) -> JSONView? { member(at: name.rawValue) }

    /// The param at `index` of the method's params (its enum's raw value), as ``given(_:)``.
    @inline(__always)
    func given(at index: Int) -> JSONView? {
        guard let v = member(at: index), !v.isNull else { return nil }
        return v
    }

    /// Whether the param is given at all (`null` included).
    func has(_ name: P) -> Bool { member(name) != nil }

    /// Whether any of the params in `names` (their ``ParamName/bit(_:)``s) is given, `null` included:
    /// one test, for a method that reads the params few requests give only when one is there.
    @inline(__always)
    func hasAny(_ names: UInt32) -> Bool { present & names != 0 }

    /// The param as given (`null` included), copied out.
    func value(_ name: P) -> JSONValue? { member(name)?.value }

    /// The param, unless absent or `null`.
    @inline(__always)
    func given(_ name: P) -> JSONView? { given(at: name.rawValue) }

    @inline(never)
    private func wrong(_ name: P, _ expected: String, _ v: JSONView) -> RPCError {
        Params.wrong(P.table.names[name.rawValue], expected, v)
    }

    static func wrong(_ name: String, _ expected: String, _ v: JSONView) -> RPCError {
        // A number where a node id goes: ids are strings, the `n` included.
        let idHint = ["node", "from", "flow"].contains(name) ? v.int.map { "; node ids are strings such as \"n\($0)\" (as `tree` shows them)" } ?? "" : ""
        // An integer was asked for and given, past what 64 bits hold: say so, not "not integer".
        if case .uint = v.value, expected.contains("integer") {
            return .invalidParams("\"\(name)\" must be \(expected) of at most \(Int.max), not \(JSONWriter.string(v.value))", data: ["param": .string(name)])
        }
        return .invalidParams("\"\(name)\" must be \(expected), not \(v.typeName) \(JSONWriter.string(v.value))\(idHint)", data: ["param": .string(name)])
    }

    @inline(__always)
    func string(_ name: P) throws(RPCError) -> String? {
        guard let v = given(name) else { return nil }
        guard let s = v.string else { throw wrong(name, "a string", v) }
        return s
    }

    /// A string param a method accepts and does not use (`session`, where the method is not about one
    /// session): checked all the same, so that a wrong one is not silently dropped.
    /// (Not through ``stringView(_:)``: a caller more would have it outlined from the hot path's methods.)
    func acceptUnused(_ name: P) throws(RPCError) {
        guard let v = given(name), v.kind != .string else { return }
        throw wrong(name, "a string", v)
    }

    /// A string param, still in place (its bytes are read without making a string).
    func stringView(_ name: P) throws(RPCError) -> JSONView? {
        guard let v = given(name) else { return nil }
        guard v.kind == .string else { throw wrong(name, "a string", v) }
        return v
    }

    func requiredString(_ name: P, _ what: String) throws(RPCError) -> String {
        guard let s = try string(name) else {
            let n = P.table.names[name.rawValue]
            throw .invalidParams("`\(method)` needs \"\(n)\": \(what)", data: ["param": .string(n)])
        }
        return s
    }

    @inline(__always)
    func int(_ name: P) throws(RPCError) -> Int? {
        guard let v = given(name) else { return nil }
        guard let i = v.int else { throw wrong(name, "an integer", v) }
        return i
    }

    @inline(__always)
    func bool(_ name: P) throws(RPCError) -> Bool? {
        guard let v = given(name) else { return nil }
        guard let b = v.bool else { throw wrong(name, "true or false", v) }
        return b
    }

    /// An object param, still in place (check it is one with ``objectParam(_:)`` semantics).
    func objectView(_ name: P) throws(RPCError) -> JSONView? {
        guard let v = given(name) else { return nil }
        guard v.isObject else { throw wrong(name, "an object", v) }
        return v
    }

    func objectParam(_ name: P) throws(RPCError) -> JSONObject? {
        guard let v = try objectView(name), case .object(let o) = v.value else { return nil }
        return o
    }

    func stringArray(_ name: P) throws(RPCError) -> [String]? {
        guard let v = given(name) else { return nil }
        guard v.isArray else { throw wrong(name, "a list of strings", v) }
        var out: [String] = []
        for x in v.elements {
            guard let s = x.string else { throw wrong(name, "a list of strings", v) }
            out.append(s)
        }
        return out
    }
}


extension NavError {
    var rpc: RPCError { RPCError(kind, message, data: data) }
}
