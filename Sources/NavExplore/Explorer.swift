import JSON
import NavGraph
import NavigationCore

/// Bounds of an exploration (`navd explore --depth --max-states`).
public struct ExploreOptions: Sendable {
    /// The most steps from the root a state may be.
    public var depth: Int
    /// The most distinct trees explored; past it exploration stops and says so.
    public var maxStates: Int
    public static let maxDepthLimit = 64
    public static let maxStatesLimit = 1_000_000
    public init(depth: Int = 10, maxStates: Int = 20_000) {
        self.depth = depth
        self.maxStates = maxStates
    }
}

/// One thing a user (or a test) does: what navd is asked.
public enum Action: Sendable {
    /// `navigate {to, by, with}` from the visible top (a tab's `select` too).
    case navigate(target: Int, by: Presentation, with: JSONObject)
    /// `dismiss {}`: the visible top.
    case dismiss
    /// `flowComplete {flow, result}` or `{flow, cancelled: true}` for the innermost visible flow.
    case completeFlow(node: String, flow: Int, result: JSONValue?)
    /// `open {url}`.
    case open(link: Int, url: String)
    /// `navigate {route, with}` from the visible top.
    case route(route: Int, with: JSONObject)
}

/// A step taken: the action, how each precondition it met came out, and what that needs of the
/// world (the facts to set first, how commands and providers must answer).
public struct Step: Sendable {
    public var action: Action
    /// Preconditions met, in order, with their outcome.
    public var outcomes: [(precondition: Int, outcome: Coverage.Outcome)] = []
    /// Facts to set (`context.set`) before the step; a null removes one.
    public var facts = JSONObject()
    /// Command preconditions (by name) and whether each must pass.
    public var commands: [String: Bool] = [:]
    /// Provider preconditions (by name) and whether each must pass.
    public var providers: [String: Bool] = [:]
    /// Recovery flows it presented and completed (not something a test plan replays).
    public var recoveredBy: [Int] = []
    /// Redirect targets it followed.
    public var redirectedTo: [Int] = []
    /// Whether every precondition passed as it stood: a test can take this step with facts alone.
    public var plain: Bool { outcomes.allSatisfy { $0.outcome == .passed } && recoveredBy.isEmpty }
    /// The `opens` edge (or other move) the step took: source and target coordinators, and style.
    public var edge: (source: Int, target: Int, by: Presentation)?
    /// Coordinator of the visible top after the step.
    public var top = -1
    /// The tabs container whose `back:` a dismiss went back through (-1: the root's tabs).
    public var wentBackIn: Int?
}

/// A walk of everything a graph lets a session do, in-process on the navigation core: from the
/// root, every action the visible screen offers (its `opens` by each style it allows, tab selection,
/// dismiss, completing or cancelling its flow, and from the start every deep link), each
/// precondition's outcome taken as a choice (a `check` by the facts it reads, a command or provider
/// as passing or failing, a recovery flow as completed or cancelled, a redirect followed), breadth
/// first, bounded by depth and by a count of distinct trees. `root` navigations are not taken: every
/// coordinator allowing one could be reached by it, which would hide every real dead end.
public final class Explorer {
    public let graph: NavigationGraph
    public let options: ExploreOptions
    let caller: Caller

    /// One distinct tree met.
    struct State {
        let key: String
        let depth: Int
        /// The state it was first reached from and how (nil: the root).
        let parent: Int?
        let step: Step?
        /// The first way it was reached by plain steps only (for the test plan), if any.
        var plainParent: Int?
        var plainStep: Step?
        var plainDepth = Int.max
        /// Coordinator of the visible top.
        let top: Int
        var expanded = false
        /// Steps that led from it to another tree.
        var exits = 0
    }

    var states: [State] = []
    var index: [String: Int] = [:]
    /// Sessions of states not yet expanded (dropped once expanded).
    var sessions: [Int: Session] = [:]

    // What was met.
    var shown: Set<Int> = []
    var edges: [EdgeKey: Int] = [:]          // edge → the first state it was taken from
    /// Each source → target first taken by a plain step from a state reached by plain steps.
    var plainEdges: [Pair: (from: Int, step: Step)] = [:]
    /// Each tabs container (-1: the root's) whose `back:` a plain dismiss first went through.
    var plainTabBacks: [Int: (from: Int, step: Step)] = [:]
    /// Each precondition a plain step from a state reached by plain steps first met.
    var plainPreconditions: [Int: (from: Int, step: Step)] = [:]
    var outcomes: [Int: Set<Int>] = [:]     // precondition → outcomes (rawValue) met
    var flowTops: Set<Int> = []             // flows seen with their last step on top
    var routeResolved: [Int: Bool] = [:]
    var routeProblem: [Int: String] = [:]
    var linkProblems: [Int: String] = [:]
    var redirectLoops: [(precondition: Int, chain: [Int])] = []
    var redirectProblems: [(precondition: Int, message: String)] = []
    /// Coordinators whose `setup` schema, and flows whose `result` schema, has no sample value.
    var unsampledSetup: Set<Int> = []
    var unsampledResult: Set<Int> = []
    public private(set) var truncated = false

