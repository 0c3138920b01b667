// The page's mirror (Assets/mirror.js) on the change fixtures every mirror replays
// (Tests/Fixtures/changes.json, recorded from a real navd by scripts/change-fixtures.py).
// Run by `node --test Clients/web/tests/` (make test-web).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { SessionMirror, applyChanges, clone, expand } from '../Assets/mirror.js';

const fixtures = JSON.parse(readFileSync(new URL('../../../Tests/Fixtures/changes.json', import.meta.url)));
const tree = (t) => ({ version: t.version, root: t.root, visible: t.visible });

for (const c of fixtures.cases) {
  test(`${c.name}: the mirror equals navd's tree after every change`, () => {
    const m = new SessionMirror(c.snapshot);
    for (const p of c.stackChanged) assert.equal(m.apply(p).applied, true, `version ${p.version}`);
    assert.deepEqual(tree(m.live), tree(c.final));
  });

  test(`${c.name}: the compact form expands to the same notifications and the same tree`, () => {
    const s = c.compactSnapshot;
    assert.equal(s.notifications, 'compact');
    assert.equal(c.compactStackChanged.length, c.stackChanged.length);
    const m = new SessionMirror(s);
    c.compactStackChanged.forEach((p, i) => {
      assert.equal(p[0], s.ref);
      const full = expand(p, s.session);
      assert.deepEqual(full, c.stackChanged[i]);
      assert.equal(m.apply(full).applied, true, `version ${full.version}`);
    });
    assert.deepEqual(tree(m.live), tree(c.final));
  });

  test(`${c.name}: time travel within a ring of 3 shows each version as it was`, () => {
    // The tree at each version, by replaying the changes up to it from the snapshot.
    const expected = new Map();
    const t = clone(c.snapshot);
    for (const p of c.stackChanged) {
      applyChanges(t, p.changes);
      t.version = p.version;
      t.visible = p.visible;
      expected.set(p.version, tree(clone(t)));
    }
    const m = new SessionMirror(c.snapshot, 3);
    const folded = [];
    for (const p of c.stackChanged) folded.push(...m.apply(p).folded);
    const kept = c.stackChanged.slice(-3).map((p) => p.version);
    assert.deepEqual(m.log.map((p) => p.version), kept);
    assert.deepEqual(folded, c.stackChanged.slice(0, -3).map((p) => p.version));
    assert.equal(m.oldest, c.stackChanged[c.stackChanged.length - 4].version);
    for (const v of kept) assert.deepEqual(tree(m.treeAt(v)), expected.get(v), `version ${v}`);
    assert.deepEqual(tree(m.treeAt(m.oldest)), expected.get(m.oldest));
  });
}

test('a missed version is a gap (subscribe again); an old one is ignored; a reset covers a gap', () => {
  const c = fixtures.cases[0];
  const m = new SessionMirror(c.snapshot);
  const [first, second, third] = c.stackChanged;
  assert.equal(m.apply(first).applied, true);
  const r = m.apply(third);
  assert.equal(r.applied, false);
  assert.equal(r.gap, true);
  assert.equal(m.live.version, first.version);
  assert.deepEqual(m.apply(first), { applied: false, gap: false, folded: [] });
  assert.equal(m.apply(second).applied, true);
  const reset = { session: c.snapshot.session, version: 99, visible: c.final.visible, changes: [{ op: 'reset', root: c.final.root }] };
  assert.equal(m.apply(reset).applied, true);
  assert.deepEqual(m.live.root, c.final.root);
});

test('a change naming a node the tree does not hold is refused, not guessed', () => {
  const c = fixtures.cases[0];
  const m = new SessionMirror(c.snapshot);
  const bad = { session: c.snapshot.session, version: c.snapshot.version + 1, visible: [], changes: [{ op: 'pop', parent: 'n999', index: 1 }] };
  assert.throws(() => m.apply(bad), /n999/);
  const update = { ...bad, changes: [{ op: 'update', node: { id: 'n999', params: {} } }] };
  assert.throws(() => m.apply(update), /n999/);
  assert.throws(() => applyChanges(clone(c.snapshot), [{ op: 'teleport', parent: c.snapshot.root.id }]), /unknown op teleport/);
});
