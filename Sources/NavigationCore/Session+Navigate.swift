import JSON
import NavGraph
import RPC

/// `navigate`: a plan validated against the graph and the tree, then committed in one step.
extension Session {
    // MARK: navigate

    /// Validates a navigation to `destination` completely without changing anything: `by` and `with`
    /// as given (they win over a route's), `from` a node id (default: the visible top).
    /// `afterFlow`: the navigation continues a completed flow (its `then`): the flow's `opens` and
    /// its declared `then` decide what it may open, not the source's. `declaredTarget`: the graph
    /// itself names this target (a precondition's declared `redirect`), so `opens` is not asked.
    /// `withView`: `with` where it lies in the request, in place of `given` (valid while the request
    /// is handled; its value is made only when needed).
    /// `existing` and `merge`: `navigate {existing, merge}` (see ``planReuse``).
    public func plan(_ destination: Destination, by: Presentation?, with givenValue: JSONObject?, from: String?, ifVersion: Int?,
                     caller: Caller, afterFlow: Int? = nil, declaredTarget: Bool = false,
                     withView: JSONView? = nil, existing: Existing = .push, merge: Bool = false) throws(NavError) -> Plan {
        // The target, the source and its coordinator, read without counting references (planning
        // changes neither the tree nor the graph).
        let target = CoordinatorLink(destination.target, of: graph)
        let source = try planSource(from: from, ifVersion: ifVersion, flowAllowed: afterFlow != nil)
        let planned = target.with { target in
            source.with { source in
                CoordinatorLink(source.coordinator, of: graph).with { sourceCoordinator in
                    Result { () throws(NavError) in
                        try plan(destination, target: target, source: source, sourceCoordinator: sourceCoordinator, by: by, with: givenValue,
                                 ifVersion: ifVersion, caller: caller, afterFlow: afterFlow, declaredTarget: declaredTarget, withView: withView,
                                 existing: existing, merge: merge)
                    }
                }
            }
        }
        return try planned.get()
    }

