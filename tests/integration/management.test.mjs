// Management API: warehouses. Create/list/get/delete, conflicts, and isolation of
// one warehouse's namespaces from another's through the REST catalog routes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { freshDatabase, startFloe, request, tmpDir } from './lib/harness.mjs';
import { expectJson, expectError, expectNoContent, assertRequestId } from './lib/checks.mjs';
import { catalog } from './lib/clients.mjs';

let floe;
let base;
let whRoot;
const r = (method, p, opts) => request(base, method, p, opts);
const M = '/management/v1/warehouses';

before(async () => {
  const db = await freshDatabase('management');
  floe = await startFloe({ databaseUrl: db.url });
  base = floe.baseUrl;
  whRoot = tmpDir('wh');
});

after(async () => {
  await floe?.stop();
  if (whRoot) fs.rmSync(whRoot, { recursive: true, force: true });
});

function checkWarehouse(w, name, location) {
  assert.equal(typeof w.id, 'string');
  assert.ok(w.id.length > 0);
  assert.equal(w.name, name);
  assert.equal(w['storage-profile'].type, 'file');
  if (location) assert.equal(w['storage-profile'].location, location);
  assert.ok(!Number.isNaN(Date.parse(w['created-at'])), `created-at parses: ${w['created-at']}`);
}

function json201(res) {
  assert.equal(res.status, 201, `expected 201, got ${res.status} ${res.text}`);
  assert.match(res.headers['content-type'] || '', /^application\/json/);
  assertRequestId(res);
  return res.json;
}

test('the default warehouse exists and is listed', async () => {
  const list = expectJson(await r('GET', M), 200);
  assert.ok(Array.isArray(list.warehouses));
  const def = list.warehouses.find((w) => w.name === 'default');
  assert.ok(def, `default warehouse listed: ${JSON.stringify(list)}`);
  checkWarehouse(def, 'default', `file://${path.join(floe.dataDir, 'warehouse')}`);
});

test('create, get, list, duplicate -> 409, delete, get -> 404', async () => {
  const loc = `file://${path.join(whRoot, 'w1')}`;
  const w = json201(await r('POST', M, { body: { name: 'wh1', 'storage-profile': { type: 'file', location: loc } } }));
  checkWarehouse(w, 'wh1', loc);

  const got = expectJson(await r('GET', `${M}/wh1`), 200);
  assert.deepEqual(got, w);
  const list = expectJson(await r('GET', M), 200);
  assert.deepEqual(list.warehouses.filter((x) => x.name === 'wh1'), [w]);

  expectError(
    await r('POST', M, { body: { name: 'wh1', 'storage-profile': { type: 'file', location: `${loc}-other` } } }),
    409,
    'AlreadyExistsException',
    'wh1',
  );
  expectNoContent(await r('DELETE', `${M}/wh1`));
  expectError(await r('GET', `${M}/wh1`), 404, 'NoSuchWarehouseException', 'wh1');
  expectError(await r('DELETE', `${M}/wh1`), 404, 'NoSuchWarehouseException');
  expectError(await r('GET', '/v1/config?warehouse=wh1'), 404, 'NoSuchWarehouseException');
  assert.ok(!expectJson(await r('GET', M), 200).warehouses.some((x) => x.name === 'wh1'));
});

test('invalid warehouse requests are 400 naming the field', async () => {
  const loc = `file://${path.join(whRoot, 'bad')}`;
  expectError(await r('POST', M, { body: { 'storage-profile': { type: 'file', location: loc } } }), 400, 'BadRequestException', /name/);
  expectError(await r('POST', M, { body: { name: 'nosp' } }), 400, 'BadRequestException', /storage-profile/);
  expectError(
    await r('POST', M, { body: { name: 'badtype', 'storage-profile': { type: 'ftp', location: loc } } }),
    400,
    'BadRequestException',
    /type|ftp/,
  );
  expectError(
    await r('POST', M, { body: { name: 'relloc', 'storage-profile': { type: 'file', location: 'relative/dir' } } }),
    400,
    'BadRequestException',
    /location/,
  );
  expectError(await r('POST', M, { body: { name: '', 'storage-profile': { type: 'file', location: loc } } }), 400, 'BadRequestException', /name/);
  expectError(await r('POST', M, { body: '{"name":"x",' }), 400, 'BadRequestException', /json/i);
});

test('delete of a warehouse that has namespaces -> 409, then succeeds once empty', async () => {
  const loc = `file://${path.join(whRoot, 'w2')}`;
  json201(await r('POST', M, { body: { name: 'wh2', 'storage-profile': { type: 'file', location: loc } } }));
  const cfg = expectJson(await r('GET', '/v1/config?warehouse=wh2'), 200, 'CatalogConfig');
  const P = `/v1/${cfg.overrides.prefix}`;
  expectJson(await r('POST', `${P}/namespaces`, { body: { namespace: ['inside'] } }), 200);
  expectError(await r('DELETE', `${M}/wh2`), 409, null, /namespace|not empty/i);
  expectJson(await r('GET', `${M}/wh2`), 200);
  expectNoContent(await r('DELETE', `${P}/namespaces/inside`));
  expectNoContent(await r('DELETE', `${M}/wh2`));
  expectError(await r('GET', `${P}/namespaces`), 404, 'NoSuchWarehouseException');
});

