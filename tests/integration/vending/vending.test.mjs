// Credential vending and remote signing against moto_server with signature checks
// on (issue 7). Floe holds the keys of an IAM user; warehouse "lake" has an STS
// role, warehouse "plain" has none. moto enforces the role's policy (objects under
// warehouse/lake/ns/t only) but not session policies, so "refused outside" is
// proven through the role here and the session policy itself byte for byte in
// tests/unit/storage_cred/test_policy.c. Every response is checked against the
// upstream spec (LoadTableResult, LoadCredentialsResponse, RemoteSignResult,
// IcebergErrorResponse).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { freshDatabase, startFloe, request, encodeNs, runFloe, tmpDir, psql } from '../lib/harness.mjs';
import { uuidv7 } from '../tables/lib.mjs';
import { expectJson, expectError } from '../lib/checks.mjs';
import { validate } from '../lib/spec.mjs';
import * as prom from '../lib/prom.mjs';
import { motoAvailable, startMoto, awsRequest, xmlAll, NO_S3 } from '../lib/moto.mjs';

const skip = motoAvailable() ? false : NO_S3;
if (skip) console.log(NO_S3);

let moto;
let floe;
let base;
let dbUrl;
const P = {}; // warehouse name -> /v1/<prefix>
const VEND = { 'X-Iceberg-Access-Delegation': 'vended-credentials' };
const SIGN = { 'X-Iceberg-Access-Delegation': 'remote-signing' };

const r = (method, p, opts) => request(base, method, p, opts);
const tpath = (wh, ns, t) => `${P[wh]}/namespaces/${encodeNs(ns)}/tables/${encodeURIComponent(t)}`;
const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', type: 'long', required: false }] };

async function metric(name) {
  const res = await r('GET', '/metrics');
  assert.equal(res.status, 200);
  return prom.sum(prom.parse(res.text), name);
}

// What a client holding these credentials sees: [{ok, code?, body?, keys?}].
async function s3ops(creds, ops) {
  const out = [];
  for (const o of ops) {
    const req = { endpoint: moto.endpoint, ...creds };
    let res;
    if (o.op === 'list') {
      res = await awsRequest({ ...req, path: `/${o.bucket}`, query: { 'list-type': '2', prefix: o.prefix } });
    } else {
      const method = { put: 'PUT', get: 'GET', delete: 'DELETE' }[o.op];
      res = await awsRequest({
        ...req,
        method,
        path: `/${o.bucket}/${o.key}`,
        body: o.op === 'put' ? (o.body ?? 'x') : undefined,
        headers: o.op === 'put' ? { 'content-type': 'application/octet-stream' } : {},
      });
    }
    if (res.status >= 300) out.push({ ok: false, code: xmlAll(res.text, 'Code')[0] });
    else if (o.op === 'get') out.push({ ok: true, body: res.text });
    else if (o.op === 'list') out.push({ ok: true, keys: xmlAll(res.text, 'Key') });
    else out.push({ ok: true });
  }
  return out;
}

function credsOf(cfg) {
  return {
    accessKeyId: cfg['s3.access-key-id'],
    secretAccessKey: cfg['s3.secret-access-key'],
    sessionToken: cfg['s3.session-token'],
  };
}

// The role Floe assumes: objects under warehouse/lake/ns/t only (moto enforces
// role policies, not session policies).
async function createRole() {
  const iam = (params) =>
    moto.request({
      service: 'iam',
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...params, Version: '2010-05-08' }).toString(),
    });
  const role = await iam({
    Action: 'CreateRole',
    RoleName: 'vend',
    AssumeRolePolicyDocument: JSON.stringify({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Principal: { AWS: '*' }, Action: 'sts:AssumeRole' }],
    }),
  });
  assert.equal(role.status, 200, role.text);
  const pol = await iam({
    Action: 'PutRolePolicy',
    RoleName: 'vend',
    PolicyName: 'tables',
    PolicyDocument: JSON.stringify({
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], Resource: ['arn:aws:s3:::warehouse/lake/ns/t/*'] },
        { Effect: 'Allow', Action: ['s3:ListBucket'], Resource: ['arn:aws:s3:::warehouse'] },
      ],
    }),
  });
  assert.equal(pol.status, 200, pol.text);
  return xmlAll(role.text, 'Arn')[0];
}

