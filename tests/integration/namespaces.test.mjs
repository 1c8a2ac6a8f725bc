// Namespaces and /v1/config, through iceberg-js@1.0.0 and through raw HTTP. Every
// response body is validated against the upstream REST spec (lib/clients.mjs does it
// for iceberg-js; expectJson/expectError for raw requests).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { IcebergError } from 'iceberg-js';
import { freshDatabase, startFloe, request, encodeNs } from './lib/harness.mjs';
import { expectJson, expectError, expectNoContent } from './lib/checks.mjs';
import { catalog } from './lib/clients.mjs';
import { specOperations } from './lib/spec.mjs';

let floe;
let base;
let prefix; // overrides.prefix of the default warehouse
const r = (method, path, opts) => request(base, method, path, opts);

before(async () => {
  const db = await freshDatabase('namespaces');
  floe = await startFloe({ databaseUrl: db.url });
  base = floe.baseUrl;
  const cfg = expectJson(await r('GET', '/v1/config'), 200, 'CatalogConfig');
  prefix = cfg.overrides.prefix;
});

after(async () => {
  await floe?.stop();
});

const P = () => `/v1/${encodeURIComponent(prefix)}`;

async function rejects(promise, status, type) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof IcebergError, `expected IcebergError, got ${e}`);
    assert.equal(e.status, status, `status: ${e.message}`);
    if (type) assert.equal(e.icebergType, type, `type: ${e.message}`);
    return true;
  });
}

// ---------------------------------------------------------------- /v1/config

test('GET /v1/config without and with ?warehouse=', async () => {
  const plain = expectJson(await r('GET', '/v1/config'), 200, 'CatalogConfig');
  assert.equal(typeof plain.defaults, 'object');
  assert.equal(typeof plain.overrides.prefix, 'string');
  assert.ok(plain.overrides.prefix.length > 0, 'default warehouse has a prefix');
  assert.equal(plain.overrides['namespace-separator'], '%1F');
  assert.ok(Array.isArray(plain.endpoints), 'endpoints advertised');

  const withWh = expectJson(await r('GET', '/v1/config?warehouse=default'), 200, 'CatalogConfig');
  assert.equal(withWh.overrides.prefix, plain.overrides.prefix);
  assert.equal(withWh.overrides['namespace-separator'], '%1F');
  assert.deepEqual(withWh.endpoints, plain.endpoints);
});

test('GET /v1/config?warehouse=<unknown> is 404 NoSuchWarehouseException', async () => {
  expectError(await r('GET', '/v1/config?warehouse=no_such_wh'), 404, 'NoSuchWarehouseException', 'no_such_wh');
});

const NAMESPACE_ENDPOINTS = [
  'GET /v1/{prefix}/namespaces',
  'POST /v1/{prefix}/namespaces',
  'GET /v1/{prefix}/namespaces/{namespace}',
  'HEAD /v1/{prefix}/namespaces/{namespace}',
  'DELETE /v1/{prefix}/namespaces/{namespace}',
  'POST /v1/{prefix}/namespaces/{namespace}/properties',
];

// A request for an endpoint template, filled with harmless values.
function sampleRequest(endpoint, ns, dropNs) {
  const [method, template] = endpoint.split(' ');
  const nsSeg = method === 'DELETE' && template === '/v1/{prefix}/namespaces/{namespace}' ? dropNs : ns;
  const p = template
    .replace('{prefix}', encodeURIComponent(prefix))
    .replace('{namespace}', encodeURIComponent(nsSeg))
    .replace('{table}', 'no_such_table')
    .replace('{view}', 'no_such_view')
    .replace('{plan-id}', 'no-such-plan')
    .replace('{function}', 'no_such_function');
  const body = method === 'POST' || method === 'PUT' ? {} : undefined;
  return { method, path: p, body };
}

const isUnrouted = (res) =>
  res.status === 405 ||
  res.status === 501 ||
  (res.status === 404 && res.json?.error?.type === 'NoSuchResourceException');

