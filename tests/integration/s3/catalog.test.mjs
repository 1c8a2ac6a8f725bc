// The catalog on an S3 warehouse, against moto_server with signature checks on:
// the probe on warehouse creation (and what it names when it fails), create,
// stage-create + assert-create commit, commits, register, location checks, drop
// with purge (batch deletes by the background job), and loadTable without object
// storage.  What Floe wrote is read back with the suite's own S3 client.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { request } from '../lib/harness.mjs';
import { uuidv7 } from '../tables/lib.mjs';
import { expectError, expectJson } from '../lib/checks.mjs';
import { startS3Catalog, s3Profile, createWarehouse, eventually, tmpDir, AK_ENV, SK_ENV, noS3 } from './lib.mjs';

let ctx = null;
const WH = 'lake';
const P = `/v1/${WH}`;
const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', type: 'long', required: false }] };

before(async () => {
  ctx = await startS3Catalog('s3cat');
});
after(async () => {
  if (ctx) await ctx.stop();
});

const skip = (t) => noS3(ctx, t);
const keys = async (prefix) => (await ctx.s3.list(ctx.bucket, prefix)).map((o) => o.key).sort();
const keyOf = (uri) => uri.replace(`s3://${ctx.bucket}/`, '');

test('creating an s3 warehouse probes the store and stores no secret', async (t) => {
  if (skip(t)) return;
  const res = await createWarehouse(ctx.base, WH, s3Profile(ctx.s3, ctx.bucket, 'wh'));
  const body = expectJson(res, 201, null);
  assert.equal(body['storage-profile'].location, `s3://${ctx.bucket}/wh`);
  assert.equal(body['storage-profile']['secret-access-key-env'], SK_ENV);
  // The probe's marker object is gone again.
  assert.deepEqual(await keys('wh/'), []);
  for (const r of [res, await request(ctx.base, 'GET', `/management/v1/warehouses/${WH}`),
    await request(ctx.base, 'GET', '/management/v1/warehouses'), await request(ctx.base, 'GET', '/metrics')]) {
    assert.ok(!r.text.includes(ctx.s3.secretAccessKey), `the secret key leaks in ${r.path}`);
  }
  assert.equal(expectJson(await request(ctx.base, 'POST', `${P}/namespaces`, { body: { namespace: ['ns'] } }), 200).namespace[0], 'ns');
});

test('a profile that cannot work is a 400 naming what failed', async (t) => {
  if (skip(t)) return;
  const dead = await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
  const base = s3Profile(ctx.s3, ctx.bucket, 'bad');
  const cases = [
    [{ ...base, location: 's3://no-such-bucket/wh' }, /NoSuchBucket/],
    [{ ...base, 'access-key-id-env': 'FLOE_TEST_UNSET_VAR' }, /FLOE_TEST_UNSET_VAR/],
    [{ ...base, endpoint: `http://127.0.0.1:${dead}` }, /cannot reach/],
    [{ ...base, 'secret-access-key-env': AK_ENV }, /SignatureDoesNotMatch/], // a wrong secret
    [{ ...base, 'access-key-id-env': SK_ENV }, /InvalidAccessKeyId/], // an unknown key id
    [{ ...base, 'secret-access-key': 'x' }, /secret-access-key.*refused/],
    [{ ...base, bucket: 'x' }, /unknown key 'bucket'/],
    [{ ...base, 'credential-lifetime': 'P1Y' }, /credential-lifetime/],
  ];
  let i = 0;
  for (const [profile, word] of cases) {
    const res = await createWarehouse(ctx.base, `bad${i++}`, profile);
    expectError(res, 400, 'BadRequestException', word);
    assert.ok(!res.text.includes(ctx.s3.secretAccessKey));
  }
  const list = expectJson(await request(ctx.base, 'GET', '/management/v1/warehouses'), 200, null);
  assert.deepEqual(list.warehouses.map((w) => w.name), [WH, 'default'].sort(), 'no failed warehouse was stored');
  assert.ok(!ctx.floe.logs().includes(ctx.s3.secretAccessKey), 'the secret key is never logged');
});

