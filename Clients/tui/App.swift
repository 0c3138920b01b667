import JSON
import NavClient
import UV

/// Something the user can do from the visible screen, on one key.
struct Action {
    let key: Character
    let label: String
    let detail: String
    let run: () -> Void
}

/// nav-tui's state: the graph, a mirror of the session's tree, the actions of the visible screen,
/// the notification log, the status line, a pending navigation and an open form.
final class App {
    let client: NavLoopClient
    let terminal: Terminal
    let session: String
    var graph: JSONValue = .null
    var mirror: TreeMirror?
    var log: [Line] = []
    var status = Line("connecting…", .dim)
    var form: Form?
    /// The navigation (or dismiss) waiting on preconditions: id, target (for a dismiss, the
    /// coordinator of the screen its leave guard protects), what the pending line calls it, what it
    /// waits for, and whether it is a dismiss.
    var pending: (navigation: String, to: String, what: String, waitingFor: String, dismiss: Bool)?
    /// Keys given to actions, in order; q d c x t r R u U p K e E are fixed (quit, dismiss, complete,
    /// cancel, pop to the top of the stack, reset (R: without leave guards), update the visible screen's params (U: keeping
    /// the earlier ones for dismiss to restore), pop first,
    /// go back to an existing screen, dismiss with a result, dismiss merging it below).
    static let actionKeys = Array("123456789abfghijklmnosvwyz")
    /// The URL of the visible path (`link.resolve`), when a link of the graph builds it.
    var url: String?
    /// `p` was pressed: the next action navigates after popping to the first screen of the visible
    /// stack (`popUpTo`), in one commit.
    var popFirst = false
    /// `K` was pressed: the next action goes back to a screen of its target already in the stack
    /// (`existing: pop`), giving it the params, and pushes only when there is none.
    var keepExisting = false
    /// A form's submit decided there was nothing to send: the form closes once its key is handled.
    var formSentNothing = false
    /// The page of the action list shown (`>` and `<`), from 0; back to 0 when the visible screen changes.
    var actionPage = 0
    private var actionsOf: String?
    var actions: [Action] = []
    var onQuit: () -> Void = {}
    /// Targets of this UI's navigations still waiting for their reply (to recognise its pending ones).
    var inFlight: [String: Int] = [:]
    /// This UI's dismisses still waiting for their reply: a `navigationPending` naming the screen a
    /// leave guard protects (`leaving`) is one of them when no navigation of its target is in flight.
    var dismissesInFlight = 0
    /// The target of the navigation the open form sent, until it is answered: when it waits for a
    /// precondition, its input was accepted and the form closes (a recovery flow may need the keys).
    var formAwaits: String?

    init(client: NavLoopClient, terminal: Terminal, session: String, create: Bool = false) {
        self.client = client
        self.terminal = terminal
        self.session = session
        self.create = create
    }

    /// `--create`: open the session when it is not.
    let create: Bool
    /// Why nav-tui stopped on its own (printed after the terminal is restored; exit status 1).
    var exitMessage: String?

    // MARK: - Connection

    /// Retries the connection once a second while navd is away (a restart keeps sessions when navd
    /// has durable state, and the UI picks them up again).
    var retry: UV.Timer?

    func start() {
        client.onNotification = { [unowned self] method, params in self.notified(method, params) }
        client.onClose = { [unowned self] e in
            self.mirror = nil
            self.pending = nil
            self.inFlight = [:]
            self.dismissesInFlight = 0
            // navd's own reason when it gave one (client.kill, a limit of the connection).
            let why = e.kind == "connection" ? "navd closed the connection" : "navd closed the connection: \(e.message)"
            self.addLog("\(why); reconnecting every second", .error)
            self.setStatus("\(why) — reconnecting… (q quits)", .error)
            self.scheduleRetry()
        }
        connect()
    }

    func scheduleRetry() {
        guard let retry else { return }
        retry.start(milliseconds: 1000) { [unowned self] in self.connect() }
    }

    func connect() {
        client.connect { [unowned self] error in
            if let error {
                self.setStatus(error.message + " — retrying…", .error)
                self.scheduleRetry()
                return
            }
            self.client.call(.hello(client: "nav-tui")) { _ in }
            self.loadGraph()
            guard self.create else { return self.resubscribe() }
            self.client.call(.openSession(self.session)) { [unowned self] r in
                if case .failure(let e) = r { self.fail(e) }
                self.resubscribe()
            }
        }
    }

