// Helpers of the compaction tests on tables with row-level deletes: the
// rows readers must see (applying position deletes, deletion vectors and
// equality deletes by the spec's rules), delete files written by DuckDB and
// Puffin deletion vectors written by a small spec-following Roaring writer,
// and commits of delete manifests, DuckDB data files and merged manifests.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { icebergRead } from 'icebird';
import { currentSnapshot, localPath, readAvro, duck, sqlStr } from '../ingest/lib.mjs';
import { decodeAvro, encodeAvro } from './lib.mjs';

// CRC-32 (IEEE, as zlib): node's zlib.crc32 is missing before 20.15 and
// Debian 12's node is 18.
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// The live entries of a snapshot with their data sequence number and (data
// files of v3) inherited first_row_id (spec "First Row ID Inheritance").
export function liveEntries(snapshot) {
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
        seq: BigInt(e.sequence_number ?? le.sequence_number), frid, df, spec: Number(le.partition_spec_id),
      });
    }
  }
  return out;
}

// The columns of the tests' tables (lib.mjs fields) by field id.
const COLUMN_OF = { 1: 'id', 2: 'name' };
const FIELD_OF = { id: 1, name: 2 };
const partitionJson = (p) => JSON.stringify(p ?? {}, (k, v) => (typeof v === 'bigint' ? String(v) : v));
const unpartitioned = (df) => Object.keys(df.partition ?? {}).length === 0;

// The live equality delete files of a snapshot, each with its rows read by
// DuckDB as JSON keys of its columns' text (null stays null).
async function equalityDeletes(con, live) {
  const out = [];
  for (const d of live.filter((e) => e.content === 2)) {
    const cols = [...d.df.equality_ids].map((i) => COLUMN_OF[Number(i)]);
    const rows = (await con.runAndReadAll(`SELECT ${cols.map((c) => `${c}::VARCHAR`).join(', ')} FROM read_parquet(${sqlStr(localPath(d.path))})`)).getRowsJson();
    out.push({ d, cols, keys: new Set(rows.map((r) => JSON.stringify(r))) });
  }
  return out;
}

// Whether equality delete eq removes a row ({id, name} as text) of data
// file f (spec "Scan Planning": a data sequence number below the delete's,
// and the same partition unless the delete's is unpartitioned).
function eqDeletes(eq, f, row) {
  if (f.seq >= eq.d.seq) return false;
  if (!unpartitioned(eq.d.df) && (eq.d.spec !== f.spec || partitionJson(eq.d.df.partition) !== partitionJson(f.df.partition))) return false;
  return eq.keys.has(JSON.stringify(eq.cols.map((c) => row[c])));
}

// The rows readers must see: each live data file's rows (DuckDB, with
// their positions) less the positions deleted by a position delete file
// (read by DuckDB) or a deletion vector (dvs: puffin path -> {data path ->
// positions}, what the test wrote) of a data sequence number >= the data
// file's, and less the rows an equality delete file removes (eqDeletes).
// [[id, name, _row_id, _last_updated_sequence_number]] sorted by id;
// lineage columns read from the file or inherited.
export async function visibleRows(snapshot, dvs = new Map()) {
  const con = await duck();
  const live = liveEntries(snapshot);
  const eqs = await equalityDeletes(con, live);
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
      if (eqs.some((eq) => eqDeletes(eq, f, { id, name }))) continue;
      const rowId = rid ?? (f.frid == null ? null : String(f.frid + BigInt(pos)));
      const seq = lusn ?? (f.frid == null ? null : String(f.seq));
      out.push([id, name, rowId, seq]);
    }
  }
  return out.sort((a, b) => Number(BigInt(a[0]) - BigInt(b[0])));
}

// A position delete file of [path, pos] pairs, written by DuckDB with the
// spec's field ids, sorted by path then position.
export async function positionDeleteFile(file, pairs) {
  const con = await duck();
  const values = pairs.map(([p, pos]) => `(${sqlStr(p)}, ${pos}::BIGINT)`).join(', ');
  await con.run(`COPY (SELECT * FROM (VALUES ${values}) t(file_path, pos) ORDER BY file_path, pos) TO ${sqlStr(file)} (FORMAT parquet, FIELD_IDS {file_path: 2147483546, pos: 2147483545})`);
  return { path: `file://${file}`, size: BigInt(fs.statSync(file).size), count: BigInt(pairs.length) };
}

// An equality delete file of rows (arrays in the order of cols, null for
// null) over cols ({column: DuckDB type}, columns of the tests' tables),
// written by DuckDB with the table's field ids.
export async function equalityDeleteFile(file, cols, rows) {
  const con = await duck();
  const names = Object.keys(cols);
  const lit = (v, t) => (v === null ? `NULL::${t}` : t === 'VARCHAR' ? `${sqlStr(v)}::VARCHAR` : `${v}::${t}`);
  const values = rows.map((r) => `(${r.map((v, i) => lit(v, cols[names[i]])).join(', ')})`).join(', ');
  const ids = names.map((n) => `${n}: ${FIELD_OF[n]}`).join(', ');
  await con.run(`COPY (SELECT * FROM (VALUES ${values}) t(${names.join(', ')})) TO ${sqlStr(file)} (FORMAT parquet, FIELD_IDS {${ids}})`);
  return {
    content: 2, file_path: `file://${file}`, file_format: 'PARQUET', record_count: BigInt(rows.length),
    file_size_in_bytes: BigInt(fs.statSync(file).size), equality_ids: names.map((n) => FIELD_OF[n]),
  };
}

