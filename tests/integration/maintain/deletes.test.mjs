// `floe maintain compact` on tables with row-level deletes:
// - v2: position delete files written by DuckDB (COPY ... FIELD_IDS) and
//   committed in a delete manifest; compaction rewrites the files they apply
//   to without the deleted rows (even a file that is not small), removes the
//   delete files in the same `replace` snapshot, and readers see the same
//   rows before and after: DuckDB over the live files applying the deletes,
//   icebird reading the table, and a model; no deleted row comes back; a
//   delete file older than a data file at the path it names (data sequence
//   number) does not apply to it;
// - v3: deletion vectors (Puffin, deletion-vector-v1, written here by a
//   small spec-following Roaring writer) are applied the same way, and every
//   surviving row keeps its _row_id and _last_updated_sequence_number: the
//   new file holds them explicitly, equal to what inheritance gave before;
// - manifests rewritten in part (data and delete manifests) keep their
//   other files as EXISTING with their own snapshot ids and sequence
//   numbers; a delete that names a file that stays is kept;
// - a delete committed while compaction runs aborts it (its rewritten
//   files would bring the deleted row back);
// - partitions with equality delete files are skipped; an equality delete
//   file of an unpartitioned table refuses compaction as not supported.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { icebergRead } from 'icebird';
import {
  startCatalog, createTable, loadTable, ingest, currentSnapshot, localPath, readAvro, tmpDir, duck, sqlStr,
} from '../ingest/lib.mjs';
import { call, tablePath } from '../tables/lib.mjs';
import { helpers, decodeAvro, encodeAvro, fields } from './lib.mjs';

let ctx;
const dir = tmpDir('compact-deletes');
let maintain;
let append;
let dropManifests;
let settled;
let maintainAsync;
let server;
const realFetch = globalThis.fetch;

before(async () => {
  ctx = await startCatalog('compact_deletes');
  ({ maintain, maintainAsync, append, dropManifests, settled } = helpers(ctx, dir));
});

after(async () => {
  globalThis.fetch = realFetch;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
  await ctx?.floe.stop();
});

const range = (from, n) => Array.from({ length: n }, (_, i) => from + i);

const dataFiles = (n) => (snap) => snap.summary['total-data-files'] === String(n);
const isSnap = (id) => (snap) => String(snap['snapshot-id']) === String(id);

// The live entries of a snapshot with their data sequence number and (data
// files of v3) inherited first_row_id (spec "First Row ID Inheritance").
function liveEntries(snapshot) {
  const out = [];
  for (const le of readAvro(snapshot['manifest-list']).records) {
    let next = le.first_row_id == null ? null : BigInt(le.first_row_id);
    for (const e of readAvro(le.manifest_path).records) {
      const df = e.data_file;
      let frid = null;
      if (Number(df.content) === 0) {
        if (df.first_row_id != null) frid = BigInt(df.first_row_id);
        else if (next != null) {
          frid = next;
          next += BigInt(df.record_count);
        }
      }
      if (e.status === '2') continue;
      out.push({
        content: Number(df.content), path: df.file_path, format: df.file_format, records: Number(df.record_count),
        seq: BigInt(e.sequence_number ?? le.sequence_number), frid, df,
      });
    }
  }
  return out;
}

