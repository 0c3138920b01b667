// The session target drives navd's server in-process through its internal memory streams, which
// only a build for testing can reach: debug builds (make fuzz, the replay build). A release build of
// the package leaves it out.
#if DEBUG
import JSON
import Logging
import NavClient
import NavGraph
import UV

@testable import NavServer

#if canImport(Glibc)
import Glibc
#endif

/// A small graph with every kind of node and rule: tabs, a tab container, flows, modals, a
/// recovering precondition, a leave guard, routes and links (no command: no child process).
let sessionGraphText = """
    root: {tabs: [Home, Box]}
    coordinators:
      Home: {opens: [A, B, F, T, G]}
      Box: {opens: [A, B, F]}
      A: {setup: {type: object, properties: {n: {type: integer}}}, opens: [A, B, F, T, G]}
      B: {preconditions: [p], opens: [A, G]}
      G: {leave: [free], opens: [A]}
      F: {flow: {start: S1, steps: [S1, S2], result: {type: object}}, opens: [A]}
      S1: {opens: [S2, A]}
      S2: {}
      T: {tabs: [A, S2]}
      L: {flow: {start: S3}, presentations: [present]}
      S3: {}
    preconditions:
      p: {check: {fact: ok, equals: true}, recover: {flow: L, facts: {ok: true}}}
      free: {check: {fact: draft, exists: false}}
    routes:
      toA: {to: A, by: push}
    links:
      "/a/:n": [Home, {to: A, with: {n: ":n"}}]
    """
let sessionGraph = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: sessionGraphText)], baseDirectory: "/nonexistent").graph!

