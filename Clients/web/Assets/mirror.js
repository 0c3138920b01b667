// A session's tree as a subscriber keeps it: the snapshot `subscribe` answers, then each
// `stackChanged` applied in order (PROTOCOL.md's table of change ops), as the Swift and Python
// mirrors do (all three replay Tests/Fixtures/changes.json in their tests). The last changes are
// kept for time travel: a ring of at most `limit`, the oldest folded into the tree it starts from.
// No DOM here: the page draws it, `node --test` tests it.

export const clone = (v) => JSON.parse(JSON.stringify(v));

// The node with that id, or null.
export function find(root, id) {
  const todo = [root];
  while (todo.length) {
    const n = todo.pop();
    if (n.id === id) return n;
    if (n.presented) todo.push(n.presented);
    for (const c of n.children || []) todo.push(c);
  }
  return null;
}

// Applies `changes` to `tree` ({root, ...}) in place; throws when a change names a node the tree
// does not hold or an op this page does not know.
export function applyChanges(tree, changes) {
  for (const ch of changes) {
    if (ch.op === 'reset') { tree.root = clone(ch.root); continue; }
    if (ch.op === 'update') {
      const n = find(tree.root, ch.node.id);
      if (!n) throw new Error(`change updates ${ch.node.id}, which the tree does not hold`);
      n.params = clone(ch.node.params || {});
      // Earlier params (update {push: true}), when the screen keeps any.
      if (ch.node.paramsHistory) n.paramsHistory = clone(ch.node.paramsHistory); else delete n.paramsHistory;
      continue;
    }
    const parent = find(tree.root, ch.parent);
    if (!parent) throw new Error(`change names ${ch.parent}, which the tree does not hold`);
    switch (ch.op) {
      case 'push': (parent.children = parent.children || []).push(clone(ch.node)); break;
      case 'present': parent.presented = clone(ch.node); break;
      case 'pop': parent.children.splice(ch.index); break;
      case 'dismiss': delete parent.presented; break;
      case 'replace': parent.children.splice(ch.index); parent.children.push(clone(ch.node)); break;
      case 'select': parent.selected = ch.index; if (ch.history) parent.history = ch.history; else delete parent.history; break;
      default: throw new Error(`unknown op ${ch.op}`);
    }
  }
}

// The compact form (subscribe {notifications: "compact"}, PROTOCOL.md's "Compact notifications"):
// each change is an array of the full change's fields in the same order, ids as numbers; `expand`
// gives back the full stackChanged params, which is what the mirror applies.
const FIELDS = {
  push: ['parent', 'node'], present: ['parent', 'node'], pop: ['parent', 'index', 'removed'],
  dismiss: ['parent', 'removed'], replace: ['parent', 'index', 'node', 'removed'],
  select: ['parent', 'index', 'history'], reset: ['root', 'removed'], update: ['node'],
};

const id = (n) => {
  if (!Number.isInteger(n)) throw new Error(`a compact stackChanged names nodes by number, not ${JSON.stringify(n)}`);
  return `n${n}`;
};

// A compact node ({i, k?, c?, w?, ph?, rc?, th?, ch?, sel?, hi?, pr?}) in the full form.
export function expandNode(c) {
  const kind = c.k || 'screen';
  const n = { id: id(c.i), kind };
  const children = (c.ch || []).map(expandNode);
  if (kind === 'stack') n.children = children;
  if ('c' in c) { n.coordinator = c.c; n.params = c.w || {}; }
  if ('ph' in c) n.paramsHistory = c.ph;
  if ('rc' in c) n.recovery = c.rc;
  if ('th' in c) n.then = c.th;
  if (kind === 'flow' || kind === 'tabs') n.children = children;
  if (kind === 'tabs') { n.selected = c.sel || 0; if ('hi' in c) n.history = c.hi; }
  if ('pr' in c) n.presented = expandNode(c.pr);
  return n;
}

function expandChange(c) {
  const fields = FIELDS[c[0]];
  if (!fields) throw new Error(`unknown op ${c[0]}`);
  const ch = { op: c[0] };
  fields.forEach((name, i) => {
    if (i + 1 >= c.length) return;
    const v = c[i + 1];
    if (name === 'parent') ch[name] = id(v);
    else if (name === 'node' || name === 'root') ch[name] = expandNode(v);
    else if (name === 'removed') ch[name] = v.map(id);
    else ch[name] = v;
  });
  return ch;
}

