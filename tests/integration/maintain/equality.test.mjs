// `floe maintain compact` on tables with equality delete files (written by
// DuckDB with the table's field ids, committed in delete manifests):
// - an unpartitioned table: deletes by one field (an int column read as the
//   table's long), by two fields, and by a null value apply to exactly the
//   rows of data files with a lower data sequence number (a row written
//   again after a delete stays); every file they apply to is rewritten
//   without those rows, the delete files are removed in the same `replace`
//   snapshot (removed-equality-deletes in its summary), and readers see the
//   same rows before and after: the spec's rules applied by the test over
//   DuckDB reads, plain read_parquet of the new files, and icebird;
// - a row committed in the same snapshot as a delete of its key (a
//   streaming writer's upsert) is not deleted by it;
// - a partitioned table: a partition's deletes apply to that partition only;
// - after partition evolution the files of the older spec move into the
//   current one (unpartitioned, or partitioned otherwise: each row lands in
//   its partition), with the older spec's position delete and the current
//   spec's unpartitioned equality delete applied; both go, as no file is
//   left for them, in delete manifests of their specs, as does an older
//   unpartitioned spec's delete once its files have moved. Files of an
//   older spec whose source column was dropped stay, and are counted;
// - with floe.compact-max-move-bytes at one byte, each run moves one file of
//   the older spec and leaves the rest (counted), readers see the same rows
//   after every run, and a delete (the older spec's position delete, an
//   unpartitioned one, a partition's equality delete) stays while a file it
//   applies to waits;
// - a delete file without a column its equality_ids name, or naming a field
//   the schema lacks, fails the run with a message that names it, and
//   nothing is committed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, createTable, loadTable, ingest, currentSnapshot, localPath, readAvro, tmpDir, duck, sqlStr,
} from '../ingest/lib.mjs';
import { call, tablePath } from '../tables/lib.mjs';
import { helpers, fields } from './lib.mjs';
import {
  liveEntries, visibleRows, deleteHelpers, equalityDeleteFile, positionDeleteFile, icebirdReader,
} from './deletes-lib.mjs';

let ctx;
const dir = tmpDir('compact-equality');
let maintain;
let append;
let settled;
let createByRegion;
let createBucketed;
let evolveSpec;
let commitDeletes;
let addDuckFile;
let addDuckFileWithDeletes;
const icebird = icebirdReader();

before(async () => {
  ctx = await startCatalog('compact_equality');
  const h = helpers(ctx, dir);
  ({ maintain, append, settled, createByRegion, createBucketed, evolveSpec } = h);
  ({ commitDeletes, addDuckFile, addDuckFileWithDeletes } = deleteHelpers(h.dropManifests));
});

after(async () => {
  await icebird.close();
  await ctx?.floe.stop();
});

const range = (from, n) => Array.from({ length: n }, (_, i) => from + i);
const isSnap = (id) => (snap) => String(snap['snapshot-id']) === String(id);
const ids = (rows) => rows.map((r) => Number(r[0]));
const dataDir = (meta) => path.join(localPath(meta.location), 'data');

// The ids a plain read_parquet of the live files gives (no deletes applied).
async function plainIds(snap) {
  const live = liveEntries(snap);
  assert.equal(live.filter((e) => e.content !== 0).length, 0, 'no live delete file');
  const sql = `SELECT id::INTEGER FROM read_parquet([${live.map((e) => sqlStr(localPath(e.path))).join(', ')}]) ORDER BY id`;
  return (await (await duck()).runAndReadAll(sql)).getRowsJson().map((r) => r[0]);
}

