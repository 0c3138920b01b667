// nav-web's page: a navd client over nav-web's WebSocket relay (rpc.js). It mirrors the session's
// tree from `subscribe` and `stackChanged` (mirror.js, which keeps the last changes for time
// travel: a ring of `?log=N`, default 1,000), and draws it: the tree, the visible screen's
// actions, the change log, pending navigations, provider requests, the graph.
import { SessionMirror, expand, find, nothingToDismiss } from './mirror.js';
import { Connection, describe } from './rpc.js';
import { closeForm, openForm } from './form.js';

const $ = (id) => document.getElementById(id);

// Text from navd as the page shows it (legible): each bidirectional formatting character (the marks U+200E,
// U+200F and U+061C, the embeddings and overrides U+202A-U+202E, the isolates U+2066-U+2069) is
// written out as \u{202E}, as nav-tui and navctl write it, because the browser would obey it: a
// param "\u{202E}gnp.exe" would show as "exe.png" (the "Trojan Source" trick).
const BIDI = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
const legible = (text) => String(text).replace(BIDI, (c) => `\\u{${c.codePointAt(0).toString(16).toUpperCase()}}`);

const state = {
  session: new URLSearchParams(location.search).get('session') || 'main',
  subscribed: null,
  ref: null,         // the number compact stackChanged name the subscribed session by
  formAwaits: null,  // the target of the navigation the open form sent, until it is answered or waits
  graph: null,
  mirror: null,      // the session's tree and its last changes (SessionMirror)
  logLimit: Math.max(10, Number(new URLSearchParams(location.search).get('log')) || 1000),
  mine: new Set(),   // versions this page's own calls made
  travel: null,      // the version shown instead of the live tree
  pending: new Map(),
  readOnly: false,
  svgLoaded: false,
  provided: new Set(),  // provider preconditions this page answers for
  requests: new Map(),  // navd's requests waiting for this page's answer, by id
  closed: null,         // the name of the subscribed session once navd said sessionClosed
};

// ---- JSON-RPC over the WebSocket ----
let rpc;
const call = (method, params) => rpc.call(method, params);

// The last error navd sent about the connection itself (id null: client.kill, a limit), said
// again when the connection ends, so that the reason is not lost under "disconnected".
let lastError = null;

function connect() {
  rpc = new Connection(`ws://${location.host}/ws`, {
    open: () => start().catch((e) => status(describe(e), true)),
    close: () => status(`disconnected from nav-web${lastError ? ` (${describe(lastError)})` : ''}: reload the page to connect again`, true),
    notification: notified,
    request: requested,
    error: (e) => { lastError = e; status(describe(e), true); },
  });
}

function status(text, bad = false) {
  const s = $('status');
  s.textContent = legible(text);
  s.className = bad ? 'error' : 'dim';
}

// ---- Start, sessions, subscription ----
async function start() {
  await call('hello', { client: 'nav-web' });
  state.graph = await call('graph.describe');
  await loadSessions();
  await subscribe(state.session);
  status('connected');
  renderProviders();
  drawGraph();
}

// ---- Provider preconditions: navd asks this page (precondition.evaluate / recover) ----
function renderProviders() {
  const box = $('providers');
  box.replaceChildren();
  // A precondition's own provider, and a recovery provider of another name (recover: {provider:
  // fixHuman}), which navd asks by that name: each is answered by whoever provides its name.
  const recovers = new Map();
  const names = [];
  for (const [n, p] of Object.entries(state.graph.preconditions || {})) {
    if (p.provider) names.push(n);
    const r = p.recover && typeof p.recover.provider === 'string' ? p.recover.provider : null;
    if (r && r !== n && !n.endsWith('.' + r)) {
      if (!recovers.has(r)) { recovers.set(r, []); names.push(r); }
      recovers.get(r).push(n);
    } else if (r && !names.includes(n)) names.push(n);
  }
  if (!names.length) { box.textContent = 'none in the graph'; return; }
  box.className = '';
  for (const name of names) {
    const b = document.createElement('button');
    b.dataset.provide = name;
    const what = recovers.has(name) ? ` (recovers ${recovers.get(name).join(', ')})` : '';
    b.textContent = (state.provided.has(name) ? `answering ${name}` : `answer ${name}`) + what;
    b.disabled = state.readOnly || state.provided.has(name);
    b.onclick = async () => {
      try {
        await call('provide', { preconditions: [...state.provided, name] });
        state.provided.add(name);
        status(`this page answers ${name}`);
      } catch (e) { status(`provide ${name}: ${describe(e)}`, true); }
      renderProviders();
    };
    box.append(b, ' ');
  }
}

