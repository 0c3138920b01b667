// Replays a random walk's transcript (scripts/random-walk.py --js-mirror) in nav-web's mirror:
// from each subscription's compact snapshot, every step's compact stackChanged expanded and applied,
// the mirror must equal navd's tree (version, root, visible) after each step; and for each dismiss of
// the top the walk sent, the page's rule (nothingToDismiss) must say what navd answered.
//
//   node scripts/replay-js-mirror.mjs TRANSCRIPT.json
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { SessionMirror, expand, nothingToDismiss } from '../Clients/web/Assets/mirror.js';

const transcript = JSON.parse(readFileSync(process.argv[2], 'utf8'));
let steps = 0;
for (const part of transcript) {
  const m = new SessionMirror(part.snapshot);
  for (const step of part.steps) {
    for (const p of step.stackChanged) m.apply(expand(p, part.snapshot.session));
    const live = { version: m.live.version, root: m.live.root, visible: m.live.visible };
    assert.deepEqual(live, step.tree, `after ${step.where}`);
    steps += 1;
  }
}
let dismisses = 0;
for (const part of transcript) {
  for (const d of part.dismisses || []) {
    const said = nothingToDismiss(d.tree, d.graph);
    assert.equal(said !== null, d.refused, `nav-web's dismiss rule said ${said || 'a dismiss'} where navd ${d.refused ? 'refused' : 'acted'}, at ${d.where}`);
    dismisses += 1;
  }
}
console.log(`replay-js-mirror: nav-web's mirror held navd's tree after ${steps} steps; its dismiss rule agreed with navd on ${dismisses} dismisses of the top`);