let created;
test('create writes the first metadata file to S3; loadTable returns it byte for byte', async (t) => {
  if (skip(t)) return;
  const cr = await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, { body: { name: 't', schema } });
  const r = expectJson(cr, 200);
  created = r;
  assert.equal(r.metadata.location, `s3://${ctx.bucket}/wh/ns/t`);
  assert.match(r['metadata-location'], /^s3:\/\/lake\/wh\/ns\/t\/metadata\/00000-[0-9a-f-]{36}\.metadata\.json$/);
  assert.deepEqual(JSON.parse((await ctx.s3.get(ctx.bucket, keyOf(r['metadata-location']))).toString()), r.metadata);
  assert.deepEqual(r.config ?? {}, {}, 'no credentials are vended without the header');
  const l = expectJson(await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/t`), 200);
  assert.equal(l['metadata-location'], r['metadata-location']);
  // without delegation a load (a miss, then hits served from the cache's block) is the
  // create's answer byte for byte; with it, the config names the store
  for (let i = 0; i < 3; i++) {
    const again = await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/t`);
    assert.equal(again.text, cr.text, `load ${i}: the create's bytes`);
  }
  const d = expectJson(await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/t`, {
    headers: { 'X-Iceberg-Access-Delegation': 'vended-credentials' } }), 200);
  assert.equal(d.config['s3.region'], 'us-east-1', JSON.stringify(d.config));
});

test('commits write new metadata files create-only; the old ones stay', async (t) => {
  if (skip(t)) return;
  let loc = created['metadata-location'];
  for (let i = 1; i <= 3; i++) {
    const r = expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables/t`, {
      body: {
        requirements: [{ type: 'assert-table-uuid', uuid: created.metadata['table-uuid'] }],
        updates: [{ action: 'set-properties', updates: { round: String(i) } }],
      },
    }), 200);
    assert.match(r['metadata-location'], new RegExp(`/metadata/0000${i}-`));
    assert.deepEqual(JSON.parse((await ctx.s3.get(ctx.bucket, keyOf(r['metadata-location']))).toString()), r.metadata);
    assert.equal(r.metadata.properties.round, String(i));
    loc = r['metadata-location'];
  }
  const files = await keys('wh/ns/t/metadata/');
  assert.equal(files.length, 4, files.join('\n'));
  assert.ok(files.includes(keyOf(loc)));
});

// A keyed commit's record names its metadata file: once the table has moved on, the
// replay reads that file back from S3 (signed), byte for byte.
test('a keyed commit replays from its S3 metadata file after a later commit', async (t) => {
  if (skip(t)) return;
  const tpath = `${P}/namespaces/ns/tables/t`;
  const body = JSON.stringify({
    requirements: [{ type: 'assert-table-uuid', uuid: created.metadata['table-uuid'] }],
    updates: [{ action: 'set-properties', updates: { keyed: 'yes' } }],
  });
  const headers = { 'Idempotency-Key': uuidv7(), 'Content-Type': 'application/json' };
  const first = await request(ctx.base, 'POST', tpath, { body, headers });
  assert.equal(first.status, 200, first.text);
  expectJson(await request(ctx.base, 'POST', tpath, {
    body: { requirements: [], updates: [{ action: 'set-properties', updates: { after: 'yes' } }] },
  }), 200);
  const again = await request(ctx.base, 'POST', tpath, { body, headers });
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.text, first.text, 'the first answer, read back from its file');
  assert.equal(again.headers.etag, first.headers.etag);
});

