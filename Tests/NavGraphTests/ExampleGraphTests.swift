import Foundation
import JSON
import NavTesting
import Testing
@testable import NavGraph

/// The example app: clean, embedded verbatim, valid against Protocol/navgraph.schema.json, and
/// exercising every feature of the format.
@Suite struct ExampleGraphTests {
    let dir = Repo.file("Examples/shop").path

    @Test func loadsWithoutErrorsOrWarnings() throws {
        let (g, d) = GraphLoader.load(directory: dir)
        #expect(d.all.map(\.description) == [])
        let graph = try #require(g)
        #expect(graph.modules.count >= 3)
        guard case .tabs(let tabs) = graph.root else { Issue.record("the example's root is tabs"); return }
        #expect(Set(tabs.map { graph.coordinators[$0].module }).count == tabs.count, "tabs come from different modules")
        #expect(graph.coordinators.contains { $0.setup?.required.isEmpty == false }, "a coordinator with a required setup")
        #expect(graph.coordinators.contains { $0.flow?.result != nil }, "a flow with a result")
        #expect(graph.coordinators.contains { !$0.access.isEmpty }, "a role-restricted coordinator")
        #expect(graph.coordinators.contains { !$0.mediation.isEmpty }, "mediation")
        #expect(!graph.routes.isEmpty && !graph.links.isEmpty)
        #expect(graph.preconditions.contains { if case .command = $0.kind { return true } else { return false } })
        #expect(graph.preconditions.contains { if case .provider = $0.kind { return true } else { return false } })
        #expect(graph.preconditions.contains { if case .flow? = $0.recover { return true } else { return false } })
    }

