// `floe maintain compact`, continued (deletes.test.mjs has position
// deletes):
// - v3: deletion vectors (Puffin, deletion-vector-v1, written by a small
//   spec-following Roaring writer) are applied, and every surviving row
//   keeps its _row_id and _last_updated_sequence_number: the new file holds
//   them explicitly, equal to what inheritance gave before, through two
//   compactions;
// - manifests rewritten in part (data and delete manifests) keep their
//   other files as EXISTING with their own snapshot ids and sequence
//   numbers; a delete that names a file that stays is kept;
// - v3 after partition evolution: rows moved into the current spec keep
//   their lineage too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  startCatalog, createTable, currentSnapshot, localPath, readAvro, tmpDir, duck, sqlStr,
} from '../ingest/lib.mjs';
import { call, tablePath } from '../tables/lib.mjs';
import { helpers, fields } from './lib.mjs';
import {
  liveEntries, visibleRows, positionDeleteFile, dvEntries, deleteHelpers,
} from './deletes-lib.mjs';

let ctx;
const dir = tmpDir('compact-carry');
let maintain;
let append;
let settled;
let commitDeletes;
let addDuckFile;
let mergeDataManifests;
let createBucketed;
let evolveSpec;

before(async () => {
  ctx = await startCatalog('compact_carry');
  const h = helpers(ctx, dir);
  ({ maintain, append, settled, createBucketed, evolveSpec } = h);
  ({ commitDeletes, addDuckFile, mergeDataManifests } = deleteHelpers(h.dropManifests));
});

after(async () => {
  await ctx?.floe.stop();
});

const range = (from, n) => Array.from({ length: n }, (_, i) => from + i);
const dataFiles = (n) => (snap) => snap.summary['total-data-files'] === String(n);
const isSnap = (id) => (snap) => String(snap['snapshot-id']) === String(id);

test('compact v3: deletion vectors are applied and rows keep _row_id and _last_updated_sequence_number', async () => {
  const name = 'dv';
  await createTable(ctx, name, fields, { 'format-version': '3' });
  for (let b = 0; b < 3; b++) await append(name, range(b * 20, 20));
  let { meta } = await settled(name, dataFiles(3));
  const data = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0);
  assert.ok(data.every((e) => e.frid != null), 'v3 appends have row ids');
  const puffin = path.join(localPath(meta.location), 'data', 'dvs.puffin');
  const dvs = new Map([[data[0].path, [0, 2, 19]], [data[2].path, [7]]]);
  meta = await commitDeletes(name, meta, dvEntries(puffin, dvs));
  const known = new Map([[`file://${puffin}`, dvs]]);
  const before = await visibleRows(currentSnapshot(meta), known);
  assert.equal(before.length, 56);
  assert.ok(before.every((x) => x[2] != null && x[3] != null));
  assert.equal(new Set(before.map((x) => x[2])).size, 56, 'row ids are unique');

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r['files-removed'], 3, res.stdout);
  assert.equal(r['delete-files-removed'], 2, res.stdout);
  assert.equal(r['deleted-rows-dropped'], 4, res.stdout);
  const { snap: after, meta: metaAfter } = await settled(name, isSnap(r['snapshot-id']));
  assert.equal(after.summary['total-delete-files'], '0');
  assert.ok(BigInt(metaAfter['next-row-id']) >= BigInt(meta['next-row-id']));
  const live = liveEntries(after);
  assert.equal(live.length, 1);
  // The new file holds the lineage columns itself, equal to what rows
  // inherited before.
  const con = await duck();
  const inFile = (await con.runAndReadAll(`SELECT id::VARCHAR, name, _row_id::VARCHAR, _last_updated_sequence_number::VARCHAR FROM read_parquet(${sqlStr(localPath(live[0].path))}) ORDER BY id`)).getRowsJson();
  assert.deepEqual(inFile, before);
  assert.deepEqual(await visibleRows(after, known), before);
  // A second compaction moves them again, unchanged.
  await append(name, [500]);
  await settled(name, dataFiles(2));
  const res2 = maintain(name, ['compact']);
  assert.equal(res2.code, 0, res2.stderr);
  const after2 = (await settled(name, isSnap(res2.lines[0]['snapshot-id']))).snap;
  const rows2 = await visibleRows(after2);
  assert.deepEqual(rows2.filter((x) => x[0] !== '500'), before);
  const row500 = rows2.find((x) => x[0] === '500');
  assert.ok(row500[2] != null && !before.some((x) => x[2] === row500[2]), 'the new row got a fresh row id');
});

