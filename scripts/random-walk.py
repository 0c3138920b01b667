#!/usr/bin/env python3
"""Random walks through navd's socket on random graphs, each step checked by oracles that need no
model of navd: a subscriber's mirror in the full form and one in the compact form rebuilt from
``stackChanged`` alone must equal ``tree``; a ``dryRun`` of a navigation with no preconditions must
answer the node and ``visible`` of the commit that follows it; the tree keeps its shape (only
screens and flows present, no empty stack, tabs or flow); a step commits at most once; a navigation
sent again with its `key` changes nothing and gets the first reply; the URL `link.resolve` answers
for the visible screen opens (`dryRun`) the same screens, with the params a link carries. A small
model of SPEC section 4 checks `visible` against the tree, where a committed `navigate` puts its
node (push, present, replace, root, select of a root tab; from a given source; after a
`popUpTo`, from where the pop leaves the top, `from` or not; by a route; redirected by the
graph's `redirect:` or a provider's answer, by the redirect's style and with its params; after
waiting for its preconditions, from its source as it is at the commit; a `popUpTo` that waited
pops the match it found when planned, wherever it is by then, and places from the top of that
match's stack), which screen
`navigate {existing: top | pop}` keeps (by `identity`) and the params it takes, the stack
`open` and `reset {to}` build (a root tab's, or the whole tree) and the screen `open {by: push}`
pushes, what a `dismiss` removes (a node, or `to` a destination; a result merged), and where a
completed flow goes on (the `then` its navigate gave, else the declared one, from the screen left
on top where the flow was) and the params its
`with` takes from the flow's result. While the leave guard `pl` fails, no step removes a
screen that declares it; the provider is asked about a leave guard (`pp`) for a screen that
declares it, with that screen's coordinator and params, and about any other precondition for a
coordinator that shows it (in a link's stack, the screen holding it, not the link's last). With `--restarts`, navd keeps a state file and is killed
(`kill -9`) now and then: the restarted navd
serves the same tree, version and facts it acknowledged.

    scripts/random-walk.py --navd .build/debug/navd              10 random graphs x 2 walks of 300 steps
    scripts/random-walk.py --navd N --graphs 50 --seed 7 --steps 500
    scripts/random-walk.py --navd N --graph DIR                 walks on a graph of your own
    scripts/random-walk.py --navd N --restarts                  durable navd, killed every ~40 steps
    scripts/random-walk.py --navd N --cluster                   two cluster nodes on a private PostgreSQL, a subscriber on the second
    scripts/random-walk.py --navd N --cluster --restarts        one cluster node, killed and restarted under its name

A failure prints the graph's directory (kept), the seed, the step and what differed; exit status 1.
The graphs mix root stacks and root tabs (every `back:`), tab containers, flows, presentation
limits, setups and links (a tab's first screen, a presented last screen, a flow inside a link);
half of them are two modules, every name that crosses between them qualified. Navigations to a
flow sometimes give the `then` it goes on to.
"""
import argparse
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Clients", "python"))
from navd_client.mirror import TreeMirror, apply_changes, expand  # noqa: E402


class Divergence(Exception):
    pass


# What the walks did, for the summary: navigations that waited for preconditions, provider answers.
seen = {"waited": 0, "answered": 0, "recoveries": 0, "resolved": 0, "carried": 0, "placed": 0, "popped": 0, "dismissed": 0, "completed": 0, "reset": 0, "superseded": 0, "mediated": 0, "updated": 0, "reused": 0, "routed": 0, "linked": 0, "thens": 0, "merged": 0, "redirected": 0, "waited_placed": 0, "then_params": 0, "waited_popped": 0, "leave_asks": 0, "target_asks": 0, "linked_redirected": 0, "relayed": 0, "took_place": 0, "js_dismisses": 0}


class Conn:
    """One JSON-RPC connection, newline-delimited; notifications kept until taken."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.s.settimeout(30)
        self.buf = b""
        self.next_id = 0
        self.notes = []
        self.replies = {}
        # The newest stackChanged version heard; each reply notes it as `heard`, for the oracle
        # that a subscribed client hears its change before the reply.
        self.heard = 0
        self.before = {}

    def _line(self):
        while b"\n" not in self.buf:
            data = self.s.recv(65536)
            if not data:
                raise Divergence("navd closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def send(self, method, params=None):
        """Sends a request and returns its id; its reply is kept in `replies` when it comes."""
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.s.sendall((json.dumps(msg) + "\n").encode())
        return self.next_id

    def pump(self, until):
        """Reads until the reply to `until` is in; other replies are kept, notifications and navd's
        requests go to `notes`."""
        while until not in self.replies:
            r = self._line()
            if "method" in r:
                self.notes.append(r)
                if r["method"] == "stackChanged":
                    params = r["params"]  # the full form, or the compact [ref, version, …]
                    self.heard = max(self.heard, params[1] if isinstance(params, list) else params["version"])
            elif r.get("id") in self.replies:
                raise Divergence("a second reply to request %s: %s" % (r.get("id"), json.dumps(r)[:200]))
            else:
                self.replies[r.get("id")] = r
                self.before[r.get("id")] = self.heard

    def call(self, method, params=None):
        i = self.send(method, params)
        self.pump(i)
        self.before.pop(i, None)
        return self.replies.pop(i)

    def answer(self, request, result):
        self.s.sendall((json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\n").encode())

    def note(self):
        """The next notification navd sends (replies that come first are kept), awaited."""
        while not self.notes:
            r = self._line()
            if "method" in r:
                self.notes.append(r)
            else:
                self.replies[r.get("id")] = r
        return self.notes.pop(0)

    def take(self):
        """Everything navd sent before the answer to a ping sent now (it answers in order)."""
        self.call("ping")
        notes, self.notes = self.notes, []
        return notes


def random_graph(seed):
    r = random.Random(seed)
    names = ["C%d" % i for i in range(r.randint(6, 12))]
    kinds = {n: r.choice(["screen"] * 5 + ["flow", "tabs"]) for n in names}
    for n in names[:4]:
        kinds[n] = "screen"
    screens = [n for n in names if kinds[n] == "screen"]
    setups = {n: r.random() < 0.3 for n in names}
    lines = []
    if r.random() < 0.6:
        lines.append("root: {tabs: [%s], back: %s}" % (", ".join(r.sample(screens, r.randint(2, 3))),
                                                       r.choice(["none", "history", "order", "firstTab"])))
    else:
        lines.append("root: {stack: %s}" % r.choice(screens))
    lines.append("coordinators:")
    opens = {}
    ability = r.sample(names, 2) if r.random() < 0.5 else []
    styles = {}  # the presentations of those that list them
    tab_lists = {}  # the tabs of each tab container
    free = []
    for n in names:
        parts = []
        if kinds[n] == "tabs":
            tab_lists[n] = r.sample(screens, 2)
            parts.append("tabs: [%s]" % ", ".join(tab_lists[n]))
            parts.append("back: %s" % r.choice(["none", "history", "order", "firstTab"]))
        if kinds[n] == "flow":
            steps = r.sample(screens, r.randint(1, 3))
            extra = ""
            if r.random() < 0.4:
                extra += ", result: {type: object, required: [ok], properties: {ok: {type: boolean}, n: {type: integer}}}"
            if r.random() < 0.4:
                then = r.choice(screens)
                # Half the time a screen that takes `v`, from the flow's result (a generator of its
                # own: the graph's other choices stay those of the seed).
                rt = random.Random(seed * 17 + len(lines))
                takes = [c for c in screens if setups[c]]
                target = then
                if takes and rt.random() < 0.5:
                    target = rt.choice(takes)
                    then = "{to: %s, with: {v: \"$result.n\"}}" % target
                # Sometimes by a style that replaces screens (the one below the flow, or the tree),
                # when the target is known to allow it: their leave guards run first, as for any
                # navigation that replaces (a generator of its own again).
                rb = random.Random(seed * 37 + len(lines))
                by = rb.choice(["replace", "root"])
                if rb.random() < 0.3 and (target in free or by in styles.get(target, [])):
                    then = then[:-1] + ", by: %s}" % by if then.startswith("{") else "{to: %s, by: %s}" % (then, by)
                extra += ", then: %s" % then
            # Half the flows leave `start` out: the first step is then where they start (a generator
            # of its own, so that the graph's other choices stay those of the seed).
            given = "start: %s, " % steps[0] if random.Random(seed * 31 + len(lines)).random() < 0.5 else ""
            parts.append("flow: {%ssteps: [%s]%s}" % (given, ", ".join(steps), extra))
        opens[n] = r.sample(names, r.randint(0, min(5, len(names))))
        if opens[n]:
            listed = list(opens[n])
            if ability and r.random() < 0.3:
                # An ability set for what it shares, some of it listed by name too.
                listed = [o for o in listed if o not in ability or r.random() < 0.3] + ["ab"]
                opens[n] = sorted(set(opens[n]) | set(ability))
            parts.append("opens: [%s]" % ", ".join(listed))
        if r.random() < 0.2:
            styles[n] = r.sample(["push", "present", "replace", "root", "select"], r.randint(1, 3))
            parts.append("presentations: [%s]" % ", ".join(styles[n]))
        else:
            free.append(n)  # any style: a route may name it
        if setups[n]:
            parts.append("setup: {type: object, properties: {v: {type: integer}}}")

        if r.random() < 0.3:
            parts.append("preconditions: [%s]" % ", ".join(r.sample(["pa", "pd", "pp", "pq", "pc", "pc", "pt"], r.randint(1, 2))))
        if r.random() < 0.1:
            parts.append("leave: [%s]" % r.choice(["pl", "pl", "pp", "pl, pp"]))
        if r.random() < 0.12:
            parts.append("access: [staff]")  # a role the walk's clients never hold
        lines.append("  %s: {%s}" % (n, ", ".join(parts)))
    # `v` filled from the screen navigated from, when `with` lacks it: for a screen whose every
    # source (what lists it in `opens`, a flow step before it) declares `v` too (navd check says so).
    rm = random.Random(seed * 7 + 1)
    for n in names:
        sources = [o for o in names if n in opens[o]]
        if kinds[n] == "screen" and setups[n] and all(setups[o] for o in sources) and rm.random() < 0.5:
            i = next(k for k, line in enumerate(lines) if line.startswith("  %s: {" % n))
            lines[i] = lines[i][:-1] + ', mediation: {v: "$source.v"}}'
    # Some screens with a setup tell their screens apart by `v` (`identity`, React Navigation's
    # `getId`), for `navigate {existing}`.
    ri = random.Random(seed * 11 + 3)
    for n in names:
        if kinds[n] == "screen" and setups[n] and ri.random() < 0.4:
            i = next(k for k, line in enumerate(lines) if line.startswith("  %s: {" % n))
            lines[i] = lines[i][:-1] + ", identity: [v]}"
    # Preconditions: a fact checked at once, one recovered by a flow that sets the fact, one the
    # walk's provider answers later (or never), and a leave guard.
    lines.append("  R1: {}")
    lines.append("  RF: {flow: {start: R1, steps: [R1]}}")
    lines.append("preconditions:")
    redirect = ""
    if r.random() < 0.3:
        # Sometimes by a style that replaces screens: their leave guards run first.
        to = r.choice(screens)
        by = r.choice([None, None, "root", "replace", "present"])
        by = by if by and by in styles.get(to, [by]) else None
        # With params for a target that takes `v`, sometimes (a generator of its own: the graph's
        # other choices stay those of the seed).
        given = ", with: {v: 1}" if setups[to] and random.Random(seed * 13 + 5).random() < 0.6 else ""
        redirect = ", redirect: {to: %s%s%s}" % (to, ", by: %s" % by if by else "", given)
    root_tabs = lines[0][len("root: {tabs: ["):].split("]")[0].split(", ") if lines[0].startswith("root: {tabs") else []
    if root_tabs and random.Random(seed * 17 + 3).random() < 0.2:
        # To select a root tab (a generator of its own, as above): in a link, that tab is selected.
        tab = random.Random(seed * 17 + 4).choice(root_tabs)
        if "select" in styles.get(tab, ["select"]):
            redirect = ", redirect: {to: %s, by: select}" % tab
    lines.append("  pa: {check: {fact: a, notEquals: 1}%s}" % redirect)
    lines.append("  pd: {check: {fact: d, exists: true}, recover: {flow: RF, facts: {d: true}}}")
    lines.append("  pp: {provider: true, timeout: 60s}")
    lines.append("  pq: {provider: true, timeout: 60s, recover: {provider: app.pq}}")
    lines.append("  pl: {check: {fact: a, notEquals: 2}}")
    # Commands, real child processes: one that fails for `v` 3, one past its timeout (killed).
    lines.append('  pc: {command: [test, "{with.v}", "!=", "3"]%s}' % (", recover: {command: [true]}" if r.random() < 0.3 else ""))
    lines.append("  pt: {command: [sleep, \"5\"], timeout: 10ms}")
    # Links whose screens open one another by a style they allow (navd check refuses others): a
    # first screen and a screen it opens, pushed or presented, with `v` from the URL where the
    # setup takes it.
    links = []
    tabs = lines[0][len("root: {tabs: ["):].split("]")[0].split(", ") if lines[0].startswith("root: {tabs") else []
    for i in range(r.randint(0, 3)):
        first = r.choice(tabs) if tabs and r.random() < 0.7 else r.choice(screens)
        nxt = [o for o in opens[first] if kinds[o] == "screen"]
        if not nxt:
            continue
        second = r.choice(nxt)
        entry = {"to": second}
        shown = [b for b in ["push", "present"] if b in styles.get(second, ["push", "present"])]
        if not shown:
            continue  # navd check refuses a link showing a screen by a style it does not allow
        by = "present" if r.random() < 0.4 and "present" in shown else shown[0]
        if by != "push":
            entry["by"] = by
        pattern = "/l%d" % i
        if setups[second]:
            pattern += r.choice(["/:v", "/:v?", "?v=:v"])  # required, optional (absent: no v), or a query value
            entry["with"] = {"v": ":v"}
        links.append('  "%s": [%s, %s]' % (pattern, first, json.dumps(entry)))
    # A link into a tab of a tab container a screen opens: it selects that tab (a generator of its
    # own: the graph's other choices stay those of the seed).
    rl = random.Random(seed * 31 + 7)
    starts = [f for f in tabs + screens if any(kinds[o] == "tabs" for o in opens[f])]
    if starts and rl.random() < 0.7:
        first = rl.choice(starts)
        shell = rl.choice([o for o in opens[first] if kinds[o] == "tabs"])
        tab = rl.choice(tab_lists[shell])
        if "select" in styles.get(tab, ["select"]) and "push" in styles.get(shell, ["push"]):
            entry, pattern = {"to": tab}, "/t"
            if setups[tab]:
                pattern += rl.choice(["/:v", "?v=:v"])
                entry["with"] = {"v": ":v"}
            links.append('  "%s": [%s, %s, %s]' % (pattern, first, shell, json.dumps(entry)))
    if ability:
        lines.append("abilities: {ab: [%s]}" % ", ".join(ability))
    if links:
        lines.append("links:")
        lines += links
    # Routes to coordinators any style shows; a guard of the whole graph, now and then.
    routes = [n for n in free if kinds[n] != "tabs"][:2]
    if routes:
        lines.append("routes:")
        lines += ["  r%d: {to: %s%s}" % (i, n, ", with: {v: 2}" if setups[n] and r.random() < 0.5 else "") for i, n in enumerate(routes)]
    if r.random() < 0.25:
        lines.append("guards:")
        lines.append("  - {precondition: pa, except: [%s]}" % r.choice(names))
    return "\n".join(lines) + "\n"


# The coordinators a second module declares, when a graph is split in two (`module_files`).
FEAT = ("C5", "C7", "C9", "C11")


def module_files(text, split):
    """A graph's text as module files (GRAPH.md): `app.yaml` alone, or with `split`, the
    coordinators of FEAT declared by a second module, `feat.yaml` (but a flow and its steps in
    one module), and every name that crosses the boundary qualified (`feat.C5` in app, `app.C2`,
    `app.pa`, `app.ab` in feat)."""
    if not split:
        return {"app.yaml": text, "feat.yaml": None}
    # A flow's steps are declared in its own module (navd check): a flow and its steps stay together.
    steps = {m.group(1): m.group(2).split(", ") for m in re.finditer(r"^  (C\d+): \{.*flow: \{(?:start: \w+, )?steps: \[([^\]]*)\]", text, re.M)}
    moved = set(FEAT)
    while True:
        kept = {f for f, ss in steps.items() if f in moved and not set(ss) <= moved}
        kept |= {c for f, ss in steps.items() if f not in moved for c in ss if c in moved}
        if not kept:
            break
        moved -= kept
    app, feat, section = [], [], None
    for line in text.splitlines():
        if not line.startswith(" "):
            section = line.split(":")[0]
        m = re.match(r"  (C\d+): \{", line)
        (feat if section == "coordinators" and m and m.group(1) in moved else app).append(line)
    if not moved:
        return {"app.yaml": text, "feat.yaml": None}
    theirs = re.compile(r"\b(%s)\b" % "|".join(sorted(moved)))
    ours = re.compile(r"\b(C\d+|R1|RF|pa|pd|pp|pq|pl|pc|pt|ab)\b")
    app = [theirs.sub(r"feat.\1", line) for line in app]
    feat = [ours.sub(lambda m: m.group(1) if m.group(1) in moved else "app." + m.group(1), line) for line in feat]
    return {"app.yaml": "\n".join(app) + "\n", "feat.yaml": "coordinators:\n" + "\n".join(feat) + "\n" if feat else None}


def write_graph(graph_dir, files):
    """Writes a graph's module files (`module_files`), removing a module the graph no longer has."""
    for name, text in files.items():
        path = os.path.join(graph_dir, name)
        if text is None:
            if os.path.exists(path):
                os.remove(path)
        else:
            with open(path, "w") as f:
                f.write(text)