function requested(m) {
  if (m.method !== 'precondition.evaluate' && m.method !== 'precondition.recover') {
    rpc.respondError(m.id, { code: -32601, message: `nav-web's page does not handle ${m.method}` });
    return;
  }
  state.requests.set(m.id, m);
  renderRequests();
}

function answer(id, passed) {
  const reason = passed ? '' : (prompt('Why does it fail?', 'refused in nav-web') || 'refused in nav-web');
  rpc.respond(id, { passed, recovered: passed, reason });
  state.requests.delete(id);
  renderRequests();
}

// What a precondition request is about: the navigation (its target, style, params and source),
// or for a leave guard the screen it protects (its id, coordinator and params).
function describeNavigation(n) {
  if (!n || typeof n !== 'object') return '?';
  const w = n.with && typeof n.with === 'object' && Object.keys(n.with).length ? ` ${JSON.stringify(n.with)}` : '';
  if (n.leaving) return `leaving ${n.leaving} (${n.coordinator})${w}${n.to ? `, to go to ${n.to}` : ''}, ${n.id}`;
  return `${n.to} by ${n.by}${w} from ${n.from}, ${n.id}`;
}

function renderRequests() {
  const ul = $('requests');
  ul.replaceChildren();
  for (const [id, m] of state.requests) {
    const p = m.params || {};
    const li = document.createElement('li');
    li.dataset.request = String(id);
    li.append(legible(`${m.method === 'precondition.recover' ? 'recover' : 'evaluate'} ${p.precondition} for ${describeNavigation(p.navigation)} (session ${p.session}) `));
    for (const [label, passed] of [['pass', true], ['fail', false]]) {
      const b = document.createElement('button');
      b.textContent = label;
      b.dataset.answer = label;
      b.onclick = () => answer(id, passed);
      li.append(b, ' ');
    }
    ul.append(li);
  }
}

async function loadSessions() {
  const r = await call('session.list');
  const select = $('session');
  select.innerHTML = '';
  for (const name of r.sessions) {
    const o = document.createElement('option');
    o.value = o.textContent = name;
    if (name === state.session) o.selected = true;
    select.append(o);
  }
}

async function subscribe(name) {
  if (state.subscribed) await call('unsubscribe', { session: state.subscribed }).catch(() => {});
  // The compact form: about half the bytes per change; expanded (mirror.js) before it is applied.
  const snapshot = await call('subscribe', { session: name, notifications: 'compact' });
  state.session = name;
  state.subscribed = name;
  state.closed = null;
  state.ref = snapshot.ref;
  state.mirror = new SessionMirror(snapshot, state.logLimit);
  state.mine = new Set();
  state.travel = null;
  state.pending.clear();
  // What waits already (navd answers it with the snapshot): listed before its next notification.
  for (const p of snapshot.pending || []) state.pending.set(p.navigation, p);
  $('log').tBodies[0].replaceChildren();
  render();
  loadFacts();
}