    @inline(__always)
    private func plan(_ destination: Destination, target: Coordinator, source: Node, sourceCoordinator: Coordinator, by: Presentation?,
                      with givenValue: JSONObject?, ifVersion: Int?, caller: Caller, afterFlow: Int?, declaredTarget: Bool,
                      withView: JSONView?, existing: Existing, merge: Bool) throws(NavError) -> Plan {
        let style = by ?? destination.by ?? target.unnamedPresentation
        // Style, abilities, access.
        guard target.allows(style) else {
            let allowed = Presentation.allCases.filter { target.allows($0) }.map(\.rawValue).joined(separator: ", ")
            throw NavError(.notAllowed, "`\(target.name)` cannot be shown by \(style.rawValue); its presentations are \(allowed)",
                           data: ["from": .string(source.id), "to": .string(target.name), "by": .string(style.rawValue)])
        }
        // The flow the source is a step of: its coordinator, or -1 (a number, not an optional node
        // or steps list: the usual source is in no flow, and dropping a nil reference is a call).
        let enclosingFlow = source.parentRef.map { p in p.with { $0.kind == .flow ? $0.coordinator : -1 } } ?? -1
        var isStepOfEnclosingFlow = false, isNextStep = false
        if enclosingFlow >= 0, let steps = graph.coordinators[enclosingFlow].flow?.steps {
            isStepOfEnclosingFlow = steps.contains(target.index)
            // Steps follow `opens` like every screen; a step that declares none opens the step after it.
            isNextStep = sourceCoordinator.opens.isEmpty
                && (steps.firstIndex(of: source.coordinator).map { $0 + 1 < steps.count && steps[$0 + 1] == target.index } ?? false)
        }
        if declaredTarget {
            // The graph declared this navigation; presentations, access and setup still apply.
        } else if let flow = afterFlow.map({ graph.coordinators[$0] }) {
            if style.needsAbility && !flow.mayContinue(to: target.index) {
                let opens = flow.opens.map { graph.coordinators[$0].name }
                throw NavError(.notAllowed, "flow `\(flow.name)` cannot continue to `\(target.name)`: a flow continues to its declared `then` or to what its opens list (\(briefList(opens, none: "empty")))",
                               data: ["from": .string(source.id), "to": .string(target.name), "by": .string(style.rawValue)])
            }
        } else if style.needsAbility && !sourceCoordinator.canOpen(target.index) && !isNextStep {
            let opens = sourceCoordinator.opens.map { graph.coordinators[$0].name }
            let what: String
            if opens.isEmpty, enclosingFlow >= 0, let steps = graph.coordinators[enclosingFlow].flow?.steps,
               let at = steps.firstIndex(of: source.coordinator) {
                // A step without `opens` opens the step after it, and nothing else.
                let flowName = graph.coordinators[enclosingFlow].name
                what = at + 1 < steps.count
                    ? "as a step of flow `\(flowName)` that declares no opens, it opens only the next step, `\(graph.coordinators[steps[at + 1]].name)`"
                    : "it is the last step of flow `\(flowName)` and declares no opens: complete the flow with flowComplete"
            } else {
                what = "its opens are \(briefList(opens, none: "empty"))"
                    + (target.allows(.select) && (nestedTab(of: target.index) != nil || tabIndex(of: target.index) != nil)
                        ? "; `\(target.name)` is a tab: show it with by: select" : "")
            }
            throw NavError(.notAllowed, "`\(sourceCoordinator.name)` cannot open `\(target.name)`: \(what) (select and root are always available)",
                           data: ["from": .string(source.id), "to": .string(target.name), "by": .string(style.rawValue)])
        }
        try checkStyle(style, target: target, source: source, sourceCoordinator: sourceCoordinator, enclosingFlow: enclosingFlow,
                       isStepOfEnclosingFlow: isStepOfEnclosingFlow)
        if !target.access.isEmpty && caller.roles.isDisjoint(with: target.access) {
            let held = caller.roles.isEmpty ? "none" : caller.roles.sorted().joined(separator: ", ")
            throw NavError(.accessDenied, "`\(target.name)` admits only clients with role \(target.access.joined(separator: " or ")); this client holds \(held). Roles come from the policy file (--policy), by uid or by token (hello {token})",
                           data: ["to": .string(target.name), "roles": .array(target.access.map(JSONValue.string))])
        }
        try checkStartStepAccess(of: target, caller: caller)

        // Setup model. `with` as given (no route's `with` merged in, nothing to mediate, no screen
        // to reuse) is checked against the setup where it lies in the request, and written as the
        // new node's text from there: no value is made (the value's way when the check says no,
        // for the message, or when the bytes cannot tell the text, see `WrittenJSON.init(_:)`).
        var acceptedInPlace: Bool?  // the in-place check's answer, asked once (nil: not asked)
        if let view = withView, givenValue == nil, destination.with == nil, target.mediation.isEmpty, existing == .push, style != .select {
            let accepted = target.setup.map { $0.accepts(inPlace: view) } ?? true
            acceptedInPlace = accepted
            if accepted, let text = WrittenJSON(view) {
                var plan = Plan(target: target.index, by: style, setup: text, source: source.number, ifVersion: ifVersion,
                                preconditions: graph.preconditions(showing: target))
                plan.sourceCoordinator = source.coordinator
                if destination.route >= 0 { plan.route = destination.route }
                return plan
            }
        }
        let givenObject = givenValue ?? withView.flatMap { $0.value.objectValue }
        var with: JSONObject
        if let routeWith = destination.with {
            with = routeWith
            if let givenObject { with.merge(givenObject, nullRemoves: false) }
        } else {
            with = givenObject ?? JSONObject()
        }
        // Mediation, then the schema.
        if style == .select {
            return try planSelect(target, destination, with: with, given: givenObject != nil, merge: merge, source: source, ifVersion: ifVersion)
        }
        let given = with.count
        let asGiven = existing == .push ? nil : with
        if !target.mediation.isEmpty { mediate(target, from: source.params, into: &with) }
        let params = JSONValue.object(with)
        if let asGiven {
            guard style == .push else {
                throw NavError(.invalidParams, "\"existing\" says what a push does when the stack already shows `\(target.name)`; this navigation is by \(style.rawValue), so leave \"existing\" out or push",
                               data: ["param": "existing"])
            }
            if let reused = try planReuse(target, existing, params: params, given: asGiven, merge: merge, from: source, ifVersion: ifVersion) {
                return reused
            }
        }
        // `with` as given (no route's `with` merged in, nothing mediated) is first checked where it
        // lies in the request, which builds nothing; only a no there asks the value (for the message).
        let asRead = destination.with == nil && with.count == given
        if let setup = target.setup, !(asRead && (acceptedInPlace ?? withView.map(setup.accepts(inPlace:))) == true),
           let violation = setup.validate(params) {
            throw NavError(.invalidSetup, "\"with\" does not match the setup of `\(target.name)`: \(violation.message)",
                           data: ["pointer": .string(violation.pointer), "rule": .string(violation.rule), "to": .string(target.name)])
        }
        var plan = Plan(target: target.index, by: style, params: params, source: source.number, ifVersion: ifVersion,
                        preconditions: graph.preconditions(showing: target))
        plan.sourceCoordinator = source.coordinator
        if destination.route >= 0 { plan.route = destination.route }
        return plan
    }