    @Test func theEmbeddedCopyIsTheFilesOnDisk() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(EmbeddedExample.files.map(\.name) == files)
        for (name, text) in EmbeddedExample.files {
            let disk = try String(contentsOfFile: dir + "/" + name, encoding: .utf8)
            #expect(disk.trimmingCharacters(in: .newlines) == text, "\(name) changed: run `make embed`")
        }
        for (name, text) in EmbeddedExample.scripts {
            let disk = try String(contentsOfFile: dir + "/" + name, encoding: .utf8)
            #expect(disk.trimmingCharacters(in: .newlines) == text, "\(name) changed: run `make embed`")
        }
    }

    @Test func everyModuleFileIsValidAgainstTheGraphSchema() throws {
        let schema = try JSONParser(maxDepth: 256).parse(String(contentsOf: Repo.file("Protocol/navgraph.schema.json"), encoding: .utf8))
        let validator = MiniSchemaValidator(root: schema)
        for (name, text) in EmbeddedExample.files {
            var d = Diagnostics()
            let doc = try #require(Doc.parse(text, file: name, diagnostics: &d))
            let problems = validator.validate(doc.json)
            #expect(problems.isEmpty, "\(name): \(problems)")
        }
        // And the schema does catch mistakes.
        #expect(!validator.validate(["coordinators": ["Home": ["opnes": ["X"]]]]).isEmpty)
        #expect(!validator.validate(["preconditions": ["p": ["check": ["fact": "x"]]]]).isEmpty)
        #expect(!validator.validate(["routes": ["r": ["to": "X", "by": "slide"]]]).isEmpty)
        // Extensions (keys starting with x-) are allowed where the format's own words are the keys.
        #expect(validator.validate(["x-shared": ["opens": ["A"]], "coordinators": ["Home": ["x-note": "n", "setup": ["type": "object", "x-ui": ["order": 1]]]],
                                    "preconditions": ["p": ["x-owner": "team", "check": ["fact": "x", "exists": true, "x-why": "y"]]]]).isEmpty)
        #expect(!validator.validate(["xshared": 1]).isEmpty)
        #expect(validator.validate(["$schema": "navgraph.schema.json", "coordinators": ["Home": [:]]]).isEmpty)
        // A flow gives its steps, its start, or both; not neither.
        #expect(validator.validate(["coordinators": ["F": ["flow": ["steps": ["A", "B"]]]]]).isEmpty)
        #expect(validator.validate(["coordinators": ["F": ["flow": ["start": "A"]]]]).isEmpty)
        #expect(!validator.validate(["coordinators": ["F": ["flow": ["result": ["type": "object"]]]]]).isEmpty)
    }

    @Test func dotOutputDrawsClustersEdgesAndFlows() throws {
        let g = try #require(GraphLoader.load(directory: dir).graph)
        let dot = g.dot()
        #expect(dot.hasPrefix("digraph navd {"))
        for m in g.modules { #expect(dot.contains("subgraph \"cluster_\(m.name)\"")) }
        #expect(dot.contains("\"shop.Home\" -> \"shop.Product\";"))
        #expect(dot.contains("subgraph \"cluster_flow_cart.Checkout\""))
        #expect(dot.contains("root -> \"shop.Home\" [label=\"tab 0\""))
        #expect(dot.contains("recover loggedIn"))
        // Every route and every deep link is drawn, with an edge to the screen it shows.
        for r in g.routes {
            #expect(dot.contains("\"route:\(r.name)\" -> \"\(g.coordinators[r.to].name)\""), "route \(r.name)")
        }
        for l in g.links {
            #expect(dot.contains("\"link:\(l.pattern)\" -> \"\(g.coordinators[l.entries.last!.coordinator].name)\""), "link \(l.pattern)")
        }
        #expect(dot.contains("\"link:/product/:id/reviews\" -> \"shop.Reviews\" [style=dashed, color=\"#2e8b57\", label=\"Home › Product › Reviews\"]"))
        #expect(dot.contains("legend [shape=plaintext"))
        // A flow's then, and a precondition's redirect, from each screen it guards.
        #expect(dot.contains("\"cart.Checkout\" -> \"account.OrderDetail\" [style=dashed, color=\"#7d3c98\", label=\"then\"];"))
        #expect(dot.contains("\"cart.Checkout\" -> \"shop.Home\" [style=dashed, color=\"#d35400\", label=\"redirect cartNotEmpty\"];"))
    }

    /// A flow whose steps declare no opens is walked step by step: the drawing joins each to the
    /// next, and a route without `by` is labelled with the style it uses.
    @Test func dotDrawsTheNextStepOfStepsWithoutOpens() throws {
        let g = try #require(GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [W, M]}
              W: {flow: {steps: [A, B, C]}}
              A: {}
              B: {opens: [C]}
              C: {}
              M: {presentations: [present]}
            routes:
              modal: M
            """)], baseDirectory: "/g").graph)
        let dot = g.dot()
        #expect(dot.contains("\"app.A\" -> \"app.B\" [style=dotted, label=\"next\"];"))
        #expect(dot.contains("\"app.B\" -> \"app.C\";") && !dot.contains("\"app.B\" -> \"app.C\" [style=dotted"), "B's own opens, no next edge")
        #expect(dot.contains("\"route:app.modal\" -> \"app.M\" [style=dashed, color=\"#2f6fbf\", label=\"present\"]"), "\(dot)")
    }

    @Test func describeListsTheResolvedGraph() throws {
        let g = try #require(GraphLoader.load(directory: dir).graph)
        let d = g.describe()
        #expect(d["root"]?["tabs"] == ["shop.Home", "cart.Cart", "account.Account"])
        #expect(d["coordinators"]?["shop.Product"]?["setup"]?["required"] == ["id"])
        #expect(d["coordinators"]?["cart.Checkout"]?["flow"]?["steps"] == ["cart.Address", "cart.Payment", "cart.Confirm"])
        #expect(d["coordinators"]?["shop.Reviews"]?["mediation"]?["productId"] == "$source.id")
        #expect(d["preconditions"]?["account.loggedIn"]?["recover"]?["flow"] == "account.Login")
        #expect(d["routes"]?["shop.showProduct"]?["to"] == "shop.Product")
        // What a flow goes on to, where a failing precondition sends the navigation instead, and
        // the facts a recovery flow establishes, as the module files write them.
        #expect(d["coordinators"]?["cart.Checkout"]?["flow"]?["then"] == ["to": "account.OrderDetail", "with": ["orderId": "$result.orderId"]])
        #expect(d["preconditions"]?["cart.cartNotEmpty"]?["redirect"] == ["to": "shop.Home", "by": "select"])
        #expect(d["preconditions"]?["account.loggedIn"]?["recover"]?["facts"] == ["loggedIn": true, "user": "$result.user"])
        // A target alone is its name.
        let plain = try #require(GraphLoader.load(sources: [GraphSource(file: "/g/app.yaml", text: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [F]}
              Done: {}
              F: {flow: {start: S, steps: [S], then: Done}, opens: [Done]}
              S: {preconditions: [p]}
            preconditions:
              p: {check: {fact: x, exists: true}, redirect: Done}
            """)], baseDirectory: "/g").graph).describe()
        #expect(plain["coordinators"]?["app.F"]?["flow"]?["then"] == "app.Done")
        #expect(plain["preconditions"]?["app.p"]?["redirect"] == "app.Done")
        #expect(plain["preconditions"]?["app.p"]?["recover"] == nil)
    }
}

/// Just enough of JSON Schema draft 7 to check module files against navgraph.schema.json:
/// type, properties, additionalProperties, required, items, minItems, enum, const, oneOf, anyOf,
/// $ref (local), pattern, patternProperties, propertyNames, minLength, minimum.
struct MiniSchemaValidator {
    let root: JSONValue

    func validate(_ v: JSONValue) -> [String] {
        var out: [String] = []
        check(v, root, "", &out)
        return out
    }

    private func resolve(_ s: JSONValue) -> JSONValue {
        guard let ref = s["$ref"]?.stringValue, ref.hasPrefix("#/") else { return s }
        var node = root
        for p in ref.dropFirst(2).split(separator: "/") { node = node[String(p)] ?? .null }
        return node
    }