    func loadGraph() {
        client.call(.describeGraph()) { [unowned self] r in
            switch r {
            case .success(let g): self.graph = g; self.refresh()
            case .failure(let e): self.fail(e)
            }
        }
    }

    /// (Re)subscribes and takes a fresh snapshot; used at start and when the mirror sees a gap.
    func resubscribe() {
        client.call(.subscribe(session: session, compact: true)) { [unowned self] r in
            switch r {
            case .success(let snapshot):
                self.mirror = TreeMirror(snapshot: snapshot)
                self.resolveURL()
                self.setStatus("connected to \(self.client.socketPath), session \(self.session)", .ok)
            case .failure(let e) where e.kind == "unknownTarget" && e.data["session"] != nil && self.mirror == nil:
                // As navctl: a session that is not open is an error, not made on the way.
                self.exitMessage = "no session \"\(self.session)\" is open: open it with `navctl session open \(self.session)`, "
                    + "or start nav-tui --session \(self.session) --create"
                self.onQuit()
            case .failure(let e): self.fail(e)
            }
        }
    }

    func notified(_ method: String, _ p: JSONValue) {
        var p = p
        if method == "stackChanged", case .array = p {
            // The compact form (the subscription asks for it): read as the full one.
            guard let mirror, mirror.concerns(p), let full = try? TreeMirror.full(p, session: mirror.session) else { return }
            p = full
        }
        let s = p["session"]?.stringValue
        switch method {
        case "stackChanged" where s == session:
            for c in p["changes"]?.arrayValue ?? [] { addLog("v\(p["version"]?.intValue ?? 0) " + describe(change: c)) }
            if let h = p["hints"] { addLog("  hints " + JSONWriter.string(h)) }
            do { try mirror?.apply(p) } catch {
                addLog("out of step (\(error)); taking a new snapshot")
                resubscribe()
            }
            resolveURL()
        case "screenResult" where s == session:
            addLog("screenResult for \(p["to"]?.stringValue ?? "?") from \(p["node"]?.stringValue ?? "?") " + JSONWriter.string(p["result"] ?? .null))
        case "navigationPending" where s == session:
            var waiting = p["waitingFor"]?.stringValue ?? JSONWriter.string(p["waitingFor"] ?? .null)
            let to = p["to"]?.stringValue ?? "?"
            let leaving = p["leaving"]?.stringValue
            if let leaving {
                // A leave guard: the screen it protects (a dismiss's, or what a navigation pops).
                let name = mirror?.node(leaving)?["coordinator"]?.stringValue ?? to
                waiting += ", the leave guard of \(name) [\(leaving)]"
            }
            if let flow = p["flow"], let node = flow["node"]?.stringValue {
                waiting += " (recovery flow \(flow["coordinator"]?.stringValue ?? "?") [\(node)]: finish it, c completes it)"
            } else if let r = p["recovering"] {
                waiting += r["provider"].map { " (recovering: provider \($0.stringValue ?? "?") asked)" } ?? " (recovering: \(r["command"]?.stringValue ?? "a command") runs)"
            } else if p["afterRecovery"] == true {
                waiting += " (asked again after its recovery)"
            }
            if let q = p["queued"] {
                let behind = q["behind"]?.intValue ?? 0, all = q["waiting"]?.intValue ?? 0
                waiting += " (queued for a \(q["for"]?.stringValue ?? "task") slot: \(behind) of this uid's before it, \(all) waiting in all)"
            }
            // Only this UI's own navigations and dismisses get the pending line and `x`; others' are logged.
            let isDismiss = leaving != nil && inFlight[to] == nil && dismissesInFlight > 0
            if inFlight[to] != nil || isDismiss {
                pending = (p["navigation"]?.stringValue ?? "", to, isDismiss ? "dismiss of \(to)" : to, waiting, isDismiss)
            }
            if form != nil, formAwaits == to, inFlight[to] != nil {
                form = nil
                formAwaits = nil
            }
            addLog("pending \(isDismiss ? "dismiss of " : "")\(to) waits for \(waiting)")
        case "navigationEnded" where s == session:
            // (This UI's own navigations are answered too; the log says how each one it saw waiting ended.)
            let what = p["status"]?.stringValue ?? "?"
            let detail = what == "committed" ? " at version \(p["version"]?.intValue ?? 0)" : (p["error"]?["message"]?.stringValue).map { ": \($0)" } ?? ""
            addLog("ended \(p["navigation"]?.stringValue ?? "?"): \(what)\(detail)")
        case "flowCompleted" where s == session:
            var text = "flowCompleted \(p["coordinator"]?.stringValue ?? "?") [\(p["flow"]?.stringValue ?? "?")] \(p["status"]?.stringValue ?? "")"
            if let r = p["result"] { text += " " + JSONWriter.string(r) }
            if let e = p["error"]?["message"]?.stringValue { text += " " + e }
            addLog(text)
        case "sessionClosed" where s == session:
            mirror?.take(method, p)
            pending = nil
            addLog("sessionClosed at version \(p["version"]?.intValue ?? 0)", .error)
            setStatus("session \"\(session)\" was closed: the tree shown is its last; q quits", .error)
        case "graphReloaded":
            addLog("graphReloaded version \(p["version"]?.intValue ?? 0)")
            loadGraph()
            resubscribe()
        case "graphReloadRefused":
            let count = p["count"]?.intValue ?? 0
            for e in p["errors"]?.arrayValue ?? [] { addLog("graph not reloaded: \(e.stringValue ?? "")", .error) }
            if count > (p["errors"]?.arrayValue?.count ?? 0) { addLog("graph not reloaded: \(count) errors in all (navd check lists them)", .error) }
            if let hint = p["hint"]?.stringValue { addLog(hint, .error) }
        default:
            break
        }
        refresh()
    }

