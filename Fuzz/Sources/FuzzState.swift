import JSON
import NavGraph
import NavigationCore

/// The example graph, loaded once for every input.
let exampleGraph = GraphLoader.loadEmbeddedExample().graph!

/// A saved session as a state file holds it: the tree's JSON text, then after a NUL byte the facts'.
/// Small limits (depth 12, 60 nodes) so that trees beyond them are reached. A session that restores
/// is within every limit, and what navd writes of it restores to the same tree: navd can always
/// read back what it wrote.
func fuzzState(_ data: UnsafeRawBufferPointer) {
    var limits = SessionLimits()
    limits.maxDepth = 12
    limits.maxNodes = 60
    limits.maxParamsBytes = 2048
    limits.maxFacts = 8
    limits.maxFactValue = 256
    limits.maxFactsBytes = 1024
    let bytes = Array(data)
    let nul = bytes.firstIndex(of: 0) ?? bytes.count
    let parser = JSONParser(maxDepth: SessionLimits.writtenDepth(treeDepth: limits.maxDepth, valueDepth: 64))
    guard let tree = try? parser.parse(Array(bytes[..<nul])) else { return }
    let facts = nul < bytes.count ? ((try? parser.parse(Array(bytes[(nul + 1)...]))) ?? .null) : .object([:])
    let restored = try? Session(restoring: "s", graph: exampleGraph, root: tree, version: 3, nextId: 1_000, facts: facts, limits: limits)
    // The same text read in place, as a snapshot's trees are, restores to the same tree or not at all.
    let inPlace = bytes[..<nul].withUnsafeBytes { text -> Session? in
        guard let root = try? parser.view(text) else { return nil }
        return try? Session(restoring: "s", graph: exampleGraph, root: root, version: 3, nextId: 1_000, facts: facts, limits: limits,
                            keys: parser.keys)
    }
    require(inPlace.map { JSONWriter.encode($0.root.json(exampleGraph)) } == restored.map { JSONWriter.encode($0.root.json(exampleGraph)) },
            "a tree read in place restores otherwise than its value")
    guard let s = restored else { return }
    require(s.root.height <= limits.maxDepth && s.nodeCount <= limits.maxNodes && s.paramsBytes <= limits.maxParamsBytes,
            "a restored session passes a limit")
    var w = JSONWriter()
    s.root.write(into: &w, exampleGraph)
    guard let written = try? parser.parse(w.bytes) else {
        require(false, "navd's own tree did not parse: \(String(decoding: w.bytes.prefix(200), as: UTF8.self))")
        return
    }
    let again = try? Session(restoring: "s", graph: exampleGraph, root: written, version: 3, nextId: 1_000,
                             facts: .object(JSONObject(uniqueMembers: s.facts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })), limits: limits)
    require(again.map { JSONWriter.encode($0.root.json(exampleGraph)) == w.bytes } ?? false, "what navd wrote of a restored tree does not restore to it")
}
