import Foundation
import JSON
import NavTesting
import Testing

/// `navd check`, `navd graph` and `graph.describe`, run as a user runs them.
@Suite struct GraphCommandTests {
    let example = Repo.file("Examples/shop").path

    @Test func checkIsCleanOnTheExample() throws {
        let r = try runCommand(Repo.binary("navd"), ["check", example])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("0 errors, 0 warnings"))
    }

    @Test func checkListsEveryProblemOfABrokenCopyWithPositions() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for f in try FileManager.default.contentsOfDirectory(atPath: example) where f.hasSuffix(".yaml") {
            var text = try String(contentsOfFile: example + "/" + f, encoding: .utf8)
            if f == "shop.yaml" {
                text = text.replacingOccurrences(of: "opens: [Reviews, WriteReview", with: "opens: [Reveiws, WriteReview")
                text = text.replacingOccurrences(of: "presentations: [push, present, replace]", with: "presentations: [push, present, slide]")
            }
            if f == "cart.yaml" {
                text = text.replacingOccurrences(of: "check: {fact: cart.items, notEquals: 0}", with: "check: {fact: cart.items}")
            }
            if f == "account.yaml" {
                text = text.replacingOccurrences(of: "recover: {flow: Login,", with: "recover: {flow: Logon,")
            }
            try text.write(toFile: dir.file(f), atomically: true, encoding: .utf8)
        }
        let r = try runCommand(Repo.binary("navd"), ["check", dir.path])
        #expect(r.status == 1)
        let lines = r.stderr.split(separator: "\n").map(String.init).filter { $0.contains(": error: ") }
        #expect(lines.count == 4, "\(r.stderr)")
        #expect(lines.contains { $0.hasPrefix(dir.file("account.yaml") + ":") && $0.contains("recovers with flow `account.Logon`, which does not exist; did you mean `account.Login`?") })
        #expect(lines.contains { $0.hasPrefix(dir.file("cart.yaml") + ":") && $0.contains("the check of `cart.cartNotEmpty` is missing its test") })
        #expect(lines.contains { $0.hasPrefix(dir.file("shop.yaml") + ":") && $0.contains("`shop.Reveiws` is not a coordinator; did you mean `shop.Reviews`?") })
        #expect(lines.contains { $0.contains("`slide` is not a presentation style; use push, present, replace, root or select") })
        // FILE:LINE:COLUMN, sorted by file then line.
        let keys = lines.map { l -> (String, Int) in
            let parts = l.split(separator: ":")
            return (String(parts[0]), Int(parts[1]) ?? -1)
        }
        #expect(keys.map(\.1).allSatisfy { $0 > 0 })
        #expect(keys.sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }.map(\.0) == keys.map(\.0))
    }

    /// `navd check --policy FILE` checks a policy file as `--policy` reads it, beside the graph.
    @Test func checkReadsAPolicyFileToo() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let policy = dir.file("policy.yaml")
        try "uids: {\"abc\": [x]}\n".write(toFile: policy, atomically: true, encoding: .utf8)
        var r = try runCommand(Repo.binary("navd"), ["check", "--policy", policy])
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(policy):1:8: error: `abc` under `uids` is not a numeric uid"), "\(r.stderr)")
        #expect(r.stderr.contains("\(policy): 1 error\n") && r.stderr.contains("embedded example: 0 errors"), "\(r.stderr)")
        try "uids: {\"1000\": [customer]}\n".write(toFile: policy, atomically: true, encoding: .utf8)
        r = try runCommand(Repo.binary("navd"), ["check", "--policy", policy])
        #expect(r.status == 0 && r.stderr.contains("\(policy): 0 errors"), "\(r.stderr)")
        r = try runCommand(Repo.binary("navd"), ["check", "--policy", dir.file("missing.yaml")])
        #expect(r.status == 1 && r.stderr.contains("cannot read the policy file"), "\(r.stderr)")
    }

    @Test func navdRefusesToStartOnABrokenGraph() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try "root: {stack: Hom}\ncoordinators: {Home: {}}\n".write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("s.sock"), "--ephemeral", "--graph", dir.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("app.yaml:1:15: error: `app.Hom` (the root) is not a coordinator; did you mean `app.Home`?"), "\(r.stderr)")
    }

    @Test func navdPrintsTwentyOfEachKindOfProblemAndCountsTheRest() throws {
        // 30 unknown names (errors) and 30 coordinators nothing reaches (warnings).
        let dir = TempDir()
        defer { dir.remove() }
        let yaml = "root: {stack: Home}\ncoordinators:\n  Home: {opens: [\((0..<30).map { "X\($0)" }.joined(separator: ", "))]}\n"
            + (0..<30).map { "  S\($0): {}\n" }.joined()
        try yaml.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
        let r = try runCommand(Repo.binary("navd"), ["--socket", dir.file("s.sock"), "--ephemeral", "--graph", dir.path])
        let lines = r.stderr.split(separator: "\n")
        #expect(r.status == 1)
        #expect(lines.filter { $0.contains(": error: ") }.count == 20 && lines.filter { $0.contains(": warning: ") }.count == 20, "\(r.stderr)")
        #expect(r.stderr.contains("… and 10 more errors (`navd check \(dir.path)` lists them all)"), "\(r.stderr)")
        #expect(r.stderr.contains("… and 10 more warnings (`navd check \(dir.path)` lists them all)"), "\(r.stderr)")
        // The errors come first, then the warnings.
        let lastError = try #require(lines.lastIndex { $0.contains(": error: ") })
        let firstWarning = try #require(lines.firstIndex { $0.contains(": warning: ") })
        #expect(lastError < firstWarning)
        // navd check lists them all.
        let all = try runCommand(Repo.binary("navd"), ["check", dir.path])
        #expect(all.stderr.split(separator: "\n").filter { $0.contains(": error: ") }.count == 30)
        #expect(all.stderr.split(separator: "\n").filter { $0.contains(": warning: ") }.count == 30)
    }

    @Test func graphDotRendersWithGraphviz() throws {
        let r = try runCommand(Repo.binary("navd"), ["graph", example, "--format", "dot"])
        #expect(r.status == 0)
        #expect(r.stdout.hasPrefix("digraph navd {"))
        let dir = TempDir()
        defer { dir.remove() }
        try r.stdout.write(toFile: dir.file("g.dot"), atomically: true, encoding: .utf8)
        let png = try runCommand("/usr/bin/dot", ["-Tpng", "-o", dir.file("g.png"), dir.file("g.dot")])
        #expect(png.status == 0, "\(png.stderr)")
        let size = (try? FileManager.default.attributesOfItem(atPath: dir.file("g.png"))[.size] as? Int) ?? 0
        #expect(size > 10_000)
    }

    @Test func graphJsonEqualsGraphDescribeOverTheSocket() throws {
        let r = try runCommand(Repo.binary("navd"), ["graph", "--format", "json"])
        #expect(r.status == 0)
        let printed = try JSONParser(maxDepth: 256).parse(r.stdout)
        let d = try Daemon()  // no --graph: the embedded example
        let described = try d.client().call("graph.describe")
        #expect(described == printed)
        #expect(described["modules"] == ["account", "cart", "shop"])
    }
}
