import Foundation
import JSON
import NavTesting
import Testing

/// Navigation semantics through the socket on the example app: flow steps follow `opens`, tabs keep
/// their declared identity.
@Suite struct SemanticsEndToEndTests {
    @Test func aCheckoutStepCannotSkipPayment() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.call("context.set", ["facts": ["loggedIn": true, "cart.items": 2]])
        try c.call("navigate", ["to": "cart.Cart", "by": "select"])
        let flow = try c.call("navigate", ["to": "cart.Checkout", "by": "present"], timeout: 15)
        #expect(flow["version"] != nil, "\(flow)")
        let skip = try c.callError("navigate", ["to": "cart.Confirm"])
        #expect(skip["code"] == -32003 && skip["data"]?["kind"] == "notAllowed" && skip["data"]?["to"] == "cart.Confirm", "\(skip)")
    }

    @Test func tabsSurviveReplaceAndComeBackAfterRoot() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.call("navigate", ["to": "shop.Product", "by": "replace", "with": ["id": "p1"]])
        try c.call("navigate", ["to": "account.Account", "by": "select"])
        let home = try c.call("navigate", ["to": "shop.Home", "by": "select"])
        #expect(home["visible"]?.arrayValue?.count == 3, "\(home)")
        try c.call("navigate", ["to": "shop.Home", "by": "root"])
        let back = try c.call("navigate", ["to": "cart.Cart", "by": "select"])
        let tree = try c.call("tree")
        #expect(tree["root"]?["kind"] == "tabs" && tree["root"]?["selected"] == 1, "\(tree)")
        #expect(back["version"] == tree["version"])
    }
}
