import JSON
import NavGraph
import NavigationCore

#if canImport(Glibc)
import Glibc
#endif

/// A graph whose links use every part of a pattern: required, optional and wildcard segments,
/// declared and undeclared query values, typed fields (integer, number, boolean, array), a flow, a
/// tab selected by a link, a custom scheme's host, constants, a presented screen, mediation and a
/// query key repeated. Whatever a URL gives, some link carries it all, so that the URL
/// `link.resolve` answers opens as the stack it was made from.
let linkGraphText = """
    root: {tabs: [Home, Box]}
    coordinators:
      Home: {opens: [Item, Search, Files, F, Tags]}
      Box: {opens: [Item]}
      Item:
        setup: {type: object, required: [n], properties: {n: {type: integer}, tag: {type: string}, on: {type: boolean}, w: {type: number}}}
        opens: [Detail]
      Detail: {setup: {type: object, properties: {k: {type: string, minLength: 1}}}}
      Search: {setup: {type: object, properties: {q: {type: string}, page: {type: integer, minimum: 1}}}, opens: [Note]}
      Files: {setup: {type: object, required: [path], properties: {path: {type: string}}}}
      Tags: {setup: {type: object, properties: {t: {type: array, items: {type: integer}}}}}
      Note:
        setup: {type: object, required: [id], properties: {id: {type: integer, minimum: 0}, from: {type: string}, sev: {enum: [low, high]}}}
        presentations: [present]
        mediation: {from: "$source.q"}
      F: {flow: {start: S1, steps: [S1, S2]}}
      S1: {}
      S2: {}
    links:
      "/item/:n": [Home, {to: Item, with: {n: ":n"}}]
      "/item/:n/detail/:k": [Home, {to: Item, with: {n: ":n"}}, {to: Detail, with: {k: ":k"}}]
      "/search/:q?": [Home, {to: Search, with: {q: ":q"}}]
      "/find?page=:page": [Home, {to: Search, with: {page: ":page"}}]
      "/files/*path": [Home, {to: Files, with: {path: ":path"}}]
      "/tags/*t": [Home, {to: Tags, with: {t: ":t"}}]
      "/box/item/:n": [Box, {to: Item, with: {n: ":n"}}]
      "/flow": [Home, F]
      "/hot": [Home, {to: Item, with: {n: 7, tag: hot}}]
      "/tagged?t=:t": [Home, {to: Tags, with: {t: ":t"}}]
      "/note/:id/:sev?": [Home, {to: Search, with: {q: "x"}}, {to: Note, with: {id: ":id", sev: ":sev"}}]
      "/search/:q/note/:id": [Home, {to: Search, with: {q: ":q"}}, {to: Note, with: {id: ":id"}}]
    """

let linkGraph: NavigationGraph = {
    let (g, d) = GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: linkGraphText)], baseDirectory: "/")
    guard let g, !d.hasErrors else {
        say("the link target's graph does not load: \(d.sorted.map(\.description).joined(separator: "; "))")
        abort()
    }
    return g
}()

/// The screens a session shows, bottom first: each one's coordinator and params.
func shownScreens(_ s: Session) -> [String] {
    s.visible.compactMap { id in
        guard let n = s.node(id), n.coordinator >= 0 else { return nil }
        return "\(linkGraph.coordinators[n.coordinator].name) \(JSONWriter.string(n.params))"
    }
}

/// The input is a URL given to `open` (the path, its percent-escapes, the query, a scheme and host).
/// It builds a stack or is refused with a kind `open` documents and a message that names what was
/// wrong. A stack it builds has a URL (`link.resolve`), and that URL opened in a new session builds
/// the same screens with the same params: the two directions of a link agree on what a URL means.
func fuzzLink(_ data: UnsafeRawBufferPointer) {
    let url = String(decoding: data, as: UTF8.self)
    let s = Session(name: "fuzz", graph: linkGraph)
    do {
        _ = try s.commit(try s.planLink(url, caller: Caller()))
    } catch {
        require([.noMatchingLink, .invalidSetup].contains(error.kind), "open refused `\(url)` as \(error.kind.rawValue): \(error.message)")
        require(!error.message.isEmpty, "open refused `\(url)` without a message")
        return
    }
    let shown = shownScreens(s)
    let resolved: (url: String, pattern: String)
    do {
        resolved = try s.resolveLink(nil)
    } catch {
        require(false, "`\(url)` built \(shown), which has no URL: \(error.message)")
        return
    }
    let again = Session(name: "again", graph: linkGraph)
    do {
        _ = try again.commit(try again.planLink(resolved.url, caller: Caller()))
    } catch {
        require(false, "`\(url)` resolves to `\(resolved.url)` (\(resolved.pattern)), which open refuses: \(error.message)")
        return
    }
    require(shownScreens(again) == shown, "`\(url)` built \(shown); its URL `\(resolved.url)` builds \(shownScreens(again))")
}