test('compact: equality deletes by one field, two fields and null are applied, their files removed', async () => {
  const name = 'eqflat';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 3; b++) await append(name, range(b * 10, 10));
  let { meta } = await settled(name, (s) => s.summary['total-data-files'] === '3');
  const d = dataDir(meta);
  // By id, written as an int column: the reader promotes it to the long field.
  meta = await commitDeletes(name, meta, [await equalityDeleteFile(path.join(d, 'eq-id.parquet'), { id: 'INTEGER' }, [[1], [12], [999]])]);
  // Id 1 written again after that delete: a newer file, so it stays.
  await append(name, [1, 100, 101]);
  ({ meta } = await settled(name, (s) => s.summary['total-data-files'] === '4'));
  // By (id, name): (22, other) does not match the row (22, n22).
  meta = await commitDeletes(name, meta, [await equalityDeleteFile(path.join(d, 'eq-pair.parquet'), { id: 'BIGINT', name: 'VARCHAR' },
    [[21, 'n21'], [22, 'other'], [100, 'n100']])]);
  meta = await addDuckFile(name, meta, path.join(d, 'nulls.parquet'), 4,
    'SELECT (200 + i)::BIGINT AS id, CASE WHEN i % 2 = 0 THEN NULL ELSE \'v\' || i END AS name FROM range(4) t(i)');
  // By name: null deletes the rows whose name is null, and only those.
  meta = await commitDeletes(name, meta, [await equalityDeleteFile(path.join(d, 'eq-null.parquet'), { name: 'VARCHAR' }, [[null]])]);

  const before = currentSnapshot(meta);
  const model = [...range(0, 30), 1, 100, 101, 200, 201, 202, 203]
    .filter((i, k) => !(i === 1 && k === 1) && ![12, 21, 100, 200, 202].includes(i)).sort((a, b) => a - b);
  const beforeRows = await visibleRows(before);
  assert.deepEqual(ids(beforeRows), model, 'the spec\'s rules over DuckDB reads agree with the model');
  assert.equal(beforeRows.find((r) => r[0] === '1')[1], 'n1');

  const dry = maintain(name, ['--dry-run', 'compact']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(dry.lines[0]['files-removed'], 5, dry.stdout);
  assert.equal(dry.lines[0]['delete-files-removed'], 3, dry.stdout);
  assert.equal(String((await settled(name, () => true)).snap['snapshot-id']), String(before['snapshot-id']));

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', res.stdout);
  assert.equal(r['files-removed'], 5, res.stdout); // every file some delete applies to
  assert.equal(r['delete-files-removed'], 3, res.stdout);
  assert.equal(r['deleted-rows-dropped'], 6, res.stdout);
  const { snap: after, meta: metaAfter } = await settled(name, isSnap(r['snapshot-id']));
  assert.equal(after.summary.operation, 'replace');
  assert.equal(after.summary['removed-delete-files'], '3');
  assert.equal(after.summary['removed-equality-deletes'], '7');
  assert.equal(after.summary['removed-position-deletes'], '0');
  assert.equal(after.summary['total-equality-deletes'], '0');
  assert.equal(after.summary['total-delete-files'], '0');
  assert.equal(after.summary['total-records'], String(model.length));
  assert.deepEqual(await visibleRows(after), beforeRows, 'the same rows, names included');
  assert.deepEqual(await plainIds(after), model);
  assert.deepEqual(await icebird.rows(metaAfter), beforeRows.map((x) => x.slice(0, 2)), 'icebird agrees');
});

test('compact: a row committed with a delete of its key in one snapshot stays (an upsert)', async () => {
  const name = 'equpsert';
  await createTable(ctx, name, fields);
  await append(name, range(0, 5));
  await append(name, range(5, 5));
  let { meta } = await settled(name, (s) => s.summary['total-data-files'] === '2');
  await call(ctx.base, 'POST', tablePath(ctx.p, ctx.ns, name), {
    body: { requirements: [], updates: [{ action: 'set-properties', updates: { 'write.target-file-size-bytes': '4000' } }] },
    expect: 200,
  });
  ({ meta } = await settled(name, () => true));
  const d = dataDir(meta);
  // New rows for ids 2 and 3, and 2,000 more, so that the file is not small:
  // it is rewritten only if a delete applied to it.
  meta = await addDuckFileWithDeletes(name, meta, path.join(d, 'upsert.parquet'), 2002,
    'SELECT (CASE WHEN i < 2 THEN 2 + i ELSE 10000 + i END)::BIGINT AS id, CASE WHEN i < 2 THEN \'new\' || (2 + i) ELSE \'bulk\' || i END AS name FROM range(2002) t(i)',
    [await equalityDeleteFile(path.join(d, 'eq-upsert.parquet'), { id: 'BIGINT' }, [[2], [3]])]);
  assert.ok(fs.statSync(path.join(d, 'upsert.parquet')).size >= 3000, 'the new file is not small');
  const before = currentSnapshot(meta);
  const beforeRows = await visibleRows(before);
  assert.deepEqual(beforeRows.slice(0, 10).map((r) => r.slice(0, 2)), range(0, 10).map((i) => [String(i), i === 2 || i === 3 ? `new${i}` : `n${i}`]));
  assert.equal(beforeRows.length, 2010);

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', res.stdout);
  assert.equal(r['files-removed'], 2, res.stdout); // the two small ones: the delete does not apply to its own snapshot's file
  assert.equal(r['deleted-rows-dropped'], 2, res.stdout);
  assert.equal(r['delete-files-removed'], 1, res.stdout);
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  assert.ok(liveEntries(after).some((e) => e.path.endsWith('/upsert.parquet')), 'the new file stays as it is');
  assert.deepEqual(await visibleRows(after), beforeRows, 'the new rows stay, the old ones are gone');
  assert.deepEqual(await plainIds(after), ids(beforeRows));
});

