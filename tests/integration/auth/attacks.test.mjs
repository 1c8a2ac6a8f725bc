// Bearer tokens that must be refused with 401 (and the Iceberg error model plus
// WWW-Authenticate: Bearer error="invalid_token"), each next to a control token built the
// same way but correct, which must be accepted -- so a refusal is never an accident of how
// the test builds tokens.  Covers Floe's own tokens and an external OIDC issuer's, whose
// JWKS is served over HTTP here and refetched on an unknown kid no more often than the bound.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { psql, request, sleep } from '../lib/harness.mjs';
import { expectError } from '../lib/checks.mjs';
import { ADMIN_ID, ADMIN_SECRET, assertNoLeaks, bearer, kidOf, mgmt, principal, remember, startAuthFloe, tokenFor } from './lib.mjs';

const EXT_ISS = 'https://idp.example.test/realms/data';
const EXT_AUD = 'floe-api';

const b64 = (o) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');

function jwt(header, payload, key, { alg = header.alg } = {}) {
  const input = `${b64(header)}.${b64(payload)}`;
  let sig;
  if (alg === 'RS256') sig = crypto.sign('sha256', Buffer.from(input), key);
  else if (alg === 'ES256') sig = crypto.sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  else if (alg === 'HS256') sig = crypto.createHmac('sha256', key).update(input).digest();
  else sig = Buffer.alloc(0);
  return remember(`${input}.${sig.toString('base64url')}`);
}

const now = () => Math.floor(Date.now() / 1000);

let env;
let adminToken;
let floeKid;
let jwksServer;
let jwksFetches = 0;
let jwks; // what the server serves now
const extRsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const extEc = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const extRsa2 = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const stranger = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });

const jwk = (pub, kid) => ({ ...pub.export({ format: 'jwk' }), kid, use: 'sig' });

before(async () => {
  jwks = { keys: [jwk(extRsa.publicKey, 'rsa-1'), jwk(extEc.publicKey, 'ec-1')] };
  jwksServer = http.createServer((req, res) => {
    jwksFetches++;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(jwks));
  });
  await new Promise((r) => jwksServer.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${jwksServer.address().port}/jwks`;
  env = await startAuthFloe({
    tag: 'auth_attacks',
    args: ['--oidc-issuer', EXT_ISS, '--oidc-audience', EXT_AUD, '--oidc-jwks', url, '--oidc-jwks-refresh', '2', '--token-clock-skew', '5'],
  });
  floeKid = kidOf(env.key.publicKey);
  adminToken = await tokenFor(env.base, ADMIN_ID, ADMIN_SECRET);
  await principal(env.base, adminToken, 'reader1', ['reader']);
  const ext = await mgmt(env.base, adminToken, 'POST', '/principals', { name: 'ext-user', subject: 'user-42' });
  assert.equal(ext.status, 201, ext.text);
  assert.equal(ext.json.issuer, EXT_ISS);
  assert.ok(!('client-secret' in ext.json), 'an external principal has no secret');
  const a = await mgmt(env.base, adminToken, 'POST', '/principals/ext-user/roles', { role: 'reader' });
  assert.equal(a.status, 204, a.text);
});

after(async () => {
  if (env) await assertNoLeaks(env.floe, adminToken);
  await env?.floe.stop();
  jwksServer?.close();
});

const floeClaims = (over = {}) => ({ iss: 'floe', aud: 'floe', sub: 'reader1', iat: now(), nbf: now(), exp: now() + 300, ...over });
const extClaims = (over = {}) => ({ iss: EXT_ISS, aud: [EXT_AUD, 'account'], sub: 'user-42', iat: now(), exp: now() + 300, ...over });
const floeTok = (over, hdr = {}) => jwt({ alg: 'RS256', typ: 'JWT', kid: floeKid, ...hdr }, floeClaims(over), env.key.privateKey);

async function call(token) {
  return request(env.base, 'GET', '/v1/namespaces', { headers: { Authorization: `Bearer ${token}` } });
}

async function refused(token, word) {
  const res = await call(token);
  expectError(res, 401, 'NotAuthorizedException', word);
  assert.match(res.headers['www-authenticate'] || '', /error="invalid_token"/);
  return res;
}

async function accepted(token) {
  const res = await call(token);
  assert.equal(res.status, 200, `control token refused: ${res.text}`);
}

// The secret version Floe puts in its tokens (fsv): a fingerprint of the stored hash.
function fsvOf(name) {
  return psql(env.db.url, `SELECT left(encode(sha256(convert_to(secret_hash, 'UTF8')), 'hex'), 16) FROM principal WHERE name = '${name}'`);
}

test('control: tokens built here the right way are accepted', async () => {
  await accepted(floeTok({ fsv: fsvOf('reader1') }));
  await accepted(jwt({ alg: 'RS256', kid: 'rsa-1' }, extClaims(), extRsa.privateKey));
  await accepted(jwt({ alg: 'ES256', kid: 'ec-1' }, extClaims(), extEc.privateKey));
});

test('signed with Floe\'s key but without the secret version (fsv)', async () => {
  await refused(floeTok(), 'rotated');
  await refused(floeTok({ fsv: '0000000000000000' }), 'rotated');
});

test('expired', () => refused(floeTok({ exp: now() - 60, iat: now() - 400, nbf: now() - 400 }), 'expired'));
test('not yet valid (nbf in the future)', () => refused(floeTok({ nbf: now() + 600 }), 'nbf'));
test('issued in the future (iat)', () => refused(floeTok({ iat: now() + 600 }), 'iat'));
test('no exp at all', () => {
  const c = floeClaims();
  delete c.exp;
  return refused(jwt({ alg: 'RS256', kid: floeKid }, c, env.key.privateKey), 'exp');
});

test('alg none (with and without a signature part)', async () => {
  const input = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(floeClaims({ sub: ADMIN_ID }))}`;
  await refused(remember(`${input}.`), 'invalid token');
  await refused(remember(`${input}.AAAA`), 'algorithm');
  // A real RS256 signature by Floe's key, under a header that says none.
  await refused(jwt({ alg: 'none', kid: floeKid }, floeClaims(), env.key.privateKey, { alg: 'RS256' }), 'algorithm');
});

