// Shared by the auth suite: a floe started with --auth token, a signing key made here,
// a bootstrap admin, token requests shaped exactly as PyIceberg and DuckDB send them,
// principals with roles, and the log/metrics scan for leaked secrets.
//
// Every secret and token a test sees goes through remember(), and assertNoLeaks() then
// checks that none of them (nor any JWT signature part) appears in the floe's logs or in
// its /metrics output.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { freshDatabase, startFloe, request, tmpDir } from '../lib/harness.mjs';
import { floeBin } from '../lib/paths.mjs';

export const ADMIN_ID = 'root-admin';
export const ADMIN_SECRET = `bootstrap-${crypto.randomBytes(12).toString('hex')}`;

const secrets = new Set([ADMIN_SECRET]);
export function remember(s) {
  if (typeof s !== 'string' || s.length < 8) return s;
  secrets.add(s);
  // A JWT's signature alone must not leak either.
  const parts = s.split('.');
  if (parts.length === 3 && parts[2].length >= 16) secrets.add(parts[2]);
  return s;
}

// Every secret and token remembered so far.
export const remembered = () => [...secrets];

// Generates an RSA key pair (PEM files) in dir; returns their paths and the KeyObjects.
export function makeRsaKey(dir, name = 'signing') {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const priv = path.join(dir, `${name}.pem`);
  const pub = path.join(dir, `${name}.pub.pem`);
  fs.writeFileSync(priv, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  fs.writeFileSync(pub, publicKey.export({ type: 'spki', format: 'pem' }));
  return { priv, pub, privateKey, publicKey };
}

// Floe's kid for a public key: base64url of the first 12 bytes of SHA-256 over the DER SPKI.
export function kidOf(publicKey) {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return crypto.createHash('sha256').update(der).digest().subarray(0, 12).toString('base64url');
}

// Starts floe with auth token and the bootstrap admin; extra args/env as given.
export async function startAuthFloe({ tag = 'auth', args = [], env = {}, keyDir } = {}) {
  const db = await freshDatabase(tag);
  const dir = keyDir ?? tmpDir('keys');
  const key = makeRsaKey(dir);
  const floe = await startFloe({
    databaseUrl: db.url,
    args: ['--auth', 'token', '--token-signing-key', key.priv, ...args],
    env: { FLOE_BOOTSTRAP_CLIENT_ID: ADMIN_ID, FLOE_BOOTSTRAP_CLIENT_SECRET: ADMIN_SECRET, ...env },
  });
  return { floe, db, key, keyDir: dir, base: floe.baseUrl };
}

// PyIceberg (legacy `credential` setting): form body with id and secret, scope=catalog.
export function pyicebergTokenRequest(base, id, secret, { scope = 'catalog' } = {}) {
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret, scope });
  return request(base, 'POST', '/v1/oauth/tokens', {
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: 'Bearer None' },
    body: body.toString(),
  });
}

// DuckDB iceberg extension: id:secret only in Basic, body grant_type + scope.
export function duckdbTokenRequest(base, id, secret, { scope = 'PRINCIPAL_ROLE:ALL' } = {}) {
  const basic = Buffer.from(`${id}:${secret}`).toString('base64');
  return request(base, 'POST', '/v1/oauth/tokens', {
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: `Basic ${basic}` },
    body: `grant_type=client_credentials&scope=${encodeURIComponent(scope)}`,
  });
}

export async function tokenFor(base, id, secret) {
  const res = await pyicebergTokenRequest(base, id, secret);
  assert.equal(res.status, 200, `token for ${id}: ${res.status} ${res.text}`);
  return remember(res.json.access_token);
}

export const bearer = (t) => ({ Authorization: `Bearer ${t}` });

// A management call as `token`; returns the parsed response.
export function mgmt(base, token, method, p, body) {
  return request(base, method, `/management/v1${p}`, { headers: bearer(token), body });
}

// Creates a client principal holding `roles`; returns {id, secret, token}.
export async function principal(base, adminToken, id, roles = []) {
  const res = await mgmt(base, adminToken, 'POST', '/principals', { name: id });
  assert.equal(res.status, 201, `create principal ${id}: ${res.status} ${res.text}`);
  const secret = remember(res.json['client-secret']);
  for (const role of roles) {
    const a = await mgmt(base, adminToken, 'POST', `/principals/${id}/roles`, { role });
    assert.equal(a.status, 204, `assign ${role} to ${id}: ${a.status} ${a.text}`);
  }
  return { id, secret, token: await tokenFor(base, id, secret) };
}

export async function createRole(base, adminToken, name, grants) {
  const res = await mgmt(base, adminToken, 'POST', '/roles', { name });
  assert.equal(res.status, 201, `create role ${name}: ${res.status} ${res.text}`);
  const ids = [];
  for (const g of grants) {
    const a = await mgmt(base, adminToken, 'POST', `/roles/${name}/grants`, g);
    assert.equal(a.status, 201, `grant ${JSON.stringify(g)} to ${name}: ${a.status} ${a.text}`);
    ids.push(a.json.id);
  }
  return ids;
}

// The route table, as the binary prints it (so a new route cannot be missed).
export function routeTable() {
  return JSON.parse(execFileSync(floeBin, ['routes', '--json'], { encoding: 'utf8' }));
}

// Asserts that no remembered secret, token or signature is in the floe's logs or /metrics.
export async function assertNoLeaks(floe, adminToken) {
  const texts = [['logs', floe.logs()]];
  if (adminToken) {
    const m = await request(floe.baseUrl, 'GET', '/metrics', { headers: bearer(adminToken) });
    assert.equal(m.status, 200, `metrics: ${m.status}`);
    texts.push(['metrics', m.text]);
  }
  assert.ok(secrets.size > 1, 'the test remembered the secrets it saw');
  for (const [what, text] of texts) {
    for (const s of secrets) {
      assert.ok(!text.includes(s), `${what} contain a secret or token (${s.slice(0, 6)}…)`);
    }
    // No JWT-shaped string at all.
    assert.doesNotMatch(text, /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\./, `${what} contain a JWT`);
  }
}