    private func typeOK(_ v: JSONValue, _ t: String) -> Bool {
        switch (t, v) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null): return true
        case ("integer", .int): return true
        case ("number", .int), ("number", .double): return true
        default: return false
        }
    }

    private func check(_ v: JSONValue, _ schema: JSONValue, _ at: String, _ out: inout [String]) {
        let s = resolve(schema)
        if let t = s["type"] {
            let names = t.arrayValue?.compactMap(\.stringValue) ?? [t.stringValue ?? ""]
            if !names.contains(where: { typeOK(v, $0) }) { out.append("\(at): not \(names)"); return }
        }
        if let e = s["enum"]?.arrayValue, !e.contains(v) { out.append("\(at): not in enum") }
        if let c = s["const"], c != v { out.append("\(at): not \(c)") }
        if let one = s["oneOf"]?.arrayValue {
            let passing = one.filter { sub in var o: [String] = []; check(v, sub, at, &o); return o.isEmpty }.count
            if passing != 1 { out.append("\(at): matches \(passing) of oneOf") }
        }
        if let any = s["anyOf"]?.arrayValue,
           !any.contains(where: { sub in var o: [String] = []; check(v, sub, at, &o); return o.isEmpty }) {
            out.append("\(at): matches none of anyOf")
        }
        if case .string(let str) = v {
            if let p = s["pattern"]?.stringValue, let r = try? Regex(p), (try? r.firstMatch(in: str)) == nil { out.append("\(at): pattern \(p)") }
            if let m = s["minLength"]?.intValue, str.count < m { out.append("\(at): too short") }
        }
        if let m = s["minimum"]?.doubleValue, let d = v.doubleValue, d < m { out.append("\(at): below minimum") }
        if case .array(let a) = v {
            if let m = s["minItems"]?.intValue, a.count < m { out.append("\(at): fewer than \(m) items") }
            if let items = s["items"] { for (i, x) in a.enumerated() { check(x, items, "\(at)/\(i)", &out) } }
        }
        if case .object(let o) = v {
            for r in s["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where o[r] == nil { out.append("\(at): missing \(r)") }
            let props = s["properties"]?.objectValue
            for (k, x) in o {
                if let pn = s["propertyNames"] { check(.string(k), pn, "\(at)/\(k)", &out) }
                if let p = props?[k] { check(x, p, "\(at)/\(k)", &out); continue }
                if let pp = s["patternProperties"]?.objectValue,
                   let match = pp.first(where: { (try? Regex($0.key).firstMatch(in: k)) != nil }) {
                    if match.value != .bool(true) { check(x, match.value, "\(at)/\(k)", &out) }
                    continue
                }
                switch s["additionalProperties"] {
                case .bool(false)?: out.append("\(at)/\(k): not allowed")
                case .object(let sub)?: check(x, .object(sub), "\(at)/\(k)", &out)
                default: break
                }
            }
        }
    }
}

@Suite struct AbilityBitsTests {
    /// The bits every navigation checks say what the abilities (`opens`) say, for every pair.
    @Test func canOpenAgreesWithOpens() throws {
        let graph = try #require(GraphLoader.loadEmbeddedExample().graph)
        for c in graph.coordinators {
            for t in -1...graph.coordinators.count + 64 {
                #expect(c.canOpen(t) == c.opensSet.contains(t), "\(c.name) → \(t)")
            }
        }
    }

    /// The bits span only the words from a coordinator's lowest ability to its highest, and none when
    /// those are far apart: a chain of 3,000 screens (each opening the next) took words up to its
    /// ability's index, 70,000 for the chain, the square of the screens (1.2 GB at 120,000).
    /// Whichever form a coordinator takes, `canOpen` says what `opens` says.
    @Test func abilitiesTakeMemoryByTheirCountNotTheirIndex() throws {
        let n = 3_000
        var lines = ["root: {stack: S0}", "coordinators:"]
        var rng = SplitMix64(seed: 51)
        for i in 0..<n {
            var opens: Set<Int> = [(i + 1) % n]
            switch i % 4 {
            case 0: break  // a chain
            case 1: opens.insert(0)  // far apart: the first and the next
            case 2: for _ in 0..<Int.random(in: 1...40, using: &rng) { opens.insert(Int.random(in: max(0, i - 300)...min(n - 1, i + 300), using: &rng)) }
            default: for _ in 0..<Int.random(in: 1...5, using: &rng) { opens.insert(Int.random(in: 0..<n, using: &rng)) }
            }
            lines.append("  S\(i): {opens: [\(opens.sorted().map { "S\($0)" }.joined(separator: ", "))]}")
        }
        let (g, d) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: lines.joined(separator: "\n") + "\n")], baseDirectory: "/")
        let graph = try #require(g, "\(d.errors.prefix(3))")
        var words = 0
        for c in graph.coordinators {
            #expect(c.opensBits.count <= c.opensSet.count + Coordinator.sparseWordsBeyondMembers, "\(c.name): \(c.opensBits.count) words for \(c.opensSet.count)")
            words += c.opensBits.count
            for t in Set(c.opensSet.flatMap { [$0 - 1, $0, $0 + 1, $0 + 64, $0 - 64] } + [-1, -64, 0, n, n + 63, Int.random(in: 0..<n, using: &rng)]) {
                #expect(c.canOpen(t) == c.opensSet.contains(t), "\(c.name) → \(t)")
            }
        }
        #expect(words < 4 * n, "\(words) words of ability bits for \(n) coordinators")
    }
}
