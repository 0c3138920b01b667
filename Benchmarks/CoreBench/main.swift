// The navigation core alone (no sockets): commits per second and memory per session.
//   scripts/build-release.sh --product core-bench && .build/release/core-bench
// CORE_BENCH_PAIRS=N sets the pairs of part 1 (1,000,000); CORE_BENCH_PARTS=1 runs part 1 alone
// (for callgrind: `valgrind --tool=callgrind .build/release/core-bench` with both set).
import Foundation
import JSON
import NavGraph
import NavTesting
import NavigationCore

let yaml = """
    root: {stack: Home}
    coordinators:
      Home: {opens: [Item]}
      Item:
        setup:
          type: object
          required: [id]
          properties: {id: {type: string, minLength: 1, pattern: "^i[0-9]+$"}, qty: {type: integer, minimum: 0, maximum: 99}}
          additionalProperties: false
        opens: [Item]
    """
let (g, d) = GraphLoader.load(sources: [GraphSource(file: "bench.yaml", text: yaml)], baseDirectory: "/")
guard let graph = g else { print(d.sorted.map(\.description).joined(separator: "\n")); exit(1) }
let caller = Caller()

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
func rssMiB() -> Double {
    guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in s.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Double(line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1) / 1024
    }
    return -1
}

// 1. navigate/dismiss pairs on a stack ten deep.
let s = Session(name: "bench", graph: graph)
let with: JSONObject = ["id": "i42", "qty": 3]
for _ in 0..<9 { _ = try s.commit(try s.plan(NavigateRequest(to: "Item", with: with), caller: caller)) }
let env = ProcessInfo.processInfo.environment
let pairs = env["CORE_BENCH_PAIRS"].flatMap { Int($0) } ?? 1_000_000
var t0 = now()
for _ in 0..<pairs {
    let c = try s.commit(try s.plan(NavigateRequest(to: "Item", with: with), caller: caller))
    _ = try s.dismiss(c.node!.id)
}
var dt = now() - t0
print(String(format: "core: navigate+dismiss pairs on a 10-deep stack: %.0f pairs/s = %.0f commits/s (%d pairs in %.2f s)",
             Double(pairs) / dt, Double(2 * pairs) / dt, pairs, dt))

if env["CORE_BENCH_PARTS"] == "1" { exit(0) }

// 2. commits with setup-schema validation (push only: the stack grows to 5,000 screens, well
// under --max-tree-nodes, then a new session starts).
var s2 = Session(name: "bench2", graph: graph)
let n = 500_000
t0 = now()
for i in 0..<n {
    if i % 5_000 == 4_999 { s2 = Session(name: "bench2", graph: graph) }
    _ = try s2.commit(try s2.plan(NavigateRequest(to: "Item", with: ["id": .string("i\(i % 1000)"), "qty": .int(i % 99)]), caller: caller))
}
dt = now() - t0
print(String(format: "core: validated push commits: %.0f commits/s (%d in %.2f s)", Double(n) / dt, n, dt))

// 3. memory: 10,000 sessions of ten screens each.
let before = rssMiB()
var sessions: [Session] = []
sessions.reserveCapacity(10_000)
for i in 0..<10_000 {
    let x = Session(name: "s\(i)", graph: graph)
    for _ in 0..<9 { _ = try x.commit(try x.plan(NavigateRequest(to: "Item", with: with), caller: caller)) }
    sessions.append(x)
}
let after = rssMiB()
print(String(format: "core: 10,000 sessions x 10 screens: RSS %.1f MiB (%.1f MiB before them, %.0f bytes per session); %d nodes",
             after, before, (after - before) * 1_048_576 / 10_000, sessions.reduce(0) { $0 + $1.nodeCount }))
