// Three `floe ingest` appends (CSV; NDJSON; two CSV files in one run, rolled
// into several data files), then the WHOLE table is read by icebird: the
// table metadata loadTable returns -> manifest list -> manifests -> Parquet,
// each file fetched from a local HTTP server that serves the warehouse
// folder (icebird cannot read file:// URLs, so fetch is routed there).  It
// must return exactly the union of the ingested rows; the snapshot
// summaries' totals must agree with the files; DuckDB on the data files
// agrees with icebird.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream, existsSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { icebergRead } from 'icebird';
import {
  startCatalog, createTable, loadTable, ingest, show, snapshotFiles, currentSnapshot, snapshotById, localPath, duck,
  sqlStr, tmpDir, dateText,
} from './lib.mjs';

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'name', type: 'string', required: false },
  { id: 3, name: 'score', type: 'double', required: false },
  { id: 4, name: 'ok', type: 'boolean', required: false },
  { id: 5, name: 'day', type: 'date', required: false },
];

// id -> [id, name, score, ok, day-days]
function makeRows(from, n) {
  const rows = [];
  for (let i = from; i < from + n; i++) {
    rows.push([
      BigInt(i) * 1000003n - 7n,
      i % 7 === 0 ? null : `name ${i} ${'é'.repeat(i % 5)} ${'pad'.repeat(i % 9)}`,
      i % 6 === 0 ? null : i * 0.25 - 3,
      i % 4 === 0 ? null : i % 3 === 0,
      i % 8 === 0 ? null : i * 97 - 20000,
    ]);
  }
  return rows;
}
const csvOf = (rows) => `id,name,score,ok,day\n${rows.map((r) => [String(r[0]), r[1] === null ? '' : `"${r[1]}"`,
  r[2] === null ? '' : String(r[2]), r[3] === null ? '' : String(r[3]), r[4] === null ? '' : dateText(r[4])].join(',')).join('\r\n')}\r\n`;
const ndjsonOf = (rows) => rows.map((r) => JSON.stringify({
  id: Number(r[0]), name: r[1], score: r[2], ok: r[3], ...(r[4] === null ? {} : { day: dateText(r[4]) }),
})).join('\n');

let ctx;
let server;
let warehouseUrl;
const realFetch = globalThis.fetch;
const runs = [];
const batchRows = [];
let table;

before(async () => {
  ctx = await startCatalog('ingest_table');
  await createTable(ctx, 'events', fields);
  const dir = tmpDir('ingest-table');
  const b1 = makeRows(0, 50);
  const b2 = makeRows(50, 30);
  const b3a = makeRows(80, 200);
  const b3b = makeRows(280, 150);
  writeFileSync(path.join(dir, 'b1.csv'), csvOf(b1));
  writeFileSync(path.join(dir, 'b2.jsonl'), ndjsonOf(b2));
  writeFileSync(path.join(dir, 'b3a.csv'), csvOf(b3a));
  writeFileSync(path.join(dir, 'b3b.csv'), csvOf(b3b));
  batchRows.push(b1, b2, [...b3a, ...b3b]);
  runs.push(await ingest(ctx, 'events', [path.join(dir, 'b1.csv')]));
  runs.push(await ingest(ctx, 'events', [path.join(dir, 'b2.jsonl')]));
  runs.push(await ingest(ctx, 'events', [path.join(dir, 'b3a.csv'), path.join(dir, 'b3b.csv')],
    { args: ['--target-file-bytes', '3000', '--codec', 'none'] }));
  table = await loadTable(ctx, 'events');

  // serve the warehouse folder; route file://<warehouse>/... there
  const root = localPath(table.metadata.location).replace(/\/ns\/events$/, '');
  server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/w\//, '');
    const file = path.join(root, path.normalize(rel));
    if (!file.startsWith(root) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  warehouseUrl = `http://127.0.0.1:${server.address().port}/w`;
  const prefix = `file://${root}`;
  globalThis.fetch = (url, init) => {
    const u = String(url);
    return realFetch(u.startsWith(prefix) ? warehouseUrl + u.slice(prefix.length) : u, init);
  };
});

after(async () => {
  globalThis.fetch = realFetch;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
  await ctx?.floe.stop();
});

const key = (r) => String(r[0]);
const norm = (r) => [String(r[0]), r[1] ?? null, r[2] ?? null, r[3] ?? null, r[4] ?? null];
const sortRows = (rows) => rows.map(norm).sort((a, b) => (BigInt(a[0]) < BigInt(b[0]) ? -1 : 1));

test('three ingests commit three snapshots', () => {
  runs.forEach((r, i) => {
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out.status, 'committed', show(r));
    assert.equal(r.out['rows-committed'], batchRows[i].length, show(r));
  });
  assert.ok(runs[2].out['files-written'] > 1, `the third run rolls into several files: ${show(runs[2])}`);
  assert.equal(table.metadata.snapshots.length, 3);
});

