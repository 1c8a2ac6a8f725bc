// `floe maintain manifests` racing other commits (held between writing its
// merged manifests and its commit by FLOE_TEST_COMPACT_PAUSE_MS):
// - an append that lands meanwhile is carried (manifests-kept counts it);
// - a commit that removes a merged manifest makes it plan again on the new
//   state: the removed rows stay removed, the first round's manifest is
//   deleted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, createTable, loadTable, currentSnapshot, localPath, readAvro, tmpDir,
} from '../ingest/lib.mjs';
import { helpers, isSnap, range } from './lib.mjs';

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'name', type: 'string', required: false },
];

let ctx;
const dir = tmpDir('manifests-race');
let maintainHeld;
let dropManifests;
let append;
let rows;
let settled;
let reached;

before(async () => {
  ctx = await startCatalog('manifests_race');
  ({ maintainHeld, dropManifests, append, rows, reached, settled } = helpers(ctx, dir));
});

after(async () => {
  await ctx?.floe.stop();
});


function assertAllPresent(snapshot) {
  for (const f of reached(snapshot)) assert.ok(fs.existsSync(localPath(f)), `${f} exists`);
}

// Starts `floe maintain manifests` held before its commit and resolves once
// its merged manifest is written (a new *-m0.avro in the metadata folder):
// {release}, which lets it commit and resolves to its result.
async function heldRewrite(name, meta) {
  const mdir = path.join(localPath(meta.location), 'metadata');
  const count = () => fs.readdirSync(mdir).filter((f) => f.endsWith('-m0.avro')).length;
  const n0 = count();
  return maintainHeld(name, ['manifests'], () => count() > n0);
}

test('manifests: an append racing the rewrite is carried', async () => {
  const name = 'race';
  await createTable(ctx, name, fields);
  let last;
  for (let b = 0; b < 5; b++) last = await append(name, range(b * 2, 2));
  const { meta } = await settled(name, isSnap(last));
  const { release } = await heldRewrite(name, meta);
  const appended = await append(name, [100, 101]);
  const res = await release();
  const r = res.lines[0];
  assert.equal(r.status, 'ok', r.error);
  assert.equal(r['manifests-replaced'], 5);
  assert.equal(r['manifests-kept'], 1, 'the racing append\'s manifest');
  const { snap } = await settled(name, isSnap(r['snapshot-id']));
  assert.equal(String(snap['parent-snapshot-id']), String(appended));
  assert.equal(snap.summary['manifests-kept'], '1');
  assert.equal(readAvro(snap['manifest-list']).records.length, 2);
  assert.deepEqual((await rows(snap)).map((x) => Number(x[0])), [...range(0, 10), 100, 101]);
  assertAllPresent(snap);
});

test('manifests: a commit that removes a merged manifest makes it plan again', async () => {
  const name = 'replan';
  await createTable(ctx, name, fields);
  let last;
  for (let b = 0; b < 4; b++) last = await append(name, range(b * 3, 3));
  const { meta } = await settled(name, isSnap(last));
  const { release } = await heldRewrite(name, meta);
  // Meanwhile a delete drops the first append's manifest (and its rows).
  const lists = readAvro(currentSnapshot(meta)['manifest-list']).records;
  const first = lists[lists.length - 1].manifest_path;
  const dropped = await dropManifests(name, meta, (rec) => rec.manifest_path === first);
  const res = await release();
  const r = res.lines[0];
  assert.equal(r.status, 'ok', r.error);
  assert.equal(r['manifests-replaced'], 3, 'planned again without the dropped manifest');
  const { snap } = await settled(name, isSnap(r['snapshot-id']));
  assert.equal(String(snap['parent-snapshot-id']), String(currentSnapshot(dropped.metadata)['snapshot-id']));
  assert.deepEqual((await rows(snap)).map((x) => Number(x[0])), range(3, 9), 'the dropped rows stay dropped');
  // The first round's manifest was deleted: nothing references it and it is gone.
  const mdir = path.join(localPath(meta.location), 'metadata');
  const listed = new Set(readAvro(snap['manifest-list']).records.map((x) => localPath(x.manifest_path)));
  const strays = fs.readdirSync(mdir).filter((f) => f.endsWith('-m0.avro')).map((f) => path.join(mdir, f))
    .filter((f) => !listed.has(f));
  const reachable = new Set();
  for (const sn of (await loadTable(ctx, name)).metadata.snapshots) for (const f of reached(sn)) reachable.add(localPath(f));
  assert.deepEqual(strays.filter((f) => !reachable.has(f)), [], 'no unreferenced manifest left behind');
});