// The rows readers must see: each live data file's rows (DuckDB, with
// their positions) less the positions deleted by a position delete file
// (read by DuckDB) or a deletion vector (dvs: puffin path -> {data path ->
// positions}, what the test wrote) of a data sequence number >= the data
// file's.  [[id, name, _row_id, _last_updated_sequence_number]] sorted by id;
// lineage columns read from the file or inherited.
async function visibleRows(snapshot, dvs = new Map()) {
  const con = await duck();
  const live = liveEntries(snapshot);
  const gone = new Map();
  for (const d of live.filter((e) => e.content === 1)) {
    let pairs;
    if (d.format.toUpperCase() === 'PUFFIN') {
      const byPath = dvs.get(d.path);
      assert.ok(byPath, `a DV the test wrote: ${d.path}`);
      pairs = (byPath.get(d.df.referenced_data_file) ?? []).map((p) => [d.df.referenced_data_file, p]);
    } else {
      pairs = (await con.runAndReadAll(`SELECT file_path, pos::VARCHAR FROM read_parquet(${sqlStr(localPath(d.path))})`))
        .getRowsJson().map((r) => [r[0], Number(r[1])]);
    }
    for (const [p, pos] of pairs) {
      const data = live.find((e) => e.content === 0 && e.path === p);
      if (!data || data.seq > d.seq) continue;
      if (!gone.has(p)) gone.set(p, new Set());
      gone.get(p).add(pos);
    }
  }
  const out = [];
  for (const f of live.filter((e) => e.content === 0)) {
    const cols = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sqlStr(localPath(f.path))})`))
      .getRowsJson().map((r) => r[0]);
    const lineage = cols.includes('_row_id') ? '_row_id::VARCHAR, _last_updated_sequence_number::VARCHAR' : 'NULL, NULL';
    const rows = (await con.runAndReadAll(`SELECT id::VARCHAR, name, file_row_number::VARCHAR, ${lineage} FROM read_parquet(${sqlStr(localPath(f.path))}, file_row_number = true)`)).getRowsJson();
    for (const [id, name, pos, rid, lusn] of rows) {
      if (gone.get(f.path)?.has(Number(pos))) continue;
      const rowId = rid ?? (f.frid == null ? null : String(f.frid + BigInt(pos)));
      const seq = lusn ?? (f.frid == null ? null : String(f.seq));
      out.push([id, name, rowId, seq]);
    }
  }
  return out.sort((a, b) => Number(BigInt(a[0]) - BigInt(b[0])));
}

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

// Commits a delete manifest of `entries` (data_file fields over a template
// taken from a data manifest of the table) in a snapshot of its own.
async function commitDeletes(name, meta, entries) {
  const snap = currentSnapshot(meta);
  const list = readAvro(snap['manifest-list']).records;
  const src = localPath(list[0].manifest_path);
  const m = await decodeAvro(src);
  const tmpl = m.recs[0];
  const mpath = `${path.dirname(src)}/deletes-${Date.now()}-${Math.random().toString(36).slice(2)}-m0.avro`;
  const recs = entries.map((df) => ({
    ...tmpl,
    status: 1,
    snapshot_id: null,
    sequence_number: null,
    file_sequence_number: null,
    data_file: {
      ...tmpl.data_file, column_sizes: null, value_counts: null, null_value_counts: null, nan_value_counts: null,
      lower_bounds: null, upper_bounds: null, split_offsets: null, ...df,
    },
  }));
  await encodeAvro(mpath, m.type, { ...m.header.meta, content: Buffer.from('deletes') }, recs);
  const rows = entries.reduce((a, e) => a + e.record_count, 0n);
  return (await dropManifests(name, meta, () => false, {
    edit: (records, _meta, { id, seq }) => [...records, {
      ...records[0], manifest_path: `file://${mpath}`, manifest_length: BigInt(fs.statSync(mpath).size), content: 1,
      sequence_number: seq, min_sequence_number: seq, added_snapshot_id: id,
      added_files_count: entries.length, existing_files_count: 0, deleted_files_count: 0,
      added_rows_count: rows, existing_rows_count: 0n, deleted_rows_count: 0n,
      ...('first_row_id' in records[0] ? { first_row_id: null } : {}),
    }],
  })).metadata;
}

// A position delete file of [path, pos] pairs, written by DuckDB with the
// spec's field ids, sorted by path then position.
async function positionDeleteFile(file, pairs) {
  const con = await duck();
  const values = pairs.map(([p, pos]) => `(${sqlStr(p)}, ${pos}::BIGINT)`).join(', ');
  await con.run(`COPY (SELECT * FROM (VALUES ${values}) t(file_path, pos) ORDER BY file_path, pos) TO ${sqlStr(file)} (FORMAT parquet, FIELD_IDS {file_path: 2147483546, pos: 2147483545})`);
  return { path: `file://${file}`, size: BigInt(fs.statSync(file).size), count: BigInt(pairs.length) };
}