def read_graph(graph_dir):
    return {name: (open(os.path.join(graph_dir, name)).read() if os.path.exists(os.path.join(graph_dir, name)) else None)
            for name in ("app.yaml", "feat.yaml")}


def nodes(root):
    out, todo = [], [root]
    while todo:
        n = todo.pop()
        out.append(n)
        if "presented" in n:
            todo.append(n["presented"])
        todo.extend(n.get("children", []))
    return out


def qualified(name):
    """A name a link entry gives, as graph.describe names coordinators."""
    return name if "." in name else "app." + name


def link_chain(tree, from_container=False):
    """The coordinators a link would list for the visible screen (PROTOCOL.md, link.resolve); None
    when the path goes through a tab container (`from_container`: the container, then the screens
    of its selected tab, as a link that selects that tab lists them, which link.resolve lists)."""
    chain = chain_nodes(tree, from_container)
    return None if chain is None else [n.get("coordinator") for n in chain]


def carries(entries, chain, pattern="", described=None):
    """Whether a link's entries give every param the chain's screens hold, from the URL or as the
    constant they hold (the walk's graphs mediate nothing); the last screen's other params go as
    query values of their own name (PROTOCOL.md, link.resolve) when its setup declares them, the
    pattern's query names none of them, and the value reads back as it is."""
    query_keys = {kv.split("=")[0] for kv in pattern.split("?", 1)[1].split("&")} if "?" in pattern else set()
    for i, (e, n) in enumerate(zip(entries, chain)):
        given = e.get("with", {}) if isinstance(e, dict) else {}
        last = i == len(chain) - 1 and len(entries) == len(chain)
        for k, v in n.get("params", {}).items():
            if k in given and (isinstance(given[k], str) and given[k].startswith(":") or given[k] == v):
                continue
            if k not in given and last and k not in query_keys and reads_back(described, n.get("coordinator"), k, v):
                continue
            return False
    return True


def reads_back(described, coordinator, field, value):
    """Whether `value`, as the text of a query value, is read back by `open` as it is for the field of
    the coordinator's setup (PROTOCOL.md, open: typed by the setup)."""
    prop = (((((described or {}).get("coordinators") or {}).get(coordinator) or {}).get("setup") or {}).get("properties") or {}).get(field)
    if prop is None:
        return False
    types = prop.get("type")
    types = [types] if isinstance(types, str) else (types or [])
    if "string" in types:
        return isinstance(value, str)
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, int):
        return "integer" in types or "number" in types
    return False


def chain_nodes(tree, from_container=False):
    """The nodes of `link_chain`."""
    by_id = {n["id"]: n for n in nodes(tree["root"])}
    path = tree["visible"]
    chain = []
    for here, below in zip(path, path[1:]):
        n = by_id[here]
        if n["kind"] == "tabs" and n.get("coordinator") and not from_container:
            return None
        if n["kind"] == "stack":
            for c in n["children"]:
                chain.append(c)
                if c["id"] == below:
                    break
        if n["kind"] == "flow":
            for c in n["children"][1:]:
                chain.append(c)
                if c["id"] == below:
                    break
    return chain


def parents_of(root):
    """Each node's id -> the node holding it (among its children, or presented by it)."""
    parents = {}
    for n in nodes(root):
        for c in n.get("children", []):
            parents[c["id"]] = n
        if "presented" in n:
            parents[n["presented"]["id"]] = n
    return parents


def placed(tree, node_id, by, target, described):
    """The tree SPEC section 4 says a navigation `by` a style from the visible top makes, the new
    node (`node_id`, whose subtree is taken from `tree`) put where the style puts it; None when the
    case is not one this model covers."""
    before = json.loads(json.dumps(tree["before"]))
    top = tree.get("from") or tree["before_visible"][-1]
    parents = parents_of(before)
    source = next((n for n in nodes(before) if n["id"] == top), None)
    parent = parents.get(top)
    made = next((n for n in nodes(tree["after"]) if n["id"] == node_id), None)
    if source is None or made is None or parent is None or parent.get("presented", {}).get("id") == top:
        return None
    made = json.loads(json.dumps(made))
    steps = described["coordinators"].get(parent.get("coordinator"), {}).get("flow", {}).get("steps", []) if parent["kind"] == "flow" else None
    if by == "push":
        if parent["kind"] == "stack":
            parent["children"].append(made)
        elif parent["kind"] == "flow" and target in steps:
            parent["children"].append(made)
        elif parent["kind"] == "flow" and parents.get(parent["id"], {}).get("kind") == "stack":
            parents[parent["id"]]["children"].append(made)
        else:
            return None
    elif by == "present":
        if "presented" in source:
            return None
        stack = next((n for n in nodes(tree["after"]) if n.get("kind") == "stack" and n.get("children", [{}])[0].get("id") == node_id), None)
        if stack is None:
            return None
        source["presented"] = {"id": stack["id"], "kind": "stack", "children": [made]}
    elif by == "replace":
        if parent["kind"] == "flow" and target not in steps:
            return None
        i = [c["id"] for c in parent["children"]].index(top)
        parent["children"][i:] = [made]
    elif by == "root":
        if tree["after"]["kind"] != "stack":
            return None
        return {"id": tree["after"]["id"], "kind": "stack", "children": [made]}
    elif by == "select":
        # The root's declared tab of the target is selected; with `with`, its first screen takes
        # those params (a tab's history aside: `back` decides it).
        # (A tab container on the visible path that lists the target, innermost first; else the
        # root's tabs. The tree after: its tabs node of the same id.)
        by_id = {n["id"]: n for n in nodes(before)}
        shell = next((by_id[i] for i in reversed(visible_path(before)) if by_id[i]["kind"] == "tabs" and "coordinator" in by_id[i]
                      and target in (described["coordinators"].get(by_id[i]["coordinator"], {}).get("tabs") or [])), None)
        tabs = described["coordinators"][shell["coordinator"]]["tabs"] if shell else described["root"].get("tabs") or []
        shell = shell or (before if before["kind"] == "tabs" and "coordinator" not in before else None)
        shown = next((n for n in nodes(tree["after"]) if shell and n["id"] == shell["id"]), None)
        if shell is None or target not in tabs or shown is None:
            return None
        i = tabs.index(target)
        shell["selected"] = i
        first = shell["children"][i]["children"][0]
        if first["id"] != node_id:
            return {"node": first["id"]}  # (never the tree: the node named is not the tab's first screen)
        if "with" in tree:
            # (its earlier params kept, as `update` keeps them; with `merge`, `with` merged into its own)
            first["params"] = {k: v for k, v in dict(first.get("params", {}), **tree["with"]).items() if v is not None} \
                if tree.get("merge") else tree["with"]
        shell.pop("history", None)
        if "history" in shown:
            shell["history"] = shown["history"]
        return before
    else:
        return None
    return before


def mediated(given, target, source, described):
    """The params a navigation gives `target`: `with`, and the fields its mediation copies from the
    `source` node's params where `with` lacks them; and how many it copied."""
    params, filled = dict(given), 0
    for field, path in (described["coordinators"][target].get("mediation") or {}).items():
        if field not in params and path.startswith("$source.") and path[8:] in (source.get("params") or {}):
            params[field] = source["params"][path[8:]]
            filled += 1
    return params, filled


def from_result(values, result):
    """`with` values `"$result"` and `"$result.a.b"` replaced by that part of a flow's result, each
    value read once (a path the result lacks leaves the field out), as GRAPH.md says."""
    out = {}
    for k, v in (values or {}).items():
        if isinstance(v, str) and (v == "$result" or v.startswith("$result.")):
            cur, found = result, True
            for part in v.split(".")[1:]:
                found = found and isinstance(cur, dict) and part in cur
                cur = cur[part] if found else None
            if found:
                out[k] = cur
        else:
            out[k] = v
    return out


def reused(before, source_id, target, params, given, merge, existing, described):
    """`navigate {existing: top | pop}` as PROTOCOL.md says: in the stack the push would go into
    (the source's, or the one around its flow when the target is not one of its steps), the
    screen of the target on top (`top`) or the nearest one from the top (`pop`) stays, what is
    above it goes, and it takes the navigation's params (`with` merged into its own with `merge`,
    a null removing a field). With an `identity`, a screen is the same one only when its params
    agree with those on each identity field, unless `with` gives none of them. Answers the tree
    and the screen kept; None: no such screen (the navigation is a push), or a case left to the
    mirrors."""
    root = json.loads(json.dumps(before))
    parents = parents_of(root)
    container = parents.get(source_id)
    source = next((n for n in nodes(root) if n["id"] == source_id), None)
    if source is None or container is None or source["kind"] not in ("screen", "flow") or container.get("presented", {}).get("id") == source_id:
        return None
    steps = described["coordinators"].get(container.get("coordinator"), {}).get("flow", {}).get("steps", [])
    if container["kind"] == "flow" and target not in steps:
        container = parents.get(container["id"])
    if container is None or container["kind"] not in ("stack", "flow"):
        return None
    identity = described["coordinators"][target].get("identity") or []
    by_name = all(given.get(f) is None for f in identity)
    candidates = container["children"][-1:] if existing == "top" else container["children"]
    for n in reversed(candidates):
        if n["kind"] != "screen" or n.get("coordinator") != target:
            continue
        kept = {k: v for k, v in dict(n.get("params", {}), **given).items() if v is not None} if merge else params
        if not by_name and any(n.get("params", {}).get(f) != kept.get(f) for f in identity):
            continue
        i = container["children"].index(n)
        container["children"][i + 1:] = []
        n.pop("presented", None)
        n["params"] = kept
        return root, n["id"]
    return None