/// A sequence of requests, read from the input, through an in-process navd (memory streams, its
/// real loop): navd answers every request, never crashes, keeps to its limits, and a subscriber's
/// mirror, fed only with `stackChanged`, equals the tree at the end. An admin connection lists the
/// connections (`client.list`) and closes a spare subscriber (`client.kill`), which is told why and
/// closed, then replaced; the driver's own tries at either are refused for its lack of the role.
func fuzzSession(_ data: UnsafeRawBufferPointer) {
    var config = ServerConfiguration(socketPath: "/nonexistent/fuzz.sock")
    config.session.maxDepth = 10
    config.session.maxNodes = 40
    config.maxPendingPerConnection = 8
    // Every read kept in a short ring, so that slowlog.get's answers wrap around.
    config.slowlogThresholdMs = 0
    config.slowlogMaxLen = 4
    var logger = Logger(label: "fuzz")
    logger.logLevel = .critical
    let server = Server(config: config, graph: sessionGraph, logger: logger)
    server.startServing()
    let watcher = MemoryStream(credentials: PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
    let driver = MemoryStream(credentials: PeerCredentials(pid: getpid(), uid: 65534, gid: 65534))
    server.attach(watcher)
    server.attach(driver)
    let admin = MemoryStream(credentials: PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
    server.attach(admin)
    var spare = MemoryStream(credentials: PeerCredentials(pid: getpid(), uid: 65534, gid: 65534))
    server.attach(spare)
    func connectionID(_ s: MemoryStream) -> Int? { server.transport.connections.values.first { $0.stream === s }?.id }
    let parser = JSONParser(maxDepth: config.writtenDepth)
    func lines(_ s: MemoryStream) -> [JSONValue] {
        s.takeOutput().split(separator: 10).map { line in
            guard let v = try? parser.parse(Array(line)) else {
                require(false, "navd wrote a line that is not JSON: \(String(decoding: line.prefix(200), as: UTF8.self))")
                return .null
            }
            return v
        }
    }
    func send(_ s: MemoryStream, _ id: Int, _ method: String, _ params: JSONObject) {
        s.send(JSONWriter.string(["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": .object(params)]) + "\n")
    }
    var mirror: TreeMirror?
    var answered = Set<Int>()
    func pump(_ n: Int) {
        for _ in 0..<n { server.loop.runOnce(wait: false) }
        for m in lines(watcher) {
            if m["id"] == 0 { mirror = TreeMirror(snapshot: m["result"] ?? .null) }
            if m["method"] == "stackChanged", let p = m["params"] {
                do { try mirror?.apply(p) } catch { require(false, "the mirror could not follow: \(error)") }
            }
        }
        for m in lines(driver) where m["method"] == nil {
            require(m["result"] != nil || m["error"]?["data"]?["kind"] != nil, "a reply without result or data.kind: \(JSONWriter.string(m))")
            if let id = m["id"]?.intValue { answered.insert(id) }
        }
        for m in lines(admin) {
            require(m["result"] != nil || m["error"]?["data"]?["kind"] != nil, "an admin's reply without result or data.kind: \(JSONWriter.string(m))")
            if let id = m["id"]?.intValue { answered.insert(id) }
            if let clients = m["result"]?["clients"]?.arrayValue {
                require(clients.count <= ClientListMethod.pageMost, "client.list answered \(clients.count) connections in one page")
                let ids = clients.compactMap { $0["id"]?.intValue }
                require(ids == ids.sorted() && Set(ids).count == ids.count, "client.list's page is not in connection order: \(ids)")
                require(clients.filter { $0["self"] == true }.count <= 1, "client.list marked more than one connection as the asker's")
            }
            if let entries = m["result"]?["entries"]?.arrayValue {
                let ids = entries.compactMap { $0["id"]?.intValue }
                // A read's methods named (at most 8) account for every answer, or for some when 8 are
                // named; work outside reads names what it was.
                let named = entries.allSatisfy { e in
                    guard e["kind"] == "read" else { return e["what"]?.stringValue != nil && e["connection"] == nil }
                    let methods = e["methods"]?.objectValue ?? [:], answers = e["answers"]?.intValue ?? -1
                    let sum = methods.reduce(0) { $0 + ($1.value.intValue ?? 0) }
                    return sum == answers || (methods.count == 8 && sum < answers)
                }
                // `next` asks for the entries older than the last listed: its id.
                let next = m["result"]?["next"]?.intValue
                require(next == nil || next == ids.last, "slowlog.get's next is not its last entry's id: \(JSONWriter.string(m))")
                require(entries.count <= 4 && ids == ids.sorted(by: >) && named,
                        "slowlog.get answered entries out of order, past its length, or whose methods do not add up to its answers: \(JSONWriter.string(m))")
            }
        }
        if !spare.isClosed { _ = spare.takeOutput() }
    }
    send(watcher, 0, "subscribe", [:])
    send(spare, 0, "subscribe", [:])
    pump(2)
    let targets = ["app.Home", "app.Box", "app.A", "app.B", "app.G", "app.F", "app.S1", "app.S2", "app.T", "app.L", "app.Nope"]
    let styles: [JSONValue?] = [nil, "push", "present", "replace", "root", "select"]
    var b = Array(data)
    b += [0, 0, 0, 0]
    var i = 0, id = 1
    while i + 4 <= b.count {
        let (op, x, y, z) = (b[i], Int(b[i + 1]), Int(b[i + 2]), Int(b[i + 3]))
        i += 4
        let node: JSONValue = .string("n\(x % 48)")
        switch op % 14 {
        case 0, 1, 2, 3:
            var p: JSONObject = ["to": .string(targets[x % targets.count])]
            if let by = styles[y % styles.count] { p["by"] = by }
            if z & 1 == 1 { p["with"] = ["n": .int(z)] }
            if z & 2 == 2 { p["from"] = .string("n\(z % 48)") }
            if z & 4 == 4 { p["key"] = .string("k\(y % 8)") }
            send(driver, id, "navigate", p)
        case 4: send(driver, id, "dismiss", x & 1 == 1 ? ["node": node] : [:])
        case 5: send(driver, id, "dismiss", ["to": .string(targets[y % targets.count]), "inclusive": .bool(z & 1 == 1)])
        case 6: send(driver, id, "flowComplete", y & 1 == 1 ? ["flow": node, "result": [:]] : ["flow": node, "cancelled": true])
        case 7: send(driver, id, "context.set", ["facts": ["ok": .bool(y & 1 == 1), "draft": y & 2 == 2 ? .string("x") : .null]])
        case 8: send(driver, id, "reset", y & 1 == 1 ? [:] : ["to": .array([.string(targets[x % targets.count]), ["to": .string(targets[z % targets.count]), "by": "present"]])])
        case 9: send(driver, id, "open", ["url": .string("/a/\(x)")])
        case 10: send(driver, id, "update", ["node": node, "with": ["n": .int(y)]])
        case 12 where z & 8 == 8:
            var p: JSONObject = ["limit": .int(x % 6)]
            if y & 2 == 2 { p["after"] = .int(y % 12 - 1) }  // a cursor, past the ids or below 0 too
            send(z & 4 == 4 ? driver : admin, id, y & 1 == 1 ? "slowlog.reset" : "slowlog.get", p)
        case 12:
            var p: JSONObject = ["after": .int(x % 6 - 1), "limit": .int(y % 5)]
            if z & 1 == 1 { p["subscribedTo"] = z & 2 == 2 ? "main" : "nope" }
            send(z & 4 == 4 ? driver : admin, id, "client.list", p)
        case 13:
            let killed = spare
            let target: JSONValue = switch y % 4 {
            case 0, 1: connectionID(killed).map { .int($0) } ?? .int(999)
            case 2: connectionID(admin).map { .int($0) } ?? .int(999)
            default: .int(1_000 + x)
            }
            send(z & 4 == 4 ? driver : admin, id, "client.kill", ["connection": target])
            pump(1)
            if killed.isClosed {
                let said = lines(killed).last
                require(said?["id"] == .null && said?["error"]?["data"]?["kind"] == "disconnected",
                        "a connection closed by client.kill was not told why first: \(said.map { JSONWriter.string($0) } ?? "nothing")")
                spare = MemoryStream(credentials: PeerCredentials(pid: getpid(), uid: 65534, gid: 65534))
                server.attach(spare)
                send(spare, 0, "subscribe", [:])
            }
        default:
            send(driver, id, "navigate", ["to": .string(targets[x % targets.count]), "by": y & 1 == 1 ? "present" : "push",
                                          "popUpTo": ["to": .string(targets[z % targets.count]), "inclusive": .bool(z & 1 == 1)]])
        }
        id += 1
        pump(1 + z % 3)
    }
    pump(5)
    send(driver, 100_000, "tree", [:])
    pump(2)
    send(watcher, 100_001, "tree", [:])
    server.loop.runOnce(wait: false)
    var tree: JSONValue?
    for m in lines(watcher) {
        if m["id"] == 100_001 { tree = m["result"] }
        if m["method"] == "stackChanged", let p = m["params"] { try? mirror?.apply(p) }
    }
    if let tree, let mirror {
        require(mirror.version == tree["version"]?.intValue, "the mirror is at version \(mirror.version), the tree at \(tree["version"] ?? .null)")
        require(mirror.root == tree["root"], "the mirror differs from the tree at version \(mirror.version)")
    } else {
        require(false, "no tree or no snapshot")
    }
    // Every request with preconditions that cannot wait (no provider, checks only) was answered.
    require((1..<id).allSatisfy { answered.contains($0) } || server.navigator.pending.count > 0,
            "requests went unanswered with nothing pending")
    server.shutdown()
    let released = server.run()
    require(released, "the stopped server left handles open: \(server.loop.openHandles)")
}
#else
func fuzzSession(_ data: UnsafeRawBufferPointer) {
    say("the session target needs a debug build (make fuzz builds one)")
}
#endif
