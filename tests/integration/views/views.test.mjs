// Iceberg REST views (rest-catalog-open-api.yaml, "views"): create, list, load,
// exists, replace (CommitViewRequest), rename and drop against a real floe and
// PostgreSQL.  Every 2xx body is validated against the upstream schema
// (LoadViewResult, ListTablesResponse); errors against IcebergErrorResponse with
// a message naming the problem.  Also: assert-view-uuid (409 when stale), a
// view and a table never share a name (409 both ways), the metadata file on
// disk is the stored metadata, and Idempotency-Key replays a view create.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { validate } from '../lib/spec.mjs';
import {
  startCatalog, call, assertError, tablePath, createBody, pySchema, readMetadataFile, uuidv7, encodeNs,
} from '../tables/lib.mjs';

let c;
const NS = ['vw'];
const viewPath = (ns, name) => `${c.p}/namespaces/${encodeNs(ns)}/views/${encodeURIComponent(name)}`;

function version(sql, schemaId = 0) {
  return {
    'version-id': 1,
    'timestamp-ms': Date.now(),
    'schema-id': schemaId,
    summary: { 'engine-name': 'test' },
    representations: [{ type: 'sql', sql, dialect: 'spark' }],
    'default-namespace': NS,
  };
}

const viewBody = (name, extra = {}) => ({
  name,
  schema: pySchema(),
  'view-version': version('SELECT id, data FROM t'),
  properties: { owner: 'test' },
  ...extra,
});

before(async () => {
  c = await startCatalog('views');
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: ['other'] }, expect: 200 });
});

after(async () => {
  await c?.floe.stop();
});

test('config enables the view endpoints', async () => {
  const cfg = validate('CatalogConfig', (await call(c.base, 'GET', '/v1/config?warehouse=default', { expect: 200 })).json);
  assert.equal(cfg.defaults['view-endpoints-supported'], 'true');
  for (const e of [
    'GET /v1/{prefix}/namespaces/{namespace}/views',
    'POST /v1/{prefix}/namespaces/{namespace}/views',
    'GET /v1/{prefix}/namespaces/{namespace}/views/{view}',
    'HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}',
    'POST /v1/{prefix}/namespaces/{namespace}/views/{view}',
    'DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}',
    'POST /v1/{prefix}/views/rename',
    'POST /v1/{prefix}/namespaces/{namespace}/register-view',
  ]) assert.ok(cfg.endpoints.includes(e), `endpoints lists ${e}`);
});

test('create, load, list, exists; the metadata file is the stored metadata', async () => {
  const res = await call(c.base, 'POST', `${c.p}/namespaces/vw/views`, { body: viewBody('v1'), expect: 200 });
  const r = validate('LoadViewResult', res.json);
  const m = r.metadata;
  assert.equal(m['format-version'], 1);
  assert.equal(m['current-version-id'], 1);
  assert.equal(m.versions.length, 1);
  assert.equal(m.versions[0]['schema-id'], 0);
  assert.deepEqual(m['version-log'].map((e) => e['version-id']), [1]);
  assert.equal(m.schemas[0]['schema-id'], 0);
  assert.equal(m.properties.owner, 'test');
  assert.match(r['metadata-location'], /\/vw\/v1\/metadata\/00000-[0-9a-f-]{36}\.metadata\.json$/);
  assert.deepEqual(readMetadataFile(r['metadata-location']), m, 'file on disk = stored metadata');

  const loaded = validate('LoadViewResult', (await call(c.base, 'GET', viewPath(NS, 'v1'), { expect: 200 })).json);
  assert.deepEqual(loaded.metadata, m);
  assert.equal(loaded['metadata-location'], r['metadata-location']);

  await call(c.base, 'HEAD', viewPath(NS, 'v1'), { expect: 204 });
  await call(c.base, 'POST', `${c.p}/namespaces/vw/views`, { body: viewBody('v0'), expect: 200 });
  const page1 = validate('ListTablesResponse', (await call(c.base, 'GET', `${c.p}/namespaces/vw/views?pageSize=1`, { expect: 200 })).json);
  assert.deepEqual(page1.identifiers, [{ namespace: NS, name: 'v0' }]);
  assert.ok(page1['next-page-token']);
  const page2 = validate('ListTablesResponse', (await call(c.base, 'GET',
    `${c.p}/namespaces/vw/views?pageSize=1&pageToken=${encodeURIComponent(page1['next-page-token'])}`, { expect: 200 })).json);
  assert.deepEqual(page2.identifiers, [{ namespace: NS, name: 'v1' }]);
  // Views are not tables.
  const tables = (await call(c.base, 'GET', `${c.p}/namespaces/vw/tables`, { expect: 200 })).json;
  assert.deepEqual(tables.identifiers, []);
  assertError(await call(c.base, 'GET', tablePath(c.p, NS, 'v1')), 404, 'NoSuchTableException', 'v1');
});

