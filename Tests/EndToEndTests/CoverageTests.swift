import Foundation
import JSON
import NavClient
import NavTesting
import Testing

/// `coverage.start`, `coverage.stop`, `coverage.report` through the socket: what navigations
/// exercised of the graph, by run, as JSON, text and LCOV (read by Debian's `genhtml`).
@Suite struct CoverageTests {
    /// A graph with a guarded screen (recovered through a flow), a route, a link and a screen no
    /// test reaches, written to a file so that the LCOV's source lines exist for genhtml.
    static let graph = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [List, Secret]}
          List: {opens: [Item]}
          Item:
            setup: {type: object, properties: {id: {type: string}}}
            preconditions: [signedIn]
          Secret: {}
          SignIn:
            flow: {start: Form, steps: [Form]}
          Form: {}
        preconditions:
          signedIn:
            check: {fact: signedIn, equals: true}
            recover: {flow: SignIn, facts: {signedIn: true}}
        routes:
          list: {to: List, by: push}
        links:
          "/item/:id": [Home, List, {to: Item, with: {id: ":id"}}]
        """

    static func item(_ report: JSONValue, _ list: String, _ key: String, _ name: String) -> JSONValue? {
        report[list]?.arrayValue?.first { $0[key]?.stringValue == name }
    }

    /// NavClient gives the report as a value (``CoverageSummary``), run by run.
    @Test func navClientReadsTheReportAsAValue() throws {
        let d = try Daemon()
        let c = try NavClient(socketPath: d.socketPath)
        _ = try c.call(.coverageStart(run: "suite"))
        _ = try c.call(.navigate(to: "shop.Product", with: ["id": "p1"]))
        _ = try c.call(.coverageStop(run: "suite"))
        _ = try c.call(.navigate(to: "shop.Reviews"))
        let all = try c.coverage()
        let suite = try c.coverage(run: "suite")
        #expect(all.run == "all" && all.commits == 2 && suite.run == "suite" && suite.commits == 1)
        #expect(all.totals[.edges]?.covered == 2 && suite.totals[.edges]?.covered == 1)
        #expect(all.totals[.edges]?.total == 23)
        #expect(all.modules["shop"]?[.edges]?.covered == 2)
        #expect(suite.percent(of: .edges) < all.percent(of: .edges))
        #expect(suite.missed.contains { $0.hasSuffix("edge shop.Product → shop.Reviews") })
        #expect(!all.missed.contains { $0.hasSuffix("edge shop.Product → shop.Reviews") })
        #expect(throws: NavClientError.self) { try CoverageSummary(["run": 1]) }
    }

    /// Coverage is kept beside the state file: a stop and a start add up, a named run that was
    /// counting counts again, and a damaged file is replaced, not fatal.
    @Test func coverageSurvivesARestartBesideTheStateFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock")
        do {
            let d = try Daemon(arguments: ["--state", state], socketPath: sock)
            let c = try d.client()
            try c.call("coverage.start", ["run": "suite"])
            try c.call("navigate", ["to": "shop.Product", "with": ["id": "p1"]])
            try c.call("navigate", ["to": "shop.Reviews"])
            #expect(d.stop(signal: SIGTERM) == 0)
        }
        #expect(FileManager.default.fileExists(atPath: state + ".coverage"))
        let d = try Daemon(arguments: ["--state", state], socketPath: sock)
        let c = try d.client()
        try c.call("dismiss")
        try c.call("navigate", ["to": "shop.Reviews"])
        for run in ["all", "suite"] {
            let r = try c.call("coverage.report", ["run": .string(run)])
            let edge = r["edges"]?.arrayValue?.first { $0["from"] == "shop.Product" && $0["to"] == "shop.Reviews" }
            #expect(edge?["taken"]?["push"] == 2, "\(run): \(String(describing: edge))")
            #expect(r["commits"] == 3, "\(run)")  // navigations; a dismiss commits no navigation
        }
        d.stop(signal: SIGTERM)
        // A file navd did not write is logged and replaced at the next write.
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: state + ".coverage"))
        let d2 = try Daemon(arguments: ["--state", state], socketPath: sock)
        let c2 = try d2.client()
        #expect(try c2.call("coverage.report")["commits"] == 0)
        #expect(d2.stderr.contains("coverage not read back"))
        try c2.call("dismiss")
        try c2.call("navigate", ["to": "shop.Reviews"])
        d2.stop(signal: SIGTERM)
        let saved = try JSONParser(maxDepth: 64).parse(Array(try Data(contentsOf: URL(fileURLWithPath: state + ".coverage"))))
        #expect(saved["runs"]?.arrayValue?.first?["report"]?["commits"] == 1)
        // A file larger than navd writes (64 MiB, sparse here) is not read into memory at all.
        #expect(truncate(state + ".coverage", off_t(64 << 20) + 1) == 0)
        let d3 = try Daemon(arguments: ["--state", state], socketPath: sock)
        #expect(try d3.client().call("coverage.report")["commits"] == 0)
        #expect(d3.stderr.contains("larger than navd writes"))
    }

    /// A report that cannot fit in `--max-output` is refused before it is written, by a bound of its
    /// size that never passes the size (a report that fits is written out).
    @Test func aReportPastMaxOutputIsRefusedBeforeItIsWritten() throws {
        for (screens, opens) in [(40, 3), (300, 20)] {
            let yaml = "root: {stack: S0}\ncoordinators:\n"
                + (0..<screens).map { i in "  S\(i): {opens: [\((1...opens).map { "S\((i + $0) % screens)" }.joined(separator: ", "))]}\n" }.joined()
            let d = try Daemon(graph: yaml, arguments: ["--max-output", "65536"])
            let c = try d.client()
            if screens == 40 {
                // Its bound is below its size: a report that fits is written out.
                let report = try c.call("coverage.report")
                #expect(report["edges"]?.arrayValue?.count == screens * opens)
                #expect(try c.call("coverage.report", ["format": "text"])["format"] == "text")
            } else {
                let refused = try c.callError("coverage.report")
                let message = refused["message"]?.stringValue ?? ""
                #expect(refused["data"]?["kind"] == "limitExceeded" && refused["data"]?["limit"] == "--max-output", "\(refused)")
                #expect(message.contains("the answer would be at least"), "\(message)")
                // Text names 200 of the 6,000 edges never taken, and counts the rest.
                let text = try c.call("coverage.report", ["format": "text"])["report"]?.stringValue ?? ""
                #expect(text.contains("Never exercised (6299):") && text.contains("… and 6099 more (the json and lcov reports list them all)"), "\(text.suffix(300))")
                #expect(text.split(separator: "\n").filter { $0.contains("  coordinator app.") || $0.contains("  edge app.") }.count == 200)
            }
        }
    }

    @Test func aReportCountsWhatNavigationsExercised() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try c.call("navigate", ["route": "list"])
        // Guarded: the check fails, the recovery flow is presented, completing it passes the check.
        let watcher = try d.client()
        try watcher.call("subscribe")
        try c.sendRaw(#"{"jsonrpc":"2.0","id":77,"method":"navigate","params":{"to":"app.Item","with":{"id":"a"}}}"# + "\n")
        let pending = try watcher.notification("navigationPending")
        let flow = try #require(pending["params"]?["flow"]?["node"]?.stringValue, "\(pending)")
        try watcher.call("flowComplete", ["flow": .string(flow), "result": [:]])
        // The navigation's reply comes after the flow's end (flowCompleted, to its starter).
        var replied = false
        while !replied, let line = try c.readLine(timeout: 10) {
            replied = String(decoding: line, as: UTF8.self).contains(#""id":77,"result""#)
        }
        #expect(replied)
        try c.call("open", ["url": "/item/b"])
        // A second evaluation that passes at once (the fact is set now).
        try c.call("dismiss")
        try c.call("navigate", ["to": "Item", "with": ["id": "c"]])

        let r = try c.call("coverage.report")
        #expect(r["run"] == "all")
        #expect(Self.item(r, "coordinators", "name", "app.Item")?["shown"]?.intValue == 3, "\(r)")
        #expect(Self.item(r, "coordinators", "name", "app.Secret")?["shown"] == 0)
        let edge = r["edges"]?.arrayValue?.first { $0["from"] == "app.List" && $0["to"] == "app.Item" }
        #expect(edge?["taken"]?["push"]?.intValue == 2, "\(edge ?? .null)")
        #expect(Self.item(r, "routes", "name", "app.list")?["followed"] == 1)
        #expect(Self.item(r, "links", "pattern", "/item/:id")?["opened"] == 1)
        // The stack the link built; a route is resolved when named, followed when committed.
        #expect(Self.item(r, "links", "pattern", "/item/:id")?["stacks"] == [["app.Home", "app.List", "app.Item"]])
        #expect(Self.item(r, "routes", "name", "app.list")?["resolved"] == 1)
        #expect(throws: (any Error).self) { try c.call("navigate", ["route": "list", "with": ["nope": 1]]) }
        let again = try c.call("coverage.report")
        #expect(Self.item(again, "routes", "name", "app.list")?["resolved"] == 2 && Self.item(again, "routes", "name", "app.list")?["followed"] == 1)
        let outcomes = Self.item(r, "preconditions", "name", "app.signedIn")?["outcomes"]
        #expect(outcomes?["recovered"] == 1 && outcomes?["passed"] == 2, "\(outcomes ?? .null)")
        let signIn = Self.item(r, "flows", "name", "app.SignIn")
        #expect(signIn?["started"] == 1 && signIn?["completed"] == 1 && signIn?["cancelled"] == 0)
        #expect(r["totals"]?["coordinators"] == ["covered": 5, "total": 6], "\(r["totals"] ?? .null)")
        let missed = r["missed"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(missed.contains { $0.hasSuffix("app.yaml:8: coordinator app.Secret") }, "\(missed)")
        #expect(missed.contains { $0.contains("edge app.Home → app.Secret") }, "\(missed)")

        let text = try c.call("coverage.report", ["format": "text"])["report"]?.stringValue ?? ""
        #expect(text.contains("TOTAL") && text.contains("5/6 83%") && text.contains("Never exercised"), "\(text)")
        #expect(text.contains("app.yaml:8  coordinator app.Secret"), "\(text)")

        // LCOV: genhtml (Debian's lcov) accepts it and renders the graph file.
        let lcov = try c.call("coverage.report", ["format": "lcov"])["report"]?.stringValue ?? ""
        #expect(lcov.contains("SF:") && lcov.contains("DA:8,0") && lcov.contains("end_of_record"), "\(lcov)")
        let dir = TempDir()
        defer { dir.remove() }
        try lcov.write(toFile: dir.file("navd.lcov"), atomically: true, encoding: .utf8)
        let html = try runCommand("/usr/bin/genhtml", [dir.file("navd.lcov"), "--output-directory", dir.file("html"), "--quiet"])
        #expect(html.status == 0, "\(html)")
        #expect(FileManager.default.fileExists(atPath: dir.file("html/index.html")))

        // navctl prints the same reports.
        let table = try runCommand(Repo.binary("navctl"), ["coverage", "--socket", d.socketPath])
        #expect(table.status == 0 && table.stdout == text + "\n", "\(table)")
        let traced = try runCommand(Repo.binary("navctl"), ["coverage", "report", "--format", "lcov", "--socket", d.socketPath])
        #expect(traced.stdout == lcov + "\n")
        #expect(try runCommand(Repo.binary("navctl"), ["coverage", "start", "nightly", "--socket", d.socketPath]).status == 0)
        #expect(try c.call("coverage.report", ["run": "nightly"])["commits"] == 0)
    }

    /// A flow is started when a tree is made with it, not only when navigated to: the root's (an
    /// onboarding flow; again at a `reset`), a tab container's tab, one a deep link builds below its last.
    @Test func flowsMadeWithATreeAreStarted() throws {
        let d = try Daemon(graph: """
            root: {stack: Onboarding}
            coordinators:
              Onboarding: {flow: {steps: [Welcome]}, then: {to: Shell, by: root}, opens: [Shell]}
              Welcome: {}
              Shell: {tabs: [Feed, Setup]}
              Feed: {opens: [Wizard]}
              Setup: {flow: {steps: [S1]}}
              S1: {}
              Wizard: {flow: {steps: [W1, W2]}}
              W1: {opens: [W2]}
              W2: {}
            links:
              "/wizard/w2": [Feed, Wizard, W2]
            """)
        let c = try d.client()
        let flow = try c.call("tree")["visible"]!.arrayValue![1]
        try c.call("flowComplete", ["flow": flow, "result": [:]])
        try c.call("open", ["url": "/wizard/w2"])
        try c.call("reset")  // the root, fresh: its flow started again
        let r = try c.call("coverage.report")
        for (name, started) in [("app.Onboarding", 2), ("app.Setup", 1), ("app.Wizard", 1)] {
            #expect(Self.item(r, "flows", "name", name)?["started"]?.intValue == started, "\(name): \(r["flows"] ?? .null)")
        }
        #expect(Self.item(r, "flows", "name", "app.Onboarding")?["completed"] == 1)
    }

    @Test func namedRunsCountFromTheirStartToTheirStop() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try c.call("navigate", ["to": "List"])
        try c.call("coverage.start", ["run": "suite-a"])
        try c.call("dismiss")
        try c.call("navigate", ["to": "Secret"])
        try c.call("coverage.stop", ["run": "suite-a"])
        try c.call("dismiss")
        try c.call("navigate", ["to": "List"])
        let a = try c.call("coverage.report", ["run": "suite-a"])
        #expect(a["run"] == "suite-a" && a["commits"] == 1, "\(a)")
        #expect(Self.item(a, "coordinators", "name", "app.Secret")?["shown"] == 1)
        #expect(Self.item(a, "coordinators", "name", "app.List")?["shown"] == 0, "before the run started, after it stopped")
        let all = try c.call("coverage.report")
        #expect(all["commits"] == 3 && Self.item(all, "coordinators", "name", "app.List")?["shown"] == 2)
        // Refusals: an unknown run, the reserved name, a 17th run.
        #expect(try c.callError("coverage.report", ["run": "nope"])["data"]?["param"] == "run")
        #expect(try c.callError("coverage.start", ["run": "all"])["data"]?["param"] == "run")
        for method in ["coverage.start", "coverage.stop"] {
            let empty = try c.callError(method, ["run": ""])
            #expect(empty["data"]?["kind"] == "invalidParams" && empty["message"]?.stringValue?.hasPrefix("the run name is empty") == true, "\(empty)")
        }
        for i in 0..<15 { try c.call("coverage.start", ["run": .string("r\(i)")]) }
        #expect(try c.callError("coverage.start", ["run": "one-too-many"])["data"]?["kind"] == "limitExceeded")
        try c.call("coverage.start", ["run": "suite-a"])  // started again: emptied, not a new one
        #expect(try c.callError("coverage.report", ["format": "xml"])["data"]?["param"] == "format")
    }

    @Test func aReloadStartsCountingAgain() throws {
        let d = try Daemon(graph: Self.graph)
        let c = try d.client()
        try c.call("navigate", ["to": "Secret"])
        #expect(try c.call("coverage.report")["commits"] == 1)
        #expect(try c.call("graph.reload", ["force": true])["ok"] == true)
        #expect(try c.call("coverage.report")["commits"] == 0)
    }
}