    /// The screen a navigation starts from (`from`, else the visible top), checked against `ifVersion`.
    /// `flowAllowed`: a flow may be named too (the `then` that takes the place of a flow first in its
    /// stack, ``planCompletion(of:result:then:with:caller:)``).
    private func planSource(from: String?, ifVersion: Int?, flowAllowed: Bool = false) throws(NavError) -> NodeLink {
        let source: NodeLink
        if let from {
            guard let n = nodes[from] else {
                throw NavError(.unknownNode, "no node `\(from)` in session `\(name)`; `tree` lists the current nodes", data: ["node": .string(from)])
            }
            guard n.kind == .screen || (flowAllowed && n.kind == .flow) else {
                throw NavError(.unknownNode, "node `\(from)` is a \(n.kind.rawValue); \"from\" must name a screen", data: ["node": .string(from)])
            }
            source = NodeLink(n)  // the tree holds it (rule 2)
        } else {
            guard let top = visibleTopRef else { throw NavError(.unknownNode, "session `\(name)` shows no screen to navigate from") }
            source = top
        }
        if let v = ifVersion, v != version {
            throw NavError(.conflict, "the tree is at version \(version), not \(v) as \"ifVersion\" requires; fetch `tree` and decide again",
                           data: ["version": .int(version), "ifVersion": .int(v)])
        }
        return source
    }

    /// What each style asks of the source: present from a screen not presenting, replace only
    /// among a flow's steps, select only a tab.
    private func checkStyle(_ style: Presentation, target: Coordinator, source: Node, sourceCoordinator: Coordinator, enclosingFlow: Int,
                            isStepOfEnclosingFlow: Bool) throws(NavError) {
        switch style {
        case .present:
            if source.presented != nil {
                throw NavError(.notAllowed, "`\(source.id)` (\(sourceCoordinator.name)) is already presenting; dismiss its modal first or present from the modal's top",
                               data: ["from": .string(source.id)])
            }
        case .replace:
            if enclosingFlow >= 0, !isStepOfEnclosingFlow {
                throw NavError(.notAllowed, "`\(target.name)` cannot replace a step of flow `\(graph.coordinators[enclosingFlow].name)`: it is not one of its steps",
                               data: ["from": .string(source.id)])
            }
        case .select:
            guard nestedTab(of: target.index) != nil || declaredTab(target.index) != nil else {
                var tabs: [String] = []
                if case .tabs(let declared) = graph.root { tabs = declared.map { graph.coordinators[$0].name } }
                throw NavError(.notAllowed, tabs.isEmpty ? "select needs tabs, and the graph's root is a stack"
                                                        : "`\(target.name)` is not one of the tabs; the graph declares the tabs \(briefList(tabs, none: ""))",
                               data: ["to": .string(target.name), "by": "select"])
            }
        default: break
        }
    }

