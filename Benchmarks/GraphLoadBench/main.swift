// Generates a graph of 10,000 coordinators in 100 modules with dense cross-module references,
// then loads and validates it, printing wall time and peak memory.
//   swift run -c release graph-load-bench [modules] [coordinatorsPerModule]
import Foundation
import NavGraph

let args = CommandLine.arguments
let moduleCount = args.count > 1 ? Int(args[1]) ?? 100 : 100
let perModule = args.count > 2 ? Int(args[2]) ?? 100 : 100

var rng = SystemRandomNumberGenerator()
var sources: [GraphSource] = []
for m in 0..<moduleCount {
    var y = "module: m\(m)\n"
    if m == 0 { y += "root: {tabs: [m0.C0, m1.C0, m2.C0]}\n" }
    y += "coordinators:\n"
    for c in 0..<perModule {
        y += "  C\(c):\n"
        y += "    setup: {type: object, required: [id], properties: {id: {type: string, minLength: 1}, n: {type: integer, minimum: 0}}}\n"
        // Dense opens: within the module and into 8 other modules.
        var opens = ["m\(m).C\((c + 1) % perModule)", "m\(m).C\((c + 7) % perModule)"]
        for _ in 0..<8 { opens.append("m\(Int.random(in: 0..<moduleCount, using: &rng)).C\(Int.random(in: 0..<perModule, using: &rng))") }
        y += "    opens: [\(Array(Set(opens)).sorted().joined(separator: ", "))]\n"
        if c % 10 == 0 { y += "    preconditions: [ready]\n" }
        if c % 25 == 0 { y += "    access: [staff]\n" }
    }
    y += "routes:\n"
    for c in stride(from: 0, to: perModule, by: 10) { y += "  r\(c): {to: C\(c), by: push}\n" }
    y += "links:\n  \"/m\(m)/:id\": [m\(m).C0, {to: m\(m).C1, with: {id: \":id\"}}]\n"
    y += "preconditions:\n  ready: {check: {fact: ready.m\(m), equals: true}}\n"
    sources.append(GraphSource(file: "m\(m).yaml", text: y))
}
let bytes = sources.reduce(0) { $0 + $1.text.utf8.count }

func rssPeakKiB() -> Int {
    guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in s.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
    return -1
}

let before = rssPeakKiB()
var times: [Double] = []
var coordinators = 0
var diagnostics = 0
for _ in 0..<3 {
    let t0 = DispatchTime.now().uptimeNanoseconds
    let (g, d) = GraphLoader.load(sources: sources, baseDirectory: "/bench")
    times.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9)
    coordinators = g?.coordinators.count ?? -1
    diagnostics = d.all.count
    if d.hasErrors { print(d.errors.prefix(5).map(\.description).joined(separator: "\n")) }
}
print(String(format: "graph-load: %d modules, %d coordinators, %.1f MiB of YAML, %d diagnostics", moduleCount, coordinators, Double(bytes) / 1_048_576, diagnostics))
print(String(format: "graph-load: load+validate best %.3f s, worst %.3f s (3 runs)", times.min()!, times.max()!))
print(String(format: "graph-load: peak RSS %.1f MiB (%.1f MiB before loading)", Double(rssPeakKiB()) / 1024, Double(before) / 1024))