// A stackChanged's params in the full form: `p` as it is, or expanded from the compact form
// ([ref, version, changes, visible, hints?]) as the notification of `session`.
export function expand(p, session) {
  if (!Array.isArray(p)) return p;
  const full = { session, version: p[1], changes: p[2].map(expandChange), visible: p[3].map(id) };
  if (p.length > 4) full.hints = p[4];
  return full;
}

export class SessionMirror {
  // `snapshot`: subscribe's answer ({session, version, root, visible}); `limit`: how many changes
  // time travel keeps.
  constructor(snapshot, limit = 1000) {
    this.base = clone(snapshot);   // the tree before the oldest change kept
    this.live = clone(snapshot);   // the tree now
    this.log = [];                 // the last stackChanged params, oldest first
    this.limit = Math.max(1, limit);
  }

  // Applies a stackChanged's params. Answers {applied, gap, folded}: applied false for an old
  // change; gap true when versions were missed (take a new snapshot: subscribe again), unless
  // the change is a snapshot itself (one reset); folded: the versions that left the ring.
  apply(p) {
    if (p.version <= this.live.version) return { applied: false, gap: false, folded: [] };
    const snapshot = p.changes.length === 1 && p.changes[0].op === 'reset';
    if (p.version !== this.live.version + 1 && !snapshot) return { applied: false, gap: true, folded: [] };
    applyChanges(this.live, p.changes);
    this.live.version = p.version;
    this.live.visible = p.visible;
    this.log.push(clone(p));
    const folded = [];
    while (this.log.length > this.limit) {
      const old = this.log.shift();
      applyChanges(this.base, old.changes);
      this.base.version = old.version;
      this.base.visible = old.visible;
      folded.push(old.version);
    }
    return { applied: true, gap: false, folded };
  }

  // The oldest version time travel reaches.
  get oldest() { return this.base.version; }

  // The tree as it was at `version` (from the oldest kept on): the base, then each change up to it.
  treeAt(version) {
    const t = clone(this.base);
    for (const p of this.log) {
      if (p.version > version) break;
      applyChanges(t, p.changes);
      t.version = p.version;
      t.visible = p.visible;
    }
    return t;
  }
}

// The tab a dismiss at the first screen of `shell`'s selected tab goes back to, by its `back:`
// (the root's or its container's in `graph`, as graph.describe answers; PROTOCOL.md, dismiss), or null.
function tabToGoBack(shell, graph) {
  const declared = shell.coordinator ? (graph.coordinators[shell.coordinator] || {}).back : (graph.root || {}).back;
  if (declared === 'firstTab') return shell.selected === 0 ? null : 0;
  if (declared === 'order') return shell.selected === 0 ? null : shell.selected - 1;
  if (declared === 'history') return shell.history && shell.history.length ? shell.history[shell.history.length - 1] : null;
  return null;
}

// Why navd would answer a plain dismiss of the visible top of `tree` ({root, visible}) "nothing
// to dismiss", or null when it would act: PROTOCOL.md's dismiss, read on the visible path (each
// node's parent is the one before it), as the Swift TreeMirror's nothingToDismiss(graph:). A
// flow's first step stands for its flow, a tab container's first screen for the container; a
// presented stack's first screen dismisses the modal; params kept by update {push} come back first.
export function nothingToDismiss(tree, graph) {
  const v = tree.visible.map((id) => find(tree.root, id)).filter(Boolean);
  const top = v[v.length - 1];
  if (!top || !graph || (top.paramsHistory && top.paramsHistory.length)) return null;
  let i = v.length - 1;
  let goingBack = true;
  while (i >= 1) {
    const node = v[i];
    const container = v[i - 1];
    if (!container.children || !container.children.length || container.children[0].id !== node.id) return null;  // popped from its stack
    const shell = i >= 2 ? v[i - 2] : null;
    if (goingBack && node.kind === 'screen' && shell && shell.kind === 'tabs' && tabToGoBack(shell, graph) !== null) return null;
    goingBack = false;
    if (container.kind === 'flow') { i -= 1; continue; }  // its first step: the flow goes
    if (shell && shell.kind === 'tabs' && shell.coordinator) { i -= 2; continue; }  // the container goes
    if (shell && (shell.kind === 'screen' || shell.kind === 'flow')) return null;  // the modal goes
    const name = node.coordinator || node.kind;
    return `nothing to dismiss: ${node.kind === 'flow' ? `flow ${name} is the first node` : `${name} is the first screen`} of ${shell ? 'a tab' : 'the root stack'}`;
  }
  return null;
}
