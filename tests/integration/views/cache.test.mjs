// loadView is served from the loadTable cache (a view is a row of table_entry, and every
// change to it notifies as a table's does): a load after the first is a hit that answers
// the stored bytes, a change through this daemon is seen by the next load (read your
// writes), a change through another replica is seen once that replica's notification is
// applied, and a view never answers for a table of the same name or the other way round.
// Every 2xx body is validated against the upstream schema (LoadViewResult).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { validate } from '../lib/spec.mjs';
import { request, startFloe, sleep } from '../lib/harness.mjs';
import { parse, sum } from '../lib/prom.mjs';
import { startCatalog, call, assertError, tablePath, createBody, pySchema, encodeNs } from '../tables/lib.mjs';

const NS = ['vc'];
const NOTIFY_BOUND_MS = 5000;
let a;
let b;

const viewPath = (p, name) => `${p}/namespaces/${encodeNs(NS)}/views/${encodeURIComponent(name)}`;
const viewBody = (name) => ({
  name,
  schema: pySchema(),
  'view-version': {
    'version-id': 1,
    'timestamp-ms': Date.now(),
    'schema-id': 0,
    summary: { 'engine-name': 'test' },
    representations: [{ type: 'sql', sql: 'SELECT id, data FROM t', dialect: 'spark' }],
    'default-namespace': NS,
  },
  properties: { owner: 'test' },
});
const setProp = (value) => ({
  requirements: [],
  updates: [{ action: 'set-properties', updates: { rev: String(value) } }],
});
const metrics = async (base) => parse((await request(base, 'GET', '/metrics')).text);
const counter = async (base, name) => sum(await metrics(base), name);