// ---- Notifications ----
function notified(method, p) {
  if (method === 'navweb.hello') {
    state.readOnly = !!p.readOnly;
    $('mode').textContent = state.readOnly ? 'read-only' : '';
    return;
  }
  if (method === 'navweb.notice') { status(p.message, true); return; }
  if (method === '$/cancelRequest') { state.requests.delete(p.id); renderRequests(); return; }
  if (method === 'graphReloaded') {
    call('graph.describe').then((g) => { state.graph = g; drawGraph(); return subscribe(state.session); });
    return;
  }
  if (method === 'graphReloadRefused') {
    // Someone saved a graph navd does not serve (a --watch-graph edit, a reload): say why.
    const more = p.count > 1 ? ` (and ${p.count - 1} more)` : '';
    status(`graph not reloaded, the one in force stays: ${(p.errors || [])[0] || ''}${more}${p.hint ? ` (${p.hint})` : ''}`, true);
    return;
  }
  if (method === 'sessionClosed') {
    if (p.session !== state.subscribed) return;
    // Its subscription ended with it: the last tree stays on the page, without actions, until
    // another session is picked (a session opened again under the name starts at version 0).
    state.subscribed = null;
    state.closed = p.session;
    state.pending.clear();
    actionsShown = null;
    status(`session "${p.session}" was closed (session.close) at version ${p.version}; its last tree is shown: pick another session`, true);
    render();
    loadSessions().catch(() => {});
    return;
  }
  if (method === 'stackChanged' && Array.isArray(p)) {
    if (p[0] !== state.ref) return;
    p = expand(p, state.subscribed);
  }
  if (p.session !== undefined && p.session !== state.subscribed) return;
  if (method === 'stackChanged') {
    let r;
    try { r = state.mirror.apply(p); } catch (e) { subscribe(state.session); return; }
    if (r.gap) { subscribe(state.session); return; }
    if (!r.applied) return;
    // Changes that left the ring leave the page's marks; time travel stays within the ring.
    for (const v of r.folded) state.mine.delete(v);
    if (state.travel !== null && state.travel < state.mirror.oldest) state.travel = state.mirror.oldest;
    scheduleRender();
    scheduleFacts();
  } else if (method === 'navigationPending') {
    state.pending.set(p.navigation, p);
    if (state.formAwaits === p.to && !$('form').hidden) {
      // The navigation the form sent waits for a precondition: its input was accepted, and what it
      // waits for (a recovery flow) may need the page.
      closeForm();
      state.formAwaits = null;
    }
    renderPending();
  } else if (method === 'navigationEnded') {
    // Any client's navigation: the page is not answered for others', so this is how it learns.
    state.pending.delete(p.navigation);
    renderPending();
  } else if (method === 'flowCompleted') {
    for (const [id, nav] of state.pending) if (nav.flow && nav.flow.node === p.flow) state.pending.delete(id);
    renderPending();
  } else if (method === 'screenResult') {
    status(`screenResult for ${p.to}: ${JSON.stringify(p.result)}`);
  }
}

// ---- Rendering ----
// A busy session changes faster than a page needs to redraw: changes are applied as they come,
// and drawn at most every 50 ms; facts are read again at most every 250 ms.
let renderTimer = null;
function scheduleRender() {
  if (renderTimer === null) renderTimer = setTimeout(() => { renderTimer = null; render(); }, 50);
}
let factsTimer = null;
function scheduleFacts() {
  if (factsTimer === null) factsTimer = setTimeout(() => { factsTimer = null; loadFacts(); }, 250);
}

function shown() { return state.travel === null ? state.mirror.live : state.mirror.treeAt(state.travel); }

function render() {
  const started = performance.now();
  const t = shown();
  $('version').textContent = `version ${t.version}`;
  $('travel').hidden = state.travel === null;
  $('travel-version').textContent = state.travel ?? '';
  renderTree(t);
  renderActions();
  renderLog();
  renderPending();
  highlightGraph();
  window.navwebLastRenderMs = performance.now() - started;
  window.navwebRendered = (window.navwebRendered || 0) + 1;
}

// A stack of thousands of screens shows its first and last ones and what holds the visible path;
// the rest is one line that expands it (render what can be seen).
const expanded = new Set();
const EDGE = 40;

