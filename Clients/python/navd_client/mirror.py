"""A session's tree kept current from ``stackChanged`` notifications."""

import copy

from .errors import OutOfStep, ProtocolError

__all__ = ["TreeMirror", "apply_changes", "expand"]


# ----------------------------------------------------------------------------- the tree

class TreeMirror:
    """A session's tree as navd last described it: ``version``, ``root``, ``visible`` (node ids
    from the root to the screen the user sees). :meth:`apply` applies a ``stackChanged``.
    ``closed`` is set when navd said ``sessionClosed``: the tree is the session's last."""

    def __init__(self, snapshot):
        self.session = snapshot["session"]
        self.version = snapshot["version"]
        self.root = snapshot["root"]
        self.visible = list(snapshot["visible"])
        self.stale = False
        self.closed = False

    def node(self, node_id):
        """The node with that id, or None."""
        for n in self.nodes():
            if n.get("id") == node_id:
                return n
        return None

    def nodes(self):
        """Every node, depth first (children, then what a screen presents)."""
        todo = [self.root]
        while todo:
            n = todo.pop()
            yield n
            if "presented" in n:
                todo.append(n["presented"])
            todo.extend(reversed(n.get("children", [])))

    def find(self, coordinator):
        """The screens and flows of that coordinator, in tree order."""
        return [n for n in self.nodes() if n.get("coordinator") == coordinator]

    @property
    def top(self):
        """The visible screen."""
        return self.node(self.visible[-1]) if self.visible else None

    @property
    def path(self):
        """The coordinators on the visible path (screens and flows), root first: the top of each
        stack, into flows and what screens present (see :attr:`stack` for a whole stack)."""
        return [n["coordinator"] for n in map(self.node, self.visible) if n and "coordinator" in n]

    @property
    def stack(self):
        """The coordinators of the innermost stack on the visible path, bottom first (a tab's
        stack, or the stack a screen presents)."""
        for node_id in reversed(self.visible):
            n = self.node(node_id)
            if n is not None and n.get("kind") == "stack":
                return [c.get("coordinator") for c in n.get("children", [])]
        return []

    def apply(self, change):
        """Applies a ``stackChanged``'s params; False when it is not newer (or not this session's).
        Raises :class:`OutOfStep` on a gap (a snapshot, one ``reset``, may cover one)."""
        if self.closed or change.get("session") != self.session or change["version"] <= self.version:
            return False
        snapshot = len(change["changes"]) == 1 and change["changes"][0].get("op") == "reset"
        if change["version"] != self.version + 1 and not snapshot:
            raise OutOfStep("stackChanged version %d after %d: versions were missed" % (change["version"], self.version))
        self.root = apply_changes(self.root, change["changes"])
        self.version = change["version"]
        self.visible = list(change["visible"])
        return True


def _find(root, node_id):
    todo = [root]
    while todo:
        n = todo.pop()
        if n.get("id") == node_id:
            return n
        if "presented" in n:
            todo.append(n["presented"])
        todo.extend(n.get("children", []))
    return None


def apply_changes(root, changes):
    """The tree after a ``stackChanged``'s ``changes`` (PROTOCOL.md's table of ops): ``root`` is
    changed in place and returned (a ``reset`` returns its own). Raises :class:`OutOfStep` when a
    change names a node the tree does not hold, or an op this client does not know."""
    for ch in changes:
        op = ch["op"]
        if op == "reset":
            root = copy.deepcopy(ch["root"])
            continue
        if op == "update":
            n = _find(root, ch["node"]["id"])
            if n is None:
                raise OutOfStep("stackChanged updates node %s, which the mirror does not hold" % ch["node"]["id"])
            n["params"] = copy.deepcopy(ch["node"].get("params", {}))
            # Earlier params (update {push: true}), when the screen keeps any.
            if "paramsHistory" in ch["node"]:
                n["paramsHistory"] = copy.deepcopy(ch["node"]["paramsHistory"])
            else:
                n.pop("paramsHistory", None)
            continue
        parent = _find(root, ch["parent"])
        if parent is None:
            raise OutOfStep("stackChanged names node %s, which the mirror does not hold" % ch["parent"])
        if op == "push":
            parent.setdefault("children", []).append(copy.deepcopy(ch["node"]))
        elif op == "present":
            parent["presented"] = copy.deepcopy(ch["node"])
        elif op == "pop":
            del parent["children"][ch["index"]:]
        elif op == "dismiss":
            parent.pop("presented", None)
        elif op == "replace":
            del parent["children"][ch["index"]:]
            parent["children"].append(copy.deepcopy(ch["node"]))
        elif op == "select":
            parent["selected"] = ch["index"]
            # Tabs that keep a history (``back: history``) carry it in the change.
            if "history" in ch:
                parent["history"] = list(ch["history"])
            else:
                parent.pop("history", None)
        else:
            raise OutOfStep("unknown change op %r: take a new snapshot" % op)
    return root