// One append of [id, region] rows (name n<id>) to a table by region, by the CLI.
async function loadByRegion(name, rows) {
  const file = path.join(dir, `part-${Date.now()}-${Math.random().toString(36).slice(2)}.csv`);
  fs.writeFileSync(file, `id,name,region\n${rows.map(([i, region]) => `${i},n${i},${region}`).join('\n')}\n`);
  const out = await ingest(ctx, name, [file]);
  assert.equal(out.code, 0, out.stderr);
}

test('compact: a partition\'s equality deletes apply to that partition only', async () => {
  const name = 'eqpart';
  await createByRegion(name);
  const load = (rows) => loadByRegion(name, rows);
  await load([[0, 'eu'], [1, 'us'], [2, 'ap']]);
  await load([[3, 'eu'], [4, 'us'], [5, 'ap']]);
  let { meta } = await settled(name, (s) => s.summary['total-data-files'] === '6');
  // Ids 0, 3 and 4 in eu: 4 is in us, where this delete does not apply.
  meta = await commitDeletes(name, meta, [{
    ...await equalityDeleteFile(path.join(dir, 'eq-eu.parquet'), { id: 'BIGINT' }, [[0], [3], [4]]),
    partition: { region: 'eu' },
  }]);
  await load([[0, 'eu'], [6, 'us']]);
  ({ meta } = await settled(name, (s) => s.summary['total-data-files'] === '8'));
  const before = currentSnapshot(meta);
  const beforeRows = await visibleRows(before);
  assert.deepEqual(ids(beforeRows), [0, 1, 2, 4, 5, 6]);

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', res.stdout);
  assert.deepEqual(r.plan.map((x) => x.partition.region).sort(), ['ap', 'eu', 'us']);
  assert.equal(r['delete-files-removed'], 1, res.stdout);
  assert.equal(r['deleted-rows-dropped'], 2, res.stdout);
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  assert.equal(after.summary['removed-equality-deletes'], '3');
  assert.equal(after.summary['total-delete-files'], '0');
  assert.deepEqual(await visibleRows(after), beforeRows);
  assert.deepEqual(await plainIds(after), [0, 1, 2, 4, 5, 6]);
});

// A table bucketed on id (spec 0), its first two appends, and a position
// delete of spec 0's (committed while spec 0 is current, so its manifest is of
// spec 0) of the first row of one of their files; returns [meta, that row's id].
async function bucketedWithDelete(name) {
  await createBucketed(name);
  await append(name, range(0, 3));
  await append(name, range(3, 3));
  let { meta } = await settled(name, (s) => Number(s.summary['total-records']) === 6);
  const f0 = liveEntries(currentSnapshot(meta)).find((e) => e.content === 0);
  const first = (await (await duck()).runAndReadAll(
    `SELECT id::INTEGER FROM read_parquet(${sqlStr(localPath(f0.path))}) ORDER BY file_row_number LIMIT 1`)).getRowsJson()[0][0];
  const pd = await positionDeleteFile(path.join(localPath(meta.location), 'data', 'pos.parquet'), [[f0.path, 0]]);
  meta = await commitDeletes(name, meta, [{
    content: 1, file_path: pd.path, file_format: 'PARQUET', record_count: pd.count, file_size_in_bytes: pd.size,
    partition: { id_bucket: Number(f0.df.partition.id_bucket) }, // an int (readAvro gives text)
  }]);
  return [meta, first];
}

// The ids in the live data files, read plainly (the deletes left are checked apart).
async function liveIds(snap) {
  const live = liveEntries(snap).filter((e) => e.content === 0);
  const sql = `SELECT id::INTEGER FROM read_parquet([${live.map((e) => sqlStr(localPath(e.path))).join(', ')}]) ORDER BY id`;
  return (await (await duck()).runAndReadAll(sql)).getRowsJson().map((r) => r[0]);
}

