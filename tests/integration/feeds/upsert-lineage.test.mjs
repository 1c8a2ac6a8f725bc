// Upsert on a format v3 table keeps row lineage as an update does (spec
// "Row Lineage"): a batch row that replaces a table row takes over its
// _row_id, with the upsert's sequence number as _last_updated_sequence_number;
// a new key, or one re-inserted after a delete, gets a new id.  The batch's
// files that carry such ids are written again on every plan: the originals
// the snapshot leaves out, and the copies of a plan that lost its race, are
// deleted (no data file is left that no snapshot names).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startCatalog, ingest, show, snapshotFiles, localPath, parquetOnDisk, tmpDir } from '../ingest/lib.mjs';
import { call } from '../tables/lib.mjs';
import { helpers, range } from '../maintain/lib.mjs';
import { visibleRows } from '../maintain/deletes-lib.mjs';

let ctx;
let settled;
const dir = tmpDir('upsert-lineage');

before(async () => {
  ctx = await startCatalog('upsert_lineage');
  ({ settled } = helpers(ctx, dir));
});

after(async () => {
  await ctx?.floe.stop();
});

// A v3 table keyed on id: id, name, region, op; partitioned by region
// when partitioned.
async function create(name, partitioned) {
  await call(ctx.base, 'POST', `${ctx.p}/namespaces/${ctx.ns.join('%1F')}/tables`, {
    body: {
      name,
      schema: {
        type: 'struct', 'schema-id': 0, 'identifier-field-ids': [1], fields: [
          { id: 1, name: 'id', type: 'long', required: true },
          { id: 2, name: 'name', type: 'string', required: false },
          { id: 3, name: 'region', type: 'string', required: false },
          { id: 4, name: 'op', type: 'string', required: false },
        ],
      },
      ...(partitioned
        ? { 'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 3, 'field-id': 1000, name: 'region', transform: 'identity' }] } }
        : {}),
      properties: { 'format-version': '3' },
    },
    expect: 200,
  });
}

let files = 0;
function csv(rows) {
  const file = path.join(dir, `in-${files++}.csv`);
  fs.writeFileSync(file, `id,name,region,op\n${rows.map((r) => r.join(',')).join('\n')}\n`);
  return file;
}

// Ingests rows (arrays of CSV inputs) and returns {snap, meta} once loaded.
async function run(name, inputs, { args = [], rest = false } = {}) {
  const r = await ingest(ctx, name, inputs.map(csv), { rest, args });
  assert.equal(r.code, 0, show(r));
  assert.equal(r.out.status, 'committed', show(r));
  return settled(name, (s) => String(s['snapshot-id']) === String(r.out['snapshot-id']));
}

// id -> [id, name, _row_id, _last_updated_sequence_number] of what readers see.
const rowsById = async (snap) => new Map((await visibleRows(snap)).map((r) => [r[0], r]));

// Every data file is named by some snapshot.
function assertNoOrphans(meta, what) {
  const named = new Set();
  for (const s of meta.snapshots) for (const f of snapshotFiles(s)) named.add(localPath(f.file.file_path));
  assert.deepEqual(parquetOnDisk(meta).filter((p) => !named.has(p)), [], `${what}: no data file left that no snapshot names`);
}

// Ids stay unique and below next-row-id.
function assertIds(rows, meta) {
  const ids = [...rows.values()].map((r) => r[2]);
  assert.ok(ids.every((x) => x != null), 'every row has a _row_id');
  assert.equal(new Set(ids).size, ids.length, 'row ids stay unique');
  assert.ok(ids.every((x) => BigInt(x) < BigInt(meta['next-row-id'])), 'every row id is below next-row-id');
}

const regionOf = (i) => ['eu', 'us', 'ap'][i % 3];

test('upsert on v3: a replacing row keeps the _row_id of the row it replaces; new and re-inserted keys get new ones', async () => {
  const name = 'lin';
  await create(name, true);
  await run(name, [range(0, 10).map((i) => [i, `n${i}`, regionOf(i), ''])]);
  let { meta } = await run(name, [range(10, 10).map((i) => [i, `n${i}`, regionOf(i), ''])]);
  const first = await rowsById((await settled(name, () => true)).snap);
  assertIds(first, meta);
  const nextBefore = BigInt(meta['next-row-id']);

  // Two inputs: the first has a row a later one replaces (its file is
  // rewritten before any plan), the second none (planned as written).
  let snap;
  ({ snap, meta } = await run(name, [
    [[3, 'a3', 'eu', ''], [25, 'new25', 'ap', ''], [7, 'x7', 'us', '']],
    [[7, 'y7', 'eu', ''], [12, 'u12', 'ap', '']],
  ], { args: ['--mode', 'upsert'] }));
  assert.equal(snap.summary['floe.rows-replaced'], '3');
  const seq = String(snap['sequence-number']);
  let rows = await rowsById(snap);
  assert.deepEqual([...rows.keys()].sort(), [...first.keys(), '25'].sort());
  for (const [id, nm] of [['3', 'a3'], ['7', 'y7'], ['12', 'u12']]) {
    assert.deepEqual(rows.get(id), [id, nm, first.get(id)[2], seq], `row ${id} is updated: its _row_id stays, its sequence number is the upsert's`);
  }
  for (const [id, row] of first) {
    if (!['3', '7', '12'].includes(id)) assert.deepEqual(rows.get(id), row, `row ${id} is unchanged`);
  }
  assert.ok(BigInt(rows.get('25')[2]) >= nextBefore, `the new key gets a new id: ${rows.get('25')[2]}`);
  const deleted = snapshotFiles(snap).filter((f) => String(f.entry.status) === '2');
  assert.ok(deleted.length > 0 && deleted.every((f) => String(f.entry.snapshot_id) === String(snap['snapshot-id'])),
    'the files the upsert rewrote are DELETED entries of its snapshot (spec: "deleted if status is 2")');
  assert.equal(rows.get('25')[3], seq);
  assertIds(rows, meta);
  assertNoOrphans(meta, 'after the first upsert');

  // A change feed batch over REST: 5 deleted; 12 deleted then written
  // again in the same batch (its last row wins: an update); 0 updated.
  const kept = rows;
  ({ snap, meta } = await run(name, [
    [[5, '', 'us', 'D'], [12, '', 'ap', 'd'], [12, 'z12', 'ap', ''], [0, 'u0', 'eu', '']],
  ], { args: ['--mode', 'upsert', '--cdc-field', 'op'], rest: true }));
  rows = await rowsById(snap);
  const seq2 = String(snap['sequence-number']);
  assert.ok(!rows.has('5'), 'the deleted key is gone');
  assert.deepEqual(rows.get('12'), ['12', 'z12', kept.get('12')[2], seq2]);
  assert.deepEqual(rows.get('0'), ['0', 'u0', kept.get('0')[2], seq2]);
  assertIds(rows, meta);
  assertNoOrphans(meta, 'after the change feed batch');

  // 5 again: a new row, with a new id.
  const nextBefore3 = BigInt(meta['next-row-id']);
  ({ snap, meta } = await run(name, [[[5, 'again5', 'us', '']]], { args: ['--mode', 'upsert'] }));
  rows = await rowsById(snap);
  assert.equal(rows.get('5')[1], 'again5');
  assert.notEqual(rows.get('5')[2], kept.get('5')[2], 'a key re-inserted after its delete is a new row');
  assert.ok(BigInt(rows.get('5')[2]) >= nextBefore3);
  assertIds(rows, meta);
  assertNoOrphans(meta, 'after the re-insert');
});

// An upsert of heldRows over REST, held after its first plan (which wrote
// the table's file and its own again) while `other` (rows and ingest args)
// commits, then planned again: {first (the rows before), other, r, snap,
// meta}.
async function race(name, heldRows, otherRows, otherArgs) {
  await create(name, false);
  await run(name, [range(0, 10).map((i) => [i, `n${i}`, '', ''])]);
  const first = await rowsById((await settled(name, () => true)).snap);
  const dataDir = path.join(localPath((await settled(name, () => true)).meta.location), 'data');
  const rewrites = () => fs.readdirSync(dataDir).filter((f) => f.endsWith('-upsert.parquet')).length;

  let proc;
  const held = ingest(ctx, name, [csv(heldRows)], {
    rest: true, args: ['--mode', 'upsert'], env: { FLOE_TEST_UPSERT_PAUSE_MS: '60000' }, onSpawn: (p) => { proc = p; },
  });
  // Held once its first plan wrote the table file and its own file again.
  for (let i = 0; rewrites() < 2; i++) {
    if (i > 1500) throw new Error(`the held upsert wrote ${rewrites()} rewrites in 30 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const other = await run(name, [otherRows], { args: otherArgs });
  const kick = setInterval(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGUSR1'); }, 100);
  const r = await held.finally(() => clearInterval(kick));
  assert.equal(r.code, 0, show(r));
  const { snap, meta } = await settled(name, (x) => String(x['snapshot-id']) === String(r.out['snapshot-id']));
  assert.equal(String(snap['parent-snapshot-id']), String(other.snap['snapshot-id']), 'the held upsert was planned again on the other one');
  return { first, other, r, snap, meta };
}

test('upsert on v3 racing another upsert: its retry takes the id the other carried over, and leaves no copy unnamed', async () => {
  const { first, other, snap, meta } = await race('linrace', [[3, 'u3', '', '']],
    [[3, 'v3', '', ''], [4, 'v4', '', '']], ['--mode', 'upsert']);
  const rows = await rowsById(snap);
  assert.deepEqual(rows.get('3'), ['3', 'u3', first.get('3')[2], String(snap['sequence-number'])]);
  assert.deepEqual(rows.get('4'), ['4', 'v4', first.get('4')[2], String(other.snap['sequence-number'])]);
  for (const id of ['0', '1', '2', '5', '6', '7', '8', '9']) assert.deepEqual(rows.get(id), first.get(id));
  assertIds(rows, meta);
  assertNoOrphans(meta, 'after the race');
});

test('upsert on v3 racing a delete of its key: its retry gives the row a new id and deletes its first copy', async () => {
  const { first, snap, meta } = await race('linrace2', [[3, 'u3', '', '']],
    [[3, '', '', 'D']], ['--mode', 'upsert', '--cdc-field', 'op']);
  const rows = await rowsById(snap);
  assert.equal(rows.get('3')[1], 'u3');
  assert.notEqual(rows.get('3')[2], first.get('3')[2], 'the row it replaced was deleted meanwhile: a new row');
  for (const id of ['0', '1', '2', '4', '5', '6', '7', '8', '9']) assert.deepEqual(rows.get(id), first.get(id));
  assertIds(rows, meta);
  assertNoOrphans(meta, 'after the race');
});