function renderTree(t) {
  const visible = new Set(t.visible);
  const ul = (nodes, label, owner) => {
    const list = document.createElement('ul');
    const long = nodes.length > 3 * EDGE && !expanded.has(owner);
    nodes.forEach((n, i) => {
      if (long && i >= EDGE && i < nodes.length - EDGE && !visible.has(n.id)) {
        if (i === EDGE) {
          const li = document.createElement('li');
          const more = document.createElement('button');
          more.className = 'more';
          more.textContent = `… ${nodes.length - 2 * EDGE} more screens (show them)`;
          more.onclick = () => { expanded.add(owner); render(); };
          li.append(more);
          list.append(li);
        }
        return;
      }
      list.append(item(n, label ? label(i) : ''));
    });
    return list;
  };
  const item = (n, prefix) => {
    const li = document.createElement('li');
    const span = document.createElement('span');
    span.className = 'node' + (visible.has(n.id) ? ' on' : '');
    span.dataset.id = n.id;
    if (n.coordinator) span.dataset.coordinator = n.coordinator;
    const name = n.kind === 'screen' || n.kind === 'flow' ? (n.kind === 'flow' ? 'flow ' : '') + n.coordinator
      : n.kind + (n.coordinator ? ' ' + n.coordinator : '') + (n.kind === 'tabs' ? ` selected ${n.selected}` : '');
    span.append((visible.has(n.id) ? '▶ ' : '') + prefix + name + ' ');
    const id = document.createElement('span');
    id.className = 'id';
    id.textContent = `[${n.id}]`;
    span.append(id);
    if (n.params && Object.keys(n.params).length) {
      const p = document.createElement('span');
      p.className = 'params';
      p.textContent = ' ' + legible(JSON.stringify(n.params));
      span.append(p);
    }
    if (n.paramsHistory && n.paramsHistory.length) {
      const h = document.createElement('span');
      h.className = 'params';
      h.textContent = legible(` (${n.paramsHistory.length} earlier params: dismiss restores ${JSON.stringify(n.paramsHistory[n.paramsHistory.length - 1])})`);
      span.append(h);
    }
    li.append(span);
    const kids = n.children || [];
    if (kids.length) li.append(ul(kids, n.kind === 'tabs' ? (i) => `tab ${i + 1}${i === n.selected ? '*' : ''} ` : null, n.id));
    if (n.presented) li.append(ul([n.presented], () => 'presents ', n.id + '/presented'));
    return li;
  };
  $('tree').replaceChildren(ul([t.root]));
}

function visibleNodes(t) { return t.visible.map((id) => find(t.root, id)).filter(Boolean); }
function topOf(t) { const v = visibleNodes(t); return v[v.length - 1]; }
function coordinator(name) { return (state.graph && state.graph.coordinators[name]) || {}; }
function needsForm(name) { const s = coordinator(name).setup; return !!(s && s.properties && Object.keys(s.properties).length); }

function defaultStyle(target) {
  const styles = coordinator(target).presentations || ['push'];
  // As navd shows a target when a navigation names no style: push, else the first allowed of these.
  for (const s of ['push', 'present', 'replace', 'root', 'select']) if (styles.includes(s)) return s;
  return 'push';
}

// The step after `top` in the flow that shows it on the visible path, when `top` declares no opens
// (a step without opens goes on to the next step: the flow's path); null otherwise or at the last.
function nextStep(t, top) {
  const v = visibleNodes(t);
  const parent = v[v.length - 2];
  if (!parent || parent.kind !== 'flow' || (coordinator(top.coordinator).opens || []).length) return null;
  const steps = (coordinator(parent.coordinator).flow || {}).steps || [];
  const at = steps.indexOf(top.coordinator);
  return at >= 0 && at + 1 < steps.length ? steps[at + 1] : null;
}