// icebird over a file warehouse: it cannot read file:// URLs, so a local
// HTTP server serves the warehouse and fetch is pointed at it while the
// reader is open.  rows(meta): the table's [[id, name]] sorted by id.
export function icebirdReader() {
  const realFetch = globalThis.fetch;
  let server;

  async function serve(location) {
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

  async function rows(meta) {
    await serve(meta.location);
    const got = await icebergRead({ tableUrl: meta.location, metadata: meta });
    return got.map((r) => [String(r.id), r.name]).sort((a, b) => Number(BigInt(a[0]) - BigInt(b[0])));
  }

  async function close() {
    globalThis.fetch = realFetch;
    await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
  }

  return { rows, close };
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
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

// A Puffin file holding one deletion vector per data file: the entries'
// {referenced_data_file, content_offset, content_size_in_bytes, count}.
// Writes the deletion vectors dvs (a Map of data file path -> positions) to
// the Puffin file puffin and returns their delete file entries, as
// commitDeletes takes them.
export function dvEntries(puffin, dvs) {
  const blobs = puffinFile(puffin, dvs);
  const size = BigInt(fs.statSync(puffin).size);
  return blobs.map((b) => ({
    content: 1, file_path: `file://${puffin}`, file_format: 'PUFFIN', record_count: b.count, file_size_in_bytes: size,
    referenced_data_file: b.referenced_data_file, content_offset: b.content_offset, content_size_in_bytes: b.content_size_in_bytes,
  }));
}

export function puffinFile(file, byData) {
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

// Commits bound to a table's dropManifests (lib.mjs helpers).
export function deleteHelpers(dropManifests) {
  // Writes a delete manifest of `entries` (data_file fields over a template
  // taken from a data manifest of the table); returns the function that
  // makes its list record from the list's records and the new snapshot's id
  // and sequence number.
  async function deleteManifest(meta, entries) {
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
    return (records, { id, seq }) => ({
      ...records[0], manifest_path: `file://${mpath}`, manifest_length: BigInt(fs.statSync(mpath).size), content: 1,
      sequence_number: seq, min_sequence_number: seq, added_snapshot_id: id,
      added_files_count: entries.length, existing_files_count: 0, deleted_files_count: 0,
      added_rows_count: rows, existing_rows_count: 0n, deleted_rows_count: 0n,
      ...('first_row_id' in records[0] ? { first_row_id: null } : {}),
    });
  }

  // Writes `rows` rows (ids from 5000, or what the query select gives) with
  // DuckDB at file and a data manifest of that file; returns the maker of
  // its list record, as deleteManifest.
  async function duckManifest(meta, file, rows, select = `SELECT (5000 + i)::BIGINT AS id, 'late' || i AS name FROM range(${rows}) t(i)`) {
    const con = await duck();
    await con.run(`COPY (${select}) TO ${sqlStr(file)} (FORMAT parquet, FIELD_IDS {id: 1, name: 2})`);
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
    return (recs, { id, seq }) => ({
      ...recs.find((r) => Number(r.content) === 0), manifest_path: `file://${added}`, manifest_length: BigInt(fs.statSync(added).size),
      added_snapshot_id: id, sequence_number: seq, min_sequence_number: seq, added_files_count: 1, existing_files_count: 0,
      deleted_files_count: 0, added_rows_count: BigInt(rows), existing_rows_count: 0n, deleted_rows_count: 0n,
    });
  }

  // One snapshot that adds the manifests whose list records `adds` make.
  const commitManifests = async (name, meta, adds) => (await dropManifests(name, meta, () => false, {
    edit: (records, _meta, at) => [...records, ...adds.map((add) => add(records, at))],
  })).metadata;

  // Commits delete files in a snapshot of their own.
  const commitDeletes = async (name, meta, entries) => commitManifests(name, meta, [await deleteManifest(meta, entries)]);

  // Commits a DuckDB data file (duckManifest) in a snapshot of its own.
  const addDuckFile = async (name, meta, file, rows, select) => commitManifests(name, meta, [await duckManifest(meta, file, rows, select)]);

  // Commits a DuckDB data file and delete files in one snapshot: the same
  // data sequence number, as a streaming writer's upsert commits them.
  const addDuckFileWithDeletes = async (name, meta, file, rows, select, entries) => commitManifests(name, meta,
    [await duckManifest(meta, file, rows, select), await deleteManifest(meta, entries)]);

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

  return { commitDeletes, addDuckFile, addDuckFileWithDeletes, mergeDataManifests };
}
