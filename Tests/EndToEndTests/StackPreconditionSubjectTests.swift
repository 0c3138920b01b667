import Foundation
import JSON
import NavTesting
import Testing

/// A stack built at once (`open` building a deep link's stack, `reset {to}`) runs the preconditions
/// of each of its screens about that screen: a command's `{to}` and `{with.FIELD}`, and the `to`,
/// `by` and `with` a provider or a command's stdin sees, are the screen's that shows the
/// precondition, not the stack's last screen's; a precondition two screens show runs for each.
@Suite struct StackPreconditionSubjectTests {
    static func graph(_ inStock: String) -> String {
        """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Product]}
          Product:
            setup: {type: object, required: [id], properties: {id: {type: string}}}
            opens: [Product, Reviews]
            preconditions: [inStock]
          Reviews:
            setup: {type: object, properties: {productId: {type: string}}}
        links:
          "/product/:id/reviews": [Home, {to: Product, with: {id: ":id"}}, {to: Reviews, with: {productId: ":id"}}]
          "/compare/:a/:b": [Home, {to: Product, with: {id: ":a"}}, {to: Product, with: {id: ":b"}}]
        preconditions:
          inStock: \(inStock)
        """
    }

    static let command = #"{command: [sh, -c, 'test "$1" != sold-out || { echo "$2 $1 is sold out"; exit 1; }', sh, "{with.id}", "{to}"]}"#

    /// The product's precondition reads the product's `id`, not the params of the reviews on top.
    @Test(arguments: [
        ("open", ["url": "/product/sold-out/reviews"] as JSONValue),
        ("reset", ["to": ["Home", ["to": "Product", "with": ["id": "sold-out"]], ["to": "Reviews", "with": ["productId": "sold-out"]]]] as JSONValue),
    ])
    func aCommandReadsTheScreenThatShowsIt(method: String, params: JSONValue) throws {
        let d = try Daemon(graph: Self.graph(Self.command))
        let c = try d.client()
        let refused = try c.callError(method, params)
        #expect(refused["data"]?["kind"] == "preconditionFailed" && refused["data"]?["reason"] == "app.Product sold-out is sold out", "\(method) \(refused)")
        let message = refused["message"]?.stringValue ?? ""
        #expect(message.contains("of `app.Product`"), "the message names the screen: \(refused)")
        #expect(try c.call("tree")["version"] == 0, "nothing changed")
        #expect(try c.call(method, method == "open" ? ["url": "/product/p1/reviews"] : ["to": ["Home", ["to": "Product", "with": ["id": "p1"]]]])["version"] == 1)
    }

    /// Two products of one link: the provider is asked about each, with its own params.
    @Test func aPreconditionTwoScreensShowRunsForEach() throws {
        let d = try Daemon(graph: Self.graph("{provider: true}"))
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["app.inStock"]])
        let c = try d.client()
        let dry = try c.call("open", ["url": "/compare/p1/p2", "dryRun": true])
        #expect(dry["preconditions"] == ["app.inStock", "app.inStock"], "one run per screen: \(dry)")
        let id = try c.send("open", ["url": "/compare/p1/p2"])
        let first = try provider.serverRequest("precondition.evaluate")
        #expect(first["params"]?["navigation"]?["to"] == "app.Product" && first["params"]?["navigation"]?["with"] == ["id": "p1"], "\(first)")
        try provider.respond(to: first, result: ["passed": true])
        let second = try provider.serverRequest("precondition.evaluate")
        #expect(second["params"]?["navigation"]?["with"] == ["id": "p2"], "\(second)")
        try provider.respond(to: second, result: ["passed": false, "reason": "p2 is sold out"])
        let refused = try #require(try c.reply(to: id)["error"])
        #expect(refused["data"]?["reason"] == "p2 is sold out", "\(refused)")
        #expect(try c.call("tree")["version"] == 0)
    }
}
