import Foundation
import JSON
import NavClient
import NavTesting
import Testing

/// `open {url}` on the example graph: every link, bad URLs, and a link whose precondition fails.
@Suite struct DeepLinkTests {
    func coordinators(_ tree: JSONValue, _ ids: JSONValue?) -> [String] {
        var byId: [String: String] = [:]
        func walk(_ n: JSONValue) {
            if let id = n["id"]?.stringValue, let c = n["coordinator"]?.stringValue { byId[id] = c }
            for c in n["children"]?.arrayValue ?? [] { walk(c) }
            if let p = n["presented"] { walk(p) }
        }
        walk(tree)
        return (ids?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { byId[$0] } }
    }

    @Test func everyLinkOfTheExample() throws {
        let d = try Daemon()
        let c = try d.client()
        try c.call("context.set", ["facts": ["loggedIn": true]])
        let cases: [(String, [String], JSONValue?)] = [
            ("/product/p42", ["shop.Home", "shop.Product"], ["id": "p42"]),
            // A query value the pattern does not declare fills the target's field of that name; others are ignored.
            ("/product/p43?ref=mail&utm_source=news", ["shop.Home", "shop.Product"], ["id": "p43", "ref": "mail"]),
            ("/product/p%2042/reviews", ["shop.Home", "shop.Product", "shop.Reviews"], ["productId": "p 42"]),
            ("/category/shoes?page=3", ["shop.Home", "shop.Category"], ["slug": "shoes", "page": 3]),
            ("/category/shoes", ["shop.Home", "shop.Category"], ["slug": "shoes"]),
            // A key given twice takes its last value.
            ("/category/shoes?page=3&page=4", ["shop.Home", "shop.Category"], ["slug": "shoes", "page": 4]),
            ("/search?q=red%20shoes", ["shop.Home", "shop.Search"], ["query": "red shoes"]),
            ("/cart", ["cart.Cart"], [:]),
            ("shop://app/orders/ord-9", ["account.Account", "account.Orders", "account.OrderDetail"], ["orderId": "ord-9"]),
            // A fragment is dropped; escapes decode to UTF-8; raw UTF-8 and empty segments are read as they are.
            ("shop://app//product/caf%C3%A9?ref=a%26b#reviews", ["shop.Home", "shop.Product"], ["id": "café", "ref": "a&b"]),
            ("/product/né-1/", ["shop.Home", "shop.Product"], ["id": "né-1"]),
        ]
        for (url, stack, params) in cases {
            let before = try #require(try c.call("tree")["version"]?.intValue)
            let r = try c.call("open", ["url": .string(url)])
            #expect(r["version"] == .int(before + 1), "\(url): one commit")
            let tree = try c.call("tree")
            let screens = coordinators(tree["root"] ?? .null, tree["visible"])
            #expect(screens.last == stack.last, "\(url) → \(screens)")
            // The stack holding the top is exactly the link's stack.
            let top = tree["visible"]?.arrayValue?.last
            func findStack(_ n: JSONValue) -> [JSONValue]? {
                if let ch = n["children"]?.arrayValue, ch.contains(where: { $0["id"] == top }) { return ch }
                for ch in n["children"]?.arrayValue ?? [] { if let s = findStack(ch) { return s } }
                return n["presented"].flatMap(findStack)
            }
            let held = findStack(tree["root"] ?? .null)?.compactMap { $0["coordinator"]?.stringValue }
            #expect(held == stack, "\(url)")
            if let params { #expect(findStack(tree["root"] ?? .null)?.last?["params"] == params, "\(url)") }
        }
    }

    /// Links are tried in declaration order, the first that matches wins, whether a pattern starts
    /// with a literal or a parameter (navd looks only at the links that may match the path's first
    /// segment, and must keep that order among them).
    @Test func theFirstDeclaredLinkThatMatchesWins() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [A, B, C, D]}
              A: {setup: {type: object, properties: {x: {type: string}}}}
              B: {setup: {type: object, properties: {x: {type: string}}}}
              C: {setup: {type: object, properties: {x: {type: string}}}}
              D: {setup: {type: object, properties: {x: {type: string}}}}
            links:
              "/p/one": [Home, A]
              "/:x/two": [Home, {to: B, with: {x: ":x"}}]
              "/p/:x": [Home, {to: C, with: {x: ":x"}}]
              "/*x": [Home, {to: D, with: {x: ":x"}}]
            """)
        let c = try d.client()
        for (url, shown) in [("/p/one", "app.A"), ("/p/two", "app.B"), ("/q/two", "app.B"), ("/p/three", "app.C"),
                             ("/q/three", "app.D"), ("/p", "app.D"), ("/p/one/more", "app.D")] {
            let r = try c.call("open", ["url": .string(url), "dryRun": true])
            #expect(r["node"]?["coordinator"]?.stringValue == shown, "\(url): \(r)")
        }
    }

    /// `link.resolve` carries the last screen's params that its link does not set as query values
    /// of their own name, so `open` of the URL builds the screen with the same params; a value a URL
    /// cannot hold (an object) is left out.
    @Test func resolvedURLsCarryTheLastScreensOtherParams() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Account]}
              Account:
                setup:
                  type: object
                  required: [id]
                  properties: {id: {type: integer}, tab: {type: string}, page: {type: integer}, wide: {type: boolean}, note: {type: [string, integer]}, filter: {type: object}}
            links:
              "/accounts/:id": [Home, {to: Account, with: {id: ":id"}}]
            """)
        let c = try d.client()
        let given: JSONValue = ["id": 5, "tab": "a b&c", "page": 2, "wide": true]
        let made = try c.call("navigate", ["to": "Account", "with": given])
        let url = try #require(try c.call("link.resolve")["url"]?.stringValue)
        #expect(url == "/accounts/5?tab=a%20b%26c&page=2&wide=true", "\(url)")
        try c.call("reset")
        let opened = try c.call("open", ["url": .string(url)])
        func params(of id: JSONValue?) throws -> JSONValue? {
            try c.call("tree")["root"]?["children"]?.arrayValue?.first { $0["id"] == id }?["params"]
        }
        #expect(try params(of: opened["node"]) == given, "the round trip builds the same params")
        #expect(made["node"] != opened["node"])
        // A string of digits where the setup takes a string or an integer reads back as the string;
        // an object stays out.
        try c.call("update", ["node": opened["node"] ?? .null, "with": ["note": "42", "filter": ["x": 1], "wide": nil, "page": nil, "tab": nil]])
        #expect(try c.call("link.resolve")["url"] == "/accounts/5?note=42")
    }

    /// An array field is read from a query key given once or more (`?tag=a&tag=b`), each value typed
    /// by the field's `items`, in order; a scalar field still takes a repeated key's last value.
    /// `link.resolve` writes such a field as the key repeated, and `open` of that URL builds the
    /// same params, through a key the pattern declares and through one it does not; a wildcard gives
    /// such a field its segments; an empty list is left out, as values a URL cannot carry are.
    @Test func anArrayFieldIsReadFromARepeatedQueryKeyAndWrittenBackSo() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [List]}
              List:
                setup:
                  type: object
                  required: [id]
                  properties:
                    id: {type: integer}
                    tag: {type: array, items: {type: string, enum: [red, blue, x y]}}
                    sizes: {type: array, items: {type: integer}}
                    page: {type: integer}
                    dirs: {type: array, items: {type: string}}
            links:
              "/in/*dirs": [Home, {to: List, with: {id: 2, dirs: ":dirs"}}]
              "/lists/:id?size=:s": [Home, {to: List, with: {id: ":id", sizes: ":s"}}]
              "/tagged/:t": [Home, {to: List, with: {id: 1, tag: ":t"}}]
            """)
        let c = try d.client()
        func topParams() throws -> JSONValue? {
            let tree = try c.call("tree")
            return tree["root"]?["children"]?.arrayValue?.last?["params"]
        }
        try c.call("open", ["url": "/lists/7?tag=red&size=40&tag=x+y&size=41&page=1&page=2"])
        #expect(try topParams() == ["id": 7, "sizes": [40, 41], "tag": ["red", "x y"], "page": 2])
        try c.call("open", ["url": "/lists/8?tag=blue"])
        #expect(try topParams() == ["id": 8, "tag": ["blue"]], "one value is a list of one")
        try c.call("open", ["url": "/tagged/x%20y"])
        #expect(try topParams() == ["id": 1, "tag": ["x y"]], "a path segment too")
        // Each item is checked where it stands.
        let bad = try c.callError("open", ["url": "/lists/9?tag=red&tag=green"])
        #expect(bad["data"]?["pointer"] == "/tag/1" && bad["data"]?["rule"] == "enum", "\(bad)")
        let notInt = try c.callError("open", ["url": "/lists/9?size=1&size=big"])
        #expect(notInt["data"]?["pointer"] == "/sizes/1" && notInt["data"]?["rule"] == "type", "\(notInt)")

        let given: JSONValue = ["id": 5, "sizes": [3, 1], "tag": ["blue", "x y", "blue"]]
        try c.call("reset")
        try c.call("navigate", ["to": "List", "with": given])
        let url = try #require(try c.call("link.resolve")["url"]?.stringValue)
        #expect(url == "/lists/5?size=3&size=1&tag=blue&tag=x%20y&tag=blue", "\(url)")
        try c.call("reset")
        try c.call("open", ["url": .string(url)])
        #expect(try topParams() == given, "the round trip builds the same params")
        // A wildcard gives an array field its segments, each decoded (a `/` written %2F stays in
        // its item), and link.resolve writes them so.
        try c.call("open", ["url": "/in/a/b%2Fc/d"])
        #expect(try topParams() == ["id": 2, "dirs": ["a", "b/c", "d"]])
        #expect(try c.call("link.resolve")["url"] == "/in/a/b%2Fc/d")
        // An empty list is left out, as an object is: no key would carry it.
        try c.call("reset")
        try c.call("navigate", ["to": "List", "with": ["id": 6, "tag": [], "sizes": [2]]])
        #expect(try c.call("link.resolve")["url"] == "/lists/6?size=2")
    }

    /// The patterns a `noMatchingLink` names: none declared says so; of many, the first 20 and how
    /// many in all (a message does not grow with the graph).
    @Test func noMatchingLinkNamesWhatTheGraphDeclares() throws {
        let none = try Daemon(graph: "root: {stack: Home}\ncoordinators: {Home: {}}")
        let said = try none.client().callError("open", ["url": "/x"])["message"]?.stringValue ?? ""
        #expect(said.hasSuffix("matches no link of the graph; the graph declares no links (`links:` in a module file)"), "\(said)")
        let links = (0..<25).map { "  \"/p\($0)\": [Home]" }.joined(separator: "\n")
        let many = try Daemon(graph: "root: {stack: Home}\ncoordinators: {Home: {}}\nlinks:\n" + links)
        let listed = try many.client().callError("open", ["url": "/x"])["message"]?.stringValue ?? ""
        #expect(listed.contains("/p19 … (25 in all; graph.describe lists them)") && !listed.contains("/p20"), "\(listed)")
        // And a URL that is not a path at all.
        let notAPath = try many.client().callError("open", ["url": "x"])["message"]?.stringValue ?? ""
        #expect(notAPath.contains("is not a URL path") && notAPath.contains("/p19 … (25 in all; graph.describe lists them)") && !notAPath.contains("/p20"),
                "\(notAPath)")
    }

    @Test func badURLs() throws {
        let d = try Daemon()
        let c = try d.client()
        let none = try c.callError("open", ["url": "/nowhere/at/all"])
        #expect(none["code"] == -32011 && none["data"]?["kind"] == "noMatchingLink")
        let said = none["message"]?.stringValue ?? ""
        #expect(said.contains("/product/:id"))
        let relative = try c.callError("open", ["url": "product/1"])
        #expect(relative["code"] == -32011, "\(relative)")
        // It says what a link looks like, and which the graph declares (not another app's).
        let why = relative["message"]?.stringValue ?? ""
        #expect(why.contains("is not a URL path: a link is a path from its first slash"), "\(relative)")
        #expect(why.contains("/product/:id"), "\(relative)")
        #expect(try c.callError("open", ["url": "/product/%zz"])["code"] == -32011)
        let bad = try c.callError("open", ["url": "/category/NOT_A_SLUG"])
        #expect(bad["code"] == -32002 && bad["data"]?["pointer"] == "/slug")
        #expect(try c.callError("open", [:])["code"] == -32602)
        // A URL is at most 8 KiB, as a web server's request line: one just within is read.
        let longest = "/product/" + String(repeating: "x", count: 8192 - 9)
        #expect(try c.call("open", ["url": .string(longest), "dryRun": true])["visible"] != nil)
        let long = try c.callError("open", ["url": .string(longest + "x")])
        #expect(long["code"] == -32012 && long["data"]?["limit"] == "url" && long["data"]?["max"] == 8192, "\(long)")
        #expect(long["message"]?.stringValue?.contains("\"url\" is 8193 bytes; a deep link may be at most 8192") == true, "\(long)")
        #expect(try c.call("tree")["version"] == 0)
    }

    @Test func aLinkWhosePreconditionFailsLeavesTheTreeUnchanged() throws {
        let graph = """
            root: {tabs: [Home, Vault]}
            coordinators:
              Home: {}
              Vault: {opens: [Box]}
              Box:
                setup: {type: object, required: [n], properties: {n: {type: integer}}}
                preconditions: [unlocked]
            links:
              "/box/:n": [Vault, {to: Box, with: {n: ":n"}}]
            preconditions:
              unlocked: {command: [sh, -c, "echo locked; exit 1"]}
            """
        let d = try Daemon(graph: graph)
        let c = try d.client()
        let before = try c.call("tree")
        let e = try c.callError("open", ["url": "/box/7"])
        #expect(e["code"] == -32005 && e["data"]?["reason"] == "locked")
        #expect(try c.call("tree") == before)
        let dry = try c.call("open", ["url": "/box/7", "dryRun": true])
        #expect(dry["preconditions"] == ["app.unlocked"])
        #expect(try c.call("tree") == before)
    }

    @Test func constantsAndQueryValuesTakeTheTypesTheSetupDeclares() throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Item]}
              Item:
                setup:
                  type: object
                  required: [n, flag]
                  properties: {n: {type: integer}, flag: {type: boolean}, size: {type: number}, note: {type: string}}
                  additionalProperties: false
            links:
              "/item/:n": [Home, {to: Item, with: {n: ":n", flag: "true"}}]
            """
        let d = try Daemon(graph: graph)
        let c = try d.client()
        try c.call("open", ["url": "/item/7?size=1.5&note=12&flag=false&other=x"])
        let tree = try c.call("tree")
        let top = tree["root"]?["children"]?.arrayValue?.last
        #expect(top?["coordinator"] == "app.Item")
        // The link's own `flag` wins over the query's; `other` is no field of Item and is left out.
        #expect(top?["params"] == ["n": 7, "flag": true, "size": 1.5, "note": "12"])
    }

    /// A field typed only by an `enum` of numbers or booleans takes the URL's text as the member it
    /// spells; a string member spelt the same wins.
    @Test func aFieldTypedByItsEnumTakesTheMemberTheURLSpells() throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Item, Num]}
              Item:
                setup:
                  type: object
                  properties: {size: {enum: [1, 2.5, "3"]}, on: {enum: [true, null]}, name: {enum: [a, b]}}
              Num: {setup: {type: object, properties: {x: {type: number}}}}
            links:
              "/item": [Home, Item]
              "/num": [Home, Num]
            """
        let d = try Daemon(graph: graph)
        let c = try d.client()
        try c.call("open", ["url": "/item?size=2.5&on=true&name=b"])
        var top = try c.call("tree")["root"]?["children"]?.arrayValue?.last
        #expect(top?["params"] == ["size": 2.5, "on": true, "name": "b"])
        try c.call("open", ["url": "/item?size=3&on=null"])
        top = try c.call("tree")["root"]?["children"]?.arrayValue?.last
        #expect(top?["params"] == ["size": "3", "on": .null])
        // Only decimal numbers are numbers: `0x1p3` (which Swift's Double reads as 8) stays text.
        let hex = try c.callError("open", ["url": "/num?x=0x1p3"])
        #expect(hex["data"]?["kind"] == "invalidSetup" && hex["data"]?["pointer"] == "/x")
        try c.call("open", ["url": "/num?x=-2e3"])
        top = try c.call("tree")["root"]?["children"]?.arrayValue?.last
        #expect(top?["params"] == ["x": -2000])
        let e = try c.callError("open", ["url": "/item?size=4"])
        #expect(e["data"]?["kind"] == "invalidSetup" && e["data"]?["pointer"] == "/size")
    }

    /// A scheme is only at the start: `://` in a query value is part of that value, not where the
    /// path starts. A custom scheme's host (`app://item/7`, as apps write their URLs) is tried as
    /// the path's first segment when the path alone matches no link; a web URL's host never is.
    @Test func aSchemeIsReadAtTheStartAndACustomSchemesHostMayBeTheFirstSegment() throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Item, Search]}
              Item: {setup: {type: object, required: [n], properties: {n: {type: integer}}}}
              Search: {setup: {type: object, properties: {q: {type: string}}}}
            links:
              "/item/:n": [Home, {to: Item, with: {n: ":n"}}]
              "/search": [Home, Search]
            """
        let d = try Daemon(graph: graph)
        let c = try d.client()
        func top(_ url: String) throws -> JSONValue? {
            try c.call("open", ["url": .string(url)])
            return try c.call("tree")["root"]?["children"]?.arrayValue?.last
        }
        let search = try top("/search?q=https://example.com/item/5")
        #expect(search?["coordinator"] == "app.Search" && search?["params"] == ["q": "https://example.com/item/5"])
        #expect(try top("app://item/7")?["params"] == ["n": 7])
        #expect(try top("app://host/item/8")?["params"] == ["n": 8])
        #expect(try top("app://search?q=x")?["params"] == ["q": "x"])
        #expect(try top("App-2.x+y://item/9")?["params"] == ["n": 9])
        let web = try c.callError("open", ["url": "https://item/10"])
        #expect(web["data"]?["kind"] == "noMatchingLink")
        let none = try c.callError("open", ["url": "app://nowhere/1"])
        let message = none["message"]?.stringValue ?? ""
        #expect(none["data"]?["kind"] == "noMatchingLink" && message.contains("after its host `nowhere`"), "\(message)")
    }

    /// A link whose first screen starts a tab keeps the tab when that tab's first screen is no longer
    /// the link's (replaced by another coordinator, a tab container among them, or given other
    /// params): the tab's stack starts again from the link's first screen, one `replace` change that
    /// a mirror follows. Before, the link's screens were attached to whatever was first: a modal
    /// presented over a tab container was committed and announced but was in no tree.
    @Test func aLinkIntoATabWhoseFirstScreenChangedStartsTheTabAgain() throws {
        let graph = """
            root: {tabs: [Home, Other]}
            coordinators:
              Home:
                setup: {type: object, properties: {v: {type: integer}}}
                opens: [Alt, Box, Modal]
              Other: {}
              Alt: {}
              Box: {tabs: [A, B]}
              A: {}
              B: {}
              Modal: {presentations: [present]}
            links:
              "/modal": [Home, {to: Modal, by: present}]
              "/v/:v": [{to: Home, with: {v: ":v"}}, {to: Modal, by: present}]
            """
        let d = try Daemon(graph: graph)
        let c = try d.client(), watcher = try d.client()
        var mirror = TreeMirror(snapshot: try watcher.call("subscribe"))
        func follow() throws {
            let line = try #require(try watcher.readLine())
            try mirror.apply(try #require(try JSONParser().parse(line)["params"]))
            let tree = try c.call("tree")
            #expect(mirror.root == tree["root"] && mirror.visible == tree["visible"]?.arrayValue?.compactMap(\.stringValue), "\(tree)")
        }
        func homeTab() throws -> [JSONValue] { try c.call("tree")["root"]?["children"]?.arrayValue?.first?["children"]?.arrayValue ?? [] }
        for replacement in ["Box", "Alt"] {
            try c.call("navigate", ["to": .string(replacement), "by": "replace"])
            try follow()
            #expect(try homeTab().first?["coordinator"] == .string("app.\(replacement)"))
            let opened = try c.call("open", ["url": "/modal"])
            try follow()
            let tab = try homeTab()
            #expect(tab.count == 1 && tab.first?["coordinator"] == "app.Home", "\(tab)")
            #expect(tab.first?["presented"]?["children"]?.arrayValue?.first?["id"] == opened["node"], "\(tab)")
            #expect(opened["visible"]?.arrayValue?.last == opened["node"])
            try c.call("dismiss")
            try follow()
        }
        // Other params than the link gives: the tab stays (the root is not made a stack).
        try c.call("open", ["url": "/v/7"])
        try follow()
        let tree = try c.call("tree")
        #expect(tree["root"]?["kind"] == "tabs" && tree["root"]?["children"]?.arrayValue?.count == 2, "\(tree)")
        #expect(try homeTab().first?["params"] == ["v": 7])
        // link.resolve prefers the link that carries every param (`/v/7`, declared after `/modal`, whose
        // Home would be a fresh one without `v` in another tree).
        #expect(try c.call("link.resolve") == ["url": "/v/7", "link": "/v/:v"])
    }

    /// `open {url, by: push}` (Jetpack's `navigate(Uri)`): only the link's last screen, pushed from
    /// the visible screen as `navigate` would push it; its `opens` decide. navctl `open --push`.
    @Test func openByPushPushesTheLastScreenFromTheVisibleOne() throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [List, Item]}
              List: {opens: [Item]}
              Item: {opens: [Item], setup: {type: object, required: [n], properties: {n: {type: integer}}}}
              Lonely: {}
            links:
              "/item/:n": [Home, List, {to: Item, with: {n: ":n"}}]
              "/lonely": [Lonely]
            """
        let d = try Daemon(graph: graph)
        let c = try d.client()
        try c.call("navigate", ["to": "Item", "with": ["n": 1]])
        let r = try c.call("open", ["url": "/item/2", "by": "push"])
        #expect(r["version"] == 2)
        let stack = try c.call("tree")["root"]?["children"]?.arrayValue ?? []
        #expect(stack.map { $0["coordinator"] } == ["app.Home", "app.Item", "app.Item"], "pushed on the visible Item, no List: \(stack)")
        #expect(stack.last?["params"] == ["n": 2])
        // The visible screen's opens decide, as for navigate.
        let e = try c.callError("open", ["url": "/lonely", "by": "push"])
        #expect(e["data"]?["kind"] == "notAllowed", "\(e)")
        #expect(try c.callError("open", ["url": "/item/3", "by": "present"])["data"]?["kind"] == "invalidParams")
        // navctl open --push.
        let out = try runCommand(Repo.binary("navctl"), ["--socket", d.socketPath, "--json", "open", "--push", "/item/4"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(try c.call("tree")["root"]?["children"]?.arrayValue?.count == 4)
    }

    /// In a query `+` is a space, as forms and URLSearchParams write it (`%2B` a plus); in a path
    /// segment it is a plus. link.resolve writes what open reads back.
    /// A link that ends at a tab container builds it with its first tab selected: `link.resolve` of
    /// that tab's first screen answers the link (the container stands for itself and that screen, as
    /// a flow for its first step); of another tab, or above the first screen, no link.
    @Test func linkResolveOfATabContainersFirstScreenIsTheLinkThatBuiltIt() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Shell]}
              Shell: {tabs: [A, B], setup: {type: object, properties: {id: {type: string}}}}
              A: {opens: [C]}
              B: {}
              C: {}
            links:
              "/shell/:id": [Home, {to: Shell, with: {id: ":id"}}]
            """)
        let c = try d.client()
        try c.call("open", ["url": "/shell/s1"])
        #expect(try c.call("link.resolve") == ["url": "/shell/s1", "link": "/shell/:id"])
        try c.call("navigate", ["to": "B", "by": "select"])
        #expect(try c.callError("link.resolve")["data"]?["kind"] == "noMatchingLink")
        try c.call("navigate", ["to": "A", "by": "select"])
        #expect(try c.call("link.resolve")["url"] == "/shell/s1")
        try c.call("navigate", ["to": "C"])
        #expect(try c.callError("link.resolve")["data"]?["kind"] == "noMatchingLink")
    }

    /// Of the links that build a tab container's first screen, the first declared answers
    /// `link.resolve`, whether it ends at the screen or at the container (the test above declares
    /// the container's first; here the screen's), and links of other screens between them change
    /// nothing.
    @Test func linkResolveAnswersTheFirstDeclaredLinkWhicheverEndItNames() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Shell, Other]}
              Shell: {tabs: [A, B]}
              A: {}
              B: {}
              Other: {}
            links:
              "/other": [Home, Other]
              "/first/a": [Home, Shell, A]
              "/b": [Home, Shell, B]
              "/shell": [Home, Shell]
              "/second/a": [Home, Shell, A]
            """)
        let c = try d.client()
        try c.call("open", ["url": "/shell"])
        #expect(try c.call("link.resolve") == ["url": "/first/a", "link": "/first/a"])
        try c.call("navigate", ["to": "B", "by": "select"])
        #expect(try c.call("link.resolve") == ["url": "/b", "link": "/b"])
        try c.call("open", ["url": "/other"])
        #expect(try c.call("link.resolve") == ["url": "/other", "link": "/other"])
    }

    /// A link may go into a tab of a tab container (go_router's StatefulShellRoute branches): an
    /// entry after the container that names one of its tabs selects it, and the screens after it go
    /// on that tab's stack. One commit builds it; subscribers rebuild it from the change; the reply's
    /// node is the last screen; `link.resolve` answers the link, for any tab.
    @Test func aLinkSelectsATabOfATabContainerAndBuildsOnIt() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Shell]}
              Shell: {tabs: [A, B], back: history}
              A: {}
              B: {setup: {type: object, properties: {q: {type: string}}}, opens: [Detail]}
              Detail: {setup: {type: object, required: [id], properties: {id: {type: integer}}}}
            links:
              "/shell": [Home, Shell]
              "/shell/a": [Home, Shell, A]
              "/shell/b": [Home, Shell, B]
              "/shell/b/:q/detail/:id": [Home, Shell, {to: B, with: {q: ":q"}}, {to: Detail, with: {id: ":id"}}]
            """)
        let c = try d.client()
        let watcher = try d.client()
        var mirror = TreeMirror(snapshot: try watcher.call("subscribe"))
        func shell() throws -> JSONValue? { try c.call("tree")["root"]?["children"]?.arrayValue?.last }

        let dry = try c.call("open", ["url": "/shell/b", "dryRun": true])
        let opened = try c.call("open", ["url": "/shell/b"])
        #expect(opened["visible"] == dry["visible"])
        var tabs = try #require(try shell())
        #expect(tabs["kind"] == "tabs" && tabs["coordinator"] == "app.Shell" && tabs["selected"] == 1, "\(tabs)")
        #expect(tabs["history"] == nil, "a container a link made has no tab selected before")
        let b = try #require(tabs["children"]?.arrayValue?[1]["children"]?.arrayValue?.first)
        #expect(b["coordinator"] == "app.B" && opened["node"] == b["id"] && opened["visible"]?.arrayValue?.last == b["id"])
        #expect(try c.call("link.resolve") == ["url": "/shell/b", "link": "/shell/b"])

        // Params for the tab's first screen, and a screen pushed on that tab.
        let deep = try c.call("open", ["url": "/shell/b/red/detail/7"])
        tabs = try #require(try shell())
        let stack = tabs["children"]?.arrayValue?[1]["children"]?.arrayValue ?? []
        #expect(stack.map { $0["coordinator"] } == ["app.B", "app.Detail"] && stack.map { $0["params"] } == [["q": "red"], ["id": 7]], "\(stack)")
        #expect(deep["node"] == stack.last?["id"])
        #expect(try c.call("link.resolve")["url"] == "/shell/b/red/detail/7")
        // The tab's first screen: the link that names it, its param as a query value of its name.
        #expect(try c.call("link.resolve", ["node": stack[0]["id"] ?? .null])["url"] == "/shell/b?q=red")

        // The first tab: the link ending at the container (declared first) and the one naming it.
        try c.call("open", ["url": "/shell/a"])
        tabs = try #require(try shell())
        #expect(tabs["selected"] == 0)
        #expect(try c.call("link.resolve")["url"] == "/shell")
        try c.call("navigate", ["to": "app.B", "by": "select"])
        #expect(try c.call("link.resolve")["url"] == "/shell/b")

        // `reset {to}` builds a stack as a link does: it selects a tab of the container too.
        try c.call("reset", ["to": ["app.Home", "app.Shell", ["to": "app.B", "by": "select", "with": ["q": "x"]]]])
        tabs = try #require(try shell())
        #expect(tabs["selected"] == 1 && tabs["children"]?.arrayValue?[1]["children"]?.arrayValue?.first?["params"] == ["q": "x"], "\(tabs)")
        let refused = try c.callError("reset", ["to": ["app.Home", ["to": "app.Shell", "by": "select"]]])
        #expect(refused["data"]?["kind"] == "notAllowed" && (refused["message"]?.stringValue ?? "").contains("not a tab of `app.Home`"), "\(refused)")

        let truth = try c.call("tree")
        while mirror.version < truth["version"]?.intValue ?? 0 { try mirror.apply(try watcher.notification("stackChanged")["params"]!) }
        #expect(mirror.root == truth["root"])
    }

    /// A precondition's redirect `by: select` on the way of a link: onto a tab of the container
    /// below the redirected screen, that tab is selected; onto anything else, its target takes the
    /// redirected screen's place, pushed (as before links could select).
    @Test func aRedirectBySelectInALinkSelectsATabOfTheContainerBelowElsePushes() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [A, Shell]}
              Shell: {tabs: [T1, T2]}
              T1: {preconditions: [toT2]}
              T2: {}
              A: {preconditions: [toB]}
              B: {}
            preconditions:
              toB: {check: {fact: x, equals: 1}, redirect: {to: B, by: select}}
              toT2: {check: {fact: x, equals: 1}, redirect: {to: T2, by: select}}
            links:
              "/a": [Home, A]
              "/t1": [Home, Shell, T1]
            """)
        let c = try d.client()
        try c.call("open", ["url": "/a"])
        var stack = try c.call("tree")["root"]?["children"]?.arrayValue ?? []
        #expect(stack.map { $0["coordinator"] } == ["app.Home", "app.B"], "\(stack)")
        try c.call("open", ["url": "/t1"])
        stack = try c.call("tree")["root"]?["children"]?.arrayValue ?? []
        #expect(stack.map { $0["coordinator"] } == ["app.Home", "app.Shell"], "\(stack)")
        #expect(stack.last?["selected"] == 1, "\(stack)")
    }

    /// A link `/a/b` to `[Home, A, B]` under root tabs `[Home, Other]`, whose `B` is gated by a
    /// precondition that fails and redirects as `redirect` says; `method` opens it (`open`) or
    /// builds its stack (`reset {to}`), and the reply is returned.
    static func redirectedLink(_ redirect: String, method: String, before: (TestClient) throws -> Void = { _ in }) throws -> (Daemon, TestClient, JSONValue) {
        let d = try Daemon(graph: """
            root: {tabs: [Home, Other]}
            coordinators:
              Home: {opens: [A]}
              A: {opens: [B]}
              B: {preconditions: [gate]}
              Other: {opens: [More]}
              More: {}
              SignIn: {setup: {type: object, properties: {v: {type: integer}}}}
            preconditions:
              gate: {check: {fact: g, equals: true}, redirect: \(redirect)}
            links:
              "/a/b": [Home, A, B]
            """)
        let c = try d.client()
        try before(c)
        return (d, c, try c.call(method, method == "open" ? ["url": "/a/b"] : ["to": ["Home", "A", "B"]]))
    }

    /// A redirect `by: select` on the way of a link (or `reset {to}`) to a tab of the graph's root
    /// selects that tab, its stack as it was, and builds nothing of the link: as the same redirect
    /// of a `navigate` does. (It put the tab's first screen in the link's stack, in another tab.)
    @Test(arguments: ["open", "reset"])
    func aRedirectBySelectInALinkToARootTabSelectsIt(method: String) throws {
        var before: JSONValue?
        let (d, c, r) = try Self.redirectedLink("{to: Other, by: select}", method: method) { c in
            try c.call("navigate", ["to": "Other", "by": "select"])
            try c.call("navigate", ["to": "More"])
            try c.call("navigate", ["to": "Home", "by": "select"])
            before = try c.call("tree")["root"]
        }
        _ = d
        #expect(r["redirected"]?.arrayValue?.first?["to"] == "app.Other", "\(r)")
        let after = try c.call("tree")
        #expect(after["root"]?["selected"] == 1 && after["root"]?["children"] == before?["children"], "\(after)")
        #expect(after["visible"]?.arrayValue?.count == 3 && r["visible"] == after["visible"], "\(r) \(after)")
    }

    /// A redirect `by: root` on the way of a link (or `reset {to}`) makes the whole tree a stack
    /// holding its target, as the same redirect of a `navigate` does (a sign-in gate on a deep
    /// link). It put the target in the link's stack, over the screens below the gated one.
    @Test(arguments: ["open", "reset"])
    func aRedirectByRootInALinkReplacesTheTree(method: String) throws {
        let (d, c, r) = try Self.redirectedLink("{to: SignIn, by: root, with: {v: 1}}", method: method)
        _ = d
        #expect(r["redirected"]?.arrayValue?.first?["to"] == "app.SignIn", "\(r)")
        let root = try c.call("tree")["root"]
        let children = root?["children"]?.arrayValue ?? []
        #expect(root?["kind"] == "stack" && children.count == 1 && children.first?["coordinator"] == "app.SignIn"
                    && children.first?["params"] == ["v": 1], "\(String(describing: root))")
    }

    /// What a link presents right after a tab container (its own entry, a redirect's target, a
    /// `reset {to}`'s) is presented by the screen the container shows, its selected tab's first: a
    /// container presents nothing itself. (It was hung on the container, where `tree` and
    /// `visible` did not show it and the reply named a node the tree did not hold.)
    @Test(arguments: [
        ("open", ["url": "/m"] as JSONValue, false),
        ("open", ["url": "/b"] as JSONValue, true),
        ("reset", ["to": ["Home", "Cont", "Modal"]] as JSONValue, false),
    ])
    func whatALinkPresentsAfterATabContainerTheScreenItShowsPresents(method: String, params: JSONValue, redirected: Bool) throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Cont]}
              Cont: {tabs: [A, B], opens: [Modal]}
              A: {}
              B: {preconditions: [gate]}
              Modal: {presentations: [present]}
            preconditions:
              gate: {check: {fact: g, equals: true}, redirect: {to: Modal, by: present}}
            links:
              "/m": [Home, Cont, Modal]
              "/b": [Home, Cont, B]
            """)
        let c = try d.client(), watcher = try d.client()
        var mirror = TreeMirror(snapshot: try watcher.call("subscribe", ["notifications": "compact"]))
        let r = try c.call(method, params)
        #expect((r["redirected"] != nil) == redirected, "\(r)")
        let tree = try c.call("tree")
        let stack = tree["root"]?["children"]?.arrayValue ?? []
        let shown = stack.last?["children"]?.arrayValue?.first?["children"]?.arrayValue?.first
        #expect(stack.map { $0["coordinator"] } == ["app.Home", "app.Cont"] && shown?["coordinator"] == "app.A", "\(tree)")
        let modal = shown?["presented"]?["children"]?.arrayValue?.first
        #expect(modal?["coordinator"] == "app.Modal", "A presents the modal: \(tree)")
        #expect(tree["visible"]?.arrayValue?.last == modal?["id"], "the modal is on top: \(tree)")
        if method == "open" { #expect(r["node"] == modal?["id"], "the reply names the modal: \(r)") }
        // A subscriber's copy, from the compact notification, is the tree.
        try mirror.apply(try watcher.notification("stackChanged")["params"] ?? .null)
        #expect(mirror.root == tree["root"] && mirror.visible == tree["visible"]?.arrayValue?.compactMap(\.stringValue), "\(mirror.root)")
    }

    /// A link whose first screen is a flow that no tab or root stack starts with becomes the new
    /// root stack, and the screens after it are the flow's steps, inside it (as when a tab starts
    /// with the flow).
    @Test func aLinkStartingWithAFlowBuildsTheStepsAfterItInsideIt() throws {
        let d = try Daemon(graph: """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Checkout]}
              Checkout: {flow: {start: Address, steps: [Address, Payment]}}
              Address: {}
              Payment: {}
            links:
              "/checkout/payment": [Checkout, Payment]
            """)
        let c = try d.client()
        let opened = try c.call("open", ["url": "/checkout/payment"])
        let root = try c.call("tree")["root"]
        let bottom = root?["children"]?.arrayValue ?? []
        #expect(bottom.count == 1 && bottom.first?["kind"] == "flow", "\(root ?? .null)")
        let steps = bottom.first?["children"]?.arrayValue ?? []
        #expect(steps.map { $0["coordinator"] } == ["app.Address", "app.Payment"], "\(root ?? .null)")
        #expect(opened["node"] == steps.last?["id"])
    }

    /// A screen a flow's step opens that is not one of the flow's steps goes on the stack around the
    /// flow, as `navigate` pushes it, not into the flow (a flow in a flow could not be read back
    /// after kill -9: found by the random walk, seed 842).
    @Test func aLinkPutsWhatAFlowStepOpensBesideTheFlowUnlessItIsAStep() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = dir.file("state.sqlite"), sock = dir.file("d.sock"), graphDir = try dir.graph("""
            root: {stack: Home}
            coordinators:
              Home: {opens: [Checkout]}
              Checkout: {flow: {start: Address, steps: [Address, Payment]}}
              Address: {opens: [Payment, Help, Survey]}
              Payment: {}
              Help: {}
              Survey: {flow: {start: Question, steps: [Question]}}
              Question: {}
            links:
              "/help": [Home, Checkout, Help]
              "/survey": [Home, Checkout, Survey]
              "/payment": [Home, Checkout, Payment]
            """)
        do {
            let d = try Daemon(arguments: ["--graph", graphDir, "--state", state], socketPath: sock)
            let c = try d.client()
            for (url, stack, steps) in [("/help", ["app.Home", "app.Checkout", "app.Help"], ["app.Address"]),
                                        ("/survey", ["app.Home", "app.Checkout", "app.Survey"], ["app.Address"]),
                                        ("/payment", ["app.Home", "app.Checkout"], ["app.Address", "app.Payment"])] {
                try c.call("open", ["url": .string(url)])
                let root = try c.call("tree")["root"]?["children"]?.arrayValue ?? []
                #expect(root.map { $0["coordinator"] } == stack.map { JSONValue.string($0) }, "\(url): \(root)")
                #expect(root[1]["children"]?.arrayValue?.map { $0["coordinator"] } == steps.map { JSONValue.string($0) }, "\(url): \(root)")
            }
            try c.call("open", ["url": "/survey"])
            d.stop(signal: SIGKILL)
        }
        let d = try Daemon(arguments: ["--graph", graphDir, "--state", state], socketPath: sock)
        #expect(try d.client().call("tree")["root"]?["children"]?.arrayValue?.last?["coordinator"] == "app.Survey")
    }

    /// `navd check` refuses a link entry that shows a tab of the container below it by another style,
    /// or selects what is not a tab of the coordinator below it.
    @Test func aLinkSelectsOnlyATabOfTheContainerJustBelow() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let graph = try dir.graph("""
            root: {stack: Home}
            coordinators:
              Home: {opens: [Shell, A]}
              Shell: {tabs: [A, B]}
              A: {}
              B: {}
            links:
              "/pushed": [Home, Shell, {to: B, by: push}]
              "/selected": [Home, {to: A, by: select}]
              "/replaced": [Home, {to: A, by: replace}]
            """)
        let r = try runCommand(Repo.binary("navd"), ["check", graph])
        let out = r.stdout + r.stderr
        #expect(r.status != 0)
        #expect(out.contains("link `/pushed` shows `app.B`, a tab of `app.Shell` just below it, by push"), "\(out)")
        #expect(out.contains("link `/selected` selects `app.A`, but `app.Home` just below it is not a tab container"), "\(out)")
        #expect(out.contains("link `/replaced` shows an entry by replace; a link builds its stack bottom first"), "\(out)")
    }

    @Test func aPlusInAQueryValueIsASpace() throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Search]}
              Search: {setup: {type: object, properties: {tag: {type: string}, q: {type: string}}}}
            links:
              "/search/:tag?q=:q": [Home, {to: Search, with: {tag: ":tag", q: ":q"}}]
            """
        let d = try Daemon(graph: graph)
        let c = try d.client()
        try c.call("open", ["url": "/search/a+b?q=red+shoes%2Bsocks"])
        let top = try c.call("tree")["root"]?["children"]?.arrayValue?.last
        #expect(top?["params"] == ["tag": "a+b", "q": "red shoes+socks"], "\(top ?? .null)")
        let url = try c.call("link.resolve")["url"]?.stringValue ?? ""
        try c.call("dismiss")
        try c.call("open", ["url": .string(url)])
        #expect(try c.call("tree")["root"]?["children"]?.arrayValue?.last?["params"] == top?["params"], "\(url)")
    }

    @Test func aLinkStepTakesItsMediatedFieldsFromTheScreenBelowIt() throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Account]}
              Account:
                setup: {type: object, required: [number], properties: {number: {type: integer}}}
                opens: [Statement]
              Statement:
                setup: {type: object, required: [account], properties: {account: {type: integer}, month: {type: string}}}
                mediation: {account: "$source.number"}
            links:
              "/account/:number/statement": [Home, {to: Account, with: {number: ":number"}}, Statement]
              "/statement/:month": [Home, {to: Account, with: {number: "1"}}, {to: Statement, with: {month: ":month", account: "2"}}]
            """
        let d = try Daemon(graph: graph)
        let c = try d.client()
        try c.call("open", ["url": "/account/12/statement"])
        var stack = try c.call("tree")["root"]?["children"]?.arrayValue ?? []
        #expect(stack.map { $0["coordinator"] } == ["app.Home", "app.Account", "app.Statement"])
        #expect(stack.last?["params"] == ["account": 12])
        // A field the link sets itself is not mediated.
        try c.call("open", ["url": "/statement/may"])
        stack = try c.call("tree")["root"]?["children"]?.arrayValue ?? []
        #expect(stack.last?["params"] == ["month": "may", "account": 2])
    }

    /// `open {by: "push"}` pushes the link's last screen from the visible one: like `navigate` from
    /// there, it supersedes a navigation pending from that screen (`cancelled`, `data.by` naming it),
    /// and a later navigation from the screen supersedes it while it is pending. Without `by` the
    /// link replaces the stack, and what was pending from a screen it removes is cancelled with it.
    @Test func aLinkPushedFromTheVisibleScreenSupersedesANavigationPendingFromIt() throws {
        let graph = """
            root: {stack: Home}
            coordinators:
              Home: {opens: [Gate, Post, Other, Vault]}
              Gate: {preconditions: [slow]}
              Vault: {preconditions: [slow]}
              Post: {}
              Other: {opens: [Post]}
            links:
              "/post": [Post]
              "/vault": [Vault]
              "/other/post": [Other, Post]
            preconditions:
              slow: {command: [sleep, "1"], timeout: 10s}
            """
        let d = try Daemon(graph: graph)
        let c = try d.client()
        func top() throws -> JSONValue? { try c.call("tree")["root"]?["children"]?.arrayValue?.last?["coordinator"] }

        let gate = try c.send("navigate", ["to": "Gate"])
        let post = try c.call("open", ["url": "/post", "by": "push"])
        let cancelled = try c.reply(to: gate)
        #expect(cancelled["error"]?["data"]?["kind"] == "cancelled" && cancelled["error"]?["data"]?["by"] == post["navigation"], "\(cancelled)")
        #expect(try top() == "app.Post")

        try c.call("reset")
        let vault = try c.send("open", ["url": "/vault", "by": "push"])
        let later = try c.call("navigate", ["to": "Post"])
        let superseded = try c.reply(to: vault)
        #expect(superseded["error"]?["data"]?["kind"] == "cancelled" && superseded["error"]?["data"]?["by"] == later["navigation"], "\(superseded)")
        #expect(try c.call("stats")["pending"] == 0)
        #expect(try top() == "app.Post")

        try c.call("reset")
        let again = try c.send("navigate", ["to": "Gate"])
        let whole = try c.call("open", ["url": "/other/post"])
        let gone = try c.reply(to: again)
        #expect(gone["error"]?["data"]?["kind"] == "cancelled" && gone["error"]?["data"]?["version"] == whole["version"], "\(gone)")
        #expect(gone["error"]?["message"]?.stringValue?.contains("left the tree at version") == true, "\(gone)")
        #expect(try top() == "app.Post")
    }
}