def built_as_link(before, after, steps, described):
    """What differs between the tree after `open {url}` (without `by`) or `reset {to}` and the one
    PROTOCOL.md (section open) says they build; None when they agree, False for a case this model
    leaves to the mirrors (a tab container among the screens). `steps`: (coordinator, with or None) bottom first. When the first
    screen starts a root tab, that tab is selected and its stack rebuilt on it, the other tabs
    untouched; otherwise the tree becomes a new stack. The screens are the steps, in order, with
    nothing else beside them; those after the first are new; each takes its `with` and the fields
    its mediation copies from the screen below it."""
    chain = chain_nodes({"root": after, "visible": visible_path(after)})
    if chain is None or any(described["coordinators"].get(c, {}).get("kind") == "tabs" for c, _ in steps):
        return False
    if [n.get("coordinator") for n in chain] != [c for c, _ in steps]:
        return "its screens are %s, not %s" % ([n.get("coordinator") for n in chain], [c for c, _ in steps])
    tabs = described["root"].get("tabs")
    if before["kind"] == "tabs" and "coordinator" not in before and tabs and steps[0][0] in tabs:
        i = tabs.index(steps[0][0])
        if after["kind"] != "tabs" or after["id"] != before["id"] or after["selected"] != i:
            return "the root's tab %d is not the one selected" % i
        for j, (b, a) in enumerate(zip(before["children"], after["children"])):
            if j != i and b != a:
                return "tab %d changed" % j
        built = after["children"][i]
        if built["id"] != before["children"][i]["id"]:
            return "tab %d is a new stack" % i
    elif after["kind"] != "stack":
        return "the root is a %s, not a stack" % after["kind"]
    else:
        built = after
    shown = {n["id"] for n in chain}
    for parent in nodes(built):
        for k, c in enumerate(parent.get("children", [])):
            if c["kind"] in ("screen", "flow") and c["id"] not in shown and not (parent["kind"] == "flow" and k == 0):
                return "%s %s (%s) is beside the link's screens" % (c["kind"], c["id"], c.get("coordinator"))
    before_ids = {n["id"] for n in nodes(before)}
    for n in chain[1:]:
        if n["id"] in before_ids:
            return "%s is not new" % n["id"]
    for k, (n, (c, given)) in enumerate(zip(chain, steps)):
        if given is None or n["kind"] != "screen" or (k == 0 and not given):
            continue
        below = chain[k - 1] if k > 0 else None
        if below is not None and below["kind"] != "screen" and described["coordinators"][c].get("mediation"):
            continue  # (mediated from a flow: left to the mirrors)
        params, _ = mediated(given, c, below or {}, described)
        if n.get("params", {}) != params:
            return "%s (%s) holds %s, not %s" % (n["id"], c, json.dumps(n.get("params")), json.dumps(params))
    return None


def dismissed(before, node_id, described=None):
    """The tree SPEC section 4 says `dismiss` of `node_id` leaves: the node and what is above it in
    its stack go; the first child of a presented stack takes the modal with it; a flow's first step
    takes the flow (abandoned). None when the case is not one this model covers (a stack's first
    screen that no dismissal removes, a tab's, a stack node)."""
    root = json.loads(json.dumps(before))
    parents = parents_of(root)
    target = node_id
    while True:
        node = next((n for n in nodes(root) if n["id"] == target), None)
        parent = parents.get(target)
        if node is None or parent is None or node["kind"] not in ("screen", "flow", "tabs") or "paramsHistory" in node:
            return None  # (a screen with earlier params gets them back: `update {push}`)
        i = [c["id"] for c in parent["children"]].index(target)
        if parent["kind"] == "flow" and i == 0:
            target = parent["id"]  # the flow's first step: the flow goes
            continue
        if i > 0:
            parent["children"][i:] = []
            return root
        holder = parents.get(parent["id"])
        if holder is not None and holder.get("presented", {}).get("id") == parent["id"]:
            del holder["presented"]  # a presented stack's first child: the modal goes
            return root
        if holder is not None and holder["kind"] == "tabs" and "coordinator" in holder and not (described or {}).get("coordinators", {}).get(holder["coordinator"], {}).get("back"):
            target = holder["id"]  # a container's tab's first screen: the container goes (no `back:`)
            continue
        return None


def left_on_top(before, after, node_id):
    """The screen a removal of `node_id` (and what is above it) leaves on top where it was, as
    PROTOCOL.md says for `dismiss {result, merge}`: the visible top when the node is on the visible
    path; else the top of its nearest ancestor still in the tree (a tab not selected, say)."""
    if node_id in visible_path(before):
        return visible_path(after)[-1]
    parents, chain, n = parents_of(before), [], node_id
    while n in parents:
        n = parents[n]["id"]
        chain.append(n)
    by_id = {m["id"]: m for m in nodes(after)}
    return visible_path(by_id[next(i for i in chain if i in by_id)])[-1]


def without_recovery_flows(tree):
    """`tree` (a tree result) as a restarted navd serves it: the recovery flows the last run
    presented (`recovery: true`, the first child of the stack presented for each) closed, each
    with its modal and in a commit of its own (one inside another goes with it)."""
    tree = json.loads(json.dumps(tree))
    closed = 0

    def walk(n):
        nonlocal closed
        p = n.get("presented")
        if p and p.get("children") and p["children"][0].get("recovery"):
            del n["presented"]
            closed += 1
        elif p:
            walk(p)
        for c in n.get("children", []):
            walk(c)

    walk(tree["root"])
    if closed:
        tree["version"] += closed
        tree["visible"] = visible_path(tree["root"])
    return tree

def unnamed_style(described, to):
    """The style of a navigation that names none (PROTOCOL.md, navigate): push, or when the target's
    presentations leave push out, the first they list of present, replace, root, select."""
    allowed = ((described.get("coordinators") or {}).get(to) or {}).get("presentations")
    if not allowed or "push" in allowed:
        return "push"
    return next(b for b in ["present", "replace", "root", "select"] if b in allowed)

def visible_path(root):
    """The ids SPEC section 4 calls `visible`: through the selected tab, the top of each stack, into
    a flow's top step and into whatever a screen or flow presents."""
    path, n = [], root
    while True:
        path.append(n["id"])
        if n["kind"] in ("screen", "flow") and "presented" in n:
            n = n["presented"]
        elif n["kind"] == "tabs":
            n = n["children"][n["selected"]]
        elif n["kind"] in ("stack", "flow"):
            n = n["children"][-1]
        else:
            return path


def pop_match(root, to):
    """The id of the screen `dismiss {to}` and `popUpTo` match on the visible path of `root` (the
    nearest from the top), or None."""
    by_id = {n["id"]: n for n in nodes(root)}
    for c in reversed([by_id[i] for i in visible_path(root) if by_id[i]["kind"] in ("stack", "flow")]):
        for m in reversed(c["children"]):
            if m["id"] == to or m.get("coordinator") == to:
                return m["id"] if m["kind"] == "screen" else None
    return None


def popped_at(before, match_id, inclusive, described):
    """A `popUpTo` whose match `match_id` was found when the navigation was planned, popped at its
    commit wherever the match is now (a tab no longer selected too), as PROTOCOL.md says: the tree
    after the pop, and the screen the pop leaves on top of the match's stack (from which the
    target is placed). None: the match is gone, or a case `dismissed` leaves to the mirrors."""
    root = json.loads(json.dumps(before))
    parents = parents_of(root)
    if match_id not in parents:
        return None
    chain, n = [], (match_id if not inclusive else parents[match_id]["id"])
    while n is not None:
        chain.append(n)
        n = parents[n]["id"] if n in parents else None
    if inclusive:
        root = dismissed(root, match_id, described)
        if root is None:
            return None
    else:
        holder = parents[match_id]
        i = [c["id"] for c in holder["children"]].index(match_id)
        holder["children"][i + 1:] = []
        next(m for m in holder["children"] if m["id"] == match_id).pop("presented", None)
    by_id = {n["id"]: n for n in nodes(root)}
    n, top = by_id[next(i for i in chain if i in by_id)], None
    while True:
        if n["kind"] == "screen":
            top = n["id"]
        if n["kind"] in ("screen", "flow") and "presented" in n:
            n = n["presented"]
        elif n["kind"] == "tabs":
            n = n["children"][n["selected"]]
        elif n["kind"] in ("stack", "flow") and n["children"]:
            n = n["children"][-1]
        else:
            return root, top


def popped_to(before, to, inclusive, described):
    """`dismiss {to, inclusive}` as PROTOCOL.md says: `to` (a node id, or a coordinator shown) is
    matched against the screens and flows in the stacks (and flows) of the visible path, from the
    top of the innermost down to the root stack; the nearest match stays and everything above it
    goes (it too when `inclusive`). None: no match, or a case this model leaves to the mirrors (a
    flow matched, a stack's first screen that only a tab's `back` could leave)."""
    root = json.loads(json.dumps(before))
    by_id = {n["id"]: n for n in nodes(root)}
    containers = [by_id[i] for i in visible_path(root) if by_id[i]["kind"] in ("stack", "flow")]
    for c in reversed(containers):
        for i in reversed(range(len(c["children"]))):
            m = c["children"][i]
            if m["id"] != to and m.get("coordinator") != to:
                continue
            if m["kind"] != "screen":
                return None
            if inclusive:
                return dismissed(root, m["id"], described)
            c["children"][i + 1:] = []
            m.pop("presented", None)
            return root
    return None


# The notifications of a session besides stackChanged that a cluster relays to other nodes.
RELAYED = ("navigationPending", "navigationEnded", "flowCompleted", "screenResult")


