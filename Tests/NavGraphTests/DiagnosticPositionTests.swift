import Testing
@testable import NavGraph

/// Every kind of diagnostic points at the exact token that is wrong, like a compiler: each case
/// marks that token with `»` in its module file, and the diagnostic must start at its line and
/// column and say what it says.
@Suite struct DiagnosticPositionTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let yaml: String
        let says: String
        var testDescription: String { name }
    }

    static let base = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Product, Wizard, Login]}
          Product:
            setup: {type: object, required: [id], properties: {id: {type: string, pattern: "^p[0-9]+$"}}, additionalProperties: false}
            opens: [Reviews]
          Reviews: {setup: {type: object, properties: {productId: {type: string}}}}
          Wizard: {flow: {start: One, steps: [One, Two], result: {type: object}}}
          One: {opens: [Two]}
          Two: {}
          Login: {flow: {start: Credentials, steps: [Credentials]}}
          Credentials: {}

        """

    static let cases: [Case] = [
        Case(name: "unknown key", yaml: "  Extra: {»presentaions: [push]}\n", says: "unknown key `presentaions`"),
        Case(name: "unknown coordinator in opens", yaml: "  Extra: {opens: [»Prodcut]}\n", says: "did you mean `app.Product`?"),
        Case(name: "unknown module", yaml: "  Extra: {opens: [»shpo.Home]}\n", says: "refers to module `shpo`"),
        Case(name: "opens listed twice", yaml: "  Extra: {opens: [Home, »Home]}\n", says: "listed twice in the `opens`"),
        Case(name: "unknown presentation", yaml: "  Extra: {presentations: [»pussh]}\n", says: "is not a presentation style"),
        Case(name: "unknown precondition", yaml: "  Extra: {preconditions: [»nope]}\n", says: "nope"),
        Case(name: "invalid schema", yaml: "  Extra: {setup: {type: object, properties: {n: {type: »lots}}}}\n", says: "invalid setup schema"),
        Case(name: "flow start not a step", yaml: "  Extra: {flow: {start: »Home, steps: [One]}}\n", says: "flow start `app.Home` is not among the flow's steps"),
        Case(name: "mediation not from the source", yaml: "  Extra: {mediation: {productId: »target.id}}\n", says: "must read the source's params"),
        Case(name: "tab that is a container", yaml: "  Tabs: {tabs: [One, »Inner]}\n  Inner: {tabs: [Two]}\nroutes: {t: {to: Tabs}}\n",
             says: "is a tab container itself"),
        Case(name: "tab whose setup refuses no params", yaml: "  Tabs: {tabs: [One, »Product]}\nroutes: {t: {to: Tabs}}\n",
             says: "starts with no params"),
        Case(name: "route to nowhere", yaml: "routes:\n  gone: {to: »Missing}\n", says: "is not a coordinator"),
        Case(name: "a lone dot for a name", yaml: "routes:\n  dot: {to: ».}\n", says: "is not a coordinator name: write Name, or module.Name"),
        Case(name: "a module without a name", yaml: "routes:\n  dot: {to: ».Home}\n", says: "is not a coordinator name"),
        Case(name: "route by a presentation the target refuses", yaml: "  Pushed: {presentations: [push]}\nroutes:\n  p: {to: Pushed, by: »present}\n",
             says: "which its `presentations` do not allow"),
        Case(name: "route constant the setup refuses", yaml: "routes:\n  bad: {to: Product, with: {id: »\"x1\"}}\n", says: "never accepts"),
        Case(name: "route with not a mapping", yaml: "routes:\n  bad: {to: Product, with: »[1]}\n", says: "must be a mapping of setup fields"),
        Case(name: "link parameter not declared", yaml: "links:\n  \"/p\": [Home, {to: Product, with: {id: »\":n\"}}]\n", says: "which the pattern does not declare"),
        Case(name: "link parameter unused", yaml: "links:\n  »\"/p/:n/:m\": [Home, {to: Product, with: {id: \":n\"}}]\n", says: "declares `:m` but no entry uses it"),
        Case(name: "link wildcard unused", yaml: "links:\n  »\"/f/:n/*rest\": [Home, {to: Product, with: {id: \":n\"}}]\n", says: "declares `*rest` but no entry uses it"),
        Case(name: "link optional unused", yaml: "links:\n  »\"/f/:n/:q?\": [Home, {to: Product, with: {id: \":n\"}}]\n", says: "declares `:q?` but no entry uses it"),
        Case(name: "link constant the setup refuses", yaml: "links:\n  \"/p\": [Home, {to: Product, with: {id: »\"x\"}}]\n", says: "never accepts"),
        Case(name: "link screen the one below cannot open", yaml: "links:\n  \"/skip\": [Home, »Reviews]\n", says: "which cannot open it"),
        Case(name: "link screen presented that only a push shows", yaml: "  Extra: {opens: [Pushed]}\n  Pushed: {presentations: [push]}\nlinks:\n  \"/x\": [Extra, {to: Pushed, by: »present}]\n",
             says: "link `/x` shows `app.Pushed` by present, which its `presentations` (push) do not allow, so the link can never open"),
        Case(name: "link screen pushed that only a replace shows", yaml: "  Extra: {opens: [Shown]}\n  Shown: {presentations: [replace]}\nlinks:\n  \"/y\": [Extra, »Shown]\n",
             says: "shows `app.Shown` by push, which its `presentations` (replace) do not allow"),
        Case(name: "link entry naming nothing", yaml: "links:\n  \"/x\": [Home, »Nowhere]\n", says: "is not a coordinator"),
        Case(name: "second root", yaml: "»root: {stack: Home}\n", says: "duplicate key `root`"),
        Case(name: "duplicate coordinator", yaml: "  »Home: {}\n", says: "duplicate key `Home`"),
        Case(name: "precondition duration", yaml: "preconditions:\n  slow: {command: [true], timeout: »soon}\n", says: "is not a duration"),
        Case(name: "precondition check missing fact", yaml: "preconditions:\n  c: {check: »{equals: true}}\n", says: "is missing `fact`"),
        Case(name: "precondition check of an empty fact", yaml: "preconditions:\n  c: {check: {fact: »\"\", equals: true}}\n", says: "names the fact \"\""),
        Case(name: "command without argv", yaml: "preconditions:\n  c: {command: »[]}\n", says: "is empty"),
        Case(name: "recovery by a flow that does not exist", yaml: "preconditions:\n  p: {check: {fact: f, equals: true}, recover: {flow: »Logn}}\n",
             says: "which does not exist"),
        Case(name: "recovery by a screen", yaml: "preconditions:\n  p: {check: {fact: f, equals: true}, recover: {flow: »Home}}\n",
             says: "which is a screen, not a flow"),
        Case(name: "recovery facts not a result reference", yaml: "preconditions:\n  p: {check: {fact: f, equals: true}, recover: {flow: Login, facts: {f: »\"$resultuser\"}}}\n",
             says: "is not a result reference"),
        Case(name: "redirect by a presentation the target refuses", yaml: "  Pushed: {presentations: [push]}\npreconditions:\n  p: {check: {fact: f, equals: true}, redirect: {to: Pushed, by: »present}}\n",
             says: "which its `presentations` do not allow"),
        Case(name: "flow then to nowhere", yaml: "  Extra: {flow: {start: Step, steps: [Step], then: »Nowhere}}\n  Step: {}\n", says: "is not a coordinator"),
    ]

    /// Splices `extra` into the base graph: coordinator lines go under `coordinators:`, the rest after it.
    static func file(_ extra: String) -> String {
        let lines = extra.split(separator: "\n", omittingEmptySubsequences: false)
        let nested = lines.prefix { $0.hasPrefix("  ") }
        var text = base
        if !nested.isEmpty {
            text = text.replacingOccurrences(of: "  Credentials: {}\n", with: "  Credentials: {}\n" + nested.joined(separator: "\n") + "\n")
        }
        return text + lines.dropFirst(nested.count).joined(separator: "\n")
    }

    @Test(arguments: cases) func pointsAtTheToken(_ c: Case) throws {
        let text = Self.file(c.yaml)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let line = try #require(lines.firstIndex { $0.contains("»") }) + 1
        let column = lines[line - 1].distance(from: lines[line - 1].startIndex, to: lines[line - 1].firstIndex(of: "»")!) + 1
        let clean = text.replacingOccurrences(of: "»", with: "")
        let all = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: clean)], baseDirectory: "/g").diagnostics.sorted
        let errors = all.filter { $0.severity == .error }
        let at = errors.filter { $0.location.line == line && $0.location.column == column && $0.message.contains(c.says) }
        #expect(at.count == 1, "expected one error at app.yaml:\(line):\(column) saying \(c.says.debugDescription); got:\n\(all.map(\.description).joined(separator: "\n"))\n\(clean)")
    }

    /// The mediation from the issue: a misspelt source field is reported at the expression, not at
    /// the coordinator that declares it.
    @Test func aMisspeltMediationPointsAtItsValue() {
        let text = Self.base.replacingOccurrences(of: "  Reviews: {setup: {type: object, properties: {productId: {type: string}}}}",
                                                  with: "  Reviews:\n    setup: {type: object, properties: {productId: {type: string}}}\n    mediation: {productId: \"$source.Id\"}")
        let d = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: text)], baseDirectory: "/g").diagnostics.errors
        #expect(d.map(\.description) == ["app.yaml:9:28: error: `app.Reviews` fills `productId` from `$source.Id`, but the setup of its source `app.Product` does not declare `Id`; did you mean `$source.id`?"])
    }
}
