import Foundation
import JSON
import NavTesting
import Testing

/// `dismiss {result, merge: true}` (React Navigation's `popTo(name, params, {merge: true})`,
/// Jetpack's `previousBackStackEntry.savedStateHandle`): the result becomes part of the params of
/// the screen left on top, in the dismiss's own commit, so a front-end that connects later sees it.
@Suite struct ResultsThatStayTests {
    static let graph = """
        root: {stack: Checkout}
        coordinators:
          Checkout:
            opens: [AddressPicker]
            setup: {type: object, properties: {address: {type: string, maxLength: 20}, cart: {type: string}}, additionalProperties: false}
          AddressPicker: {opens: [Map]}
          Map: {}
        """

    @Test func theResultIsMergedIntoTheScreenBelowInTheSameCommit() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        try c.call("navigate", ["to": "AddressPicker"])
        _ = try watcher.notification("stackChanged")
        let r = try c.call("dismiss", ["result": ["address": "1 Main St"], "merge": true])
        #expect(r["version"] == 2, "one commit: \(r)")
        let n = try watcher.notification("stackChanged")
        let ops = n["params"]?["changes"]?.arrayValue?.compactMap { $0["op"]?.stringValue }
        #expect(ops == ["pop", "update"], "\(n)")
        // A front-end connecting now sees it, and the screenResult was sent as before.
        let later = try d.client()
        let tree = try later.call("tree")
        #expect(tree["root"]?["children"]?.arrayValue?.first?["params"] == ["address": "1 Main St"], "\(tree)")
        #expect(try watcher.notification("screenResult")["params"]?["result"] == ["address": "1 Main St"])
        // dismiss {to} merges into the screen it pops to.
        try c.call("navigate", ["to": "AddressPicker"])
        try c.call("navigate", ["to": "Map"])
        try c.call("dismiss", ["to": "Checkout", "result": ["address": "2 Side St", "cart": "c1"], "merge": true])
        #expect(try c.call("tree")["root"]?["children"]?.arrayValue?.first?["params"] == ["address": "2 Side St", "cart": "c1"])
    }

    @Test func aResultTheScreenBelowRefusesChangesNothing() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try c.call("navigate", ["to": "AddressPicker"])
        let long: JSONValue = .string(String(repeating: "x", count: 30))
        let cases: [(JSONValue, String)] = [(["address": long], "invalidSetup"), (["other": 1], "invalidSetup"), ("not an object", "invalidParams")]
        for (bad, kind) in cases {
            let e = try c.callError("dismiss", ["result": bad, "merge": true])
            #expect(e["data"]?["kind"]?.stringValue == kind, "\(bad): \(e)")
        }
        let tree = try c.call("tree")
        #expect(tree["version"] == 1 && tree["root"]?["children"]?.arrayValue?.count == 2, "nothing dismissed: \(tree)")
        // Without merge, the same result is only a notification, as before.
        try c.call("dismiss", ["result": ["other": 1]])
        #expect(try c.call("tree")["root"]?["children"]?.arrayValue?.first?["params"] == [:])
    }
}