test('config endpoints are exactly the implemented set', async () => {
  const cfg = expectJson(await r('GET', '/v1/config'), 200, 'CatalogConfig');
  const eps = cfg.endpoints;
  assert.equal(new Set(eps).size, eps.length, `duplicate endpoints: ${eps}`);
  const known = new Set(specOperations());
  for (const ep of eps) {
    assert.match(ep, /^(GET|POST|DELETE|HEAD|PUT) \/v1\/\S+$/, `endpoint format "${ep}"`);
    assert.ok(known.has(ep), `"${ep}" is not an operation of the upstream spec`);
  }
  for (const ep of NAMESPACE_ENDPOINTS) assert.ok(eps.includes(ep), `namespace endpoint "${ep}" not advertised`);

  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: ['ep_probe'] } }), 200);
  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: ['ep_probe_drop'] } }), 200);

  // Each advertised endpoint is routed: not 405/501 and not the unknown-route 404.
  const ordered = [...eps].sort((a, b) => (a.startsWith('DELETE') ? 1 : 0) - (b.startsWith('DELETE') ? 1 : 0));
  for (const ep of ordered) {
    const s = sampleRequest(ep, 'ep_probe', 'ep_probe_drop');
    const res = await r(s.method, s.path, { body: s.body });
    assert.ok(!isUnrouted(res), `advertised "${ep}" is not implemented: ${s.method} ${s.path} -> ${res.status} ${res.text}`);
    assert.ok(res.status < 500, `advertised "${ep}" -> ${res.status} ${res.text}`);
    assert.ok(!(res.status === 406), `advertised "${ep}" answers 406 UnsupportedOperation`);
  }

  // Each spec operation that is NOT advertised is not served either (discovery only
  // routes /v1/config and the deprecated token endpoint are outside `endpoints`).
  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: ['ep_probe_drop'] } }), 200);
  for (const ep of specOperations()) {
    if (eps.includes(ep) || ep === 'GET /v1/config' || ep === 'POST /v1/oauth/tokens') continue;
    if (ep.startsWith('HEAD ')) continue; // no body to tell "no route" from "no such table"
    const s = sampleRequest(ep, 'ep_probe', 'ep_probe_drop');
    const res = await r(s.method, s.path, { body: s.body });
    assert.ok(
      isUnrouted(res) || res.status === 406,
      `"${ep}" is served (${s.method} ${s.path} -> ${res.status} ${res.text.slice(0, 200)}) but not advertised in endpoints`,
    );
  }
});

// ------------------------------------------------------------ iceberg-js CRUD

