import Foundation
import JSON
import RPC

// MARK: - Builder

struct RawModule {
    let name: String
    let file: String
    let doc: Doc
    var coordinators: [(name: String, location: SourceLocation, doc: Doc)] = []
    var preconditions: [(name: String, location: SourceLocation, doc: Doc)] = []
}

struct Builder {
    var d = Diagnostics()
    /// Hints ("did you mean", what a module declares) given for unknown coordinator names: each
    /// looks at every coordinator, so past ``maxHints`` the errors come without one and a graph of
    /// thousands of unknown names is still checked in linear time.
    var hintsGiven = 0
    static let maxHints = 20
    /// The flows' names, listed by the errors of recoveries that name no flow (made once: a scan of
    /// every coordinator for each such error was quadratic).
    var flowNames: [String]?

    /// A "did you mean" among `candidates` for the first ``maxHints`` errors of a graph that name
    /// something unknown (each looks at every candidate: 20,000 unknown precondition names among
    /// 20,000 took minutes); past them the errors come without one. The candidates are taken in
    /// sorted order, so that of two as close the same is named at every run (a dictionary's keys
    /// come in another order in each process).
    mutating func hint<S: Sequence>(for word: String, among candidates: S) -> String? where S.Element == String {
        hintsGiven += 1
        return hintsGiven > Builder.maxHints ? nil : suggestion(for: word, among: candidates.sorted())
    }
    let baseDirectory: String
    var limits = GraphLimits()
    /// The edges counted so far against ``GraphLimits/maxEdges`` (``countEdges(_:at:what:)``).
    var edges = 0
    /// Whether they passed it (said once; nothing more is expanded after).
    var edgesRefused = false
    var modules: [RawModule] = []
    var moduleNames: [String: Int] = [:]
    var coordinators: [CoordinatorDraft] = []
    var coordinatorIndex: [String: Int] = [:]
    var preconditionIndex: [String: Int] = [:]
    var preconditionLocations: [SourceLocation] = []
    var preconditionNames: [(module: String, local: String)] = []
    var preconditionUsed: Set<Int> = []
    var recoverLocations: [Int: SourceLocation] = [:]
    var flowDeclared: Set<Int> = []
    /// Coordinators whose `opens` named something that does not exist (checks that read `opens` skip
    /// them rather than repeat that error).
    var incompleteOpens: Set<Int> = []
    /// Coordinators whose `setup` did not build (checks that read a setup skip them rather than
    /// report the schema missing, after reporting why it is invalid).
    var invalidSetups: Set<Int> = []
    /// The constants a redirect or a flow's `then` gives its target's setup fields (what says which,
    /// for the message), checked once every setup is built, as a route's are.
    var specConstants: [(what: String, target: Int, fields: [(name: String, value: JSONValue, location: SourceLocation)])] = []
    /// Every redirect and flow's `then` (what says which; for a `then`, the flow whose result its
    /// `$result` references read): a field its target's setup requires that it never gives is
    /// warned of once every setup is built (``checkSpecRequiredFields()``).
    var specTargets: [(what: String, target: Int, given: Set<String>, location: SourceLocation, flow: Int?)] = []
    /// `"$result.FIELD…"` references of a flow's `then` and of a recovery flow's `recover.facts`
    /// (what says which; the flow whose result they read): a FIELD the flow's result schema does
    /// not declare is warned of (``checkResultReferences()``).
    var resultReferences: [(what: String, flow: Int, reference: String, location: SourceLocation)] = []
    /// Routes, `then`s and redirects that select (``noteSelect(_:of:_:at:redirect:)``): a target no
    /// tab starts with is warned of.
    var selectTargets: [(what: String, target: Int, location: SourceLocation, redirect: Bool)] = []
    /// Where each tab container names its tabs, one per tab (a tab may not be a container itself).
    var tabContainerLocations: [Int: [SourceLocation]] = [:]
    /// Where each mediation expression is written (coordinator → field → the value), so that the
    /// checks made once every module is read point at the expression.
    var mediationLocations: [Int: [String: SourceLocation]] = [:]
    /// Where each constant of a route's or a link entry's `with` is written (the route's or the
    /// entry's location → field → the value).
    var constantLocations: [SourceLocation: [String: SourceLocation]] = [:]
    /// Where each entry of a link is written (the link's location → one per entry kept: the entry,
    /// and the coordinator name in it).
    var linkEntryLocations: [SourceLocation: [(entry: SourceLocation, name: SourceLocation)]] = [:]
    /// Schemas compiled so far, by the hash of the YAML they were compiled from.
    var schemas: [Int: [(doc: Doc, schema: Schema)]] = [:]
    /// Named ability sets ("module.name" → the coordinators they list), usable in `opens`.
    var abilities: [String: [Int]] = [:]

