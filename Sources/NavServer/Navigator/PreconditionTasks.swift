import JSON
import NavGraph
import NavigationCore
import RPC
import UV

/// The asynchronous precondition tasks: `command` (a child process) and `provider` (a request to
/// the client that provides the precondition), for evaluation and for recovery.
extension Navigator {
    /// The environment commands run with: nothing inherited from navd.
    static let commandEnvironment = ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"]

    func evaluateAsync(_ nav: PendingNavigation, _ p: Precondition) {
        announcePending(nav, waitingFor: p.name)
        let then: (TaskOutcome) -> Void = { [unowned self] outcome in
            switch outcome {
            case .passed:
                self.covered(p, nav.recovered ? .recovered : .passed)
                nav.step += 1
                nav.recovered = false
                self.runPreconditions(nav)
            case .failed(let reason): self.failed(nav, p, reason: reason)
            case .timedOut(let reason): self.failed(nav, p, reason: reason, timeout: true)
            case .redirect(let answer): self.followRedirect(nav, p, answered: answer)
            case .queuedTooLong(let reason): self.queuedTooLong(nav, p, reason: reason)
            }
        }
        switch p.kind {
        case .command(let argv, let timeoutMs):
            runCommand(nav, p, argv: argv, timeoutMs: timeoutMs, role: "precondition", then)
        case .provider(let timeoutMs):
            askProvider(nav, p, name: p.name, method: "precondition.evaluate", resultKey: "passed", timeoutMs: timeoutMs, then)
        case .check:
            runPreconditions(nav)
        }
    }

    func recoverAsync(_ nav: PendingNavigation, _ p: Precondition, _ r: Precondition.Recover, reason: String) {
        switch r {
        case .command(let argv, _): nav.recovering = ["command": .string(argv.first ?? "")]
        case .provider(let name, _): nav.recovering = ["provider": .string(name)]
        case .flow: break
        }
        announcePending(nav, waitingFor: p.name)
        let then: (TaskOutcome) -> Void = { [unowned self] outcome in
            nav.recovering = nil
            switch outcome {
            case .passed: self.reevaluate(nav)
            case .failed(let why): self.failed(nav, p, reason: "\(reason); recovery failed: \(why)")
            case .timedOut(let why): self.failed(nav, p, reason: "\(reason); recovery \(why)", timeout: true)
            case .redirect: self.failed(nav, p, reason: "\(reason); recovery answered a redirect, which only an evaluation may")
            case .queuedTooLong(let why): self.queuedTooLong(nav, p, reason: why)
            }
        }
        switch r {
        case .command(let argv, let timeoutMs):
            runCommand(nav, p, argv: argv, timeoutMs: timeoutMs, role: "recovery", then)
        case .provider(let name, let timeoutMs):
            askProvider(nav, p, name: name, method: "precondition.recover", resultKey: "recovered", timeoutMs: timeoutMs, then)
        case .flow:
            break
        }
    }

    enum TaskOutcome {
        case passed
        case failed(String)
        case timedOut(String)
        /// `{redirect: {to, by?, with?}}`: navigate there instead (a provider's answer, a command's output).
        case redirect(JSONValue)
        /// The navigation waited past `--max-queue-wait` for a command or provider slot: it fails
        /// without recovery (the precondition never ran).
        case queuedTooLong(String)
    }

    /// Ends `nav`, which waited past `--max-queue-wait` for a slot to run `p`.
    func queuedTooLong(_ nav: PendingNavigation, _ p: Precondition, reason: String) {
        finish(nav, .failure(NavError(.preconditionTimeout, "precondition `\(p.name)` of `\(graph.coordinators[nav.plan.target].name)` never ran: \(reason)",
                                      data: ["precondition": .string(p.name), "reason": .string(reason), "navigation": .string(nav.id),
                                             "limit": "--max-queue-wait", "max": .int(Int(config.maxQueueWaitMs))])))
    }

    /// What is left of `nav`'s `--max-queue-wait` (the time it may still wait for slots).
    func queueBudget(_ nav: PendingNavigation) -> UInt64 {
        config.maxQueueWaitMs > nav.queuedMs ? config.maxQueueWaitMs - nav.queuedMs : 0
    }