test('changing the profile probes it first; the root cannot move under namespaces', async (t) => {
  if (skip(t)) return;
  const prof = s3Profile(ctx.s3, ctx.bucket, 'wh');
  const put = (profile) => request(ctx.base, 'PUT', `/management/v1/warehouses/${WH}`, { body: { 'storage-profile': profile } });
  expectError(await put({ ...prof, 'secret-access-key-env': AK_ENV }), 400, 'BadRequestException', /SignatureDoesNotMatch/);
  expectError(await put({ ...prof, location: `s3://${ctx.bucket}/elsewhere` }), 409, null, /location cannot change/);
  expectError(await request(ctx.base, 'PUT', '/management/v1/warehouses/nope', { body: { 'storage-profile': prof } }),
    404, 'NoSuchWarehouseException');
  // Rotate to a credentials file: the keys now come from there, and commits use them.
  const dir = tmpDir('s3creds');
  const file = path.join(dir, 'credentials');
  fs.writeFileSync(file, `[default]\naws_access_key_id = ${ctx.s3.accessKeyId}\naws_secret_access_key = ${ctx.s3.secretAccessKey}\n`);
  const { 'access-key-id-env': _a, 'secret-access-key-env': _s, ...rest } = prof;
  const body = expectJson(await put({ ...rest, 'credentials-file': file }), 200, null);
  assert.equal(body['storage-profile']['credentials-file'], file);
  assert.ok(!JSON.stringify(body).includes(ctx.s3.secretAccessKey));
  expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables/t`, {
    body: { requirements: [], updates: [{ action: 'set-properties', updates: { rotated: 'yes' } }] },
  }), 200);
  // A broken file is refused by the probe, and the working profile stays.
  fs.writeFileSync(file, '[default]\naws_access_key_id = AKIANOPE\naws_secret_access_key = nope\n');
  expectError(await put({ ...rest, 'credentials-file': file }), 400, 'BadRequestException', /InvalidAccessKeyId/);
  fs.writeFileSync(file, `[default]\naws_access_key_id = ${ctx.s3.accessKeyId}\naws_secret_access_key = ${ctx.s3.secretAccessKey}\n`);
  expectJson(await put(prof), 200, null);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('stage-create writes nothing; the assert-create commit writes the table', async (t) => {
  if (skip(t)) return;
  const staged = expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, {
    body: { name: 'staged', schema, 'stage-create': true },
  }), 200);
  assert.ok(staged['metadata-location'] == null);
  assert.deepEqual(await keys('wh/ns/staged/'), [], 'a staged table has no objects yet');
  const m = staged.metadata;
  const r = expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables/staged`, {
    body: {
      requirements: [{ type: 'assert-create' }],
      updates: [
        { action: 'assign-uuid', uuid: m['table-uuid'] },
        { action: 'upgrade-format-version', 'format-version': 2 },
        { action: 'add-schema', schema: m.schemas[0], 'last-column-id': 1 },
        { action: 'set-current-schema', 'schema-id': -1 },
        { action: 'add-spec', spec: { 'spec-id': 0, fields: [] } },
        { action: 'set-default-spec', 'spec-id': -1 },
        { action: 'add-sort-order', 'sort-order': { 'order-id': 0, fields: [] } },
        { action: 'set-default-sort-order', 'sort-order-id': -1 },
        { action: 'set-location', location: m.location },
      ],
    },
  }), 200);
  assert.deepEqual(await keys('wh/ns/staged/'), [keyOf(r['metadata-location'])]);
});