    /// `by: select`: `with` replaces the params of the tab's first screen (React Navigation's
    /// navigate to a tab); with `merge` it is merged into them (a null removes a field), as `update`
    /// does. The result must match the setup; no `with` leaves them as they are.
    private func planSelect(_ target: Coordinator, _ destination: Destination, with: JSONObject, given: Bool, merge: Bool, source: Node,
                            ifVersion: Int?) throws(NavError) -> Plan {
        let style = Presentation.select
        guard given || destination.with != nil else {
            var plan = Plan(target: target.index, by: style, params: .object(with), source: source.number, ifVersion: ifVersion, preconditions: graph.preconditions(showing: target))
            plan.sourceCoordinator = source.coordinator
            if destination.route >= 0 { plan.route = destination.route }
            return plan
        }
        let params = merge ? Session.merged(tabFirstNode(of: target.index)?.params ?? .object([:]), with) : .object(with)
        if let setup = target.setup, let violation = setup.validate(params) {
            throw NavError(.invalidSetup, "select's \"with\" would make the params of tab `\(target.name)` not match its setup: \(violation.message)",
                           data: ["pointer": .string(violation.pointer), "rule": .string(violation.rule), "to": .string(target.name)])
        }
        var plan = Plan(target: target.index, by: style, params: params, source: source.number, ifVersion: ifVersion, preconditions: graph.preconditions(showing: target))
        plan.sourceCoordinator = source.coordinator
        plan.selectsWith = true
        if destination.route >= 0 { plan.route = destination.route }
        return plan
    }

    /// `navigate {existing: top | pop}`: the plan that keeps a screen of `target` already in the stack
    /// the push would go to, or nil (push as usual). `top`: the screen on top of that stack; `pop`:
    /// the nearest from the top. A screen is the same when the target declares no `identity`, when
    /// the new params give none of its identity fields (matched by name, as React Navigation does
    /// when `getId` answers undefined), or when its params and the new ones agree on every identity
    /// field. It takes `params` (with `merge`, its own params with `given` merged in), validated
    /// against the setup, and what is above it leaves in the same commit (a ``Plan/popUpTo``, whose
    /// leave guards the server adds).
    func planReuse(_ target: Coordinator, _ existing: Existing, params: JSONValue, given: JSONObject, merge: Bool,
                   from source: Node, ifVersion: Int?) throws(NavError) -> Plan? {
        let stack = pushContainer(from: source, target: target.index)
        let candidates = existing == .top ? stack.children.suffix(1) : stack.children[...]
        let byName = target.identity.allSatisfy { (given[$0] ?? .null) == .null }
        for screen in candidates.reversed() where screen.kind == .screen && screen.coordinator == target.index {
            let own = screen.params
            let kept = merge ? Session.merged(own, given) : params
            guard byName || target.identity.allSatisfy({ own[$0] == kept[$0] }) else { continue }
            if let setup = target.setup, let violation = setup.validate(kept) {
                let what = merge ? "merged into the params of `\(screen.id)`" : "given to `\(screen.id)` (the screen \"existing\" found)"
                throw NavError(.invalidSetup, "\"with\" \(what) would not match the setup of `\(target.name)`: \(violation.message)",
                               data: ["pointer": .string(violation.pointer), "rule": .string(violation.rule), "node": .string(screen.id)])
            }
            var plan = Plan(target: target.index, by: .push, params: kept, source: source.number, ifVersion: ifVersion, preconditions: graph.preconditions(showing: target))
            plan.sourceCoordinator = source.coordinator
            plan.reuse = screen.number
            // `pop`: what is above the screen at the commit leaves (nothing, when nothing is); `top`
            // has no pop, and its screen must still be on top at the commit.
            if existing == .pop { plan.popUpTo = (screen.number, false) }
            return plan
        }
        return nil
    }