test('compact after partition evolution: the older spec\'s files move into the current one, their deletes applied', async () => {
  const name = 'eqspec';
  let [meta, first] = await bucketedWithDelete(name);
  // The table goes unpartitioned: its next files are of spec 1.
  await evolveSpec(name, { 'spec-id': 1, fields: [] });
  await append(name, range(10, 3));
  await append(name, range(20, 3));
  ({ meta } = await settled(name, (s) => Number(s.summary['total-records']) === 12));
  meta = await commitDeletes(name, meta, [await equalityDeleteFile(path.join(dir, 'eq-spec.parquet'), { id: 'BIGINT' }, [[0], [4], [10], [20]])]);
  const before = currentSnapshot(meta);
  const eq = liveEntries(before).find((e) => e.content === 2);
  assert.equal(eq.spec, 1, 'the delete belongs to the unpartitioned current spec');
  const beforeRows = await visibleRows(before);
  const gone = new Set([0, 4, 10, 20, first]);
  assert.deepEqual(ids(beforeRows), [0, 1, 2, 3, 4, 5, 10, 11, 12, 20, 21, 22].filter((i) => !gone.has(i)));
  const spec0Files = liveEntries(before).filter((e) => e.content === 0 && e.spec === 0).length;

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', res.stdout);
  assert.equal(r['files-moved-to-current-spec'], spec0Files, res.stdout);
  assert.equal(r['files-removed'], spec0Files + 2, res.stdout); // and spec 1's two
  assert.equal(r['deleted-rows-dropped'], gone.size, res.stdout);
  // No file of spec 0 is left for the unpartitioned delete to apply to: it
  // goes, and so does spec 0's position delete, every file it names moved.
  assert.equal(r['delete-files-removed'], 2, res.stdout);
  assert.equal(r['files-of-older-specs-kept'], undefined, res.stdout);
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  const live = liveEntries(after);
  assert.deepEqual(live.filter((e) => e.content === 0).map((e) => e.spec), [1, 1],
    'every data file is of the current spec: spec 1\'s two made one, and the rows of spec 0\'s partitions one');
  assert.equal(r['files-added'], 2, res.stdout);
  assert.deepEqual(live.filter((e) => e.content !== 0), [], 'no delete file is left');
  assert.equal(after.summary['total-delete-files'], '0');
  assert.equal(after.summary['removed-delete-files'], '2');
  // The DELETED entries of spec 0's files and of its delete are in manifests of spec 0.
  const own = readAvro(after['manifest-list']).records.filter((le) => String(le.added_snapshot_id) === String(after['snapshot-id']));
  assert.deepEqual(own.map((le) => [Number(le.content), Number(le.partition_spec_id)]).sort(), [[0, 0], [0, 1], [1, 0], [1, 1]]);
  assert.deepEqual(await liveIds(after), ids(beforeRows), 'the rows are in the files, without deletes');
  assert.deepEqual(await visibleRows(after), beforeRows, 'readers that apply deletes see the same rows');
  assert.equal(after.summary['total-records'], String(beforeRows.length));
  assert.equal(after.summary['total-data-files'], String(live.filter((e) => e.content === 0).length));
  assert.deepEqual(await icebird.rows((await loadTable(ctx, name)).metadata), beforeRows.map((x) => x.slice(0, 2)), 'icebird agrees');
});

