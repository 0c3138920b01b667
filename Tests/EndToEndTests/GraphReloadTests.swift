import Foundation
import JSON
import NavClient
import NavTesting
import Testing

/// `graph.reload` and SIGHUP on a running navd.
@Suite struct GraphReloadTests {
    let v1 = """
        root: {stack: Home}
        coordinators:
          Home: {opens: [Product, Old]}
          Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}}
          Old: {}
        """

    func write(_ text: String, _ dir: TempDir) throws {
        try text.write(toFile: dir.file("app.yaml"), atomically: true, encoding: .utf8)
    }

    /// navd serving `graph`, written into `dir` (which a test rewrites to reload).
    func daemon(_ graph: String, in dir: TempDir) throws -> Daemon {
        try write(graph, dir)
        return try Daemon(arguments: ["--graph", dir.path])
    }

    /// A reload whose graph declares some coordinators as they were and others anew, every index
    /// moved (new coordinators declared first): a session showing only coordinators declared alike
    /// is kept as it is with its indices changed, one showing a changed one is rebuilt, and either
    /// way the tree reads as before and goes on by the new graph: a flow's `then` completes to the
    /// coordinator it named, a tab is selected, a screen's new setup field is taken. And a restart
    /// (kill -9) reads both back.
    @Test func sessionsGoOnByTheNewGraphWhetherKeptOrRebuilt() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let v1 = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Wizard, Shell, Product]}
              Wizard: {flow: {steps: [Step]}, opens: [Done, Other], then: Done}
              Step: {}
              Done: {}
              Other: {setup: {type: object, properties: {id: {type: string}}, required: [id]}}
              Shell: {tabs: [A, B]}
              A: {}
              B: {opens: [Product]}
              Product: {setup: {type: object, properties: {id: {type: string}}}, opens: [Product]}
            """
        try write(v1, dir)
        let state = dir.file("navd.state")
        var d = try Daemon(arguments: ["--graph", dir.path, "--state", state])
        let c = try d.client()
        for s in ["kept", "rebuilt"] { try c.call("session.open", ["name": .string(s)]) }
        let flow = try c.call("navigate", ["session": "kept", "to": "Wizard", "then": ["to": "Other", "with": ["id": "$result.id"]]])["node"] ?? .null
        try c.call("navigate", ["session": "rebuilt", "to": "Shell"])
        try c.call("navigate", ["session": "rebuilt", "to": "B", "by": "select"])
        try c.call("navigate", ["session": "rebuilt", "to": "Product", "with": ["id": "p1"]])
        let before = try ["kept", "rebuilt"].map { try c.call("tree", ["session": .string($0)]) }
        // Every index moves; Product's setup changes (a session showing it is rebuilt).
        let v2 = v1.replacingOccurrences(of: "coordinators:\n", with: "coordinators:\n  First: {}\n  Second: {}\n")
            .replacingOccurrences(of: "properties: {id: {type: string}}}, opens", with: "properties: {id: {type: string}, tag: {type: string}}}, opens")
        try write(v2, dir)
        let r = try c.call("graph.reload")
        #expect(r["ok"] == true && r["removedNodes"] == 0, "\(r)")
        let after = try ["kept", "rebuilt"].map { try c.call("tree", ["session": .string($0)]) }
        #expect(after == before, "each tree reads as it did")
        let done = try c.call("flowComplete", ["session": "kept", "flow": flow, "result": ["id": "o7"]])
        #expect(done["then"] != nil, "\(done)")
        let top = try c.call("tree", ["session": "kept"])["root"]?["children"]?.arrayValue?.last
        #expect(top?["coordinator"] == "app.Other" && top?["params"] == ["id": "o7"], "\(String(describing: top))")
        try c.call("navigate", ["session": "rebuilt", "to": "Product", "with": ["id": "p2", "tag": "new"]])
        try c.call("navigate", ["session": "rebuilt", "to": "A", "by": "select"])
        let trees = try ["kept", "rebuilt"].map { try c.call("tree", ["session": .string($0)]) }
        _ = d.stop(signal: SIGKILL)
        d = try Daemon(arguments: ["--graph", dir.path, "--state", state])
        #expect(try ["kept", "rebuilt"].map { try d.client().call("tree", ["session": .string($0)]) } == trees, "a restart reads both back")
    }

    @Test func invalidGraphIsRefusedWithDiagnosticsAndNothingChanges() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(v1, in: dir)
        let c = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        try c.call("navigate", ["to": "Product", "with": ["id": "a"]])
        let before = try c.call("tree")
        try write("root: {stack: Hom}\ncoordinators: {Home: {}}\n", dir)
        let r = try c.call("graph.reload")
        #expect(r["ok"] == false)
        let message = r["errors"]?.arrayValue?.first?.stringValue ?? ""
        #expect(message.contains("app.yaml:1:15: error: `app.Hom`"), "\(r)")
        // Those who hear reloads hear why this one left the graph in force.
        let told = try watcher.notification("graphReloadRefused")["params"]
        #expect(told == ["errors": r["errors"] ?? nil, "count": 1], "\(String(describing: told))")
        #expect(!c.notifications.contains { $0["method"] == "graphReloadRefused" }, "the caller, subscribed to nothing, has its reply")
        #expect(try c.call("tree") == before)
        #expect(try c.call("graph.describe")["coordinators"]?["app.Product"] != nil)
    }

    @Test func validGraphIsAppliedAndSubscribersHearIt() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(v1, in: dir)
        let c = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        try c.call("navigate", ["to": "Product", "with": ["id": "a"]])
        // Described before (an answer navd keeps for its graph) and after: the new graph's.
        let described = try c.call("graph.describe")
        let again = try c.call("graph.describe")
        #expect(described["coordinators"]?["app.New"] == nil && described == again)
        try write(v1 + "\n  New: {}\n", dir)
        #expect(try c.call("graph.reload")["ok"] == true)
        #expect(try watcher.notification("graphReloaded")["params"]?["version"] == 2)
        #expect(try c.call("graph.describe")["coordinators"]?["app.New"] != nil)
        // The caller subscribed to nothing: its reply, and no notification before or after it (the
        // describe's reply came after anything navd sent it then).
        #expect(!c.notifications.contains { $0["method"] == "graphReloaded" }, "\(c.notifications)")
        #expect(!watcher.notifications.contains { $0["method"] == "graphReloaded" }, "heard once: \(watcher.notifications)")
        #expect(try c.call("tree")["version"] == 1, "the tree is unchanged")
        // Navigation goes on against the new graph.
        try c.call("dismiss")
        #expect(try c.call("navigate", ["to": "Product", "with": ["id": "b"]])["version"] == 3)
    }

    @Test func liveNodesMissingFromTheNewGraphRefuseUnlessForced() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(v1, in: dir)
        let c = try d.client()
        let watcher = try d.client()
        try watcher.call("subscribe")
        let old = try c.call("navigate", ["to": "Old"])["node"]!
        _ = try watcher.notification("stackChanged")
        try write("""
            root: {stack: Home}
            coordinators:
              Home: {opens: [Product]}
              Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}}
            """, dir)
        let refused = try c.call("graph.reload")
        #expect(refused["ok"] == false)
        let message = refused["errors"]?.arrayValue?.first?.stringValue ?? ""
        #expect(message.contains("node \(old.stringValue!) shows `app.Old`"))
        #expect(try c.call("tree")["version"] == 1)
        let forced = try c.call("graph.reload", ["force": true])
        #expect(forced["ok"] == true && forced["removedNodes"] == 1)
        let change = try watcher.notification("stackChanged")
        #expect(change["params"]?["changes"]?.arrayValue?.first?["op"] == "pop")
        #expect(try c.call("tree")["version"] == 2)
    }

    /// A tab is known by its place among the declared tabs: a reload that changes the root's tabs
    /// or a live container's is refused, naming them; forced, the session is reset to the new root
    /// (facts kept), and `select` then finds the tab it names.
    @Test func changedTabsRefuseUnlessForcedThenTheSessionIsReset() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let tabs = """
            root: {tabs: [Home, Search, Settings]}
            coordinators:
              Home: {opens: [Box]}
              Search: {}
              Settings: {}
              Box: {tabs: [A, B]}
              A: {}
              B: {}
            """
        let d = try daemon(tabs, in: dir)
        let c = try d.client()
        let watcher = try d.client(), compact = try d.client()
        try watcher.call("subscribe")
        // A subscriber of the compact form follows the reset too.
        var mirror = TreeMirror(snapshot: try compact.call("subscribe", ["notifications": "compact"]))
        try c.call("context.set", ["facts": ["kept": true]])
        let box = try #require(try c.call("navigate", ["to": "Box"])["node"])
        _ = try watcher.notification("stackChanged")
        try mirror.apply(try #require(try compact.notification("stackChanged")["params"]))
        // The container's tabs change: refused, naming them.
        try write(tabs.replacingOccurrences(of: "[A, B]", with: "[B, A]"), dir)
        let container = try c.call("graph.reload")
        let containerMessage = container["errors"]?.arrayValue?.first?.stringValue ?? ""
        #expect(container["ok"] == false && containerMessage.contains("tab container \(box.stringValue ?? "")"), "\(container)")
        #expect(containerMessage.contains("holds the tabs app.A, app.B; the new graph declares app.B, app.A"), "\(containerMessage)")
        // The root's tabs change: refused, naming them; nothing changed.
        try write(tabs.replacingOccurrences(of: "[Home, Search, Settings]", with: "[Search, Home]"), dir)
        let root = try c.call("graph.reload")
        let rootMessage = root["errors"]?.arrayValue?.first?.stringValue ?? ""
        #expect(root["ok"] == false && rootMessage.contains("its root tabs are app.Home, app.Search, app.Settings; the new graph declares app.Search, app.Home"),
                "\(root)")
        #expect(try c.call("tree")["version"] == 1)
        // Forced: one reset to the new root, published; the facts stay.
        let forced = try c.call("graph.reload", ["force": true])
        #expect(forced["ok"] == true, "\(forced)")
        let change = try watcher.notification("stackChanged")
        #expect(change["params"]?["version"] == 2 && change["params"]?["changes"]?.arrayValue?.first?["op"] == "reset", "\(change)")
        let tree = try c.call("tree")
        let firsts = tree["root"]?["children"]?.arrayValue?.map { $0["children"]?.arrayValue?.first?["coordinator"] }
        #expect(tree["version"] == 2 && firsts == ["app.Search", "app.Home"], "\(tree)")
        try mirror.apply(try #require(try compact.notification("stackChanged")["params"]))
        #expect(mirror.version == 2 && mirror.root == tree["root"] && mirror.visible == tree["visible"]?.arrayValue?.compactMap(\.stringValue),
                "the compact mirror \(mirror.root), the tree \(tree)")
        #expect(try c.call("context.get")["facts"] == ["kept": true])
        let selected = try c.call("navigate", ["to": "Home", "by": "select"])
        let shown = try c.call("tree")
        #expect(shown["visible"]?.arrayValue?.last == selected["node"] && shown["root"]?["selected"] == 1, "\(shown)")
    }

    /// A node is made for its coordinator's kind: a screen whose coordinator became a flow, or a
    /// flow holding a step the new graph no longer lists, is refused like a coordinator the graph
    /// lacks; forced, they are removed and the tree keeps its shape.
    @Test func aCoordinatorOfAnotherKindOrAStepNoLongerListedIsRefusedUnlessForced() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let before = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [A, F]}
              A: {opens: [F]}
              F: {flow: {start: S1, steps: [S1, S2]}}
              S1: {opens: [S2]}
              S2: {}
            """
        let d = try daemon(before, in: dir)
        let c = try d.client()
        let a = try #require(try c.call("navigate", ["to": "A"])["node"]?.stringValue)
        let flow = try #require(try c.call("navigate", ["to": "F"])["node"]?.stringValue)
        try c.call("navigate", ["to": "S2"])
        try write(before.replacingOccurrences(of: "A: {opens: [F]}", with: "A: {flow: {start: S1, steps: [S1]}}")
            .replacingOccurrences(of: "steps: [S1, S2]}", with: "steps: [S1]}"), dir)
        let refused = try c.call("graph.reload")
        let errors = refused["errors"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(refused["ok"] == false, "\(refused)")
        #expect(errors.contains { $0.contains("node \(a) is a screen of `app.A`, which the new graph declares as a flow") }, "\(errors)")
        #expect(errors.contains { $0.contains("flow \(flow) (`app.F`) holds the step") && $0.contains("(`app.S2`), which is not a step of the flow in the new graph") },
                "\(errors)")
        #expect(try c.call("tree")["version"] == 3, "nothing changed")
        let forced = try c.call("graph.reload", ["force": true])
        #expect(forced["ok"] == true, "\(forced)")
        let tree = try c.call("tree")
        let shown = tree["root"]?["children"]?.arrayValue?.map { $0["coordinator"] }
        #expect(shown == ["app.Home"], "A (and the flow above it) removed: \(tree)")
    }

    /// A root screen the new graph lacks cannot be dismissed: forced, its session goes on at the new
    /// root by one `reset` commit (the version goes on, subscribers of both forms follow it, a flow
    /// it ends is announced), never started afresh at version 0.
    @Test func aRootScreenTheNewGraphLacksResetsItsSessionByOneCommit() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let before = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Detail, F]}
              Detail: {opens: [F]}
              F: {flow: {start: S1, steps: [S1]}}
              S1: {}
            """
        let d = try daemon(before, in: dir)
        let c = try d.client(), full = try d.client(), compact = try d.client()
        var mirrors = [TreeMirror(snapshot: try full.call("subscribe")), TreeMirror(snapshot: try compact.call("subscribe", ["notifications": "compact"]))]
        try c.call("context.set", ["facts": ["kept": 1]])
        try c.call("navigate", ["to": "Detail", "key": "k1"])
        let flow = try #require(try c.call("navigate", ["to": "F"])["node"])
        for (i, w) in [full, compact].enumerated() {
            for _ in 0..<2 { try mirrors[i].apply(try #require(try w.notification("stackChanged")["params"])) }
        }
        try write(before.replacingOccurrences(of: "root: {stack: Home}", with: "root: {stack: Start}")
            .replacingOccurrences(of: "Home: {opens: [Detail, F]}", with: "Start: {opens: [Detail, F]}"), dir)
        #expect(try c.call("graph.reload")["ok"] == false)
        let forced = try c.call("graph.reload", ["force": true])
        #expect(forced["ok"] == true, "\(forced)")
        let tree = try c.call("tree")
        #expect(tree["version"] == 3 && tree["root"]?["children"]?.arrayValue?.map { $0["coordinator"] } == ["app.Start"], "\(tree)")
        for (i, w) in [full, compact].enumerated() {
            try mirrors[i].apply(try #require(try w.notification("stackChanged")["params"]))
            #expect(mirrors[i].version == 3 && mirrors[i].root == tree["root"], "mirror \(i): \(mirrors[i].root)")
        }
        let ended = try full.notification("flowCompleted")
        #expect(ended["params"]?["flow"] == flow && ended["params"]?["status"] == "cancelled", "\(ended)")
        #expect(try c.call("context.get")["facts"] == ["kept": 1])
        #expect(try c.call("navigate", ["to": "Nowhere", "key": "k1"])["version"] == 1, "keys stay")
    }

    /// A retry of a keyed navigation gets the first reply even when the graph reloaded since no
    /// longer holds the `then` it gives: the key is looked up before the request is read against
    /// the graph (as for a `to` the graph lost).
    @Test func aKeyedRetryGetsTheFirstReplyWhenItsThenLeftTheGraph() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let before = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [F]}
              F: {flow: {start: S1, steps: [S1]}, opens: [Done]}
              S1: {}
              Done: {}
            """
        let d = try daemon(before, in: dir)
        let c = try d.client()
        let first = try c.call("navigate", ["to": "F", "then": "Done", "key": "k1"])
        try write(before.replacingOccurrences(of: ", opens: [Done]", with: "").replacingOccurrences(of: "\n  Done: {}", with: ""), dir)
        // The live flow goes on to `Done` (its navigate's then): refused unless forced, which removes it.
        let refusedReload = try c.call("graph.reload")
        #expect(refusedReload["ok"] == false && JSONWriter.string(refusedReload).contains("goes on to `app.Done`"), "\(refusedReload)")
        #expect(try c.call("graph.reload", ["force": true])["ok"] == true)
        #expect(try c.call("graph.describe")["coordinators"]?["app.Done"] == nil)
        #expect(try c.call("tree")["root"]?["children"]?.arrayValue?.count == 1, "the flow went")
        #expect(try c.call("navigate", ["to": "F", "then": "Done", "key": "k1"]) == first)
        // Without the key, the request is read against the graph served now.
        let home = try #require(try c.call("tree")["root"]?["children"]?.arrayValue?.first?["id"])
        let refused = try c.callError("navigate", ["to": "F", "then": "Done", "from": home])
        #expect(refused["data"]?["kind"] == "unknownTarget" && refused["data"]?["param"] == "then", "\(refused)")
        #expect(try c.call("tree")["version"] == 2)
    }

    /// The client that started a flow hears `flowCompleted` even unsubscribed, also when the graph
    /// was reloaded in between.
    @Test func theStarterOfAFlowHearsItEndAfterAReload() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let before = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [F]}
              F: {flow: {start: S1, steps: [S1]}}
              S1: {}
            """
        let d = try daemon(before, in: dir)
        let starter = try d.client(), other = try d.client()
        let flow = try #require(try starter.call("navigate", ["to": "F"])["node"])
        try write(before + "\n  New: {}\n", dir)
        #expect(try other.call("graph.reload")["ok"] == true)
        try other.call("flowComplete", ["flow": flow, "result": ["done": true]])
        let ended = try starter.notification("flowCompleted")
        #expect(ended["params"]?["flow"] == flow && ended["params"]?["status"] == "completed", "\(ended)")
    }

    @Test func sighupReloads() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let d = try daemon(v1, in: dir)
        let c = try d.client()
        try c.call("subscribe", ["session": "main"])
        try c.call("session.open", ["name": "other"])
        try c.call("subscribe", ["session": "other"])
        try write(v1 + "\n  New: {}\n", dir)
        kill(d.pid, SIGHUP)
        #expect(try c.notification("graphReloaded")["params"]?["version"] == 2)
        #expect(try c.call("graph.describe")["coordinators"]?["app.New"] != nil)
        // Subscribed to two sessions, it hears the reload once.
        #expect(!c.notifications.contains { $0["method"] == "graphReloaded" }, "\(c.notifications)")
    }

    /// `--watch-graph`: a module file written in the graph's directory reloads the graph (its
    /// subscribers hear `graphReloaded`), with no request; an invalid one is reported with its
    /// diagnostics and the graph in force stays, serving; the next valid one is taken. Without a
    /// graph directory the flag is refused at start.
    @Test func aWatchedGraphIsReloadedWhenAModuleFileChanges() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try write(v1, dir)
        let d = try Daemon(arguments: ["--graph", dir.path, "--watch-graph"])
        let c = try d.client()
        try c.call("subscribe")
        try write(v1 + "\n  New: {}\n", dir)
        #expect(try c.notification("graphReloaded")["params"]?["version"] == 2)
        #expect(try c.call("graph.describe")["coordinators"]?["app.New"] != nil)
        // A module file of its own, written in place (not renamed over), is seen too.
        try "module: extra\ncoordinators: {Side: {}}\n".write(toFile: dir.file("extra.yaml"), atomically: false, encoding: .utf8)
        #expect(try c.notification("graphReloaded")["params"]?["version"] == 3)
        #expect(try c.call("graph.describe")["coordinators"]?["extra.Side"] != nil)

        try write("root: {stack: Hom}\ncoordinators: {Home: {}}\n", dir)
        try d.waitForLog("graph not reloaded after a change to its directory, the graph in force stays: \(dir.file("app.yaml")):1:15: error: `app.Hom`")
        #expect(try c.notification("graphReloadRefused")["params"]?["errors"]?.arrayValue?.first?.stringValue?.hasPrefix("\(dir.file("app.yaml")):1:15: error: `app.Hom`") == true)
        #expect(try c.call("graph.describe")["coordinators"]?["app.New"] != nil, "the graph in force stays")
        #expect(try c.call("navigate", ["to": "New", "by": "root"])["version"] == 1, "and serving")
        // A graph without the coordinator a live node shows is refused as graph.reload refuses it.
        try write(v1 + "\n  Newer: {}\n", dir)
        try d.waitForLog("node n3 shows `app.New`, which the new graph does not declare (dismiss those nodes first")
        let refused = try c.notification("graphReloadRefused")["params"]
        #expect(refused?["count"] == 1 && refused?["hint"]?.stringValue?.hasPrefix("dismiss those nodes first") == true, "\(String(describing: refused))")
        try write(v1 + "\n  New: {}\n  Newer: {}\n", dir)
        #expect(try c.notification("graphReloaded")["params"]?["version"] == 4)
        #expect(try c.call("graph.describe")["coordinators"]?["app.Newer"] != nil)

        let none = try runCommand(Repo.binary("navd"), ["--socket", dir.file("b.sock"), "--ephemeral", "--watch-graph"])
        #expect(none.status == 64 && none.stderr.contains("--watch-graph watches the directory --graph names"), "\(none)")
    }
    /// `--watch-graph` where the graph's files are links swapped at once, as a Kubernetes ConfigMap
    /// volume updates them: `app.yaml -> ..data/app.yaml`, `..data -> ..v1` renamed over by a link
    /// to `..v2`. Only hidden entries change, and the graph is reloaded.
    @Test func aWatchedGraphFollowsItsFilesLinksSwappedAtOnce() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fm = FileManager.default
        try fm.createDirectory(atPath: dir.file("..v1"), withIntermediateDirectories: false)
        try v1.write(toFile: dir.file("..v1/app.yaml"), atomically: true, encoding: .utf8)
        try fm.createSymbolicLink(atPath: dir.file("..data"), withDestinationPath: "..v1")
        try fm.createSymbolicLink(atPath: dir.file("app.yaml"), withDestinationPath: "..data/app.yaml")
        let d = try Daemon(arguments: ["--graph", dir.path, "--watch-graph"])
        let c = try d.client()
        try c.call("subscribe")
        #expect(try c.call("graph.describe")["coordinators"]?["app.New"] == nil)
        // And given `..data` itself, as navd asks where the volume's mount point is world-writable.
        let inside = try Daemon(arguments: ["--graph", dir.file("..data"), "--watch-graph"])
        let c2 = try inside.client()
        try c2.call("subscribe")

        try fm.createDirectory(atPath: dir.file("..v2"), withIntermediateDirectories: false)
        try (v1 + "\n  New: {}\n").write(toFile: dir.file("..v2/app.yaml"), atomically: true, encoding: .utf8)
        try fm.createSymbolicLink(atPath: dir.file("..data_tmp"), withDestinationPath: "..v2")
        #expect(rename(dir.file("..data_tmp"), dir.file("..data")) == 0)
        try fm.removeItem(atPath: dir.file("..v1"))
        #expect(try c.notification("graphReloaded")["params"]?["version"] == 2)
        #expect(try c.call("graph.describe")["coordinators"]?["app.New"] != nil)
        #expect(try c2.notification("graphReloaded")["params"]?["version"] == 2)
        #expect(try c2.call("graph.describe")["coordinators"]?["app.New"] != nil)
    }

    /// `--watch-graph --graph LINK`: the link pointed at another directory (a deployment's
    /// `current` swapped by a rename) reloads the graph from there, and the watch follows it:
    /// a later change in the new directory reloads it too.
    @Test func aWatchedGraphFollowsItsPathsLinkToAnotherDirectory() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let a = try dir.graph(v1, named: "release-1")
        let b = try dir.graph(v1 + "\n  New: {}\n", named: "release-2")
        let fm = FileManager.default
        try fm.createSymbolicLink(atPath: dir.file("current"), withDestinationPath: a)
        let d = try Daemon(arguments: ["--graph", dir.file("current"), "--watch-graph"])
        let c = try d.client()
        try c.call("subscribe")
        try fm.createSymbolicLink(atPath: dir.file("current.new"), withDestinationPath: b)
        #expect(rename(dir.file("current.new"), dir.file("current")) == 0)
        #expect(try c.notification("graphReloaded")["params"]?["version"] == 2)
        #expect(try c.call("graph.describe")["coordinators"]?["app.New"] != nil)

        try (v1 + "\n  New: {}\n  Newer: {}\n").write(toFile: b + "/app.yaml", atomically: true, encoding: .utf8)
        #expect(try c.notification("graphReloaded")["params"]?["version"] == 3)
        #expect(try c.call("graph.describe")["coordinators"]?["app.Newer"] != nil)
    }

    /// A change in the watched directory that no load would read (an editor's swap file written
    /// while a module is edited) reloads nothing: navd says so at debug level, and the next real
    /// change is the graph's next version.
    @Test func aWatchedGraphIsNotReloadedForAFileThatIsNotAModule() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try write(v1, dir)
        let d = try Daemon(arguments: ["--graph", dir.path, "--watch-graph", "--log-level", "debug"])
        let c = try d.client()
        try c.call("subscribe")
        try "swap".write(toFile: dir.file(".app.yaml.swp"), atomically: false, encoding: .utf8)
        try d.waitForLog("the graph's directory changed but none of its module files did: nothing to reload")
        try write(v1 + "\n  New: {}\n", dir)
        #expect(try c.notification("graphReloaded")["params"]?["version"] == 2, "the swap file was not a reload")
    }
}
