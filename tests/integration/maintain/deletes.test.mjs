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
//   files would bring the deleted row back);
// - partitions with equality delete files are skipped; an equality delete
//   file of an unpartitioned table refuses compaction as not supported.
// Deletion vectors, row lineage and manifests rewritten in part:
// carry-lineage.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { icebergRead } from 'icebird';
import {
  startCatalog, createTable, loadTable, ingest, currentSnapshot, localPath, tmpDir, duck, sqlStr,
} from '../ingest/lib.mjs';
import { call, tablePath } from '../tables/lib.mjs';
import { helpers, fields } from './lib.mjs';
import { liveEntries, visibleRows, positionDeleteFile, deleteHelpers } from './deletes-lib.mjs';

let ctx;
const dir = tmpDir('compact-deletes');
let maintain;
let maintainHeld;
let append;
let settled;
let commitDeletes;
let addDuckFile;
let server;
const realFetch = globalThis.fetch;

before(async () => {
  ctx = await startCatalog('compact_deletes');
  const h = helpers(ctx, dir);
  ({ maintain, maintainHeld, append, settled } = h);
  ({ commitDeletes, addDuckFile } = deleteHelpers(h.dropManifests));
});

after(async () => {
  globalThis.fetch = realFetch;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
  await ctx?.floe.stop();
});

const range = (from, n) => Array.from({ length: n }, (_, i) => from + i);
const dataFiles = (n) => (snap) => snap.summary['total-data-files'] === String(n);
const isSnap = (id) => (snap) => String(snap['snapshot-id']) === String(id);

// Serves the warehouse to icebird (it cannot read file:// URLs).
async function serveWarehouse(location) {
  if (server) return;
  const root = path.dirname(path.dirname(localPath(location)));
  server = http.createServer((req, res) => {
    const file = path.join(root, path.normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)));
    if (!file.startsWith(root) || !fs.existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const prefix = `file://${root}`;
  const base = `http://127.0.0.1:${server.address().port}`;
  globalThis.fetch = (url, init) => {
    const u = String(url);
    return realFetch(u.startsWith(prefix) ? base + u.slice(prefix.length) : u, init);
  };
}

async function icebirdRows(meta) {
  await serveWarehouse(meta.location);
  const got = await icebergRead({ tableUrl: meta.location, metadata: meta });
  return got.map((r) => [String(r.id), r.name]).sort((a, b) => Number(BigInt(a[0]) - BigInt(b[0])));
}

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
  assert.deepEqual(beforeRows.map((r) => r.slice(0, 2)).filter((r) => Number(r[0]) < 5000), (await icebirdRows(meta)).filter((r) => Number(r[0]) < 5000),
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
  assert.deepEqual(afterRows.map((x) => x.slice(0, 2)).filter((x) => Number(x[0]) < 5000), await icebirdRows(metaAfter).then((x) => x.filter((y) => Number(y[0]) < 5000)));
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

test('compact: partitions with equality deletes are skipped, the others compacted', async () => {
  const name = 'eqpart';
  await call(ctx.base, 'POST', `${ctx.p}/namespaces/${ctx.ns.join('%1F')}/tables`, {
    body: {
      name,
      schema: { type: 'struct', 'schema-id': 0, fields: [...fields, { id: 3, name: 'region', type: 'string', required: false }] },
      'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 3, 'field-id': 1000, name: 'region', transform: 'identity' }] },
    },
    expect: 200,
  });
  for (let b = 0; b < 2; b++) {
    const file = path.join(dir, `eqp${b}.csv`);
    fs.writeFileSync(file, `id,name,region\n${['eu', 'us', 'ap'].map((r, k) => `${b * 3 + k},n${b * 3 + k},${r}`).join('\n')}\n`);
    const res = await ingest(ctx, name, [file]);
    assert.equal(res.code, 0, res.stderr);
  }
  let { meta } = await settled(name, dataFiles(6));
  const f = await positionDeleteFile(path.join(dir, 'eqp.parquet'), [['x', 0]]);
  meta = await commitDeletes(name, meta, [{
    content: 2, file_path: f.path, file_format: 'PARQUET', record_count: 1n, file_size_in_bytes: f.size,
    equality_ids: [1], partition: { region: 'eu' },
  }]);
  const res = maintain(name, ['compact']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r['partitions-skipped-equality-deletes'], 1, res.stdout);
  assert.deepEqual(r.plan.map((x) => x.partition.region).sort(), ['ap', 'us']);
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  const eu = liveEntries(after).filter((e) => e.content === 0 && e.df.partition.region === 'eu');
  assert.equal(eu.length, 2, 'the eu files are untouched');
  assert.equal(after.summary['total-delete-files'], '1', 'the equality delete file stays');
});

test('compact: an equality delete file of an unpartitioned table refuses compaction', async () => {
  const name = 'eqdel';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 3; b++) await append(name, range(b * 3, 3));
  let { meta } = await settled(name, dataFiles(3));
  const f = await positionDeleteFile(path.join(dir, 'eq.parquet'), [['x', 0]]);
  meta = await commitDeletes(name, meta, [{
    content: 2, file_path: f.path, file_format: 'PARQUET', record_count: 1n, file_size_in_bytes: f.size, equality_ids: [1],
  }]);
  for (const args of [['compact'], ['--dry-run', 'compact']]) {
    const res = maintain(name, args);
    assert.equal(res.code, 1, res.stdout);
    assert.equal(res.lines[0].status, 'failed');
    assert.match(res.lines[0].error, /equality delete files .*not yet supported/);
  }
  assert.equal(String(currentSnapshot((await loadTable(ctx, name)).metadata)['snapshot-id']), String(currentSnapshot(meta)['snapshot-id']));
});