test('compact after partition evolution into another partitioning: each moved row lands in its partition', async () => {
  const name = 'eqrespec';
  let [meta, first] = await bucketedWithDelete(name);
  await evolveSpec(name, { 'spec-id': 1, fields: [{ 'source-id': 2, 'field-id': 1001, name: 'name', transform: 'identity' }] });
  await append(name, range(10, 2));
  ({ meta } = await settled(name, (s) => Number(s.summary['total-records']) === 8));
  const before = currentSnapshot(meta);
  const beforeRows = await visibleRows(before);
  const spec0Files = liveEntries(before).filter((e) => e.content === 0 && e.spec === 0).length;

  // A dry run says what would move and commits nothing.
  const dry = maintain(name, ['--dry-run', 'compact']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(dry.lines[0]['files-moved-to-current-spec'], spec0Files, dry.stdout);
  assert.ok(dry.lines[0].plan.filter((g) => g.moves).every((g) => g['spec-id'] === 0), dry.stdout);
  assert.equal(String(currentSnapshot((await loadTable(ctx, name)).metadata)['snapshot-id']), String(before['snapshot-id']));

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r['files-moved-to-current-spec'], spec0Files, res.stdout);
  assert.equal(r['deleted-rows-dropped'], 1, res.stdout);
  assert.equal(r['delete-files-removed'], 1, res.stdout);
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  assert.equal(after.summary['total-delete-files'], '0');
  const data = liveEntries(after).filter((e) => e.content === 0);
  assert.ok(data.every((e) => e.spec === 1), 'every data file is of spec 1');
  const con = await duck();
  for (const e of data) {
    const names = (await con.runAndReadAll(`SELECT DISTINCT name FROM read_parquet(${sqlStr(localPath(e.path))})`)).getRowsJson().map((x) => x[0]);
    assert.deepEqual(names, [e.df.partition.name], `${e.path} holds only its partition's rows`);
  }
  // One file per name: the five moved rows left (six less the deleted one), the two of spec 1.
  assert.equal(data.length, 7);
  assert.ok(!ids(await visibleRows(after)).includes(first));
  assert.deepEqual(await visibleRows(after), beforeRows);
  assert.deepEqual(await liveIds(after), ids(beforeRows));
  assert.deepEqual(await icebird.rows((await loadTable(ctx, name)).metadata), beforeRows.map((x) => x.slice(0, 2)), 'icebird agrees');
});

// Sets floe.compact-max-move-bytes to one byte: a run then moves exactly
// one file of an older spec (at least one a run).
const moveOneFileARun = (name) => call(ctx.base, 'POST', tablePath(ctx.p, ctx.ns, name), {
  body: { requirements: [], updates: [{ action: 'set-properties', updates: { 'floe.compact-max-move-bytes': '1' } }] }, expect: 200,
});

// Runs compact once per file of spec 0 (n0), each run moving one and leaving
// the rest, the rows the same for readers that apply deletes and for
// icebird after every run (icebirdEachRun false: at the end only); then once
// more, moving nothing.  check(run, report, snapshot) adds a test's own
// checks.  Returns the number of partitions moved in part.
async function moveOverRuns(name, n0, beforeRows, check, icebirdEachRun = true) {
  const spec0 = (snap) => liveEntries(snap).filter((e) => e.content === 0 && e.spec === 0);
  let partial = 0;
  for (let run = 1; run <= n0; run++) {
    const res = maintain(name, ['compact']);
    assert.equal(res.code, 0, res.stderr);
    const r = res.lines[0];
    assert.equal(r['files-moved-to-current-spec'], 1, `run ${run}: ${res.stdout}`);
    assert.equal(r['files-of-older-specs-left'], run < n0 ? n0 - run : undefined, `run ${run}: ${res.stdout}`);
    const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
    assert.equal(spec0(after).length, n0 - run, `run ${run}: the files that wait stay live, in spec 0`);
    assert.deepEqual(await visibleRows(after), beforeRows, `run ${run}: readers that apply deletes see the same rows`);
    if (icebirdEachRun) {
      assert.deepEqual(await icebird.rows((await loadTable(ctx, name)).metadata), beforeRows.map((x) => x.slice(0, 2)), `run ${run}: icebird agrees`);
    }
    assert.equal(after.summary['total-records'], String(liveEntries(after).filter((e) => e.content === 0)
      .reduce((n, e) => n + Number(e.df.record_count), 0)), `run ${run}: total-records`);
    partial += r.plan.filter((g) => g.moves && g.partial).length;
    check?.(run, r, after);
  }
  const done = maintain(name, ['compact']);
  assert.equal(done.code, 0, done.stderr);
  assert.equal(done.lines[0]['files-moved-to-current-spec'], 0, done.stdout);
  const last = (await settled(name, () => true)).snap;
  assert.deepEqual(liveEntries(last).filter((e) => e.content !== 0), [], 'no delete file is left');
  assert.deepEqual(await liveIds(last), ids(beforeRows));
  assert.deepEqual(await icebird.rows((await loadTable(ctx, name)).metadata), beforeRows.map((x) => x.slice(0, 2)), 'icebird agrees');
  return partial;
}