    /// The stack or flow a push from `source` to `target` goes into: the source's, or the one around
    /// its flow when `target` is not one of that flow's steps.
    func pushContainer(from source: Node, target: Int) -> Node {
        let container = source.parent!
        if container.kind == .flow && !(graph.coordinators[container.coordinator].flow?.steps.contains(target) ?? false) {
            return container.parent!
        }
        return container
    }

    /// Mediation: the fields of `target`'s setup that `with` leaves unset, copied from the source's params.
    @inline(__always)
    func mediate(_ target: Coordinator, from source: JSONValue, into with: inout JSONObject) {
        for (field, path) in target.mediation where with[field] == nil {
            var v: JSONValue? = source
            for p in path { v = v?[p] }
            if let v { with[field] = v }
        }
    }

    /// The innermost tab container on the visible path that declares `coordinator` as a tab, and
    /// that tab's index.
    func nestedTab(of coordinator: Int) -> (Node, Int)? {
        var found: (Node, Int)?
        forEachVisible { n in
            if n.kind == .tabs, n.coordinator >= 0, let i = graph.coordinators[n.coordinator].tabs.firstIndex(of: coordinator), i < n.children.count {
                found = (n, i)
            }
        }
        return found
    }

    /// The index of the tab the graph's root declares for `coordinator`, if it declares tabs.
    func declaredTab(_ coordinator: Int) -> Int? {
        guard case .tabs(let tabs) = graph.root else { return nil }
        return tabs.firstIndex(of: coordinator)
    }

    /// The first node of the tab `select` would show for `coordinator` (nil: a fresh tab shell would be
    /// made).
    func tabFirstNode(of coordinator: Int) -> Node? {
        if let (shell, i) = nestedTab(of: coordinator) { return shell.children[i].children.first }
        if let i = tabIndex(of: coordinator) { return root.children[i].children.first }
        return nil
    }

    /// The tab of the live tab shell that the graph declares for `coordinator`: tabs keep the identity
    /// the graph gave them (by index), whatever their stacks hold now.
    func tabIndex(of coordinator: Int) -> Int? {
        guard root.kind == .tabs, let i = declaredTab(coordinator), i < root.children.count else { return nil }
        return i
    }

