// The exact request shapes PyIceberg and DuckDB's iceberg extension send for
// namespaces (rest-spec-and-clients.md §A.4, §B), replayed byte for byte over raw
// HTTP, with the status codes those clients insist on.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { freshDatabase, startFloe, request } from './lib/harness.mjs';
import { expectJson, expectError, expectNoContent } from './lib/checks.mjs';

let floe;
let base;
let prefix;

before(async () => {
  const db = await freshDatabase('replay');
  floe = await startFloe({ databaseUrl: db.url });
  base = floe.baseUrl;
});

after(async () => {
  await floe?.stop();
});

// PyIceberg's requests.Session headers (catalog/rest/__init__.py _create_session),
// with the legacy auth manager's literal "Bearer None" when no token is configured.
const PY_HEADERS = {
  'Content-Type': 'application/json',
  'X-Client-Version': '0.14.1',
  'User-Agent': 'PyIceberg/0.9.1',
  'X-Iceberg-Access-Delegation': 'vended-credentials',
  Authorization: 'Bearer None',
  Accept: '*/*',
  'Accept-Encoding': 'gzip, deflate',
  Connection: 'keep-alive',
};
const py = (method, path, body) => {
  const headers = { ...PY_HEADERS };
  // requests sends Content-Length: 0 on a body-less DELETE/POST, none on GET/HEAD
  if (body === undefined && method !== 'GET' && method !== 'HEAD') headers['Content-Length'] = '0';
  return request(base, method, path, { headers, body: body === undefined ? undefined : JSON.stringify(body) });
};

// DuckDB (httplib via HTTPUtil): its own User-Agent, a bearer TOKEN, Content-Type only
// on POST, the access-delegation header on namespace GETs.
const DUCK_HEADERS = {
  'User-Agent': 'duckdb/v1.4.1(linux_amd64) cpp',
  Authorization: 'Bearer duck-token',
  Accept: '*/*',
};
const duck = (method, path, { body, delegation = false } = {}) => {
  const headers = { ...DUCK_HEADERS };
  if (delegation) headers['X-Iceberg-Access-Delegation'] = 'vended-credentials';
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (body === undefined && method === 'DELETE') headers['Content-Length'] = '0';
  return request(base, method, path, { headers, body });
};

test('PyIceberg: load_catalog(warehouse=default) config call', async () => {
  const cfg = expectJson(await py('GET', '/v1/config?warehouse=default'), 200, 'CatalogConfig');
  prefix = cfg.overrides.prefix;
  assert.ok(prefix, 'prefix override present');
  // PyIceberg unquotes the separator: "%1F" -> \x1f
  assert.equal(decodeURIComponent(cfg.overrides['namespace-separator']), '\x1f');
});