    /// The navigation as commands see it on stdin and providers in their params. A leave guard is
    /// asked about the node it protects: `leaving` (its id), its coordinator and its params; a
    /// navigation's guard also says where the navigation goes.
    func navigationJSON(_ nav: PendingNavigation) -> JSONValue {
        if let subject = guardSubject(nav) {
            var o: JSONObject = [
                "id": .string(nav.id), "session": .string(nav.state.session.name), "leaving": .string(Node.id(subject.node)),
                "coordinator": .string(graph.coordinators[subject.coordinator].name), "with": subject.params,
            ]
            if nav.leaving == nil {
                o["to"] = .string(graph.coordinators[nav.plan.target].name)
                o["by"] = .string(nav.plan.by.rawValue)
                o["from"] = .string(nav.plan.sourceId)
            }
            return .object(o)
        }
        let screen = screenSubject(nav)
        return [
            "id": .string(nav.id), "session": .string(nav.state.session.name),
            "to": .string(graph.coordinators[screen.coordinator].name), "by": .string(screen.by.rawValue),
            "with": screen.params, "from": .string(nav.plan.sourceId),
        ]
    }

    /// The screen a navigation's own precondition (not a leave guard) is about: in a stack built at
    /// once (a deep link's, a `reset {to}`'s) the screen of that stack showing it, else the target.
    func screenSubject(_ nav: PendingNavigation) -> (coordinator: Int, params: JSONValue, by: Presentation) {
        if let i = nav.plan.linkStep(at: nav.step), let step = nav.plan.link?[i] { return (step.coordinator, step.params, step.by) }
        return (nav.plan.target, nav.plan.params, nav.plan.by)
    }

    /// What the leave guard `nav` runs now is about: the node it protects, that node's coordinator
    /// and params; nil when the step is not a leave guard's (or its node left the tree: it then
    /// protects nothing and is passed over, ``runPreconditions(_:)``).
    func guardSubject(_ nav: PendingNavigation) -> (node: Int, coordinator: Int, params: JSONValue)? {
        guard let g = nav.plan.leaveGuard(at: nav.step), let n = nav.state.session.leaving(g.node), n.coordinator >= 0 else { return nil }
        return (g.node, n.coordinator, n.params)
    }

    /// Fills the placeholders of one argument (one pass over the template; see ``ArgvTemplate``). On a
    /// leave guard `{with.FIELD}` is read from the params of the node it protects, and a dismiss's
    /// `{to}` is that node's coordinator; in a stack built at once, from the screen the precondition
    /// is about (``screenSubject(_:)``).
    private func expand(_ arg: String, _ nav: PendingNavigation) throws(ArgvTemplate.Refusal) -> String {
        let subject = guardSubject(nav)
        let screen = screenSubject(nav)
        let to = subject.flatMap { nav.leaving != nil ? $0.coordinator : nil } ?? screen.coordinator
        let params = subject?.params ?? screen.params
        return try ArgvTemplate.expand(arg, to: graph.coordinators[to].name, session: nav.state.session.name) { field in
            switch ArgvTemplate.value(of: field, in: params) {
            case .string(let s)?: return s
            case nil, .null?: return nil
            case let other?: return JSONWriter.string(other)
            }
        }
    }

    /// Queues a command: spawning costs about a millisecond, so at most `spawnsPerIteration`
    /// processes start per loop iteration and a burst of navigations cannot stall other clients;
    /// at most `--max-children` run at once, shared between uids (``FairShare``), and uids take
    /// turns. Waiting is not failing: the command's timeout starts when it starts; the navigation's
    /// waits together are bounded by `--max-queue-wait`, and while it waits for a slot its
    /// `navigationPending` says so.
    private func runCommand(_ nav: PendingNavigation, _ p: Precondition, argv: [String], timeoutMs: UInt64, role: String,
                            _ done: @escaping (TaskOutcome) -> Void) {
        let queuedAt = loop.now
        let noSlot = config.children.verdict(for: nav.uid, in: childrenByUid, ahead: spawnQueue.count(of: nav.uid)) != .admitted
        if noSlot { announcePending(nav, waitingFor: p.name, queued: ("command", spawnQueue.count(of: nav.uid), spawnQueue.count)) }
        let limit = Timer(loop: loop).labelled("a command precondition waited too long for a slot")
        let ticket = spawnQueue.append({ [unowned self, weak nav] in
            limit.close()
            guard let nav, !nav.finished else { return }
            nav.queuedMs += self.loop.now >= queuedAt ? self.loop.now - queuedAt : 0
            if noSlot { self.announcePending(nav, waitingFor: p.name) }
            self.spawnCommand(nav, p, argv: argv, timeoutMs: timeoutMs, done)
        }, uid: nav.uid)
        let budget = queueBudget(nav)
        limit.start(milliseconds: budget) { [unowned self, weak nav] in
            limit.close()
            guard let nav, !nav.finished, self.spawnQueue.remove(ticket) else { return }
            nav.cancelTask = nil
            done(.queuedTooLong("it waited \(formatMs(self.config.maxQueueWaitMs)) in all for a command slot (the --max-queue-wait limit): \(self.childrenByUid.total) command preconditions run, \(self.spawnQueue.count) more wait (--max-children \(self.config.children.limit))"))
        }
        nav.cancelTask = { [unowned self] in
            limit.close()
            self.spawnQueue.remove(ticket)
        }
        scheduleSpawns()
    }

