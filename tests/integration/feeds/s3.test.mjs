// S3 prefix feeds on moto (signature checks on): objects put under
// s3://bucket/prefix/ are listed and read through the S3 warehouse's handle
// and land exactly once (DuckDB over the mirrored data files the manifests
// list); the ledger holds each object's key, size and LastModified; keys
// deeper than the glob, other extensions, dot-files and *.tmp are not the
// feed's; a poison object is copied whole, and rejected rows with their
// reasons, to the dead-letter location on S3, and the feed keeps going.
// An s3 source on a file warehouse and a directory source on an S3 warehouse
// are 400s naming why.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { psql, request } from '../lib/harness.mjs';
import { expectJson, expectError } from '../lib/checks.mjs';
import { readAvro, duck, sqlStr, parseJsonBig } from '../ingest/lib.mjs';
import { startS3Catalog, s3Profile, createWarehouse, mirror, mirrored, tmpDir, noS3 } from '../s3/lib.mjs';
import { F, createFeed, ledger, waitLedger, csv, range } from './lib.mjs';

let ctx = null;
let dir;
const WH = 'lake';
const P = `/v1/${WH}`;

before(async () => {
  ctx = await startS3Catalog('feeds_s3');
  if (!ctx) return;
  dir = tmpDir('feeds-s3');
  expectJson(await createWarehouse(ctx.base, WH, s3Profile(ctx.s3, ctx.bucket, 'wh')), 201, null);
  expectJson(await createWarehouse(ctx.base, 'local', { type: 'file', location: `file://${dir}/wh` }), 201, null);
  expectJson(await request(ctx.base, 'POST', `${P}/namespaces`, { body: { namespace: ['ns'] } }), 200);
  expectJson(await request(ctx.base, 'POST', '/v1/local/namespaces', { body: { namespace: ['ns'] } }), 200);
});
after(async () => {
  if (ctx) await ctx.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const put = (key, body) => ctx.s3.put(ctx.bucket, key, body);

// The ids in the table's current snapshot: its objects mirrored, the manifest
// list and manifests read with python3-avro, the data files with DuckDB.
async function tableIds(table) {
  const meta = parseJsonBig((await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/${table}`)).text).metadata;
  const snap = meta.snapshots.find((s) => String(s['snapshot-id']) === String(meta['current-snapshot-id']));
  if (!snap) return { meta, ids: [] };
  const local = path.join(dir, `mirror-${table}-${Date.now()}`);
  await mirror(ctx.s3, ctx.bucket, `wh/ns/${table}/`, local);
  const files = [];
  for (const le of readAvro(`file://${mirrored(local, snap['manifest-list'])}`).records) {
    for (const e of readAvro(`file://${mirrored(local, le.manifest_path)}`).records) {
      if (e.status !== 2) files.push(mirrored(local, e.data_file.file_path));
    }
  }
  const con = await duck();
  const rows = (await con.runAndReadAll(
    `SELECT id::BIGINT FROM read_parquet([${files.map(sqlStr).join(', ')}]) ORDER BY 1`)).getRows();
  return { meta, ids: rows.map((r) => Number(r[0])) };
}

test('objects under an s3 prefix land exactly once; poison and bad rows go to the dead-letter location on S3', async (t) => {
  if (noS3(ctx, t)) return;
  expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, {
    body: {
      name: 'orders',
      schema: { type: 'struct', fields: [{ id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 's', type: 'string', required: false }] },
    },
  }), 200);
  // Objects that are there before the feed, and one past a page of the listing's continuation.
  for (let k = 0; k < 3; k++) await put(`landing/orders/part-${k}.csv`, csv(k * 100, k * 100 + 50));
  await put('landing/orders/notes.txt', 'id,s\n999999,x\n');
  await put('landing/orders/.hidden.csv', 'id,s\n999998,x\n');
  await put('landing/orders/late.csv.tmp', 'id,s\n999997,x\n');
  await put('landing/orders/deeper/part-9.csv', 'id,s\n999996,x\n');
  await put('landing/ordersX/part-0.csv', 'id,s\n999995,x\n');
  await createFeed(ctx.base, {
    name: 'orders', warehouse: WH, table: 'ns.orders',
    source: { type: 's3', location: `s3://${ctx.bucket}/landing/orders/`, glob: '*.csv' },
    format: 'csv', interval: 'PT1S', 'on-error': 'dead-letter', batch: { 'max-objects': 2 },
  });
  const shown = (await request(ctx.base, 'GET', `${F}/orders`)).json;
  assert.deepEqual(shown.source ?? shown.definition?.source,
    { type: 's3', location: `s3://${ctx.bucket}/landing/orders`, glob: '*.csv' });
  await waitLedger(ctx.dbUrl, 'orders', 3);
  await put('landing/orders/part-3.csv', csv(300, 350));
  await put('landing/orders/x-badrows.csv', 'id,s\n400,d\nnot-a-number,e\n401,f\n');
  await put('landing/orders/y-poison.csv', 'wrong,columns\n1,2\n');
  await waitLedger(ctx.dbUrl, 'orders', 6);

  const want = [...range(0, 50), ...range(100, 150), ...range(200, 250), ...range(300, 350), 400, 401];
  const { meta, ids } = await tableIds('orders');
  assert.deepEqual(ids, want, 'every row exactly once, nothing else');
  const l = ledger(ctx.dbUrl, 'orders');
  assert.deepEqual(l.map((o) => `${o.key}:${o.outcome}`), ['part-0.csv:committed', 'part-1.csv:committed', 'part-2.csv:committed',
    'part-3.csv:committed', 'x-badrows.csv:committed', 'y-poison.csv:dead-letter']);
  // The ledger's etag is the object's LastModified (ms), its size the object's.
  const objs = new Map((await ctx.s3.list(ctx.bucket, 'landing/orders/')).map((o) => [o.key, o]));
  const rows = psql(ctx.dbUrl, `SELECT o.key || '|' || o.size || '|' || o.etag FROM feed_object o ORDER BY o.key`)
    .split('\n').map((x) => x.split('|'));
  for (const [key, size, etag] of rows) {
    const o = objs.get(`landing/orders/${key}`);
    assert.ok(o, key);
    assert.equal(Number(size), Number(o.size), `size of ${key}`);
    assert.match(etag, /^\d{13}$/, `etag of ${key} is LastModified in ms`);
  }
  for (const s of meta.snapshots) assert.match(s.summary['floe.batch-id'], /^[0-9a-f]{64}$/);

  // Dead letters: on S3, through the warehouse's handle.
  const dl = psql(ctx.dbUrl, `SELECT key || '|' || whole_object || '|' || rows_bad || '|' || location || '|' || reason
    FROM feed_dead_letter ORDER BY whole_object, id`).split('\n').map((x) => x.split('|'));
  assert.equal(dl.length, 2, JSON.stringify(dl));
  const [bad, whole] = dl;
  const tableLoc = meta.location;
  assert.ok(bad[3].startsWith(`${tableLoc}/dead-letter/`), bad[3]);
  const keyOf = (uri) => uri.slice(`s3://${ctx.bucket}/`.length);
  assert.equal((await ctx.s3.get(ctx.bucket, keyOf(bad[3]))).toString(), 'not-a-number,e\n', 'the rejected row, byte for byte');
  assert.match((await ctx.s3.get(ctx.bucket, keyOf(`${bad[3]}.errors.ndjson`))).toString(), /x-badrows\.csv/);
  assert.equal(whole[0], 'y-poison.csv');
  assert.equal(whole[1], 'true');
  assert.ok(whole[3].startsWith(`${tableLoc}/dead-letter/`), whole[3]);
  assert.equal((await ctx.s3.get(ctx.bucket, keyOf(whole[3]))).toString(), 'wrong,columns\n1,2\n', 'the poison object, whole');
  assert.match(whole[4], /wrong|column/i, whole[4]);

  // The feed keeps going and never takes the same object twice.
  await put('landing/orders/z-more.csv', csv(500, 502));
  await waitLedger(ctx.dbUrl, 'orders', 7);
  await new Promise((r) => setTimeout(r, 2500));
  const again = await tableIds('orders');
  assert.deepEqual(again.ids, [...want, 500, 501]);
  assert.equal(ledger(ctx.dbUrl, 'orders').length, 7);
});

test('source and warehouse must agree: 400s naming why', async (t) => {
  if (noS3(ctx, t)) return;
  const base = { name: 'mismatch', table: 'ns.m', format: 'csv', 'create-table': true };
  expectError(await request(ctx.base, 'POST', F, {
    body: { ...base, warehouse: WH, source: { type: 'directory', path: `${dir}/in` } },
  }), 400, 'BadRequestException', "'directory' needs a warehouse on local files");
  expectError(await request(ctx.base, 'POST', F, {
    body: { ...base, warehouse: 'local', source: { type: 's3', location: `s3://${ctx.bucket}/in/` } },
  }), 400, 'BadRequestException', "'s3' needs an S3 warehouse");
  expectError(await request(ctx.base, 'POST', F, {
    body: { ...base, warehouse: WH, source: { type: 's3', location: `s3://${ctx.bucket}/in/` }, 'dead-letter': '/tmp/dl' },
  }), 400, 'BadRequestException', 'dead-letter must be an s3:// location');
  expectError(await request(ctx.base, 'POST', F, {
    body: { ...base, warehouse: WH, source: { type: 's3', location: 's3://x/in/' } },
  }), 400, 'BadRequestException', 'source.location');
});
