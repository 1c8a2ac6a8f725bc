// Every route of the router table (read from `floe routes --json`, so a new route is
// covered the day it is added) x principals of each built-in role, a custom role, a
// principal with no role, and no token -> the expected 2xx/4xx, 401 or 403.
//
// The expectation comes from a model of the privileges below: a route whose privilege the
// model does not know fails the test until someone classifies it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { request, encodeNs } from '../lib/harness.mjs';
import { expectError } from '../lib/checks.mjs';
import {
  ADMIN_ID, ADMIN_SECRET, assertNoLeaks, bearer, createRole, mgmt, principal, remember, routeTable, startAuthFloe,
  tokenFor,
} from './lib.mjs';

const READ = new Set(['catalog-read', 'namespace-read', 'table-read']);
const WRITE = new Set([...READ, 'namespace-create', 'namespace-write', 'namespace-drop', 'table-create', 'table-write', 'table-drop']);
const ALL = new Set([...WRITE, 'warehouse-admin', 'access-admin', 'metrics']);
const KNOWN = new Set([...ALL, 'public', 'authenticated']);

// Where each request lands: namespace m (holding table t and namespace m.sub), table
// or view "nope" in m (absent: an allowed caller gets 404, a refused one 403).
const NS = ['m'];
const PARAMS = { prefix: 'default', namespace: encodeNs(NS), table: 'nope', view: 'nope', name: 'absent', role: 'absent', id: '999999' };

// Bodies for routes whose resource is in the body; the resource they name is what the
// model checks.
function bodyFor(method, path, who) {
  if (method === 'POST' && path === '/v1/{prefix}/namespaces') {
    return { body: { namespace: ['m', `made-by-${who}`] }, res: { priv: 'namespace-create', ns: ['m'] } };
  }
  if (path === '/v1/{prefix}/tables/rename' || path === '/v1/{prefix}/views/rename') {
    return {
      body: { source: { namespace: ['m'], name: 'nope' }, destination: { namespace: ['m'], name: 'nope2' } },
      res: { priv: 'table-write', ns: ['m'], table: 'nope' },
    };
  }
  if (path === '/v1/{prefix}/transactions/commit') {
    return {
      body: { 'table-changes': [{ identifier: { namespace: ['m'], name: 'nope' }, requirements: [], updates: [] }] },
      res: { priv: 'table-write', ns: ['m'], table: 'nope' },
    };
  }
  if (path.endsWith('/metrics') && method === 'POST') return { body: { 'report-type': 'scan-report' } };
  if (method === 'POST' || method === 'PUT') return { body: {} };
  return {};
}

// The custom role: read on namespace m, and table-write on table m.t only.
const CUSTOM_GRANTS = [
  { privilege: 'read', warehouse: 'default', namespace: ['m'] },
  { privilege: 'table-write', warehouse: 'default', namespace: ['m'], table: 't' },
];

// Whether `who` may use priv on the resource (wh, ns, table); mirrors DESIGN §6.
function allowed(who, priv, res) {
  if (priv === 'public') return true;
  if (who === 'anonymous') return false;
  if (priv === 'authenticated') return true;
  if (who === 'admin') return ALL.has(priv);
  if (who === 'writer') return WRITE.has(priv);
  if (who === 'reader') return READ.has(priv);
  if (who === 'custom') {
    if (res.global) return false;
    const underM = res.ns && res.ns.length >= 1 && res.ns[0] === 'm';
    if (priv === 'catalog-read' || priv === 'namespace-read') return !res.ns || res.ns.length === 0 || underM;
    if (underM && READ.has(priv)) return true;
    if (underM && res.table === 't' && res.ns.length === 1 && priv === 'table-write') return true;
    return false;
  }
  return false; // "norole": known, holds nothing
}

let env;
const tokens = {};

