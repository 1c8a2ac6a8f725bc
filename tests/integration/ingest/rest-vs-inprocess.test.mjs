// The same inputs ingested into two tables of the same schema, one in
// process and one through --catalog-uri (the running daemon's REST API):
// three batches (CSV; NDJSON that evolves the schema; CSV in dead-letter
// mode with bad rows).  The rows read back identical; the metadata
// (schemas, snapshot summaries, sequence numbers, manifest list and manifest
// entries, Parquet schemas) is identical apart from ids, paths, sizes and
// timestamps; the dead-letter files hold the same bytes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, createTable, loadTable, ingest, show, snapshotFiles, currentSnapshot, snapshotById, localPath, duck,
  sqlStr, tmpDir,
} from './lib.mjs';

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'name', type: 'string', required: false },
  { id: 3, name: 'price', type: 'decimal(12, 3)', required: false },
  { id: 4, name: 'at', type: 'timestamptz', required: false },
  { id: 5, name: 'tags', type: 'binary', required: false },
];

const BATCHES = [
  {
    file: 'b1.csv',
    args: [],
    bytes: 'id,name,price,at,tags\n1,one,1.5,2024-01-01T00:00:00Z,00ff\n2,"two\nlines",,2024-06-01T12:30:00+02:00,\n'
      + '3,,-99999.999,,""\n',
  },
  {
    file: 'b2.ndjson',
    args: ['--new-columns', 'evolve'],
    bytes: '{"id":4,"name":"four","extra":"e4"}\n{"id":5,"price":"7","at":"2000-02-29T23:59:59.5-01:00","tags":"3q2+7w=="}\n'
      + '{"id":6,"extra":null}\n',
  },
  {
    file: 'b3.csv',
    args: ['--on-error', 'dead-letter', '--codec', 'snappy'],
    bytes: 'id,name,extra\n7,seven,x\nnope,bad,y\n8,eight,\n9,"open\n',
  },
];

let ctx;
const results = { inproc: [], rest: [] };
const metas = {};

before(async () => {
  ctx = await startCatalog('ingest_rvi');
  const dir = tmpDir('ingest-rvi');
  for (const b of BATCHES) fs.writeFileSync(path.join(dir, b.file), b.bytes);
  for (const [key, rest] of [['inproc', false], ['rest', true]]) {
    const name = `t_${key}`;
    await createTable(ctx, name, fields);
    for (const b of BATCHES) results[key].push(await ingest(ctx, name, [path.join(dir, b.file)], { rest, args: b.args }));
    metas[key] = (await loadTable(ctx, name)).metadata;
  }
});

after(async () => {
  await ctx?.floe.stop();
});

test('both modes commit every batch', () => {
  for (const key of ['inproc', 'rest']) {
    results[key].forEach((r) => {
      assert.equal(r.code, 0, show(r));
      assert.equal(r.out.status, 'committed', show(r));
    });
  }
  results.inproc.forEach((r, i) => {
    const o = results.rest[i].out;
    for (const k of ['rows-committed', 'rows-dead-lettered', 'files-written', 'bytes-read', 'batch-id']) {
      assert.equal(o[k], r.out[k], `batch ${i} ${k}`);
    }
  });
});

const rowsSql = (files) => `SELECT "id"::VARCHAR AS "id", "name", "price"::VARCHAR AS "price", epoch_us("at")::VARCHAR AS "at", hex("tags") AS "tags", "extra"
  FROM read_parquet([${files.map(sqlStr).join(', ')}], union_by_name = true) ORDER BY id`;

test('the rows read back identical', async () => {
  const con = await duck();
  const rows = {};
  for (const key of ['inproc', 'rest']) {
    const files = snapshotFiles(currentSnapshot(metas[key])).map((f) => localPath(f.file.file_path));
    rows[key] = (await con.runAndReadAll(rowsSql(files))).getRowObjectsJson();
  }
  assert.equal(rows.inproc.length, 8);
  assert.deepEqual(rows.rest, rows.inproc);
  assert.deepEqual(rows.inproc.map((r) => r.extra), [null, null, null, 'e4', null, null, 'x', null]);
});

// Drops what legitimately differs between the two tables.
const SIZE_KEYS = new Set(['added-files-size', 'total-files-size']);
function comparableSummary(s) {
  return Object.fromEntries(Object.entries(s).filter(([k]) => !SIZE_KEYS.has(k)));
}

test('schemas and snapshot summaries are identical apart from ids, sizes and timestamps', () => {
  const a = metas.inproc;
  const b = metas.rest;
  assert.deepEqual(b.schemas, a.schemas);
  assert.equal(b['current-schema-id'], a['current-schema-id']);
  assert.equal(b['last-column-id'], a['last-column-id']);
  assert.equal(b['last-sequence-number'], a['last-sequence-number']);
  assert.equal(b.snapshots.length, 3);
  results.inproc.forEach((r, i) => {
    const sa = snapshotById(a, r.out['snapshot-id']);
    const sb = snapshotById(b, results.rest[i].out['snapshot-id']);
    assert.deepEqual(comparableSummary(sb.summary), comparableSummary(sa.summary), `batch ${i} summary`);
    assert.equal(sb['sequence-number'], sa['sequence-number']);
    assert.equal(sb['schema-id'], sa['schema-id']);
    assert.equal(sb.summary['floe.batch-id'], r.out['batch-id']);
  });
  // sizes: each table's summaries agree with its own files
  for (const m of [a, b]) {
    const cur = currentSnapshot(m);
    const size = snapshotFiles(cur).reduce((x, f) => x + fs.statSync(localPath(f.file.file_path)).size, 0);
    assert.equal(cur.summary['total-files-size'], String(size));
  }
});

test('manifest lists, manifests and Parquet schemas are identical apart from ids and paths', async () => {
  const strip = ({ listEntry, entry, file, manifestMeta }) => ({
    list: { ...listEntry, manifest_path: null, manifest_length: null, added_snapshot_id: null },
    entry: { ...entry, snapshot_id: null, data_file: null },
    file: { ...file, file_path: null, file_size_in_bytes: null, column_sizes: null, split_offsets: null },
    manifestMeta: Object.fromEntries(Object.entries(manifestMeta).filter(([k]) => !['avro.sync'].includes(k))),
  });
  const fa = snapshotFiles(currentSnapshot(metas.inproc));
  const fb = snapshotFiles(currentSnapshot(metas.rest));
  assert.equal(fb.length, fa.length);
  assert.deepEqual(fb.map(strip), fa.map(strip));
  const con = await duck();
  for (let i = 0; i < fa.length; i++) {
    const ps = async (f) => (await con.runAndReadAll(`SELECT name, type, field_id, repetition_type, logical_type FROM parquet_schema(${sqlStr(localPath(f.file.file_path))})`)).getRowObjectsJson();
    assert.deepEqual(await ps(fb[i]), await ps(fa[i]));
  }
});

test('the dead-letter files hold the same bytes', () => {
  const ea = results.inproc[2].out['dead-letter-errors'];
  const eb = results.rest[2].out['dead-letter-errors'];
  assert.ok(ea && eb);
  assert.notEqual(ea, eb, 'each under its own table');
  const ra = ea.replace(/\.errors\.ndjson$/, '');
  const rb = eb.replace(/\.errors\.ndjson$/, '');
  assert.equal(fs.readFileSync(rb, 'utf8'), fs.readFileSync(ra, 'utf8'));
  assert.equal(fs.readFileSync(ra, 'utf8'), 'nope,bad,y\n9,"open\n');
  assert.equal(fs.readFileSync(eb, 'utf8'), fs.readFileSync(ea, 'utf8'));
});