    /// Applies a validated plan: the source must still exist and `ifVersion` must still hold.
    public func commit(_ plan: Plan) throws(NavError) -> Commit {
        idCounterBeforeCommit = nextId
        if let steps = plan.link { return try commitLink(steps, ifVersion: plan.ifVersion) }
        guard let origin = nodes[number: plan.source] else {
            throw NavError(.conflict, "the source node `\(plan.sourceId)` is gone (dismissed while the navigation was pending)", data: ["node": .string(plan.sourceId)])
        }
        if let v = plan.ifVersion, v != version {
            throw NavError(.conflict, "the tree is at version \(version), not \(v) as \"ifVersion\" requires; fetch `tree` and decide again",
                           data: ["version": .int(version), "ifVersion": .int(v)])
        }
        // Within the limits (exactly; a popUpTo's growth is estimated, and measured on a copy below).
        let reuse = plan.reuse
        var fits = true
        if reuse == nil { fits = try checkGrowth(target: plan.target, by: plan.by, bytes: plan.paramsBytes, exact: plan.popUpTo == nil, from: origin) }
        var changes = ChangeLog(self)
        var removed = Removal()
        var source = origin
        if let pop = plan.popUpTo {
            // Presenting from what the pop leaves can still be refused, and what the pop removes may
            // make room: try it on a copy first, so a refused navigation changes nothing.
            if (plan.by == .present || !fits) && !isTrial {
                try tryOnCopy { trial throws(NavError) in _ = try trial.commit(plan) }
            }
            if let reuse { _ = try checkReuse(reuse, plan) }
            source = try popUp(to: pop.node, inclusive: pop.inclusive, changes: &changes, removed: &removed)
            if isTrial && reuse == nil { _ = try checkGrowth(target: plan.target, by: plan.by, bytes: plan.paramsBytes, exact: true, from: source) }
        }
        if changes.enabled, let h = plan.hints { changes.hints = h }
        if let reuse {
            if plan.popUpTo == nil { try checkStillOnTop(reuse) }
            return try commitReuse(reuse, plan, changes: &changes, removed: removed)
        }
        let created: Node
        switch plan.by {
        case .push:
            // A walk up that counts no reference (reading `parent` would retain).
            var container = source.parentRef!
            if container.with({ $0.kind == .flow && !(graph.coordinators[$0.coordinator].flow?.steps.contains(plan.target) ?? false) }) {
                container = container.with { $0.parentRef! }
            }
            created = makeTarget(for: plan)
            container.with { container in
                adopt(created, into: container)
                changes.record("push", parent: container, node: created)
            }
        case .present:
            if source.presented != nil {
                throw NavError(.notAllowed, "`\(source.id)` is already presenting; dismiss its modal first", data: ["from": .string(source.id)])
            }
            created = makeTarget(for: plan)
            if plan.recovery && created.kind == .flow {
                created.isRecovery = true
                holdsRecoveryFlows = true
            }
            let stack = makeStack(holding: created)
            stack.parent = source
            source.presented = stack
            changes.record("present", parent: source, node: stack)
        case .replace:
            let container = source.parent!
            let index = source.indexInParent!
            for n in container.children[index...] { forget(n, into: &removed) }
            container.children.removeSubrange(index...)
            created = makeTarget(for: plan)
            adopt(created, into: container)
            changes.record("replace", parent: container, index: index, node: created, removed: removed.numbers)
        case .root:
            forget(root, into: &removed)
            created = makeTarget(for: plan)
            root = makeStack(holding: created)
            changes.record("reset", root: root, removed: removed.numbers)
        case .select:
            created = try commitSelect(plan, changes: &changes, removed: &removed)
        }
        if plan.selectsWith, created.params != plan.params {
            // `select {with}`: the tab's first screen takes the params validated with the plan.
            setParams(created, plan.setup)
            changes.record("update", node: created)
        }
        version += 1
        if let completing = plan.completing, let i = removed.ended?.firstIndex(where: { $0.id == Node.id(completing.flow) }) {
            // The flow whose `then` took its place ends completed, with its result.
            let f = removed.ended![i]
            removed.ended![i] = EndedFlow(id: f.id, coordinator: f.coordinator, status: .completed, result: completing.result, error: nil)
        }
        return Commit(version: version, log: changes, node: created, removedNumbers: removed.numbers, endedFlows: removed.ended)
    }

    /// The node `plan` makes: its target with the plan's params; a flow keeps the `then` that
    /// `navigate` gave it (saved with it, so a restart or another node completes it so too).
    @inline(__always)
    private func makeTarget(for plan: Plan) -> Node {
        let n = makeTarget(plan.target, setup: plan.setup)
        if n.kind == .flow, let t = plan.then { n.then = t }
        return n
    }

    /// `by: select`: the tab's first screen, its tab selected (a tab of a container on the visible
    /// path, else of the root's tabs, brought back fresh if a `root` navigation replaced them).
    private func commitSelect(_ plan: Plan, changes: inout ChangeLog, removed: inout Removal) throws(NavError) -> Node {
        if plan.selectsWith {
            // Checked before anything changes (a fresh tab shell's first screen holds no params).
            let before = tabFirstNode(of: plan.target)?.paramsBytes ?? 0
            try limits.check(depth: 0, nodes: 0, paramsBytes: paramsBytes - before + plan.paramsBytes)
        }
        if let (shell, i) = nestedTab(of: plan.target) {
            // A tab of a tab container on the visible path (the innermost that declares it).
            select(i, in: shell, changes: &changes)
            return shell.children[i].children[0]
        }
        guard let tab = declaredTab(plan.target) else {
            throw NavError(.notAllowed, "`\(graph.coordinators[plan.target].name)` is not one of the tabs the graph declares")
        }
        if tabIndex(of: plan.target) == nil {
            // The tab shell was replaced (a `root` navigation): selecting a tab brings it back, fresh.
            forget(root, into: &removed)
            root = makeRoot()
            changes.record("reset", root: root, removed: removed.numbers)
        }
        select(tab, in: root, changes: &changes)
        return root.children[tab].children[0]
    }