before(async () => {
  if (skip) return;
  moto = await startMoto({ tag: 'vending' });
  await moto.createBucket('warehouse');
  await moto.createBucket('other');
  const roleArn = await createRole();
  const db = await freshDatabase('vending');
  dbUrl = db.url;
  floe = await startFloe({
    databaseUrl: db.url,
    // every body may be coded, so that a response carrying a secret is seen not to be
    args: ['--response-compress-min-bytes', '1'],
    env: { FLOE_S3_KEY: moto.accessKeyId, FLOE_S3_SECRET: moto.secretAccessKey },
  });
  base = floe.baseUrl;
  const profile = (location, extra) => ({
    type: 's3',
    location,
    endpoint: moto.endpoint,
    region: 'us-east-1',
    'path-style-access': true,
    'access-key-id-env': 'FLOE_S3_KEY',
    'secret-access-key-env': 'FLOE_S3_SECRET',
    ...extra,
  });
  const whs = {
    lake: profile('s3://warehouse/lake', {
      'sts-role-arn': roleArn,
      'sts-endpoint': moto.endpoint,
      'credential-lifetime': 'PT15M',
      'remote-signing': true,
    }),
    plain: profile('s3://warehouse/plain', {}),
  };
  for (const [name, sp] of Object.entries(whs)) {
    const res = await r('POST', '/management/v1/warehouses', { body: { name, 'storage-profile': sp } });
    assert.equal(res.status, 201, `create warehouse ${name}: ${res.status} ${res.text}`);
    const cfg = expectJson(await r('GET', `/v1/config?warehouse=${name}`), 200, 'CatalogConfig');
    P[name] = `/v1/${encodeURIComponent(cfg.overrides.prefix)}`;
    expectJson(await r('POST', `${P[name]}/namespaces`, { body: { namespace: ['ns'], properties: {} } }), 200);
  }
  for (const t of ['t', 'u', 't-2']) {
    expectJson(await r('POST', `${P.lake}/namespaces/ns/tables`, { body: { name: t, schema } }), 200, 'LoadTableResult');
  }
});

after(async () => {
  await floe?.stop();
  await moto?.stop();
});

test('createTable with vended-credentials: storage-credentials and config carry the same STS keys', { skip }, async () => {
  const before = await metric('floe_sts_assume_role_total');
  const res = expectJson(
    await r('POST', `${P.lake}/namespaces/ns/tables`, { headers: VEND, body: { name: 'v', schema } }),
    200,
    'LoadTableResult',
  );
  assert.equal(res.metadata.location, 's3://warehouse/lake/ns/v');
  assert.equal(res['storage-credentials'].length, 1);
  const sc = res['storage-credentials'][0];
  assert.equal(sc.prefix, res.metadata.location);
  for (const cfg of [sc.config, res.config]) {
    assert.match(cfg['s3.access-key-id'], /^ASIA/);
    assert.ok(cfg['s3.secret-access-key'].length > 10);
    assert.ok(cfg['s3.session-token'].length > 10);
    const exp = Number(cfg['s3.session-token-expires-at-ms']);
    assert.ok(exp > Date.now() + 10 * 60 * 1000 && exp < Date.now() + 16 * 60 * 1000, `expires-at ${exp}`);
    assert.equal(cfg['s3.endpoint'], moto.endpoint);
    assert.equal(cfg['s3.region'], 'us-east-1');
    assert.equal(cfg['client.region'], 'us-east-1');
    assert.equal(cfg['s3.path-style-access'], 'true');
  }
  assert.deepEqual(credsOf(sc.config), credsOf(res.config));
  assert.equal(await metric('floe_sts_assume_role_total'), before + 1);
  // Stage-create vends too (DuckDB writes before the first commit).
  const staged = expectJson(
    await r('POST', `${P.lake}/namespaces/ns/tables`, { headers: VEND, body: { name: 'staged', schema, 'stage-create': true } }),
    200,
    'LoadTableResult',
  );
  assert.equal(staged['storage-credentials'][0].prefix, 's3://warehouse/lake/ns/staged');
  // Without the header: no delegation at all.
  const bare = expectJson(await r('GET', tpath('lake', ['ns'], 't')), 200, 'LoadTableResult');
  assert.equal(bare['storage-credentials'], undefined);
  assert.deepEqual(bare.config, {});
});