test('compact v3 after partition evolution: moved rows keep _row_id and _last_updated_sequence_number', async () => {
  const name = 'v3moves';
  await createBucketed(name, { 'format-version': '3' });
  await append(name, range(0, 10));
  await append(name, range(10, 10));
  await evolveSpec(name, { 'spec-id': 1, fields: [] });
  await append(name, range(20, 5));
  const { meta } = await settled(name, (s) => s.summary['total-records'] === '25');
  const live0 = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0);
  const moved = live0.filter((e) => e.spec === 0).length;
  assert.ok(moved >= 2 && live0.every((e) => e.frid != null), 'spec 0 has files, every file row ids');
  const before = await visibleRows(currentSnapshot(meta));
  assert.equal(new Set(before.map((x) => x[2])).size, 25, 'row ids are unique');

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r['files-moved-to-current-spec'], moved, res.stdout);
  const { snap: after, meta: metaAfter } = await settled(name, isSnap(r['snapshot-id']));
  assert.ok(BigInt(metaAfter['next-row-id']) >= BigInt(meta['next-row-id']));
  const live = liveEntries(after);
  assert.ok(live.every((e) => e.spec === 1 && e.content === 0), 'every file is of spec 1');
  const con = await duck();
  const written = live.filter((e) => e.path.endsWith('-compact.parquet'));
  assert.equal(written.length, 1, 'spec 1\'s one file stays as it is; the moved rows make one');
  const inFiles = (await con.runAndReadAll(`SELECT id::VARCHAR, name, _row_id::VARCHAR, _last_updated_sequence_number::VARCHAR
    FROM read_parquet(${sqlStr(localPath(written[0].path))}) ORDER BY id`)).getRowsJson();
  assert.deepEqual(inFiles, before.filter((x) => Number(x[0]) < 20), 'the moved file holds the lineage its rows inherited');
  assert.deepEqual(await visibleRows(after), before);
});

test('compact v3 moving over several runs (floe.compact-max-move-bytes): every row keeps its lineage after each run', async () => {
  const name = 'v3movecap';
  await createBucketed(name, { 'format-version': '3', 'floe.compact-max-move-bytes': '1' });
  for (let b = 0; b < 3; b++) await append(name, range(b * 10, 10));
  await evolveSpec(name, { 'spec-id': 1, fields: [] });
  await append(name, range(30, 5));
  const { meta } = await settled(name, (s) => s.summary['total-records'] === '35');
  const n0 = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0 && e.spec === 0).length;
  assert.ok(n0 >= 3, `spec 0 has ${n0} files`);
  const before = await visibleRows(currentSnapshot(meta));
  assert.equal(new Set(before.map((x) => x[2])).size, 35, 'row ids are unique');
  for (let run = 1; run <= n0; run++) {
    const res = maintain(name, ['compact']);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.lines[0]['files-moved-to-current-spec'], 1, res.stdout);
    const { snap } = await settled(name, isSnap(res.lines[0]['snapshot-id']));
    assert.equal(liveEntries(snap).filter((e) => e.content === 0 && e.spec === 0).length, n0 - run);
    // The files that wait, carried in spec 0's manifest, keep their first_row_id.
    assert.deepEqual(await visibleRows(snap), before, `run ${run}: _row_id and _last_updated_sequence_number unchanged`);
  }
});