test('HS256 signed with the RSA public key as the secret', async () => {
  const pem = env.key.publicKey.export({ type: 'spki', format: 'pem' });
  await refused(jwt({ alg: 'HS256', typ: 'JWT', kid: floeKid }, floeClaims({ sub: ADMIN_ID }), pem), 'algorithm');
  await refused(jwt({ alg: 'HS256', typ: 'JWT' }, floeClaims({ sub: ADMIN_ID }), pem), 'algorithm');
});

test('ES256 header on an RSA key (algorithm must match the key type)', () =>
  refused(jwt({ alg: 'ES256', kid: floeKid }, floeClaims(), extEc.privateKey), 'algorithm'));

test('tampered payload (reader token turned into the admin)', async () => {
  const real = await tokenFor(env.base, 'reader1', (await rotateFor('reader1')).secret);
  const [h, , s] = real.split('.');
  const payload = JSON.parse(Buffer.from(real.split('.')[1], 'base64url').toString());
  payload.sub = ADMIN_ID;
  await refused(remember(`${h}.${b64(payload)}.${s}`), 'signature');
});

async function rotateFor(id) {
  const res = await mgmt(env.base, adminToken, 'POST', `/principals/${id}/rotate`);
  assert.equal(res.status, 200, res.text);
  return { secret: remember(res.json['client-secret']) };
}

test('unknown kid', () => refused(jwt({ alg: 'RS256', kid: 'no-such-kid' }, floeClaims(), stranger.privateKey), 'kid'));
test('signed by a stranger with Floe\'s kid', () => refused(jwt({ alg: 'RS256', kid: floeKid }, floeClaims(), stranger.privateKey), 'signature'));
test('wrong issuer', () => refused(floeTok({ iss: 'https://evil.example' }), 'issuer'));
test('wrong audience', () => refused(floeTok({ aud: 'someone-else' }), 'audience'));
test('audience missing', () => {
  const c = floeClaims();
  delete c.aud;
  return refused(jwt({ alg: 'RS256', kid: floeKid }, c, env.key.privateKey), 'audience');
});

test('external issuer: token signed by another key', async () => {
  await refused(jwt({ alg: 'RS256', kid: 'rsa-1' }, extClaims(), stranger.privateKey), 'signature');
  await refused(jwt({ alg: 'ES256', kid: 'ec-1' }, extClaims(), crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey), 'signature');
  await refused(jwt({ alg: 'RS256', kid: 'rsa-1' }, extClaims({ aud: 'floe' }), extRsa.privateKey), 'audience');
});

test('external issuer: a valid token of an unknown subject is 401', () =>
  refused(jwt({ alg: 'RS256', kid: 'rsa-1' }, extClaims({ sub: 'user-99' }), extRsa.privateKey), 'unknown principal'));

test('Bearer garbage, Bearer None, Basic on a catalog route, empty Bearer', async () => {
  await refused('garbage', 'invalid token');
  await refused('None', 'invalid token');
  await refused('a.b.c', 'invalid token');
  await refused('', 'invalid token');
  const basic = await request(env.base, 'GET', '/v1/namespaces', { headers: { Authorization: 'Basic YTpi' } });
  expectError(basic, 401, 'NotAuthorizedException', 'Bearer');
});

test('external JWKS: a new kid is fetched once, never more often than the bound', async () => {
  const before = jwksFetches;
  const tok = jwt({ alg: 'RS256', kid: 'rsa-2' }, extClaims(), extRsa2.privateKey);
  // Several unknown kids in a burst: at most one fetch in the window.
  for (let i = 0; i < 5; i++) await refused(jwt({ alg: 'RS256', kid: `junk-${i}` }, extClaims(), stranger.privateKey), 'kid');
  assert.ok(jwksFetches - before <= 1, `JWKS fetched ${jwksFetches - before} times in one window`);
  // The issuer rotates: rsa-2 appears. After the bound, the unknown kid triggers a refetch.
  jwks = { keys: [jwk(extRsa2.publicKey, 'rsa-2')] };
  await sleep(2200);
  await accepted(tok);
  assert.ok(jwksFetches > before, 'the JWKS was fetched again');
  // rsa-1 is gone from the issuer's keys now.
  await sleep(2200);
  await refused(jwt({ alg: 'RS256', kid: 'rsa-1' }, extClaims(), extRsa.privateKey), 'kid');
});

test('the reason is logged, the token never', () => {
  const logs = env.floe.logs();
  assert.match(logs, /auth: rejected a token: invalid token: expired/);
  assert.match(logs, /auth: rejected a token: invalid token: algorithm/);
});