function actionsFor(t) {
  const top = topOf(t);
  if (!top || !top.coordinator) return [];
  const opens = coordinator(top.coordinator).opens || [];
  const list = opens.map((target) => ({ label: `${defaultStyle(target)} ${target}`, run: () => go(target, null) }));
  const next = nextStep(t, top);
  if (next) list.push({ label: `push ${next} (next step)`, run: () => go(next, null) });
  for (const [name, r] of Object.entries(state.graph.routes || {})) {
    const by = r.by || defaultStyle(r.to);
    if (by === 'select' && t.root.kind === 'tabs') {
      const tab = t.root.children[t.root.selected];
      if (tab && tab.children && tab.children[0] && tab.children[0].coordinator === r.to) continue;  // the tab shown
    }
    if (by === 'select' || by === 'root' || opens.includes(r.to)) list.push({ label: `route ${name}`, run: () => go(r.to, name, r.with || {}) });
  }
  // The tabs of the innermost tab container on the visible path (a tab bar inside a modal or a
  // stack), as the graph declares them, then the root's tabs.
  const shell = visibleNodes(t).reverse().find((n) => n.kind === 'tabs' && n.coordinator);
  if (shell) {
    (coordinator(shell.coordinator).tabs || []).forEach((tab, i) => {
      if (i !== shell.selected) list.push({ label: `select ${tab} (in ${shell.coordinator})`, run: () => send('navigate', { to: tab, by: 'select' }, `select ${tab}`) });
    });
  }
  if (t.root.kind === 'tabs') {
    t.root.children.forEach((tab, i) => {
      const first = tab.children && tab.children[0];
      if (i !== t.root.selected && first) list.push({ label: `select ${first.coordinator}`, run: () => send('navigate', { to: first.coordinator, by: 'select' }, `select ${first.coordinator}`) });
    });
  }
  if (needsForm(top.coordinator)) {
    // update {push: true}: new params, the earlier ones kept for dismiss to restore.
    list.push({
      label: 'push params',
      run: () => openForm(`push params of ${top.coordinator}`, coordinator(top.coordinator).setup, top.params || {},
        (values) => send('update', { node: top.id, with: values, push: true }, `push params of ${top.coordinator}`, true)),
    });
  }
  const earlier = top.paramsHistory && top.paramsHistory.length;
  list.push({ label: earlier ? 'dismiss (restores the earlier params)' : 'dismiss', run: () => send('dismiss', {}, 'dismiss'), refused: nothingToDismiss(t, state.graph) });
  const flow = visibleNodes(t).reverse().find((n) => n.kind === 'flow');
  if (flow) {
    list.push({ label: `complete ${flow.coordinator}`, run: () => completeFlow(flow) });
    list.push({ label: `cancel ${flow.coordinator}`, run: () => send('flowComplete', { flow: flow.id, cancelled: true }, `cancel ${flow.coordinator}`) });
  }
  list.push({ label: 'reset to the root', run: () => send('reset', {}, 'reset') });
  return list;
}

// The buttons are made again only when the actions change (a click is never on a replaced button).
let actionsShown = null;
function renderActions() {
  const box = $('actions');
  const t = state.mirror.live;
  const top = topOf(t);
  $('top-name').textContent = top ? top.coordinator || top.kind : '…';
  const actions = state.travel !== null || state.closed ? [] : actionsFor(t);
  const key = JSON.stringify([state.travel !== null, state.closed, state.readOnly, top && top.id, actions.map((a) => [a.label, a.refused || null])]);
  if (key === actionsShown) { actions.forEach((a, i) => { box.children[i].onclick = a.run; }); return; }
  actionsShown = key;
  box.replaceChildren();
  if (state.travel !== null) { box.textContent = 'time travel is read-only: back to live to act'; return; }
  if (state.closed) { box.textContent = `session "${state.closed}" is closed: pick another session`; return; }
  for (const a of actions) {
    const b = document.createElement('button');
    b.textContent = a.label;
    b.dataset.action = a.label;
    // An action navd would refuse (nothing to dismiss) is shown disabled, its reason as its title.
    b.disabled = state.readOnly || Boolean(a.refused);
    if (a.refused) b.title = a.refused;
    b.onclick = a.run;
    box.append(b);
  }
}