test('PyIceberg: namespace lifecycle with nested %1F and %2F', async () => {
  const P = `/v1/${prefix}`;
  // create_namespace("py") then ("py", "a/b") -- body always carries properties {}
  expectJson(await py('POST', `${P}/namespaces`, { namespace: ['py'], properties: {} }), 200, 'CreateNamespaceResponse');
  expectJson(
    await py('POST', `${P}/namespaces`, { namespace: ['py', 'a/b'], properties: { owner: 'py' } }),
    200,
    'CreateNamespaceResponse',
  );
  expectJson(await py('POST', `${P}/namespaces`, { namespace: ['py', 'a/b', 'c'], properties: {} }), 200);
  // 409 -> NamespaceAlreadyExistsError (PyIceberg parses the error body)
  expectError(
    await py('POST', `${P}/namespaces`, { namespace: ['py'], properties: {} }),
    409,
    'AlreadyExistsException',
  );

  // list_namespaces(("py",)) and (("py","a/b")): requests encodes \x1f as %1F, / as %2F
  const l1 = expectJson(await py('GET', `${P}/namespaces?parent=py`), 200, 'ListNamespacesResponse');
  assert.deepEqual(l1.namespaces, [['py', 'a/b']]);
  const l2 = expectJson(await py('GET', `${P}/namespaces?parent=py%1Fa%2Fb`), 200, 'ListNamespacesResponse');
  assert.deepEqual(l2.namespaces, [['py', 'a/b', 'c']]);

  // load_namespace_properties(("py","a/b")): quote(part, safe="") joined by %1F
  const g = expectJson(await py('GET', `${P}/namespaces/py%1Fa%2Fb`), 200, 'GetNamespaceResponse');
  assert.deepEqual(g, { namespace: ['py', 'a/b'], properties: { owner: 'py' } });

  // namespace_exists: HEAD when advertised (Floe advertises it)
  expectNoContent(await py('HEAD', `${P}/namespaces/py%1Fa%2Fb`));
  assert.equal((await py('HEAD', `${P}/namespaces/py%1Fnope`)).status, 404);

  // update_namespace_properties: {"removals": [...], "updates": {...}}
  const u = expectJson(
    await py('POST', `${P}/namespaces/py%1Fa%2Fb/properties`, { removals: ['owner', 'gone'], updates: { k: 'v' } }),
    200,
    'UpdateNamespacePropertiesResponse',
  );
  assert.deepEqual(u.updated, ['k']);
  assert.deepEqual(u.removed, ['owner']);
  assert.deepEqual(u.missing, ['gone']);

  // drop_namespace: DELETE with Content-Type: application/json and Content-Length: 0
  expectError(await py('DELETE', `${P}/namespaces/py%1Fa%2Fb`), 409, 'NamespaceNotEmptyException');
  expectNoContent(await py('DELETE', `${P}/namespaces/py%1Fa%2Fb%1Fc`));
  expectNoContent(await py('DELETE', `${P}/namespaces/py%1Fa%2Fb`));
  expectError(await py('GET', `${P}/namespaces/py%1Fa%2Fb`), 404, 'NoSuchNamespaceException');
  expectNoContent(await py('DELETE', `${P}/namespaces/py`));
});

test('PyIceberg: lower-case %1f and the unprefixed route (no warehouse configured)', async () => {
  expectJson(await py('GET', '/v1/config'), 200, 'CatalogConfig');
  expectJson(await py('POST', '/v1/namespaces', { namespace: ['pyx'], properties: {} }), 200);
  expectJson(await py('POST', '/v1/namespaces', { namespace: ['pyx', 'y'], properties: {} }), 200);
  const g = expectJson(await py('GET', '/v1/namespaces/pyx%1fy'), 200, 'GetNamespaceResponse');
  assert.deepEqual(g.namespace, ['pyx', 'y']);
  const l = expectJson(await py('GET', '/v1/namespaces?parent=pyx'), 200, 'ListNamespacesResponse');
  assert.deepEqual(l.namespaces, [['pyx', 'y']]);
  expectNoContent(await py('DELETE', '/v1/namespaces/pyx%1Fy'));
  expectNoContent(await py('DELETE', '/v1/namespaces/pyx'));
});