test('iceberg-js: every namespace operation, responses spec-valid', async () => {
  const seen = [];
  const c = catalog(base, { warehouse: 'default', seen });
  const cfg = await c.loadConfig();
  assert.equal(cfg.overrides.prefix, prefix);

  const created = await c.createNamespace({ namespace: ['ijs'] }, { properties: { owner: 'alice', 'k.1': 'v 1' } });
  assert.deepEqual(created.namespace, ['ijs']);
  assert.deepEqual(created.properties ?? {}, { owner: 'alice', 'k.1': 'v 1' });

  await rejects(c.createNamespace({ namespace: ['ijs'] }), 409, 'AlreadyExistsException');
  assert.deepEqual((await c.createNamespaceIfNotExists({ namespace: ['ijs'] })) ?? null, null);

  assert.deepEqual((await c.loadNamespaceMetadata({ namespace: ['ijs'] })).properties, {
    owner: 'alice',
    'k.1': 'v 1',
  });
  assert.equal(await c.namespaceExists({ namespace: ['ijs'] }), true);
  assert.equal(await c.namespaceExists({ namespace: ['ijs_missing'] }), false);

  const upd = await c.updateNamespaceProperties(
    { namespace: ['ijs'] },
    { updates: { owner: 'bob', team: 'data' }, removals: ['k.1', 'never-set'] },
  );
  assert.deepEqual([...upd.updated].sort(), ['owner', 'team']);
  assert.deepEqual(upd.removed, ['k.1']);
  assert.deepEqual(upd.missing, ['never-set']);
  assert.deepEqual((await c.loadNamespaceMetadata({ namespace: ['ijs'] })).properties, {
    owner: 'bob',
    team: 'data',
  });

  await c.createNamespace({ namespace: ['ijs', 'child'] });
  const top = await c.listNamespaces();
  assert.ok(top.namespaces.some((n) => n.namespace.length === 1 && n.namespace[0] === 'ijs'));
  assert.ok(top.namespaces.every((n) => n.namespace.length === 1), 'top-level list has only one-level namespaces');
  const kids = await c.listNamespaces({ parent: { namespace: ['ijs'] } });
  assert.deepEqual(kids.namespaces, [{ namespace: ['ijs', 'child'] }]);

  await rejects(c.dropNamespace({ namespace: ['ijs'] }), 409, 'NamespaceNotEmptyException');
  await c.dropNamespace({ namespace: ['ijs', 'child'] });
  await c.dropNamespace({ namespace: ['ijs'] });
  await rejects(c.loadNamespaceMetadata({ namespace: ['ijs'] }), 404, 'NoSuchNamespaceException');
  await rejects(c.dropNamespace({ namespace: ['ijs'] }), 404, 'NoSuchNamespaceException');
  await rejects(
    c.updateNamespaceProperties({ namespace: ['ijs'] }, { updates: { a: 'b' } }),
    404,
    'NoSuchNamespaceException',
  );
  await rejects(c.createNamespace({ namespace: ['ijs_nope', 'x'] }), 404, 'NoSuchNamespaceException');
  await rejects(c.listNamespaces({ parent: { namespace: ['ijs_nope'] } }), 404, 'NoSuchNamespaceException');

  // iceberg-js used the prefix route and sent its usual headers.
  assert.ok(seen.some((s) => s.url.includes(`/v1/${prefix}/namespaces`)), 'prefix route used');
  assert.ok(seen.length >= 15);
});

test('iceberg-js without a warehouse uses the unprefixed routes', async () => {
  const seen = [];
  const c = catalog(base, { seen });
  await c.createNamespace({ namespace: ['noprefix_ijs'] }, { properties: { a: '1' } });
  assert.ok(seen.every((s) => /\/v1\/namespaces/.test(s.url)), `unexpected urls ${seen.map((s) => s.url)}`);
  // Same default warehouse as the prefixed route.
  const viaPrefix = expectJson(await r('GET', `${P()}/namespaces/noprefix_ijs`), 200, 'GetNamespaceResponse');
  assert.deepEqual(viaPrefix, { namespace: ['noprefix_ijs'], properties: { a: '1' } });
  await c.dropNamespace({ namespace: ['noprefix_ijs'] });
  expectError(await r('GET', `${P()}/namespaces/noprefix_ijs`), 404, 'NoSuchNamespaceException');
});

test('iceberg-js: nested namespaces of depth 5', async () => {
  const c = catalog(base, { warehouse: 'default' });
  const levels = ['d1', 'd2', 'd3', 'd4', 'd5'];
  for (let i = 1; i <= levels.length; i++) {
    const ns = levels.slice(0, i);
    const res = await c.createNamespace({ namespace: ns }, { properties: { depth: String(i) } });
    assert.deepEqual(res.namespace, ns);
  }
  for (let i = 1; i <= levels.length; i++) {
    const ns = levels.slice(0, i);
    assert.deepEqual((await c.loadNamespaceMetadata({ namespace: ns })).properties, { depth: String(i) });
    assert.equal(await c.namespaceExists({ namespace: ns }), true);
    const kids = await c.listNamespaces({ parent: { namespace: ns } });
    assert.deepEqual(kids.namespaces, i < levels.length ? [{ namespace: levels.slice(0, i + 1) }] : []);
  }
  const raw = expectJson(await r('GET', `${P()}/namespaces/${encodeNs(levels)}`), 200, 'GetNamespaceResponse');
  assert.deepEqual(raw.namespace, levels);
  // a missing middle level
  await rejects(c.createNamespace({ namespace: ['d1', 'dX', 'd3'] }), 404, 'NoSuchNamespaceException');
  await rejects(c.dropNamespace({ namespace: ['d1', 'd2'] }), 409, 'NamespaceNotEmptyException');
  for (let i = levels.length; i >= 1; i--) await c.dropNamespace({ namespace: levels.slice(0, i) });
  assert.equal(await c.namespaceExists({ namespace: ['d1'] }), false);
});

