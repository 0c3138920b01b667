import Foundation
import JSON
import NavTesting
import Testing

/// `guards:` of a module: a precondition run first for every navigation to the coordinators it
/// does not exempt (go_router's top-level `redirect`, Vue Router's `beforeEach`).
@Suite struct GraphGuardTests {
    static let graph = """
        root: {stack: Home}
        guards:
          - {precondition: signedIn, except: [Home, About]}
          - open
        coordinators:
          Home: {opens: [Product, About, Login]}
          About: {}
          Product: {opens: [Product], preconditions: [inStock]}
          Login: {}
        links:
          "/product": [Home, Product]
        preconditions:
          signedIn: {check: {fact: user, exists: true}, redirect: Login}
          inStock: {check: {fact: stock, equals: true}}
          open: {check: {fact: closed, exists: false}}
        """

    @Test func everyNavigationPassesTheGuardsFirstExceptWhatTheyExempt() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        // Product is guarded: the guard runs before Product's own precondition, and redirects.
        let r = try c.call("navigate", ["to": "Product"])
        #expect(r["redirected"]?.arrayValue?.first?["precondition"] == "app.signedIn", "\(r)")
        #expect(try c.call("tree")["root"]?["children"]?.arrayValue?.last?["coordinator"] == "app.Login",
                "the redirect target is exempt from the guard that sends the user there")
        try c.call("dismiss")
        // About is exempt from signedIn, not from `open`.
        try c.call("navigate", ["to": "About"])
        try c.call("dismiss")
        try c.call("context.set", ["facts": ["closed": true]])
        let closed = try c.callError("navigate", ["to": "About"])
        #expect(closed["data"]?["precondition"] == "app.open", "\(closed)")
        try c.call("context.set", ["facts": ["closed": .null, "user": "ann"]])
        // Signed in: the coordinator's own precondition comes after the guards.
        let stock = try c.callError("navigate", ["to": "Product"])
        #expect(stock["data"]?["precondition"] == "app.inStock", "\(stock)")
        // A deep link is guarded too.
        try c.call("context.set", ["facts": ["user": .null, "stock": true]])
        let link = try c.call("open", ["url": "/product"])
        let top = try c.call("tree")["root"]?["children"]?.arrayValue?.last?["coordinator"]
        #expect(link["redirected"]?.arrayValue?.first?["precondition"] == "app.signedIn" && top == "app.Login", "\(link)")
        // graph.describe lists the guards, and each guarded coordinator's preconditions start with them.
        let g = try c.call("graph.describe")
        #expect(g["guards"]?.arrayValue?.first?["except"] == ["app.Home", "app.About", "app.Login"], "\(String(describing: g["guards"]))")
        #expect(g["coordinators"]?["app.Product"]?["preconditions"] == ["app.signedIn", "app.open", "app.inStock"])
    }

    @Test func aGuardNamingNoPreconditionIsAGraphError() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try "root: {stack: Home}\nguards: [{precondition: signdIn, except: [Hom]}]\ncoordinators:\n  Home: {}\npreconditions:\n  signedIn: {check: {fact: user, exists: true}}\n"
            .write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["check", dir.path])
        let out = r.stdout + r.stderr
        #expect(out.contains("app.yaml:2:25: error: `app.signdIn` is not a precondition; did you mean `app.signedIn`?"), "\(out)")
    }
}