test('replace: add-view-version + set-current-view-version -1; assert-view-uuid', async () => {
  const cur = (await call(c.base, 'GET', viewPath(NS, 'v1'), { expect: 200 })).json;
  const uuid = cur.metadata['view-uuid'];
  const body = {
    identifier: { namespace: NS, name: 'v1' },
    requirements: [{ type: 'assert-view-uuid', uuid }],
    updates: [
      { action: 'add-schema', schema: pySchema([{ id: 3, name: 'extra', type: 'int', required: false }]) },
      { action: 'add-view-version', 'view-version': version('SELECT id, data, extra FROM t', -1) },
      { action: 'set-current-view-version', 'view-version-id': -1 },
      { action: 'set-properties', updates: { comment: 'two' } },
      { action: 'remove-properties', removals: ['owner'] },
    ],
  };
  const r = validate('LoadViewResult', (await call(c.base, 'POST', viewPath(NS, 'v1'), { body, expect: 200 })).json);
  const m = r.metadata;
  assert.equal(m['view-uuid'], uuid);
  assert.equal(m['current-version-id'], 2);
  assert.equal(m.versions.length, 2);
  assert.equal(m.versions[1]['schema-id'], 1, 'schema-id -1 resolved to the schema added in this change');
  assert.equal(m.schemas.length, 2);
  assert.deepEqual(m['version-log'].map((e) => e['version-id']), [1, 2]);
  assert.deepEqual(m.properties, { comment: 'two' });
  assert.match(r['metadata-location'], /\/metadata\/00001-/);
  assert.deepEqual(readMetadataFile(r['metadata-location']), m);
  const loaded = (await call(c.base, 'GET', viewPath(NS, 'v1'), { expect: 200 })).json;
  assert.deepEqual(loaded.metadata, m);

  // Back to version 1 by id: a new version-log entry, no new version.
  const back = (await call(c.base, 'POST', viewPath(NS, 'v1'), {
    body: { requirements: [], updates: [{ action: 'set-current-view-version', 'view-version-id': 1 }] }, expect: 200,
  })).json;
  assert.equal(back.metadata['current-version-id'], 1);
  assert.equal(back.metadata.versions.length, 2);

  const stale = await call(c.base, 'POST', viewPath(NS, 'v1'), {
    body: { requirements: [{ type: 'assert-view-uuid', uuid: '00000000-0000-4000-8000-000000000000' }], updates: [] },
  });
  assertError(stale, 409, 'CommitFailedException', 'assert-view-uuid');
  const after = (await call(c.base, 'GET', viewPath(NS, 'v1'), { expect: 200 })).json;
  assert.equal(after['metadata-location'], back['metadata-location'], 'a 409 changed nothing');
});