const ODD_NAMES = [
  'with/slash',
  'with space',
  'dots.in.name',
  'ünïcødé-数据-🚀',
  '100%',
  'pct%2Fliteral',
  'sep%1Fliteral',
  'a+b',
  "x!'()*~",
  'q?h#a&b=c',
  '-',
];

test('iceberg-js: names with / space . unicode % round-trip exactly', async () => {
  const c = catalog(base, { warehouse: 'default' });
  const parent = ['odd parent/x'];
  await c.createNamespace({ namespace: parent });
  for (const name of ODD_NAMES) {
    const ns = [...parent, name];
    const res = await c.createNamespace({ namespace: ns }, { properties: { name } });
    assert.deepEqual(res.namespace, ns, `create ${JSON.stringify(name)}`);
    assert.deepEqual((await c.loadNamespaceMetadata({ namespace: ns })).properties, { name }, `load ${name}`);
    assert.equal(await c.namespaceExists({ namespace: ns }), true, `exists ${name}`);
    // also as a top-level namespace
    const top = await c.createNamespace({ namespace: [name] });
    assert.deepEqual(top.namespace, [name]);
  }
  const kids = await c.listNamespaces({ parent: { namespace: parent } });
  const got = kids.namespaces.map((n) => n.namespace);
  assert.deepEqual(
    [...got].sort(),
    ODD_NAMES.map((n) => [...parent, n]).sort(),
    'list under a parent whose name has a space and a slash',
  );
  const top = (await c.listNamespaces()).namespaces.map((n) => n.namespace[0]);
  for (const name of ODD_NAMES) assert.ok(top.includes(name), `top-level list lacks ${JSON.stringify(name)}`);
  for (const name of ODD_NAMES) {
    await c.dropNamespace({ namespace: [...parent, name] });
    await c.dropNamespace({ namespace: [name] });
  }
  await c.dropNamespace({ namespace: parent });
});

// -------------------------------------------------------------- raw HTTP CRUD

test('raw: create/load/list/HEAD/drop with odd names, prefixed and unprefixed routes', async () => {
  const parent = 'raw odd';
  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: [parent] } }), 200, 'CreateNamespaceResponse');
  for (const name of ODD_NAMES) {
    const ns = [parent, name];
    const body = expectJson(
      await r('POST', `${P()}/namespaces`, { body: { namespace: ns, properties: { n: name } } }),
      200,
      'CreateNamespaceResponse',
    );
    assert.deepEqual(body.namespace, ns);
    assert.deepEqual(body.properties, { n: name });
    for (const route of [P(), '/v1']) {
      const got = expectJson(await r('GET', `${route}/namespaces/${encodeNs(ns)}`), 200, 'GetNamespaceResponse');
      assert.deepEqual(got, { namespace: ns, properties: { n: name } }, `${route} load ${name}`);
      expectNoContent(await r('HEAD', `${route}/namespaces/${encodeNs(ns)}`));
    }
  }
  // parent in the query: %20 for the space here (iceberg-js used '+')
  const list = expectJson(
    await r('GET', `${P()}/namespaces?parent=${encodeURIComponent(parent)}`),
    200,
    'ListNamespacesResponse',
  );
  assert.deepEqual([...list.namespaces].sort(), ODD_NAMES.map((n) => [parent, n]).sort());
  const list2 = expectJson(await r('GET', `/v1/namespaces?parent=raw+odd`), 200, 'ListNamespacesResponse');
  assert.deepEqual([...list2.namespaces].sort(), [...list.namespaces].sort(), "'+' in a query means space");
  for (const name of ODD_NAMES) {
    expectNoContent(await r('DELETE', `/v1/namespaces/${encodeNs([parent, name])}`));
    const res = await r('HEAD', `${P()}/namespaces/${encodeNs([parent, name])}`);
    assert.equal(res.status, 404, `HEAD after drop of ${name}`);
    assert.equal(res.text, '');
  }
  expectNoContent(await r('DELETE', `${P()}/namespaces/${encodeURIComponent(parent)}`));
});

