// Feed definitions through the management API: create with every default
// filled in, list, show, pause/resume, delete, and a 400 naming the key for
// each kind of bad definition.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { freshDatabase, startFloe, request, tmpDir } from '../lib/harness.mjs';
import { expectJson, expectError, expectNoContent } from '../lib/checks.mjs';

let floe;
let base;
let landing;
const F = '/management/v1/feeds';
const r = (method, p, body) => request(base, method, p, { body });

const good = (over = {}) => ({
  name: 'orders',
  warehouse: 'default',
  table: 'ns.orders',
  source: { type: 'directory', path: landing, glob: '*.csv' },
  format: 'csv',
  mode: 'append',
  interval: 'PT5S',
  'on-error': 'dead-letter',
  'new-columns': 'evolve',
  'create-table': true,
  ...over,
});

before(async () => {
  const db = await freshDatabase('feeds_def');
  floe = await startFloe({ databaseUrl: db.url });
  base = floe.baseUrl;
  landing = tmpDir('landing');
  let res = await request(base, 'POST', '/v1/namespaces', { body: { namespace: ['ns'] } });
  assert.equal(res.status, 200, res.text);
  res = await request(base, 'POST', '/v1/namespaces/ns/tables', {
    body: { name: 'existing', schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', type: 'long', required: false }] } },
  });
  assert.equal(res.status, 200, res.text);
});

after(async () => {
  await floe?.stop();
  if (landing) fs.rmSync(landing, { recursive: true, force: true });
});

test('create fills in every default; get, list, pause, resume, delete', async () => {
  const made = await r('POST', F, good());
  assert.equal(made.status, 201, made.text);
  const f = made.json;
  assert.equal(f.name, 'orders');
  assert.equal(f.state, 'active');
  assert.deepEqual(f.definition, {
    name: 'orders',
    warehouse: 'default',
    table: 'ns.orders',
    source: { type: 'directory', path: landing, glob: '*.csv' },
    format: 'csv',
    mode: 'append',
    interval: 'PT5S',
    'on-error': 'dead-letter',
    'new-columns': 'evolve',
    'create-table': true,
    batch: { 'max-bytes': 0, 'max-objects': 1000, 'max-age': 'PT0S' },
    'max-retries': 5,
    'dead-letter': '',
    'spool-max-bytes': 64 * 1024 * 1024,
  });
  assert.deepEqual(f.backlog, { 'spooled-bytes': 0, 'spooled-requests': 0 });
  assert.deepEqual(f['last-batches'], []);
  assert.equal(f['last-error'], null);

  expectError(await r('POST', F, good()), 409, 'AlreadyExistsException', "feed 'orders' already exists");

  const got = expectJson(await r('GET', `${F}/orders`), 200);
  assert.deepEqual(got.definition, f.definition);

  // Defaults: only the required keys.
  const minimal = await r('POST', F, { name: 'm1', table: 'ns.existing', source: { type: 'push' }, format: 'ndjson' });
  assert.equal(minimal.status, 201, minimal.text);
  assert.equal(minimal.json.definition.warehouse, 'default');
  assert.equal(minimal.json.definition.interval, 'PT10S');
  assert.equal(minimal.json.definition['on-error'], 'strict');
  assert.equal(minimal.json.definition['new-columns'], 'reject');
  assert.equal(minimal.json.definition['create-table'], false);

  const list = expectJson(await r('GET', F), 200);
  assert.deepEqual(list.feeds.map((x) => x.name), ['m1', 'orders']);

  const paused = expectJson(await r('POST', `${F}/orders/pause`), 200);
  assert.equal(paused.state, 'paused');
  assert.equal(expectJson(await r('POST', `${F}/orders/pause`), 200).state, 'paused', 'idempotent');
  const resumed = expectJson(await r('POST', `${F}/orders/resume`), 200);
  assert.equal(resumed.state, 'active');
  assert.equal(resumed.failures, 0);

  expectNoContent(await r('DELETE', `${F}/orders`));
  expectError(await r('GET', `${F}/orders`), 404, undefined, "feed 'orders' does not exist");
  expectError(await r('DELETE', `${F}/orders`), 404, undefined, 'does not exist');
  expectError(await r('POST', `${F}/orders/pause`), 404, undefined, 'does not exist');
  expectNoContent(await r('DELETE', `${F}/m1`));
});

test('a missing table needs create-table, and its namespace must exist', async () => {
  expectError(await r('POST', F, good({ name: 'x1', table: 'ns.absent', 'create-table': false })), 404,
    'NoSuchTableException', 'create-table');
  expectError(await r('POST', F, good({ name: 'x2', table: 'nons.t' })), 404, 'NoSuchNamespaceException');
  expectError(await r('POST', F, good({ name: 'x3', warehouse: 'nowh' })), 404, 'NoSuchWarehouseException', 'nowh');
});

test('every bad definition is a 400 naming its key', async () => {
  const cases = [
    [{ color: 'red' }, "unknown key 'color'"],
    [{ name: '' }, 'name'],
    [{ name: 'a/b' }, 'name'],
    [{ name: 'x'.repeat(129) }, 'name'],
    [{ name: 7 }, 'name'],
    [{ table: 'orders' }, 'NAMESPACE.TABLE'],
    [{ table: 'ns..t' }, "table 'ns..t': part 2 is empty"],
    [{ table: `ns.${'t'.repeat(300)}` }, 'part 2 is 300 bytes, over 255'],
    [{ table: 'n.'.repeat(600) + 't' }, 'is 1201 bytes, over 1024'],
    [{ source: undefined }, 'source'],
    [{ source: { type: 'ftp' } }, 'source.type'],
    [{ source: { type: 's3', location: 's3://bkt/p/' } }, "'s3' needs an S3 warehouse"],
    [{ source: { type: 's3', location: '/local/dir' } }, 'source.location'],
    [{ source: { type: 's3', location: 's3://b/p/' } }, 'source.location'],
    [{ source: { type: 's3', location: 's3://bkt/a/../b' } }, 'source.location'],
    [{ source: { type: 's3', location: 's3://bkt/p', path: '/x' } }, "unknown key 'source.path'"],
    [{ 'dead-letter': 's3://bkt/dl' }, 'dead-letter must be an absolute directory path on a warehouse on local files'],
    [{ source: { type: 'directory' } }, 'path'],
    [{ source: { type: 'directory', path: 'relative/dir' } }, 'source.path'],
    [{ source: { type: 'directory', path: '/a/../b' } }, 'source.path'],
    [{ source: { type: 'directory', path: '/a', glob: 'x/*.csv' } }, 'source.glob'],
    [{ source: { type: 'directory', path: '/a', extra: 1 } }, "unknown key 'source.extra'"],
    [{ format: undefined }, 'format is required'],
    [{ format: 'xml' }, 'format'],
    [{ format: 'parquet', mode: 'upsert' }, 'upsert takes csv or ndjson'],
    [{ mode: 'merge' }, 'mode'],
    [{ mode: 'upsert', 'create-table': true }, 'key is required'],
    [{ key: ['id'] }, 'key is only for mode upsert'],
    [{ mode: 'upsert', 'create-table': true, key: [] }, 'key must name 1 to 16 columns'],
    [{ mode: 'upsert', 'create-table': true, key: ['id', 'id'] }, 'key names a column twice'],
    [{ interval: 'soon' }, 'interval'],
    [{ interval: 'PT0S' }, 'interval'],
    [{ interval: 'P2D' }, 'interval'],
    [{ 'on-error': 'ignore' }, 'on-error'],
    [{ 'new-columns': 'add' }, 'new-columns'],
    [{ 'create-table': 'yes' }, 'create-table'],
    [{ batch: { 'max-objects': 0 } }, 'batch.max-objects'],
    [{ batch: { 'max-bytes': -1 } }, 'batch.max-bytes'],
    [{ batch: { 'max-age': 'x' } }, 'batch.max-age'],
    [{ batch: { size: 1 } }, "unknown key 'batch.size'"],
    [{ 'max-retries': 1000 }, 'max-retries'],
    [{ 'spool-max-bytes': 10 }, 'spool-max-bytes'],
    [{ 'dead-letter': 'rel' }, 'dead-letter'],
  ];
  for (const [over, word] of cases) {
    const body = good({ name: 'bad', ...over });
    for (const k of Object.keys(over)) if (over[k] === undefined) delete body[k];
    const res = await r('POST', F, body);
    expectError(res, 400, 'BadRequestException', word);
  }
  expectError(await r('POST', F, [1]), 400, 'BadRequestException');
  assert.deepEqual(expectJson(await r('GET', F), 200).feeds, [], 'nothing was created');
});