test('DuckDB: ATTACH, CREATE SCHEMA (exactly 200), nested with %1F, DROP SCHEMA', async () => {
  // ATTACH 'default' AS c (TYPE iceberg, ENDPOINT ..., TOKEN ...)
  const cfg = expectJson(await duck('GET', '/v1/config?warehouse=default'), 200, 'CatalogConfig');
  assert.ok(cfg.defaults && cfg.overrides, 'DuckDB throws unless both defaults and overrides exist');
  const P = `/v1/${cfg.overrides.prefix}`;
  const sep = cfg.overrides['namespace-separator'] ?? '%1F'; // used raw by DuckDB
  // SHOW ALL TABLES -> list namespaces, no pageToken on the first request
  const l0 = expectJson(await duck('GET', `${P}/namespaces`), 200, 'ListNamespacesResponse');
  assert.ok(Array.isArray(l0.namespaces), 'DuckDB reads "namespaces"');

  // CREATE SCHEMA c.duck -> POST must be exactly 200 (DuckDB rejects 201/204)
  const created = await duck('POST', `${P}/namespaces`, { body: JSON.stringify({ namespace: ['duck'] }) });
  assert.equal(created.status, 200, `DuckDB requires 200, got ${created.status} ${created.text}`);
  expectJson(created, 200, 'CreateNamespaceResponse');
  // nested (SUPPORT_NESTED_NAMESPACES): separator as advertised, raw
  expectJson(await duck('POST', `${P}/namespaces`, { body: JSON.stringify({ namespace: ['duck', 'inner'] }) }), 200);

  // schema existence: HEAD (advertised) then GET
  expectNoContent(await duck('HEAD', `${P}/namespaces/duck${sep}inner`));
  const g = expectJson(await duck('GET', `${P}/namespaces/duck${sep}inner`, { delegation: true }), 200, 'GetNamespaceResponse');
  assert.deepEqual(g.namespace, ['duck', 'inner']);
  // DuckDB's default separator when none is advertised is the raw 0x1F byte; on the
  // wire it is percent-encoded, so %1F must always work whatever is advertised.
  expectJson(await duck('GET', `${P}/namespaces/duck%1Finner`), 200, 'GetNamespaceResponse');

  // nested listing: parent=<levels joined by the separator>
  const l1 = expectJson(await duck('GET', `${P}/namespaces?parent=duck`), 200, 'ListNamespacesResponse');
  assert.deepEqual(l1.namespaces, [['duck', 'inner']]);
  const l2 = expectJson(await duck('GET', `${P}/namespaces?parent=duck${sep}inner`), 200, 'ListNamespacesResponse');
  assert.deepEqual(l2.namespaces, []);

  // ALTER SCHEMA ... SET properties: POST .../properties (200 only)
  const up = await duck('POST', `${P}/namespaces/duck/properties`, { body: JSON.stringify({ updates: { a: 'b' } }) });
  expectJson(up, 200, 'UpdateNamespacePropertiesResponse');

  // DROP SCHEMA: DELETE with an empty body; 200 or 204 accepted by DuckDB, Floe gives 204
  expectNoContent(await duck('DELETE', `${P}/namespaces/duck${sep}inner`));
  expectNoContent(await duck('DELETE', `${P}/namespaces/duck`));
  assert.equal((await duck('HEAD', `${P}/namespaces/duck`)).status, 404);
});

test('DuckDB: a separate pageToken loop over many schemas ends and sees each once', async () => {
  const cfg = expectJson(await duck('GET', '/v1/config?warehouse=default'), 200, 'CatalogConfig');
  const P = `/v1/${cfg.overrides.prefix}`;
  const names = Array.from({ length: 25 }, (_, i) => `dk${String(i).padStart(2, '0')}`);
  for (const n of names) {
    expectJson(await duck('POST', `${P}/namespaces`, { body: JSON.stringify({ namespace: [n] }) }), 200);
  }
  const seen = [];
  let token = '';
  let rounds = 0;
  do {
    const q = token ? `?pageToken=${encodeURIComponent(token)}` : '';
    const page = expectJson(await duck('GET', `${P}/namespaces${q}`), 200, 'ListNamespacesResponse');
    seen.push(...page.namespaces.map((n) => n.join('.')));
    token = page['next-page-token'] ?? '';
    rounds++;
    assert.ok(rounds < 100, 'pagination terminates');
  } while (token);
  for (const n of names) assert.equal(seen.filter((s) => s === n).length, 1, `${n} seen once`);
  for (const n of names) expectNoContent(await duck('DELETE', `${P}/namespaces/${n}`));
});