test('raw: a literal + in a path segment is a plus, not a space', async () => {
  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: ['p+lus'] } }), 200);
  const got = expectJson(await r('GET', `${P()}/namespaces/p+lus`), 200, 'GetNamespaceResponse');
  assert.deepEqual(got.namespace, ['p+lus']);
  expectError(await r('GET', `${P()}/namespaces/p%20lus`), 404, 'NoSuchNamespaceException');
  expectNoContent(await r('DELETE', `${P()}/namespaces/p%2Blus`));
});

test('raw: create existing -> 409, parent missing -> 404, missing -> 404 everywhere', async () => {
  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: ['dup'] } }), 200);
  expectError(await r('POST', `${P()}/namespaces`, { body: { namespace: ['dup'] } }), 409, 'AlreadyExistsException', 'dup');
  expectError(await r('POST', `/v1/namespaces`, { body: { namespace: ['dup'] } }), 409, 'AlreadyExistsException');
  expectError(
    await r('POST', `${P()}/namespaces`, { body: { namespace: ['no_parent', 'child'] } }),
    404,
    'NoSuchNamespaceException',
    'no_parent',
  );
  expectError(await r('GET', `${P()}/namespaces?parent=no_parent`), 404, 'NoSuchNamespaceException');
  expectError(await r('GET', `${P()}/namespaces/no_parent`), 404, 'NoSuchNamespaceException', 'no_parent');
  expectError(await r('DELETE', `${P()}/namespaces/no_parent`), 404, 'NoSuchNamespaceException');
  expectError(
    await r('POST', `${P()}/namespaces/no_parent/properties`, { body: { updates: { a: 'b' } } }),
    404,
    'NoSuchNamespaceException',
  );
  const head = await r('HEAD', `${P()}/namespaces/no_parent`);
  assert.equal(head.status, 404);
  assert.equal(head.text, '');
  expectNoContent(await r('HEAD', `${P()}/namespaces/dup`));
  expectNoContent(await r('DELETE', `${P()}/namespaces/dup`));
});

test('raw: drop non-empty -> 409 NamespaceNotEmptyException naming what it holds', async () => {
  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: ['full'] } }), 200);
  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: ['full', 'kid'] } }), 200);
  expectError(await r('DELETE', `${P()}/namespaces/full`), 409, 'NamespaceNotEmptyException',
    /namespace full is not empty: it holds 1 namespace$/);
  expectJson(await r('GET', `${P()}/namespaces/full`), 200, 'GetNamespaceResponse');
  // The message counts what the namespace holds, each kind once, in words.
  const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', type: 'long', required: false }] };
  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: ['full', 'kid2'] } }), 200);
  expectJson(await r('POST', `${P()}/namespaces/full/tables`, { body: { name: 't', schema } }), 200);
  expectJson(await r('POST', `${P()}/namespaces/full/views`, { body: { name: 'v', schema,
    'view-version': { 'version-id': 1, 'timestamp-ms': Date.now(), 'schema-id': 0, summary: {},
      representations: [{ type: 'sql', sql: 'SELECT 1', dialect: 'spark' }], 'default-namespace': ['full'] } } }), 200);
  expectError(await r('DELETE', `${P()}/namespaces/full`), 409, 'NamespaceNotEmptyException',
    /it holds 2 namespaces, 1 table and 1 view$/);
  expectNoContent(await r('DELETE', `${P()}/namespaces/full%1Fkid2`));
  expectNoContent(await r('DELETE', `${P()}/namespaces/full/views/v`));
  expectError(await r('DELETE', `${P()}/namespaces/full`), 409, 'NamespaceNotEmptyException',
    /it holds 1 namespace and 1 table$/);
  expectNoContent(await r('DELETE', `${P()}/namespaces/full%1Fkid`));
  expectNoContent(await r('DELETE', `${P()}/namespaces/full/tables/t`));
  expectNoContent(await r('DELETE', `${P()}/namespaces/full`));
});