    /// The screen `navigate {existing}` keeps, if it may take the plan's params (checked before a
    /// pop changes anything).
    @discardableResult
    func checkReuse(_ number: Int, _ plan: Plan) throws(NavError) -> Node {
        guard let screen = nodes[number: number] else {
            throw NavError(.conflict, "the screen `\(Node.id(number))` that \"existing\" found is gone (dismissed while the navigation was pending)",
                           data: ["node": .string(Node.id(number))])
        }
        try limits.check(depth: 0, nodes: 0, paramsBytes: paramsBytes - screen.paramsBytes + plan.paramsBytes)
        return screen
    }

    /// `navigate {existing: top}`: the screen it found on top of its stack is still there (a
    /// navigation that waited for its preconditions may find something came above it, or a modal).
    func checkStillOnTop(_ number: Int) throws(NavError) {
        guard let screen = nodes[number: number] else { return }  // (checkReuse says it is gone)
        if screen.presented != nil || screen.parent?.children.last !== screen {
            throw NavError(.conflict, "the screen `\(screen.id)` that \"existing\": \"top\" found is no longer on top of its stack (something came above it while the navigation waited); navigate again",
                           data: ["node": .string(screen.id)])
        }
    }

    /// Commits `navigate {existing}` that found screen `number` (after any pop): it takes the plan's
    /// params (an `update` change). Nothing popped and the same params is no change: the version
    /// stays, and nothing is published.
    func commitReuse(_ number: Int, _ plan: Plan, changes: inout ChangeLog, removed: Removal) throws(NavError) -> Commit {
        let screen = try checkReuse(number, plan)
        if screen.params != plan.params {
            setParams(screen, plan.setup)
            changes.record("update", node: screen)
        } else if removed.numbers.isEmpty {
            return Commit(version: version, changes: nil, node: screen, removedNumbers: NodeNumbers(), endedFlows: nil)
        }
        version += 1
        return Commit(version: version, log: changes, node: screen, removedNumbers: removed.numbers, endedFlows: removed.ended)
    }

    /// The pop of `navigate {popUpTo}`: removes what is above screen `number` (and it too when
    /// `inclusive`), recording the change; answers the screen the pop leaves on top of the match's
    /// stack, from which the navigation is placed. Nothing above it is no pop. The match is on the
    /// visible path when the navigation is planned; one that waited for its preconditions may find
    /// it in a tab no longer selected, and is still placed there, as a push is placed on its
    /// source's stack wherever that is.
    func popUp(to number: Int, inclusive: Bool, changes: inout ChangeLog, removed: inout Removal) throws(NavError) -> Node {
        guard let match = nodes[number: number] else {
            throw NavError(.conflict, "the popUpTo screen `\(Node.id(number))` is gone (dismissed while the navigation was pending)",
                           data: ["node": .string(Node.id(number))])
        }
        let going = removalAbove(match, inclusive: inclusive)
        let modal = modalAlsoPopped(match, inclusive: inclusive)
        // Where what goes leaves its stack's top. With nothing above the match in its stack, that
        // is the match itself (once its modal goes), wherever it is: in a tab not selected too
        // (the region of removing the match, which may not be removable, would be the visible top).
        let region = going.map { Region(around: $0, in: self, goingBack: false) }
        if let going { try detach(going, flowNode: nil, changes: &changes, removed: &removed) }
        if let modal { try detach(modal, flowNode: nil, changes: &changes, removed: &removed) }
        guard let top = region.map({ $0.topScreen(in: self) }) ?? topScreen(from: NodeLink(match))?.node else {
            throw NavError(.unknownNode, "no screen is left on top after popUpTo")
        }
        return top
    }

    /// Where a removal takes effect, for the screen it leaves on top there: the visible top when what
    /// it removes is on the visible path (the usual case), else the top of what holds it and stays
    /// (a tab not selected, say). One number: nothing counted, nothing to release.
    public struct Region {
        /// The node that holds what is removed and stays (its stack or flow, or the screen whose modal
        /// goes), or -1 when what is removed is on the visible path.
        let anchor: Int