def walk(server, seed, steps, restarts=False, regraph=None, transcript=None):
    rnd = random.Random(seed)
    session = "walk%d" % seed

    def connect():
        # (In a cluster, the compact subscriber is on the second node: it hears the first one's
        # commits through PostgreSQL.)
        driver, full, compact = Conn(server.sock), Conn(server.sock), Conn((server.second or server).sock)
        # The driver is subscribed too: it hears each change it causes before the reply.
        driver.heard = driver.call("subscribe", {"session": session, "notifications": "compact"})["result"]["version"]
        subscribed = compact.call("subscribe", {"session": session, "notifications": "compact"})
        if "result" not in subscribed:
            raise Divergence("subscribe on %s answered %s; roots %s / %s" % (compact.s.getpeername(), json.dumps(subscribed)[:400], Conn(server.sock).call("graph.describe")["result"]["root"], compact.call("graph.describe")["result"]["root"]))
        snapshot = subscribed["result"]
        if transcript is not None:
            transcript.append({"snapshot": json.loads(json.dumps(snapshot)), "steps": []})  # the mirror changes its own
        full_snapshot = full.call("subscribe", {"session": session})["result"]
        mirrors = [("full", full, TreeMirror(full_snapshot)),
                   ("compact", compact, TreeMirror(snapshot))]
        provider = Conn(server.sock)
        provider.call("provide", {"preconditions": ["app.pp", "app.pq"]})
        for side in relayed.values():
            side.clear()
        relayed_counted[0] = 0
        if server.second:
            # What waits on the first node is in its subscriber's answer (`pending`); the second
            # node's subscriber hears it announced again, after its snapshot (CLUSTER.md).
            relayed["here"].extend(("navigationPending", p) for p in full_snapshot.get("pending", []))
        # Another session, changed now and then, whose compact mirror must follow reloads too.
        watcher = Conn(server.sock)
        bystanders[:] = [(watcher, TreeMirror(watcher.call("subscribe", {"session": bystander, "notifications": "compact"})["result"]))]
        return driver, mirrors, provider

    bystander, bystanders = session + "b", []
    # In a cluster: the notifications other than stackChanged that the full subscriber heard on
    # the first node ("here") and the compact one on the second ("there"), since they subscribed.
    relayed, relayed_counted = {"here": [], "there": []}, [0]
    for name in (session, bystander):
        Conn(server.sock).call("session.open", {"name": name})
    driver, mirrors, provider = connect()
    described = driver.call("graph.describe")["result"]
    keyed = {}  # key -> (params, reply) of navigations sent with a key
    pending = {}  # request id -> what it was, for navigations not answered yet
    sources = {}  # request id -> the source node of a navigate that waited
    waited = {}  # request id -> (params, source node as it was then) of a navigate that waited
    matches = {}  # request id -> the screen its popUpTo matched when it was planned
    answered = []  # (request id, reply) of the navigations that waited, answered in this step
    redirects = {}  # navigation id -> the redirects the provider answered for it, in order
    asks = []  # precondition.evaluate and .recover requests the provider has not answered
    navigations = set()  # navigation ids heard in navigationPending
    thens = {}  # flow node id -> the `then` the navigate that made it gave
    then_requests = {}  # request id -> the `then` of a navigate that waited
    coords = sorted(described["coordinators"])
    urls = list(described.get("links") or {})
    commits = 0

    def settle(where):
        """Replies to pending navigations and the provider's new requests, after a barrier on each,
        once no command precondition runs (each ends by itself, or at its timeout)."""
        collect(where)
        if pending:
            # Only a navigation still waiting can be running a command. navd starts a queued
            # command after the loop iteration's reads, so "none runs" is read twice, in two
            # iterations: a command queued by the first iteration's work runs by the second's.
            idle = 0
            for _ in range(20000):
                idle = idle + 1 if not driver.call("stats")["result"]["children"] else 0
                if idle == 2:
                    break
                if not idle:
                    time.sleep(0.001)
            else:
                raise Divergence("a command precondition still runs 20 s after %s" % where)
            collect(where)

    def collect(where):
        provider.call("ping")
        new = [n for n in provider.notes if n.get("method") in ("precondition.evaluate", "precondition.recover")]
        asks.extend(new)
        provider.notes = []
        leave_asks(new, where)
        driver.call("ping")
        for note in driver.notes:
            if note.get("method") == "navigationPending":
                navigations.add(note["params"]["navigation"])
        driver.notes = []
        for i in [i for i in pending if i in driver.replies]:
            r = driver.replies.pop(i)
            if r.get("error", {}).get("data", {}).get("kind") == "internalError":
                raise Divergence("internal error for %s at %s" % (pending[i], where))
            if "other session" not in pending[i]:
                heard_first(i, r, pending[i])
            del pending[i]
            if i in waited:
                answered.append((i, r))
            if i in then_requests and "node" in r.get("result", {}):
                thens[r["result"]["node"]] = then_requests.pop(i)

    def leave_asks(new, where):
        """A leave guard is asked about one screen that declares it, as the tree holds that screen
        (its coordinator, its params) when the guard's turn comes: the ask is sent when the guard
        before it passed, or when the request came, both in the step just made. Any other
        precondition is asked about a coordinator that shows it (its own, or its flow's start step's)."""
        for ask in new:
            nav, name = ask["params"]["navigation"], ask["params"]["precondition"]
            if "leaving" in nav or ask["params"]["session"] != session:
                continue
            c = described["coordinators"].get(nav.get("to"), {})
            start = described["coordinators"].get((c.get("flow") or {}).get("start"), {})
            if name not in (c.get("preconditions") or []) + (start.get("preconditions") or []):
                raise Divergence("%s was asked about %s, which does not show it, at %s" % (name, json.dumps(nav)[:300], where))
            seen["target_asks"] += 1
        mine = [n for n in new if "leaving" in n["params"]["navigation"] and n["params"]["session"] == session]
        if not mine:
            return
        held = {n["id"]: n for n in nodes(driver.call("tree", {"session": session})["result"]["root"])}
        for ask in mine:
            nav = ask["params"]["navigation"]
            node = held.get(nav["leaving"])
            if node is None:
                continue  # gone since (a burst's later request): nothing to compare
            leave = described["coordinators"].get(node.get("coordinator"), {}).get("leave") or []
            # A dismiss later in a burst may have given the screen its earlier params back since the
            # ask (its paramsHistory): its params are then not those the guard was asked about.
            restored = "(burst)" in where and '["dismiss"' in where and node.get("paramsHistory") is not None
            if nav.get("coordinator") != node.get("coordinator") or ask["params"]["precondition"] not in leave \
                    or (nav.get("with", {}) != node.get("params", {}) and not restored):
                raise Divergence("the leave guard %s was asked about %s (%s, with %s), which the tree holds as %s, at %s"
                                 % (ask["params"]["precondition"], nav["leaving"], nav.get("coordinator"), json.dumps(nav.get("with")),
                                    json.dumps(node)[:300], where))
            seen["leave_asks"] += 1

    def heard_first(i, reply, what):
        """A subscribed client that caused a change hears its stackChanged before the reply."""
        version = reply.get("result", {}).get("version") if isinstance(reply.get("result"), dict) else None
        heard = driver.before.pop(i, 0)
        if version is not None and heard < version:
            raise Divergence("the reply to %s (version %d) came before its stackChanged (heard up to %d)" % (what, version, heard))

    full_notes = []  # what the full-form subscriber heard in the last step

    def check_mirrors(after, where):
        """Each mirror brought up to date against `after`; returns the full form's stackChanged params by version."""
        heard = {}
        full_notes.clear()
        for form, conn, mirror in mirrors:
            notes = conn.take()
            if server.second and form == "compact":
                # The second node relays the commits after PostgreSQL has them: they are awaited.
                applied = mirror.version + sum(1 for n in notes if n.get("method") == "stackChanged")
                while applied < after["version"]:
                    notes.append(conn.note())
                    if notes[-1].get("method") == "stackChanged":
                        params = notes[-1]["params"]
                        applied = params[1] if isinstance(params, list) else params["version"]
            if form == "full":
                full_notes.extend(notes)
            if form == "compact" and transcript is not None:
                transcript[-1]["steps"].append({"stackChanged": json.loads(json.dumps([n["params"] for n in notes if n.get("method") == "stackChanged"])),
                                                "tree": {k: after[k] for k in ("version", "root", "visible")}, "where": where})
            if server.second:
                relayed["here" if form == "full" else "there"].extend(
                    (n["method"], n["params"]) for n in notes if n.get("method") in RELAYED)
            for note in notes:
                if note.get("method") == "stackChanged":
                    mirror.apply(expand(note["params"], session))
                    if form == "full":
                        heard[note["params"]["version"]] = note["params"]
                elif note.get("method") == "navigationPending" and form == "full":
                    navigations.add(note["params"]["navigation"])  # opens and resets too
            if (mirror.version, mirror.root, mirror.visible) != (after["version"], after["root"], after["visible"]):
                raise Divergence("the %s mirror differs from tree at %s:\n mirror %s\n tree   %s"
                                 % (form, where, json.dumps(mirror.root)[:600], json.dumps(after["root"])[:600]))
        if server.second:
            # The second node relays them in the order the first sent them, with the same params;
            # it may lag behind (those sent after the last commit may be on their way).
            here, there = relayed["here"], relayed["there"]
            if there != here[:len(there)]:
                at = next(i for i, (h, t) in enumerate(zip(here + [None] * len(there), there)) if h != t)
                raise Divergence("the second node's subscriber heard %s as its notification %d, the first node's %s, at %s"
                                 % (json.dumps(there[at])[:300], at, json.dumps(here[at] if at < len(here) else None)[:300], where))
            seen["relayed"] += len(there) - relayed_counted[0]
            relayed_counted[0] = len(there)
        return heard

    def redirected(result, to, given, has_with, by):
        """Where the redirects a navigation's `result` lists took it: the last one's target and
        params (its `with`), by its `by` else the one before (when the target allows it, else the target's
        unnamed style): the graph's own (`pa`'s) or what the
        provider answered. None: a redirect this model does not know."""
        declared_redirect = described["preconditions"].get("app.pa", {}).get("redirect")
        answers = list(redirects.get(result.get("navigation"), []))
        for hop in result.get("redirected") or []:
            if hop.get("precondition") == "app.pa" and declared_redirect is not None:
                spec = declared_redirect
            elif hop.get("precondition") in ("app.pp", "app.pq") and answers:
                spec = answers.pop(0)
            else:
                return None
            spec = spec if isinstance(spec, dict) else {"to": spec}
            to, given, has_with = hop["to"], dict(spec.get("with") or {}), "with" in spec
            if "by" in spec:
                by = spec["by"]
            else:
                # Without its own `by`: the one before when the target allows it, else its unnamed style.
                allowed = ((described.get("coordinators") or {}).get(to) or {}).get("presentations")
                by = by if not allowed or by in allowed else unnamed_style(described, to)
        return to, given, has_with, by

    def placed_as_said(P, source_id, source, tree, after, result, where, waited=False, pop=None):
        """A committed navigate against the tree SPEC section 4 says it makes from `tree` (the tree
        just before its commit): its node put where its style puts it, from `source_id` (the
        visible top when it was sent, unless `from`), to its target or where the graph's
        `redirect:` or the provider's answer sent it (by the redirect's `by`, else the one before);
        its params `with` (or the redirect's) and what the target's mediation copies from
        `source`'s params (None: not checked). A navigation that waited is placed from its source
        as it is at the commit; with `popUpTo`, `pop` is where the pop of its match (found when it was
        planned) leaves the tree and the top of the match's stack."""
        route = described.get("routes", {}).get(P.get("route")) or {}
        to, given = route.get("to", P.get("to")), dict(route.get("with") or {}, **(P.get("with") or {}))
        has_with = "with" in P or "with" in route
        by = P.get("by", route.get("by")) or unnamed_style(described, to)
        hops = result.get("redirected") or []
        followed = redirected(result, to, given, has_with, by)
        if followed is None:
            return  # (a redirect this model does not know)
        to, given, has_with, by = followed
        seen["redirected"] += bool(hops)
        # popUpTo: the pop first, as dismiss {to} pops; the target placed from what it leaves on top.
        popped = pop[0] if pop else \
            popped_to(tree["root"], P["popUpTo"]["to"], P["popUpTo"].get("inclusive", False), described) if "popUpTo" in P else tree["root"]
        expected = popped and placed(dict({"before": popped, "before_visible": visible_path(popped), "after": after["root"]},
                                          **({"with": given} if has_with else {}),
                                          # (after a popUpTo, from what the pop leaves on top of the match's stack, `from` or not)
                                          **({"from": pop[1]} if pop else {"from": source_id} if ("from" in P or waited) and "popUpTo" not in P else {}),
                                          merge=P.get("merge", False)), result["node"], by, to, described)
        made = next((n for n in nodes(after["root"]) if n["id"] == result["node"]), {})
        if made.get("coordinator") != to and by != "select":
            raise Divergence("navigate to %s made %s at %s" % (to, json.dumps(made)[:300], where))
        if expected is not None and made.get("kind") == "screen" and by != "select" and source is not None:
            # Its params: `with`, with the fields its mediation copies from the source's params
            # where `with` lacks them.
            params, filled = mediated(given, to, source, described)
            seen["mediated"] += filled
            if made.get("params") != params:
                raise Divergence("navigate gave %s params %s; with %s and its mediation from %s make %s, at %s"
                                 % (made["id"], json.dumps(made.get("params")), json.dumps(given), json.dumps(source.get("params")), json.dumps(params), where))
        if expected is not None:
            seen["placed"] += 1
            seen["popped"] += "popUpTo" in P
            seen["routed"] += "route" in P
            if expected != after["root"]:
                raise Divergence("navigate by %s did not place %s as SPEC section 4 says at %s:\n expected %s\n tree     %s"
                                 % (by, result["node"], where, json.dumps(expected)[:1500], json.dumps(after["root"])[:1500]))
        return expected is not None

    for step in range(steps):
        answered.clear()
        if restarts and rnd.random() < 1 / 40:
            # Everything acknowledged survives kill -9: the same tree, version and facts. Pending
            # navigations were not acknowledged; they end with the process.
            before = driver.call("tree", {"session": session})["result"]
            facts = driver.call("context.get", {"session": session})["result"]
            other = driver.call("tree", {"session": bystander})["result"]
            listed = driver.call("session.list")["result"]
            server.kill_and_restart()
            driver, mirrors, provider = connect()
            pending.clear()
            sources.clear()
            waited.clear()
            matches.clear()
            redirects.clear()
            asks.clear()
            # (`thens` stay: a flow keeps the `then` its navigate gave across a restart)
            then_requests.clear()
            navigations.clear()
            again = driver.call("tree", {"session": session})["result"]
            before = without_recovery_flows(before)
            other = without_recovery_flows(other)
            if again != before:
                raise Divergence("after kill -9 and restart (seed %d, step %d) the tree differs:\n before %s\n after  %s"
                                 % (seed, step, json.dumps(before)[:600], json.dumps(again)[:600]))
            if driver.call("context.get", {"session": session})["result"] != facts:
                raise Divergence("after kill -9 and restart (seed %d, step %d) the facts differ" % (seed, step))
            if driver.call("session.list")["result"] != listed:
                raise Divergence("after kill -9 and restart (seed %d, step %d) the sessions are %s, not %s"
                                 % (seed, step, driver.call("session.list")["result"], listed))
            if driver.call("tree", {"session": bystander})["result"] != other:
                raise Divergence("after kill -9 and restart (seed %d, step %d) the other session's tree differs" % (seed, step))
        if rnd.random() < 1 / 150:
            # The session is closed and opened again: what waited is answered (cancelled), keys go,
            # the subscribers hear sessionClosed and subscribe to the new session.
            closed = driver.call("session.close", {"name": session})
            if "error" in closed:
                raise Divergence("session.close answered %s (seed %d, step %d)" % (json.dumps(closed)[:300], seed, step))
            settle("session.close (seed %d, step %d)" % (seed, step))
            if pending:
                raise Divergence("no reply to %s after session.close" % "; ".join(pending.values()))
            for form, conn, _ in mirrors:
                told = conn.take()
                while server.second and form == "compact" and not any(n.get("method") == "sessionClosed" for n in told):
                    told.append(conn.note())  # (relayed by the second node after PostgreSQL has it: awaited)
                if not any(n.get("method") == "sessionClosed" for n in told):
                    raise Divergence("the %s subscriber did not hear sessionClosed (seed %d, step %d)" % (form, seed, step))
            driver.call("session.open", {"name": session})
            for c in [driver, provider] + [conn for _, conn, _ in mirrors]:
                c.s.close()
            driver, mirrors, provider = connect()
            sources.clear()  # (a new connection numbers its requests afresh)
            waited.clear()
            thens.clear()  # (the new session numbers its nodes afresh: a `then` of the closed one names another flow)
            matches.clear()
            redirects.clear()
            asks.clear()
            keyed.clear()
            navigations.clear()
        tree = driver.call("tree", {"session": session})["result"]
        ids = [n["id"] for n in nodes(tree["root"])]
        guarded = driver.call("context.get", {"session": session})["result"]["facts"].get("a") == 2  # pl fails
        P = {"session": session}
        with_ = rnd.choice([{}, {}, {"v": rnd.randint(1, 3)}, {"v": "x"}])
        waiting = bool(pending or asks)
        k = rnd.random()
        if k > 0.97:
            # A burst: a few requests sent back to back before any answer (a front-end that
            # pipelines), answered in order or left waiting for preconditions.
            top = next((n for n in nodes(tree["root"]) if n["id"] == tree["visible"][-1]), {})
            opens = described["coordinators"].get(top.get("coordinator"), {}).get("opens") or coords
            burst = [rnd.choice([("navigate", {"session": session, "to": rnd.choice(opens), "progress": True}),
                                 ("dismiss", {"session": session}), ("navigate", {"session": session, "to": rnd.choice(coords), "by": "present"})])
                     for _ in range(rnd.randint(2, 4))]
            sent = [driver.send(m, p) for m, p in burst]
            driver.call("ping")
            for i, (m, p) in zip(sent, burst):
                r = driver.replies.pop(i, None)
                if r is None:
                    pending[i] = "%s %s (burst, seed %d, step %d)" % (m, json.dumps(p), seed, step)
                elif r.get("error", {}).get("data", {}).get("kind") == "internalError":
                    raise Divergence("internal error in a burst at seed %d, step %d: %s" % (seed, step, json.dumps(r)[:300]))
            method, P, waiting = "(burst)", {"requests": burst}, True
        elif regraph and k < 0.015:
            # Another graph of the same names, reloaded (forced or not): a refused one is put back,
            # so that a restart reads the graph navd serves.
            old = read_graph(server.graph_dir)
            write_graph(server.graph_dir, regraph(rnd.randrange(1 << 30)))
            method, P = "graph.reload", {"force": rnd.random() < 0.6}
        elif asks and k < 0.15:
            # The provider answers one of its requests: passed, failed, or a redirect; a recovery
            # (`pq` recovers by asking it), recovered or not.
            ask = asks.pop(rnd.randrange(len(asks)))
            if ask["method"] == "precondition.recover":
                answer = rnd.choice([{"recovered": True}, {"recovered": False, "reason": "no"}])
                seen["recoveries"] += 1
            else:
                answer = rnd.choice([{"passed": True}, {"passed": True}, {"passed": False, "reason": "no"},
                                     {"passed": False, "redirect": rnd.choice(coords)}])
                if "redirect" in answer and rnd.random() < 0.7:
                    # Mostly one the visible screen opens (a provider's redirect must be one the source opens).
                    top = next((n for n in nodes(tree["root"]) if n["id"] == tree["visible"][-1]), {})
                    answer["redirect"] = rnd.choice(described["coordinators"].get(top.get("coordinator"), {}).get("opens") or coords)
                if "redirect" in answer and rnd.random() < 0.5:
                    # With a style and params of its own, sometimes.
                    answer["redirect"] = dict({"to": answer["redirect"]}, **rnd.choice([{}, {"with": {"v": 1}}, {"by": "present"}, {"by": "push", "with": {}}]))
                if "redirect" in answer and described["root"].get("tabs") and rnd.random() < 0.15:
                    # To select a tab of the root (in a link: selected, nothing of the link built).
                    answer["redirect"] = {"to": rnd.choice(described["root"]["tabs"]), "by": "select"}
                if "redirect" in answer:
                    redirects.setdefault(ask["params"]["navigation"]["id"], []).append(answer["redirect"])
            provider.answer(ask, answer)
            seen["answered"] += 1
            method, P = "(provider)", {"answered": ask["params"]["navigation"], "with": answer}
        elif navigations and k < 0.2:
            method, P = "cancel", dict(P, navigation=rnd.choice(sorted(navigations)))
        elif k < 0.21:
            # The provider goes away and comes back: what it was asked fails at once.
            provider.s.close()
            provider = Conn(server.sock)
            provider.call("provide", {"preconditions": ["app.pp", "app.pq"]})
            asks.clear()
            method, P = "(provider)", {"reconnected": True}
        elif matches and described["root"].get("tabs") and k < 0.3 and \
                (others := [n["id"] for n in nodes(tree["root"]) if n["kind"] == "screen" and n["id"] not in sources.values()]):
            # While a popUpTo waits, another root tab selected (from a screen nothing waits from, which
            # would supersede it): its match is then in a tab no longer shown.
            method, P = "navigate", dict(P, to=rnd.choice(described["root"]["tabs"]), by="select", **{"from": rnd.choice(others)})
        elif k < 0.45:
            # Mostly a coordinator the visible screen opens (or a step or tab of what holds it), so
            # that walks go deep; sometimes any, to be refused.
            top = next((n for n in nodes(tree["root"]) if n["id"] == tree["visible"][-1]), {})
            opens = described["coordinators"].get(top.get("coordinator"), {}).get("opens") or coords
            method, P = "navigate", dict(P, to=rnd.choice(opens if rnd.random() < 0.7 else coords), progress=True)
            flows = [c for c in opens if described["coordinators"].get(c, {}).get("flow")]
            if flows and rnd.random() < 0.15:
                P["to"] = rnd.choice(flows)  # (flows are few among what a screen opens)
            if described.get("routes") and rnd.random() < 0.1:
                del P["to"]
                P["route"] = rnd.choice(sorted(described["routes"]))
            P["with"] = with_
            flow = described["coordinators"].get(P.get("to"), {}).get("flow")
            if flow is not None and rnd.random() < 0.4:
                # Where the flow goes on when it completes: its declared `then` or what it opens
                # (sometimes anything, to be refused), by a name or {to, by}.
                declared = flow.get("then") if isinstance(flow.get("then"), str) else (flow.get("then") or {}).get("to")
                allowed = (described["coordinators"][P["to"]].get("opens") or []) + ([declared] if declared else [])
                then = rnd.choice(allowed) if allowed and rnd.random() < 0.85 else rnd.choice(coords)
                P["then"] = then if rnd.random() < 0.6 else {"to": then, "by": rnd.choice(["push", "present", "replace", "root"])}
                if isinstance(P["then"], dict) and described["coordinators"].get(then, {}).get("setup") and rnd.random() < 0.5:
                    P["then"]["with"] = {"v": "$result.n"}  # from the flow's result
            if rnd.random() < 0.7:
                P["by"] = rnd.choice(["push", "push", "present", "replace", "select", "root"])
                if P["by"] == "select" and rnd.random() < 0.3:
                    P["merge"] = True  # the tab's screen keeps its params, `with` merged in
            if rnd.random() < 0.2:
                P["from"] = rnd.choice(ids)
            if rnd.random() < 0.1:
                # Mostly a screen of the visible path (by id or coordinator), pushed or presented.
                shown = [n for n in nodes(tree["root"]) if n["id"] in tree["visible"] and n["kind"] == "screen"]
                to = rnd.choice([rnd.choice(shown)["id"], rnd.choice(shown)["coordinator"]]) if shown and rnd.random() < 0.7 else rnd.choice(coords + ids)
                P["popUpTo"] = {"to": to, "inclusive": rnd.random() < 0.5}
                if rnd.random() < 0.7:
                    P["by"] = rnd.choice(["push", "present"])
                if shown and rnd.random() < 0.5:
                    # From a screen of the visible path (mostly not the match), which validates it;
                    # placed where the pop leaves the top.
                    P["from"] = rnd.choice([n for n in shown if to not in (n["id"], n["coordinator"])] or shown)["id"]
                    P.pop("route", None)
                    P["to"] = rnd.choice(described["coordinators"].get(next(n for n in shown if n["id"] == P["from"])["coordinator"], {}).get("opens") or coords)
            if rnd.random() < 0.1:
                P["hints"] = {"animation": rnd.choice(["slide", "fade"]), "step": step}
            if rnd.random() < 0.12 and "popUpTo" not in P:
                # A screen of the target already in the stack: kept on top, or popped to.
                P["by"] = "push"
                P["existing"] = rnd.choice(["top", "pop", "push"])
                if rnd.random() < 0.3:
                    P["merge"] = True
            if rnd.random() < 0.15:
                P["key"] = "k%d" % rnd.randint(1, 1000000)
            elif keyed and rnd.random() < 0.1:
                # A retry: the same key and params, which change nothing and get the first reply.
                P = dict(keyed[rnd.choice(sorted(keyed))][0])
        elif k < 0.52:
            method, P = "context.set", dict(P, facts={rnd.choice(["a", "a", "d"]): rnd.choice([1, 2, True, "x", None])})
        elif k < 0.62:
            method = "dismiss"
            if rnd.random() < 0.5:
                P["node"] = rnd.choice(ids)
            elif rnd.random() < 0.3:
                P.update({"to": rnd.choice(coords + ids), "inclusive": rnd.random() < 0.5})
            if rnd.random() < 0.2:
                # A result for the screen left on top, sometimes merged into its params.
                P["result"] = rnd.choice([{"v": 2}, {"v": "x"}, "done", None])
                if isinstance(P["result"], dict) and rnd.random() < 0.5:
                    P["merge"] = True
        elif k < 0.7 or (k < 0.73 and any(n["kind"] == "flow" for n in nodes(tree["root"]))):
            # (More often while a flow is live: flows are few, and their end is where `then` goes on.)
            flows = [n for n in nodes(tree["root"]) if n["kind"] == "flow"]
            flow = rnd.choice(flows) if flows and rnd.random() < 0.8 else {"id": rnd.choice(ids)}
            method, P = "flowComplete", dict(P, flow=flow["id"],
                                             **rnd.choice([{"result": {}}, {"result": {"ok": True}}, {"result": {"ok": "x"}}, {"cancelled": True}, {"error": {"message": "x"}},
                                                         {"result": {"ok": True, "n": rnd.randint(1, 3)}}, {"result": {"ok": False, "n": "x"}}]))
            spec = thens.get(flow["id"]) or described["coordinators"].get(flow.get("coordinator"), {}).get("flow", {}).get("then")
            if isinstance(spec, dict) and spec.get("with") and rnd.random() < 0.6:
                P.pop("cancelled", None), P.pop("error", None)
                P["result"] = {"ok": rnd.random() < 0.5, "n": rnd.randint(1, 3)}  # what its then takes
        elif k < 0.76:
            method, P = "update", dict(P, node=rnd.choice(ids))
            P["with"] = with_ if rnd.random() < 0.8 else {"v": None}  # (a null removes the field)
            if rnd.random() < 0.4:
                P["push"] = True  # the old params kept: the next dismiss of the top restores them
        elif k < 0.82:
            method = "reset"
            if rnd.random() < 0.5:
                P["to"] = [rnd.choice(coords), {"to": rnd.choice(coords), "with": with_}][:rnd.randint(1, 2)]
        else:
            method = "open"
            pattern = rnd.choice(urls) if urls else "/nowhere"
            path, _, query = pattern.partition("?")
            segments = [str(rnd.randint(1, 3)) if seg.startswith(":") else seg for seg in path.split("/")
                        if not (seg.endswith("?") and rnd.random() < 0.4)]  # an optional segment left out
            P["url"] = "/".join(segments) + ("?v=%d" % rnd.randint(1, 3) if query and rnd.random() < 0.7 else "")
            if rnd.random() < 0.2:
                P["by"] = "push"
        if method in ("navigate", "open", "reset") and "key" not in P and rnd.random() < 0.08:
            P["ifVersion"] = tree["version"] - rnd.randint(0, 1)  # current, or one behind: conflict
        dry = driver.call(method, dict(P, dryRun=True)) if method in ("navigate", "open") and rnd.random() < 0.5 else None
        reply = None
        if method == "graph.reload":
            i = driver.send(method, P)
            driver.pump(i)  # answered once the graph is loaded (on navd's thread pool) and swapped in
            reply = driver.replies.pop(i)
        elif method not in ("(provider)", "(burst)"):
            i = driver.send(method, P)
            driver.call("ping")  # navd answers in order: a reply not in by now waits for preconditions
            reply = driver.replies.pop(i, None)
            if method == "navigate" and "key" not in P and (reply is None or "result" in reply) and not P.get("popUpTo", {}).get("inclusive"):
                # A newer navigation from the same source, committed or waiting, supersedes one
                # still waiting: it is answered `cancelled` by now (navd answers in order). (A
                # popUpTo inclusive of a stack's first screen navigates from the match instead.)
                source = P.get("from", tree["visible"][-1])
                for j in [j for j in pending if sources.get(j) == source]:
                    older = driver.replies.get(j)
                    if older is None or older.get("error", {}).get("data", {}).get("kind") != "cancelled":
                        raise Divergence("%s from %s did not supersede %s, answered %s, at seed %d, step %d"
                                         % (json.dumps(P), source, pending[j], json.dumps(older)[:300], seed, step))
                    seen["superseded"] += 1
            if "then" in P:
                if reply is None:
                    then_requests[i] = P["then"]
                elif "node" in reply.get("result", {}):
                    thens[reply["result"]["node"]] = P["then"]
            if reply is None:
                pending[i] = "%s %s (seed %d, step %d)" % (method, json.dumps(P), seed, step)
                if method == "navigate" and not P.get("popUpTo", {}).get("inclusive"):
                    sources[i] = P.get("from", tree["visible"][-1])
                    waited[i] = (P, next((n for n in nodes(tree["root"]) if n["id"] == sources[i]), None))
                    if "popUpTo" in P:
                        matches[i] = pop_match(tree["root"], P["popUpTo"]["to"])
                seen["waited"] += 1
            elif method != "graph.reload":  # (its version is the graph's)
                heard_first(i, reply, "%s %s (seed %d, step %d)" % (method, json.dumps(P), seed, step))
        where = "seed %d, step %d: %s %s -> %s" % (seed, step, method, json.dumps(P), json.dumps(reply)[:300])
        if method == "graph.reload":
            if reply.get("result", {}).get("ok"):
                if server.second:
                    # Every node serves the new graph (the second owns no session: nothing to force).
                    again = Conn(server.second.sock).call("graph.reload")
                    if not again.get("result", {}).get("ok"):
                        raise Divergence("the second node refused the graph the first took: %s, at seed %d, step %d" % (json.dumps(again)[:300], seed, step))
                described = driver.call("graph.describe")["result"]
                coords = sorted(described["coordinators"])
                urls = list(described.get("links") or {})
            else:
                write_graph(server.graph_dir, old)
        settle(where)
        if reply is not None and reply.get("error", {}).get("data", {}).get("kind") == "internalError":
            raise Divergence("internal error at " + where)
        after = driver.call("tree", {"session": session})["result"]
        # A step commits at most once, unless it lets a waiting navigation go on (a recovery flow
        # completed, a provider's answer, a cancel that dismisses a recovery flow); a forced reload
        # commits once per node it removes.
        # A flow's end, then where it goes on (answered, or waiting with a recovery flow presented).
        then = ("then" in reply.get("result", {})) if reply is not None else method == "flowComplete"
        if after["version"] < tree["version"] or (after["version"] > tree["version"] + 1 + then and not waiting and method != "graph.reload"):
            raise Divergence("version %d -> %d at %s" % (tree["version"], after["version"], where))
        commits += after["version"] - tree["version"]
        if reply is not None and "key" in P:
            if P["key"] in keyed:
                first = keyed[P["key"]][1]
                if after["version"] != tree["version"] or reply.get("result") != first.get("result") or (
                        reply.get("error", {}).get("code") != first.get("error", {}).get("code")):
                    raise Divergence("a retry with key %s answered %s (first %s) at %s"
                                     % (P["key"], json.dumps(reply)[:200], json.dumps(first)[:200], where))
            elif "result" in reply:
                keyed[P["key"]] = (P, reply)  # a refusal leaves no key: its retry runs again
        if dry is not None and reply is not None and "replays" in dry.get("result", {}):
            if reply.get("result") != dry["result"]["replays"]:
                raise Divergence("dryRun answered a replay of %s at %s" % (json.dumps(dry["result"]["replays"])[:300], where))
        elif dry is not None and reply is not None and not dry.get("result", {}).get("preconditions"):
            if ("error" in dry) != ("error" in reply):
                raise Divergence("dryRun answered %s at %s" % (json.dumps(dry)[:300], where))
            if "result" in reply and "visible" in reply["result"] and (
                    dry["result"]["visible"] != reply["result"]["visible"] or dry["result"]["node"]["id"] != reply["result"]["node"]):
                raise Divergence("dryRun answered %s at %s" % (json.dumps(dry["result"])[:300], where))
        if method == "open" and reply is not None and "by" not in P and "result" in reply and "redirected" not in reply["result"] \
                and not dry_preconditions(dry):
            # The screens a link lists are the stack it built, bottom first (a flow standing for
            # itself and its first step).
            expected = [e["to"] for e in described["links"][pattern]]
            built = link_chain(after)
            if built is not None and built != expected:
                raise Divergence("open built %s, its link lists %s, at %s" % (built, expected, where))
            if after["version"] == tree["version"] + 1 == reply["result"]["version"]:
                differs = built_as_link(tree["root"], after["root"], [(c, None) for c in expected], described)
                seen["linked"] += differs is None
                if differs:
                    raise Divergence("open did not build its link's stack as PROTOCOL.md says (%s) at %s:\n before %s\n tree   %s"
                                     % (differs, where, json.dumps(tree["root"])[:1500], json.dumps(after["root"])[:1500]))
        if method == "open" and P.get("by") == "push" and reply is not None and "result" in reply and "redirected" not in reply["result"] \
                and after["version"] == tree["version"] + 1 == reply["result"]["version"] and not dry_preconditions(dry):
            # open {by: push}: the link's last screen alone, pushed from the visible screen as navigate pushes it.
            last = described["links"][pattern][-1]
            expected = placed({"before": tree["root"], "before_visible": tree["visible"], "after": after["root"]},
                              reply["result"]["node"], "push", last["to"], described)
            if expected is not None:
                seen["linked"] += 1
                if expected != after["root"]:
                    raise Divergence("open {by: push} did not push its link's last screen at %s:\n expected %s\n tree     %s"
                                     % (where, json.dumps(expected)[:1500], json.dumps(after["root"])[:1500]))
        if method == "reset" and "to" in P and reply is not None and "result" in reply and "redirected" not in reply["result"] \
                and after["version"] == tree["version"] + 1 == reply["result"]["version"]:
            # reset {to}: the stack its screens make, built as a link's.
            steps = [(e, None) if isinstance(e, str) else (e["to"], e.get("with", {})) for e in P["to"]]
            steps = [(c, {} if w is None else w) for c, w in steps]
            differs = built_as_link(tree["root"], after["root"], steps, described)
            seen["linked"] += differs is None
            if differs:
                raise Divergence("reset {to} did not build its stack as PROTOCOL.md says (%s) at %s:\n before %s\n tree   %s"
                                 % (differs, where, json.dumps(tree["root"])[:1500], json.dumps(after["root"])[:1500]))
        if method in ("open", "reset") and "by" not in P and reply is not None and reply.get("result", {}).get("redirected") \
                and after["version"] == tree["version"] + 1 == reply["result"]["version"] and (method == "open" or "to" in P):
            # A link or reset {to} that a precondition on the way redirected: the screens below the
            # one that redirected as listed, then the redirect's target in its place, with the
            # redirect's params and what its mediation copies (PROTOCOL.md, section open).
            if method == "open":
                listed = [(e["to"], None) for e in described["links"][pattern]]
            else:
                listed = [(e, {}) if isinstance(e, str) else (e["to"], e.get("with", {})) for e in P["to"]]
            hops = reply["result"]["redirected"]
            followed = redirected(reply["result"], None, {}, False, None)
            names = [c for c, _ in listed]
            tabs = described["root"].get("tabs") or []
            # (After a redirect that selected a root tab, a later one is a navigate's: not modelled here.)
            selects = any(isinstance(x, dict) and x.get("by") == "select" for x in redirects.get(reply["result"].get("navigation"), []))
            if followed is not None and names.count(hops[0]["from"]) == 1 and not (selects and len(hops) > 1):
                k = names.index(hops[0]["from"])
                target, given, _, _ = followed
                # (A redirect's `by` does not apply, the target shown as the screen it replaces, but
                # for root and the select below. Left to the mirrors: a first screen that starts a root tab,
                # the target then going on that tab's first screen.) A redirect by select to a root tab no container below declares: that tab selected,
                # its stack as it was, nothing of the link built (the same redirect of a navigate).
                containers = [c for c, _ in listed[:k] if (described["coordinators"].get(c) or {}).get("tabs")]
                if followed[3] == "root":
                    # By root: the whole tree a stack holding the target, nothing of the link built.
                    kids = after["root"].get("children") or []
                    if after["root"].get("kind") != "stack" or len(kids) != 1 or kids[0].get("coordinator") != target \
                            or kids[0].get("params") != given:
                        raise Divergence("%s, redirected by %s by root, did not make the tree its target alone at %s:\n before %s\n tree   %s"
                                         % (method, json.dumps(hops), where, json.dumps(tree["root"])[:1500], json.dumps(after["root"])[:1500]))
                    seen["linked_redirected"] += 1
                elif followed[3] == "select" and target in tabs \
                        and not any(target in described["coordinators"][c]["tabs"] for c in containers):
                    # (A tab container on the visible path that declares the target is selected in instead,
                    # as a select does: left to the mirrors.)
                    by_id = {n["id"]: n for n in nodes(tree["root"])}
                    shown = [by_id[i] for i in tree["visible"] if i in by_id and by_id[i]["kind"] == "tabs" and "coordinator" in by_id[i]]
                    inner = any(target in (described["coordinators"].get(n["coordinator"], {}).get("tabs") or []) for n in shown)
                    got = after["root"]
                    if not followed[2] and not inner:
                        # (The tabs a `root` navigation replaced come back fresh, as a select brings them.)
                        shells = [[(x.get("coordinator"), x.get("params")) for x in t.get("children", [])] for t in got.get("children", [])]
                        fresh = [[(c, {})] for c in tabs]
                        kept = tree["root"].get("children") if tree["root"].get("kind") == "tabs" else None
                        if got.get("selected") != tabs.index(target) or (got.get("children") != kept if kept is not None else shells != fresh):
                            raise Divergence("%s, redirected by %s to select a root tab, did not select it alone at %s:\n before %s\n tree   %s"
                                             % (method, json.dumps(hops), where, json.dumps(tree["root"])[:1500], json.dumps(after["root"])[:1500]))
                        seen["linked_redirected"] += 1
                elif not (k == 0 and names[0] in tabs):
                    differs = built_as_link(tree["root"], after["root"], listed[:k] + [(target, given)], described)
                    seen["linked_redirected"] += differs is None
                    if differs:
                        raise Divergence("%s, redirected by %s, did not build its stack as PROTOCOL.md says (%s) at %s:\n before %s\n tree   %s"
                                         % (method, json.dumps(hops), differs, where, json.dumps(tree["root"])[:1500], json.dumps(after["root"])[:1500]))
        heard = check_mirrors(after, where)
        if rnd.random() < 0.05:
            # The other session: pushed or presented on (targets that run no precondition), and
            # its mirror checked against its tree, each reload's effect on it included.
            other = driver.call("tree", {"session": bystander})["result"]
            top = next((n for n in nodes(other["root"]) if n["id"] == other["visible"][-1]), {})
            def quiet(c):
                d = described["coordinators"][c]
                start = d.get("flow", {}).get("start")
                return not d.get("preconditions") and not (start and described["coordinators"][start].get("preconditions"))
            targets = [c for c in described["coordinators"].get(top.get("coordinator"), {}).get("opens") or coords if quiet(c)]
            if targets:
                P2 = {"session": bystander, "to": rnd.choice(targets), "by": rnd.choice(["push", "present"])}
                i = driver.send("navigate", P2)
                driver.call("ping")
                if driver.replies.pop(i, None) is None:
                    pending[i] = "navigate %s (the other session, seed %d, step %d)" % (json.dumps(P2), seed, step)
        if rnd.random() < 1 / 120:
            # The other session is closed and opened again (its watcher follows the new one).
            driver.call("session.close", {"name": bystander})
            driver.call("session.open", {"name": bystander})
            for watcher, _ in bystanders:
                watcher.s.close()
            watcher = Conn(server.sock)
            bystanders[:] = [(watcher, TreeMirror(watcher.call("subscribe", {"session": bystander, "notifications": "compact"})["result"]))]
        if method == "graph.reload" or rnd.random() < 0.05:
            other = driver.call("tree", {"session": bystander})["result"]
            for watcher, mirror in bystanders:
                for note in watcher.take():
                    if note.get("method") == "stackChanged":
                        mirror.apply(expand(note["params"], bystander))
                if (mirror.version, mirror.root, mirror.visible) != (other["version"], other["root"], other["visible"]):
                    raise Divergence("the other session's mirror differs from its tree at %s:\n mirror %s\n tree   %s"
                                     % (where, json.dumps(mirror.root)[:600], json.dumps(other["root"])[:600]))
            for n in nodes(other["root"]):
                declared = described["coordinators"].get(n.get("coordinator"), {}).get("kind")
                if "coordinator" in n and declared != n["kind"]:
                    raise Divergence("the other session's %s %s shows %s, which the graph declares as %s, at %s" % (n["kind"], n["id"], n["coordinator"], declared, where))
        if not waiting and rnd.random() < 0.3:
            # link.resolve answers a URL whose `open` builds the stack the visible screen stands in
            # (its dryRun, applied to a copy of the tree, lists the same screens).
            resolved = driver.call("link.resolve", {"session": session})
            if "result" in resolved:
                url = resolved["result"]["url"]
                seen["resolved"] += 1
                reopened = driver.call("open", {"session": session, "url": url, "dryRun": True})
                # (The walk's clients hold no role: a screen of the stack that needs one, a tab's first
                # screen the root made, is refused them.)
                denied = reopened.get("error", {}).get("data", {})
                if denied.get("kind") == "accessDenied" and described["coordinators"].get(denied.get("to"), {}).get("access") \
                        and denied.get("to") in (link_chain(after, from_container=True) or []):
                    pass
                elif "error" in reopened:
                    raise Divergence("link.resolve answered %s, whose open is refused: %s, at %s" % (url, json.dumps(reopened["error"])[:300], where))
                else:
                    root = apply_changes(json.loads(json.dumps(after["root"])), reopened["result"]["changes"])
                    built = chain_nodes({"root": root, "visible": reopened["result"]["visible"]}, from_container=True)
                    shown = chain_nodes(after, from_container=True)
                    if [n.get("coordinator") for n in built] != [n.get("coordinator") for n in shown]:
                        raise Divergence("link.resolve answered %s, whose open builds %s, not %s, at %s"
                                         % (url, link_chain({"root": root, "visible": reopened["result"]["visible"]}, True), link_chain(after, True), where))
                    # With the params they hold, when a link of those screens carries them all.
                    coordinators = [n.get("coordinator") for n in shown]
                    carried = any([qualified(e if isinstance(e, str) else e["to"]) for e in entries] == coordinators and carries(entries, shown, pattern, described)
                                  for pattern, entries in described["links"].items())
                    seen["carried"] += carried and any(n.get("params") for n in shown)
                    # (A first screen the link gives no params keeps those its tab's first screen holds.)
                    first = ([] if built[0]["id"] != shown[0]["id"] and not (isinstance(link[0], dict) and link[0].get("with")) else [0]) \
                        if (link := described["links"].get(resolved["result"]["link"])) else [0]
                    compared = first + list(range(1, len(shown)))
                    if carried and [built[i].get("params", {}) for i in compared] != [shown[i].get("params", {}) for i in compared]:
                        raise Divergence("link.resolve answered %s, whose open builds params %s, not %s, at %s\n tree %s\n open %s"
                                         % (url, [n.get("params", {}) for n in built], [n.get("params", {}) for n in shown], where,
                                            json.dumps(after)[:1500], json.dumps(reopened["result"])[:1500]))
            elif resolved["error"]["data"]["kind"] != "noMatchingLink":
                raise Divergence("link.resolve answered %s at %s" % (json.dumps(resolved)[:300], where))
        if guarded and method not in ("graph.reload", "(provider)"):
            # While the leave guard `pl` fails, nothing a step removes declares it, while other
            # requests wait or not. (What waited may have passed `pl` before the fact changed.) A
            # completed flow's own end (the flow, what is above it, a modal it is first in; the
            # whole stack it is first in) runs no guard, but what its `then` replaces beyond that
            # (the screen below the flow, the other tabs by `root`) keeps its guards.
            left = {n["id"] for n in nodes(after["root"])}
            ending = set()
            if method == "flowComplete":
                holder = parents_of(tree["root"]).get(P.get("flow"))
                ended = dismissed(tree["root"], P["flow"], described) if holder is not None else None
                if holder is not None and holder.get("kind") == "stack" and holder["children"][0]["id"] == P["flow"]:
                    ending = {n["id"] for n in nodes(holder)}
                elif ended is not None:
                    ending = {n["id"] for n in nodes(tree["root"])} - {n["id"] for n in nodes(ended)}
                else:
                    ending = {n["id"] for n in nodes(tree["root"])}  # (a case the model does not cover)
            for n in nodes(tree["root"]):
                if n["id"] not in left and n["id"] not in ending and "app.pl" in (described["coordinators"].get(n.get("coordinator"), {}).get("leave") or []):
                    raise Divergence("%s %s (%s) left the tree although its leave guard fails, at %s" % (n["kind"], n["id"], n["coordinator"], where))
        if method not in ("graph.reload", "reset") or "to" in P:
            # No client of the walk holds a role, and `pt` never passes: what it adds to the tree
            # never needs one, nor declares pt, except the tabs a container or the graph's root
            # makes, and the graph's root screen a reset brings back (neither their access nor
            # their preconditions apply).
            before_ids = set(ids)
            for parent in nodes(after["root"]):
                for n in parent.get("children", []) + ([parent["presented"]] if "presented" in parent else []):
                    if n["id"] in before_ids or "coordinator" not in n:
                        continue
                    declared = described["coordinators"].get(n["coordinator"], {})
                    # `pt` always times out: what declares it is never shown either.
                    needs = declared.get("access") or ("app.pt" in (declared.get("preconditions") or []) and "the precondition pt")
                    shell = next((t for t in nodes(after["root"]) if t["kind"] == "tabs" and parent in t.get("children", [])), None) \
                        if parent["kind"] == "stack" and parent["children"][0] is n else None
                    declared_tabs = (described["coordinators"].get(shell.get("coordinator"), {}).get("tabs") if shell and "coordinator" in shell
                                     else described["root"].get("tabs")) or []
                    # A tab's first screen is made as its shell's (a fresh tab), or as a deep link (or a
                    # reset {to}) that starts in that tab rebuilds it from the screen the tab declares.
                    tab_shell = shell is not None and (parent["id"] not in before_ids or (
                        method in ("open", "reset", "(provider)") and shell["children"].index(parent) < len(declared_tabs)
                        and qualified(declared_tabs[shell["children"].index(parent)]) == n["coordinator"]))
                    root_shell = parent is after["root"] and parent["children"][0] is n and described["root"].get("stack") == n["coordinator"]
                    if needs and not tab_shell and not root_shell:
                        raise Divergence("%s %s of %s (%s) was added although no walk client passes it, at %s" % (n["kind"], n["id"], n["coordinator"], needs, where))
        if P.get("ifVersion", tree["version"]) != tree["version"] and reply is not None and (
                "error" not in reply or after["version"] != tree["version"] and not waiting):
            raise Divergence("a request with an old ifVersion answered %s, version %d -> %d, at %s"
                             % (json.dumps(reply)[:300], tree["version"], after["version"], where))
        if method == "navigate" and reply is not None and reply.get("result", {}).get("node") and not P.get("dryRun"):
            # `pc` runs `test {with.v} != 3`: the screen a navigation shows with v 3 never passes it.
            shown = next((n for n in nodes(after["root"]) if n["id"] == reply["result"]["node"]), None)
            if shown and shown.get("params", {}).get("v") == 3 and shown["id"] not in ids \
                    and "app.pc" in (described["coordinators"].get(shown.get("coordinator"), {}).get("preconditions") or []):
                raise Divergence("%s was shown with v 3 although its precondition pc fails for it, at %s" % (shown["id"], where))
        # (The models below compare the tree before with the tree after a step only when the step's
        # own commit is the only one between them: whatever else was waiting did not commit meanwhile.)
        # A route: its target, its style unless `by` is given, its `with` with the given one merged over it.
        route = described.get("routes", {}).get(P.get("route")) or {}
        to, given = route.get("to", P.get("to")), dict(route.get("with") or {}, **(P.get("with") or {}))
        has_with = "with" in P or "with" in route
        if method == "navigate" and reply is not None and "node" in reply.get("result", {}) and P.get("existing") in ("top", "pop") \
                and not reply["result"].get("redirected") and not dry_preconditions(dry) and described["coordinators"].get(to, {}).get("kind") == "screen":
            # `existing`: the screen of the target found stays and takes the params, or a push.
            source = next((n for n in nodes(tree["root"]) if n["id"] == P.get("from", tree["visible"][-1])), {})
            params, _ = mediated(given, to, source, described)
            found = reused(tree["root"], P.get("from", tree["visible"][-1]), to, params, given, P.get("merge", False), P["existing"], described)
            if found is not None and after["version"] == reply["result"]["version"] in (tree["version"], tree["version"] + 1):
                expected, kept = found
                seen["reused"] += 1
                unchanged = expected == tree["root"]
                if reply["result"]["node"] != kept or expected != after["root"] or (reply["result"]["version"] == tree["version"]) != unchanged:
                    raise Divergence("navigate {existing: %s} did not keep %s as PROTOCOL.md says (unchanged: %s) at %s:\n expected %s\n tree     %s"
                                     % (P["existing"], kept, unchanged, where, json.dumps(expected)[:1500], json.dumps(after["root"])[:1500]))
            elif found is None and after["version"] == tree["version"] + 1 == reply["result"]["version"]:
                expected = placed(dict({"before": tree["root"], "before_visible": tree["visible"], "after": after["root"]},
                                       **({"from": P["from"]} if "from" in P else {})), reply["result"]["node"], "push", to, described)
                if expected is not None:
                    seen["reused"] += 1
                    if expected != after["root"]:
                        raise Divergence("navigate {existing: %s} found no screen of %s and did not push it at %s:\n expected %s\n tree     %s"
                                         % (P["existing"], to, where, json.dumps(expected)[:1500], json.dumps(after["root"])[:1500]))
        if method == "navigate" and reply is not None and "node" in reply.get("result", {}) \
                and after["version"] == tree["version"] + 1 == reply["result"]["version"] \
                and P.get("existing", "push") == "push" and not dry_preconditions(dry):
            source_id = P.get("from", tree["visible"][-1])
            placed_as_said(P, source_id, next((n for n in nodes(tree["root"]) if n["id"] == source_id), {}), tree, after, reply["result"], where)
        for i, r in answered:
            # A navigation that waited for its preconditions, committed by this step alone: placed
            # from its source as it would have been at once, in the tree as it is now (its params
            # from the source as it was when it was planned: checked while the source kept them).
            # With popUpTo: its match (found when it was planned) popped wherever it is now, the target
            # placed from the top of the match's stack.
            P0, source = waited.pop(i, (None, None))
            match = matches.pop(i, None)
            pop = popped_at(tree["root"], match, P0["popUpTo"].get("inclusive", False), described) if P0 and match and "popUpTo" in P0 else None
            if P0 is not None and "node" in r.get("result", {}) and after["version"] == tree["version"] + 1 == r["result"]["version"] \
                    and P0.get("existing", "push") == "push" and ("popUpTo" not in P0 or pop):
                now = next((n for n in nodes(tree["root"]) if n["id"] == sources[i]), None)
                seen["waited_placed"] += bool(placed_as_said(P0, sources[i], source if now and source and now.get("params") == source.get("params") else None,
                               tree, after, r["result"], "%s; navigate %s, sent earlier, answered after waiting: %s" % (where, json.dumps(P0), json.dumps(r)[:300]),
                               waited=True, pop=pop))
                seen["waited_popped"] += bool(pop)
        if visible_path(after["root"]) != after["visible"]:
            raise Divergence("visible is %s; SPEC section 4's path through the tree is %s, at %s" % (after["visible"], visible_path(after["root"]), where))
        if transcript is not None and method == "dismiss" and not {"node", "to", "result", "merge"} & set(P) and reply is not None:
            # nav-web's rule for a plain dismiss of the top with nothing to dismiss (mirror.js), checked by
            # the replay against navd's answer, when that answer was given on this tree: a refusal
            # with nothing committed since, or the commit right after it.
            refused = reply.get("error", {}).get("data", {}).get("kind") == "unknownNode"
            if (refused and after["version"] == tree["version"]) or reply.get("result", {}).get("version") == tree["version"] + 1:
                seen["js_dismisses"] += 1
                transcript[-1].setdefault("dismisses", []).append(
                    {"tree": {"root": tree["root"], "visible": tree["visible"]}, "graph": described, "refused": refused, "where": where})
        if method == "dismiss" and reply is not None and "result" in reply and not ("to" in P and "node" in P) \
                and after["version"] == tree["version"] + 1 == reply["result"]["version"]:
            # What a dismiss removes, as SPEC section 4 and 10 say; with `merge`, its result merged
            # into the params of the screen left on top (a null removing a field), as `update` merges.
            expected = popped_to(tree["root"], P["to"], P.get("inclusive", False), described) if "to" in P else \
                dismissed(tree["root"], P.get("node", tree["visible"][-1]), described)
            if expected is not None and P.get("merge"):
                # (A node off the visible path: the screen left on top where it was.)
                at = left_on_top(tree["root"], expected, P.get("node", tree["visible"][-1])) if "to" not in P else visible_path(expected)[-1]
                top = next(n for n in nodes(expected) if n["id"] == at)
                top["params"] = {k: v for k, v in dict(top.get("params", {}), **P["result"]).items() if v is not None}
                seen["merged"] += 1
            if expected is not None:
                seen["dismissed"] += 1
                if expected != after["root"]:
                    raise Divergence("dismiss did not remove what SPEC section 4 says at %s:\n expected %s\n tree     %s"
                                     % (where, json.dumps(expected)[:1500], json.dumps(after["root"])[:1500]))
        if method == "reset" and "to" not in P and reply is not None and "result" in reply and after["version"] == tree["version"] + 1 == reply["result"]["version"]:
            # Back to the graph's declared root: its stack's screen, or its tabs, the first selected.
            def shape(n):
                return {k: ([shape(c) for c in v] if k == "children" else v) for k, v in n.items() if k != "id"}
            root = described["root"]
            want = {"kind": "stack", "children": [{"kind": "screen", "coordinator": root["stack"], "params": {}}]} if "stack" in root else \
                {"kind": "tabs", "children": [{"kind": "stack", "children": [{"kind": "screen", "coordinator": t, "params": {}}]} for t in root["tabs"]], "selected": 0}
            seen["reset"] += 1
            if shape(after["root"]) != want:
                raise Divergence("reset {} made %s, not the declared root, at %s" % (json.dumps(after["root"])[:600], where))
        if method == "update" and reply is not None and "result" in reply and after["version"] == tree["version"] + 1 == reply["result"]["version"]:
            # `with` merged into the node's params (a null removes a field); `push` keeps the old
            # params at the end of its history (at most 16); nothing else changes.
            expected = json.loads(json.dumps(tree["root"]))
            node = next(n for n in nodes(expected) if n["id"] == P["node"])
            old = node.get("params", {})
            node["params"] = {k: v for k, v in dict(old, **P["with"]).items() if v is not None}
            if P.get("push"):
                node["paramsHistory"] = (node.get("paramsHistory", []) + [old])[-16:]
            seen["updated"] += 1
            if expected != after["root"]:
                raise Divergence("update did not merge as PROTOCOL.md says at %s:\n expected %s\n tree     %s"
                                 % (where, json.dumps(expected)[:1500], json.dumps(after["root"])[:1500]))
        then = (reply or {}).get("result", {}).get("then", {})
        if method == "flowComplete" and reply is not None and "result" in reply and reply["result"]["version"] == tree["version"] + 1 \
                and after["version"] == then.get("version", reply["result"]["version"]):
            # The flow and everything above it leave (a flow first in a presented stack takes the
            # modal); its `then` (the navigate's, else the declared one) is placed from what is left
            # on top where the flow was (in a tab not selected too), by its `by`, else as a navigation that names none.
            expected = dismissed(tree["root"], P["flow"], described)
            if expected is not None and "node" in then:
                flow = next(n for n in nodes(tree["root"]) if n["id"] == P["flow"])
                spec = thens.get(flow["id"]) or described["coordinators"][flow["coordinator"]]["flow"].get("then")
                declared = spec if isinstance(spec, str) else (spec or {}).get("to")
                by = (spec.get("by") if isinstance(spec, dict) else None) or unnamed_style(described, declared)
                given = from_result(spec.get("with") if isinstance(spec, dict) else None, P["result"])
                # (Its preconditions may redirect it, as any navigation's.)
                declared, given, _, by = redirected(then, declared, given, True, by) or (None, None, None, None)
                seen["thens"] += flow["id"] in thens
                left = expected
                at = left_on_top(tree["root"], left, P["flow"])
                expected = placed(dict({"before": expected, "before_visible": visible_path(expected), "after": after["root"]},
                                       **({"from": at} if at != visible_path(left)[-1] else {})),
                                  then["node"], by, declared, described) if declared else None
                made = next((n for n in nodes(after["root"]) if n["id"] == then["node"]), {})
                if expected is not None and made.get("kind") == "screen" and by != "select":
                    # Its params: the `then`'s `with`, its result references taken from the result,
                    # and what the target's mediation copies from the screen left on top. (A select
                    # shows a tab's screen as it is, as a navigate's does.)
                    source = next(n for n in nodes(left) if n["id"] == at)
                    params, _ = mediated(given, declared, source, described)
                    seen["then_params"] += bool(given)
                    if made.get("params") != params:
                        raise Divergence("flowComplete went on to %s with params %s; its then %s and the result %s make %s, at %s"
                                         % (made["id"], json.dumps(made.get("params")), json.dumps(spec), json.dumps(P["result"]), json.dumps(params), where))
            if expected is not None:
                seen["completed"] += 1
                if expected != after["root"]:
                    raise Divergence("flowComplete did not remove what PROTOCOL.md says at %s:\n expected %s\n tree     %s"
                                     % (where, json.dumps(expected)[:1500], json.dumps(after["root"])[:1500]))
        holder = parents_of(tree["root"]).get(P.get("flow")) if method == "flowComplete" else None
        if holder is not None and "node" in then and reply["result"]["version"] == tree["version"] + 1 == after["version"] \
                and holder["children"][0]["id"] == P["flow"] and (holder is tree["root"] or parents_of(tree["root"]).get(holder["id"], {}).get("kind") == "tabs"):
            # A flow first in the root stack or a tab ends as its then takes its place, in one commit
            # (PROTOCOL.md, flowComplete): the target (or where a precondition redirected it) replaces
            # the flow and what is above it in that stack, or, by root, the tree becomes a stack of it.
            made = next((n for n in nodes(after["root"]) if n["id"] == then["node"]), None)
            replaced = json.loads(json.dumps(tree["root"]))
            stack = next(n for n in nodes(replaced) if n["id"] == holder["id"])
            stack["children"] = [made]
            rooted = {"id": after["root"]["id"], "kind": "stack", "children": [made]}
            if made is None or after["root"] not in (replaced, rooted):
                raise Divergence("flowComplete of %s, first in its stack, did not make its then take its place at %s:\n tree %s"
                                 % (P["flow"], where, json.dumps(after["root"])[:1500]))
            seen["took_place"] += 1
        if method == "flowComplete" and "result" in P and reply is not None:
            # A result that fails the flow's result schema (ok, a boolean, required) is refused.
            flow = next((n for n in nodes(tree["root"]) if n["id"] == P["flow"] and n["kind"] == "flow"), None)
            schema = described["coordinators"].get(flow["coordinator"], {}).get("flow", {}).get("result") if flow else None
            bad = not isinstance(P["result"].get("ok"), bool) or not isinstance(P["result"].get("n", 0), int)
            if schema and bad and reply.get("error", {}).get("data", {}).get("kind") != "invalidSetup":
                raise Divergence("a result the flow's schema refuses answered %s at %s" % (json.dumps(reply)[:200], where))
        if method == "dismiss" and "result" in P and "node" not in P and reply is not None and "result" in reply:
            # screenResult names the screen that was shown and the one now on top.
            said = [n["params"] for n in full_notes if n.get("method") == "screenResult"]
            if len(said) != 1 or said[0]["to"] != after["visible"][-1] or said[0]["node"] != tree["visible"][-1] or said[0]["result"] != P["result"]:
                raise Divergence("dismiss with a result said %s (top before %s, after %s) at %s"
                                 % (json.dumps(said)[:300], tree["visible"][-1], after["visible"][-1], where))
        if "hints" in P and reply is not None and "result" in reply and reply["result"]["version"] in heard:
            if heard[reply["result"]["version"]].get("hints") != P["hints"]:
                raise Divergence("stackChanged %s did not carry the hints at %s" % (json.dumps(heard[reply["result"]["version"]])[:300], where))
        for n in nodes(after["root"]):
            declared = described["coordinators"].get(n.get("coordinator"), {}).get("kind")
            if "coordinator" in n and declared != n["kind"]:
                raise Divergence("%s %s shows %s, which the graph declares as %s, at %s" % (n["kind"], n["id"], n["coordinator"], declared, where))
            if "presented" in n and n["kind"] not in ("screen", "flow"):
                raise Divergence("a %s presents (%s) at %s" % (n["kind"], n["id"], where))
            if n["kind"] in ("stack", "tabs", "flow") and not n.get("children"):
                raise Divergence("%s %s is empty at %s" % (n["kind"], n["id"], where))
    # Every navigation sent is answered once: the provider fails what it was asked, the rest are
    # cancelled, and nothing is left waiting.
    for _ in range(20):  # a failed `pq` asks for its recovery, which is refused in turn
        for ask in asks:
            provider.answer(ask, {"recovered": False} if ask["method"] == "precondition.recover" else {"passed": False, "reason": "the walk ends"})
        asks.clear()
        settle("the walk's end")
        if not asks:
            break
    for n in sorted(navigations):
        driver.call("cancel", {"session": session, "navigation": n})
    settle("the walk's end")
    if pending:
        raise Divergence("no reply to %s at the walk's end" % "; ".join(pending.values()))
    left = driver.call("stats")["result"]
    if left["pending"] or left["pendingClientRequests"] or left["providerRequestsWaiting"]:
        raise Divergence("navd still holds pending work at the walk's end (seed %d): %s"
                         % (seed, {k: left[k] for k in ("pending", "pendingClientRequests", "providerRequestsWaiting")}))
    check_mirrors(driver.call("tree", {"session": session})["result"], "the walk's end (seed %d)" % seed)
    return commits


