// `floe maintain compact` (bin-pack) on tables written by `floe ingest`:
// - 20 small appends become one file: one `replace` snapshot (Appendix F
//   summary), the old files DELETED and the new ADDED in its manifest, rows
//   identical before and after for DuckDB (read_parquet over the live
//   files) and Floe's reader; a second run finds nothing to do;
// - a partitioned table is compacted per partition, partition values kept;
// - appends racing a compaction (held between its rewrite and its commit)
//   are kept: every acknowledged row present exactly once; a commit that
//   removes a file the compaction rewrote aborts it, and nothing is lost;
// - files without field ids (DuckDB's) are read through the table's name
//   mapping, and refused without one (their columns would read as nulls);
// - --dry-run reports the plan and changes nothing;
// - the table's default sort order orders each new file: identity fields,
//   and transforms by their result (bucket[4] checked against the spec's
//   Murmur3).
// Tables with row-level deletes, v3 tables and manifests rewritten in part:
// deletes.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, createTable, loadTable, ingest, show, currentSnapshot, localPath, readAvro, tmpDir, duck, sqlStr,
} from '../ingest/lib.mjs';
import { call } from '../tables/lib.mjs';
import { helpers, decodeAvro, encodeAvro, fields } from './lib.mjs';

let ctx;
const dir = tmpDir('compact');
let maintain;
let maintainHeld;
let append;
let liveFiles;
let rows;
let dropManifests;
let settled;
let createByRegion;

before(async () => {
  ctx = await startCatalog('compact');
  ({ maintain, maintainHeld, append, liveFiles, rows, dropManifests, settled, createByRegion } = helpers(ctx, dir));
});

after(async () => {
  await ctx?.floe.stop();
});

// A reached() of maintainHeld: the compaction wrote a file into the table's data folder.
const compactWritten = (meta) => () => fs.readdirSync(path.join(localPath(meta.location), 'data'))
  .some((f) => f.endsWith('-compact.parquet'));