test('compact after partition evolution, floe.compact-max-move-bytes: the files move over several runs, deletes stay while a file they apply to waits', async () => {
  const name = 'eqcap';
  let [meta, first] = await bucketedWithDelete(name);
  const named = liveEntries(currentSnapshot(meta)).find((e) => e.content === 0).path; // the position delete's file
  await evolveSpec(name, { 'spec-id': 1, fields: [] });
  await append(name, range(10, 3));
  ({ meta } = await settled(name, (s) => Number(s.summary['total-records']) === 9));
  meta = await commitDeletes(name, meta, [await equalityDeleteFile(path.join(localPath(meta.location), 'data', 'eq-cap.parquet'), { id: 'BIGINT' }, [[0], [4], [10]])]);
  await moveOneFileARun(name);
  ({ meta } = await settled(name, () => true));
  const beforeRows = await visibleRows(currentSnapshot(meta));
  const gone = new Set([0, 4, 10, first]);
  assert.deepEqual(ids(beforeRows), [0, 1, 2, 3, 4, 5, 10, 11, 12].filter((i) => !gone.has(i)));
  const deletes = (snap) => liveEntries(snap).filter((e) => e.content !== 0).map((e) => e.content).sort();
  const n0 = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0 && e.spec === 0).length;
  assert.ok(n0 >= 3, `spec 0 has ${n0} data files`);
  assert.deepEqual(deletes(currentSnapshot(meta)), [1, 2]);
  const partial = await moveOverRuns(name, n0, beforeRows, (run, r, after) => {
    // The unpartitioned delete stays while a file of spec 0 waits; the
    // position delete while the file it names does.
    assert.equal(deletes(after).includes(2), run < n0, `run ${run}: the equality delete stays while a file waits`);
    assert.equal(deletes(after).includes(1), liveEntries(after).some((e) => e.path === named),
      `run ${run}: the position delete stays while its file waits: ${JSON.stringify(r)}`);
  });
  assert.ok(partial > 0, 'a partition of spec 0 moved over two runs');
});

test('compact after partition evolution, floe.compact-max-move-bytes: a partition\'s equality delete stays until its last file moves', async () => {
  const name = 'eqcap2';
  await createByRegion(name);
  const load = (rows) => loadByRegion(name, rows);
  await load([[0, 'eu'], [1, 'us']]);
  await load([[2, 'eu'], [3, 'us']]);
  await load([[4, 'eu']]);
  let { meta } = await settled(name, (s) => s.summary['total-data-files'] === '5');
  meta = await commitDeletes(name, meta, [{
    ...await equalityDeleteFile(path.join(localPath(meta.location), 'data', 'eq-cap-eu.parquet'), { id: 'BIGINT' }, [[0], [2], [3]]),
    partition: { region: 'eu' },
  }]);
  await evolveSpec(name, { 'spec-id': 1, fields: [] });
  await moveOneFileARun(name);
  ({ meta } = await settled(name, () => true));
  const beforeRows = await visibleRows(currentSnapshot(meta));
  assert.deepEqual(ids(beforeRows), [1, 3, 4], '3 is in us, where the delete does not apply');
  const eqLive = (snap) => liveEntries(snap).some((e) => e.content === 2);
  const euLeft = (snap) => liveEntries(snap).some((e) => e.content === 0 && e.spec === 0 && e.df.partition.region === 'eu');
  // icebird applies an equality delete to every partition (it ignores the
  // delete's own): read by it once the delete is gone.
  const partial = await moveOverRuns(name, 5, beforeRows, (run, r, after) => {
    assert.equal(eqLive(after), euLeft(after), `run ${run}: eu's delete stays while an eu file waits: ${JSON.stringify(r)}`);
  }, false);
  assert.ok(partial > 0, 'a partition of spec 0 moved over two runs');
});

test('compact: an equality delete it cannot apply fails the run, naming it, and commits nothing', async () => {
  // A malformed file is bad input (exit 3); a delete on a dropped field is
  // one compaction does not apply (exit 1).
  for (const [name, entry, code, message] of [
    ['eqmissing', (f) => ({ ...f, equality_ids: [1, 2] }), 3, /equality delete file \S+eqmissing\.parquet: no column has field id 2/],
    ['equnknown', (f) => ({ ...f, equality_ids: [7] }), 1, /equality delete file \S+equnknown\.parquet names field id 7, which the current schema lacks/],
  ]) {
    await createTable(ctx, name, fields);
    await append(name, range(0, 3));
    await append(name, range(3, 3));
    let { meta } = await settled(name, (s) => s.summary['total-data-files'] === '2');
    const f = await equalityDeleteFile(path.join(dir, `${name}.parquet`), { id: 'BIGINT' }, [[1]]);
    meta = await commitDeletes(name, meta, [entry(f)]);
    const res = maintain(name, ['compact']);
    assert.equal(res.code, code, res.stdout);
    assert.equal(res.lines[0].status, 'failed');
    assert.match(res.lines[0].error, message);
    assert.equal(String(currentSnapshot((await loadTable(ctx, name)).metadata)['snapshot-id']), String(currentSnapshot(meta)['snapshot-id']));
    const left = fs.readdirSync(dataDir(meta)).filter((x) => x.endsWith('-compact.parquet'));
    assert.deepEqual(left, [], 'no rewritten file is left behind');
  }
});