        /// The region of removing `node` (and what is above it) by the dismiss rules (`goingBack`: a
        /// dismiss, which at a tab's first screen may select another tab instead).
        public init(around node: Node, in session: Session, goingBack: Bool = true) {
            guard !session.isShown(node), let d = try? session.detachment(of: node, goingBack: goingBack) else {
                anchor = -1
                return
            }
            switch d {
            case .modal(let owner, _): anchor = owner.with { $0.number }
            case .pop(let container, _): anchor = container.with { $0.number }
            case .selectTab(let shell, _): anchor = shell.with { $0.number }
            }
        }

        /// The screen on top of the region now: after the removal, the one it left; before, the one shown there.
        public func topScreen(in session: Session) -> Node? {
            let start = anchor < 0 ? session.root : session.nodes[number: anchor] ?? session.root
            return session.topScreen(from: NodeLink(start))?.node
        }
    }

    /// Whether `node` is on the visible path (each node the child its parent shows).
    func isShown(_ node: Node) -> Bool {
        var n = NodeLink(node)
        while let parent = n.with({ $0.parentRef }) {
            guard let shown = parent.with({ $0.visibleChild }), shown === n else { return false }
            n = parent
        }
        return n.with { $0 === root }
    }

    /// Commits a validated plan on a copy: the commit and visible path it would give, with nothing changed.
    public func dryRun(_ plan: Plan) throws(NavError) -> (commit: Commit, visible: [String]) {
        let copy = Session(copying: self)
        let c = try copy.commit(plan)
        return (c, copy.visible)
    }

    /// Commits `plan` on a copy: the commit and visible path it would give (nil if it would fail).
    public func dryRunCommit(_ plan: Plan) -> (Commit?, [String]) {
        let copy = Session(copying: self)
        guard let c = try? copy.commit(plan) else { return (nil, visible) }
        return (c, copy.visible)
    }

    /// Nodes leaving the tree in one commit: their numbers (each subtree in pre-order) and the flows
    /// among them, which end.
    struct Removal {
        var numbers = NodeNumbers()
        var ended: [EndedFlow]? = nil  // nil while empty (see ``Commit``)

        mutating func append(_ other: Removal) {
            numbers.append(contentsOf: other.numbers)
            ended.append(contentsOf: other.ended)
        }
    }

    /// Drops `n` and everything below it from the index (pre-order: the node, its children, what it
    /// presents), recording them in `r`; flows among them end as cancelled, except `except` (a flow
    /// completing, which ends with its own status). Nodes that left the tree have no parent.
    func forget(_ n: Node, into r: inout Removal, except: Node? = nil) {
        r.numbers.append(n.number)
        nodes.remove(n)
        paramsBytes -= n.countedBytes
        n.parentRef = nil
        if n.kind == .flow && n !== except {
            r.ended.append(EndedFlow(id: n.id, coordinator: n.coordinator, status: .cancelled, result: nil, error: nil))
        }
        for c in n.children { forget(c, into: &r, except: except) }
        if let p = n.presented { forget(p, into: &r, except: except) }
    }
}

extension Session {
    /// A flow is shown with its start step, which admits only the clients its `access` names.
    func checkStartStepAccess(of c: Coordinator, caller: Caller) throws(NavError) {
        guard let start = graph.startStep(of: c), !start.access.isEmpty, caller.roles.isDisjoint(with: start.access) else { return }
        let held = caller.roles.isEmpty ? "none" : caller.roles.sorted().joined(separator: ", ")
        throw NavError(.accessDenied, "flow `\(c.name)` starts with `\(start.name)`, which admits only clients with role \(start.access.joined(separator: " or ")); this client holds \(held). Roles come from the policy file (--policy), by uid or by token (hello {token})",
                       data: ["to": .string(start.name), "roles": .array(start.access.map(JSONValue.string))])
    }
}
