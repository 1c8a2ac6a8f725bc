// `floe maintain compact` on tables with position deletes:
// - v2: position delete files written by DuckDB (COPY ... FIELD_IDS) and
//   committed in a delete manifest; compaction rewrites the files they apply
//   to without the deleted rows (even a file that is not small), removes the
//   delete files in the same `replace` snapshot, and readers see the same
//   rows before and after: DuckDB over the live files applying the deletes,
//   icebird reading the table, and a model; no deleted row comes back; a
//   delete file older than a data file at the path it names (data sequence
//   number) does not apply to it;
// - a delete committed while compaction runs aborts it (its rewritten
//   files would bring the deleted row back).
// Deletion vectors, row lineage and manifests rewritten in part:
// carry-lineage.test.mjs; equality deletes: equality.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, createTable, loadTable, currentSnapshot, localPath, tmpDir, duck, sqlStr,
} from '../ingest/lib.mjs';
import { call, tablePath } from '../tables/lib.mjs';
import { helpers, fields } from './lib.mjs';
import {
  liveEntries, visibleRows, positionDeleteFile, deleteHelpers, icebirdReader,
} from './deletes-lib.mjs';

let ctx;
const dir = tmpDir('compact-deletes');
let maintain;
let maintainHeld;
let append;
let settled;
let commitDeletes;
let addDuckFile;
const icebird = icebirdReader();

before(async () => {
  ctx = await startCatalog('compact_deletes');
  const h = helpers(ctx, dir);
  ({ maintain, maintainHeld, append, settled } = h);
  ({ commitDeletes, addDuckFile } = deleteHelpers(h.dropManifests));
});

after(async () => {
  await icebird.close();
  await ctx?.floe.stop();
});

const range = (from, n) => Array.from({ length: n }, (_, i) => from + i);
const dataFiles = (n) => (snap) => snap.summary['total-data-files'] === String(n);
const isSnap = (id) => (snap) => String(snap['snapshot-id']) === String(id);

test('compact v2: position deletes are applied, their files removed, no deleted row comes back', async () => {
  const name = 'posdel';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 4; b++) await append(name, range(b * 10, 10));
  // A bigger file (not small at the target set below): compacted only for
  // its deletes.
  await append(name, range(100, 2000));
  await settled(name, dataFiles(5));
  await call(ctx.base, 'POST', tablePath(ctx.p, ctx.ns, name), {
    body: { requirements: [], updates: [{ action: 'set-properties', updates: { 'write.target-file-size-bytes': '4000' } }] },
    expect: 200,
  });
  let { meta } = await settled(name, dataFiles(5));
  const data = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0);
  const big = data.find((e) => e.records === 2000);
  assert.ok(BigInt(big.df.file_size_in_bytes) >= 3000n, 'the big file is not small');
  const small = data.filter((e) => e.records === 10);
  // Which ids each small file holds (DuckDB).
  const con = await duck();
  const idsOf = async (f) => (await con.runAndReadAll(`SELECT id::INTEGER FROM read_parquet(${sqlStr(localPath(f.path))}) ORDER BY file_row_number`)).getRowsJson().map((r) => r[0]);
  // One delete file over two data files, one over the big file.
  const d1 = await positionDeleteFile(path.join(localPath(meta.location), 'data', 'pd1.parquet'), [[small[0].path, 1], [small[0].path, 3], [small[1].path, 0]]);
  const d2 = await positionDeleteFile(path.join(localPath(meta.location), 'data', 'pd2.parquet'), [[big.path, 0], [big.path, 5], [big.path, 1999]]);
  const deletedIds = [(await idsOf(small[0]))[1], (await idsOf(small[0]))[3], (await idsOf(small[1]))[0], 100, 105, 2099];
  meta = await commitDeletes(name, meta, [d1, d2].map((d) => ({
    content: 1, file_path: d.path, file_format: 'PARQUET', record_count: d.count, file_size_in_bytes: d.size,
  })));
  // A delete file committed before a data file it names (by path): its data
  // sequence number is lower, so it must not apply to that file.
  const laterPath = path.join(localPath(meta.location), 'data', 'later-duck.parquet');
  const d3 = await positionDeleteFile(path.join(localPath(meta.location), 'data', 'pd3.parquet'), [[`file://${laterPath}`, 0]]);
  meta = await commitDeletes(name, meta, [{
    content: 1, file_path: d3.path, file_format: 'PARQUET', record_count: d3.count, file_size_in_bytes: d3.size,
  }]);
  meta = await addDuckFile(name, meta, laterPath, 3);
  const before = currentSnapshot(meta);
  const model = [...range(0, 40), ...range(100, 2000), ...range(5000, 3)].filter((i) => !deletedIds.includes(i));
  const beforeRows = await visibleRows(before);
  assert.deepEqual(beforeRows.map((r) => Number(r[0])), model, 'DuckDB applying the deletes agrees with the model');
  assert.deepEqual(beforeRows.map((r) => r.slice(0, 2)).filter((r) => Number(r[0]) < 5000), (await icebird.rows(meta)).filter((r) => Number(r[0]) < 5000),
    'icebird agrees (it ignores sequence numbers, so the late file is compared apart)');

  const dry = maintain(name, ['--dry-run', 'compact']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(String((await settled(name, () => true)).snap['snapshot-id']), String(before['snapshot-id']));

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', res.stdout);
  assert.equal(r['files-removed'], 6, res.stdout); // 4 small + the big one + the late one
  assert.equal(r['delete-files-removed'], 3, res.stdout); // d3 names only the late file, rewritten too
  assert.equal(r['deleted-rows-dropped'], 6, res.stdout);
  const { snap: after, meta: metaAfter } = await settled(name, isSnap(r['snapshot-id']));
  assert.equal(after.summary.operation, 'replace');
  assert.equal(after.summary['removed-delete-files'], '3');
  assert.equal(after.summary['total-delete-files'], '0');
  assert.equal(after.summary['total-position-deletes'], '0');
  assert.equal(after.summary['total-records'], String(model.length));
  const live = liveEntries(after);
  assert.equal(live.filter((e) => e.content !== 0).length, 0, 'no live delete file');
  const afterRows = await visibleRows(after);
  assert.deepEqual(afterRows, beforeRows, 'the same rows, no deleted row back');
  assert.deepEqual(afterRows.map((x) => x.slice(0, 2)).filter((x) => Number(x[0]) < 5000), await icebird.rows(metaAfter).then((x) => x.filter((y) => Number(y[0]) < 5000)));
  // Plain read_parquet over the new files (no deletes to apply any more).
  const plain = (await con.runAndReadAll(`SELECT id::INTEGER FROM read_parquet([${live.map((e) => sqlStr(localPath(e.path))).join(', ')}]) ORDER BY id`)).getRowsJson().map((x) => x[0]);
  assert.deepEqual(plain, model);
  // At this tiny target the files roll small, so a second run rewrites
  // them again: still the same rows, and no delete left to apply.
  const again = maintain(name, ['compact']);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.lines[0]['delete-files-removed'], 0, again.stdout);
  assert.equal(again.lines[0]['deleted-rows-dropped'], 0, again.stdout);
  assert.deepEqual(await visibleRows((await settled(name, isSnap(again.lines[0]['snapshot-id']))).snap), beforeRows);
});