    /// Asks navd for the URL of the visible path (shown beside the actions).
    func resolveURL() {
        client.call(.resolveLink(session: session)) { [unowned self] r in
            if case .success(let v) = r { self.url = v["url"]?.stringValue } else { self.url = nil }
            self.refresh()
        }
    }

    func describe(change c: JSONValue) -> String {
        let op = c["op"]?.stringValue ?? "?"
        var text = op
        if let n = c["node"] { text += " " + label(n) }
        if let parent = c["parent"]?.stringValue { text += " in \(parent)" }
        if let i = c["index"]?.intValue, op == "select" { text += " tab \(i)" }
        if let removed = c["removed"]?.arrayValue, !removed.isEmpty {
            text += " removed " + removed.compactMap(\.stringValue).joined(separator: " ")
        }
        return text
    }

    func label(_ n: JSONValue) -> String {
        let id = n["id"]?.stringValue ?? "?"
        switch n["kind"]?.stringValue {
        case "screen", "flow": return "\(n["coordinator"]?.stringValue ?? "?") [\(id)]"
        case let k?: return "\(k) [\(id)]"
        default: return "[\(id)]"
        }
    }

    func addLog(_ text: String, _ style: Style = .plain) {
        log.append(Line(text, style))
        if log.count > 200 { log.removeFirst(log.count - 200) }
    }

    func setStatus(_ text: String, _ style: Style = .plain) {
        status = Line(text, style)
        refresh()
    }

    func fail(_ e: NavClientError, _ what: String? = nil) {
        let text = (what.map { "\($0): " } ?? "") + "\(e.kind) (\(e.code)): \(e.message)"
        addLog("✗ " + text, .error)
        setStatus(text, .error)
    }

    // MARK: - Actions

    var coordinators: JSONObject { graph["coordinators"]?.objectValue ?? [:] }