    struct EdgeKey: Hashable {
        let source: Int, target: Int, by: Presentation
    }
    struct Pair: Hashable {
        let source: Int, target: Int
    }

    /// Branches of one action at most (outcome combinations of its preconditions).
    static let maxResolutions = 64

    /// Setup params made for each coordinator (nil: its schema has no value navd can make).
    var samples: [Int: JSONObject?] = [:]

    public init(graph: NavigationGraph, options: ExploreOptions = ExploreOptions()) {
        self.graph = graph
        self.options = options
        caller = Caller(roles: Set(graph.coordinators.flatMap(\.access)))
    }

    /// Explores; the result is read through ``Exploration``.
    public func run() -> Exploration {
        let start = Session(name: "main", graph: graph)
        add(start, parent: nil, step: nil, depth: 0)
        var next = 0
        while next < states.count {
            let i = next
            next += 1
            guard states[i].depth < options.depth, let session = sessions.removeValue(forKey: i) else { continue }
            expand(i, session)
        }
        if states.contains(where: { !$0.expanded && $0.depth < options.depth }) { truncated = true }
        sessions.removeAll()
        return Exploration(self)
    }

    // MARK: States

    @discardableResult
    func add(_ s: Session, parent: Int?, step: Step?, depth: Int) -> Int? {
        let k = key(s)
        let plainPath = parent.map { states[$0].plainDepth != .max } ?? true
        if let known = index[k] {
            if let parent, let step, step.plain, plainPath, states[known].plainParent == nil, known != 0,
               states[parent].plainDepth + 1 < states[known].plainDepth {
                states[known].plainParent = parent
                states[known].plainStep = step
                states[known].plainDepth = states[parent].plainDepth + 1
            }
            return known
        }
        guard states.count < options.maxStates else {
            truncated = true
            return nil
        }
        s.root.forEach { n in if n.coordinator >= 0 { shown.insert(n.coordinator) } }
        let top = s.visibleTop?.coordinator ?? -1
        var st = State(key: k, depth: depth, parent: parent, step: step, top: top)
        if parent == nil {
            st.plainDepth = 0
        } else if let parent, let step, step.plain, plainPath {
            st.plainParent = parent
            st.plainStep = step
            st.plainDepth = states[parent].plainDepth + 1
        }
        states.append(st)
        index[k] = states.count - 1
        sessions[states.count - 1] = s
        noteFlowTop(s)
        return states.count - 1
    }

    /// The tree's shape as text: kinds, coordinators, selection and tab history (what `back:` goes
    /// back to); not ids nor params.
    func key(_ s: Session) -> String {
        var out = ""
        func walk(_ n: Node) {
            switch n.kind {
            case .stack: out += "["
            case .tabs: out += "T\(n.selected)" + (n.tabHistory.map { "h" + $0.map(String.init).joined(separator: ".") } ?? "") + "("
            case .screen: out += "s\(n.coordinator)"
            case .flow: out += "f\(n.coordinator)("
            }
            for c in n.children { walk(c) }
            switch n.kind {
            case .stack: out += "]"
            case .tabs, .flow: out += ")"
            case .screen: break
            }
            if let p = n.presented {
                out += "^"
                walk(p)
            }
            out += ","
        }
        walk(s.root)
        return out
    }

    func noteFlowTop(_ s: Session) {
        guard let top = s.visibleTop, let parent = top.parent, parent.kind == .flow,
              let flow = graph.coordinators[parent.coordinator].flow, flow.steps.last == top.coordinator else { return }
        flowTops.insert(parent.coordinator)
    }

    // MARK: Expanding