test('bad inputs are 400 in the error model, naming the problem', async () => {
  const post = (path, body) => call(c.base, 'POST', path, { body });
  assertError(await post(`${c.p}/namespaces/vw/views`, { name: 'x', schema: pySchema() }), 400, 'BadRequestException', 'view-version');
  assertError(await post(`${c.p}/namespaces/vw/views`, { schema: pySchema(), 'view-version': version('s') }), 400, 'BadRequestException', 'name');
  const noReps = { ...version('s'), representations: [] };
  assertError(await post(`${c.p}/namespaces/vw/views`, viewBody('x', { 'view-version': noReps })), 400, 'BadRequestException', 'representations');
  assertError(await post(viewPath(NS, 'v1'), { updates: [{ action: 'frobnicate' }] }), 400, 'BadRequestException', 'frobnicate');
  assertError(await post(viewPath(NS, 'v1'), { requirements: [{ type: 'assert-table-uuid', uuid: 'x' }], updates: [] }),
    400, 'BadRequestException', 'assert-table-uuid');
  assertError(await post(viewPath(NS, 'v1'), { requirements: [] }), 400, 'BadRequestException', 'updates');
  assertError(await post(viewPath(NS, 'v1'), { updates: [{ action: 'set-current-view-version', 'view-version-id': 99 }] }),
    400, 'BadRequestException', '99');
  assertError(await post(viewPath(NS, 'v1'), { updates: [{ action: 'set-current-view-version', 'view-version-id': -1 }] }),
    400, 'BadRequestException', 'no version was added');
  assertError(await post(viewPath(NS, 'v1'), { updates: [{ action: 'upgrade-format-version', 'format-version': 2 }] }),
    400, 'BadRequestException', 'format version');
  assertError(await post(`${c.p}/views/rename`, { source: { namespace: NS, name: 'v1' } }), 400, 'BadRequestException', 'destination');
  // A view's location obeys the table rules: the server never writes outside the warehouse.
  assertError(await post(`${c.p}/namespaces/vw/views`, viewBody('x', { location: 'file:///tmp/elsewhere/x' })),
    400, 'BadRequestException', 'inside the warehouse');
  assertError(await post(viewPath(NS, 'v1'), { updates: [{ action: 'set-location', location: 'file:///tmp/elsewhere/v1' }] }),
    400, 'BadRequestException', 'inside the warehouse');
  assert.equal((await call(c.base, 'GET', viewPath(NS, 'x'))).status, 404, 'no view was created by a bad request');
});

test('a view and a table never share a name (409 both ways, rename included)', async () => {
  await call(c.base, 'POST', `${c.p}/namespaces/vw/tables`, { body: createBody('t1'), expect: 200 });
  assertError(await call(c.base, 'POST', `${c.p}/namespaces/vw/views`, { body: viewBody('t1') }), 409, 'AlreadyExistsException', 't1');
  assertError(await call(c.base, 'POST', `${c.p}/namespaces/vw/tables`, { body: createBody('v1') }), 409, 'AlreadyExistsException', 'v1');
  assertError(await call(c.base, 'POST', `${c.p}/namespaces/vw/views`, { body: viewBody('v1') }), 409, 'AlreadyExistsException', 'v1');
  const mv = (from, to) => call(c.base, 'POST', `${c.p}/views/rename`, {
    body: { source: { namespace: NS, name: from }, destination: { namespace: NS, name: to } },
  });
  assertError(await mv('v1', 't1'), 409, 'AlreadyExistsException', 't1');
  assertError(await mv('v1', 'v0'), 409, 'AlreadyExistsException', 'v0');
  assertError(await call(c.base, 'POST', `${c.p}/tables/rename`, {
    body: { source: { namespace: NS, name: 't1' }, destination: { namespace: NS, name: 'v1' } },
  }), 409, 'AlreadyExistsException', 'v1');
  // A table is not a view: the view routes do not see it.
  assertError(await call(c.base, 'GET', viewPath(NS, 't1')), 404, 'NoSuchViewException', 't1');
  assertError(await call(c.base, 'DELETE', viewPath(NS, 't1')), 404, 'NoSuchViewException', 't1');
});

test('rename and drop; 404s for missing views and namespaces', async () => {
  await call(c.base, 'POST', `${c.p}/views/rename`, {
    body: { source: { namespace: NS, name: 'v0' }, destination: { namespace: ['other'], name: 'moved' } }, expect: 204,
  });
  assertError(await call(c.base, 'GET', viewPath(NS, 'v0')), 404, 'NoSuchViewException', 'v0');
  validate('LoadViewResult', (await call(c.base, 'GET', viewPath(['other'], 'moved'), { expect: 200 })).json);
  assertError(await call(c.base, 'POST', `${c.p}/views/rename`, {
    body: { source: { namespace: NS, name: 'nope' }, destination: { namespace: NS, name: 'n2' } },
  }), 404, 'NoSuchViewException', 'nope');
  assertError(await call(c.base, 'POST', `${c.p}/views/rename`, {
    body: { source: { namespace: ['other'], name: 'moved' }, destination: { namespace: ['ghost'], name: 'n2' } },
  }), 404, 'NoSuchNamespaceException', 'ghost');

  await call(c.base, 'DELETE', viewPath(['other'], 'moved'), { expect: 204 });
  assertError(await call(c.base, 'DELETE', viewPath(['other'], 'moved')), 404, 'NoSuchViewException', 'moved');
  assert.equal((await call(c.base, 'HEAD', viewPath(['other'], 'moved'))).status, 404);
  assertError(await call(c.base, 'GET', viewPath(NS, 'missing')), 404, 'NoSuchViewException', 'missing');
  assertError(await call(c.base, 'POST', viewPath(NS, 'missing'), { body: { updates: [] } }), 404, 'NoSuchViewException', 'missing');
  assertError(await call(c.base, 'GET', `${c.p}/namespaces/ghost/views`), 404, 'NoSuchNamespaceException', 'ghost');
  assertError(await call(c.base, 'GET', viewPath(['ghost'], 'v')), 404, 'NoSuchNamespaceException', 'ghost');
  assertError(await call(c.base, 'POST', `${c.p}/namespaces/ghost/views`, { body: viewBody('v') }), 404, 'NoSuchNamespaceException', 'ghost');
  // A namespace holding a view is not empty.
  assertError(await call(c.base, 'DELETE', `${c.p}/namespaces/vw`), 409, null, 'vw');
});