test("a second warehouse's namespaces are isolated from the first", async () => {
  const locA = `file://${path.join(whRoot, 'iso_a')}`;
  const locB = `file://${path.join(whRoot, 'iso_b')}`;
  json201(await r('POST', M, { body: { name: 'iso_a', 'storage-profile': { type: 'file', location: locA } } }));
  json201(await r('POST', M, { body: { name: 'iso_b', 'storage-profile': { type: 'file', location: locB } } }));

  const a = catalog(base, { warehouse: 'iso_a' });
  const b = catalog(base, { warehouse: 'iso_b' });
  const cfgA = await a.loadConfig();
  const cfgB = await b.loadConfig();
  assert.notEqual(cfgA.overrides.prefix, cfgB.overrides.prefix, 'distinct prefixes');

  await a.createNamespace({ namespace: ['shared_name'] }, { properties: { side: 'a' } });
  await a.createNamespace({ namespace: ['only_a'] });
  await a.createNamespace({ namespace: ['only_a', 'kid'] });
  // the same name in B is a different namespace
  await b.createNamespace({ namespace: ['shared_name'] }, { properties: { side: 'b' } });

  assert.deepEqual((await a.loadNamespaceMetadata({ namespace: ['shared_name'] })).properties, { side: 'a' });
  assert.deepEqual((await b.loadNamespaceMetadata({ namespace: ['shared_name'] })).properties, { side: 'b' });
  assert.equal(await b.namespaceExists({ namespace: ['only_a'] }), false);
  assert.equal(await b.namespaceExists({ namespace: ['only_a', 'kid'] }), false);
  const listB = (await b.listNamespaces()).namespaces.map((n) => n.namespace);
  assert.deepEqual(listB, [['shared_name']]);
  const listA = (await a.listNamespaces()).namespaces.map((n) => n.namespace).sort();
  assert.deepEqual(listA, [['only_a'], ['shared_name']]);
  // nor does the default warehouse see them
  const def = expectJson(await r('GET', '/v1/namespaces'), 200, 'ListNamespacesResponse');
  assert.ok(!def.namespaces.some((n) => n[0] === 'only_a'), 'default warehouse sees iso_a namespaces');
  // a child under B's namespace needs B's parent, not A's
  expectError(
    await r('POST', `/v1/${cfgB.overrides.prefix}/namespaces`, { body: { namespace: ['only_a', 'x'] } }),
    404,
    'NoSuchNamespaceException',
  );
  // dropping in B leaves A alone
  await b.dropNamespace({ namespace: ['shared_name'] });
  assert.equal(await a.namespaceExists({ namespace: ['shared_name'] }), true);

  // and B can now be deleted while A (non-empty) cannot
  expectNoContent(await r('DELETE', `${M}/iso_b`));
  expectError(await r('DELETE', `${M}/iso_a`), 409);
});

test('management errors and unknown warehouse prefixes use the Iceberg error model', async () => {
  expectError(await r('GET', `${M}/no_such`), 404, 'NoSuchWarehouseException', 'no_such');
  expectError(await r('GET', '/v1/no_such_prefix/namespaces'), 404, 'NoSuchWarehouseException');
  expectError(await r('POST', '/v1/no_such_prefix/namespaces', { body: { namespace: ['x'] } }), 404, 'NoSuchWarehouseException');
  expectError(await r('PUT', M, { body: '{}' }), 405, 'MethodNotAllowedException');
});

// A warehouse name is the `prefix` clients put in the path. Names that would be
// ambiguous there (the words after /v1/ that mean "no prefix") or that need
// percent-encoding must either be refused with 400, or work end to end.
for (const name of ['namespaces', 'config', 'tables', 'my wh', 'a/b', 'ü-wh', '100%']) {
  test(`warehouse named ${JSON.stringify(name)}: refused with 400 or fully usable`, async () => {
    const loc = `file://${path.join(whRoot, `odd-${Buffer.from(name).toString('hex')}`)}`;
    const res = await r('POST', M, { body: { name, 'storage-profile': { type: 'file', location: loc } } });
    if (res.status === 400) {
      expectError(res, 400, 'BadRequestException', /name/);
      return;
    }
    assert.equal(res.status, 201, `create warehouse ${name}: ${res.status} ${res.text}`);
    const got = expectJson(await r('GET', `${M}/${encodeURIComponent(name)}`), 200);
    assert.equal(got.name, name);
    // through iceberg-js, which puts overrides.prefix into the path as is
    const c = catalog(base, { warehouse: name });
    await c.createNamespace({ namespace: ['in_odd'] }, { properties: { wh: name } });
    assert.deepEqual((await c.loadNamespaceMetadata({ namespace: ['in_odd'] })).properties, { wh: name });
    assert.deepEqual((await c.listNamespaces()).namespaces, [{ namespace: ['in_odd'] }]);
    // and it did not land in the default warehouse
    expectError(await r('GET', '/v1/namespaces/in_odd'), 404, 'NoSuchNamespaceException');
    await c.dropNamespace({ namespace: ['in_odd'] });
    expectNoContent(await r('DELETE', `${M}/${encodeURIComponent(name)}`));
  });
}
