import Foundation
import JSON
import NavClient
import NavTesting
import Testing

/// The NavClient library against a live navd: typed calls, typed errors, a mirror kept current from
/// `stackChanged`, a provider answering `precondition.evaluate`.
@Suite struct NavClientTests {
    /// The change fixtures every mirror replays (Tests/Fixtures/changes.json, recorded from a real
    /// navd by scripts/change-fixtures.py; the Python client and nav-web's page replay them too):
    /// after every `stackChanged`, the mirror is navd's tree.
    @Test func theMirrorReplaysTheSharedChangeFixtures() throws {
        let text = try String(contentsOf: Repo.file("Tests/Fixtures/changes.json"), encoding: .utf8)
        let cases = try #require(try JSONParser(maxDepth: 256).parse(text)["cases"]?.arrayValue)
        #expect(cases.count >= 2)
        for c in cases {
            let snapshot = try #require(c["snapshot"]), final = try #require(c["final"])
            var mirror = TreeMirror(snapshot: snapshot)
            for p in c["stackChanged"]?.arrayValue ?? [] { try mirror.apply(p) }
            #expect(mirror.version == final["version"]?.intValue && mirror.root == final["root"], "\(c["name"] ?? .null)")
            #expect(mirror.visible == (final["visible"]?.arrayValue ?? []).compactMap(\.stringValue))
            // A missed version is a gap, not a guess.
            var gapped = TreeMirror(snapshot: snapshot)
            let later = (c["stackChanged"]?.arrayValue ?? []).dropFirst().first { !TreeMirror.isSnapshot($0) }
            if let later { #expect(throws: TreeMirror.Gap.self) { try gapped.apply(later) } }
            // The same commits heard in the compact form bring a mirror to the same tree, each
            // expanded to the full notification.
            let compactSnapshot = try #require(c["compactSnapshot"])
            #expect(compactSnapshot["notifications"] == "compact" && compactSnapshot["ref"]?.intValue != nil)
            var compact = TreeMirror(snapshot: compactSnapshot)
            let full = c["stackChanged"]?.arrayValue ?? [], heard = c["compactStackChanged"]?.arrayValue ?? []
            #expect(heard.count == full.count)
            for (p, f) in zip(heard, full) {
                #expect(compact.concerns(p))
                #expect(try TreeMirror.full(p, session: compact.session) == f)
                try compact.apply(p)
            }
            #expect(compact.version == final["version"]?.intValue && compact.root == final["root"], "\(c["name"] ?? .null), compact")
            #expect(compact.visible == mirror.visible)
        }
    }

    @Test func typedCallsAndMirror() throws {
        let d = try Daemon()
        let writer = try NavClient(socketPath: d.socketPath)
        let watcher = try NavClient(socketPath: d.socketPath)
        var mirror = try watcher.subscribe()
        #expect(mirror.version == 0 && mirror.top?["coordinator"] == "shop.Home")

        let product = try writer.navigate(to: "shop.Product", with: ["id": "p1"])
        #expect(product.version == 1 && product.node != nil && product.visible.last == product.node)
        try writer.navigate(to: "shop.Reviews")
        let dismissed = try writer.dismiss()
        #expect(dismissed.version == 3 && dismissed.removed.count == 1)
        let opened = try writer.open(url: "/product/p7/reviews")
        #expect(opened.version == 4)
        try writer.setFacts(["loggedIn": true, "cart.items": 1])
        #expect(try writer.facts(["loggedIn"]) == ["loggedIn": true])

        for _ in 1...4 { try watcher.apply(to: &mirror) }
        let tree = try writer.tree()
        #expect(mirror.version == 4 && mirror.root == tree.root && mirror.visible == tree.visible)
        #expect(mirror.top?["coordinator"] == "shop.Reviews")

        // Typed errors: code, kind and message as navd sent them.
        #expect {
            try writer.navigate(to: "shop.Prodcut")
        } throws: { e in
            guard let e = e as? NavClientError else { return false }
            return e.code == -32001 && e.kind == "unknownTarget" && e.message.contains("did you mean `shop.Product`")
        }
        #expect(throws: NavClientError.self) { try writer.flowComplete(flow: "n1", .cancelled) }

        // Sessions and stats.
        let other = try writer.openSession("other")
        #expect(other.session == "other" && other.version == 0)
        #expect(try writer.sessions().count == 2)
        var otherMirror = try watcher.subscribe(session: "other")
        try writer.closeSession("other")
        // The mirror learns its session closed: apply answers false and nothing more comes.
        #expect(try watcher.apply(to: &otherMirror) == false && otherMirror.closed)
        #expect(try watcher.apply(to: &otherMirror) == false)
        #expect((try writer.stats()["commits"]?.intValue ?? 0) >= 4)
    }

    /// The options that came from other routers: `existing`, `merge`, `dismiss {result, merge}`,
    /// `open {by: push}`.
    @Test func peerOptions() throws {
        let d = try Daemon()
        let c = try NavClient(socketPath: d.socketPath)
        let p1 = try c.navigate(to: "shop.Product", with: ["id": "p1"])
        let kept = try c.navigate(to: "shop.Product", with: ["ref": "mail"], existing: .top, merge: true)
        #expect(kept.node == p1.node && kept.version == 2)
        try c.navigate(to: "shop.Reviews")
        let back = try c.dismiss(result: ["ref": "review"], merge: true)
        #expect(back.version == 4)
        let opened = try c.open(url: "/product/p9", pushingLastScreen: true)
        let tree = try c.tree()
        #expect(tree.node(p1.node ?? "")?["params"] == ["id": "p1", "ref": "review"])
        #expect(tree.visible.last == opened.node && tree.node(opened.node ?? "")?["params"] == ["id": "p9"])
    }

    @Test func providerAnswersAndFlowResult() throws {
        let d = try Daemon()
        // Used by the serving thread only once `serve()` runs; this thread reads `asked` after navd
        // has had the provider's answer (the navigation's reply comes after it).
        nonisolated(unsafe) let provider = try NavClient(socketPath: d.socketPath)
        nonisolated(unsafe) var asked: [String] = []
        try provider.provide(["cart.paymentAuthorized"]) { request in
            asked.append(request.precondition)
            return .pass
        }
        // The provider answers while a background thread serves it; the driver navigates meanwhile.
        let serving = Thread { try? provider.serve() }
        serving.start()

        let c = try NavClient(socketPath: d.socketPath)
        try c.setFacts(["loggedIn": true, "cart.items": 2])
        try c.navigate(to: "cart.Cart", by: .select)
        let checkout = try c.navigate(to: "cart.Checkout", by: .present)
        let flow = try #require(checkout.node)
        try c.navigate(to: "cart.Payment")
        let confirm = try c.navigate(to: "cart.Confirm", with: ["total": 12.5])
        #expect(confirm.version > checkout.version)
        let done = try c.flowComplete(flow: flow, .result(["orderId": "ord-7"]))
        #expect(done.removed.contains(flow))
        let n = try #require(try c.nextNotification())
        #expect(n["method"] == "flowCompleted" && n["params"]?["result"]?["orderId"] == "ord-7", "\(n)")
        #expect(asked == ["cart.paymentAuthorized"])
    }
}