test('Idempotency-Key replays a view create instead of answering 409', async () => {
  const key = uuidv7();
  const body = JSON.stringify(viewBody('idem'));
  const first = await call(c.base, 'POST', `${c.p}/namespaces/vw/views`, { body, headers: { 'Idempotency-Key': key }, expect: 200 });
  const again = await call(c.base, 'POST', `${c.p}/namespaces/vw/views`, { body, headers: { 'Idempotency-Key': key }, expect: 200 });
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.text, first.text);
});

test('concurrent creates of one name: one 200, the others 409 AlreadyExists', async () => {
  const all = await Promise.all([0, 1, 2, 3].map(() => call(c.base, 'POST', `${c.p}/namespaces/vw/views`, { body: viewBody('race') })));
  assert.deepEqual(all.map((r) => r.status).sort(), [200, 409, 409, 409], all.map((r) => r.text).join('\n'));
  for (const r of all.filter((x) => x.status === 409)) assertError(r, 409, 'AlreadyExistsException', 'race');
});

test('register-view: an existing metadata file becomes a view; bad files are 400, taken names 409', async () => {
  const src = validate('LoadViewResult', (await call(c.base, 'GET', viewPath(NS, 'v1'), { expect: 200 })).json);
  await call(c.base, 'DELETE', viewPath(NS, 'v1'), { expect: 204 });
  const reg = (body) => call(c.base, 'POST', `${c.p}/namespaces/vw/register-view`, { body });
  const r = validate('LoadViewResult', (await reg({ name: 'v1', 'metadata-location': src['metadata-location'] })).json);
  assert.deepEqual(r.metadata, src.metadata);
  assert.equal(r['metadata-location'], src['metadata-location']);
  // The next commit continues the file numbering (the file was 0000N, the next is N+1).
  const n = Number(src['metadata-location'].match(/\/(\d{5})-/)[1]);
  const next = (await call(c.base, 'POST', viewPath(NS, 'v1'), {
    body: { updates: [{ action: 'set-properties', updates: { again: 'yes' } }] }, expect: 200,
  })).json;
  assert.match(next['metadata-location'], new RegExp(`/${String(n + 1).padStart(5, '0')}-`));
  assertError(await reg({ name: 'v1', 'metadata-location': src['metadata-location'] }), 409, 'AlreadyExistsException', 'v1');
  assertError(await reg({ name: 't1', 'metadata-location': src['metadata-location'] }), 409, 'AlreadyExistsException', 't1');
  assertError(await reg({ name: 'x', 'metadata-location': 'file:///etc/passwd' }), 400, 'BadRequestException', 'outside the warehouse');
  assertError(await reg({ name: 'x', 'metadata-location': src['metadata-location'].replace(/[^/]+$/, 'nope.json') }),
    400, 'BadRequestException', 'register-view');
  // A table's metadata file is not view metadata.
  const t = (await call(c.base, 'GET', tablePath(c.p, NS, 't1'), { expect: 200 })).json;
  assertError(await reg({ name: 'x', 'metadata-location': t['metadata-location'] }), 400, 'BadRequestException', 'view-uuid');
  assertError(await reg({ name: 'x' }), 400, 'BadRequestException', 'metadata-location');
});