    /// Recomputes the actions of the visible screen: what it opens, applicable routes, tabs to select.
    func computeActions() {
        var list: [(String, String, () -> Void)] = []
        guard let mirror, !mirror.closed, let top = mirror.top, let topName = top["coordinator"]?.stringValue else {
            actions = []
            return
        }
        let opens = coordinators[topName]?["opens"]?.arrayValue?.compactMap(\.stringValue) ?? []
        for target in opens {
            let style = defaultStyle(target)
            list.append(("\(style.rawValue) \(target)", needsForm(target) ? "form" : "", { [unowned self] in
                self.go(target: target, route: nil, style: style, prefill: [:])
            }))
        }
        if opens.isEmpty, let next = nextStep(after: topName, in: mirror) {
            // A step that declares no opens goes on to the next step of its flow (the flow's path).
            list.append(("push \(next)", needsForm(next) ? "next step, form" : "next step", { [unowned self] in
                self.go(target: next, route: nil, style: .push, prefill: [:])
            }))
        }
        for (name, r) in graph["routes"]?.objectValue ?? [:] {
            guard let to = r["to"]?.stringValue else { continue }
            let by = r["by"]?.stringValue.flatMap(NavCall.Style.init(rawValue:)) ?? defaultStyle(to)
            guard by == .select || by == .root || opens.contains(to) else { continue }
            if by == .select, selectedTabRoot(of: mirror) == to { continue }
            let prefill = r["with"]?.objectValue ?? [:]
            // The target's module is the route's most of the time: its local name is enough beside it.
            let shown = to.hasPrefix((name.split(separator: ".").first.map(String.init) ?? "") + ".") ? String(to.split(separator: ".").last ?? "") : to
            list.append(("route \(name)", "\(by.rawValue) \(shown)", { [unowned self] in
                self.go(target: to, route: name, style: nil, prefill: prefill)
            }))
        }
        // The tabs of the innermost tab container on the visible path (a tab bar inside a modal).
        if let shell = mirror.visible.reversed().lazy.compactMap(mirror.node).first(where: { $0["kind"]?.stringValue == "tabs" && $0["coordinator"] != nil }),
           let name = shell["coordinator"]?.stringValue {
            let tabs = coordinators[name]?["tabs"]?.arrayValue?.compactMap(\.stringValue) ?? []
            for (i, tab) in tabs.enumerated() where i != shell["selected"]?.intValue {
                list.append(("select \(tab)", "in \(name)", { [unowned self] in
                    self.send(.navigate(to: tab, by: .select, session: self.session), what: "select \(tab)")
                }))
            }
        }
        for (i, tab) in tabRoots(of: mirror).enumerated() where i != tabsSelected(of: mirror) {
            list.append(("select \(tab)", "tab \(i + 1)", { [unowned self] in
                self.send(.navigate(to: tab, by: .select, session: self.session), what: "select \(tab)")
            }))
        }
        actions = zip(App.actionKeys, list).map { Action(key: $0, label: $1.0, detail: $1.1, run: $1.2) }
        if let id = top["id"]?.stringValue, id != actionsOf {
            actionsOf = id
            actionPage = 0
        }
    }

    /// The step after `step` in the flow that shows it on the visible path (its parent there), or nil
    /// when it is not a step of that flow or is its last.
    func nextStep(after step: String, in mirror: TreeMirror) -> String? {
        let path = mirror.visible
        guard path.count >= 2, let flow = mirror.node(path[path.count - 2]), flow["kind"]?.stringValue == "flow",
              let name = flow["coordinator"]?.stringValue,
              let steps = coordinators[name]?["flow"]?["steps"]?.arrayValue?.compactMap(\.stringValue),
              let at = steps.firstIndex(of: step), at + 1 < steps.count else { return nil }
        return steps[at + 1]
    }

    /// Shows the next (`+1`) or previous page of the action list.
    func turnActionPage(_ by: Int) {
        actionPage = max(0, min(actionPage + by, lastActionPage))
        refresh()
    }

    /// Set by the screen as it lays out the actions: the last page there is at this size.
    var lastActionPage = 0

    func defaultStyle(_ target: String) -> NavCall.Style {
        let styles = coordinators[target]?["presentations"]?.arrayValue?.compactMap { $0.stringValue.flatMap(NavCall.Style.init(rawValue:)) } ?? []
        // As navd shows a target when a navigation names no style: push, else the first allowed of these.
        for s in [NavCall.Style.push, .present, .replace, .root, .select] where styles.contains(s) { return s }
        return .push
    }

    func needsForm(_ target: String) -> Bool {
        !(coordinators[target]?["setup"]?["properties"]?.objectValue?.isEmpty ?? true)
    }

    /// The first screens of the tabs of the root, when the root is a tabs node.
    func tabRoots(of m: TreeMirror) -> [String] {
        guard m.root["kind"]?.stringValue == "tabs" else { return [] }
        return (m.root["children"]?.arrayValue ?? []).compactMap { $0["children"]?.arrayValue?.first?["coordinator"]?.stringValue }
    }

    func tabsSelected(of m: TreeMirror) -> Int { m.root["selected"]?.intValue ?? 0 }

    func selectedTabRoot(of m: TreeMirror) -> String? {
        let roots = tabRoots(of: m)
        let i = tabsSelected(of: m)
        return i < roots.count ? roots[i] : nil
    }