test('a response carrying vended keys is never content-coded; the same load without them is', { skip }, async () => {
  // A compressed secret beside text an attacker may choose leaks through the length
  // (BREACH): whatever the client accepts, such a response goes out as it is.
  const AE = { 'Accept-Encoding': 'gzip, deflate, zstd' };
  const properties = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`p.${i}`, 'x'.repeat(40)]));
  expectJson(await r('POST', `${P.lake}/namespaces/ns/tables`, { body: { name: 'wide', schema, properties } }), 200, 'LoadTableResult');
  const vended = await r('GET', tpath('lake', ['ns'], 'wide'), { headers: { ...VEND, ...AE } });
  const v = expectJson(vended, 200, 'LoadTableResult');
  assert.ok(v['storage-credentials']?.length === 1, 'credentials were vended');
  assert.equal(vended.headers['content-encoding'], undefined, 'vended keys are never coded');
  const credRes = await r('GET', `${tpath('lake', ['ns'], 'wide')}/credentials`, { headers: AE });
  assert.ok(expectJson(credRes, 200, 'LoadCredentialsResponse')['storage-credentials'].length === 1);
  assert.equal(credRes.headers['content-encoding'], undefined, 'GET …/credentials is never coded');
  const bare = await r('GET', tpath('lake', ['ns'], 'wide'), { headers: AE });
  expectJson(bare, 200, 'LoadTableResult');
  assert.equal(bare.headers['content-encoding'], 'zstd', 'the same table without keys is coded');
  assert.deepEqual(JSON.parse(bare.text).metadata, v.metadata);
});

test('a large load with signer settings is coded by a worker, whatever the version\'s kept copy', { skip }, async () => {
  // Its answer is made per request around the metadata (config is not empty), so the kept
  // copy of the cache's block says nothing about it: it is coded by a worker, never sent
  // plain because an HTTP thread may not code 128 KiB.
  const ZSTD = { 'Accept-Encoding': 'zstd' };
  const properties = Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`p.${i}`, `v${i}`.padEnd(200, 'x')]));
  expectJson(await r('POST', `${P.lake}/namespaces/ns/tables`, { body: { name: 'large', schema, properties } }), 200, 'LoadTableResult');
  const path = tpath('lake', ['ns'], 'large');
  for (let i = 0; i < 2; i++) { // the second is sent from the kept copy
    const bare = await r('GET', path, { headers: ZSTD });
    assert.equal(bare.headers['content-encoding'], 'zstd');
    assert.ok(bare.text.length > 150000, `${bare.text.length} bytes`);
  }
  for (const refs of ['', '?snapshots=refs']) {
    const signing = await r('GET', `${path}${refs}`, { headers: { ...SIGN, ...ZSTD } });
    assert.equal(signing.headers['content-encoding'], 'zstd', `signer settings${refs}: coded`);
    const res = expectJson(signing, 200, 'LoadTableResult');
    assert.equal(res.config['s3.remote-signing-enabled'], 'true');
  }
});