// Murmur3 x86 32-bit, seed 0 (the spec's bucket hash, Appendix B).
function murmur3(buf) {
  const mul = (a, b) => Math.imul(a, b) >>> 0;
  const rotl = (x, r) => ((x << r) | (x >>> (32 - r))) >>> 0;
  let h = 0;
  const n = buf.length & ~3;
  for (let i = 0; i < n; i += 4) {
    let k = buf.readUInt32LE(i);
    k = mul(rotl(mul(k, 0xcc9e2d51), 15), 0x1b873593);
    h = (mul(rotl(h ^ k, 13), 5) + 0xe6546b64) >>> 0;
  }
  let k = 0;
  for (let i = buf.length - 1; i >= n; i--) k = ((k << 8) | buf[i]) >>> 0;
  if (buf.length & 3) {
    k = mul(rotl(mul(k, 0xcc9e2d51), 15), 0x1b873593);
    h = (h ^ k) >>> 0;
  }
  h = (h ^ buf.length) >>> 0;
  h = mul(h ^ (h >>> 16), 0x85ebca6b);
  h = mul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const head = async (name) => currentSnapshot((await loadTable(ctx, name)).metadata);

const files = (n) => (snap) => snap.summary['total-data-files'] === String(n);
const isSnap = (id) => (snap) => String(snap['snapshot-id']) === String(id);
const range = (from, n) => Array.from({ length: n }, (_, i) => from + i);

// The entries of a snapshot's manifests: [{status, path, partition, snapshot}].
function entries(snapshot) {
  const out = [];
  for (const le of readAvro(snapshot['manifest-list']).records) {
    for (const e of readAvro(le.manifest_path).records) {
      out.push({ status: e.status, path: e.data_file.file_path, partition: e.data_file.partition, snapshot: e.snapshot_id });
    }
  }
  return out;
}

test('compact: 20 small appends become one file, rows unchanged, a replace snapshot', async () => {
  const name = 'small';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 20; b++) await append(name, range(b * 5, 5));
  const before = (await settled(name, files(20))).snap;
  const beforeFiles = liveFiles(before);
  assert.equal(beforeFiles.length, 20);
  const beforeRows = await rows(before);
  assert.equal(beforeRows.length, 100);

  // Dry run: the plan, nothing written or committed.
  const metaLoc = (await loadTable(ctx, name))['metadata-location'];
  const dataDir = path.join(localPath(before['manifest-list']), '..', '..', 'data');
  const dataBefore = fs.readdirSync(dataDir).sort();
  const dry = maintain(name, ['--dry-run', 'compact']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(dry.lines.length, 1);
  const d = dry.lines[0];
  assert.equal(d.status, 'ok', d.error);
  assert.equal(d['dry-run'], true);
  assert.equal(d['files-removed'], 20);
  assert.equal(d['files-added'], 1);
  assert.equal(d.partitions, 1);
  const sizes = beforeFiles.map((f) => fs.statSync(localPath(f)).size).reduce((a, b) => a + b, 0);
  assert.equal(d['bytes-removed'], sizes);
  assert.equal((await loadTable(ctx, name))['metadata-location'], metaLoc, 'dry run commits nothing');
  assert.deepEqual(fs.readdirSync(dataDir).sort(), dataBefore, 'dry run writes nothing');

  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', r.error);
  assert.equal(r.action, 'compact');
  assert.equal(r['files-removed'], 20);
  assert.equal(r['files-added'], 1);
  assert.equal(r['bytes-removed'], sizes);
  assert.equal(r.partitions, 1);
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  assert.equal(String(after['snapshot-id']), String(r['snapshot-id']));
  assert.equal(String(after['parent-snapshot-id']), String(before['snapshot-id']));
  const s = after.summary;
  assert.equal(s.operation, 'replace');
  assert.equal(s['added-data-files'], '1');
  assert.equal(s['deleted-data-files'], '20');
  assert.equal(s['added-records'], '100');
  assert.equal(s['deleted-records'], '100');
  assert.equal(s['removed-files-size'], String(sizes));
  assert.equal(s['added-files-size'], String(r['bytes-added']));
  assert.equal(s['total-records'], '100');
  assert.equal(s['total-data-files'], '1');
  assert.equal(s['total-files-size'], String(r['bytes-added']));
  const live = liveFiles(after);
  assert.equal(live.length, 1);
  assert.equal(fs.statSync(localPath(live[0])).size, r['bytes-added']);
  // The new manifest: the new file ADDED, the 20 old ones DELETED.
  const es = entries(after);
  assert.deepEqual(es.filter((e) => e.status === '1').map((e) => e.path), live);
  assert.deepEqual(es.filter((e) => e.status === '2').map((e) => e.path).sort(), beforeFiles);
  // Spec "Manifests": a DELETED entry's snapshot_id is the snapshot that deleted it.
  assert.deepEqual([...new Set(es.filter((e) => e.status === '2').map((e) => e.snapshot))], [String(after['snapshot-id'])]);
  assert.deepEqual(await rows(after), beforeRows);
  // The old snapshot still reads (its files stay until expiry).
  assert.deepEqual(await rows(before), beforeRows);

  const again = maintain(name, ['compact']);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.lines[0]['files-removed'], 0);
  assert.equal(String((await head(name))['snapshot-id']), String(after['snapshot-id']));
});

test('compact: a partitioned table is compacted per partition', async () => {
  const name = 'parted';
  await createByRegion(name);
  const regions = ['eu', 'us', 'ap'];
  let id = 0;
  for (let b = 0; b < 6; b++) {
    const file = path.join(dir, `p${b}.csv`);
    const lines = [];
    for (let k = 0; k < 6; k++, id++) lines.push(`${id},n${id},${regions[id % 3]}`);
    fs.writeFileSync(file, `id,name,region\n${lines.join('\n')}\n`);
    const res = await ingest(ctx, name, [file]);
    assert.equal(res.code, 0, show(res));
  }
  const before = (await settled(name, files(18))).snap;
  assert.equal(liveFiles(before).length, 18);
  const cols = ['id', 'name', 'region'];
  const beforeRows = await rows(before, cols);
  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', r.error);
  assert.equal(r['files-removed'], 18);
  assert.equal(r['files-added'], 3);
  assert.equal(r.partitions, 3);
  assert.deepEqual(r.plan.map((p) => p.partition.region).sort(), ['ap', 'eu', 'us']);
  for (const p of r.plan) {
    assert.equal(p['files-removed'], 6);
    assert.equal(p['files-added'], 1);
  }
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  assert.deepEqual(await rows(after, cols), beforeRows);
  // Each new file holds exactly its partition's rows.
  const con = await duck();
  const added = entries(after).filter((x) => x.status === '1');
  assert.equal(added.length, 3);
  for (const e of added) {
    const got = (await con.runAndReadAll(`SELECT id::VARCHAR, name, region FROM read_parquet(${sqlStr(localPath(e.path))}) ORDER BY id`))
      .getRowsJson().map((row) => [String(row[0]), row[1], row[2]]);
    assert.deepEqual(got, beforeRows.filter((row) => row[2] === e.partition.region));
    assert.equal(got.length, 12);
  }
  assert.equal(after.summary['changed-partition-count'], '3');
});