// icebird's rows as the batches hold them
const rowsOf = (got) =>
  got.map((r) => {
    let day = r.day ?? null;
    if (day instanceof Date) day = Math.round(day.getTime() / 86400000);
    return [r.id, r.name ?? null, r.score ?? null, r.ok ?? null, day];
  });

test('icebird reads exactly the union of the ingested rows', async () => {
  const got = await icebergRead({ tableUrl: table.metadata.location, metadata: table.metadata });
  const rows = rowsOf(got);
  const want = batchRows.flat();
  assert.equal(rows.length, want.length);
  assert.deepEqual(sortRows(rows), sortRows(want));
  assert.equal(new Set(rows.map(key)).size, want.length, 'no row twice');
});

test('each snapshot reads as of its own append (time travel through the history)', async () => {
  const meta = table.metadata;
  for (let i = 0; i < 2; i++) {
    const id = runs[i].out['snapshot-id'];
    const m = { ...meta, 'current-snapshot-id': id, refs: { main: { 'snapshot-id': id, type: 'branch' } } };
    const got = await icebergRead({ tableUrl: meta.location, metadata: m });
    assert.deepEqual(sortRows(rowsOf(got)), sortRows(batchRows.slice(0, i + 1).flat()), `as of snapshot ${i + 1}`);
  }
});

test('snapshot summaries: added and total counts agree with the files', () => {
  const meta = table.metadata;
  let totalRecords = 0;
  let totalFiles = 0;
  let totalSize = 0;
  runs.forEach((r, i) => {
    const s = snapshotById(meta, r.out['snapshot-id']);
    assert.ok(s, `snapshot ${r.out['snapshot-id']}`);
    const added = snapshotFiles(s).filter((f) => f.entry.snapshot_id === String(s['snapshot-id']));
    const size = added.reduce((a, f) => a + statSync(localPath(f.file.file_path)).size, 0);
    totalRecords += batchRows[i].length;
    totalFiles += added.length;
    totalSize += size;
    const sum = s.summary;
    assert.equal(sum.operation, 'append');
    assert.equal(sum['added-records'], String(batchRows[i].length));
    assert.equal(sum['added-data-files'], String(added.length));
    assert.equal(sum['added-data-files'], String(r.out['files-written']));
    assert.equal(sum['added-files-size'], String(size));
    assert.equal(sum['added-files-size'], String(r.out['bytes-written']));
    assert.equal(sum['total-records'], String(totalRecords));
    assert.equal(sum['total-data-files'], String(totalFiles));
    assert.equal(sum['total-files-size'], String(totalSize));
    assert.equal(sum['floe.batch-id'], r.out['batch-id']);
    assert.equal(s['sequence-number'], i + 1);
    assert.equal(String(s['parent-snapshot-id'] ?? null), i === 0 ? 'null' : String(runs[i - 1].out['snapshot-id']));
    assert.equal(added.reduce((a, f) => a + Number(f.file.record_count), 0), batchRows[i].length);
  });
  assert.equal(String(meta['current-snapshot-id']), String(runs[2].out['snapshot-id']));
});

test('DuckDB on the current snapshot\'s data files agrees', async () => {
  const files = snapshotFiles(currentSnapshot(table.metadata)).map((f) => localPath(f.file.file_path));
  const con = await duck();
  const got = (await con.runAndReadAll(
    `SELECT id::VARCHAR, name, score, ok, (day - DATE '1970-01-01')::INTEGER FROM read_parquet([${files.map(sqlStr).join(', ')}])`)).getRows();
  assert.deepEqual(sortRows(got), sortRows(batchRows.flat()));
});
