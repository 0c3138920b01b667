import Foundation
import JSON
import NavClient
import NavTesting
import Testing
@testable import NavServer

/// Committed means acknowledged as committed: random navigations that wait (a command, a provider,
/// a leave guard), with every presentation style and `popUpTo`, from random screens, overlapping;
/// random dismisses. For every reply, `ok` ⇔ its change is in the tree at its version, as a
/// subscriber's mirror rebuilds it from `stackChanged` alone.
extension InProcess {
    @Suite struct CommittedPropertyTests {
        static let graph = """
            root: {tabs: [Home, Other]}
            coordinators:
              Home: {opens: [A, Cmd, Ask, Guarded, F]}
              Other: {opens: [A, Cmd, Ask, Guarded]}
              A: {setup: {type: object, properties: {m: {type: string}}}, opens: [A, Cmd, Ask, Guarded, F], presentations: [push, present, replace, root]}
              Cmd: {setup: {type: object, properties: {m: {type: string}}}, opens: [A, Cmd, Ask, Guarded], preconditions: [cmd], presentations: [push, present, replace, root]}
              Ask: {setup: {type: object, properties: {m: {type: string}}}, opens: [A, Cmd, Ask, Guarded], preconditions: [ask], presentations: [push, present, replace, root]}
              Guarded: {setup: {type: object, properties: {m: {type: string}}}, opens: [A, Cmd, Ask], leave: [ask], presentations: [push, present, replace]}
              F: {setup: {type: object, properties: {m: {type: string}}}, flow: {start: S}, opens: [A], presentations: [push, present]}
              S: {opens: [A, Cmd]}
            preconditions:
              cmd: {command: [sh, -c, "cat >/dev/null; case \\"$0\\" in *7) exit 1;; esac", "{with.m}"], timeout: 5s}
              ask: {provider: true, timeout: 5s}
            """

        /// Markers (`with.m`) of every node of `tree`, and node ids.
        func contents(_ tree: JSONValue) -> (markers: Set<String>, ids: Set<String>) {
            var markers = Set<String>(), ids = Set<String>()
            var todo = [tree]
            while let n = todo.popLast() {
                if let id = n["id"]?.stringValue { ids.insert(id) }
                if n["kind"] == "screen", let id = n["id"]?.stringValue { ids.insert("screen:" + id) }
                if let m = n["params"]?["m"]?.stringValue { markers.insert(m) }
                todo += n["children"]?.arrayValue ?? []
                if let p = n["presented"] { todo.append(p) }
            }
            return (markers, ids)
        }