// Rows are added as changes come (a session's thousands of changes are not redrawn each time).
function renderLog() {
  const body = $('log').tBodies[0];
  // Rows of changes that left the ring go; rows are then added for the changes after the last.
  const log = state.mirror.log;
  const first = log.length ? log[0].version : Infinity;
  while (body.rows.length && Number(body.rows[0].dataset.version) < first) body.rows[0].remove();
  if (body.rows.length > log.length) body.replaceChildren();
  for (const tr of body.querySelectorAll('tr.selected')) tr.classList.remove('selected');
  if (state.travel !== null) {
    const row = body.querySelector(`tr[data-version="${state.travel}"]`);
    if (row) row.classList.add('selected');
  }
  const last = body.rows.length ? Number(body.rows[body.rows.length - 1].dataset.version) : -Infinity;
  for (const p of log.filter((q) => q.version > last)) {
    const tr = document.createElement('tr');
    tr.dataset.version = p.version;
    if (state.travel === p.version) tr.className = 'selected';
    const ops = p.changes.map((c) => c.op).join(', ');
    const nodes = p.changes.map((c) => (c.node && c.node.id ? `${c.node.id} ${c.node.coordinator || c.node.kind}` : c.removed ? 'removed ' + c.removed.join(' ') : c.parent || '')).join('; ');
    for (const text of [p.version, ops, nodes, state.mine.has(p.version) ? 'this page' : 'not this page']) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.append(td);
    }
    tr.onclick = () => { state.travel = p.version; render(); };
    body.append(tr);
  }
}

// What a pending navigation waits for: its precondition, the screen a leave guard protects, the
// recovery flow presented for it, or a slot to run its task in.
function describePending(id, p) {
  let text = `${id} to ${p.to} waits for ${typeof p.waitingFor === 'string' ? p.waitingFor : JSON.stringify(p.waitingFor)}`;
  if (p.leaving) {
    const node = state.mirror && state.mirror.live ? find(state.mirror.live.root, p.leaving) : null;
    text += `, the leave guard of ${(node && node.coordinator) || p.to} [${p.leaving}]`;
  }
  if (p.flow) text += ` (recovery flow ${p.flow.coordinator} [${p.flow.node}])`;
  else if (p.recovering) text += p.recovering.provider ? ` (recovering: provider ${p.recovering.provider} asked)` : ` (recovering: ${p.recovering.command || 'a command'} runs)`;
  else if (p.afterRecovery) text += ' (asked again after its recovery)';
  if (p.queued) text += ` (queued for a ${p.queued.for} slot: ${p.queued.behind} of this uid's before it, ${p.queued.waiting} waiting in all)`;
  return text;
}

let pendingShown = null;
function renderPending() {
  const ul = $('pending');
  // Redrawn when a navigation's notification changes what it waits for, not only when one comes or goes.
  const key = JSON.stringify([...state.pending]);
  if (key === pendingShown) return;
  pendingShown = key;
  ul.replaceChildren();
  if (!state.pending.size) { const li = document.createElement('li'); li.textContent = 'none'; ul.append(li); return; }
  for (const [id, p] of state.pending) {
    const li = document.createElement('li');
    li.textContent = legible(describePending(id, p)) + ' ';
    const b = document.createElement('button');
    b.textContent = 'cancel';
    b.onclick = () => send('cancel', { navigation: id }, `cancel ${id}`);
    li.append(b);
    ul.append(li);
  }
}

async function loadFacts() {
  try { $('facts').textContent = legible(JSON.stringify((await call('context.get', { session: state.subscribed })).facts || {}, null, 1)); } catch (e) { /* shown elsewhere */ }
}