test('vended keys never reach PostgreSQL: an idempotent replay answers without them', { skip }, async () => {
  const key = uuidv7();
  const body = { name: 'idem', schema };
  const first = await r('POST', `${P.lake}/namespaces/ns/tables`, { headers: { ...VEND, 'Idempotency-Key': key }, body });
  const a = expectJson(first, 200, 'LoadTableResult');
  const secret = a['storage-credentials'][0].config['s3.secret-access-key'];
  assert.ok(secret);
  const again = await r('POST', `${P.lake}/namespaces/ns/tables`, { headers: { ...VEND, 'Idempotency-Key': key }, body });
  const b = expectJson(again, 200, 'LoadTableResult');
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(b['metadata-location'], a['metadata-location']);
  assert.equal(b['storage-credentials'], undefined);
  assert.equal(b.config['s3.secret-access-key'], undefined);
  assert.equal(b.config['s3.endpoint'], moto.endpoint);
  const stored = (s) =>
    psql(dbUrl, `SELECT count(*) FROM idempotency_record WHERE position('\\x${Buffer.from(s).toString('hex')}'::bytea in body) > 0`).trim();
  assert.equal(stored(a['metadata-location']), '1', 'the record was found by its content');
  assert.equal(stored(secret), '0', 'the vended secret is not in PostgreSQL');
  assert.equal(stored(a.config['s3.session-token']), '0', 'nor the session token');
});

test('vended credentials write inside their table and are refused outside it', { skip }, async () => {
  const res = expectJson(await r('GET', tpath('lake', ['ns'], 't'), { headers: VEND }), 200, 'LoadTableResult');
  const creds = credsOf(res['storage-credentials'][0].config);
  const out = await s3ops(creds, [
    { op: 'put', bucket: 'warehouse', key: 'lake/ns/t/data/inside.txt', body: 'inside' },
    { op: 'get', bucket: 'warehouse', key: 'lake/ns/t/data/inside.txt' },
    { op: 'put', bucket: 'warehouse', key: 'lake/ns/u/data/x.txt' }, // another table
    { op: 'put', bucket: 'warehouse', key: 'lake/ns/t-2/data/x.txt' }, // a sibling prefix
    { op: 'put', bucket: 'other', key: 'lake/ns/t/data/x.txt' }, // another bucket
    { op: 'get', bucket: 'warehouse', key: 'lake/ns/u/metadata/x' },
    { op: 'delete', bucket: 'warehouse', key: 'lake/ns/t/data/inside.txt' },
  ]);
  assert.deepEqual(out[0], { ok: true });
  assert.deepEqual(out[1], { ok: true, body: 'inside' });
  for (const i of [2, 3, 4, 5]) assert.deepEqual(out[i], { ok: false, code: 'AccessDenied' }, `op ${i}`);
  assert.deepEqual(out[6], { ok: true });
  // A wrong secret is refused by the store: the keys are checked, not decorative.
  const wrong = creds.secretAccessKey[0] === 'x' ? 'y' : 'x';
  const bad = await s3ops({ ...creds, secretAccessKey: wrong + creds.secretAccessKey.slice(1) }, [
    { op: 'put', bucket: 'warehouse', key: 'lake/ns/t/data/bad.txt' },
  ]);
  assert.equal(bad[0].ok, false);
});

test('loads reuse cached credentials; GET …/credentials answers a LoadCredentialsResponse', { skip }, async () => {
  const a = expectJson(await r('GET', tpath('lake', ['ns'], 'u'), { headers: VEND }), 200, 'LoadTableResult');
  const calls = await metric('floe_sts_assume_role_total');
  const b = expectJson(await r('GET', tpath('lake', ['ns'], 'u'), { headers: VEND }), 200, 'LoadTableResult');
  assert.equal(await metric('floe_sts_assume_role_total'), calls, 'second load is a cache hit');
  assert.deepEqual(credsOf(a.config), credsOf(b.config));
  const c = expectJson(await r('GET', `${tpath('lake', ['ns'], 't')}/credentials`), 200, 'LoadCredentialsResponse');
  assert.equal(c['storage-credentials'].length, 1);
  assert.equal(c['storage-credentials'][0].prefix, 's3://warehouse/lake/ns/t');
  const out = await s3ops(credsOf(c['storage-credentials'][0].config), [
    { op: 'put', bucket: 'warehouse', key: 'lake/ns/t/data/refreshed.txt', body: 'r' },
    { op: 'list', bucket: 'warehouse', prefix: 'lake/ns/t/data/' },
  ]);
  assert.deepEqual(out[0], { ok: true });
  assert.ok(out[1].keys.includes('lake/ns/t/data/refreshed.txt'));
  assert.ok((await metric('floe_credentials_vended_total')) >= 4);
});

