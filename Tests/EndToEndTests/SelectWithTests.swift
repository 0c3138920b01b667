import Foundation
import JSON
import NavTesting
import Testing

/// `select {with}` (React Navigation's `navigate('Tab', params)`): the tab's first screen takes the
/// params in place of its own (with `merge: true`, merged as `update` does), validated, in the
/// select's commit; invalid ones are refused and change nothing.
@Suite struct SelectWithTests {
    static let graph = """
        root: {tabs: [Home, Cart]}
        coordinators:
          Home: {}
          Cart:
            setup: {type: object, properties: {coupon: {type: string, maxLength: 5}, note: {type: string}}, additionalProperties: false}
        """

    static func cart(_ c: TestClient) throws -> JSONValue? {
        try c.call("tree")["root"]?["children"]?.arrayValue?[1]["children"]?.arrayValue?.first?["params"]
    }

    @Test func selectWithParamsUpdatesTheTabsFirstScreen() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        let r = try c.call("navigate", ["to": "Cart", "by": "select", "with": ["coupon": "AB12", "note": "hi"]])
        #expect(r["version"] == 1)
        #expect(try Self.cart(c) == ["coupon": "AB12", "note": "hi"])
        let n = try watcher.notification("stackChanged")
        let ops = n["params"]?["changes"]?.arrayValue?.compactMap { $0["op"]?.stringValue }
        #expect(ops == ["select", "update"], "\(n)")
        // Replaced: the params are exactly those given.
        try c.call("navigate", ["to": "Home", "by": "select"])
        try c.call("navigate", ["to": "Cart", "by": "select", "with": ["note": "again"]])
        #expect(try Self.cart(c) == ["note": "again"])
        // Merged with merge: true: a field given replaces, null removes, others stay.
        try c.call("navigate", ["to": "Cart", "by": "select", "with": ["coupon": "ZZ"], "merge": true])
        #expect(try Self.cart(c) == ["coupon": "ZZ", "note": "again"])
        try c.call("navigate", ["to": "Cart", "by": "select", "with": ["note": .null], "merge": true])
        #expect(try Self.cart(c) == ["coupon": "ZZ"])
        // Without `with` the params stay; an empty `with` empties them.
        try c.call("navigate", ["to": "Cart", "by": "select"])
        #expect(try Self.cart(c) == ["coupon": "ZZ"])
        try c.call("navigate", ["to": "Cart", "by": "select", "with": [:]])
        #expect(try Self.cart(c) == [:])
    }

    @Test func invalidParamsAreRefusedAndChangeNothing() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        for bad: JSONValue in [["coupon": "TOO-LONG"], ["other": 1], ["coupon": 5]] {
            let e = try c.callError("navigate", ["to": "Cart", "by": "select", "with": bad])
            #expect(e["data"]?["kind"] == "invalidSetup" && e["data"]?["to"] == "app.Cart", "\(bad): \(e)")
        }
        let tree = try c.call("tree")
        #expect(tree["version"] == 0 && tree["root"]?["selected"] == 0, "nothing selected or changed: \(tree)")
    }

    /// A select that gives no `with` keeps the tab screen's params, also when a precondition's
    /// redirect (`redirect: {to, by: select}`), a flow's declared `then` or one given to
    /// `navigate {then}` makes it: none gives a `with`, so nothing is emptied (they were, as if
    /// each gave `with: {}`). One that writes `with: {}` empties them, as `select {with: {}}` does.
    @Test(arguments: ["redirect", "then", "navigate then"], [false, true])
    func aSelectThatARedirectOrAThenMakesKeepsTheTabScreensParamsUnlessItGivesWith(by way: String, givesWith: Bool) throws {
        let with = givesWith ? ", with: {}" : ""
        let d = try Daemon(graph: """
            root: {tabs: [Home, Other]}
            coordinators:
              Home: {opens: [Gated, Wizard]}
              Other: {setup: {type: object, properties: {v: {type: string}}}}
              Gated: {preconditions: [gate]}
              Wizard: {flow: {steps: [Step]}, then: {to: Other, by: select\(with)}}
              Step: {}
            preconditions:
              gate: {check: {fact: g, equals: true}, redirect: {to: Other, by: select\(with)}}
            """)
        let c = try d.client()
        try c.call("navigate", ["to": "Other", "by": "select", "with": ["v": "kept"]])
        try c.call("navigate", ["to": "Home", "by": "select"])
        if way == "redirect" {
            let r = try c.call("navigate", ["to": "Gated"])
            #expect(r["redirected"] != nil, "\(r)")
        } else {
            var then: JSONObject = ["to": "Other", "by": "select"]
            if givesWith { then["with"] = [:] }
            let flow = try c.call("navigate", way == "then" ? ["to": "Wizard"] : ["to": "Wizard", "then": .object(then)])["node"] ?? .null
            let r = try c.call("flowComplete", ["flow": flow, "result": [:]])
            #expect(r["then"]?["version"] != nil, "\(r)")
        }
        let tree = try c.call("tree")
        let other = tree["root"]?["children"]?.arrayValue?.last?["children"]?.arrayValue?.first
        let expected: JSONValue = givesWith ? [:] : ["v": "kept"]
        #expect(tree["root"]?["selected"] == 1 && other?["params"] == expected, "\(tree)")
    }
}