test('raw: update properties -> {updated, removed, missing}; key in both -> 422', async () => {
  expectJson(
    await r('POST', `${P()}/namespaces`, { body: { namespace: ['props'], properties: { a: '1', b: '2', c: '3' } } }),
    200,
  );
  const res = expectJson(
    await r('POST', `${P()}/namespaces/props/properties`, {
      body: { removals: ['a', 'zz'], updates: { b: '20', d: '4' } },
    }),
    200,
    'UpdateNamespacePropertiesResponse',
  );
  assert.deepEqual([...res.updated].sort(), ['b', 'd']);
  assert.deepEqual(res.removed, ['a']);
  assert.deepEqual(res.missing, ['zz']);
  const after1 = expectJson(await r('GET', `${P()}/namespaces/props`), 200, 'GetNamespaceResponse');
  assert.deepEqual(after1.properties, { b: '20', c: '3', d: '4' });

  expectError(
    await r('POST', `${P()}/namespaces/props/properties`, { body: { removals: ['c'], updates: { c: 'x' } } }),
    422,
    'UnprocessableEntityException',
    'c',
  );
  const after2 = expectJson(await r('GET', `${P()}/namespaces/props`), 200, 'GetNamespaceResponse');
  assert.deepEqual(after2.properties, { b: '20', c: '3', d: '4' }, 'a rejected update changes nothing');

  // empty request: nothing changes
  const empty = expectJson(
    await r('POST', `${P()}/namespaces/props/properties`, { body: {} }),
    200,
    'UpdateNamespacePropertiesResponse',
  );
  assert.deepEqual(empty.updated, []);
  assert.deepEqual(empty.removed, []);
  expectNoContent(await r('DELETE', `${P()}/namespaces/props`));
});

test('raw: a new namespace without properties loads with {}', async () => {
  const c = expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: ['bare'] } }), 200, 'CreateNamespaceResponse');
  assert.deepEqual(c.namespace, ['bare']);
  const g = expectJson(await r('GET', `${P()}/namespaces/bare`), 200, 'GetNamespaceResponse');
  assert.deepEqual(g.properties, {});
  expectNoContent(await r('DELETE', `${P()}/namespaces/bare`));
});

// ---------------------------------------------------------------- pagination

test('pagination: every pageSize walks all children once, in one stable order', async () => {
  const parent = 'pages';
  const names = ['b', 'a', 'C', 'a_1', 'ä', 'z z', 'm/n', '0'];
  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: [parent] } }), 200);
  for (const n of names) expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: [parent, n] } }), 200);

  const all = expectJson(await r('GET', `${P()}/namespaces?parent=${parent}`), 200, 'ListNamespacesResponse');
  assert.equal(all['next-page-token'] ?? null, null, 'no pageToken -> everything, next-page-token null/absent');
  assert.deepEqual([...all.namespaces].sort(), names.map((n) => [parent, n]).sort());
  const order = all.namespaces.map((ns) => JSON.stringify(ns));

  for (let size = 1; size <= names.length + 1; size++) {
    const walked = [];
    let token = '';
    let pages = 0;
    for (;;) {
      const q = `parent=${parent}&pageSize=${size}&pageToken=${encodeURIComponent(token)}`;
      const page = expectJson(await r('GET', `${P()}/namespaces?${q}`), 200, 'ListNamespacesResponse');
      assert.ok(page.namespaces.length <= size, `page of ${page.namespaces.length} > pageSize ${size}`);
      walked.push(...page.namespaces.map((ns) => JSON.stringify(ns)));
      pages++;
      assert.ok(pages <= names.length + 2, `pageSize ${size}: pagination does not end`);
      const next = page['next-page-token'];
      if (next === null || next === undefined) break;
      assert.equal(typeof next, 'string');
      assert.ok(page.namespaces.length > 0, 'a non-final page is not empty');
      token = next;
    }
    assert.equal(new Set(walked).size, walked.length, `pageSize ${size}: duplicates ${walked}`);
    assert.deepEqual(walked, order, `pageSize ${size}: order differs from the unpaged list`);
  }
});

