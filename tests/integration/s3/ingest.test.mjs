// `floe ingest --warehouse NAME` in process into an S3 warehouse on moto (signature
// checks on): the data files are streamed to S3 (multipart past 8 MiB), the
// manifests and manifest list land beside them, and the commit points at them.
// The table is read back whole by independent readers from a mirror of its
// objects: python3-avro for the manifest list and manifests, DuckDB for Parquet.
// A floe ingest killed with SIGKILL in the middle of a multipart upload leaves
// no visible object.  An upsert rewrites the S3 file holding a batch key, and
// a DuckDB-written Parquet file is added by copying it into the table on S3.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { request } from '../lib/harness.mjs';
import { expectJson } from '../lib/checks.mjs';
import { readAvro, duck, sqlStr, parseJsonBig } from '../ingest/lib.mjs';
import { startS3Catalog, s3Profile, createWarehouse, mirror, mirrored, eventually, ingestInto, tmpDir, noS3 } from './lib.mjs';

let ctx = null;
let dir;
const WH = 'lake';
const P = `/v1/${WH}`;

before(async () => {
  ctx = await startS3Catalog('s3ing');
  if (!ctx) return;
  dir = tmpDir('s3ing');
  expectJson(await createWarehouse(ctx.base, WH, s3Profile(ctx.s3, ctx.bucket, 'wh')), 201, null);
  expectJson(await request(ctx.base, 'POST', `${P}/namespaces`, { body: { namespace: ['ns'] } }), 200);
});
after(async () => {
  if (ctx) await ctx.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const skip = (t) => noS3(ctx, t);

const ingest = (table, files, opts) => ingestInto(ctx, WH, table, files, opts);
const show = (r) => `exit ${r.code} ${r.signal ?? ''}\n${r.stdout}\n${r.stderr}`;

// Writes a CSV of n rows (id, name, score, note) with incompressible text in note
// when wide; returns its path and a digest of the rows for comparison.
function writeCsv(name, n, { wide = false, seed = 1 } = {}) {
  const p = path.join(dir, name);
  const fd = fs.openSync(p, 'w');
  fs.writeSync(fd, 'id,name,score,note\n');
  let sum = 0;
  let chunk = '';
  for (let i = 0; i < n; i++) {
    const note = wide ? crypto.createHash('sha256').update(`${seed}:${i}`).digest('hex') : `n${i % 7}`;
    chunk += `${i},name-${i},${(i * 0.5).toFixed(1)},${note}\n`;
    sum += i;
    if (chunk.length > 1 << 20) {
      fs.writeSync(fd, chunk);
      chunk = '';
    }
  }
  fs.writeSync(fd, chunk);
  fs.closeSync(fd);
  return { path: p, n, sum };
}

// Loads the table, mirrors its objects and returns its data files (local paths)
// as the manifests list them, with the manifest entries' record counts.
async function readBack(table) {
  const l = parseJsonBig((await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/${table}`)).text);
  const meta = l.metadata;
  const snap = meta.snapshots.find((s) => String(s['snapshot-id']) === String(meta['current-snapshot-id']));
  assert.ok(snap, 'the table has a current snapshot');
  const local = path.join(dir, `mirror-${table}-${Date.now()}`);
  await mirror(ctx.s3, ctx.bucket, `wh/ns/${table}/`, local);
  const list = readAvro(`file://${mirrored(local, snap['manifest-list'])}`);
  const files = [];
  for (const le of list.records) {
    assert.match(le.manifest_path, /^s3:\/\/lake\/wh\/ns\//);
    const m = readAvro(`file://${mirrored(local, le.manifest_path)}`);
    for (const e of m.records) {
      assert.match(e.data_file.file_path, /^s3:\/\/lake\/wh\/ns\/.*\.parquet$/);
      const lp = mirrored(local, e.data_file.file_path);
      assert.equal(String(fs.statSync(lp).size), String(e.data_file.file_size_in_bytes), 'file_size_in_bytes is the object size');
      files.push({ path: lp, records: Number(e.data_file.record_count), size: fs.statSync(lp).size });
    }
  }
  return { meta, snap, files };
}

async function duckTotals(files) {
  const con = await duck();
  const list = `[${files.map((f) => sqlStr(f.path)).join(',')}]`;
  const r = await con.runAndReadAll(`SELECT count(*)::BIGINT, sum(id)::BIGINT, count(DISTINCT note)::BIGINT FROM read_parquet(${list})`);
  const [count, sum, notes] = r.getRows()[0];
  return { count: Number(count), sum: Number(sum), notes: Number(notes) };
}

test('floe ingest --warehouse writes a table to S3 that independent readers read back whole', async (t) => {
  if (skip(t)) return;
  const csv = writeCsv('small.csv', 5000);
  const r = await ingest('small', [csv.path], { args: ['--create'] });
  assert.equal(r.code, 0, show(r));
  assert.equal(r.out.status, 'committed', show(r));
  assert.equal(String(r.out['rows-committed']), '5000');
  const { snap, files } = await readBack('small');
  assert.equal(snap.summary['added-records'], '5000');
  assert.equal(files.reduce((a, f) => a + f.records, 0), 5000);
  const d = await duckTotals(files);
  assert.deepEqual(d, { count: 5000, sum: csv.sum, notes: 7 });
  // A second batch appends; the first batch again is recognised and changes nothing.
  const csv2 = writeCsv('small2.csv', 100);
  assert.equal((await ingest('small', [csv2.path])).code, 0);
  const again = await ingest('small', [csv2.path]);
  assert.equal(again.code, 0, show(again));
  assert.equal(again.out.status, 'already-committed', show(again));
  const back = await readBack('small');
  assert.equal((await duckTotals(back.files)).count, 5100);
});

test('a data file past 8 MiB is uploaded in parts and reads back intact', async (t) => {
  if (skip(t)) return;
  const csv = writeCsv('wide.csv', 260000, { wide: true });
  const r = await ingest('wide', [csv.path], { args: ['--create'] });
  assert.equal(r.code, 0, show(r));
  const { files } = await readBack('wide');
  assert.ok(files.some((f) => f.size > 8 << 20), `a data file is larger than one part: ${files.map((f) => f.size)}`);
  assert.match(ctx.s3.logs(), /PUT \/lake\/wh\/ns\/wide\/data\/[^ ]*\?partNumber=2&uploadId=/, 'moto saw a second part');
  assert.deepEqual(await duckTotals(files), { count: 260000, sum: csv.sum, notes: 260000 });
  assert.deepEqual(await ctx.s3.uploads(ctx.bucket, 'wh/ns/wide/'), [], 'no upload is left open');
});

test('SIGKILL in the middle of a multipart upload leaves no visible object', async (t) => {
  if (skip(t)) return;
  // Small row groups make the writer hand bytes to S3 as it goes.
  expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, {
    body: {
      name: 'killed',
      schema: { type: 'struct', fields: [
        { id: 1, name: 'id', type: 'long', required: false },
        { id: 2, name: 'name', type: 'string', required: false },
        { id: 3, name: 'score', type: 'double', required: false },
        { id: 4, name: 'note', type: 'string', required: false },
      ] },
      properties: { 'write.parquet.row-group-size-bytes': String(2 << 20) },
    },
  }), 200);
  const csv = writeCsv('huge.csv', 900000, { wide: true, seed: 2 });
  const logStart = ctx.s3.logs().length;
  const r = await ingest('killed', [csv.path], {
    onSpawn: (proc) => {
      eventually(() => /PUT \/lake\/wh\/ns\/killed\/data\/[^ ]*\?partNumber=1&uploadId=[^ ]* HTTP\/1\.1" 200/.test(ctx.s3.logs().slice(logStart)), 120000, 50)
        .then(() => proc.kill('SIGKILL'));
    },
  });
  assert.equal(r.signal, 'SIGKILL', `the ingest was still uploading when killed: ${show(r)}`);
  assert.deepEqual(await ctx.s3.list(ctx.bucket, 'wh/ns/killed/data/'), [], 'no partial object is visible');
  assert.ok((await ctx.s3.uploads(ctx.bucket, 'wh/ns/killed/')).length >= 1, 'the killed upload is an incomplete multipart upload');
  const l = parseJsonBig((await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/killed`)).text);
  assert.equal(l.metadata.snapshots.length, 0, 'nothing was committed');
});

// The live rows of a table on S3 (DELETED entries left out), read by DuckDB
// from a mirror of its objects: [[id, name]] sorted by id.
async function liveRows(table) {
  const l = parseJsonBig((await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/${table}`)).text);
  const meta = l.metadata;
  const snap = meta.snapshots.find((x) => String(x['snapshot-id']) === String(meta['current-snapshot-id']));
  const local = path.join(dir, `mirror-${table}-${Date.now()}`);
  await mirror(ctx.s3, ctx.bucket, `wh/ns/${table}/`, local);
  const files = [];
  for (const le of readAvro(`file://${mirrored(local, snap['manifest-list'])}`).records) {
    for (const e of readAvro(`file://${mirrored(local, le.manifest_path)}`).records) {
      if (String(e.status) !== '2') files.push(mirrored(local, e.data_file.file_path));
    }
  }
  // Every data object is named by some snapshot (DELETED entries count).
  const named = new Set();
  for (const s of meta.snapshots) {
    for (const le of readAvro(`file://${mirrored(local, s['manifest-list'])}`).records) {
      for (const e of readAvro(`file://${mirrored(local, le.manifest_path)}`).records) named.add(mirrored(local, e.data_file.file_path));
    }
  }
  const orphans = (await ctx.s3.list(ctx.bucket, `wh/ns/${table}/data/`)).map((o) => path.join(local, o.key)).filter((p) => !named.has(p));
  assert.deepEqual(orphans, [], `${table}: every data object is named by a snapshot`);
  const con = await duck();
  const rows = (await con.runAndReadAll(`SELECT id::VARCHAR, name FROM read_parquet([${files.map(sqlStr).join(',')}], union_by_name = true) ORDER BY id`)).getRows();
  return { snap, rows, files };
}

test('upsert and Parquet add-files on S3 (v3): the file holding a key is rewritten, a Parquet file is copied in', async (t) => {
  if (skip(t)) return;
  // Format v3: the batch's file holding the replacing row is written again
  // on S3 with that row's _row_id, and the original is deleted.
  expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, {
    body: {
      name: 'keyed',
      schema: {
        type: 'struct', 'schema-id': 0, 'identifier-field-ids': [1], fields: [
          { id: 1, name: 'id', type: 'long', required: true },
          { id: 2, name: 'name', type: 'string', required: false }],
      },
      properties: { 'format-version': '3' },
    },
  }), 200);
  const csv = (name, rows) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, `id,name\n${rows.map(([i, n]) => `${i},${n}`).join('\n')}\n`);
    return p;
  };
  const model = new Map();
  const first = Array.from({ length: 10 }, (_, i) => [i, `n${i}`]);
  let r = await ingest('keyed', [csv('k0.csv', first)]);
  assert.equal(r.code, 0, show(r));
  for (const [i, n] of first) model.set(i, n);
  const batch = [[3, 'u3'], [12, 'new12'], [3, 'last3']];
  r = await ingest('keyed', [csv('k1.csv', batch)], { args: ['--mode', 'upsert'] });
  assert.equal(r.code, 0, show(r));
  for (const [i, n] of batch) model.set(i, n);
  let back = await liveRows('keyed');
  assert.equal(back.snap.summary.operation, 'overwrite');
  assert.equal(back.snap.summary['floe.rows-replaced'], '1');
  // The replacing row 3 carries the replaced row's _row_id (0 + its
  // position 3 in the first file), written out in its file.
  const ids = [];
  for (const f of back.files) {
    const got = (await (await duck()).runAndReadAll(`SELECT * FROM read_parquet(${sqlStr(f)}) WHERE id = 3`)).getRowObjectsJson();
    ids.push(...got.map((x) => x._row_id));
  }
  assert.deepEqual(ids.map(String), ['3'], 'row 3 kept its _row_id');
  const want = () => [...model.entries()].sort((a, b) => a[0] - b[0]).map(([i, n]) => [String(i), n]);
  assert.deepEqual(back.rows, want());
  // A Parquet file written by DuckDB, added as it is (copied into the table's data on S3).
  const pq = path.join(dir, 'add.parquet');
  await (await duck()).run(`COPY (SELECT (100 + i)::BIGINT AS id, 'p' || i AS name FROM range(3) t(i)) TO ${sqlStr(pq)} (FORMAT parquet)`);
  r = await ingest('keyed', [pq]);
  assert.equal(r.code, 0, show(r));
  for (let i = 0; i < 3; i++) model.set(100 + i, `p${i}`);
  back = await liveRows('keyed');
  assert.deepEqual(back.rows, want());
  assert.ok((await ctx.s3.list(ctx.bucket, 'wh/ns/keyed/data/')).length >= 3);
});