test('a warehouse without STS: loads answer without credentials, GET …/credentials is a 400', { skip }, async () => {
  const before = await metric('floe_credential_vending_unavailable_total');
  const created = expectJson(
    await r('POST', `${P.plain}/namespaces/ns/tables`, { headers: VEND, body: { name: 'p', schema } }),
    200,
    'LoadTableResult',
  );
  assert.equal(created['storage-credentials'], undefined);
  assert.equal(created.config['s3.access-key-id'], undefined);
  assert.equal(created.config['s3.endpoint'], moto.endpoint);
  expectJson(await r('GET', tpath('plain', ['ns'], 'p'), { headers: VEND }), 200, 'LoadTableResult');
  assert.equal(await metric('floe_credential_vending_unavailable_total'), before + 2);
  const warned = floe.logs().split('\n').filter((l) => l.includes('s3://warehouse/plain/ns/p') && l.includes('sts-role-arn'));
  assert.equal(warned.length, 1, 'logged once per table');
  expectError(await r('GET', `${tpath('plain', ['ns'], 'p')}/credentials`), 400, 'BadRequestException', 'sts-role-arn');
  // Remote signing is not enabled there either.
  expectError(
    await r('POST', `${tpath('plain', ['ns'], 'p')}/sign`, {
      body: { region: 'us-east-1', method: 'GET', uri: `${moto.endpoint}/warehouse/plain/ns/p/x`, headers: {} },
    }),
    403,
    'ForbiddenException',
    'remote signing is not enabled',
  );
  // No secret in any log line.
  assert.ok(!floe.logs().includes(moto.secretAccessKey));
});

async function signed(route, method, uri, headers = {}, body) {
  const req = { region: 'us-east-1', method, uri, headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])) };
  if (body !== undefined) req.body = body;
  const res = await r('POST', route, { body: req, headers: { 'Accept-Encoding': 'gzip, deflate, zstd' } });
  const out = expectJson(res, 200, 'RemoteSignResult');
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers['content-encoding'], undefined, 'a signature is never coded');
  assert.equal(out.uri, uri);
  const h = { ...headers };
  for (const [k, v] of Object.entries(out.headers)) h[k] = v.join(', ');
  return h;
}

