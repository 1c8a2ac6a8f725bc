// Parquet feeds add files as they are: Parquet objects written by DuckDB
// (`COPY ... (FORMAT parquet)`, no field ids) are checked against the table
// schema by column name, copied into the table's data folder and committed
// with metrics read from them; a promotable type (INTEGER into a long
// column) and a missing optional column are accepted; a file without a
// required column, with a type that cannot be promoted, or with a column the
// table lacks is dead-lettered whole with a reason naming the column.  The
// table gets schema.name-mapping.default, so DuckDB (over the live files)
// and icebird (the whole table, by the mapping) read exactly the good rows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { icebergRead } from 'icebird';
import { psql } from '../lib/harness.mjs';
import {
  startCatalog, createTable, loadTable, snapshotFiles, currentSnapshot, localPath, duck, sqlStr, tmpDir,
} from '../ingest/lib.mjs';
import { createFeed, ledger, waitLedger, range, routeFileFetch } from './lib.mjs';

let ctx;
let root;
let unroute;

before(async () => {
  ctx = await startCatalog('feeds_parquet');
  root = tmpDir('feeds-parquet');
  unroute = await routeFileFetch();
});

after(async () => {
  await unroute?.();
  await ctx?.floe.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

// Writes a Parquet file with DuckDB, then renames it into the watched folder.
async function duckParquet(dir, name, select) {
  const con = await duck();
  const tmp = path.join(root, `${name}.tmp`);
  await con.run(`COPY (${select}) TO ${sqlStr(tmp)} (FORMAT parquet)`);
  fs.renameSync(tmp, path.join(dir, name));
}

const norm = (r) => [String(r[0]), r[1] ?? null, r[2] ?? null, r[3] ?? null];
const byId = (a, b) => Number(a[0]) - Number(b[0]);

test('DuckDB-written Parquet objects are added as data files; bad ones are dead-lettered whole', async () => {
  const dir = path.join(root, 'in');
  fs.mkdirSync(dir);
  await createTable(ctx, 'pq', [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 'name', type: 'string', required: false },
    { id: 3, name: 'score', type: 'double', required: false },
    { id: 4, name: 'day', type: 'date', required: false },
  ]);
  await createFeed(ctx.base, {
    name: 'pq', table: 'ns.pq', source: { type: 'directory', path: dir, glob: '*.parquet' },
    format: 'parquet', interval: 'PT1S', 'on-error': 'dead-letter', batch: { 'max-objects': 10 },
  });
  // good: every column; and: INTEGER ids (promoted), no 'day' column
  await duckParquet(dir, 'a-full.parquet', `SELECT i::BIGINT AS id, 'n' || i AS name, (i * 0.5)::DOUBLE AS score,
    DATE '2026-01-01' + i::INTEGER AS day FROM range(0, 100) t(i)`);
  await duckParquet(dir, 'b-narrow.parquet', `SELECT (i + 100)::INTEGER AS id,
    CASE WHEN i % 3 = 0 THEN NULL ELSE 'm' || i END AS name, NULL::DOUBLE AS score FROM range(0, 50) t(i)`);
  // bad: no id; score as text; a column the table lacks
  await duckParquet(dir, 'c-noid.parquet', `SELECT 'x' AS name FROM range(0, 3)`);
  await duckParquet(dir, 'd-text.parquet', `SELECT 1::BIGINT AS id, 'abc' AS score`);
  await duckParquet(dir, 'e-extra.parquet', `SELECT 1::BIGINT AS id, 7 AS colour`);
  await waitLedger(ctx.dbUrl, 'pq', 5);

  const l = ledger(ctx.dbUrl, 'pq');
  const dl = psql(ctx.dbUrl, `SELECT key || '|' || reason || '|' || location FROM feed_dead_letter WHERE whole_object
    ORDER BY key`).split('\n').map((x) => x.split('|'));
  assert.deepEqual(l.map((o) => `${o.key}:${o.outcome}`), ['a-full.parquet:committed', 'b-narrow.parquet:committed',
    'c-noid.parquet:dead-letter', 'd-text.parquet:dead-letter', 'e-extra.parquet:dead-letter'], JSON.stringify(dl));
  assert.equal(dl.length, 3, JSON.stringify(dl));
  assert.match(dl[0][1], /required column 'id'/, `a missing required column is named: ${dl[0][1]}`);
  assert.match(dl[1][1], /score/, `the column whose type does not fit is named: ${dl[1][1]}`);
  assert.match(dl[2][1], /colour/, `the unknown column is named: ${dl[2][1]}`);
  assert.deepEqual(fs.readFileSync(dl[0][2]), fs.readFileSync(path.join(dir, 'c-noid.parquet')), 'the object, whole');

  const want = [
    ...range(0, 100).map((i) => norm([i, `n${i}`, i * 0.5, 20454 + i])),
    ...range(0, 50).map((i) => norm([i + 100, i % 3 === 0 ? null : `m${i}`, null, null])),
  ].sort(byId);
  const meta = (await loadTable(ctx, 'pq')).metadata;
  assert.ok(meta.properties['schema.name-mapping.default'], 'the table maps column names to ids');
  const live = snapshotFiles(currentSnapshot(meta)).filter((f) => String(f.entry.status) !== '2');
  assert.equal(live.length, 2);
  for (const f of live) {
    assert.ok(f.file.file_path.startsWith(`${meta.location}/data/`), `copied into the table: ${f.file.file_path}`);
    assert.ok(fs.existsSync(localPath(f.file.file_path)));
  }
  // metrics read from the files: counts and id bounds
  const counts = live.map((f) => Number(f.file.record_count)).sort((a, b) => a - b);
  assert.deepEqual(counts, [50, 100]);
  for (const f of live) {
    const lower = f.file.lower_bounds?.find((b) => String(b.key) === '1');
    const nulls = f.file.null_value_counts?.find((b) => String(b.key) === '2');
    assert.ok(lower, `a lower bound for id in ${f.file.file_path}`);
    assert.ok(nulls, 'null counts for name');
    assert.equal(String(nulls.value), Number(f.file.record_count) === 50 ? '17' : '0');
  }
  assert.equal(currentSnapshot(meta).summary['total-records'], '150');

  const con = await duck();
  // column_sizes: each column's chunk bytes over the row groups, as DuckDB reads the footer
  const schema = meta.schemas.find((x) => x['schema-id'] === meta['current-schema-id']);
  for (const f of live) {
    const sizes = (await con.runAndReadAll(`SELECT path_in_schema, sum(total_compressed_size)::BIGINT
      FROM parquet_metadata(${sqlStr(localPath(f.file.file_path))}) GROUP BY 1`)).getRows();
    assert.ok(sizes.length > 0);
    for (const [col, bytes] of sizes) {
      const id = schema.fields.find((x) => x.name === col)?.id;
      if (id === undefined) continue; // a column the table leaves out
      const got = f.file.column_sizes?.find((b) => String(b.key) === String(id));
      assert.ok(got, `a column size for ${col} in ${f.file.file_path}`);
      assert.equal(String(got.value), String(bytes), `the size of ${col}`);
    }
  }

  const files = live.map((f) => localPath(f.file.file_path));
  const got = (await con.runAndReadAll(`SELECT id::VARCHAR, name, score, (day - DATE '1970-01-01')::INTEGER
    FROM read_parquet([${files.map(sqlStr).join(', ')}], union_by_name = true)`)).getRows();
  assert.deepEqual(got.map(norm).sort(byId), want, 'DuckDB reads the good rows');
  const ice = await icebergRead({ tableUrl: meta.location, metadata: meta });
  const iceRows = ice.map((r) => {
    let day = r.day ?? null;
    if (day instanceof Date) day = Math.round(day.getTime() / 86400000);
    return norm([r.id, r.name, r.score, day]);
  });
  assert.deepEqual(iceRows.sort(byId), want, 'icebird reads the good rows through the name mapping');
});

test('create-table from a Parquet object takes its columns', async () => {
  const dir = path.join(root, 'created');
  fs.mkdirSync(dir);
  await createFeed(ctx.base, {
    name: 'pq2', table: 'ns.pq2', source: { type: 'directory', path: dir, glob: '*.parquet' },
    format: 'parquet', interval: 'PT1S', 'create-table': true,
  });
  await duckParquet(dir, 'a.parquet', `SELECT i::BIGINT AS k, 'v' || i AS v FROM range(0, 10) t(i)`);
  await waitLedger(ctx.dbUrl, 'pq2', 1);
  const meta = (await loadTable(ctx, 'pq2')).metadata;
  const schema = meta.schemas.find((s) => s['schema-id'] === meta['current-schema-id']);
  assert.deepEqual(schema.fields.map((f) => `${f.name}:${f.type}`), ['k:long', 'v:string']);
  const ice = await icebergRead({ tableUrl: meta.location, metadata: meta });
  assert.deepEqual(ice.map((r) => `${r.k}:${r.v}`).sort(), range(0, 10).map((i) => `${i}:v${i}`).sort());
});