test('compact: a delete committed while compaction runs aborts it, the deleted row stays deleted', async () => {
  const name = 'delrace';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 3; b++) await append(name, range(b * 4, 4));
  let { meta } = await settled(name, dataFiles(3));
  const before = currentSnapshot(meta);
  const victim = liveEntries(before).find((e) => e.content === 0);
  // Held once it has written its new file (so after its plan) until the delete is in.
  const dataDir = path.join(localPath(meta.location), 'data');
  const { release } = await maintainHeld(name, ['compact'],
    () => fs.readdirSync(dataDir).some((f) => f.endsWith('-compact.parquet')));
  const d = await positionDeleteFile(path.join(dataDir, 'race.parquet'), [[victim.path, 0]]);
  meta = await commitDeletes(name, meta, [{
    content: 1, file_path: d.path, file_format: 'PARQUET', record_count: d.count, file_size_in_bytes: d.size,
  }]);
  const deletedId = (await (await duck()).runAndReadAll(`SELECT id::INTEGER FROM read_parquet(${sqlStr(localPath(victim.path))}) ORDER BY file_row_number LIMIT 1`)).getRowsJson()[0][0];
  const res = await release();
  assert.notEqual(res.code, 0, `the delete landed after the plan: the compaction must abort\n${res.stdout}`);
  assert.match(res.lines[0].error, /compaction aborted: a concurrent commit added delete files/);
  const cur = currentSnapshot((await loadTable(ctx, name)).metadata);
  assert.equal(String(cur['snapshot-id']), String(currentSnapshot(meta)['snapshot-id']));
  const now = (await settled(name, () => true)).snap;
  const got = (await visibleRows(now)).map((x) => Number(x[0]));
  assert.deepEqual(got, range(0, 12).filter((i) => i !== deletedId), 'the row deleted meanwhile stays deleted');
  // The next run applies it.
  const again = maintain(name, ['compact']);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.lines[0]['deleted-rows-dropped'], 1, again.stdout);
  const after = (await settled(name, isSnap(again.lines[0]['snapshot-id']))).snap;
  assert.deepEqual((await visibleRows(after)).map((x) => Number(x[0])), got);
});
