import Foundation
import JSON
import RPC

/// Preconditions: checks, commands, providers, their recovery and redirects.
extension Builder {
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
            guard !fact.isEmpty else {
                d.error(c["fact"]!.location, "the check of `\(module).\(name)` names the fact \"\": no session has one (context.set refuses an empty name); name the fact to test, such as loggedIn")
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
            if let f = r["facts"] {
                facts = recoverFacts(f, precondition: "\(module).\(name)", byFlow: r["flow"] != nil)
                if case .flow(let flow)? = recover { noteResultReferences(f, of: flow, "`recover.facts` of precondition `\(module).\(name)`") }
            }
        }
        var p = Precondition(index: index, name: module + "." + name, localName: name, module: module,
                             kind: kind!, recover: recover, location: loc)
        p.recoverFacts = facts
        if let r = doc["redirect"] { p.redirect = navigationSpec(r, what: "the `redirect` of precondition `\(module).\(name)`", module: module, redirect: true) }
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
        if let script = Self.codeArgument(argv), argv[script].contains("{with.") {
            let at = argvDoc.sequence.map { $0[script].location } ?? argvDoc.location
            let program = argv[0].split(separator: "/").last.map(String.init) ?? argv[0]
            d.warning(at, "\(what) fills `{with.…}` into the code `\(program) \(argv[script - 1])` runs, so a value such as $(…) would run as code; "
                + "pass it as an argument after the code and read it there, as [sh, -c, 'echo \"$1\"', sh, \"{with.id}\"]")
        }
        return (argv, t)
    }

    /// The index of the argument an interpreter runs as code (`sh -c CODE`, `bash -ec CODE`,
    /// `python3 -c CODE`, `perl -e CODE`), or nil. navd never uses a shell, but a graph may.
    static func codeArgument(_ argv: [String]) -> Int? {
        let program = argv[0].split(separator: "/").last.map(String.init) ?? argv[0]
        let flag: Character
        switch program {
        case "sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish": flag = "c"
        case _ where program.hasPrefix("python"): flag = "c"
        case "perl", "ruby", "node", "nodejs": flag = "e"
        default: return nil
        }
        for i in argv.indices.dropFirst() where i + 1 < argv.count {
            let a = argv[i]
            if a.hasPrefix("-"), !a.hasPrefix("--"), a.contains(flag) { return i + 1 }
        }
        return nil
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
                if flowNames == nil { flowNames = coordinators.filter { $0.flow != nil }.map(\.name) }
                let flows = flowNames ?? []
                let said = hint(for: q, among: flows).map { "; did you mean `\($0)`?" }
                    ?? (flows.isEmpty ? "; no flow is declared" : "; the flows are \(briefList(flows, none: ""))")
                d.error(f.location, "`\(precondition)` recovers with flow `\(q)`, which does not exist\(said)")
                return nil
            }
            guard coordinators[i].flow != nil else {
                // A flow whose declaration has errors was reported there.
                if flowDeclared.contains(i) { return nil }
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
            // A name that is a precondition's (this module's when unqualified) means that precondition,
            // as `provide` reads it: a client providing `unlock` is asked to recover with `unlock`.
            let q = qualify(name, in: module)
            return .provider(preconditionIndex[q] != nil ? q : name, timeoutMs: t)
        }
    }
}