def replay_in_js(transcript, work):
    """nav-web's mirror, fed the compact notifications the walk heard, must hold navd's tree after
    every step (scripts/replay-js-mirror.mjs)."""
    path = os.path.join(work, "transcript.json")
    with open(path, "w") as f:
        json.dump(transcript, f)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "replay-js-mirror.mjs")
    r = subprocess.run(["node", script, path], capture_output=True, text=True)
    if r.returncode != 0:
        raise Divergence("nav-web's mirror differs: %s" % (r.stderr or r.stdout)[-1500:])


def dry_preconditions(dry):
    return dry is not None and bool(dry.get("result", {}).get("preconditions"))


class Server:
    """navd on a graph: ephemeral, durable (a state file) so that it can be killed and restarted,
    or a node of a cluster on PostgreSQL (`store`), with a second node beside it."""

    def __init__(self, navd, graph_dir, work, durable, store=None, node="walk"):
        os.makedirs(work, exist_ok=True)
        self.sock = os.path.join(work, "navd.sock")
        self.args = [navd, "serve", "--graph", graph_dir, "--socket", self.sock, "--log-level", "error"]
        if store:
            # A node of a cluster (CLUSTER.md): the store of record is the database.
            self.args += ["--store", store, "--node", node, "--lease", "2s"]
        elif durable:
            # A small log, so that walks compact it often (a restart may read a snapshot, a log, or
            # both); durability full on some graphs.
            r = random.Random(sorted(os.listdir(graph_dir))[0] + open(os.path.join(graph_dir, sorted(os.listdir(graph_dir))[0])).read())
            self.args += ["--state", os.path.join(work, "navd.state"), "--log-compact-bytes", str(r.choice([4096, 65536, 16777216])),
                          "--log-compact-ratio", "0", "--durability", r.choice(["process", "full"])]
        else:
            self.args += ["--ephemeral"]
        self.log = os.path.join(work, "navd.log")
        self.graph_dir = graph_dir
        self.start()
        # A second node, where a subscriber follows the sessions the first one owns (not with
        # restarts: it would take them over while the first is down).
        self.second = Server(navd, graph_dir, os.path.join(work, "second"), False, store, node + "2") \
            if store and not durable and node == "walk" else None

    def start(self):
        self.p = subprocess.Popen(self.args, stdout=open(self.log, "a"), stderr=subprocess.STDOUT)
        for _ in range(500):
            if self.p.poll() is not None:
                break
            try:
                Conn(self.sock).call("ping")
                return
            except OSError:
                time.sleep(0.02)  # waiting for a child process to listen: nothing to await
        self.p.kill()
        raise Divergence("navd did not start on %s: %s" % (self.graph_dir, open(self.log).read()[-500:]))

    def kill_and_restart(self):
        self.p.kill()
        self.p.wait()
        self.start()

    def stop(self):
        self.p.terminate()
        self.p.wait()
        if self.second:
            self.second.stop()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--navd", default=os.environ.get("NAVD_BIN", ".build/debug/navd"))
    ap.add_argument("--graph", help="a graph directory of your own instead of random ones")
    ap.add_argument("--graphs", type=int, default=10)
    ap.add_argument("--first-graph", type=int, default=0,
                    help="the number of the first graph (graph g of a seed is the same whatever the run's other graphs)")
    ap.add_argument("--walks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--restarts", action="store_true", help="a durable navd, killed with SIGKILL and restarted now and then")
    ap.add_argument("--cluster", action="store_true",
                    help="navd as a cluster node on a private PostgreSQL (scripts/pg-temp.sh), a database per graph")
    ap.add_argument("--js-mirror", action="store_true",
                    help="also replay each walk's compact notifications in nav-web's mirror (Clients/web/Assets/mirror.js, with node)")
    a = ap.parse_args(argv)
    total = 0
    pg = tempfile.mkdtemp(prefix="navd-walk-pg.") if a.cluster else None
    pg_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pg-temp.sh")
    try:
        conninfo = subprocess.run([pg_script, "start", pg], check=True, capture_output=True, text=True).stdout.strip() if pg else None
        return walks(a, conninfo)
    finally:
        if pg:
            subprocess.run([pg_script, "stop", pg], capture_output=True)
            shutil.rmtree(pg, ignore_errors=True)