test('compact and manifests: a table partitioned by decimal and uuid values', async () => {
  const name = 'bytesparted';
  await call(ctx.base, 'POST', `${ctx.p}/namespaces/${ctx.ns.join('%1F')}/tables`, {
    body: {
      name,
      schema: {
        type: 'struct', 'schema-id': 0, fields: [...fields,
          { id: 3, name: 'amount', type: 'decimal(10, 2)', required: false },
          { id: 4, name: 'u', type: 'uuid', required: false }],
      },
      'partition-spec': {
        'spec-id': 0, fields: [
          { 'source-id': 3, 'field-id': 1000, name: 'amount', transform: 'identity' },
          { 'source-id': 4, 'field-id': 1001, name: 'u', transform: 'identity' }],
      },
    },
    expect: 200,
  });
  const parts = [['-12.50', '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0'], ['1234.05', 'f0e1d2c3-b4a5-9687-7869-5a4b3c2d1e0f']];
  for (let b = 0; b < 4; b++) {
    const file = path.join(dir, `bp${b}.csv`);
    const lines = range(b * 4, 4).map((i) => `${i},n${i},${parts[i % 2][0]},${parts[i % 2][1]}`);
    fs.writeFileSync(file, `id,name,amount,u\n${lines.join('\n')}\n`);
    const res = await ingest(ctx, name, [file]);
    assert.equal(res.code, 0, show(res));
  }
  const before = (await settled(name, files(8))).snap;
  const read = async (snap) => (await (await duck()).runAndReadAll(`SELECT id::VARCHAR, amount::VARCHAR, u::VARCHAR
    FROM read_parquet([${liveFiles(snap).map((f) => sqlStr(localPath(f))).join(', ')}]) ORDER BY id`)).getRowsJson();
  const beforeRows = await read(before);
  assert.equal(beforeRows.length, 16);
  // The four appends' manifests merged into one: their partition tuples read back.
  const merged = maintain(name, ['manifests']);
  assert.equal(merged.code, 0, merged.stderr);
  assert.equal(merged.lines[0].status, 'ok', merged.stdout);
  assert.equal(merged.lines[0]['manifests-replaced'], 4, merged.stdout);
  const mergedSnap = (await settled(name, isSnap(merged.lines[0]['snapshot-id']))).snap;
  assert.deepEqual(await read(mergedSnap), beforeRows);
  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.lines[0].status, 'ok', res.stdout);
  assert.equal(res.lines[0]['files-added'], 2);
  const after = (await settled(name, isSnap(res.lines[0]['snapshot-id']))).snap;
  assert.deepEqual(await read(after), beforeRows);
  // Each new file holds the rows of its partition's decimal and uuid.
  const con = await duck();
  for (const e of entries(after).filter((x) => x.status === '1')) {
    const got = (await con.runAndReadAll(`SELECT DISTINCT amount::VARCHAR, u::VARCHAR FROM read_parquet(${sqlStr(localPath(e.path))})`)).getRowsJson();
    assert.equal(got.length, 1, 'one partition per file');
    assert.ok(parts.some(([a, u]) => got[0][0] === a && got[0][1] === u), JSON.stringify(got));
  }
});

test('compact: appends racing the compaction are kept, each row exactly once', async () => {
  const name = 'race';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 10; b++) await append(name, range(b * 3, 3));
  const { meta: planned, snap: before } = await settled(name, files(10));
  // Hold the compaction between its rewrite and its commit while 16
  // concurrent appends land.
  const { release } = await maintainHeld(name, ['compact'], compactWritten(planned));
  const appends = range(0, 16).map(async (k) => {
    const file = path.join(dir, `race${k}.csv`);
    fs.writeFileSync(file, `id,name\n${range(1000 + k * 10, 4).map((i) => `${i},n${i}`).join('\n')}\n`);
    return ingest(ctx, name, [file]);
  });
  const acks = await Promise.all(appends);
  for (const a of acks) assert.equal(a.code, 0, show(a));
  const res = await release();
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', r.error);
  assert.equal(r['files-removed'], 10);
  const want = [...range(0, 30), ...range(0, 16).flatMap((k) => range(1000 + k * 10, 4))].sort((a, b) => a - b);
  // The final state (whichever commit came last): every row, 17 files.
  const { meta, snap: after } = await settled(name, (s) => s.summary['total-records'] === String(want.length) &&
    s.summary['total-data-files'] === '17');
  // Appends landed between the compaction's plan and its commit (its
  // parent is not the state it planned on): the race really happened.
  const mine = meta.snapshots.find((s) => String(s['snapshot-id']) === String(r['snapshot-id']));
  assert.ok(mine, 'the compaction snapshot is in the table');
  assert.notEqual(String(mine['parent-snapshot-id']), String(before['snapshot-id']));
  const got = (await rows(after)).map((row) => Number(row[0]));
  assert.deepEqual(got, want, 'every acknowledged row exactly once');
  assert.equal(liveFiles(after).length, 1 + 16);
  assert.equal(after.summary['total-records'], String(want.length));
  assert.equal(after.summary['total-data-files'], '17');
});