test('pagination: garbage and tampered pageToken -> 400', async () => {
  const first = expectJson(
    await r('GET', `${P()}/namespaces?parent=pages&pageSize=2&pageToken=`),
    200,
    'ListNamespacesResponse',
  );
  const token = first['next-page-token'];
  assert.equal(typeof token, 'string', 'a first page of 2 of 8 has a next-page-token');

  expectError(await r('GET', `${P()}/namespaces?parent=pages&pageToken=not-a-token!!`), 400, 'BadRequestException', /token/i);
  expectError(await r('GET', `${P()}/namespaces?pageToken=%00%01garbage`), 400, 'BadRequestException', /token/i);
  // flip one character in the middle of a real token
  const mid = Math.floor(token.length / 2);
  const flipped = token.slice(0, mid) + (token[mid] === 'A' ? 'B' : 'A') + token.slice(mid + 1);
  expectError(
    await r('GET', `${P()}/namespaces?parent=pages&pageSize=2&pageToken=${encodeURIComponent(flipped)}`),
    400,
    'BadRequestException',
    /token/i,
  );
  expectError(
    await r('GET', `${P()}/namespaces?parent=pages&pageSize=2&pageToken=${encodeURIComponent(token + 'x')}`),
    400,
    'BadRequestException',
    /token/i,
  );
  // bad page sizes
  for (const bad of ['0', '-1', 'abc', '1.5']) {
    expectError(await r('GET', `${P()}/namespaces?pageSize=${bad}`), 400, 'BadRequestException', /pageSize/i);
  }
});

test('iceberg-js pagination follows nextPageToken', async () => {
  const c = catalog(base, { warehouse: 'default' });
  const seen = [];
  let token;
  do {
    const page = await c.listNamespaces({ parent: { namespace: ['pages'] }, pageSize: 3, pageToken: token ?? '' });
    seen.push(...page.namespaces.map((n) => n.namespace[1]));
    token = page.nextPageToken;
  } while (token);
  assert.equal(seen.length, 8);
  assert.equal(new Set(seen).size, 8);
});

test('pagination: pageSize without pageToken walks to the end like Java CatalogHandlers', async () => {
  // The spec's PageToken text says a request without pageToken gets everything; the
  // Java reference (CatalogHandlers.paginate) pages from the start instead. Clients
  // loop on next-page-token either way, so both are accepted; the walk must be complete.
  const seen = [];
  let q = `parent=pages&pageSize=3`;
  for (let i = 0; i < 10; i++) {
    const res = expectJson(await r('GET', `${P()}/namespaces?${q}`), 200, 'ListNamespacesResponse');
    seen.push(...res.namespaces.map((n) => n[1]));
    const t = res['next-page-token'];
    if (t === null || t === undefined) break;
    q = `parent=pages&pageSize=3&pageToken=${encodeURIComponent(t)}`;
  }
  assert.equal(seen.length, 8);
  assert.equal(new Set(seen).size, 8);
});

// ---------------------------------------------------------------- identity

test('names are byte-exact: case and Unicode normalisation make distinct namespaces', async () => {
  const names = ['Case', 'case', 'CASE', 'caf\u00e9', 'cafe\u0301']; // NFC vs NFD é
  for (const n of names) {
    expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: [n], properties: { n } } }), 200);
  }
  for (const n of names) {
    const g = expectJson(await r('GET', `${P()}/namespaces/${encodeURIComponent(n)}`), 200, 'GetNamespaceResponse');
    assert.deepEqual(g, { namespace: [n], properties: { n } });
  }
  for (const n of names) expectNoContent(await r('DELETE', `${P()}/namespaces/${encodeURIComponent(n)}`));
});