# ----------------------------------------------------------------------------- the compact form

# Each op's fields after the op, in the order both forms write them (PROTOCOL.md, "Compact
# notifications"); select's history is there only when the tabs keep one.
_FIELDS = {
    "push": ("parent", "node"), "present": ("parent", "node"), "pop": ("parent", "index", "removed"),
    "dismiss": ("parent", "removed"), "replace": ("parent", "index", "node", "removed"),
    "select": ("parent", "index", "history"), "reset": ("root", "removed"), "update": ("node",),
}


def _id(n):
    if not isinstance(n, int) or isinstance(n, bool):
        raise ProtocolError("a compact stackChanged names nodes by number, not %r" % (n,))
    return "n%d" % n


def _expand_node(c):
    """A compact node (``{i, k?, c?, w?, ph?, rc?, th?, ch?, sel?, hi?, pr?}``) in the full form."""
    kind = c.get("k", "screen")
    n = {"id": _id(c["i"]), "kind": kind}
    children = [_expand_node(x) for x in c.get("ch", [])]
    if kind == "stack":
        n["children"] = children
    if "c" in c:
        n["coordinator"] = c["c"]
        n["params"] = c.get("w", {})
    if "ph" in c:
        n["paramsHistory"] = c["ph"]
    if "rc" in c:
        n["recovery"] = c["rc"]
    if "th" in c:
        n["then"] = c["th"]
    if kind in ("flow", "tabs"):
        n["children"] = children
    if kind == "tabs":
        n["selected"] = c.get("sel", 0)
        if "hi" in c:
            n["history"] = c["hi"]
    if "pr" in c:
        n["presented"] = _expand_node(c["pr"])
    return n


def _expand_change(c):
    op = c[0]
    fields = _FIELDS.get(op)
    if fields is None:
        raise OutOfStep("unknown change op %r: take a new snapshot" % (op,))
    ch = {"op": op}
    for name, v in zip(fields, c[1:]):
        if name == "parent":
            ch[name] = _id(v)
        elif name in ("node", "root"):
            ch[name] = _expand_node(v)
        elif name == "removed":
            ch[name] = [_id(x) for x in v]
        else:
            ch[name] = v
    return ch


def expand(params, session):
    """A ``stackChanged``'s params in the full form: ``params`` as they are, or, from the compact
    form (``[ref, version, changes, visible, hints?]``), as the notification of ``session``."""
    if not isinstance(params, list):
        return params
    try:
        full = {"session": session, "version": params[1], "changes": [_expand_change(c) for c in params[2]],
                "visible": [_id(n) for n in params[3]]}
    except (KeyError, TypeError, IndexError, AttributeError) as e:
        raise ProtocolError("a compact stackChanged of an unexpected shape (%s): %r" % (e, str(params)[:80])) from None
    if len(params) > 4:
        full["hints"] = params[4]
    return full


def _mirror(snapshot):
    try:
        return TreeMirror(snapshot)
    except (KeyError, TypeError, AttributeError):
        raise ProtocolError("navd answered a tree of an unexpected shape: %r" % (str(snapshot)[:80],)) from None
