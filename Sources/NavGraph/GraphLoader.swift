import Foundation
import JSON

/// One module file's text and the name diagnostics give it.
public struct GraphSource: Sendable {
    public var file: String
    public var text: String
    public init(file: String, text: String) {
        self.file = file
        self.text = text
    }
}

/// Bounds on what loading a graph may cost, so that a hostile or mistaken file cannot take the
/// daemon's memory or time: each is reported with a diagnostic naming the flag that sets it.
public struct GraphLimits: Sendable {
    /// The largest module file read, in bytes (`--max-graph-file`). Default 4 MiB, hundreds of times
    /// a real module's size.
    public var maxFileBytes = 4 << 20
    /// The most YAML nodes one file may expand to, aliases counted each time they are used
    /// (`--max-graph-nodes`). Default 200,000: a 600-byte alias bomb expands to 10^10.
    public var maxNodes = 200_000
    /// The most module files read from a graph directory. Default 10,000.
    public var maxFiles = 10_000
    public init() {}
}

/// Loads module files into a ``NavigationGraph``, reporting every problem like a compiler.
public enum GraphLoader {
    public static let extensions: Set<String> = ["yaml", "yml", "json"]

    /// Loads every `*.yaml`, `*.yml` and `*.json` file of `directory`.
    /// Only regular files are read (a symbolic link is followed to one), each at most
    /// `limits.maxFileBytes`: a FIFO or a device named `*.yaml` is refused, not read.
    public static func load(directory: String, limits: GraphLimits = GraphLimits()) -> (graph: NavigationGraph?, diagnostics: Diagnostics) {
        var d = Diagnostics()
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: directory, isDirectory: &isDir), isDir.boolValue else {
            d.error(SourceLocation(file: directory, line: 1, column: 1),
                    "`\(directory)` is not a directory; --graph takes the folder that holds the module files (*.yaml, *.yml, *.json)")
            return (nil, d)
        }
        let names = ((try? fm.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { extensions.contains(($0 as NSString).pathExtension.lowercased()) }
            .sorted()
        if names.count > limits.maxFiles {
            d.error(SourceLocation(file: directory, line: 1, column: 1),
                    "`\(directory)` holds \(names.count) module files; a graph may have at most \(limits.maxFiles)")
            return (nil, d)
        }
        var sources: [GraphSource] = []
        for n in names {
            let path = (directory as NSString).appendingPathComponent(n)
            var st = stat()
            guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
                d.error(SourceLocation(file: path, line: 1, column: 1), "not a regular file (a directory, a device, a FIFO or a broken link); module files are plain text files")
                continue
            }
            guard Int(st.st_size) <= limits.maxFileBytes else {
                d.error(SourceLocation(file: path, line: 1, column: 1),
                        "the file is \(st.st_size) bytes; a module file may be at most \(limits.maxFileBytes) (the --max-graph-file limit)")
                continue
            }
            guard let handle = FileHandle(forReadingAtPath: path),
                  let data = try? handle.read(upToCount: limits.maxFileBytes + 1) ?? Data() else {
                d.error(SourceLocation(file: path, line: 1, column: 1), "cannot read the file")
                continue
            }
            try? handle.close()
            guard data.count <= limits.maxFileBytes else {
                d.error(SourceLocation(file: path, line: 1, column: 1),
                        "the file grew past \(limits.maxFileBytes) bytes while it was read (the --max-graph-file limit)")
                continue
            }
            guard let text = String(data: data, encoding: .utf8) else {
                d.error(SourceLocation(file: path, line: 1, column: 1), "the file is not UTF-8 text")
                continue
            }
            sources.append(GraphSource(file: path, text: text))
        }
        if sources.isEmpty && !d.hasErrors {
            d.error(SourceLocation(file: directory, line: 1, column: 1),
                    "no module files in `\(directory)`: a graph is one or more *.yaml, *.yml or *.json files")
            return (nil, d)
        }
        let (g, more) = load(sources: sources, baseDirectory: directory, limits: limits)
        d.append(contentsOf: more)
        return (d.hasErrors ? nil : g, d)
    }

    /// Loads module files given as text (`file` names them in diagnostics; its stem is the
    /// module's default name).
    public static func load(sources: [GraphSource], baseDirectory: String,
                            limits: GraphLimits = GraphLimits()) -> (graph: NavigationGraph?, diagnostics: Diagnostics) {
        var b = Builder(baseDirectory: baseDirectory)
        b.limits = limits
        let g = b.build(sources)
        return (b.d.hasErrors ? nil : g, b.d)
    }
}

extension Diagnostics {
    mutating func append(contentsOf other: Diagnostics) {
        for x in other.all {
            if x.severity == .error { error(x.location, x.message) } else { warning(x.location, x.message) }
        }
    }
}

// MARK: - Builder

private struct RawModule {
    let name: String
    let file: String
    let doc: Doc
    var coordinators: [(name: String, location: SourceLocation, doc: Doc)] = []
    var preconditions: [(name: String, location: SourceLocation, doc: Doc)] = []
}

private struct Builder {
    var d = Diagnostics()
    let baseDirectory: String
    var limits = GraphLimits()
    var modules: [RawModule] = []
    var moduleNames: [String: Int] = [:]
    var coordinators: [Coordinator] = []
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

    static let moduleKeys = ["module", "root", "coordinators", "routes", "links", "preconditions", "abilities", "description"]
    static let coordinatorKeys = ["setup", "opens", "presentations", "preconditions", "leave", "access", "mediation", "flow", "tabs", "description", "title"]
    static let flowKeys = ["start", "steps", "result", "then"]
    static let routeKeys = ["to", "by", "with", "description"]
    static let linkEntryKeys = ["to", "with", "by"]
    static let preconditionKeys = ["check", "command", "provider", "recover", "redirect", "timeout", "description"]
    static let checkKeys = ["fact", "equals", "notEquals", "exists"]
    static let recoverKeys = ["flow", "facts", "command", "provider", "timeout"]