before(async () => {
  env = await startAuthFloe({ tag: 'auth_matrix' });
  const { base } = env;
  tokens.admin = await tokenFor(base, ADMIN_ID, ADMIN_SECRET);
  const h = bearer(tokens.admin);
  let res = await request(base, 'POST', '/v1/namespaces', { headers: h, body: { namespace: ['m'] } });
  assert.equal(res.status, 200, res.text);
  res = await request(base, 'POST', '/v1/namespaces', { headers: h, body: { namespace: ['m', 'sub'] } });
  assert.equal(res.status, 200, res.text);
  res = await request(base, 'POST', `/v1/namespaces/m/tables`, {
    headers: h,
    body: { name: 't', schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', type: 'long', required: false }] } },
  });
  assert.equal(res.status, 200, res.text);
  await createRole(base, tokens.admin, 'custom', CUSTOM_GRANTS);
  tokens.writer = (await principal(base, tokens.admin, 'w1', ['writer'])).token;
  tokens.reader = (await principal(base, tokens.admin, 'r1', ['reader'])).token;
  tokens.custom = (await principal(base, tokens.admin, 'c1', ['custom'])).token;
  tokens.norole = (await principal(base, tokens.admin, 'n1', [])).token;
});

after(async () => {
  if (env) await assertNoLeaks(env.floe, tokens.admin);
  await env?.floe.stop();
});

test('every route in the table has a privilege the model knows', () => {
  const routes = routeTable();
  assert.ok(routes.length >= 30, `route table has ${routes.length} routes`);
  for (const r of routes) assert.ok(KNOWN.has(r.privilege), `classify privilege ${r.privilege} of ${r.method} ${r.path}`);
});

test('route x principal matrix', async () => {
  const routes = routeTable();
  const who = ['admin', 'writer', 'reader', 'custom', 'norole', 'anonymous'];
  let checked = 0;
  for (const r of routes) {
    const path = r.path.replace(/\{(\w+)\}/g, (_, k) => {
      assert.ok(k in PARAMS, `no value for {${k}} in ${r.path}`);
      return PARAMS[k];
    });
    for (const w of who) {
      const { body, res: bodyRes } = bodyFor(r.method, r.path, w);
      const res = bodyRes ?? {
        priv: r.privilege,
        global: !r.path.includes('{prefix}'),
        ns: r.path.includes('{namespace}') ? NS : [],
        // Views are authorized as tables of the same name.
        table: r.path.includes('{table}') || r.path.includes('{view}') ? PARAMS.table : undefined,
      };
      const ok = allowed(w, bodyRes ? res.priv : r.privilege, res);
      const headers = w === 'anonymous' ? {} : bearer(tokens[w]);
      const got = await request(env.base, r.method, path, { headers, body });
      const label = `${w} ${r.method} ${path} (${r.privilege})`;
      if (ok) {
        assert.ok(![401, 403].includes(got.status) && got.status < 500, `${label}: expected allowed, got ${got.status} ${got.text}`);
      } else if (w === 'anonymous') {
        assert.equal(got.status, 401, `${label}: ${got.text}`);
        if (r.method !== 'HEAD') expectError(got, 401, 'NotAuthorizedException', 'authentication required');
        assert.match(got.headers['www-authenticate'] || '', /^Bearer/, `${label}: WWW-Authenticate`);
      } else {
        assert.equal(got.status, 403, `${label}: expected 403, got ${got.status} ${got.text}`);
        if (r.method !== 'HEAD') expectError(got, 403, 'ForbiddenException', 'lacks privilege');
      }
      checked++;
    }
  }
  assert.equal(checked, routes.length * who.length);
});

test('lists show only what the caller may see', async () => {
  const { base } = env;
  const h = bearer(tokens.admin);
  assert.equal((await request(base, 'POST', '/v1/namespaces', { headers: h, body: { namespace: ['other'] } })).status, 200);
  const names = async (t, parent) => {
    const q = parent ? `?parent=${encodeNs(parent)}` : '';
    const res = await request(base, 'GET', `/v1/namespaces${q}`, { headers: bearer(t) });
    assert.equal(res.status, 200, res.text);
    return res.json.namespaces.map((n) => n.join('.')).sort();
  };
  assert.ok((await names(tokens.admin)).includes('other'));
  assert.ok((await names(tokens.reader)).includes('other'));
  assert.deepEqual(await names(tokens.custom), ['m'], 'custom sees only m');
  const res = await request(base, 'GET', '/v1/namespaces/other/tables', { headers: bearer(tokens.custom) });
  expectError(res, 403, 'ForbiddenException', 'namespace other');
  const tables = await request(base, 'GET', '/v1/namespaces/m/tables', { headers: bearer(tokens.custom) });
  assert.deepEqual(tables.json.identifiers, [{ namespace: ['m'], name: 't' }]);
});

test('a commit records the acting principal', async () => {
  const { base } = env;
  const load = await request(base, 'GET', '/v1/namespaces/m/tables/t', { headers: bearer(tokens.custom) });
  assert.equal(load.status, 200, load.text);
  const res = await request(base, 'POST', '/v1/namespaces/m/tables/t', {
    headers: bearer(tokens.custom),
    body: {
      requirements: [{ type: 'assert-table-uuid', uuid: load.json.metadata['table-uuid'] }],
      updates: [{ action: 'set-properties', updates: { owner: 'c1' } }],
    },
  });
  assert.equal(res.status, 200, res.text);
  const { psql } = await import('../lib/harness.mjs');
  const actor = psql(env.db.url, "SELECT actor FROM commit_event WHERE table_name = 't' ORDER BY id DESC LIMIT 1");
  assert.equal(actor, 'c1');
  const creator = psql(env.db.url, "SELECT actor FROM commit_event WHERE table_name = 't' AND operation = 'create'");
  assert.equal(creator, ADMIN_ID, 'the create event names who created the table');
  // The same principal may read but not drop it.
  const drop = await request(base, 'DELETE', '/v1/namespaces/m/tables/t', { headers: bearer(tokens.custom) });
  expectError(drop, 403, 'ForbiddenException', 'table-drop');
});

test('management: principals, roles and grants round-trip, built-ins cannot be dropped', async () => {
  const { base } = env;
  const t = tokens.admin;
  const roles = await mgmt(base, t, 'GET', '/roles');
  assert.deepEqual(roles.json.roles.filter((r) => r.builtin).map((r) => r.name).sort(), ['admin', 'reader', 'writer']);
  expectError(await mgmt(base, t, 'DELETE', '/roles/admin'), 409, undefined, 'built in');
  const grants = await mgmt(base, t, 'GET', '/roles/custom/grants');
  assert.equal(grants.json.grants.length, 2);
  assert.deepEqual(grants.json.grants[1], { id: grants.json.grants[1].id, warehouse: 'default', namespace: ['m'], table: 't', privilege: 'table-write' });
  const p = await mgmt(base, t, 'GET', '/principals/c1');
  assert.deepEqual(p.json.roles, ['custom']);
  assert.equal(p.json.kind, 'client');
  assert.ok(!('client-secret' in p.json) && !JSON.stringify(p.json).includes('pbkdf2'), 'no secret or hash shown again');
  expectError(await mgmt(base, t, 'POST', '/roles/custom/grants', { privilege: 'fly', warehouse: 'default' }), 400, undefined, 'unknown privilege');
  expectError(await mgmt(base, t, 'POST', '/principals', { name: 'c1' }), 409, undefined, 'already exists');
  expectError(await mgmt(base, t, 'POST', '/principals', { name: 'bad name!' }), 400, undefined, 'principal name');
  // each malformed grant or principal names what is wrong
  const g = (body) => mgmt(base, t, 'POST', '/roles/custom/grants', { privilege: 'table-read', warehouse: 'default', ...body });
  expectError(await g({ namespace: ['m', ''] }), 400, undefined, 'namespace[1] must be a non-empty string');
  expectError(await g({ namespace: ['m', 'x'.repeat(300)] }), 400, undefined, 'namespace[1] of 300 bytes exceeds the limit of 255 (max-identifier-bytes)');
  expectError(await g({ namespace: Array(17).fill('n') }), 400, undefined, 'namespace has 17 levels, over the limit of 16 (max-namespace-levels)');
  expectError(await g({ namespace: ['m'], table: 'y'.repeat(300) }), 400, undefined, 'table of 300 bytes exceeds the limit of 255');
  expectError(await g({ table: 't' }), 400, undefined, 'a table grant needs a namespace and a table name');
  expectError(await mgmt(base, t, 'POST', '/principals', { name: 'ext1', subject: 's' }), 400, undefined, 'an external principal needs an issuer (this server has no oidc-issuer');
  expectError(await mgmt(base, t, 'POST', '/principals', { name: 'ext1', subject: '', issuer: 'https://idp.example' }), 400, undefined, 'subject must be 1 to 255 bytes, got 0');
});

test('secrets shown at creation or rotation are never stored for Idempotency-Key replay', async () => {
  const { base } = env;
  const key = () => {
    const b = crypto.randomBytes(16);
    b.writeUIntBE(Date.now(), 0, 6);
    b[6] = 0x70 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  };
  const headers = { ...bearer(tokens.admin), 'Idempotency-Key': key() };
  const made = await request(base, 'POST', '/management/v1/principals', { headers, body: { name: 'idem1' } });
  assert.equal(made.status, 201, made.text);
  remember(made.json['client-secret']);
  const again = await request(base, 'POST', '/management/v1/principals', { headers, body: { name: 'idem1' } });
  assert.equal(again.status, 409, 'not replayed: the key is ignored on this route');
  const rot = await request(base, 'POST', '/management/v1/principals/idem1/rotate', { headers: { ...bearer(tokens.admin), 'Idempotency-Key': key() } });
  assert.equal(rot.status, 200, rot.text);
  remember(rot.json['client-secret']);
  const tok = await request(base, 'POST', '/v1/oauth/tokens', {
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Idempotency-Key': key() },
    body: `grant_type=client_credentials&client_id=idem1&client_secret=${rot.json['client-secret']}`,
  });
  assert.equal(tok.status, 200, tok.text);
  remember(tok.json.access_token);
  const { psql } = await import('../lib/harness.mjs');
  const stored = psql(env.db.url, "SELECT count(*) FROM idempotency_record WHERE convert_from(body, 'UTF8') LIKE '%client-secret%' OR convert_from(body, 'UTF8') LIKE '%access_token%'");
  assert.equal(stored, '0');
  // A catalog mutation under a key is still recorded (the key works where it should).
  const ns = await request(base, 'POST', '/v1/namespaces', { headers: { ...bearer(tokens.admin), 'Idempotency-Key': key() }, body: { namespace: ['idem_ns'] } });
  assert.equal(ns.status, 200, ns.text);
  assert.equal(psql(env.db.url, "SELECT count(*) FROM idempotency_record WHERE route = '/v1/{prefix}/namespaces'"), '1');
});