// Writes `rows` rows (ids from 5000) with DuckDB at file and appends the
// file in a manifest of its own, in a snapshot of its own.
async function addDuckFile(name, meta, file, rows) {
  const con = await duck();
  await con.run(`COPY (SELECT (5000 + i)::BIGINT AS id, 'late' || i AS name FROM range(${rows}) t(i)) TO ${sqlStr(file)} (FORMAT parquet, FIELD_IDS {id: 1, name: 2})`);
  const list = readAvro(currentSnapshot(meta)['manifest-list']).records;
  const srcM = list.find((r) => Number(r.content) === 0).manifest_path;
  const m = await decodeAvro(localPath(srcM));
  const added = `${path.dirname(localPath(srcM))}/${path.basename(file)}-m0.avro`;
  await encodeAvro(added, m.type, m.header.meta, [{
    ...m.recs[0], status: 1, snapshot_id: null, sequence_number: null, file_sequence_number: null,
    data_file: {
      ...m.recs[0].data_file, file_path: `file://${file}`, file_size_in_bytes: BigInt(fs.statSync(file).size),
      record_count: BigInt(rows), column_sizes: null, value_counts: null, null_value_counts: null, nan_value_counts: null,
      lower_bounds: null, upper_bounds: null, split_offsets: null,
    },
  }]);
  return (await dropManifests(name, meta, () => false, {
    edit: (recs, _m, { id, seq }) => [...recs, {
      ...recs.find((r) => Number(r.content) === 0), manifest_path: `file://${added}`, manifest_length: BigInt(fs.statSync(added).size),
      added_snapshot_id: id, sequence_number: seq, min_sequence_number: seq, added_files_count: 1, existing_files_count: 0,
      deleted_files_count: 0, added_rows_count: BigInt(rows), existing_rows_count: 0n, deleted_rows_count: 0n,
    }],
  })).metadata;
}

// ---- deletion vectors: Puffin + portable 64-bit Roaring (positions < 2^32,
// array containers of at most 4096 values; spec: puffin-spec.md) ----

function roaringPortable(positions) {
  const sorted = [...new Set(positions)].sort((a, b) => a - b);
  const containers = new Map();
  for (const p of sorted) {
    const key = p >>> 16;
    if (!containers.has(key)) containers.set(key, []);
    containers.get(key).push(p & 0xffff);
  }
  const keys = [...containers.keys()];
  const parts = [];
  const u16 = (v) => { const b = Buffer.alloc(2); b.writeUInt16LE(v); return b; };
  const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); return b; };
  parts.push(Buffer.from([1, 0, 0, 0, 0, 0, 0, 0])); // one 64-bit bucket
  parts.push(u32(0)); // its key: the high 32 bits
  parts.push(u32(12346), u32(keys.length)); // no run containers
  for (const k of keys) parts.push(u16(k), u16(containers.get(k).length - 1));
  let offset = 8 + 8 * keys.length;
  for (const k of keys) {
    parts.push(u32(offset));
    offset += 2 * containers.get(k).length;
  }
  for (const k of keys) {
    assert.ok(containers.get(k).length <= 4096);
    for (const v of containers.get(k)) parts.push(u16(v));
  }
  return Buffer.concat(parts);
}

function dvBlob(positions) {
  const body = Buffer.concat([Buffer.from([0xd1, 0xd3, 0x39, 0x64]), roaringPortable(positions)]);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body));
  return Buffer.concat([len, body, crc]);
}

