// Grants inherited down a namespace tree; revoking a role, deleting a principal and
// rotating a secret take effect on the next request; the database holds no recoverable
// secret; signing-key rotation by kid; bootstrap once; the auth modes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { freshDatabase, psql, request, runFloe, startFloe, encodeNs, waitFor } from '../lib/harness.mjs';
import { expectError } from '../lib/checks.mjs';
import {
  ADMIN_ID, ADMIN_SECRET, assertNoLeaks, bearer, createRole, makeRsaKey, mgmt, principal, remember, remembered,
  startAuthFloe,
  tokenFor,
} from './lib.mjs';

let env;
let adminToken;

before(async () => {
  env = await startAuthFloe({ tag: 'auth_grants' });
  adminToken = await tokenFor(env.base, ADMIN_ID, ADMIN_SECRET);
  const h = bearer(adminToken);
  for (const ns of [['a'], ['a', 'b'], ['a', 'b', 'c'], ['a', 'x'], ['z']]) {
    const res = await request(env.base, 'POST', '/v1/namespaces', { headers: h, body: { namespace: ns } });
    assert.equal(res.status, 200, res.text);
  }
  for (const ns of [['a', 'b', 'c'], ['z']]) {
    const res = await request(env.base, 'POST', `/v1/namespaces/${encodeNs(ns)}/tables`, {
      headers: h,
      body: { name: 't', schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', type: 'long', required: false }] } },
    });
    assert.equal(res.status, 200, res.text);
  }
});

after(async () => {
  if (env) await assertNoLeaks(env.floe, adminToken);
  await env?.floe.stop();
});

const get = (t, p) => request(env.base, 'GET', p, { headers: bearer(t) });
const tbl = (ns, t) => `/v1/namespaces/${encodeNs(ns)}/tables/${t}`;

test('a grant on a namespace is inherited by everything below it, nothing beside it', async () => {
  await createRole(env.base, adminToken, 'ab-writer', [{ privilege: 'write', warehouse: 'default', namespace: ['a', 'b'] }]);
  const p = await principal(env.base, adminToken, 'tree', ['ab-writer']);
  assert.equal((await get(p.token, tbl(['a', 'b', 'c'], 't'))).status, 200, 'table two levels below');
  assert.equal((await get(p.token, `/v1/namespaces/${encodeNs(['a', 'b', 'c'])}`)).status, 200);
  const create = await request(env.base, 'POST', '/v1/namespaces', { headers: bearer(p.token), body: { namespace: ['a', 'b', 'c', 'd'] } });
  assert.equal(create.status, 200, 'create below the grant');
  expectError(await get(p.token, tbl(['z'], 't')), 403, 'ForbiddenException', 'table z.t');
  const beside = await request(env.base, 'POST', '/v1/namespaces', { headers: bearer(p.token), body: { namespace: ['a', 'y'] } });
  expectError(beside, 403, 'ForbiddenException', 'namespace-create on namespace a');
  // The parent is visible (to reach the grant) but its siblings are not listed.
  assert.equal((await get(p.token, `/v1/namespaces/a`)).status, 200);
  const kids = await get(p.token, `/v1/namespaces?parent=a`);
  assert.deepEqual(kids.json.namespaces, [['a', 'b']]);
  const top = await get(p.token, `/v1/namespaces`);
  assert.deepEqual(top.json.namespaces, [['a']]);
});

test('revoking a role or a grant, and deleting a principal, take effect on the next request', async () => {
  await createRole(env.base, adminToken, 'z-reader', [{ privilege: 'read', warehouse: 'default', namespace: ['z'] }]);
  const p = await principal(env.base, adminToken, 'revokee', ['z-reader']);
  assert.equal((await get(p.token, tbl(['z'], 't'))).status, 200);
  let res = await mgmt(env.base, adminToken, 'DELETE', '/principals/revokee/roles/z-reader');
  assert.equal(res.status, 204, res.text);
  expectError(await get(p.token, tbl(['z'], 't')), 403, 'ForbiddenException');
  // Grant again, then revoke the grant itself.
  res = await mgmt(env.base, adminToken, 'POST', '/principals/revokee/roles', { role: 'z-reader' });
  assert.equal(res.status, 204);
  assert.equal((await get(p.token, tbl(['z'], 't'))).status, 200);
  const grants = await mgmt(env.base, adminToken, 'GET', '/roles/z-reader/grants');
  res = await mgmt(env.base, adminToken, 'DELETE', `/roles/z-reader/grants/${grants.json.grants[0].id}`);
  assert.equal(res.status, 204, res.text);
  expectError(await get(p.token, tbl(['z'], 't')), 403, 'ForbiddenException');
  // Deleted principal: its token names nobody any more.
  res = await mgmt(env.base, adminToken, 'DELETE', '/principals/revokee');
  assert.equal(res.status, 204);
  expectError(await get(p.token, '/v1/namespaces'), 401, 'NotAuthorizedException', 'unknown principal');
  // Created again under the same name: the old token does not carry over.
  const again = await principal(env.base, adminToken, 'revokee', ['reader']);
  expectError(await get(p.token, '/v1/namespaces'), 401, 'NotAuthorizedException', 'rotated');
  assert.equal((await get(again.token, '/v1/namespaces')).status, 200);
});

test('a revoke on one replica takes effect on another at once (NOTIFY, not the TTL)', async () => {
  // A second floe over the same database and key, trusting its cache for an hour unless told.
  const replica = await startFloe({
    databaseUrl: env.db.url,
    args: ['--auth', 'token', '--token-signing-key', env.key.priv, '--auth-cache-ttl', '3600'],
  });
  try {
    await createRole(env.base, adminToken, 'z-only', [{ privilege: 'read', warehouse: 'default', namespace: ['z'] }]);
    const p = await principal(env.base, adminToken, 'twin', ['z-only']);
    const onReplica = () => request(replica.baseUrl, 'GET', tbl(['z'], 't'), { headers: bearer(p.token) });
    assert.equal((await onReplica()).status, 200, 'the replica accepts a token the first one issued');
    const res = await mgmt(env.base, adminToken, 'DELETE', '/principals/twin/roles/z-only');
    assert.equal(res.status, 204);
    const t0 = Date.now();
    await waitFor(async () => (await onReplica()).status === 403, { timeoutMs: 3000, intervalMs: 20, what: 'the replica to see the revoke' });
    assert.ok(Date.now() - t0 < 3000);
    await assertNoLeaks(replica);
  } finally {
    await replica.stop();
  }
});

test('a rotated secret invalidates the old secret and the tokens issued with it', async () => {
  const p = await principal(env.base, adminToken, 'rotor', ['reader']);
  const res = await mgmt(env.base, adminToken, 'POST', '/principals/rotor/rotate');
  assert.equal(res.status, 200, res.text);
  const fresh = remember(res.json['client-secret']);
  assert.notEqual(fresh, p.secret);
  const old = await request(env.base, 'POST', '/v1/oauth/tokens', {
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: `grant_type=client_credentials&client_id=rotor&client_secret=${encodeURIComponent(p.secret)}`,
  });
  assert.equal(old.status, 401, old.text);
  expectError(await get(p.token, '/v1/namespaces'), 401, 'NotAuthorizedException', 'rotated');
  const t = await tokenFor(env.base, 'rotor', fresh);
  assert.equal((await get(t, '/v1/namespaces')).status, 200);
});

test('the database holds no recoverable secret', async () => {
  const rows = psql(env.db.url, "SELECT name || '|' || coalesce(secret_hash, '') FROM principal ORDER BY name").split('\n');
  assert.ok(rows.length >= 3);
  const dump = psql(env.db.url, 'SELECT row_to_json(p)::text FROM principal p');
  for (const row of rows) {
    const hash = row.split('|')[1];
    if (hash) assert.match(hash, /^pbkdf2-sha256\$\d{6,}\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  }
  assert.ok(!dump.includes(ADMIN_SECRET), 'the bootstrap secret is not stored');
  for (const s of remembered()) assert.ok(!dump.includes(s), 'no secret or token is stored');
  // Two principals with the same secret would still have different hashes (salted):
  const hashes = rows.map((r) => r.split('|')[1]).filter(Boolean);
  assert.ok(hashes.length >= 2, `principals with a secret: ${hashes.length}`);
  assert.ok(rows.some((r) => r.startsWith(`${ADMIN_ID}|pbkdf2-sha256$`)), 'the bootstrap principal has a hashed secret');
  assert.equal(new Set(hashes).size, hashes.length);
});

test('signing-key rotation: the old key keeps verifying when listed, by kid', async () => {
  const db = await freshDatabase('auth_keys');
  const oldKey = makeRsaKey(env.keyDir, 'old');
  const newKey = makeRsaKey(env.keyDir, 'new');
  const boot = { FLOE_BOOTSTRAP_CLIENT_ID: ADMIN_ID, FLOE_BOOTSTRAP_CLIENT_SECRET: ADMIN_SECRET };
  let f = await startFloe({ databaseUrl: db.url, args: ['--auth', 'token', '--token-signing-key', oldKey.priv], env: boot });
  const oldToken = await tokenFor(f.baseUrl, ADMIN_ID, ADMIN_SECRET);
  await f.stop();
  f = await startFloe({
    databaseUrl: db.url,
    args: ['--auth', 'token', '--token-signing-key', newKey.priv, '--token-verify-keys', oldKey.pub],
    env: boot,
  });
  assert.equal((await get2(f, oldToken)).status, 200, 'old token still verifies');
  const newToken = await tokenFor(f.baseUrl, ADMIN_ID, ADMIN_SECRET);
  assert.notEqual(JSON.parse(Buffer.from(newToken.split('.')[0], 'base64url')).kid,
    JSON.parse(Buffer.from(oldToken.split('.')[0], 'base64url')).kid);
  await assertNoLeaks(f, newToken);
  await f.stop();
  f = await startFloe({ databaseUrl: db.url, args: ['--auth', 'token', '--token-signing-key', newKey.priv], env: boot });
  expectError(await get2(f, oldToken), 401, 'NotAuthorizedException', 'kid');
  await f.stop();
});

function get2(f, t) {
  return request(f.baseUrl, 'GET', '/v1/namespaces', { headers: bearer(t) });
}

test('floe admin bootstrap creates the admin once', async () => {
  const db = await freshDatabase('auth_boot');
  const args = ['admin', 'bootstrap', '--database-url', db.url, '--data-dir', path.join(env.keyDir, 'bootdata')];
  const first = runFloe(args);
  assert.equal(first.code, 0, first.stderr);
  const id = first.stdout.match(/client_id: (\S+)/)[1];
  const secret = remember(first.stdout.match(/client_secret: (\S+)/)[1]);
  assert.equal(id, 'admin');
  assert.ok(secret.length >= 40);
  assert.ok(!first.stderr.includes(secret), 'the secret goes to stdout only');
  const second = runFloe(args);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stdout, /exists already; nothing changed/);
  assert.doesNotMatch(second.stdout, /client_secret/);
  const f = await startFloe({ databaseUrl: db.url, args: ['--auth', 'token'] });
  const t = await tokenFor(f.baseUrl, id, secret);
  assert.equal((await request(f.baseUrl, 'GET', '/management/v1/principals', { headers: bearer(t) })).status, 200);
  assert.match(f.logs(), /ephemeral key/);
  await assertNoLeaks(f, t);
  await f.stop();
  // A secret the operator gave is not printed back.
  const db2 = await freshDatabase('auth_boot_given');
  const given = remember('given-bootstrap-secret-0123456789abcdef');
  const third = runFloe(['admin', 'bootstrap', '--database-url', db2.url, '--data-dir', path.join(env.keyDir, 'bootdata2'),
    `--bootstrap-client-secret=${given}`]);
  assert.equal(third.code, 0, third.stderr);
  assert.match(third.stdout, /created admin principal\nclient_id: admin\nclient_secret: the one given/);
  assert.ok(!(third.stdout + third.stderr).includes(given), 'the given secret is not printed');
});

test('modes: loopback defaults to none; other addresses to token; explicit none warns', async () => {
  const db = await freshDatabase('auth_modes');
  let f = await startFloe({ databaseUrl: db.url });
  assert.equal((await request(f.baseUrl, 'GET', '/v1/namespaces')).status, 200, 'loopback: no token needed');
  assert.match(f.logs(), /auth: none \(listening on loopback/);
  await f.stop();
  f = await startFloe({ databaseUrl: db.url, args: ['--host', '0.0.0.0'] });
  const local = f.baseUrl.replace('0.0.0.0', '127.0.0.1');
  expectError(await request(local, 'GET', '/v1/namespaces'), 401, 'NotAuthorizedException');
  await f.stop();
  f = await startFloe({ databaseUrl: db.url, args: ['--host', '0.0.0.0', '--auth', 'none'] });
  assert.match(f.logs(), /level=warn msg="auth: AUTHENTICATION IS OFF/);
  assert.equal((await request(f.baseUrl.replace('0.0.0.0', '127.0.0.1'), 'GET', '/v1/namespaces')).status, 200);
  await f.stop();
});
