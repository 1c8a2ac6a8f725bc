// `floe maintain manifests` (manifest rewrite) on tables written by `floe ingest`:
// - 8 appends leave 8 manifests; the rewrite commits one `replace` snapshot
//   with one manifest (Java's summary keys), every entry EXISTING with the
//   snapshot id and sequence numbers it had; DuckDB, Floe's reader and
//   icebird read the same rows before and after; every file the new snapshot
//   references exists; a second run finds nothing to do;
// - DELETED entries (left by a compaction) are dropped, a partitioned table
//   keeps its partition values and summaries;
// - v3: each data file keeps the first_row_id it inherited;
// - --dry-run changes nothing; a target smaller than every manifest merges none.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream, existsSync } from 'node:fs';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { icebergRead } from 'icebird';
import {
  startCatalog, createTable, loadTable, ingest, show, currentSnapshot, localPath, readAvro, tmpDir,
} from '../ingest/lib.mjs';
import { helpers, isSnap, range } from './lib.mjs';

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'name', type: 'string', required: false },
];

let ctx;
const dir = tmpDir('manifests');
let maintain;
let append;
let rows;
let settled;
let reached;
let createByRegion;
let server;
const realFetch = globalThis.fetch;

before(async () => {
  ctx = await startCatalog('manifests');
  ({ maintain, append, rows, reached, settled, createByRegion } = helpers(ctx, dir));
  // icebird reads over HTTP: serve the data dir and route file:// URLs there.
  const root = ctx.dataDir;
  server = http.createServer((req, res) => {
    const file = path.join(root, path.normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)));
    if (!file.startsWith(root) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  globalThis.fetch = (url, init) => {
    const u = String(url);
    return realFetch(u.startsWith(`file://${root}`) ? base + u.slice(`file://${root}`.length) : u, init);
  };
});

after(async () => {
  globalThis.fetch = realFetch;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
  await ctx?.floe.stop();
});


// Every entry of a snapshot, with its manifest's list record.
function entries(snapshot) {
  const out = [];
  for (const le of readAvro(snapshot['manifest-list']).records) {
    for (const e of readAvro(le.manifest_path).records) out.push({ le, e });
  }
  return out;
}

// Per live data file: [snapshot id, data seq, file seq, first_row_id] as the
// spec's inheritance rules give them.
function lineage(snapshot) {
  const out = {};
  for (const le of readAvro(snapshot['manifest-list']).records) {
    let next = le.first_row_id == null ? null : BigInt(le.first_row_id);
    for (const e of readAvro(le.manifest_path).records) {
      const f = e.data_file;
      let frid = f.first_row_id ?? null;
      if (frid == null && next != null) {
        frid = String(next);
        next += BigInt(f.record_count);
      }
      if (e.status === '2') continue;
      out[f.file_path] = [e.snapshot_id ?? le.added_snapshot_id, e.sequence_number ?? le.sequence_number,
        e.file_sequence_number ?? le.sequence_number, frid == null ? null : String(frid)];
    }
  }
  return out;
}

async function icebird(name) {
  const meta = (await loadTable(ctx, name)).metadata;
  const got = await icebergRead({ tableUrl: meta.location, metadata: meta });
  return got.map((r) => [String(r.id), r.name ?? null]).sort((a, b) => Number(BigInt(a[0]) - BigInt(b[0])));
}

function assertAllPresent(snapshot) {
  for (const f of reached(snapshot)) assert.ok(fs.existsSync(localPath(f)), `${f} exists`);
}

test('manifests: 8 appends, 8 manifests become one, rows and lineage unchanged', async () => {
  const name = 'eight';
  await createTable(ctx, name, fields);
  let last;
  for (let b = 0; b < 8; b++) last = await append(name, range(b * 4, 4));
  const before = (await settled(name, isSnap(last))).snap;
  assert.equal(readAvro(before['manifest-list']).records.length, 8);
  const beforeRows = await rows(before);
  assert.equal(beforeRows.length, 32);
  const beforeIce = await icebird(name);
  assert.deepEqual(beforeIce, beforeRows);
  const beforeLineage = lineage(before);

  const metaLoc = (await loadTable(ctx, name))['metadata-location'];
  const dry = maintain(name, ['--dry-run', 'manifests']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(dry.lines[0].status, 'ok', dry.lines[0].error);
  assert.equal(dry.lines[0]['manifests-replaced'], 8);
  assert.equal(dry.lines[0]['manifests-created'], 1);
  assert.equal((await loadTable(ctx, name))['metadata-location'], metaLoc, 'dry run commits nothing');

  const res = maintain(name, ['manifests']);
  assert.equal(res.code, 0, res.stderr);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', r.error);
  assert.equal(r.action, 'manifests');
  assert.equal(r['manifests-replaced'], 8);
  assert.equal(r['manifests-created'], 1);
  assert.equal(r['manifests-kept'], 0);
  assert.equal(r['entries-processed'], 8);
  assert.equal(r['files-removed'], 8);
  assert.equal(r['files-added'], 1);
  assert.ok(r['bytes-added'] > 0);
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  assert.equal(String(after['parent-snapshot-id']), String(before['snapshot-id']));
  const s = after.summary;
  assert.equal(s.operation, 'replace');
  assert.equal(s['manifests-created'], '1');
  assert.equal(s['manifests-replaced'], '8');
  assert.equal(s['manifests-kept'], '0');
  assert.equal(s['entries-processed'], '8');
  for (const k of ['total-records', 'total-data-files', 'total-files-size']) assert.equal(s[k], before.summary[k], k);
  const list = readAvro(after['manifest-list']).records;
  assert.equal(list.length, 1);
  assert.equal(list[0].existing_files_count, '8');
  assert.equal(list[0].added_files_count, '0');
  assert.equal(String(list[0].added_snapshot_id), String(after['snapshot-id']));
  for (const { e } of entries(after)) assert.equal(e.status, '0', 'every entry EXISTING');
  assert.deepEqual(lineage(after), beforeLineage, 'snapshot ids and sequence numbers carried');
  assert.deepEqual(await rows(after), beforeRows);
  assert.deepEqual(await icebird(name), beforeRows);
  assertAllPresent(after);
  assertAllPresent(before);

  const again = maintain(name, ['manifests']);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.lines[0]['manifests-replaced'], 0);
  assert.equal(again.lines[0]['snapshot-id'], undefined);
});

test('manifests: DELETED entries of a compaction are dropped; partition values kept', async () => {
  const name = 'parted';
  await createByRegion(name);
  const regions = ['eu', 'us'];
  let id = 0;
  const put = async (b) => {
    const file = path.join(dir, `p${b}.csv`);
    const lines = [];
    for (let k = 0; k < 4; k++, id++) lines.push(`${id},n${id},${regions[id % 2]}`);
    fs.writeFileSync(file, `id,name,region\n${lines.join('\n')}\n`);
    const res = await ingest(ctx, name, [file]);
    assert.equal(res.code, 0, show(res));
    return res.out['snapshot-id'];
  };
  for (let b = 0; b < 3; b++) await put(b);
  const c = maintain(name, ['compact']);
  assert.equal(c.lines[0].status, 'ok', c.lines[0].error);
  await settled(name, isSnap(c.lines[0]['snapshot-id']));
  let last;
  for (let b = 3; b < 5; b++) last = await put(b);
  const before = (await settled(name, isSnap(last))).snap;
  const cols = ['id', 'name', 'region'];
  const beforeRows = await rows(before, cols);
  assert.equal(beforeRows.length, 20);
  assert.ok(entries(before).some(({ e }) => e.status === '2'), 'the compaction left DELETED entries');
  const beforeLineage = lineage(before);

  const res = maintain(name, ['manifests']);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', r.error);
  assert.equal(r['manifests-replaced'], 3);
  assert.equal(r['manifests-created'], 1);
  assert.equal(r['entries-processed'], 2 + 2 + 2, 'two compacted files and two appends of two files');
  const after = (await settled(name, isSnap(r['snapshot-id']))).snap;
  const es = entries(after);
  assert.equal(es.length, 6);
  assert.ok(es.every(({ e }) => e.status === '0'));
  assert.deepEqual(es.map(({ e }) => e.data_file.partition.region).sort(), ['eu', 'eu', 'eu', 'us', 'us', 'us']);
  const summary = readAvro(after['manifest-list']).records[0].partitions[0];
  assert.equal(summary.contains_null, false);
  assert.deepEqual(lineage(after), beforeLineage);
  assert.deepEqual(await rows(after, cols), beforeRows);
  assertAllPresent(after);
});

test('manifests: v3 data files keep their first_row_id', async () => {
  const name = 'vthree';
  await createTable(ctx, name, fields, { 'format-version': '3' });
  let last;
  for (let b = 0; b < 4; b++) last = await append(name, range(b * 5, 5));
  const before = (await settled(name, isSnap(last))).snap;
  const beforeLineage = lineage(before);
  assert.ok(Object.values(beforeLineage).every((l) => l[3] !== null), 'v3 files have row ids');
  const beforeRows = await rows(before);
  const res = maintain(name, ['manifests']);
  const r = res.lines[0];
  assert.equal(r.status, 'ok', r.error);
  assert.equal(r['manifests-replaced'], 4);
  const { snap: after } = await settled(name, isSnap(r['snapshot-id']));
  for (const { e } of entries(after)) assert.notEqual(e.data_file.first_row_id, null, 'written explicitly');
  assert.deepEqual(lineage(after), beforeLineage);
  assert.deepEqual(await rows(after), beforeRows);
});

test('manifests: a target below every manifest merges nothing; bad property is a clear error', async () => {
  const name = 'tiny';
  await createTable(ctx, name, fields, { 'commit.manifest.target-size-bytes': '100' });
  for (let b = 0; b < 3; b++) await append(name, range(b, 1));
  const r = maintain(name, ['manifests']).lines[0];
  assert.equal(r.status, 'ok', r.error);
  assert.equal(r['manifests-replaced'], 0);
  assert.equal(r['manifests-kept'], 3);

  const bad = 'badprop';
  await createTable(ctx, bad, fields, { 'commit.manifest.target-size-bytes': 'lots' });
  await append(bad, [1]);
  const b = maintain(bad, ['manifests']);
  assert.equal(b.code, 3, b.stderr);
  assert.equal(b.lines[0].status, 'failed');
  assert.match(b.lines[0].error, /commit\.manifest\.target-size-bytes 'lots' is not a positive integer/);
});