test('compact: a commit that removes a rewritten file aborts it, nothing lost', async () => {
  const name = 'conflict';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 4; b++) await append(name, range(b * 3, 3));
  const { meta } = await settled(name, files(4));
  const dataDir = path.join(localPath(currentSnapshot(meta)['manifest-list']), '..', '..', 'data');
  const { release } = await maintainHeld(name, ['compact'], compactWritten(meta));
  // Meanwhile a delete drops the first append's manifest (and its rows).
  const lists = readAvro(currentSnapshot(meta)['manifest-list']).records;
  const first = lists[lists.length - 1].manifest_path;
  const dropped = await dropManifests(name, meta, (rec) => rec.manifest_path === first);
  const res = await release();
  assert.equal(res.code, 1, res.stdout);
  assert.equal(res.lines[0].status, 'failed');
  assert.match(res.lines[0].error, /compaction aborted, a concurrent commit removed files it rewrote/);
  const after = await head(name);
  assert.equal(String(after['snapshot-id']), String(currentSnapshot(dropped.metadata)['snapshot-id']));
  assert.equal(after.summary.operation, 'delete');
  assert.deepEqual((await rows(after)).map((row) => Number(row[0])), range(3, 9));
  assert.deepEqual(fs.readdirSync(dataDir).filter((f) => f.includes('compact')), [], 'its new files are deleted');
});

test('compact: files without field ids are read by the name mapping, refused without one', async () => {
  const name = 'foreign';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 2; b++) await append(name, range(b * 3, 3));
  let { meta } = await settled(name, files(2));
  // A DuckDB file (no field ids) added by a manifest copied from an append's.
  const dataDir = path.join(localPath(currentSnapshot(meta)['manifest-list']), '..', '..', 'data');
  const duckFile = path.join(dataDir, 'duckdb-written.parquet');
  const con = await duck();
  await con.run(`COPY (SELECT (100 + i)::BIGINT AS id, 'd' || i AS name FROM range(3) t(i)) TO ${sqlStr(duckFile)} (FORMAT parquet)`);
  const listRecs = readAvro(currentSnapshot(meta)['manifest-list']).records;
  const src = localPath(listRecs[0].manifest_path);
  const m = await decodeAvro(src);
  const added = `${path.dirname(src)}/duckdb-added-m0.avro`;
  const size = BigInt(fs.statSync(duckFile).size);
  await encodeAvro(added, m.type, m.header.meta, [{
    ...m.recs[0],
    data_file: {
      ...m.recs[0].data_file, file_path: `file://${duckFile}`, file_size_in_bytes: size, record_count: 3n,
      column_sizes: null, value_counts: null, null_value_counts: null, nan_value_counts: null,
      lower_bounds: null, upper_bounds: null, split_offsets: null,
    },
  }]);
  meta = (await dropManifests(name, meta, () => false, {
    edit: (recs) => [...recs, {
      ...recs[0], manifest_path: `file://${added}`, manifest_length: BigInt(fs.statSync(added).size), added_rows_count: 3n,
    }],
  })).metadata;
  const before = currentSnapshot(meta);
  assert.equal(liveFiles(before).length, 3);
  const mapping = JSON.stringify([{ 'field-id': 1, names: ['id'] }, { 'field-id': 2, names: ['name'] }]);
  const beforeRows = await rows(before, ['id', 'name'], { mapping });
  assert.equal(beforeRows.length, 9);
  let res = maintain(name, ['compact']);
  assert.equal(res.code, 1, res.stdout);
  assert.match(res.lines[0].error, /column id has no field id and the table's name mapping does not name it; compacting such files is not yet supported/);
  assert.equal(String((await head(name))['snapshot-id']), String(before['snapshot-id']));
  assert.deepEqual(fs.readdirSync(dataDir).filter((f) => f.includes('compact')), [], 'its new files are deleted');

  await call(ctx.base, 'POST', `${ctx.p}/namespaces/${ctx.ns.join('%1F')}/tables/${name}`, {
    body: {
      requirements: [],
      updates: [{ action: 'set-properties', updates: { 'schema.name-mapping.default': mapping } }],
    },
    expect: 200,
  });
  res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.lines[0]['files-removed'], 3);
  assert.equal(res.lines[0]['files-added'], 1);
  assert.deepEqual(await rows((await settled(name, isSnap(res.lines[0]['snapshot-id']))).snap), beforeRows);
});