    func expand(_ i: Int, _ session: Session) {
        states[i].expanded = true
        let depth = states[i].depth + 1
        let key = states[i].key
        func take(_ step: Step, _ s: Session) {
            var step = step
            step.top = s.visibleTop?.coordinator ?? -1
            guard let j = add(s, parent: i, step: step, depth: depth) else { return }
            if states[j].key != key { states[i].exits += 1 }
            if let e = step.edge {
                let k = EdgeKey(source: e.source, target: e.target, by: e.by)
                if edges[k] == nil { edges[k] = i }
                let pair = Pair(source: e.source, target: e.target)
                if step.plain && states[i].plainDepth != .max && plainEdges[pair] == nil { plainEdges[pair] = (i, step) }
            }
            if step.plain && states[i].plainDepth != .max {
                if let c = step.wentBackIn, plainTabBacks[c] == nil { plainTabBacks[c] = (i, step) }
                for (p, _) in step.outcomes where plainPreconditions[p] == nil { plainPreconditions[p] = (i, step) }
            }
        }
        guard let top = session.visibleTop else { return }
        let source = graph.coordinators[top.coordinator]

        // Navigations the visible screen offers: its `opens` (a step declaring none, the next step).
        var targets = source.opens
        if source.opens.isEmpty, let flowNode = top.parent, flowNode.kind == .flow,
           let steps = graph.coordinators[flowNode.coordinator].flow?.steps,
           let at = steps.firstIndex(of: top.coordinator), at + 1 < steps.count {
            targets.append(steps[at + 1])
        }
        for t in targets {
            for by in [Presentation.push, .present, .replace] where graph.coordinators[t].allows(by) {
                navigate(session, to: t, by: by, take)
            }
        }
        // Tabs on the visible path: select each other tab.
        for (tabs, stackIndex) in tabContainers(session) {
            for (k, stack) in tabs.children.enumerated() where k != stackIndex {
                guard let first = stack.children.first else { continue }
                navigate(session, to: first.coordinator, by: .select, take)
            }
        }
        dismiss(session, take)
        completeFlows(session, take)
        if i == 0 { openLinks(session, take) }
        resolveRoutes(session, from: i)
    }

    /// Tabs nodes on the visible path, with their selected index.
    func tabContainers(_ s: Session) -> [(Node, Int)] {
        var out: [(Node, Int)] = []
        for id in s.visible {
            if let n = s.node(id), n.kind == .tabs { out.append((n, n.selected)) }
        }
        return out
    }

    func navigate(_ session: Session, to target: Int, by: Presentation, _ take: (Step, Session) -> Void) {
        guard let with = sample(target) else { return }
        let plan: Plan
        do throws(NavError) {
            plan = try session.plan(Destination(target: target), by: by, with: with, from: nil, ifVersion: nil, caller: caller)
        } catch { return }
        let top = session.visibleTop!.coordinator
        let step = Step(action: .navigate(target: target, by: by, with: with))
        var presented = Set<Int>()
        for r in resolve(plan, in: session, step: step) {
            // While a recovery flow runs, the user is in it: a tree of its own to explore.
            if let f = r.step.recoveredBy.first, presented.insert(f).inserted {
                let s = session.copy()
                if (try? s.presentForRecovery(f, caller: caller)) != nil {
                    var st = step
                    st.recoveredBy = [f]
                    take(st, s)
                }
            }
            guard let final = r.plan else { continue }
            let s = session.copy()
            do throws(NavError) { _ = try s.commit(final) } catch { continue }
            var st = r.step
            st.edge = (top, final.target, final.by)
            take(st, s)
        }
    }

    func dismiss(_ session: Session, _ take: (Step, Session) -> Void) {
        let guards: [Int]
        do throws(NavError) { guards = try session.leaveGuards(node: nil, to: nil, inclusive: false, goingBack: true).guards.preconditions } catch { return }
        var step = Step(action: .dismiss)
        // Leave guards: each passing, or the first failing (the dismiss then changes nothing).
        for p in guards {
            var failing = step
            failing.outcomes.append((p, .failed))
            guard need(graph.preconditions[p], passing: false, &failing) else { continue }
            note(failing.outcomes)
        }
        for p in guards {
            step.outcomes.append((p, .passed))
            if !need(graph.preconditions[p], passing: true, &step) { return }
        }
        note(step.outcomes)
        let s = session.copy()
        do throws(NavError) { _ = try s.dismiss(nil) } catch { return }
        step.wentBackIn = s.wentBackIn
        s.wentBackIn = nil
        take(step, s)
    }

