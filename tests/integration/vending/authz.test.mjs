// Remote signing follows authorization (issues 7 and 8): with --auth token, a reader may
// have GETs signed but never a PUT or DELETE, a writer may write inside the table, and a
// principal without a grant on the table gets nothing signed -- on the table's sign route
// and on PyIceberg's legacy POST /v1/aws/s3/sign, which finds the table by the object.
// Signed requests are sent to moto_server with signature checks on.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../lib/harness.mjs';
import { expectJson, expectError } from '../lib/checks.mjs';
import { motoAvailable, startMoto, NO_S3 } from '../lib/moto.mjs';
import { startAuthFloe, tokenFor, principal, bearer, assertNoLeaks, ADMIN_ID, ADMIN_SECRET } from '../auth/lib.mjs';

const skip = motoAvailable() ? false : NO_S3;
if (skip) console.log(NO_S3);

let moto;
let env;
let prefix;
const tok = {};
const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', type: 'long', required: false }] };

before(async () => {
  if (skip) return;
  moto = await startMoto({ tag: 'vend_authz' });
  await moto.createBucket('warehouse');
  env = await startAuthFloe({
    tag: 'vend_authz',
    env: { FLOE_S3_KEY: moto.accessKeyId, FLOE_S3_SECRET: moto.secretAccessKey },
  });
  tok.admin = await tokenFor(env.base, ADMIN_ID, ADMIN_SECRET);
  const h = bearer(tok.admin);
  const wh = await request(env.base, 'POST', '/management/v1/warehouses', {
    headers: h,
    body: {
      name: 'lake',
      'storage-profile': {
        type: 's3',
        location: 's3://warehouse/lake',
        endpoint: moto.endpoint,
        region: 'us-east-1',
        'path-style-access': true,
        'access-key-id-env': 'FLOE_S3_KEY',
        'secret-access-key-env': 'FLOE_S3_SECRET',
        'remote-signing': true,
      },
    },
  });
  assert.equal(wh.status, 201, wh.text);
  const cfg = expectJson(await request(env.base, 'GET', '/v1/config?warehouse=lake', { headers: h }), 200, 'CatalogConfig');
  prefix = `/v1/${encodeURIComponent(cfg.overrides.prefix)}`;
  expectJson(await request(env.base, 'POST', `${prefix}/namespaces`, { headers: h, body: { namespace: ['ns'] } }), 200);
  expectJson(await request(env.base, 'POST', `${prefix}/namespaces/ns/tables`, { headers: h, body: { name: 't', schema } }), 200);
  tok.reader = (await principal(env.base, tok.admin, 'r1', ['reader'])).token;
  tok.writer = (await principal(env.base, tok.admin, 'w1', ['writer'])).token;
  tok.norole = (await principal(env.base, tok.admin, 'n1', [])).token;
});

after(async () => {
  if (env) await assertNoLeaks(env.floe, tok.admin);
  await env?.floe.stop();
  await moto?.stop();
});

const sign = (who, route, method, uri) =>
  request(env.base, 'POST', route, {
    headers: bearer(tok[who]),
    body: { region: 'us-east-1', method, uri, headers: { 'content-type': ['text/plain'] } },
  });

async function sendSigned(res, method, uri, body) {
  const out = expectJson(res, 200, 'RemoteSignResult');
  const headers = { 'content-type': 'text/plain' };
  for (const [k, v] of Object.entries(out.headers)) headers[k] = v.join(', ');
  return fetch(uri, { method, headers, body });
}

for (const [label, route] of [
  ['the table sign route', () => `${prefix}/namespaces/ns/tables/t/sign`],
  ['the legacy /v1/aws/s3/sign', () => '/v1/aws/s3/sign'],
]) {
  test(`${label}: a writer writes, a reader only reads, no grant signs nothing`, { skip }, async () => {
    const uri = `${moto.endpoint}/warehouse/lake/ns/t/data/${label.length}.txt`;
    const put = await sendSigned(await sign('writer', route(), 'PUT', uri), 'PUT', uri, 'by the writer');
    assert.equal(put.status, 200, await put.text());
    const got = await sendSigned(await sign('reader', route(), 'GET', uri), 'GET', uri);
    assert.equal(got.status, 200);
    assert.equal(await got.text(), 'by the writer');
    for (const method of ['PUT', 'DELETE']) expectError(await sign('reader', route(), method, uri), 403, 'ForbiddenException');
    expectError(await sign('norole', route(), 'GET', uri), 403, 'ForbiddenException');
    // Unauthenticated: 401 before anything is looked up.
    const anon = await request(env.base, 'POST', route(), { body: { region: 'us-east-1', method: 'GET', uri, headers: {} } });
    expectError(anon, 401, 'NotAuthorizedException');
  });
}