test('compact: rows are sorted by the table\'s default sort order, transforms by their result', async () => {
  const name = 'sorted';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 3; b++) await append(name, range(b * 7, 7));
  // Three names null: a descending key still puts them where null-order says.
  const nulls = path.join(dir, 'sorted-nulls.csv');
  fs.writeFileSync(nulls, `id,name\n${range(21, 7).map((i) => (i % 3 === 0 ? `${i},` : `${i},n${i}`)).join('\n')}\n`);
  const r = await ingest(ctx, name, [nulls]);
  assert.equal(r.code, 0, show(r));
  await settled(name, files(4));
  const setOrder = (order) => call(ctx.base, 'POST', `${ctx.p}/namespaces/${ctx.ns.join('%1F')}/tables/${name}`, {
    body: {
      requirements: [],
      updates: [{ action: 'add-sort-order', 'sort-order': order }, { action: 'set-default-sort-order', 'sort-order-id': -1 }],
    },
    expect: 200,
  });
  await setOrder({ 'order-id': 1, fields: [{ transform: 'identity', 'source-id': 2, direction: 'desc', 'null-order': 'nulls-last' }] });
  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.lines[0]['files-added'], 1, res.stdout);
  assert.equal(res.lines[0]['sort-order-id'], 1, res.stdout);
  const after = (await settled(name, isSnap(res.lines[0]['snapshot-id']))).snap;
  const [file] = liveFiles(after);
  const con = await duck();
  const names = (await con.runAndReadAll(`SELECT name FROM read_parquet(${sqlStr(localPath(file))}) ORDER BY file_row_number`)).getRowsJson().map((r) => r[0]);
  assert.equal(names.length, 28);
  const named = names.filter((x) => x !== null);
  assert.equal(named.length, 25, 'ids 21, 24 and 27 have no name');
  assert.deepEqual(names, [...named.sort().reverse(), null, null, null], 'rows in the file follow name desc, nulls last');
  const entry = readAvro(readAvro(after['manifest-list']).records[0].manifest_path).records.find((e) => e.status === '1');
  assert.equal(String(entry.data_file.sort_order_id), '1');

  // bucket[4] of id, then id descending: rows by the spec's bucket
  // (Murmur3 of the long's 8 little-endian bytes), then id.
  await append(name, range(100, 5));
  await settled(name, files(2));
  await setOrder({
    'order-id': 2,
    fields: [
      { transform: 'bucket[4]', 'source-id': 1, direction: 'asc', 'null-order': 'nulls-first' },
      { transform: 'identity', 'source-id': 1, direction: 'desc', 'null-order': 'nulls-last' },
    ],
  });
  const res2 = maintain(name, ['compact']);
  assert.equal(res2.code, 0, res2.stderr);
  assert.equal(res2.lines[0]['sort-order-id'], 2, res2.stdout);
  assert.equal(res2.lines[0]['sort-order-not-applied'], undefined, res2.stdout);
  const after2 = (await settled(name, isSnap(res2.lines[0]['snapshot-id']))).snap;
  const [file2] = liveFiles(after2);
  const ids = (await con.runAndReadAll(`SELECT id::INTEGER FROM read_parquet(${sqlStr(localPath(file2))}) ORDER BY file_row_number`)).getRowsJson().map((r) => r[0]);
  const bucket = (id) => {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(BigInt(id));
    return (murmur3(b) & 0x7fffffff) % 4;
  };
  assert.deepEqual(ids, [...ids].sort((x, y) => bucket(x) - bucket(y) || y - x), 'rows follow bucket[4](id), then id desc');
  assert.ok(new Set(ids.map(bucket)).size > 1, 'more than one bucket');
});