    /// Navigates to `target` (or by `route`), through a form when the target has a setup model.
    func go(target: String, route: String?, style: NavCall.Style?, prefill: JSONObject) {
        // `p` first: pop to the first screen of the visible stack, then navigate (one commit).
        let popTo = popFirst ? mirror?.visibleStackFirst?["id"]?.stringValue : nil
        let existing: NavCall.Existing? = keepExisting ? .pop : nil
        popFirst = false
        keepExisting = false
        let what = (popTo.map { "pop to \($0), " } ?? "") + (existing != nil ? "back to or " : "")
            + (route.map { "route \($0)" } ?? "\(style?.rawValue ?? "push") \(target)")
        let call: (JSONObject?) -> NavCall = { [session] with in
            let w = with.map(JSONValue.object)
            if let route { return .navigate(route: route, with: w, session: session, existing: existing) }
            return .navigate(to: target, by: style, with: w, session: session, popUpTo: popTo, existing: existing)
        }
        guard needsForm(target) else {
            send(call(prefill.isEmpty ? nil : prefill), what: what)
            return
        }
        form = Form(title: what, schema: coordinators[target]?["setup"], prefill: prefill) { [unowned self] with in
            self.send(call(with), what: what, fromForm: true)
        }
        refresh()
    }

    /// Sends a committing call; errors go to the status line (or the open form).
    func send(_ call: NavCall, what: String, fromForm: Bool = false) {
        setStatus("\(what)…", .dim)
        let target = call.method == "navigate" ? call.params["to"]?.stringValue ?? call.params["route"].flatMap { graph["routes"]?[$0.stringValue ?? ""]?["to"]?.stringValue } : nil
        if let target { inFlight[target, default: 0] += 1 }
        if fromForm, let target { formAwaits = target }
        let isDismiss = call.method == "dismiss"
        if isDismiss { dismissesInFlight += 1 }
        client.call(call) { [unowned self] r in
            if isDismiss {
                self.dismissesInFlight = max(0, self.dismissesInFlight - 1)
                if self.pending?.dismiss == true { self.pending = nil }
            }
            if fromForm, let target, self.formAwaits == target { self.formAwaits = nil }
            if let target {
                self.inFlight[target, default: 1] -= 1
                if self.inFlight[target] == 0 { self.inFlight[target] = nil }
                if self.pending?.to == target { self.pending = nil }
            }
            switch r {
            case .success(let v):
                let c = Committed(v)
                if fromForm { self.form = nil }
                if self.pending?.navigation == c.navigation { self.pending = nil }
                var text = "\(what): version \(c.version)" + (c.node.map { ", node \($0)" } ?? "")
                // Where preconditions sent it instead, and where a completed flow went on to.
                if let hops = v["redirected"]?.arrayValue, let last = hops.last?["to"]?.stringValue {
                    text += ", redirected to \(last) by \(hops.compactMap { $0["precondition"]?.stringValue }.joined(separator: ", "))"
                }
                if let then = v["then"] {
                    text += then["error"].map { ", then failed: \($0["message"]?.stringValue ?? "")" } ?? ", then \(then["node"]?.stringValue ?? "?")"
                }
                self.setStatus(text, .ok)
            case .failure(let e):
                if let nav = self.pending, e.kind == "cancelled" || e.data["navigation"]?.stringValue == nav.navigation { self.pending = nil }
                if fromForm, self.form != nil, e.kind == "invalidSetup" || e.kind == "invalidParams" {
                    self.form?.reject(message: e.message, pointer: e.data["pointer"]?.stringValue)
                    self.refresh()
                } else {
                    self.pending = nil
                    self.fail(e, what)
                }
            }
        }
    }

    func completeFlow() {
        guard let flow = mirror?.visibleFlow, let id = flow["id"]?.stringValue, let name = flow["coordinator"]?.stringValue else {
            setStatus("no flow is visible: nothing to complete", .error)
            return
        }
        let schema = coordinators[name]?["flow"]?["result"]
        let f = Form(title: "complete \(name) [\(id)] with result", schema: schema) { [unowned self] result in
            self.send(.flowComplete(flow: id, .result(.object(result)), session: self.session), what: "complete \(name)", fromForm: true)
        }
        if f.isEmpty {
            send(.flowComplete(flow: id, .result(.object([:])), session: session), what: "complete \(name)")
        } else {
            form = f
            refresh()
        }
    }