test('remote signing: signer settings in config, and a request Floe signed is accepted by moto', { skip }, async () => {
  const res = expectJson(await r('GET', tpath('lake', ['ns'], 't'), { headers: SIGN }), 200, 'LoadTableResult');
  assert.equal(res.config['s3.remote-signing-enabled'], 'true');
  assert.equal(res.config['s3.signer.uri'], base);
  assert.equal(res.config['s3.signer.endpoint'], `${P.lake.slice(1)}/namespaces/ns/tables/t/sign`);
  assert.equal(res['storage-credentials'], undefined, 'remote-signing alone vends no keys');
  const route = `/${res.config['s3.signer.endpoint']}`;
  const uri = `${moto.endpoint}/warehouse/lake/ns/t/data/signed.txt`;
  let h = await signed(route, 'PUT', uri, { 'content-type': 'text/plain' });
  let put = await fetch(uri, { method: 'PUT', headers: h, body: 'signed by floe' });
  assert.equal(put.status, 200, await put.text());
  h = await signed(route, 'GET', uri);
  const got = await fetch(uri, { headers: h });
  assert.equal(got.status, 200);
  assert.equal(await got.text(), 'signed by floe');
  // The signature binds the key: reusing it for another object is refused by moto.
  const other = await fetch(`${moto.endpoint}/warehouse/lake/ns/u/data/stolen.txt`, { method: 'PUT', headers: h, body: 'x' });
  assert.equal(other.status, 403);
  // DeleteObjects with keys inside, its body bound by x-amz-content-sha256.
  const xml = '<Delete><Object><Key>lake/ns/t/data/signed.txt</Key></Object></Delete>';
  const md5 = crypto.createHash('md5').update(xml).digest('base64');
  h = await signed(route, 'POST', `${moto.endpoint}/warehouse?delete`, { 'content-md5': md5, 'content-type': 'application/xml' }, xml);
  const del = await fetch(`${moto.endpoint}/warehouse?delete`, { method: 'POST', headers: h, body: xml });
  assert.equal(del.status, 200, await del.text());
  const gone = await fetch(uri, { headers: await signed(route, 'GET', uri) });
  assert.equal(gone.status, 404);
  // The signature covers the body that was checked: its SHA-256 is the signed
  // x-amz-content-sha256 (S3 rejects another body; moto does not check it, so the
  // binding is asserted here), and a client hash for another body is refused.
  assert.equal(h['x-amz-content-sha256'], crypto.createHash('sha256').update(xml).digest('hex'));
  assert.match(h.Authorization, /SignedHeaders=[^,]*content-md5;[^,]*x-amz-content-sha256/);
  const evil = '<Delete><Object><Key>lake/ns/u/data/x</Key></Object></Delete>';
  expectError(
    await r('POST', route, {
      body: {
        region: 'us-east-1',
        method: 'POST',
        uri: `${moto.endpoint}/warehouse?delete`,
        headers: { 'x-amz-content-sha256': [crypto.createHash('sha256').update(evil).digest('hex')] },
        body: xml,
      },
    }),
    403,
    'ForbiddenException',
    'x-amz-content-sha256',
  );
  // A sub-resource name the store decodes ("%64elete" is "delete") is judged by the
  // same body, and so bound to it: an unsigned payload would let another body through.
  expectError(
    await r('POST', route, {
      body: {
        region: 'us-east-1',
        method: 'POST',
        uri: `${moto.endpoint}/warehouse?%64elete`,
        headers: { 'x-amz-content-sha256': ['UNSIGNED-PAYLOAD'] },
        body: xml,
      },
    }),
    403,
    'ForbiddenException',
    'x-amz-content-sha256',
  );
  h = await signed(route, 'POST', `${moto.endpoint}/warehouse?%64elete`, {}, xml);
  assert.equal(h['x-amz-content-sha256'], crypto.createHash('sha256').update(xml).digest('hex'));
});

test('a signing request with an Idempotency-Key is signed each time and stored nowhere', { skip }, async () => {
  const res = expectJson(await r('GET', tpath('lake', ['ns'], 't'), { headers: SIGN }), 200, 'LoadTableResult');
  const route = `/${res.config['s3.signer.endpoint']}`;
  const uri = `${moto.endpoint}/warehouse/lake/ns/t/data/keyed.txt`;
  const key = uuidv7();
  const body = { region: 'us-east-1', method: 'GET', uri, headers: {} };
  for (const path of [route, '/v1/aws/s3/sign']) {
    const first = await r('POST', path, { headers: { 'Idempotency-Key': key }, body });
    const a = expectJson(first, 200, 'RemoteSignResult');
    const again = await r('POST', path, { headers: { 'Idempotency-Key': key }, body });
    expectJson(again, 200, 'RemoteSignResult');
    assert.equal(again.headers['idempotent-replayed'], undefined, `${path}: signed again, not replayed`);
    assert.ok(a.headers.Authorization?.[0], `${path}: signed`);
  }
  assert.equal(psql(dbUrl, `SELECT count(*) FROM idempotency_record WHERE key = '${key}'`).trim(), '0', 'no record under the key');
});