test('compact after partition evolution: files of an older spec whose source column was dropped stay', async () => {
  const name = 'eqdropped';
  await createByRegion(name);
  await append(name, range(0, 3));
  await append(name, range(3, 3));
  await evolveSpec(name, { 'spec-id': 1, fields: [] });
  // region, spec 0's source, leaves the schema.
  await call(ctx.base, 'POST', tablePath(ctx.p, ctx.ns, name), {
    body: {
      requirements: [],
      updates: [{ action: 'add-schema', schema: { type: 'struct', 'schema-id': 1, fields } }, { action: 'set-current-schema', 'schema-id': -1 }],
    },
    expect: 200,
  });
  await append(name, range(10, 3));
  await append(name, range(20, 3));
  const { meta } = await settled(name, (s) => Number(s.summary['total-records']) === 12);
  const before = currentSnapshot(meta);
  const spec0Files = liveEntries(before).filter((e) => e.content === 0 && e.spec === 0).length;
  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r['files-moved-to-current-spec'], 0, res.stdout);
  assert.equal(r['files-of-older-specs-kept'], spec0Files, res.stdout);
  assert.equal(r['files-removed'], 2, res.stdout); // spec 1's two small files
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  assert.equal(liveEntries(after).filter((e) => e.spec === 0).length, spec0Files, 'spec 0\'s files stay');
  assert.deepEqual(await liveIds(after), [...range(0, 6), ...range(10, 3), ...range(20, 3)]);
});

test('compact after partition evolution: an unpartitioned delete of the older spec goes once its files move', async () => {
  const name = 'eqglobalold';
  await createTable(ctx, name, fields); // spec 0, unpartitioned
  await append(name, range(0, 3));
  await append(name, range(3, 3));
  let { meta } = await settled(name, (s) => Number(s.summary['total-records']) === 6);
  meta = await commitDeletes(name, meta, [await equalityDeleteFile(path.join(localPath(meta.location), 'data', 'eq-old.parquet'), { id: 'BIGINT' }, [[1], [4], [11]])]);
  await evolveSpec(name, { 'spec-id': 1, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'name', transform: 'identity' }] });
  await append(name, range(10, 2)); // 11 is written after the delete: it stays
  ({ meta } = await settled(name, (s) => Number(s.summary['total-records']) === 8));
  const before = currentSnapshot(meta);
  assert.deepEqual(liveEntries(before).filter((e) => e.content === 2).map((e) => e.spec), [0]);
  const beforeRows = await visibleRows(before);
  assert.deepEqual(ids(beforeRows), [0, 2, 3, 5, 10, 11]);

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r['files-moved-to-current-spec'], 2, res.stdout);
  assert.equal(r['deleted-rows-dropped'], 2, res.stdout);
  assert.equal(r['delete-files-removed'], 1, res.stdout);
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  assert.equal(after.summary['total-delete-files'], '0');
  assert.equal(after.summary['removed-equality-deletes'], '3');
  const own = readAvro(after['manifest-list']).records.filter((le) => String(le.added_snapshot_id) === String(after['snapshot-id']));
  assert.deepEqual(own.map((le) => [Number(le.content), Number(le.partition_spec_id)]).sort(), [[0, 0], [0, 1], [1, 0]],
    'the moved files\' and the delete\'s DELETED entries are in manifests of spec 0');
  assert.deepEqual(await visibleRows(after), beforeRows);
  assert.deepEqual(await liveIds(after), ids(beforeRows));
  assert.deepEqual(await icebird.rows((await loadTable(ctx, name)).metadata), beforeRows.map((x) => x.slice(0, 2)), 'icebird agrees');
});