    /// Cancels the pending navigation, else the visible flow.
    func cancel() {
        if let p = pending {
            client.call(.cancel(navigation: p.navigation)) { [unowned self] r in
                self.pending = nil
                if case .failure(let e) = r { self.fail(e) } else { self.setStatus("cancelled \(p.what)", .ok) }
            }
            return
        }
        guard let flow = mirror?.visibleFlow, let id = flow["id"]?.stringValue else {
            setStatus("nothing to cancel: no pending navigation and no visible flow", .error)
            return
        }
        send(.flowComplete(flow: id, .cancelled, session: session), what: "cancel \(flow["coordinator"]?.stringValue ?? id)")
    }

    /// Dismisses the visible screen with a result for the screen below (`dismiss {result}` →
    /// `screenResult`): a form with one field, JSON or text.
    /// `e`: a result for the screen below (`screenResult`); `E` (`merge`): a JSON object merged into
    /// that screen's params, so that it stays.
    func dismissWithResult(merge: Bool = false) {
        let schema: JSONValue = ["type": "object", "properties": ["result": ["type": "string"]]]
        let title = merge ? "dismiss, merging into the screen below (a JSON object of its fields)" : "dismiss with a result (JSON, or text)"
        form = Form(title: title, schema: schema) { [unowned self] o in
            let text = o["result"]?.stringValue ?? ""
            let result = (try? JSONParser(maxDepth: 64).parse(text)) ?? .string(text)
            self.send(.dismiss(result: result, merge: merge, session: self.session), what: merge ? "dismiss, merging the result" : "dismiss with a result", fromForm: true)
        }
        refresh()
    }

    /// A form for the visible screen's params, prefilled; submitting sends `update` (`push`: keeping
    /// the params it had, which `d` then restores before it dismisses the screen).
    func updateTop(push: Bool = false) {
        guard let top = mirror?.top, let id = top["id"]?.stringValue, let name = top["coordinator"]?.stringValue, needsForm(name) else {
            setStatus("the visible screen has no setup model: no params to change", .error)
            return
        }
        let params = top["params"]?.objectValue ?? [:]
        form = Form(title: "\(push ? "push params of" : "update") \(name) [\(id)]", schema: coordinators[name]?["setup"], prefill: params) { [unowned self] with in
            // update merges: fields equal to the params change nothing, so nothing is sent.
            guard with.contains(where: { params[$0.key] != $0.value }) else {
                self.formSentNothing = true
                self.setStatus("update \(name): nothing changed, nothing sent", .dim)
                return
            }
            self.send(.update(node: id, with: with, push: push, session: self.session), what: push ? "push params of \(name)" : "update \(name)", fromForm: true)
        }
        refresh()
    }

    /// Pops to the first screen of the visible stack (`dismiss {to}`), one commit.
    func popToStackTop() {
        guard let mirror, let first = mirror.visibleStackFirst, let id = first["id"]?.stringValue, id != mirror.top?["id"]?.stringValue else {
            setStatus("already at the first screen of this stack", .error)
            return
        }
        send(.dismiss(to: id, session: session), what: "pop to \(first["coordinator"]?.stringValue ?? id)")
    }

    func handle(_ key: Key) {
        if key == .interrupt { return onQuit() }
        if var f = form {
            // Submitting only sends a request; navd's answer changes the form later, in its reply.
            form = f.handle(key) ? f : nil
            if formSentNothing {
                formSentNothing = false
                form = nil
            }
            refresh()
            return
        }
        guard case .char(let c) = key else { return }
        switch c {
        case "q": onQuit()
        case "d": send(.dismiss(session: session), what: "dismiss")
        case "c": completeFlow()
        case "x": cancel()
        case "t": popToStackTop()
        case ">": turnActionPage(+1)
        case "<": turnActionPage(-1)
        case "r": send(.reset(session: session), what: "reset")
        case "R": send(.reset(session: session, force: true), what: "reset, without leave guards")
        case "u": updateTop()
        case "U": updateTop(push: true)
        case "p":
            popFirst.toggle()
            keepExisting = false
            setStatus(popFirst ? "p: the next action pops to the top of this stack first" : "p: off", .dim)
        case "K":
            keepExisting.toggle()
            popFirst = false
            setStatus(keepExisting ? "K: the next action goes back to its screen if this stack shows one" : "K: off", .dim)
        case "e": dismissWithResult()
        case "E": dismissWithResult(merge: true)
        default:
            if let a = actions.first(where: { $0.key == c }) { a.run() } else { setStatus("no action on key \(c)", .error) }
        }
    }

    // MARK: - Drawing

    func refresh() {
        computeActions()
        terminal.draw(Screen(app: self, columns: terminal.columns, rows: terminal.rows).lines())
    }
}