    // MARK: helpers

    mutating func unknownKeys(_ doc: Doc, allowed: [String], what: String) {
        guard let m = doc.mapping else { return }
        for (k, loc, _) in m where !allowed.contains(k) {
            let hint = suggestion(for: k, among: allowed).map { "did you mean `\($0)`? " } ?? ""
            d.error(loc, "unknown key `\(k)` in \(what); \(hint)allowed keys: \(allowed.joined(separator: ", "))")
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
        let parts = q.split(separator: ".", maxSplits: 1)
        let mod = String(parts[0])
        if moduleNames[mod] == nil {
            let hint = suggestion(for: mod, among: moduleNames.keys).map { "; did you mean `\($0)`?" } ?? ""
            d.error(loc, "`\(ref)`\(role) refers to module `\(mod)`, which does not exist\(hint)")
            return nil
        }
        let hint: String
        if let s = suggestion(for: q, among: coordinatorIndex.keys) {
            hint = "; did you mean `\(s)`?"
        } else {
            let here = coordinators.filter { $0.module == mod }.map(\.localName).sorted()
            hint = here.isEmpty ? "" : "; module `\(mod)` declares \(here.prefix(12).joined(separator: ", "))\(here.count > 12 ? ", …" : "")"
        }
        d.error(loc, "`\(q)`\(role) is not a coordinator\(hint)")
        return nil
    }

    mutating func resolvePrecondition(_ ref: String, in module: String, at loc: SourceLocation) -> Int? {
        let q = qualify(ref, in: module)
        if let i = preconditionIndex[q] {
            preconditionUsed.insert(i)
            return i
        }
        let hint = suggestion(for: q, among: preconditionIndex.keys).map { "; did you mean `\($0)`?" }
            ?? (preconditionIndex.isEmpty ? "; declare it under `preconditions:` of module `\(q.split(separator: ".")[0])`" : "")
        d.error(loc, "`\(q)` is not a precondition\(hint)")
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
        // Pass 1: parse files, name modules, declare coordinators and preconditions.
        for src in sources {
            guard src.text.utf8.count <= limits.maxFileBytes else {
                d.error(SourceLocation(file: src.file, line: 1, column: 1),
                        "the file is \(src.text.utf8.count) bytes; a module file may be at most \(limits.maxFileBytes) (the --max-graph-file limit)")
                continue
            }
            guard let doc = Doc.parse(src.text, file: src.file, maxNodes: limits.maxNodes, diagnostics: &d) else { continue }
            guard let top = doc.mapping else {
                d.error(doc.location, "a module file must be a mapping with keys such as `coordinators:` and `routes:`, not \(doc.typeName)")
                continue
            }
            // A file whose top level has a key that is neither a module key nor a near miss of one
            // is not a module file (a link to some other file, say): it is reported without a word
            // of its content.
            let strange = top.filter { !Builder.moduleKeys.contains($0.key) && suggestion(for: $0.key, among: Builder.moduleKeys) == nil }
            if !strange.isEmpty {
                d.error(doc.location, "not a module file: its top level has \(strange.count) key(s) that module files do not have (they have \(Builder.moduleKeys.joined(separator: ", "))); its content is not shown")
                continue
            }
            unknownKeys(doc, allowed: Builder.moduleKeys, what: "a module file")
            let stem = ((src.file as NSString).lastPathComponent as NSString).deletingPathExtension
            var name = stem
            var nameLoc = doc.location
            if let m = doc["module"] {
                if let s = m.text, !m.isNull { name = s; nameLoc = m.location } else {
                    d.error(m.location, "`module` must be a name such as `shop`")
                }
            }
            if name.isEmpty || name.utf8.contains(UInt8(ascii: ".")) || name.contains(where: \.isWhitespace) {
                d.error(nameLoc, "`\(name)` is not a valid module name: use letters, digits, `_` or `-`, without dots")
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
                    if k.utf8.contains(UInt8(ascii: ".")) || k.isEmpty {
                        d.error(loc, "`\(k)` is not a valid coordinator name: names are declared unqualified, without dots")
                        continue
                    }
                    raw.coordinators.append((k, loc, v))
                    let c = Coordinator(index: coordinators.count, module: name, localName: k, location: loc)
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

        // Pass 2: ability sets, then coordinators (whose `opens` may name them).
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
                buildFlow(c, f, module: m.name)
            }
        }

        // Pass 3: preconditions.
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

        // Pass 4: routes, links, root.
        var routes: [Route] = []
        var links: [Link] = []
        var root: Root?
        var rootLocation: SourceLocation?
        for m in modules {
            if let rs = m.doc["routes"], let map = expectMap(rs, "`routes`") {
                for (name, loc, doc) in map {
                    if let r = buildRoute(name, doc, module: m.name, at: loc) { routes.append(r) }
                }
            }
            if let ls = m.doc["links"], let map = expectMap(ls, "`links`") {
                for (pattern, loc, doc) in map {
                    if let l = buildLink(pattern, doc, module: m.name, at: loc) {
                        if let dup = links.first(where: { $0.segments == l.segments }) {
                            d.error(loc, "link `\(pattern)` matches the same URLs as `\(dup.pattern)` (\(dup.location)); keep one of them")
                        } else {
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
            }
        }
        if rootLocation == nil && !modules.isEmpty {
            let first = modules[0]
            d.error(SourceLocation(file: first.file, line: 1, column: 1),
                    "no module declares `root`; add `root: {stack: Home}` or `root: {tabs: [Home, cart.Cart]}` to one module file")
        }

        // Pass 5: cross checks.
        checkMediation()
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
        checkLinkOpens(links)
        checkRecoveryCycles(preconditions)
        warnUnreached(root: root, routes: routes, links: links, preconditions: preconditions)
        for (i, p) in preconditionNames.enumerated() where !preconditionUsed.contains(i) {
            d.warning(preconditionLocations[i], "precondition `\(p.module).\(p.local)` guards no coordinator; use it in some `preconditions:` list or remove it")
        }

        guard !d.hasErrors, let root else { return nil }
        return NavigationGraph(modules: modules.map { Module(name: $0.name, file: $0.file) }, coordinators: coordinators,
                               preconditions: preconditions, routes: routes, links: links, root: root, baseDirectory: baseDirectory)
    }

    /// `abilities: {browse: [Product, Search]}`: named lists of coordinators that `opens` may use by
    /// name, so many screens share one list. A set lists coordinators only (not other sets), and its
    /// name may not be a coordinator's of the same module.
    mutating func buildAbilities(_ map: [(key: String, keyLocation: SourceLocation, value: Doc)], module: String) {
        for (name, loc, v) in map {
            let q = module + "." + name
            if name.isEmpty || name.utf8.contains(UInt8(ascii: ".")) {
                d.error(loc, "`\(name)` is not a valid ability set name: names are declared unqualified, without dots")
                continue
            }
            if coordinatorIndex[q] != nil {
                d.error(loc, "ability set `\(q)` has the name of a coordinator; `opens: [\(name)]` would be ambiguous, so rename the set")
                abilities[q] = nil
                continue
            }
            var set: [Int] = []
            for (ref, l) in stringList(v, "ability set `\(q)`") {
                if coordinatorIndex[qualify(ref, in: module)] == nil && abilities[qualify(ref, in: module)] != nil {
                    d.error(l, "ability set `\(q)` lists the ability set `\(ref)`; a set lists coordinators only (list the coordinators, or name both sets in `opens`)")
                    continue
                }
                guard let i = resolveCoordinator(ref, in: module, at: l, role: " (in ability set `\(q)`)") else { continue }
                if set.contains(i) { d.error(l, "`\(coordinators[i].name)` is listed twice in ability set `\(q)`") } else { set.append(i) }
            }
            abilities[q] = set
        }
    }

    mutating func buildCoordinator(_ c: Coordinator, _ doc: Doc, module: String, at loc: SourceLocation) {
        if doc.isNull { return }
        guard doc.mapping != nil else {
            d.error(doc.location, "coordinator `\(c.name)` must be a mapping (its `setup`, `opens`, …), or empty")
            return
        }
        unknownKeys(doc, allowed: Builder.coordinatorKeys, what: "coordinator `\(c.name)`")
        if let s = doc["setup"] { c.setup = schema(s, what: "setup") }
        if let o = doc["opens"] {
            var listed = Set<Int>()
            for (ref, l) in stringList(o, "`opens`") {
                // An ability set brings its coordinators (one already opened is not repeated).
                if coordinatorIndex[qualify(ref, in: module)] == nil, let set = abilities[qualify(ref, in: module)] {
                    for i in set where c.opensSet.insert(i).inserted { c.opens.append(i) }
                    continue
                }
                guard let i = resolveCoordinator(ref, in: module, at: l) else { incompleteOpens.insert(c.index); continue }
                if !listed.insert(i).inserted {
                    d.error(l, "`\(coordinators[i].name)` is listed twice in the `opens` of `\(c.name)`")
                } else if c.opensSet.insert(i).inserted {
                    c.opens.append(i)
                }
            }
        }
        if let p = doc["presentations"] {
            var set = Set<Presentation>()
            for (s, l) in stringList(p, "`presentations`") {
                if let pr = presentation(Doc(value: .scalar(s, plain: true), location: l)) { set.insert(pr) }
            }
            c.presentations = set
        }
        if let p = doc["preconditions"] {
            for (ref, l) in stringList(p, "`preconditions`") {
                if let i = resolvePrecondition(ref, in: module, at: l) { c.preconditions.append(i) }
            }
        }
        if let t = doc["tabs"] {
            if doc["flow"] != nil {
                d.error(t.location, "coordinator `\(c.name)` is a flow and a tab container; give it `flow` or `tabs`, not both")
            }
            var tabs: [Int] = []
            var locations: [SourceLocation] = []
            for (ref, l) in stringList(t, "`tabs`") {
                guard let i = resolveCoordinator(ref, in: module, at: l, role: " (a tab of `\(c.name)`)") else { continue }
                if tabs.contains(i) {
                    d.error(l, "`\(coordinators[i].name)` is listed twice in the `tabs` of `\(c.name)`")
                } else {
                    tabs.append(i)
                    locations.append(l)
                }
            }
            if tabs.isEmpty { d.error(t.location, "the `tabs` of `\(c.name)` list no coordinator; give at least one, as [General, Privacy]") }
            c.tabs = tabs
            tabContainerLocations[c.index] = locations
        }
        if let p = doc["leave"] {
            for (ref, l) in stringList(p, "`leave`") {
                if let i = resolvePrecondition(ref, in: module, at: l) { c.leave.append(i) }
            }
        }
        if let a = doc["access"] { c.access = stringList(a, "`access`").map(\.0) }
        if let m = doc["mediation"], let map = expectMap(m, "`mediation`") {
            for (field, l, v) in map {
                guard let expr = v.text, expr.hasPrefix("$source") else {
                    d.error(v.location, "mediation of `\(field)` must read the source's params, as \"$source.FIELD\", not `\(v.description)`")
                    continue
                }
                let path = expr.split(separator: ".").dropFirst().map(String.init)
                if expr != "$source" && !expr.hasPrefix("$source.") || path.isEmpty {
                    d.error(v.location, "mediation of `\(field)` must name a field of the source's params, as \"$source.FIELD\", not `\(expr)`")
                    continue
                }
                if let setup = c.setup, setup.types?.contains(.object) ?? true, !setup.properties.isEmpty, !setup.declares(field),
                   case .forbidden = setup.additional {
                    d.error(l, "mediation fills `\(field)`, which the setup of `\(c.name)` does not declare")
                }
                c.mediation.append((field, path))
                mediationLocations[c.index, default: [:]][field] = v.location
            }
        }
        if let t = doc["description"] ?? doc["title"] { c.description = t.text }
    }

    mutating func buildFlow(_ c: Coordinator, _ doc: Doc, module: String) {
        guard doc.mapping != nil else {
            d.error(doc.location, "`flow` of `\(c.name)` must be a mapping with `start`, `steps` and optionally `result`")
            return
        }
        unknownKeys(doc, allowed: Builder.flowKeys, what: "the flow of `\(c.name)`")
        var steps: [Int] = []
        var stepsOK = true
        if let s = doc["steps"] {
            for (ref, l) in stringList(s, "`steps`") {
                if ref.utf8.contains(UInt8(ascii: ".")) && !ref.hasPrefix(module + ".") {
                    d.error(l, "flow step `\(ref)` is not a coordinator of module `\(module)`: a flow's steps must be declared in the flow's own module")
                    stepsOK = false
                    continue
                }
                guard let i = resolveCoordinator(ref, in: module, at: l, role: " (a step of flow `\(c.name)`)") else { stepsOK = false; continue }
                if i == c.index {
                    d.error(l, "flow `\(c.name)` cannot be a step of itself")
                    stepsOK = false
                    continue
                }
                if flowDeclared.contains(i) {
                    d.error(l, "flow step `\(coordinators[i].name)` is a flow; steps must be screens")
                }
                steps.append(i)
            }
        }
        var start: Int?
        if let s = doc["start"] {
            if let ref = s.text, !s.isNull {
                if ref.utf8.contains(UInt8(ascii: ".")) && !ref.hasPrefix(module + ".") {
                    d.error(s.location, "flow start `\(ref)` is not a coordinator of module `\(module)`: a flow's steps must be declared in the flow's own module")
                } else {
                    start = resolveCoordinator(ref, in: module, at: s.location, role: " (the start of flow `\(c.name)`)")
                }
            } else {
                d.error(s.location, "`start` must name the flow's first step")
            }
        } else {
            d.error(doc.location, "flow `\(c.name)` has no `start`; add `start:` naming its first step")
        }
        if let st = start {
            if doc["steps"] == nil { steps = [st] } else if stepsOK && !steps.contains(st) {
                d.error(doc["start"]!.location, "flow start `\(coordinators[st].name)` is not among the flow's steps; add it to `steps`")
            }
        }
        var result: Schema?
        if let r = doc["result"] { result = schema(r, what: "flow result") }
        var then: NavigationSpec?
        if let t = doc["then"] { then = navigationSpec(t, what: "the `then` of flow `\(c.name)`", module: module) }
        if let st = start {
            c.flow = Flow(start: st, steps: steps, result: result, then: then)
            for s in steps { coordinators[s].stepOf.append(c.index) }
        }
    }

    /// `Target` or `{to, by?, with?}`: a navigation the graph describes (a flow's `then`, a
    /// precondition's `redirect`); `with` values may be `"$result"` or `"$result.FIELD"`.
    mutating func navigationSpec(_ doc: Doc, what: String, module: String) -> NavigationSpec? {
        var toDoc = doc
        var by: Presentation?
        var with = JSONObject()
        if doc.mapping != nil {
            unknownKeys(doc, allowed: ["to", "by", "with"], what: what)
            guard let t = doc["to"] else {
                d.error(doc.location, "\(what) needs `to:`, the coordinator navigation goes to")
                return nil
            }
            toDoc = t
            if let b = doc["by"] { by = presentation(b) }
            if let w = doc["with"] {
                guard case .object(let o) = w.json else {
                    d.error(w.location, "`with` of \(what) must be a mapping of setup fields")
                    return nil
                }
                with = o
                for (_, _, v) in w.mapping ?? [] {
                    if let s = v.text, isResultReference(s) == false {
                        d.error(v.location, "`\(s)` is not a result reference; write \"$result\" (the whole result) or \"$result.FIELD\"")
                    }
                }
            }
        }
        guard let ref = toDoc.text, !toDoc.isNull else {
            d.error(toDoc.location, "\(what) must name a coordinator, as `OrderDetail` or {to: OrderDetail, with: {id: \"$result.id\"}}")
            return nil
        }
        guard let i = resolveCoordinator(ref, in: module, at: toDoc.location, role: " (\(what))") else { return nil }
        if let by, !coordinators[i].allows(by) {
            d.error(doc["by"]?.location ?? doc.location, "\(what) shows `\(coordinators[i].name)` by \(by.rawValue), which its `presentations` do not allow")
        }
        return NavigationSpec(to: i, by: by, with: with)
    }

    mutating func buildPrecondition(index: Int, module: String, name: String, _ doc: Doc, at loc: SourceLocation) -> Precondition? {
        guard doc.mapping != nil else {
            d.error(doc.location, "precondition `\(module).\(name)` must be a mapping with one of `check`, `command` or `provider`")
            return nil
        }
        unknownKeys(doc, allowed: Builder.preconditionKeys, what: "precondition `\(module).\(name)`")
        var timeout = defaultTaskTimeoutMs
        if let t = doc["timeout"] {
            if let ms = parseDuration(t.json) { timeout = ms } else {
                d.error(t.location, "`\(t.description)` is not a duration; write 500ms, 2s, 1m or a number of seconds")
            }
        }
        let kinds = ["check", "command", "provider"].filter { doc[$0] != nil }
        if kinds.count != 1 {
            d.error(loc, kinds.isEmpty
                    ? "precondition `\(module).\(name)` has no kind; give it one of `check: {fact: …, equals: …}`, `command: [argv…]` or `provider: true`"
                    : "precondition `\(module).\(name)` has several kinds (\(kinds.joined(separator: ", "))); give it exactly one")
            return nil
        }
        var kind: Precondition.Kind?
        switch kinds[0] {
        case "check":
            let c = doc["check"]!
            guard c.mapping != nil else {
                d.error(c.location, "`check` must be a mapping such as {fact: loggedIn, equals: true}")
                return nil
            }
            unknownKeys(c, allowed: Builder.checkKeys, what: "a check")
            guard let fact = c["fact"]?.text, !(c["fact"]!.isNull) else {
                d.error(c.location, "the check of `\(module).\(name)` is missing `fact`: the name of the session fact to test")
                return nil
            }
            let tests = ["equals", "notEquals", "exists"].filter { c[$0] != nil }
            guard tests.count == 1 else {
                d.error(c.location, tests.isEmpty
                        ? "the check of `\(module).\(name)` is missing its test: add one of `equals: VALUE`, `notEquals: VALUE` or `exists: true`"
                        : "the check of `\(module).\(name)` has several tests (\(tests.joined(separator: ", "))); keep one")
                return nil
            }
            switch tests[0] {
            case "equals": kind = .check(fact: fact, .equals(c["equals"]!.json))
            case "notEquals": kind = .check(fact: fact, .notEquals(c["notEquals"]!.json))
            default:
                guard let b = c["exists"]!.json.boolValue else {
                    d.error(c["exists"]!.location, "`exists` must be true or false")
                    return nil
                }
                kind = .check(fact: fact, .exists(b))
            }
        case "command":
            guard let (argv, t) = commandSpec(doc["command"]!, timeout: timeout, what: "the command of `\(module).\(name)`") else { return nil }
            kind = .command(argv: argv, timeoutMs: t)
        default:
            let p = doc["provider"]!
            if p.json == .bool(false) {
                d.error(p.location, "`provider: false` declares nothing; use `provider: true`")
                return nil
            }
            if p.mapping != nil {
                unknownKeys(p, allowed: ["timeout"], what: "a provider precondition")
                if let t = p["timeout"] {
                    if let ms = parseDuration(t.json) { timeout = ms } else {
                        d.error(t.location, "`\(t.description)` is not a duration; write 500ms, 2s, 1m or a number of seconds")
                    }
                }
            }
            kind = .provider(timeoutMs: timeout)
        }
        var recover: Precondition.Recover?
        var facts = JSONObject()
        if let r = doc["recover"] {
            recoverLocations[index] = r.location
            recover = buildRecover(r, module: module, precondition: "\(module).\(name)", timeout: timeout)
            if let f = r["facts"] { facts = recoverFacts(f, precondition: "\(module).\(name)", byFlow: r["flow"] != nil) }
        }
        var p = Precondition(index: index, name: module + "." + name, localName: name, module: module,
                             kind: kind!, recover: recover, location: loc)
        p.recoverFacts = facts
        if let r = doc["redirect"] { p.redirect = navigationSpec(r, what: "the `redirect` of precondition `\(module).\(name)`", module: module) }
        return p
    }

    mutating func commandSpec(_ doc: Doc, timeout: UInt64, what: String) -> ([String], UInt64)? {
        var t = timeout
        var argvDoc = doc
        if doc.mapping != nil {
            unknownKeys(doc, allowed: ["argv", "timeout"], what: what)
            if let tm = doc["timeout"] {
                if let ms = parseDuration(tm.json) { t = ms } else {
                    d.error(tm.location, "`\(tm.description)` is not a duration; write 500ms, 2s, 1m or a number of seconds")
                }
            }
            guard let a = doc["argv"] else {
                d.error(doc.location, "\(what) is missing `argv`: the program and its arguments, as a list")
                return nil
            }
            argvDoc = a
        }
        let argv: [String]
        if let seq = argvDoc.sequence {
            argv = seq.map { $0.text ?? $0.description }
        } else if let s = argvDoc.text, !argvDoc.isNull {
            argv = s.split(separator: " ").map(String.init)
        } else {
            argv = []
        }
        guard let first = argv.first, !first.isEmpty else {
            d.error(argvDoc.location, "\(what) is empty; give the program and its arguments as a list, such as [scripts/in-stock.sh, \"{with.id}\"]")
            return nil
        }
        return (argv, t)
    }

    /// `recover.facts`: fact name → JSON value, or `"$result…"` taken from the recovery flow's result.
    mutating func recoverFacts(_ doc: Doc, precondition: String, byFlow: Bool) -> JSONObject {
        guard byFlow else {
            d.error(doc.location, "`recover.facts` of `\(precondition)` goes with `recover.flow`: the facts a completed flow establishes (a command or provider sets facts itself)")
            return JSONObject()
        }
        guard case .object(let o) = doc.json, doc.mapping != nil else {
            d.error(doc.location, "`recover.facts` must be a mapping of fact name → value, such as {signedIn: true, user: \"$result.user\"}")
            return JSONObject()
        }
        for (k, loc, v) in doc.mapping ?? [] {
            if k.isEmpty { d.error(loc, "a fact name may not be empty") }
            if let s = v.text, isResultReference(s) == false {
                d.error(v.location, "`\(s)` is not a result reference; write \"$result\" (the whole result) or \"$result.FIELD\"")
            }
        }
        return o
    }

    mutating func buildRecover(_ doc: Doc, module: String, precondition: String, timeout: UInt64) -> Precondition.Recover? {
        guard doc.mapping != nil else {
            d.error(doc.location, "`recover` must be a mapping with one of `flow`, `command` or `provider`")
            return nil
        }
        unknownKeys(doc, allowed: Builder.recoverKeys, what: "`recover`")
        let kinds = ["flow", "command", "provider"].filter { doc[$0] != nil }
        guard kinds.count == 1 else {
            d.error(doc.location, kinds.isEmpty ? "`recover` of `\(precondition)` needs one of `flow: FLOW`, `command: [argv…]` or `provider: NAME`"
                                                : "`recover` of `\(precondition)` has several kinds (\(kinds.joined(separator: ", "))); give exactly one")
            return nil
        }
        var t = timeout
        if let tm = doc["timeout"] {
            if let ms = parseDuration(tm.json) { t = ms } else {
                d.error(tm.location, "`\(tm.description)` is not a duration; write 500ms, 2s, 1m or a number of seconds")
            }
        }
        switch kinds[0] {
        case "flow":
            let f = doc["flow"]!
            guard let ref = f.text, !f.isNull else {
                d.error(f.location, "`recover.flow` must name a flow coordinator")
                return nil
            }
            let q = qualify(ref, in: module)
            guard let i = coordinatorIndex[q] else {
                let flows = coordinators.filter { $0.flow != nil }.map(\.name)
                let hint = suggestion(for: q, among: flows).map { "; did you mean `\($0)`?" }
                    ?? (flows.isEmpty ? "; no flow is declared" : "; the flows are \(flows.joined(separator: ", "))")
                d.error(f.location, "`\(precondition)` recovers with flow `\(q)`, which does not exist\(hint)")
                return nil
            }
            guard coordinators[i].flow != nil else {
                d.error(f.location, "`\(precondition)` recovers with `\(q)`, which is a screen, not a flow; recovery presents a flow and waits for its result")
                return nil
            }
            return .flow(i)
        case "command":
            guard let (argv, tt) = commandSpec(doc["command"]!, timeout: t, what: "the recovery command of `\(precondition)`") else { return nil }
            return .command(argv: argv, timeoutMs: tt)
        default:
            let p = doc["provider"]!
            guard let name = p.text, !p.isNull else {
                d.error(p.location, "`recover.provider` must be the name clients `provide` for this recovery")
                return nil
            }
            return .provider(name, timeoutMs: t)
        }
    }

    mutating func buildRoute(_ name: String, _ doc: Doc, module: String, at loc: SourceLocation) -> Route? {
        var toDoc: Doc?
        var by: Presentation?
        var with: JSONObject?
        if doc.text != nil, !doc.isNull {
            toDoc = doc
        } else if doc.mapping != nil {
            unknownKeys(doc, allowed: Builder.routeKeys, what: "route `\(module).\(name)`")
            toDoc = doc["to"]
            if let b = doc["by"] { by = presentation(b) }
            if let w = doc["with"] {
                if case .object(let o) = w.json { with = o } else { d.error(w.location, "`with` of a route must be a mapping of setup fields") }
                for (field, _, v) in w.mapping ?? [] { constantLocations[loc, default: [:]][field] = v.location }
            }
        } else {
            d.error(doc.location, "route `\(module).\(name)` must be a mapping such as {to: Product, by: push}")
            return nil
        }
        guard let td = toDoc, let ref = td.text, !td.isNull else {
            d.error(loc, "route `\(module).\(name)` leads nowhere: add `to:` naming a coordinator")
            return nil
        }
        guard let i = resolveCoordinator(ref, in: module, at: td.location, role: " (target of route `\(module).\(name)`)") else { return nil }
        if let by, !coordinators[i].allows(by) {
            d.error(doc["by"]!.location, "route `\(module).\(name)` shows `\(coordinators[i].name)` by \(by.rawValue), which its `presentations` do not allow")
        }
        return Route(name: module + "." + name, localName: name, to: i, by: by, with: with, location: loc)
    }

    mutating func buildLink(_ pattern: String, _ doc: Doc, module: String, at loc: SourceLocation) -> Link? {
        guard pattern.hasPrefix("/") else {
            d.error(loc, "link pattern `\(pattern)` must be a URL path starting with `/`, such as \"/product/:id\"")
            return nil
        }
        let (pathPart, queryPart) = splitQuery(pattern)
        var segments: [Link.Segment] = []
        var declared: [String] = []
        for seg in pathPart.split(separator: "/", omittingEmptySubsequences: true) {
            if case .wildcard(let w) = segments.last {
                d.error(loc, "link `\(pattern)`: `*\(w)` takes the rest of the path, so it must be the last segment")
                return nil
            }
            if seg.hasPrefix(":") || seg.hasPrefix("*") {
                let optional = seg.hasPrefix(":") && seg.hasSuffix("?")
                let p = String(seg.dropFirst().dropLast(optional ? 1 : 0))
                if p.isEmpty || p.contains(where: { ":*?".contains($0) }) {
                    d.error(loc, "link `\(pattern)`: `\(seg)` is not a parameter; write `:name`, `:name?` (optional) or `*name` (the rest of the path)")
                    return nil
                }
                if declared.contains(p) { d.error(loc, "link `\(pattern)` declares `:\(p)` twice"); return nil }
                declared.append(p)
                if seg.hasPrefix("*") {
                    if segments.contains(where: { if case .optional = $0 { return true } else { return false } }) {
                        d.error(loc, "link `\(pattern)`: `*\(p)` after an optional segment would make matches ambiguous")
                        return nil
                    }
                    segments.append(.wildcard(p))
                } else if optional {
                    segments.append(.optional(p))
                } else {
                    if case .optional(let o) = segments.last {
                        d.error(loc, "link `\(pattern)`: the optional `:\(o)?` must come after every required segment")
                        return nil
                    }
                    segments.append(.parameter(p))
                }
            } else {
                if case .optional(let o) = segments.last {
                    d.error(loc, "link `\(pattern)`: the optional `:\(o)?` must come after every required segment")
                    return nil
                }
                segments.append(.literal(String(seg)))
            }
        }
        var query: [(String, String)] = []
        if let q = queryPart {
            for item in q.split(separator: "&") {
                let kv = item.split(separator: "=", maxSplits: 1)
                guard kv.count == 2, kv[1].hasPrefix(":"), kv[1].count > 1 else {
                    d.error(loc, "link `\(pattern)`: query part `\(item)` must read `key=:param`")
                    return nil
                }
                let p = String(kv[1].dropFirst())
                if declared.contains(p) { d.error(loc, "link `\(pattern)` declares `:\(p)` twice"); return nil }
                declared.append(p)
                query.append((String(kv[0]), p))
            }
        }
        guard let seq = doc.sequence, !seq.isEmpty else {
            d.error(doc.location, "link `\(pattern)` leads nowhere: map it to the stack it opens, such as [shop.Home, {to: shop.Product, with: {id: \":id\"}}]")
            return nil
        }
        var entries: [Link.Entry] = []
        var used: Set<String> = []
        var ok = true
        for item in seq {
            var ref: (String, SourceLocation)?
            var with = JSONObject()
            var by: Presentation?
            if let t = item.text, !item.isNull {
                ref = (t, item.location)
            } else if item.mapping != nil {
                unknownKeys(item, allowed: Builder.linkEntryKeys, what: "a link entry")
                if let t = item["to"], let s = t.text { ref = (s, t.location) }
                if let b = item["by"] { by = presentation(b) }
                if let w = item["with"] {
                    if case .object(let o) = w.json { with = o } else {
                        d.error(w.location, "`with` of a link entry must be a mapping of setup fields")
                        ok = false
                    }
                    for (field, _, v) in w.mapping ?? [] {
                        constantLocations[item.location, default: [:]][field] = v.location
                        guard let s = v.text, s.hasPrefix(":") else { continue }
                        let p = String(s.dropFirst())
                        if declared.contains(p) { used.insert(p) } else {
                            d.error(v.location, "link `\(pattern)` fills `\(field)` with `:\(p)`, which the pattern does not declare; declare it in the path (/…/:\(p)) or the query (?\(p)=:\(p))")
                            ok = false
                        }
                    }
                }
            }
            guard let (name, l) = ref else {
                d.error(item.location, "link entry must name a coordinator, as `shop.Home` or {to: shop.Product, with: {…}}")
                ok = false
                continue
            }
            guard let i = resolveCoordinator(name, in: module, at: l, role: " (in link `\(pattern)`)") else { ok = false; continue }
            entries.append(Link.Entry(coordinator: i, with: with, by: by))
            linkEntryLocations[loc, default: []].append((item.location, l))
        }
        for p in declared where !used.contains(p) {
            d.error(loc, "link `\(pattern)` declares `:\(p)` but no entry uses it; fill a setup field with \":\(p)\" or remove it from the pattern")
            ok = false
        }
        return ok ? Link(pattern: pattern, segments: segments, query: query, entries: entries, module: module, location: loc) : nil
    }

    mutating func buildRoot(_ doc: Doc, module: String) -> Root? {
        guard doc.mapping != nil else {
            d.error(doc.location, "`root` must be {stack: Home} or {tabs: [Home, cart.Cart]}")
            return nil
        }
        unknownKeys(doc, allowed: ["stack", "tabs"], what: "`root`")
        if let s = doc["stack"], doc["tabs"] == nil {
            guard let ref = s.text, !s.isNull else {
                d.error(s.location, "`root.stack` must name the coordinator at the bottom of the root stack")
                return nil
            }
            return resolveCoordinator(ref, in: module, at: s.location, role: " (the root)").map(Root.stack)
        }
        if let t = doc["tabs"], doc["stack"] == nil {
            let refs = stringList(t, "`root.tabs`")
            if refs.isEmpty {
                d.error(t.location, "`root.tabs` needs at least one tab")
                return nil
            }
            var tabs: [Int] = []
            for (ref, l) in refs {
                guard let i = resolveCoordinator(ref, in: module, at: l, role: " (a tab of the root)") else { continue }
                if tabs.contains(i) { d.error(l, "`\(coordinators[i].name)` is the first screen of two tabs; `select` could not tell them apart") }
                tabs.append(i)
            }
            return tabs.count == refs.count ? .tabs(tabs) : nil
        }
        d.error(doc.location, "`root` must have exactly one of `stack` or `tabs`")
        return nil
    }

    // MARK: cross checks

    /// A constant a route or link gives a setup field must be one the field's schema accepts (or no
    /// navigation by it could ever pass), and a field the setup forbids cannot be given at all.
    /// Values written `":param"` come from the URL and are checked when it is opened.
    mutating func checkConstants(routes: [Route], links: [Link]) {
        func problem(_ target: Coordinator, _ field: String, _ value: JSONValue) -> String? {
            guard let setup = target.setup else { return nil }
            if let property = setup.properties.first(where: { $0.name == field })?.schema {
                return property.validate(value).map { "\($0.message)" }
            }
            switch setup.additional {
            case .allowed: return nil
            case .forbidden:
                let declared = setup.properties.map(\.name)
                return "the setup of `\(target.name)` declares no field `\(field)` and allows no others (it declares \(declared.isEmpty ? "none" : declared.joined(separator: ", ")))"
            case .schema(let extra): return extra.validate(value).map { "\($0.message)" }
            }
        }
        for r in routes {
            let target = coordinators[r.to]
            for (field, v) in r.with ?? [:] {
                if let why = problem(target, field, v) {
                    d.error(constantLocations[r.location]?[field] ?? r.location, "route `\(r.name)` gives `\(target.name)` the constant \(field): \(JSONWriter.string(v)), which its setup never accepts: \(why)")
                }
            }
        }
        for l in links {
            for (n, e) in l.entries.enumerated() {
                let target = coordinators[e.coordinator]
                let entryLocation = linkEntryLocations[l.location]?[n].entry
                for (field, v) in e.with {
                    var value = v
                    if case .string(let text) = v {
                        if text.hasPrefix(":") { continue }
                        value = target.setup?.coerce(text, forProperty: field) ?? v  // as `open` reads it
                    }
                    if let why = problem(target, field, value) {
                        d.error(entryLocation.flatMap { constantLocations[$0]?[field] } ?? l.location, "link `\(l.pattern)` gives `\(target.name)` the constant \(field): \(JSONWriter.string(v)), which its setup never accepts: \(why)")
                    }
                }
            }
        }
    }

    /// Each screen of a link after the first must be one the screen below it may open: the screen
    /// itself, or for a flow its first step (which a link builds with it), by its `opens` or as the
    /// next step of its flow.
    mutating func checkLinkOpens(_ links: [Link]) {
        for l in links {
            for (n, (below, above)) in zip(l.entries, l.entries.dropFirst()).enumerated() {
                if coordinators.stackStepAllowed(from: below.coordinator, to: above.coordinator) { continue }
                let source = coordinators[below.coordinator]
                let opener = source.flow.map { coordinators[$0.start] } ?? source
                if incompleteOpens.contains(opener.index) { continue }
                let opens = opener.opens.map { coordinators[$0].name }
                d.error(linkEntryLocations[l.location]?[n + 1].name ?? l.location, "link `\(l.pattern)` puts `\(coordinators[above.coordinator].name)` above `\(source.name)`, which cannot open it: the opens of `\(opener.name)` are \(opens.isEmpty ? "empty" : opens.joined(separator: ", "))")
            }
        }
    }


    /// A mediation reads `$source.FIELD`: every coordinator that may open the target must declare FIELD.
    mutating func checkMediation() {
        for target in coordinators where !target.mediation.isEmpty {
            let sources = coordinators.filter { $0.opensSet.contains(target.index) }
            for (field, path) in target.mediation {
                let at = mediationLocations[target.index]?[field] ?? target.location
                for s in sources {
                    guard let setup = s.setup else {
                        d.error(at, "`\(target.name)` fills `\(field)` from `$source.\(path.joined(separator: "."))`, but its source `\(s.name)` has no setup model to read it from; declare `\(path[0])` in the setup of `\(s.name)`")
                        continue
                    }
                    if !setup.declares(path[0]) {
                        let hint = suggestion(for: path[0], among: setup.properties.map(\.name)).map { "; did you mean `$source.\($0)`?" } ?? ""
                        d.error(at, "`\(target.name)` fills `\(field)` from `$source.\(path.joined(separator: "."))`, but the setup of its source `\(s.name)` does not declare `\(path[0])`\(hint)")
                    }
                }
            }
        }
    }

    /// A flow F depends on flow G when a precondition guarding F (or one of F's steps) recovers with G.
    /// A cycle means recovering would present the same flow forever.
    mutating func checkRecoveryCycles(_ preconditions: [Precondition]) {
        var edges: [Int: [(to: Int, precondition: Int)]] = [:]
        for c in coordinators where c.flow != nil {
            let guarded = [c.index] + (c.flow?.steps ?? [])
            for g in guarded {
                for p in coordinators[g].preconditions where p < preconditions.count {
                    if case .flow(let f)? = preconditions[p].recover { edges[c.index, default: []].append((f, p)) }
                }
            }
        }
        var reported: Set<Int> = []
        for start in edges.keys.sorted() {
            // DFS for a path from `start` back to itself.
            var stack: [(node: Int, path: [(Int, Int)])] = [(start, [])]
            var seen: Set<Int> = []
            while let (node, path) = stack.popLast() {
                for e in edges[node] ?? [] {
                    let newPath = path + [(e.to, e.precondition)]
                    if e.to == start {
                        let p = newPath.last!.1
                        if !reported.contains(p) {
                            reported.insert(p)
                            let chain = ([start] + newPath.map(\.0)).map { coordinators[$0].name }.joined(separator: " → ")
                            d.error(recoverLocations[p] ?? preconditions[p].location,
                                    "recovery cycle: precondition `\(preconditions[p].name)` recovers with flow `\(coordinators[e.to].name)`, which that precondition (directly or through other flows) guards (\(chain)); recover with a flow it does not guard")
                        }
                    } else if !seen.contains(e.to) {
                        seen.insert(e.to)
                        stack.append((e.to, newPath))
                    }
                }
            }
        }
    }

    mutating func warnUnreached(root: Root?, routes: [Route], links: [Link], preconditions: [Precondition]) {
        var reached = Set<Int>()
        switch root {
        case .stack(let i)?: reached.insert(i)
        case .tabs(let t)?: reached.formUnion(t)
        case nil: return
        }
        for c in coordinators {
            reached.formUnion(c.opens)
            reached.formUnion(c.tabs)
            if let f = c.flow {
                reached.formUnion(f.steps)
                if let t = f.then { reached.insert(t.to) }
            }
        }
        for r in routes { reached.insert(r.to) }
        for l in links { reached.formUnion(l.entries.map(\.coordinator)) }
        for p in preconditions {
            if case .flow(let f)? = p.recover { reached.insert(f) }
            if let r = p.redirect { reached.insert(r.to) }
        }
        for c in coordinators where !reached.contains(c.index) {
            d.warning(c.location, "coordinator `\(c.name)` cannot be reached: nothing opens it and no root, route or link leads to it")
        }
    }
}

/// A link pattern's path and query (`/search/:q?` has no query: a `?` that ends a `:name` segment
/// marks it optional; the query starts at the first other `?`).
func splitQuery(_ s: String) -> (path: Substring, query: Substring?) {
    var segmentStart = s.startIndex
    var i = s.startIndex
    while i < s.endIndex {
        let c = s[i]
        if c == "/" { segmentStart = s.index(after: i) }
        if c == "?" {
            let next = s.index(after: i)
            let endsSegment = next == s.endIndex || s[next] == "/" || s[next] == "?"
            if !(endsSegment && s[segmentStart] == ":" && i > s.index(after: segmentStart)) {
                return (s[..<i], s[next...])
            }
        }
        i = s.index(after: i)
    }
    return (Substring(s), nil)
}

extension GraphLoader {
    /// The example app compiled into navd (Examples/shop), used when navd starts without --graph.
    public static func loadEmbeddedExample(baseDirectory: String = "<embedded example>") -> (graph: NavigationGraph?, diagnostics: Diagnostics) {
        load(sources: EmbeddedExample.files.map { GraphSource(file: $0.name, text: $0.text) }, baseDirectory: baseDirectory)
    }
}