test('register reads an S3 metadata file; locations outside the warehouse or overlapping are refused', async (t) => {
  if (skip(t)) return;
  // A copy of t's current metadata under another table location.
  const cur = expectJson(await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/t`), 200);
  const meta = { ...cur.metadata, location: `s3://${ctx.bucket}/wh/ns/copied`, 'table-uuid': '6c0b1a5e-1f9e-4c3a-9a53-6f3f1e2b7a10' };
  const key = 'wh/ns/copied/metadata/00007-6c0b1a5e-1f9e-4c3a-9a53-6f3f1e2b7a10.metadata.json';
  await ctx.s3.put(ctx.bucket, key, Buffer.from(JSON.stringify(meta)));
  const r = expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/register`, {
    body: { name: 'copied', 'metadata-location': `s3://${ctx.bucket}/${key}` },
  }), 200);
  assert.equal(r.metadata['table-uuid'], meta['table-uuid']);
  expectError(await request(ctx.base, 'POST', `${P}/namespaces/ns/register`, {
    body: { name: 'gone', 'metadata-location': `s3://${ctx.bucket}/wh/ns/gone/metadata/00000-x.metadata.json` },
  }), 400, 'BadRequestException', /register-table/);
  expectError(await request(ctx.base, 'POST', `${P}/namespaces/ns/register`, {
    body: { name: 'outside', 'metadata-location': `s3://other-bucket/${key}` },
  }), 400, 'BadRequestException', /outside the warehouse/);
  expectError(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, {
    body: { name: 'elsewhere', schema, location: 's3://other-bucket/x' },
  }), 400, 'BadRequestException', /inside the warehouse/);
  expectError(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, {
    body: { name: 'inside_t', schema, location: `s3://${ctx.bucket}/wh/ns/t/sub` },
  }), 400, 'BadRequestException');
});

test('concurrent creates and commits share the warehouse\'s connections safely', async (t) => {
  if (skip(t)) return;
  const names = Array.from({ length: 16 }, (_, i) => `par${i}`);
  const made = await Promise.all(names.map((name) => request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, { body: { name, schema } })));
  made.forEach((r) => expectJson(r, 200));
  const commits = await Promise.all(names.flatMap((name) => [1, 2].map((k) => request(ctx.base, 'POST', `${P}/namespaces/ns/tables/${name}`, {
    body: { requirements: [], updates: [{ action: 'set-properties', updates: { [`k${k}`]: 'v' } }] },
  }))));
  // Two commits on one table race for the row lock: both land (no requirement asserts).
  commits.forEach((r) => expectJson(r, 200));
  for (const name of names) {
    const files = await keys(`wh/ns/${name}/metadata/`);
    assert.equal(files.length, 3, `${name}: ${files}`);
  }
});

test('drop with purge deletes every object of the table (batch deletes), and only those', async (t) => {
  if (skip(t)) return;
  // A sibling whose name extends the dropped table's: t2 must survive t's purge.
  expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, { body: { name: 't2', schema } }), 200);
  // Extra objects under t/data/ so the purge has more than one batch entry to delete.
  // More than one listing page and one DeleteObjects batch (1000 keys each).
  for (let i = 0; i < 1010; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, k) => ctx.s3.put(ctx.bucket, `wh/ns/t/data/f-${i + k}.parquet`, Buffer.from('x'))));
  }
  assert.ok((await keys('wh/ns/t/')).length >= 1014);
  const res = await request(ctx.base, 'DELETE', `${P}/namespaces/ns/tables/t?purgeRequested=true`);
  assert.equal(res.status, 204, res.text);
  const left = await eventually(async () => ((await keys('wh/ns/t/')).length === 0 ? [] : null));
  assert.deepEqual(left, [], 'the purge job deleted the table\'s objects');
  assert.equal((await keys('wh/ns/t2/')).length, 1, 'the sibling t2 is untouched');
});

test('loadTable never touches object storage: it answers with the store gone', async (t) => {
  if (skip(t)) return;
  const before = expectJson(await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/t2`), 200);
  await ctx.s3.stop();
  const l = expectJson(await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/t2`), 200);
  assert.deepEqual(l, before);
  // A commit needs the store: it fails, with a 5xx, naming it.
  const c = await request(ctx.base, 'POST', `${P}/namespaces/ns/tables/t2`, {
    body: { requirements: [], updates: [{ action: 'set-properties', updates: { k: 'v' } }] },
  });
  assert.ok(c.status >= 500, c.text);
  assert.match(c.json.error.message, /cannot reach/);
});