    static let spawnsPerIteration = 2

    /// Whether a command of `uid`'s may start now.
    private func mayStartChild(_ uid: UInt32) -> Bool {
        config.children.verdict(for: uid, in: childrenByUid) == .admitted
    }

    /// Runs queued spawns a few per loop iteration, after the iteration's I/O (a Check handle;
    /// an Idle handle keeps the loop from blocking in poll while work is queued), while a uid with
    /// room has some; a child's exit schedules them again. A timer would not do: libuv runs a 0 ms
    /// timer started from a timer callback in the same pass.
    func scheduleSpawns() {
        guard spawnCheck == nil, spawnQueue.hasJob(where: mayStartChild) else { return }
        let check = Check(loop: loop).labelled("command preconditions spawned")
        let idle = Idle(loop: loop)
        spawnCheck = check
        spawnIdle = idle
        idle.start()
        check.start { [unowned self] in
            for _ in 0..<Navigator.spawnsPerIteration {
                guard let job = self.spawnQueue.pop(where: self.mayStartChild) else { break }
                job()
            }
            if !self.spawnQueue.hasJob(where: self.mayStartChild) {
                check.close()
                idle.close()
                self.spawnCheck = nil
                self.spawnIdle = nil
            }
        }
    }

    private func spawnCommand(_ nav: PendingNavigation, _ p: Precondition, argv: [String], timeoutMs: UInt64,
                              _ done: @escaping (TaskOutcome) -> Void) {
        var args: [String]
        do throws(ArgvTemplate.Refusal) {
            args = try argv.map { arg throws(ArgvTemplate.Refusal) in try expand(arg, nav) }
        } catch {
            let field = error.placeholder.hasPrefix("with.") ? String(error.placeholder.dropFirst(5)) : error.placeholder
            finish(nav, .failure(NavError(.invalidParams, "precondition `\(p.name)` cannot run: \(error.reason); send the value without it",
                                          data: ["param": .string(error.placeholder.hasPrefix("with.") ? "with" : error.placeholder),
                                                 "field": .string(field), "navigation": .string(nav.id)])))
            return
        }
        if args[0].contains("/") && !args[0].hasPrefix("/") {
            args[0] = graph.baseDirectory + "/" + args[0]
        }
        var input = JSONWriter.encode(navigationJSON(nav))
        input.append(10)
        let timer = Timer(loop: loop).labelled("command precondition `\(p.name)` timed out")
        var settled = false
        let process: ChildProcess
        do {
            process = try ChildProcess(loop: loop, argv: args, environment: Navigator.commandEnvironment,
                                       directory: graph.baseDirectory.hasPrefix("/") ? graph.baseDirectory : nil, input: input) { outcome in
                guard !settled else { return }
                settled = true
                timer.close()
                nav.cancelTask = nil
                if outcome.status == 0 {
                    done(.passed)
                } else if let line = firstLine(outcome.stdout), line.hasPrefix("{"),
                          let v = try? JSONParser(maxDepth: 16).parse(line), let r = v["redirect"] {
                    done(.redirect(r))
                } else if outcome.cut {
                    let end = outcome.signal != 0 ? "was ended by signal \(outcome.signal)" : "exited with status \(outcome.status)"
                    done(.failed("\(args[0]) wrote more than \(ChildProcess.outputCap / 1024) KiB of output; navd stopped reading it and it \(end)"))
                } else {
                    let line = firstLine(outcome.stdout) ?? firstLine(outcome.stderr)
                    let why = line ?? (outcome.signal != 0 ? "\(args[0]) was killed by signal \(outcome.signal)" : "\(args[0]) exited with status \(outcome.status)")
                    done(.failed(why))
                }
            }
        } catch {
            timer.close()
            done(.failed("cannot run \(args[0]): \(error.message)"))
            return
        }
        process.labelled("command precondition `\(p.name)` ended")
        tasksStarted += 1
        let uid = nav.uid
        childrenByUid.add(uid)
        process.onExited = { [unowned self] in
            self.childrenByUid.remove(uid)
            self.scheduleSpawns()
        }
        timer.start(milliseconds: timeoutMs) {
            guard !settled else { return }
            settled = true
            timer.close()
            nav.cancelTask = nil
            process.abandon()
            done(.timedOut("\(args[0]) did not finish within \(formatMs(timeoutMs)) and was killed"))
        }
        nav.cancelTask = {
            guard !settled else { return }
            settled = true
            timer.close()
            process.abandon()
        }
    }