    init(baseDirectory: String) { self.baseDirectory = baseDirectory }

    static let moduleKeys = ["module", "root", "coordinators", "routes", "links", "preconditions", "guards", "abilities", "description"]
    /// Top-level keys navd reads past: `$schema`, with which a JSON module file names its schema for
    /// editors (`"$schema": "…/navgraph.schema.json"`).
    static let moduleAnnotations = ["$schema"]
    static let coordinatorKeys = ["setup", "opens", "presentations", "preconditions", "leave", "access", "mediation", "identity", "flow", "then", "tabs", "back", "description", "title"]
    static let flowKeys = ["start", "steps", "result", "then"]
    static let routeKeys = ["to", "by", "with", "description"]
    static let linkEntryKeys = ["to", "with", "by"]
    static let preconditionKeys = ["check", "command", "provider", "recover", "redirect", "timeout", "description"]
    static let checkKeys = ["fact", "equals", "notEquals", "exists"]
    static let recoverKeys = ["flow", "facts", "command", "provider", "timeout"]

    /// A key starting with `x-` is an extension (as in OpenAPI documents and Compose files): where a
    /// mapping's keys are the format's own words (a module's top level, a coordinator, a flow, a
    /// precondition, a route, a link entry, `root`, a guard, a setup schema), navd ignores it, so
    /// that a file can keep YAML anchors (`x-common: &common …`) and other tools' notes there. It is
    /// never a misspelling of one of those words.
    static func isExtension(_ key: String) -> Bool { key.utf8.starts(with: "x-".utf8) }

    // MARK: helpers

    mutating func unknownKeys(_ doc: Doc, allowed: [String], what: String) {
        guard let m = doc.mapping else { return }
        for (k, loc, _) in m where !allowed.contains(k) && !Builder.isExtension(k) {
            let hint = suggestion(for: k, among: allowed).map { "did you mean `\($0)`? " } ?? ""
            d.error(loc, "unknown key `\(k)` in \(what); \(hint)allowed keys: \(allowed.joined(separator: ", ")) (and extensions, ignored: keys starting with x-)")
        }
    }

    mutating func expectMap(_ doc: Doc, _ what: String) -> [(key: String, keyLocation: SourceLocation, value: Doc)]? {
        if doc.isNull { return [] }
        guard let m = doc.mapping else {
            d.error(doc.location, "\(what) must be a mapping, not \(doc.typeName)")
            return nil
        }
        return m
    }

    mutating func stringList(_ doc: Doc, _ what: String) -> [(String, SourceLocation)] {
        if doc.isNull { return [] }
        if let s = doc.text { return [(s, doc.location)] }
        guard let seq = doc.sequence else {
            d.error(doc.location, "\(what) must be a list of names such as [Home, cart.Cart], not \(doc.typeName)")
            return []
        }
        var out: [(String, SourceLocation)] = []
        for item in seq {
            if let s = item.text, !item.isNull { out.append((s, item.location)) } else {
                d.error(item.location, "\(what) must hold names, not \(item.typeName)")
            }
        }
        return out
    }

    /// "Name" → "module.Name"; "other.Name" stays.
    func qualify(_ ref: String, in module: String) -> String {
        ref.utf8.contains(UInt8(ascii: ".")) ? ref : module + "." + ref
    }