        @Test(arguments: [UInt64(11), 12, 13])
        func everyReplySaysWhetherItsChangeIsInTheTree(seed: UInt64) throws {
            var rng = SplitMix64(seed: seed)
            let p = InProcessServer(graph: CommittedPropertyTests.graph)
            let provider = p.client(), watcher = p.client(), driver = p.client()
            _ = try p.call(provider, 1, "provide", ["preconditions": ["app.ask"]])
            var mirror = TreeMirror(snapshot: try p.call(watcher, 1, "subscribe")["result"]!)
            var history: [Int: (markers: Set<String>, ids: Set<String>)] = [0: contents(mirror.root)]
            var providerLines = LineReader(), watcherLines = LineReader(), driverLines = LineReader()
            var sent: [Int: (method: String, marker: String?, select: Bool)] = [:]
            var replies: [Int: JSONValue] = [:]
            let styles: [String?] = [nil, "push", "present", "replace", "root", "select"]
            let targets = ["app.A", "app.Cmd", "app.Ask", "app.Guarded", "app.F", "app.Home", "app.Other"]
            var nextId = 100

            /// Reads what arrived: the provider answers (passed, mostly), the watcher's mirror moves on.
            func pump() throws {
                for m in providerLines.take(provider) where m["method"]?.stringValue?.hasPrefix("precondition.") == true {
                    let yes = Int.random(in: 0..<5, using: &rng) > 0
                    let key = m["method"] == "precondition.evaluate" ? "passed" : "recovered"
                    provider.send(JSONWriter.string(["jsonrpc": "2.0", "id": m["id"]!, "result": [key: .bool(yes)]]) + "\n")
                }
                for n in watcherLines.take(watcher) where n["method"] == "stackChanged" {
                    try mirror.apply(n["params"]!)
                    history[mirror.version] = contents(mirror.root)
                }
                for r in driverLines.take(driver) {
                    if let id = r["id"]?.intValue, r["method"] == nil { replies[id] = r }
                }
            }

            for round in 0..<150 {
                // A few requests at once: they overlap while some wait.
                for _ in 0..<Int.random(in: 1...5, using: &rng) {
                    nextId += 1
                    let all = contents(mirror.root).ids
                    let ids = all.filter { !$0.hasPrefix("screen:") }.sorted()
                    let screens = all.filter { $0.hasPrefix("screen:") }.map { String($0.dropFirst(7)) }.sorted()
                    if Int.random(in: 0..<5, using: &rng) == 0 {
                        let node: JSONValue = Bool.random(using: &rng) ? .string(ids.randomElement(using: &rng)!) : .null
                        driver.send(request(nextId, "dismiss", node == .null ? [:] : ["node": node]) + "\n")
                        sent[nextId] = ("dismiss", nil, false)
                        continue
                    }
                    let marker = "k\(seed)-\(round)-\(nextId)"
                    var params: JSONObject = ["to": .string(targets.randomElement(using: &rng)!), "with": ["m": .string(marker)]]
                    if let by = styles.randomElement(using: &rng)! { params["by"] = .string(by) }
                    if Int.random(in: 0..<3, using: &rng) == 0, let from = screens.randomElement(using: &rng) { params["from"] = .string(from) }
                    if Int.random(in: 0..<4, using: &rng) == 0 {
                        params["popUpTo"] = ["to": .string(["app.Home", "app.A", "app.Cmd", "app.Guarded"].randomElement(using: &rng)!),
                                             "inclusive": .bool(Bool.random(using: &rng))]
                    }
                    driver.send(request(nextId, "navigate", .object(params)) + "\n")
                    sent[nextId] = ("navigate", marker, params["by"] == "select")
                }
                for _ in 0..<Int.random(in: 0...30, using: &rng) {
                    p.server.loop.runOnce(wait: false)
                    try pump()
                }
            }
            // Every request is answered (commands exit, providers answer).
            _ = try p.run(until: {
                try pump()
                return sent.keys.allSatisfy { replies[$0] != nil }
            })
            for _ in 0..<20 {
                p.server.loop.runOnce(wait: false)
                try pump()
            }
            #expect(sent.keys.allSatisfy { replies[$0] != nil }, "\(sent.count - replies.count) requests unanswered")
            var committed = 0, refused = 0
            for (id, what) in sent {
                guard let r = replies[id] else { continue }
                if let result = r["result"] {
                    committed += 1
                    let v = try #require(result["version"]?.intValue)
                    let at = try #require(history[v], "version \(v) answered to request \(id) was never published")
                    if let marker = what.marker {
                        let node = try #require(result["node"]?.stringValue)
                        if !node.isEmpty { #expect(at.ids.contains(node), "request \(id): node \(node) is not in the tree at version \(v)") }
                        // What it made carries its marker (a select makes nothing).
                        if !what.select { #expect(at.markers.contains(marker), "request \(id) committed at version \(v), but its node is not in the tree") }
                    } else {
                        for gone in result["removed"]?.arrayValue ?? [] {
                            #expect(!at.ids.contains(gone.stringValue!) && history[v - 1]?.ids.contains(gone.stringValue!) == true,
                                    "dismiss \(id) says it removed \(gone) at version \(v)")
                        }
                    }
                } else {
                    refused += 1
                    if let marker = what.marker {
                        #expect(!history.values.contains { $0.markers.contains(marker) },
                                "request \(id) was refused (\(r["error"]!)), yet its node appeared in the tree")
                    }
                }
            }
            #expect(history.keys.sorted() == Array(0...mirror.version), "the subscriber saw every version once")
            // Setup models measured as requests were read add up to the tree's, as navd writes it.
            let session = p.server.navigator.sessions["main"]!.session
            var written = 0
            session.root.forEach { if $0.coordinator >= 0 { written += $0.params.encodedSize } }
            #expect(session.paramsBytes == written, "params bytes counted \(session.paramsBytes), written \(written)")
            var kinds: [String: Int] = [:]
            for r in replies.values { kinds[r["error"]?["data"]?["kind"]?.stringValue ?? "ok", default: 0] += 1 }
            print("committed-property seed \(seed): \(committed) committed, \(refused) refused, \(mirror.version) versions: \(kinds.sorted { $0.key < $1.key })")
            #expect(committed > 40 && refused > 40, "both outcomes are exercised: \(committed) committed, \(refused) refused: \(kinds.sorted { $0.key < $1.key })")
        }
    }
}