// A Puffin file holding one deletion vector per data file: the entries'
// {referenced_data_file, content_offset, content_size_in_bytes, count}.
function puffinFile(file, byData) {
  const magic = Buffer.from('PFA1');
  const blobs = [];
  const meta = [];
  let offset = 4;
  for (const [data, positions] of byData) {
    const b = dvBlob(positions);
    blobs.push(b);
    meta.push({
      type: 'deletion-vector-v1', fields: [2147483545], 'snapshot-id': -1, 'sequence-number': -1, offset, length: b.length,
      properties: { 'referenced-data-file': data, cardinality: String(new Set(positions).size) },
    });
    offset += b.length;
  }
  const payload = Buffer.from(JSON.stringify({ blobs: meta, properties: { 'created-by': 'floe tests' } }));
  const size = Buffer.alloc(4);
  size.writeInt32LE(payload.length);
  fs.writeFileSync(file, Buffer.concat([magic, ...blobs, magic, payload, size, Buffer.alloc(4), magic]));
  return meta.map((m) => ({
    referenced_data_file: m.properties['referenced-data-file'], content_offset: BigInt(m.offset),
    content_size_in_bytes: BigInt(m.length), count: BigInt(m.properties.cardinality),
  }));
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

test('compact v3: deletion vectors are applied and rows keep _row_id and _last_updated_sequence_number', async () => {
  const name = 'dv';
  await createTable(ctx, name, fields, { 'format-version': '3' });
  for (let b = 0; b < 3; b++) await append(name, range(b * 20, 20));
  let { meta } = await settled(name, dataFiles(3));
  const data = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0);
  assert.ok(data.every((e) => e.frid != null), 'v3 appends have row ids');
  const puffin = path.join(localPath(meta.location), 'data', 'dvs.puffin');
  const dvs = new Map([[data[0].path, [0, 2, 19]], [data[2].path, [7]]]);
  const blobs = puffinFile(puffin, dvs);
  const size = BigInt(fs.statSync(puffin).size);
  meta = await commitDeletes(name, meta, blobs.map((b) => ({
    content: 1, file_path: `file://${puffin}`, file_format: 'PUFFIN', record_count: b.count, file_size_in_bytes: size,
    referenced_data_file: b.referenced_data_file, content_offset: b.content_offset, content_size_in_bytes: b.content_size_in_bytes,
  })));
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

// Merges every data manifest of the current snapshot into one whose entries
// are EXISTING with their own snapshot ids and sequence numbers (what a
// manifest rewrite by another engine leaves), in a snapshot of its own.
async function mergeDataManifests(name, meta) {
  const list = await decodeAvro(localPath(currentSnapshot(meta)['manifest-list']));
  const data = list.recs.filter((r) => Number(r.content) === 0);
  const merged = [];
  let type;
  let header;
  for (const le of data) {
    const m = await decodeAvro(localPath(le.manifest_path));
    type = m.type;
    header = m.header.meta;
    for (const e of m.recs) {
      if (e.status === 2) continue;
      merged.push({
        ...e, status: 0, snapshot_id: e.snapshot_id ?? le.added_snapshot_id,
        sequence_number: e.sequence_number ?? le.sequence_number, file_sequence_number: e.file_sequence_number ?? le.sequence_number,
      });
    }
  }
  const mpath = `${path.dirname(localPath(data[0].manifest_path))}/merged-${Date.now()}-m0.avro`;
  await encodeAvro(mpath, type, header, merged);
  const rows = merged.reduce((a, e) => a + e.data_file.record_count, 0n);
  const minSeq = merged.reduce((a, e) => (e.sequence_number < a ? e.sequence_number : a), merged[0].sequence_number);
  return (await dropManifests(name, meta, (r) => Number(r.content) === 0, {
    edit: (records, _m, { id }) => [{
      ...data[0], manifest_path: `file://${mpath}`, manifest_length: BigInt(fs.statSync(mpath).size), added_snapshot_id: id,
      sequence_number: data[0].sequence_number, min_sequence_number: minSeq, added_files_count: 0, existing_files_count: merged.length,
      deleted_files_count: 0, added_rows_count: 0n, existing_rows_count: rows, deleted_rows_count: 0n,
    }, ...records],
  })).metadata;
}

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

test('compact: a delete committed while compaction runs aborts it, the deleted row stays deleted', async () => {
  const name = 'delrace';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 3; b++) await append(name, range(b * 4, 4));
  let { meta } = await settled(name, dataFiles(3));
  const before = currentSnapshot(meta);
  const victim = liveEntries(before).find((e) => e.content === 0);
  const running = maintainAsync(name, ['compact'], { FLOE_TEST_COMPACT_PAUSE_MS: '3000' });
  await new Promise((r) => setTimeout(r, 600));
  const d = await positionDeleteFile(path.join(localPath(meta.location), 'data', 'race.parquet'), [[victim.path, 0]]);
  meta = await commitDeletes(name, meta, [{
    content: 1, file_path: d.path, file_format: 'PARQUET', record_count: d.count, file_size_in_bytes: d.size,
  }]);
  const deletedId = (await (await duck()).runAndReadAll(`SELECT id::INTEGER FROM read_parquet(${sqlStr(localPath(victim.path))}) ORDER BY file_row_number LIMIT 1`)).getRowsJson()[0][0];
  const res = await running;
  if (res.code === 0) {
    // Under heavy load the run may plan after the delete landed: then it
    // must have applied it.
    assert.equal(res.lines[0]['deleted-rows-dropped'], 1, res.stdout);
  } else {
    assert.match(res.lines[0].error, /compaction aborted: a concurrent commit added delete files/);
    const now = currentSnapshot((await loadTable(ctx, name)).metadata);
    assert.equal(String(now['snapshot-id']), String(currentSnapshot(meta)['snapshot-id']));
  }
  const now = (await settled(name, (x) => res.code !== 0 || isSnap(res.lines[0]['snapshot-id'])(x))).snap;
  const got = (await visibleRows(now)).map((x) => Number(x[0]));
  assert.deepEqual(got, range(0, 12).filter((i) => i !== deletedId), 'the row deleted meanwhile stays deleted');
  if (res.code === 0) return;
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
