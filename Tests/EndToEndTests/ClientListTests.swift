import Foundation
import JSON
import NavTesting
import Testing

/// `client.list` and `client.kill`: who is connected, driven through the socket.
@Suite struct ClientListTests {
    /// The entries `client.list` answers, every page followed.
    func listed(_ c: TestClient, _ params: JSONObject = [:]) throws -> [JSONValue] {
        var all: [JSONValue] = []
        var p = params
        while true {
            let page = try c.call("client.list", .object(p))
            all += page["clients"]?.arrayValue ?? []
            guard let next = page["next"] else { return all }
            p["after"] = next
        }
    }

    /// Each connection as it is: the name it gave `hello`, its peer, roles, subscriptions and their
    /// form, what it awaits; the one asking marked `self`; a session's subscribers alone.
    @Test func eachConnectionIsListedAsItIs() throws {
        let d = try Daemon()
        let watcher = try d.client()
        let named = try watcher.call("hello", ["client": "watcher", "notifications": "compact"])
        try watcher.call("session.open", ["name": "kiosk"])
        try watcher.call("subscribe", ["session": "kiosk"])
        try watcher.call("subscribe")
        let quiet = try d.client()
        try quiet.call("ping")
        let asker = try d.client()
        let all = try listed(asker)
        #expect(all.map { $0["id"] } == [named["connection"], .int(named["connection"]!.intValue! + 1), .int(named["connection"]!.intValue! + 2)], "\(all)")
        let w = all[0], q = all[1], me = all[2]
        #expect(w["client"] == "watcher" && w["subscriptions"] == 2 && w["subscribedTo"] == ["kiosk", "main"]
                && w["notifications"] == "compact" && w["self"] == nil, "\(w)")
        #expect(w["peer"]?["pid"] == .int(Int(getpid())) && w["peer"]?["uid"] == .int(Int(getuid())) && w["roles"] == ["admin"], "\(w)")
        #expect(q["client"] == nil && q["subscriptions"] == 0 && q["subscribedTo"] == [] && q["notifications"] == "full", "\(q)")
        // Requests made so far: hello, session.open and two subscribes; one ping; this client.list.
        #expect(w["requests"] == 4 && q["requests"] == 1 && me["requests"] == 1, "\(all)")
        // Each request of a batch counts; a notification is not a request.
        try quiet.notify("ping")
        try quiet.sendRaw(#"[{"jsonrpc":"2.0","id":100001,"method":"ping"},{"jsonrpc":"2.0","id":100002,"method":"ping"}]"# + "\n")
        #expect(try quiet.readMessage()?.arrayValue?.count == 2)
        #expect(try listed(asker).first { $0["id"] == q["id"] }?["requests"] == 3)
        #expect(me["self"] == true && me["awaiting"] == 1 && me["pending"] == 0 && me["output"] == 0 && me["input"] == 0
                && me["halfClosed"] == false && me["age"] == 0, "\(me)")
        // Which front-ends watch a session: its subscribers alone.
        #expect(try listed(asker, ["subscribedTo": "kiosk"]).map { $0["id"] } == [w["id"]])
        #expect(try listed(asker, ["subscribedTo": "main"]).map { $0["id"] } == [w["id"]])
        try watcher.call("unsubscribe", ["session": "kiosk"])
        #expect(try listed(asker, ["subscribedTo": "kiosk"]).isEmpty)
        // What is wrong is said.
        let unknown = try asker.callError("client.list", ["subscribedTo": "nowhere"])
        #expect(unknown["data"]?["kind"] == "unknownTarget" && unknown["data"]?["param"] == "subscribedTo", "\(unknown)")
        for bad: JSONValue in [["limit": 0], ["limit": 1001], ["after": -1], ["after": "3"], ["subscribed": "main"]] {
            let e = try asker.callError("client.list", bad)
            #expect(e["data"]?["kind"] == "invalidParams", "\(bad): \(e)")
        }
    }

    /// Pages follow the order the connections were made; each goes on after the previous one's
    /// `next`, none repeats or skips a connection, closed ones are left out, and the last has no `next`.
    @Test func pagesGoOnFromTheirCursorUntilNoNextComes() throws {
        let d = try Daemon()
        var clients = try (0..<9).map { _ in try d.client() }
        for c in clients { try c.call("ping") }
        clients.remove(at: 4).close()
        clients.remove(at: 1).close()
        let asker = clients[0]
        // A closed connection leaves the list once navd has seen it go.
        var ids: [Int] = []
        for _ in 0..<200 {
            ids = try listed(asker).compactMap { $0["id"]?.intValue }
            if ids.count == 7 { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(ids.count == 7 && ids == ids.sorted() && Set(ids).count == 7, "\(ids)")
        var paged: [Int] = []
        var after: JSONValue?
        var pages = 0
        repeat {
            let page = try asker.call("client.list", .object(after.map { ["limit": 3, "after": $0] } ?? ["limit": 3]))
            let got = page["clients"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
            #expect(got.count <= 3 && (page["next"] == nil || got.count == 3), "\(page)")
            paged += got
            after = page["next"]
            pages += 1
        } while after != nil && pages < 10
        #expect(paged == ids && pages == 3, "\(paged) in \(pages) pages")
    }

    /// A client closed by `client.kill` is told why (an error with id null, data.kind
    /// disconnected, data.by naming who), then closed as a client that went away: its waiting
    /// navigation is cancelled; the closing client's answer names it; numbers that are not open,
    /// or its own, are refused with why.
    @Test func aKilledClientIsToldWhyAndWhatItWaitedForIsCancelled() throws {
        let d = try Daemon(graph: """
            module: app
            root: {stack: Home}
            coordinators:
              Home: {opens: [Guarded]}
              Guarded: {preconditions: [asked]}
            preconditions:
              asked: {provider: true, timeout: 30s}
            """)
        let provider = try d.client()
        try provider.call("provide", ["preconditions": ["asked"]])
        let victim = try d.client()
        let victimId = try victim.call("hello", ["client": "victim"])["connection"]
        _ = try victim.send("navigate", ["to": "Guarded"])
        _ = try provider.serverRequest("precondition.evaluate")
        let admin = try d.client()
        let entry = try #require(try listed(admin).first { $0["id"] == victimId })
        #expect(entry["pending"] == 1 && entry["awaiting"] == 1 && entry["client"] == "victim", "\(entry)")
        let closed = try admin.call("client.kill", ["connection": victimId!])
        #expect(closed == ["closed": victimId!], "\(closed)")
        let told = try #require(try victim.readMessage())
        #expect(told["id"] == .null && told["error"]?["code"] == -32600 && told["error"]?["data"]?["kind"] == "disconnected"
                && told["error"]?["data"]?["by"] != nil, "\(told)")
        #expect(try victim.readMessage(timeout: 5) == nil, "the connection closes after telling why")
        // Gone from the list, and its navigation with it.
        #expect(try listed(admin).allSatisfy { $0["id"] != victimId })
        #expect(try admin.call("stats")["pending"] == 0)
        let again = try admin.callError("client.kill", ["connection": victimId!])
        #expect(again["data"]?["kind"] == "unknownTarget" && again["data"]?["connection"] == victimId, "\(again)")
        let own = try admin.call("hello")["connection"]
        let mine = try admin.callError("client.kill", ["connection": own!])
        #expect(mine["data"]?["kind"] == "invalidParams" && mine["data"]?["param"] == "connection", "\(mine)")
        let none = try admin.callError("client.kill")
        #expect(none["data"]?["param"] == "connection", "\(none)")
        // navd's log reaches the test through a pipe, read as it comes: awaited, not read at once.
        try d.waitForLog("closing a connection at a client's request")
    }

    /// Without `admin` neither lists nor closes: another uid (nobody, through setpriv), and a client
    /// of navd's own uid that gave up its roles (as nav-web's pages do). navd's uid, holding admin,
    /// sees the other uid's connection and closes it, and it hears why.
    @Test func withoutAdminNeitherListsNorClosesAndAdminClosesAnotherUids() throws {
        guard getuid() == 0 else { return }  // setpriv to another uid needs root
        let d = try Daemon()
        chmod(d.dir.path, 0o755)
        chmod(d.socketPath, 0o666)
        let admin = try d.client()
        let adminId = try admin.call("hello", ["client": "ops"])["connection"]!
        func line(_ id: Int, _ method: String, _ params: JSONObject) -> String {
            JSONWriter.string(["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": .object(params)])
        }
        // It asks, then subscribes last (what navd answers in order: once subscribed, it has its
        // answers), and finishes sending: navd keeps a half-closed subscriber until it is closed
        // (socat waits up to 30 s for that).
        let script = [line(1, "hello", ["client": "nobody"]), line(2, "client.list", [:]),
                      line(3, "client.kill", ["connection": adminId]), line(4, "subscribe", [:])].joined(separator: "\n")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c",
                       "printf '%s\\n' \"$0\" | /usr/bin/socat -t30 - UNIX-CONNECT:\"$1\"", script, d.socketPath]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        defer { if p.isRunning { p.terminate() } }
        // Listed once navd has read all of it, the end of its input included: the subscription
        // and the half-close arrive in reads of their own, so both are waited for.
        var theirs: JSONValue?
        for _ in 0..<500 {
            theirs = try listed(admin).first { $0["peer"]?["uid"] == 65534 && $0["subscriptions"] == 1 && $0["halfClosed"] == true }
            if theirs != nil { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        let them = try #require(theirs, "the other uid's connection is listed for admin")
        #expect(them["client"] == "nobody" && them["roles"] == [] && them["halfClosed"] == true, "\(them)")
        #expect(try admin.call("client.kill", ["connection": them["id"]!])["closed"] == them["id"])
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let answers = try text.split(separator: "\n").map { try JSONParser(maxDepth: 64).parse(Array($0.utf8)) }
        #expect(answers.count == 5, "\(text)")
        for id: JSONValue in [2, 3] {
            let refused = answers.first { $0["id"] == id }?["error"]
            #expect(refused?["data"]?["kind"] == "accessDenied" && refused?["data"]?["roles"] == ["admin"], "\(String(describing: refused))")
        }
        #expect(answers.last?["id"] == .null && answers.last?["error"]?["data"]?["kind"] == "disconnected", "\(text)")
        // navd's uid's connection is still served.
        #expect(try admin.call("ping") == "pong")
        // A client of navd's uid that gave up its roles (a nav-web page) is refused both.
        let page = try d.client()
        try page.call("hello", ["keepRoles": []])
        for (method, params) in [("client.list", [:]), ("client.kill", ["connection": adminId])] as [(String, JSONObject)] {
            let e = try page.callError(method, .object(params))
            #expect(e["data"]?["kind"] == "accessDenied" && e["data"]?["roles"] == ["admin"], "\(method): \(e)")
        }
    }
}