    private func askProvider(_ nav: PendingNavigation, _ p: Precondition, name: String, method: String, resultKey: String,
                             timeoutMs: UInt64, _ done: @escaping (TaskOutcome) -> Void) {
        guard let provider = provider(for: name) else {
            done(.failed("no connected client provides `\(name)` (a front-end must call provide {preconditions: [\"\(name)\"]})"))
            return
        }
        // `precondition` is the one evaluated or recovered; a recovery also names the provider it
        // asks (the name the client gave `provide`), which may be another.
        var o: JSONObject = [
            "precondition": .string(p.name), "session": .string(nav.state.session.name),
            "navigation": navigationJSON(nav), "facts": .object(nav.state.session.sortedFacts),
        ]
        if name != p.name { o.append("provider", .string(name)) }
        let params = JSONValue.object(o)
        tasksStarted += 1
        let slots = slots(of: provider)
        let request = ProviderRequest(method: method, params: params, timeoutMs: timeoutMs, uid: nav.uid, queuedAt: loop.now) { result in
            nav.cancelTask = nil
            switch result {
            case .success(let v):
                if v[resultKey]?.boolValue == true {
                    done(.passed)
                } else if let r = v["redirect"], v[resultKey]?.boolValue != true {
                    done(.redirect(r))
                } else if v[resultKey]?.boolValue == false {
                    done(.failed(v["reason"]?.stringValue ?? "the provider said no"))
                } else {
                    done(.failed("the provider answered \(JSONWriter.string(v)), not {\(resultKey): true|false, reason?}"))
                }
            case .failure(let e):
                switch e.kind {
                case "timeout" where e.data["queued"] == true: done(.queuedTooLong(e.message))
                case "timeout": done(.timedOut("the provider did not answer within \(formatMs(timeoutMs))"))
                case "clientGone": done(.failed("the provider disconnected"))
                default: done(.failed("the provider answered with an error: \(e.message)"))
                }
            }
        }
        // Held strongly until the navigation finishes (a weak reference would give the connection a
        // side table); withdrawing a request of a closed connection does nothing.
        nav.cancelTask = { slots.withdraw(request) }
        request.sent = { [weak nav, unowned self] waited in
            guard let nav, waited > 0 else { return }
            nav.queuedMs += waited
            if !nav.finished { self.announcePending(nav, waitingFor: p.name) }
        }
        if let queued = slots.submit(request, maxWaitMs: queueBudget(nav)) {
            announcePending(nav, waitingFor: p.name, queued: ("provider", queued.behind, queued.waiting))
        }
    }
}

func formatMs(_ ms: UInt64) -> String {
    ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
}

private func firstLine(_ bytes: [UInt8]) -> String? {
    let line = bytes.split(separator: 10, omittingEmptySubsequences: true).first.map { String(decoding: $0, as: UTF8.self) }
    let trimmed = line?.trimmingSpacesAndTabs
    return trimmed?.isEmpty == false ? trimmed : nil
}

extension String {
    var trimmingSpacesAndTabs: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\r" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s.removeLast() }
        return String(s)
    }
}