test('remote signing refuses every escape with 403', { skip }, async () => {
  const route = `${tpath('lake', ['ns'], 't')}/sign`;
  const ep = moto.endpoint;
  const host = new URL(ep).host;
  const cases = [
    ['another bucket', 'GET', `${ep}/other/lake/ns/t/data/a`],
    ['another table', 'GET', `${ep}/warehouse/lake/ns/u/data/a`],
    ['a sibling prefix', 'PUT', `${ep}/warehouse/lake/ns/t-2/data/a`],
    ['dot-dot', 'GET', `${ep}/warehouse/lake/ns/t/../u/data/a`],
    ['encoded dot-dot', 'GET', `${ep}/warehouse/lake/ns/t/%2E%2E/u/data/a`],
    ['encoded slash', 'GET', `${ep}/warehouse/lake/ns/t/..%2F..%2Fu/data/a`],
    ['encoded lower-case slash', 'GET', `${ep}/warehouse/lake/ns/t/a%2fb`],
    ['encoded backslash', 'GET', `${ep}/warehouse/lake/ns/t/..%5C..%5Cu/a`],
    ['double slash', 'GET', `${ep}/warehouse//lake/ns/t/data/a`],
    ['virtual-host on a path-style store', 'GET', `http://warehouse.${host}/lake/ns/t/data/a`],
    ['another host', 'GET', `http://localhost:1/warehouse/lake/ns/t/data/a`],
    ['bucket-wide listing', 'GET', `${ep}/warehouse?list-type=2`],
    ['listing of a sibling', 'GET', `${ep}/warehouse?list-type=2&prefix=lake/ns/t`],
    ['an ACL change', 'PUT', `${ep}/warehouse/lake/ns/t/data/a?acl`],
    ['a method it does not sign', 'PATCH', `${ep}/warehouse/lake/ns/t/data/a`],
    ['deleting the bucket', 'DELETE', `${ep}/warehouse`],
  ];
  for (const [what, method, uri] of cases) {
    const res = await r('POST', route, { body: { region: 'us-east-1', method, uri, headers: {} } });
    try {
      expectError(res, 403, 'ForbiddenException');
    } catch (e) {
      e.message = `${what}: ${e.message}`;
      throw e;
    }
  }
  const xmlOut = '<Delete><Object><Key>lake/ns/t/data/a</Key></Object><Object><Key>lake/ns/u/data/b</Key></Object></Delete>';
  expectError(
    await r('POST', route, { body: { region: 'us-east-1', method: 'POST', uri: `${ep}/warehouse?delete`, headers: {}, body: xmlOut } }),
    403,
    'ForbiddenException',
    'DeleteObjects key',
  );
  // A key this check's reader would not see, but a namespace-aware store would.
  const xmlPrefixed = '<Delete><Object><Key>lake/ns/t/data/a</Key></Object><Object><s3:Key>lake/ns/u/data/b</s3:Key></Object></Delete>';
  expectError(
    await r('POST', route, { body: { region: 'us-east-1', method: 'POST', uri: `${ep}/warehouse?delete`, headers: {}, body: xmlPrefixed } }),
    403,
    'ForbiddenException',
    'plain elements',
  );
  // Two list prefixes or two copy sources: the store may take either.
  expectError(
    await r('POST', route, {
      body: { region: 'us-east-1', method: 'GET', uri: `${ep}/warehouse?list-type=2&prefix=lake/ns/t/&prefix=lake/ns/u/`, headers: {} },
    }),
    403,
    'ForbiddenException',
    'repeated',
  );
  expectError(
    await r('POST', route, {
      body: {
        region: 'us-east-1',
        method: 'PUT',
        uri: `${ep}/warehouse/lake/ns/t/data/c`,
        headers: { 'x-amz-copy-source': ['warehouse/lake/ns/t/data/a', 'warehouse/lake/ns/u/data/secret'] },
      },
    }),
    403,
    'ForbiddenException',
    'repeated',
  );
  expectError(
    await r('POST', route, {
      body: { region: 'us-east-1', method: 'PUT', uri: `${ep}/warehouse/lake/ns/t/data/c`, headers: { 'x-amz-copy-source': ['warehouse/lake/ns/u/data/secret'] } },
    }),
    403,
    'ForbiddenException',
    'copy-source',
  );
  assert.ok((await metric('floe_remote_sign_requests_total')) >= cases.length + 2);
  // Bounded: 48 headers of 8 values each is more than the signer takes.
  const many = Object.fromEntries(Array.from({ length: 48 }, (_, i) => [`x-amz-meta-h${i}`, Array(8).fill('v')]));
  expectError(
    await r('POST', route, { body: { region: 'us-east-1', method: 'GET', uri: `${ep}/warehouse/lake/ns/t/data/a`, headers: many } }),
    400,
    'BadRequestException',
    'header values',
  );
});