    /// Completing (with a sample result) and cancelling the innermost flow on the visible path; a
    /// completed flow's `then` is followed as navd follows it.
    func completeFlows(_ session: Session, _ take: (Step, Session) -> Void) {
        guard let flowNode = session.visible.reversed().lazy.compactMap({ session.node($0) }).first(where: { $0.kind == .flow }) else { return }
        let f = flowNode.coordinator
        let spec = graph.coordinators[f].flow
        var results: [JSONValue?] = [nil]
        if let result = SampleValues.value(for: spec?.result) {
            results.insert(result, at: 0)
        } else {
            unsampledResult.insert(f)
        }
        for result in results {
            let s = session.copy()
            let step = Step(action: .completeFlow(node: flowNode.id, flow: f, result: result))
            // A flow first in the root stack or a tab ends as its `then` takes its place, in one commit.
            if let result, let completion = try? s.planCompletion(of: flowNode.id, result: result, then: spec?.then, caller: caller) {
                follow(completion, from: s, step, take)
                continue
            }
            do throws(NavError) { _ = try s.flowComplete(flowNode.id, result.map { .result($0) } ?? .cancelled) } catch { continue }
            guard let result, let then = spec?.then else {
                take(step, s)
                continue
            }
            let plan: Plan
            do throws(NavError) {
                plan = try s.plan(Destination(target: then.to), by: then.by, with: then.with.map { resolveResultReferences($0, in: result) },
                                  from: nil, ifVersion: nil, caller: caller, afterFlow: f)
            } catch {
                take(step, s)
                continue
            }
            follow(plan, from: s, step, take)
        }
    }

    /// Takes `plan` (a completed flow's `then`) from `s` as `step`, each way its preconditions resolve.
    private func follow(_ plan: Plan, from s: Session, _ step: Step, _ take: (Step, Session) -> Void) {
        let from = s.visibleTop?.coordinator ?? -1
        for r in resolve(plan, in: s, step: step) {
            let t = s.copy()
            if let final = r.plan { do throws(NavError) { _ = try t.commit(final) } catch { continue } }
            var st = r.step
            if let final = r.plan { st.edge = (from, final.target, final.by) }
            take(st, t)
        }
    }

    func openLinks(_ session: Session, _ take: (Step, Session) -> Void) {
        for (li, link) in graph.links.enumerated() {
            guard let urls = sampleURLs(link) else {
                linkProblems[li] = "no URL can be made for it: a parameter's field has no value navd can make"
                continue
            }
            for url in urls { open(url, of: li, session, take) }
        }
    }

    /// Opens one URL of link `li`; a URL that cannot build its stack is the link's problem (the
    /// first one found is kept).
    func open(_ url: String, of li: Int, _ session: Session, _ take: (Step, Session) -> Void) {
        func problem(_ message: String) { if linkProblems[li] == nil { linkProblems[li] = "`\(url)` cannot build its stack\(message)" } }
        let plan: Plan
        do throws(NavError) { plan = try session.planLink(url, caller: caller) } catch {
            problem(": \(error.message)")
            return
        }
        var built = false
        var failure: String?
        for r in resolve(plan, in: session, step: Step(action: .open(link: li, url: url))) {
            guard let final = r.plan else { continue }
            let s = session.copy()
            do throws(NavError) { _ = try s.commit(final) } catch {
                failure = failure ?? ": \(error.message)"
                continue
            }
            built = true
            if r.step.plain && plainLinks[li] == nil {
                var st = r.step
                st.top = s.visibleTop?.coordinator ?? -1
                plainLinks[li] = st
            }
            take(r.step, s)
        }
        if let failure { problem(failure) }
        if !built && failure == nil { problem(" whatever the facts: a precondition of its screens fails on every path") }
    }

    /// Whether each route can be navigated from this state (routes name `opens` edges and tabs the
    /// other actions already take; only whether they resolve is recorded).
    func resolveRoutes(_ session: Session, from i: Int) {
        for (ri, route) in graph.routes.enumerated() where routeResolved[ri] != true || (plainRoutes[ri] == nil && states[i].plainDepth != .max) {
            // The sample fills what the route's own `with` leaves out.
            var with = JSONObject()
            if let sample = sample(route.to)?.members { for m in sample where route.with?[m.key] == nil { with.append(m.key, m.value) } }
            let plan: Plan
            do throws(NavError) {
                plan = try session.plan(Destination(target: route.to, by: route.by, with: route.with), by: nil, with: with, from: nil, ifVersion: nil, caller: caller)
                routeResolved[ri] = true
            } catch {
                routeProblem[ri] = error.message
                continue
            }
            guard states[i].plainDepth != .max else { continue }
            for r in resolve(plan, in: session, step: Step(action: .route(route: ri, with: with))) where r.step.plain {
                guard let final = r.plan else { continue }
                let s = session.copy()
                guard (try? s.commit(final)) != nil else { continue }
                var st = r.step
                st.top = s.visibleTop?.coordinator ?? -1
                plainRoutes[ri] = (i, st)
                break
            }
        }
    }

    /// Each route first followed by a plain step from a state reached by plain steps (the plan's).
    var plainRoutes: [Int: (from: Int, step: Step)] = [:]
    /// Each deep link opened from the root by a plain step.
    var plainLinks: [Int: Step] = [:]
}