before(async () => {
  a = await startCatalog('view_cache');
  b = await startFloe({ databaseUrl: a.dbUrl });
  await call(a.base, 'POST', `${a.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await b?.stop();
  await a?.floe.stop();
});

test('a second load is a hit with the same answer; a replace, rename and drop through this daemon are seen by the next load', async () => {
  const created = validate('LoadViewResult', (await call(a.base, 'POST', `${a.p}/namespaces/vc/views`, { body: viewBody('v'), expect: 200 })).json);
  const misses0 = await counter(a.base, 'floe_table_cache_misses_total');
  const first = await call(a.base, 'GET', viewPath(a.p, 'v'), { expect: 200 });
  // Looked up by an HTTP thread, then read by the worker it handed the load to: one miss.
  assert.equal(await counter(a.base, 'floe_table_cache_misses_total') - misses0, 1, 'the first load is one miss');
  const hits0 = await counter(a.base, 'floe_table_cache_hits_total');
  const again = await call(a.base, 'GET', viewPath(a.p, 'v'), { expect: 200 });
  await call(a.base, 'HEAD', viewPath(a.p, 'v'), { expect: 204 });
  assert.ok(await counter(a.base, 'floe_table_cache_hits_total') >= hits0 + 2, 'the load and the HEAD after the first were hits');
  assert.equal(again.text, first.text, 'a hit answers the bytes of the read');
  validate('LoadViewResult', again.json);
  assert.deepEqual(again.json, created, 'the load answers what the create answered');

  for (let i = 1; i <= 5; i++) {
    const committed = (await call(a.base, 'POST', viewPath(a.p, 'v'), { body: setProp(i), expect: 200 })).json;
    const loaded = validate('LoadViewResult', (await call(a.base, 'GET', viewPath(a.p, 'v'), { expect: 200 })).json);
    assert.equal(loaded['metadata-location'], committed['metadata-location'], `the load after replace ${i} answers it`);
    assert.equal(loaded.metadata.properties.rev, String(i));
    assert.deepEqual(loaded, committed);
  }

  await call(a.base, 'POST', `${a.p}/views/rename`, {
    body: { source: { namespace: NS, name: 'v' }, destination: { namespace: NS, name: 'w' } }, expect: 204,
  });
  assertError(await call(a.base, 'GET', viewPath(a.p, 'v')), 404, 'NoSuchViewException', 'v');
  await call(a.base, 'HEAD', viewPath(a.p, 'v'), { expect: 404 });
  const renamed = validate('LoadViewResult', (await call(a.base, 'GET', viewPath(a.p, 'w'), { expect: 200 })).json);
  assert.equal(renamed.metadata.properties.rev, '5');

  await call(a.base, 'DELETE', viewPath(a.p, 'w'), { expect: 204 });
  assertError(await call(a.base, 'GET', viewPath(a.p, 'w')), 404, 'NoSuchViewException', 'w');
  await call(a.base, 'HEAD', viewPath(a.p, 'w'), { expect: 404 });
});

test('a cached table never answers a view load of its name, nor a cached view a table load', async () => {
  await call(a.base, 'POST', `${a.p}/namespaces/vc/tables`, { body: createBody('tv'), expect: 200 });
  await call(a.base, 'GET', tablePath(a.p, NS, 'tv'), { expect: 200 });
  await call(a.base, 'GET', tablePath(a.p, NS, 'tv'), { expect: 200 }); // cached
  assertError(await call(a.base, 'GET', viewPath(a.p, 'tv')), 404, 'NoSuchViewException', 'tv');
  await call(a.base, 'HEAD', viewPath(a.p, 'tv'), { expect: 404 });

  await call(a.base, 'DELETE', tablePath(a.p, NS, 'tv'), { expect: 204 });
  await call(a.base, 'POST', `${a.p}/namespaces/vc/views`, { body: viewBody('tv'), expect: 200 });
  await call(a.base, 'GET', viewPath(a.p, 'tv'), { expect: 200 });
  const view = validate('LoadViewResult', (await call(a.base, 'GET', viewPath(a.p, 'tv'), { expect: 200 })).json);
  assert.ok(view.metadata['view-uuid'], 'the view answers as a view');
  assertError(await call(a.base, 'GET', tablePath(a.p, NS, 'tv')), 404, 'NoSuchTableException', 'tv');
  await call(a.base, 'HEAD', tablePath(a.p, NS, 'tv'), { expect: 404 });
});

test('a replace, rename or drop on one replica is never served stale by another once its notification is applied', async () => {
  await call(a.base, 'POST', `${a.p}/namespaces/vc/views`, { body: viewBody('r'), expect: 200 });
  // B caches the view: its second load is a hit.
  await call(b.baseUrl, 'GET', viewPath(a.p, 'r'), { expect: 200 });
  const hits0 = await counter(b.baseUrl, 'floe_table_cache_hits_total');
  await call(b.baseUrl, 'GET', viewPath(a.p, 'r'), { expect: 200 });
  assert.ok(await counter(b.baseUrl, 'floe_table_cache_hits_total') > hits0, 'replica B serves the view from its cache');

  // Waits until B has applied one more notification than n0 (nothing else notifies meanwhile).
  const applied = async (n0, what) => {
    const t0 = performance.now();
    for (;;) {
      if (await counter(b.baseUrl, 'floe_table_cache_notifications_total') > n0) return;
      assert.ok(performance.now() - t0 < NOTIFY_BOUND_MS, `replica B did not apply the notification of ${what} within ${NOTIFY_BOUND_MS} ms`);
      await sleep(2);
    }
  };
  for (let i = 1; i <= 10; i++) {
    const n0 = await counter(b.baseUrl, 'floe_table_cache_notifications_total');
    const committed = (await call(a.base, 'POST', viewPath(a.p, 'r'), { body: setProp(i), expect: 200 })).json;
    await applied(n0, `replace ${i}`);
    for (let k = 0; k < 3; k++) {
      const loaded = validate('LoadViewResult', (await call(b.baseUrl, 'GET', viewPath(a.p, 'r'), { expect: 200 })).json);
      assert.equal(loaded['metadata-location'], committed['metadata-location'], `replica B answers replace ${i} (load ${k})`);
    }
  }

  let n0 = await counter(b.baseUrl, 'floe_table_cache_notifications_total');
  await call(a.base, 'POST', `${a.p}/views/rename`, {
    body: { source: { namespace: NS, name: 'r' }, destination: { namespace: NS, name: 'r2' } }, expect: 204,
  });
  await applied(n0, 'the rename');
  assertError(await call(b.baseUrl, 'GET', viewPath(a.p, 'r')), 404, 'NoSuchViewException', 'r');
  const moved = (await call(b.baseUrl, 'GET', viewPath(a.p, 'r2'), { expect: 200 })).json;
  assert.equal(moved.metadata.properties.rev, '10');

  n0 = await counter(b.baseUrl, 'floe_table_cache_notifications_total');
  await call(a.base, 'DELETE', viewPath(a.p, 'r2'), { expect: 204 });
  await applied(n0, 'the drop');
  assertError(await call(b.baseUrl, 'GET', viewPath(a.p, 'r2')), 404, 'NoSuchViewException', 'r2');
  await call(b.baseUrl, 'HEAD', viewPath(a.p, 'r2'), { expect: 404 });
});