test('PyIceberg session: many requests over one keep-alive connection, chunked bodies', async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set();
  const u = new URL(base);
  const one = (method, path, body, extra = {}) =>
    new Promise((resolve, reject) => {
      const req = http.request(
        { host: u.hostname, port: u.port, method, path, agent, headers: { ...PY_HEADERS, ...extra } },
        (res) => {
          sockets.add(res.socket);
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode, text, headers: res.headers }));
        },
      );
      req.on('error', reject);
      if (body !== undefined) req.write(body);
      req.end();
    });
  try {
    for (let i = 0; i < 20; i++) {
      const c = await one('POST', `/v1/${prefix}/namespaces`, JSON.stringify({ namespace: [`ka${i}`], properties: {} }), {
        'Content-Length': String(JSON.stringify({ namespace: [`ka${i}`], properties: {} }).length),
      });
      assert.equal(c.status, 200, c.text);
      const g = await one('GET', `/v1/${prefix}/namespaces/ka${i}`);
      assert.equal(g.status, 200, g.text);
      const miss = await one('GET', `/v1/${prefix}/namespaces/ka_missing${i}`);
      assert.equal(miss.status, 404, 'an error response keeps the connection usable');
    }
    // a chunked request body (no Content-Length)
    const ch = await one('POST', `/v1/${prefix}/namespaces`, JSON.stringify({ namespace: ['chunked'] }), {
      'Transfer-Encoding': 'chunked',
    });
    assert.equal(ch.status, 200, ch.text);
    assert.equal(sockets.size, 1, `expected one reused connection, saw ${sockets.size}`);
    for (let i = 0; i < 20; i++) assert.equal((await one('DELETE', `/v1/${prefix}/namespaces/ka${i}`, undefined, { 'Content-Length': '0' })).status, 204);
    assert.equal((await one('DELETE', `/v1/${prefix}/namespaces/chunked`, undefined, { 'Content-Length': '0' })).status, 204);
  } finally {
    agent.destroy();
  }
});

// PyIceberg create_table body (stage-create false, ids assigned client-side).
const PY_CREATE_TABLE = {
  name: 't1',
  schema: {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'id', type: 'long', required: true },
      { id: 2, name: 'v', type: 'string', required: false },
    ],
    'identifier-field-ids': [],
  },
  'partition-spec': { 'spec-id': 0, fields: [] },
  'write-order': { 'order-id': 0, fields: [] },
  'stage-create': false,
  properties: {},
};

test('with tables: drop of a namespace holding a table -> 409; purgeRequested=False / =false drops', async () => {
  const cfg = expectJson(await py('GET', '/v1/config?warehouse=default'), 200, 'CatalogConfig');
  assert.ok(cfg.endpoints.includes('POST /v1/{prefix}/namespaces/{namespace}/tables'), 'table creation is advertised');
  const P = `/v1/${cfg.overrides.prefix}`;
  expectJson(await py('POST', `${P}/namespaces`, { namespace: ['pyt'], properties: {} }), 200);
  expectJson(await py('POST', `${P}/namespaces`, { namespace: ['pyt', 'x/y'], properties: {} }), 200);
  const ns = 'pyt%1Fx%2Fy';
  const created = expectJson(await py('POST', `${P}/namespaces/${ns}/tables`, PY_CREATE_TABLE), 200, 'LoadTableResult');
  assert.ok(created['metadata-location'], 'metadata-location');
  const list = expectJson(await py('GET', `${P}/namespaces/${ns}/tables`), 200, 'ListTablesResponse');
  assert.deepEqual(list.identifiers, [{ namespace: ['pyt', 'x/y'], name: 't1' }]);
  expectError(await py('DELETE', `${P}/namespaces/${ns}`), 409, 'NamespaceNotEmptyException');
  // PyIceberg drop_table: DELETE ...?purgeRequested=False (Python bool string)
  expectNoContent(await py('DELETE', `${P}/namespaces/${ns}/tables/t1?purgeRequested=False`));
  expectError(await py('GET', `${P}/namespaces/${ns}/tables/t1`), 404, 'NoSuchTableException');
  // DuckDB DROP TABLE: ?purgeRequested=false
  expectJson(await py('POST', `${P}/namespaces/${ns}/tables`, { ...PY_CREATE_TABLE, name: 't2' }), 200, 'LoadTableResult');
  const d = await duck('DELETE', `${P}/namespaces/${ns}/tables/t2?purgeRequested=false`);
  assert.ok(d.status === 204 || d.status === 200, `DuckDB accepts 200/204, got ${d.status} ${d.text}`);
  expectNoContent(await py('DELETE', `${P}/namespaces/${ns}`));
  expectNoContent(await py('DELETE', `${P}/namespaces/pyt`));
});