// ---- Acting ----
async function send(method, params, what, fromForm = false) {
  status(`${what}…`);
  const target = method === 'navigate' ? params.to || ((state.graph.routes || {})[params.route] || {}).to : undefined;
  if (fromForm && target) state.formAwaits = target;
  try {
    const r = await call(method, { session: state.session, ...params });
    if (r && typeof r.version === 'number') state.mine.add(r.version);
    if (r && r.navigation) state.pending.delete(r.navigation);
    if (fromForm) closeForm();
    const hops = (r && r.redirected) || [];
    const redirected = hops.length ? `, redirected to ${hops[hops.length - 1].to} by ${hops.map((h) => h.precondition).join(', ')}` : '';
    // A completed flow's `then`: where it went on, or why it could not (the flow ended either way).
    const then = r && r.then;
    const shownThen = then && !then.error ? find(state.mirror.live.root, then.node) : null;
    const thenText = !then ? '' : then.error ? `, then failed: ${describe(then.error)}`
      : `, then ${(shownThen && shownThen.coordinator) || then.node} (version ${then.version})`;
    status(`${what}: version ${r && r.version !== undefined ? r.version : '?'}${redirected}${thenText}`, !!(then && then.error));
    render();
  } catch (e) {
    if (e.data && e.data.navigation) state.pending.delete(e.data.navigation);
    if (fromForm && !$('form').hidden && e.data && (e.data.kind === 'invalidSetup' || e.data.kind === 'invalidParams')) {
      const err = $('form-error');
      err.textContent = e.message;
      err.hidden = false;
    } else {
      status(`${what}: ${describe(e)}`, true);
    }
    renderPending();
  } finally {
    if (fromForm && target && state.formAwaits === target) state.formAwaits = null;
  }
}

function go(target, route, prefill = {}) {
  const params = route ? { route } : { to: target, by: defaultStyle(target) };
  params.progress = true;
  const what = route ? `route ${route}` : `${params.by} ${target}`;
  if (!needsForm(target)) { send('navigate', { ...params, ...(Object.keys(prefill).length ? { with: prefill } : {}) }, what); return; }
  openForm(what, coordinator(target).setup, prefill, (values) => send('navigate', { ...params, with: values }, what, true));
}

function completeFlow(flow) {
  const schema = (coordinator(flow.coordinator).flow || {}).result;
  const what = `complete ${flow.coordinator}`;
  if (!schema || !schema.properties) { send('flowComplete', { flow: flow.id, result: {} }, what); return; }
  openForm(what, schema, {}, (values) => send('flowComplete', { flow: flow.id, result: values }, what, true));
}

// ---- The graph ----
async function drawGraph() {
  const r = await fetch('/graph.svg');
  const text = await r.text();
  if (!r.ok) { $('graph').textContent = text; return; }
  $('graph').innerHTML = text;
  $('graph').classList.remove('dim');
  state.svgLoaded = true;
  highlightGraph();
}

function highlightGraph() {
  if (!state.svgLoaded) return;
  const t = shown();
  const onPath = new Set(visibleNodes(t).map((n) => n.coordinator).filter(Boolean));
  const inTree = new Set();
  const todo = [t.root];
  while (todo.length) { const n = todo.pop(); if (n.coordinator) inTree.add(n.coordinator); if (n.presented) todo.push(n.presented); todo.push(...(n.children || [])); }
  const top = topOf(state.mirror.live);
  const opens = new Set(top && top.coordinator ? coordinator(top.coordinator).opens || [] : []);
  const next = top && top.coordinator ? nextStep(state.mirror.live, top) : null;
  if (next) opens.add(next);
  for (const g of document.querySelectorAll('#graph g.node')) {
    const name = (g.querySelector('title') || {}).textContent;
    g.classList.toggle('visible', onPath.has(name));
    g.classList.toggle('intree', inTree.has(name));
    const openable = state.travel === null && !state.readOnly && opens.has(name);
    g.classList.toggle('openable', openable);
    g.onclick = openable ? () => go(name, null) : null;
  }
}

// ---- Wiring ----
$('session').onchange = (e) => subscribe(e.target.value).catch((err) => status(describe(err), true));
// Sessions opened or closed elsewhere appear when the list is opened.
$('session').onfocus = () => loadSessions().catch(() => {});
$('live').onclick = () => { state.travel = null; render(); };
connect();