    mutating func resolveCoordinator(_ ref: String, in module: String, at loc: SourceLocation, role: String = "") -> Int? {
        let q = qualify(ref, in: module)
        if let i = coordinatorIndex[q] { return i }
        let parts = q.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            d.error(loc, "`\(ref)`\(role) is not a coordinator name: write Name, or module.Name for another module's")
            return nil
        }
        let mod = String(parts[0])
        if moduleNames[mod] == nil {
            let said = hint(for: mod, among: moduleNames.keys).map { "; did you mean `\($0)`?" } ?? ""
            d.error(loc, "`\(ref)`\(role) refers to module `\(mod)`, which does not exist\(said)")
            return nil
        }
        let said: String
        if let s = hint(for: q, among: coordinatorIndex.keys) {
            said = "; did you mean `\(s)`?"
        } else if hintsGiven > Builder.maxHints {
            said = ""
        } else {
            let here = coordinators.filter { $0.module == mod }.map(\.localName).sorted()
            said = here.isEmpty ? "" : "; module `\(mod)` declares \(here.prefix(12).joined(separator: ", "))\(here.count > 12 ? ", …" : "")"
        }
        d.error(loc, "`\(q)`\(role) is not a coordinator\(said)")
        return nil
    }

    mutating func resolvePrecondition(_ ref: String, in module: String, at loc: SourceLocation) -> Int? {
        let q = qualify(ref, in: module)
        if let i = preconditionIndex[q] {
            preconditionUsed.insert(i)
            return i
        }
        let said = hint(for: q, among: preconditionIndex.keys).map { "; did you mean `\($0)`?" }
            ?? (preconditionIndex.isEmpty ? "; declare it under `preconditions:` of module `\(q.split(separator: ".")[0])`" : "")
        d.error(loc, "`\(q)` is not a precondition\(said)")
        return nil
    }

    mutating func presentation(_ doc: Doc) -> Presentation? {
        guard let s = doc.text, let p = Presentation(rawValue: s) else {
            let hint = doc.text.flatMap { suggestion(for: $0, among: Presentation.allCases.map(\.rawValue)) }.map { "did you mean `\($0)`? " } ?? ""
            d.error(doc.location, "`\(doc.description)` is not a presentation style; \(hint)use push, present, replace, root or select")
            return nil
        }
        return p
    }

    mutating func schema(_ doc: Doc, what: String) -> Schema? {
        // Many coordinators share one setup model; a schema is immutable, so it is compiled once.
        var hasher = Hasher()
        doc.hashData(into: &hasher)
        let hash = hasher.finalize()
        if let s = schemas[hash]?.first(where: { $0.doc.sameData(as: doc) }) { return s.schema }
        var errors: [Schema.CompileError] = []
        let s = Schema.compile(doc.json, errors: &errors)
        for e in errors {
            d.error(doc.location(at: e.pointer, key: e.atKey), "invalid \(what) schema at `\(e.pointer.isEmpty ? "/" : e.pointer)`: \(e.message)")
        }
        guard errors.isEmpty, let s else { return nil }
        schemas[hash, default: []].append((doc, s))
        return s
    }

    // MARK: passes

    mutating func build(_ sources: [GraphSource]) -> NavigationGraph? {
        // A graph past its size is not checked further: what its files say is not all read.
        guard declareModules(sources) else { return nil }
        buildCoordinators()
        let preconditions = buildPreconditions()
        let (routes, links, top) = buildRoutesLinksAndRoot()
        // Graph-level guards become the first preconditions of every coordinator they guard, so
        // that the checks below (recovery cycles) and every kind of navigation see them.
        var guards: [GraphGuard] = []
        for m in modules {
            if let g = m.doc["guards"] { guards += buildGuards(g, module: m.name, preconditions: preconditions) }
        }
        applyGuards(guards)
        let built = coordinators.map(Coordinator.init)
        crossCheck(root: top.root, rootLocation: top.location, routes: routes, links: links, preconditions: preconditions, built: built)
        checkPlaceholderFields(preconditions, graphGuards: Set(guards.map(\.precondition)))
        let root = top.root, rootBack = top.back, rootLocation = top.location
        guard !d.hasErrors, let root else { return nil }
        return NavigationGraph(modules: modules.map { Module(name: $0.name, file: $0.file) }, coordinators: built,
                               preconditions: preconditions, routes: routes, links: links, root: root, rootBack: rootBack,
                               rootLocation: rootLocation, guards: guards, baseDirectory: baseDirectory)
    }

    /// Pass 1: parse files, name modules, declare coordinators and preconditions. False when the
    /// files together are past `--max-graph-bytes` or `--max-graph-nodes` (said in a diagnostic).
    private mutating func declareModules(_ sources: [GraphSource]) -> Bool {
        // What every file's documents may spend together, as they are held until the graph is built.
        var bytes = 0
        var nodes = Doc.NodeBudget(limits.maxNodes)
        for src in sources {
            guard src.text.utf8.count <= limits.maxFileBytes else {
                d.error(SourceLocation(file: src.file, line: 1, column: 1),
                        "the file is \(src.text.utf8.count) bytes; a module file may be at most \(limits.maxFileBytes) (the --max-graph-file limit)")
                continue
            }
            guard bytes + src.text.utf8.count <= limits.maxTotalBytes else {
                d.error(SourceLocation(file: src.file, line: 1, column: 1), GraphLoader.tooLarge(total: bytes, adding: src.text.utf8.count, limits))
                return false
            }
            bytes += src.text.utf8.count
            guard let doc = Doc.parse(src.text, file: src.file, budget: &nodes, diagnostics: &d) else {
                if nodes.isSpent { return false }
                continue
            }
            guard let top = doc.mapping else {
                d.error(doc.location, "a module file must be a mapping with keys such as `coordinators:` and `routes:`, not \(doc.typeName)")
                continue
            }
            // A file whose top level has a key that is neither a module key nor a near miss of one
            // is not a module file (a link to some other file, say): it is reported without a word
            // of its content.
            let readable = Builder.moduleKeys + Builder.moduleAnnotations
            let strange = top.filter {
                !readable.contains($0.key) && !Builder.isExtension($0.key) && suggestion(for: $0.key, among: Builder.moduleKeys) == nil
            }
            if !strange.isEmpty {
                d.error(doc.location, "not a module file: its top level has \(strange.count) key(s) that module files do not have (they have \(Builder.moduleKeys.joined(separator: ", "))); its content is not shown")
                continue
            }
            unknownKeys(doc, allowed: readable, what: "a module file")
            let stem = ((src.file as NSString).lastPathComponent as NSString).deletingPathExtension
            var name = stem
            var nameLoc = doc.location
            if let m = doc["module"] {
                if let s = m.text, !m.isNull { name = s; nameLoc = m.location } else {
                    d.error(m.location, "`module` must be a name such as `shop`")
                }
            }
            if !isPlainName(name) {
                d.error(nameLoc, "`\(name)` is not a valid module name\(firstUnplainCharacter(name).map { " (it holds \($0))" } ?? ""): use letters, digits, `_` or `-`, without dots")
                continue
            }
            if let other = moduleNames[name] {
                d.error(nameLoc, "module `\(name)` is declared twice (also by \(modules[other].file)); give each file its own `module:` name")
                continue
            }
            moduleNames[name] = modules.count
            var raw = RawModule(name: name, file: src.file, doc: doc)
            if let cs = doc["coordinators"], let m = expectMap(cs, "`coordinators`") {
                for (k, loc, v) in m {
                    if !isPlainName(k) {
                        d.error(loc, "`\(k)` is not a valid coordinator name\(firstUnplainCharacter(k).map { " (it holds \($0))" } ?? ""): names are letters, digits, `_` or `-`, declared unqualified (without dots), such as Product")
                        continue
                    }
                    raw.coordinators.append((k, loc, v))
                    let c = CoordinatorDraft(index: coordinators.count, module: name, localName: k, location: loc)
                    coordinatorIndex[c.name] = c.index
                    if v["flow"] != nil { flowDeclared.insert(c.index) }
                    coordinators.append(c)
                }
            }
            if let ps = doc["preconditions"], let m = expectMap(ps, "`preconditions`") {
                for (k, loc, v) in m {
                    raw.preconditions.append((k, loc, v))
                    preconditionIndex[name + "." + k] = preconditionNames.count
                    preconditionNames.append((name, k))
                    preconditionLocations.append(loc)
                }
            }
            modules.append(raw)
        }
        return true
    }

    /// Pass 2: ability sets, then coordinators (whose `opens` may name them), then flows.
    private mutating func buildCoordinators() {
        var abilityDocs: [(module: String, map: [(key: String, keyLocation: SourceLocation, value: Doc)])] = []
        for m in modules {
            if let a = m.doc["abilities"], let map = expectMap(a, "`abilities`") {
                abilityDocs.append((m.name, map))
                for (name, _, _) in map { abilities[m.name + "." + name] = [] }
            }
        }
        for (module, map) in abilityDocs { buildAbilities(map, module: module) }
        for m in modules {
            for (name, loc, doc) in m.coordinators {
                let c = coordinators[coordinatorIndex[m.name + "." + name]!]
                buildCoordinator(c, doc, module: m.name, at: loc)
            }
        }
        // Flows need every coordinator's basics first (steps, starts).
        for m in modules {
            for (name, _, doc) in m.coordinators {
                guard let f = doc["flow"] else { continue }
                let c = coordinators[coordinatorIndex[m.name + "." + name]!]
                buildFlow(c, f, then: doc["then"], module: m.name)
            }
        }
    }

    /// Pass 3: preconditions (one that does not build stands as a provider, so indices hold).
    private mutating func buildPreconditions() -> [Precondition] {
        var preconditions: [Precondition] = []
        for m in modules {
            for (name, loc, doc) in m.preconditions {
                let idx = preconditions.count
                if let p = buildPrecondition(index: idx, module: m.name, name: name, doc, at: loc) {
                    preconditions.append(p)
                } else {
                    preconditions.append(Precondition(index: idx, name: m.name + "." + name, localName: name, module: m.name,
                                                      kind: .provider(timeoutMs: defaultTaskTimeoutMs), recover: nil, location: loc))
                }
            }
        }
        return preconditions
    }

    /// Pass 4: routes, links, root.
    private mutating func buildRoutesLinksAndRoot() -> (routes: [Route], links: [Link], root: (root: Root?, back: TabBack, location: SourceLocation?)) {
        var routes: [Route] = []
        var links: [Link] = []
        var root: Root?
        var rootBack = TabBack.none
        var rootLocation: SourceLocation?
        // A link's segments → the link that has them (a search of every link before, each time: 16,000
        // links took 1.6 s to load).
        var linkBySegments: [[Link.Segment]: Int] = [:]
        for m in modules {
            if let rs = m.doc["routes"], let map = expectMap(rs, "`routes`") {
                for (name, loc, doc) in map {
                    if let r = buildRoute(name, doc, module: m.name, at: loc) { routes.append(r) }
                }
            }
            if let ls = m.doc["links"], let map = expectMap(ls, "`links`") {
                for (pattern, loc, doc) in map {
                    if let l = buildLink(pattern, doc, module: m.name, at: loc) {
                        if let dup = linkBySegments[l.segments] {
                            d.error(loc, "link `\(pattern)` matches the same URLs as `\(links[dup].pattern)` (\(links[dup].location)); keep one of them")
                        } else {
                            linkBySegments[l.segments] = links.count
                            links.append(l)
                        }
                    }
                }
            }
            if let r = m.doc["root"] {
                if let first = rootLocation {
                    d.error(r.location, "a second `root`: only one module may declare the root (the first is at \(first))")
                    continue
                }
                rootLocation = r.location
                root = buildRoot(r, module: m.name)
                if let b = r["back"] {
                    if case .tabs = root { rootBack = tabBack(b) ?? .none } else if root != nil {
                        d.error(b.location, "`root.back` says what dismiss does at the first screen of a tab, and this root is a stack; declare it with `tabs`")
                    }
                }
            }
        }
        if rootLocation == nil && !modules.isEmpty {
            let first = modules[0]
            d.error(SourceLocation(file: first.file, line: 1, column: 1),
                    "no module declares `root`; add `root: {stack: Home}` or `root: {tabs: [Home, cart.Cart]}` to one module file")
        }
        return (routes, links, (root, rootBack, rootLocation))
    }

    /// Pass 5: cross checks.
    private mutating func crossCheck(root: Root?, rootLocation: SourceLocation?, routes: [Route], links: [Link], preconditions: [Precondition],
                                     built: [Coordinator]) {
        checkMediation()
        // The root's screens start with no params, as a tab container's do: a setup that refuses
        // that makes every session start with a screen whose params do not match it. A warning (a
        // container's tab is an error: navigating to the container could never pass).
        let rootScreens: [Int]
        switch root {
        case .stack(let c)?: rootScreens = [c]
        case .tabs(let t)?: rootScreens = t
        case nil: rootScreens = []
        }
        for c in rootScreens {
            if let v = coordinators[c].setup?.validate(.object([:])), let at = rootLocation {
                d.warning(at, "the root's `\(coordinators[c].name)` starts every session with no params, and its setup refuses that: \(v.message); make its fields optional, or start with a screen that needs none")
            }
        }
        for (i, locations) in tabContainerLocations.sorted(by: { $0.key < $1.key }) {
            for (t, loc) in zip(coordinators[i].tabs, locations) where !coordinators[t].tabs.isEmpty {
                d.error(loc, "`\(coordinators[t].name)`, a tab of `\(coordinators[i].name)`, is a tab container itself; tabs hold screens or flows")
            }
            for (t, loc) in zip(coordinators[i].tabs, locations) {
                if let v = coordinators[t].setup?.validate(.object([:])) {
                    d.error(loc, "`\(coordinators[t].name)`, a tab of `\(coordinators[i].name)`, starts with no params, and its setup refuses that: \(v.message)")
                }
            }
        }
        checkConstants(routes: routes, links: links)
        checkSelectTargets(root: root)
        checkLinkOpens(links, built)
        checkLinkRequiredFields(links)
        checkSpecRequiredFields()
        checkResultReferences()
        checkRecoveryCycles(preconditions)
        warnUnreached(root: root, routes: routes, links: links, preconditions: preconditions)
        for (i, p) in preconditionNames.enumerated() where !preconditionUsed.contains(i) {
            d.warning(preconditionLocations[i], "precondition `\(p.module).\(p.local)` guards no coordinator; use it in some `preconditions:` list or remove it")
        }
    }
}