test('POST /v1/aws/s3/sign (PyIceberg) finds the table by the object it names', { skip }, async () => {
  const uri = `${moto.endpoint}/warehouse/lake/ns/t/data/legacy.txt`;
  const h = await signed('/v1/aws/s3/sign', 'PUT', uri, { 'content-type': 'text/plain' });
  const put = await fetch(uri, { method: 'PUT', headers: h, body: 'legacy' });
  assert.equal(put.status, 200, await put.text());
  for (const bad of [
    `${moto.endpoint}/warehouse/lake/ns/nosuch/x`, // in no table
    `${moto.endpoint}/other/lake/ns/t/x`, // another bucket
    `${moto.endpoint}/warehouse/lake/ns/t/%2E%2E/u/x`, // dressed-up escape
  ]) {
    expectError(
      await r('POST', '/v1/aws/s3/sign', { body: { region: 'us-east-1', method: 'GET', uri: bad, headers: {} } }),
      403,
      'ForbiddenException',
    );
  }
  validate('IcebergErrorResponse', (await r('POST', '/v1/aws/s3/sign', { body: { region: 'us-east-1' } })).json);
});

test('floe ingest --catalog-uri writes an S3 table with the credentials the catalog vends', { skip }, async () => {
  const dir = tmpDir('vend-ingest');
  const csv = path.join(dir, 'rows.csv');
  fs.writeFileSync(csv, 'id\n1\n2\n3\n');
  const credRoute = '/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials';
  const refreshes = async () =>
    prom.sum(prom.parse((await r('GET', '/metrics')).text), 'floe_http_requests_total', { route: credRoute });
  const before = await refreshes();
  // --credential-refresh longer than the 15-minute lifetime: the run refreshes
  // through GET …/credentials before it commits.
  const run = (table) =>
    runFloe(['ingest', '--catalog-uri', base, '--warehouse', 'lake', '--table', `ns.${table}`,
      '--credential-refresh', '1h', '--log-level', 'error', csv], { timeoutMs: 120000 });
  const ok = run('t');
  assert.equal(ok.code, 0, `${ok.stdout}\n${ok.stderr}`);
  assert.ok((await refreshes()) > before, 'vended credentials were refreshed via GET …/credentials');
  const t = expectJson(await r('GET', tpath('lake', ['ns'], 't')), 200, 'LoadTableResult');
  const snap = t.metadata.snapshots.find((s) => s['snapshot-id'] === t.metadata['current-snapshot-id']);
  assert.equal(snap.summary['added-records'], '3');
  const objects = await moto.list('warehouse', 'lake/ns/t/');
  assert.ok(objects.some((o) => /^lake\/ns\/t\/data\/.*\.parquet$/.test(o.key)), JSON.stringify(objects));
  assert.ok(objects.some((o) => o.key === snap['manifest-list'].replace('s3://warehouse/', '')));
  // Table u lies outside what the role (and so the vended keys) may write: the
  // run fails at the store, which proves the keys are the vended ones.
  const denied = run('u');
  assert.notEqual(denied.code, 0);
  assert.match(denied.stderr + denied.stdout, /AccessDenied|access denied/i);
  // --warehouse selects the warehouse over REST: an unknown one is named.
  const none = runFloe(['ingest', '--catalog-uri', base, '--warehouse', 'nosuch', '--table', 'ns.t', csv]);
  assert.notEqual(none.code, 0);
  assert.match(none.stderr + none.stdout, /nosuch/);
});