test('concurrent creates of one name: exactly one 200, the rest 409', async () => {
  const results = await Promise.all(
    Array.from({ length: 12 }, () => r('POST', `${P()}/namespaces`, { body: { namespace: ['race'] } })),
  );
  const ok = results.filter((x) => x.status === 200);
  const conflict = results.filter((x) => x.status === 409);
  assert.equal(ok.length, 1, `statuses ${results.map((x) => x.status)}`);
  assert.equal(conflict.length, results.length - 1, `statuses ${results.map((x) => `${x.status} ${x.text}`)}`);
  for (const c of conflict) expectError(c, 409, 'AlreadyExistsException');
  // children raced against the drop of their parent: never an orphan
  const ops = [
    r('DELETE', `${P()}/namespaces/race`),
    ...Array.from({ length: 6 }, (_, i) => r('POST', `${P()}/namespaces`, { body: { namespace: ['race', `c${i}`] } })),
  ];
  const out = await Promise.all(ops);
  for (const x of out) assert.ok([200, 204, 404, 409].includes(x.status), `unexpected ${x.status} ${x.text}`);
  const parentThere = (await r('HEAD', `${P()}/namespaces/race`)).status === 204;
  const kids = out.slice(1).filter((x) => x.status === 200).length;
  if (!parentThere) assert.equal(kids, 0, 'children were created under a dropped parent');
  if (parentThere) {
    const l = expectJson(await r('GET', `${P()}/namespaces?parent=race`), 200, 'ListNamespacesResponse');
    assert.equal(l.namespaces.length, kids);
    for (const k of l.namespaces) expectNoContent(await r('DELETE', `${P()}/namespaces/${encodeNs(k)}`));
    expectNoContent(await r('DELETE', `${P()}/namespaces/race`));
  }
});

test('concurrency: property updates to one namespace are never lost; 64 parallel requests, no 5xx', async () => {
  expectJson(await r('POST', `${P()}/namespaces`, { body: { namespace: ['hot'] } }), 200);
  const N = 32;
  const updates = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      r('POST', `${P()}/namespaces/hot/properties`, { body: { updates: { [`k${i}`]: String(i) } } }),
    ),
  );
  for (const u of updates) expectJson(u, 200, 'UpdateNamespacePropertiesResponse');
  const g = expectJson(await r('GET', `${P()}/namespaces/hot`), 200, 'GetNamespaceResponse');
  const want = Object.fromEntries(Array.from({ length: N }, (_, i) => [`k${i}`, String(i)]));
  assert.deepEqual(g.properties, want, 'a concurrent update was lost');

  // concurrent removals of distinct keys, and a mix of every operation
  const mixed = await Promise.all([
    ...Array.from({ length: 16 }, (_, i) => r('POST', `${P()}/namespaces/hot/properties`, { body: { removals: [`k${i}`] } })),
    ...Array.from({ length: 16 }, (_, i) => r('POST', `${P()}/namespaces`, { body: { namespace: ['hot', `c${i}`] } })),
    ...Array.from({ length: 16 }, () => r('GET', `${P()}/namespaces?parent=hot`)),
    ...Array.from({ length: 16 }, () => r('HEAD', `${P()}/namespaces/hot`)),
  ]);
  for (const x of mixed) assert.ok(x.status < 500, `5xx under concurrency: ${x.status} ${x.text}`);
  const g2 = expectJson(await r('GET', `${P()}/namespaces/hot`), 200, 'GetNamespaceResponse');
  assert.deepEqual(Object.keys(g2.properties).sort(), Array.from({ length: 16 }, (_, i) => `k${i + 16}`).sort());
  const kids = expectJson(await r('GET', `${P()}/namespaces?parent=hot`), 200, 'ListNamespacesResponse');
  assert.equal(kids.namespaces.length, 16);
  await Promise.all(kids.namespaces.map((k) => r('DELETE', `${P()}/namespaces/${encodeNs(k)}`)));
  expectNoContent(await r('DELETE', `${P()}/namespaces/hot`));
  expectJson(await r('GET', '/healthz'), 200);
});