def walks(a, conninfo):
    total = 0
    first = 0 if a.graph else a.first_graph
    for g in range(first, first + (1 if a.graph else a.graphs)):
        work = tempfile.mkdtemp(prefix="navd-walk.")
        graph_dir = a.graph or os.path.join(work, "graph")
        # Half the graphs are two modules (the split depends on the graph's number alone, so that
        # a reload keeps each coordinator's module).
        split = random.Random(a.seed * 1000 + g + 17).random() < 0.5
        if not a.graph:
            os.makedirs(graph_dir)
            write_graph(graph_dir, module_files(random_graph(a.seed * 1000 + g), split))
        store = None
        if conninfo:
            # A database of its own per graph (the sessions of each graph's walks start afresh).
            subprocess.run(["psql", "-X", "-q", "-d", conninfo, "-c", "CREATE DATABASE walk%d" % g], check=True, capture_output=True)
            store = conninfo.replace("dbname=postgres", "dbname=walk%d" % g)
        server = Server(a.navd, graph_dir, work, a.restarts, store)
        try:
            for w in range(a.walks):
                transcript = [] if a.js_mirror else None
                total += walk(server, a.seed * 1000 + g * 10 + w, a.steps, a.restarts,
                              None if a.graph else (lambda seed, split=split: module_files(random_graph(seed), split)), transcript)
                if transcript is not None:
                    replay_in_js(transcript, work)
        except Divergence as e:
            print("random-walk: %s\n graph: %s (kept)" % (e, graph_dir), file=sys.stderr)
            return 1
        finally:
            server.stop()
        shutil.rmtree(work)  # its navd's log and state (and the graph it wrote, without --graph)
    print("random-walk: %d graph(s) x %d walk(s) of %d steps, %d commits, %d navigations that waited, %d provider answers (%d to recoveries), %d URLs resolved and reopened (%d with params a link carries), %d navigations placed (%d after waiting for preconditions, %d of them after a popUpTo, %d after a popUpTo, %d with a field mediation filled, %d by a route, %d redirected by a precondition), %d navigate {existing} and %d links or reset {to} built as PROTOCOL.md says (%d of them redirected on the way), %d dismissals (%d merging their result), %d flows completed (%d going on to the `then` their navigate gave, %d with params from the result, %d first in their stack whose then took their place), %d resets and %d updates as the model says, %d waiting navigations superseded, %d leave guards asked about their screen, %d other asks about a coordinator showing the precondition, %d other notifications relayed to a second node as the first node's subscriber heard them, %d dismisses of the top judged by nav-web's rule as navd answered: "
          "every mirror, dryRun and tree agreed" % (1 if a.graph else a.graphs, a.walks, a.steps, total, seen["waited"], seen["answered"], seen["recoveries"], seen["resolved"], seen["carried"], seen["placed"], seen["waited_placed"], seen["waited_popped"], seen["popped"], seen["mediated"], seen["routed"], seen["redirected"], seen["reused"], seen["linked"], seen["linked_redirected"], seen["dismissed"], seen["merged"], seen["completed"], seen["thens"], seen["then_params"], seen["took_place"], seen["reset"], seen["updated"], seen["superseded"], seen["leave_asks"], seen["target_asks"], seen["relayed"], seen["js_dismisses"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