test('compact: manifests rewritten in part keep their other files and deletes as EXISTING', async () => {
  const name = 'carry';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 3; b++) await append(name, range(b * 10, 10));
  let { meta } = await settled(name, dataFiles(3));
  const small = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0);
  // d_a deletes a row of a small file; d_k names a big file added after it
  // (a lower data sequence number: it does not apply, and the file stays).
  const latePath = path.join(localPath(meta.location), 'data', 'late-big.parquet');
  const da = await positionDeleteFile(path.join(localPath(meta.location), 'data', 'da.parquet'), [[small[0].path, 0]]);
  const dk = await positionDeleteFile(path.join(localPath(meta.location), 'data', 'dk.parquet'), [[`file://${latePath}`, 0]]);
  meta = await commitDeletes(name, meta, [da, dk].map((d) => ({
    content: 1, file_path: d.path, file_format: 'PARQUET', record_count: d.count, file_size_in_bytes: d.size,
  })));
  meta = await addDuckFile(name, meta, latePath, 3000);
  meta = await mergeDataManifests(name, meta);
  await call(ctx.base, 'POST', tablePath(ctx.p, ctx.ns, name), {
    body: { requirements: [], updates: [{ action: 'set-properties', updates: { 'write.target-file-size-bytes': '4000' } }] },
    expect: 200,
  });
  meta = (await settled(name, (s) => true)).meta;
  const before = currentSnapshot(meta);
  const late = liveEntries(before).find((e) => e.path === `file://${latePath}`);
  assert.ok(BigInt(late.df.file_size_in_bytes) >= 3000n, 'the late file is not small');
  const firstOfSmall0 = (await (await duck()).runAndReadAll(`SELECT id::INTEGER FROM read_parquet(${sqlStr(localPath(small[0].path))}) ORDER BY file_row_number LIMIT 1`)).getRowsJson()[0][0];
  const model = [...range(0, 30), ...range(5000, 3000)].filter((i) => i !== firstOfSmall0);
  const beforeRows = await visibleRows(before);
  assert.deepEqual(beforeRows.map((r) => Number(r[0])), model);

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r['files-removed'], 3, res.stdout);
  assert.equal(r['delete-files-removed'], 1, res.stdout);
  assert.equal(r['deleted-rows-dropped'], 1, res.stdout);
  assert.equal(r['manifests-rewritten'], 2, res.stdout);
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  assert.equal(after.summary['total-delete-files'], '1');
  assert.equal(after.summary['total-data-files'], String(1 + r['files-added']));
  // The late file and d_k are carried as EXISTING with their own snapshot
  // ids and sequence numbers.
  const entriesAfter = [];
  for (const le of readAvro(after['manifest-list']).records) {
    for (const e of readAvro(le.manifest_path).records) entriesAfter.push({ le, e });
  }
  const lateAfter = entriesAfter.find((x) => x.e.data_file.file_path === `file://${latePath}` && x.e.status !== '2');
  assert.equal(lateAfter.e.status, '0');
  assert.equal(BigInt(lateAfter.e.sequence_number), late.seq);
  const dkBefore = liveEntries(before).find((e) => e.path === dk.path);
  const dkAfter = entriesAfter.find((x) => x.e.data_file.file_path === dk.path && x.e.status !== '2');
  assert.equal(dkAfter.e.status, '0');
  assert.equal(BigInt(dkAfter.e.sequence_number), dkBefore.seq);
  assert.equal(dkAfter.e.snapshot_id, readAvro(before['manifest-list']).records.find((x) => Number(x.content) === 1).added_snapshot_id);
  const daAfter = entriesAfter.filter((x) => x.e.data_file.file_path === da.path);
  assert.deepEqual(daAfter.map((x) => x.e.status), ['2']);
  assert.deepEqual(await visibleRows(after), beforeRows, 'the same rows; d_k still does not apply');
});
