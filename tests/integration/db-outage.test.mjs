// PostgreSQL goes away and comes back: floe answers 503 with Retry-After in the
// error model while it is down (promptly, not hanging), reports not-ready, and
// recovers by itself once PostgreSQL is back, without a restart.
// Runs on a private cluster so stopping it cannot disturb other test files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startPgCluster, startFloe, request, psql, withDatabase, waitFor } from './lib/harness.mjs';
import { expectJson, expectError, expectNoContent } from './lib/checks.mjs';
import { parse, sum } from './lib/prom.mjs';
import { createBody, appendCommit, tablePath } from './tables/lib.mjs';

let cluster;
let floe;
let base;

before(async () => {
  cluster = await startPgCluster({ tag: 'outage' });
  psql(cluster.url, 'CREATE DATABASE floe_outage');
  floe = await startFloe({ databaseUrl: withDatabase(cluster.url, 'floe_outage') });
  base = floe.baseUrl;
});

after(async () => {
  await floe?.stop();
  cluster?.destroy();
});

function expect503(res, what) {
  const e = expectError(res, 503, null, /database|unavailable|postgres/i);
  const ra = res.headers['retry-after'];
  assert.ok(ra !== undefined, `${what}: 503 without Retry-After`);
  assert.ok(/^\d+$/.test(ra) || !Number.isNaN(Date.parse(ra)), `${what}: Retry-After "${ra}"`);
  return e;
}

// The loadTable cache serves only while its LISTEN connection is up; /metrics says so.
const listening = async () => {
  const res = await request(base, 'GET', '/metrics', { timeoutMs: 15000 });
  assert.equal(res.status, 200, `/metrics: ${res.status}`);
  return sum(parse(res.text), 'floe_table_cache_listening');
};

test('PostgreSQL down -> 503 + Retry-After; back -> served again without restarting floe', async () => {
  expectJson(await request(base, 'POST', '/v1/namespaces', { body: { namespace: ['before'] } }), 200);
  expectJson(await request(base, 'GET', '/readyz'), 200);
  await waitFor(async () => (await listening()) === 1, { timeoutMs: 10000, what: 'the cache to be listening' });

  cluster.stop('fast');

  const t0 = Date.now();
  expect503(await request(base, 'GET', '/v1/namespaces/before', { timeoutMs: 15000 }), 'GET namespace');
  expect503(await request(base, 'GET', '/v1/namespaces', { timeoutMs: 15000 }), 'list');
  expect503(
    await request(base, 'POST', '/v1/namespaces', { body: { namespace: ['during'] }, timeoutMs: 15000 }),
    'create',
  );
  expect503(await request(base, 'GET', '/v1/config', { timeoutMs: 15000 }), 'config');
  assert.ok(Date.now() - t0 < 20000, `503s should come promptly, took ${Date.now() - t0} ms`);

  // the process is alive, but not ready
  expectJson(await request(base, 'GET', '/healthz'), 200);
  const rd = await request(base, 'GET', '/readyz');
  assert.equal(rd.status, 503, `readyz while PostgreSQL is down: ${rd.status} ${rd.text}`);
  await waitFor(async () => (await listening()) === 0, { timeoutMs: 10000, what: 'the cache to stop listening' });

  cluster.start();

  await waitFor(
    async () => (await request(base, 'GET', '/v1/namespaces/before')).status === 200,
    { timeoutMs: 20000, what: 'floe to serve again after PostgreSQL restarted' },
  );
  const g = expectJson(await request(base, 'GET', '/v1/namespaces/before'), 200, 'GetNamespaceResponse');
  assert.deepEqual(g.namespace, ['before']);
  // the create attempted during the outage did not happen
  expectError(await request(base, 'GET', '/v1/namespaces/during'), 404, 'NoSuchNamespaceException');
  // every pooled connection recovers: a burst larger than the pool succeeds
  const burst = await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      request(base, 'POST', '/v1/namespaces', { body: { namespace: [`after${i}`] } }),
    ),
  );
  for (const res of burst) expectJson(res, 200, 'CreateNamespaceResponse');
  const list = expectJson(await request(base, 'GET', '/v1/namespaces'), 200, 'ListNamespacesResponse');
  assert.equal(list.namespaces.length, 25);
  expectJson(await request(base, 'GET', '/readyz'), 200);
  await waitFor(async () => (await listening()) === 1, { timeoutMs: 15000, what: 'the cache to listen again' });
  expectNoContent(await request(base, 'DELETE', '/v1/namespaces/after0'));
});

test('after PostgreSQL restarts, a commit through floe is still read back from its cache, and a change made by another client is still seen', async () => {
  // Each pooled connection's backend pid is checked again once the listener is back (a
  // restarted server gives pids out anew): floe's own notifications are still recognised,
  // and another client's still invalidate.
  const counters = async () => parse((await request(base, 'GET', '/metrics')).text);
  expectJson(await request(base, 'POST', '/v1/namespaces', { body: { namespace: ['epoch'] } }), 200);
  expectJson(await request(base, 'POST', '/v1/namespaces/epoch/tables', { body: createBody('t') }), 200);
  const path = tablePath('/v1', ['epoch'], 't');
  cluster.stop('fast');
  await waitFor(async () => (await listening()) === 0, { timeoutMs: 10000, what: 'the cache to stop listening' });
  cluster.start();
  await waitFor(async () => (await listening()) === 1 && (await request(base, 'GET', path)).status === 200, {
    timeoutMs: 20000,
    what: 'floe to listen and serve again',
  });
  const meta = expectJson(await request(base, 'GET', path), 200).metadata;
  const { body, snapshotId } = appendCommit(meta, { ns: ['epoch'], name: 't' });
  const committed = expectJson(await request(base, 'POST', path, { body }), 200);
  const m0 = await counters();
  const load = expectJson(await request(base, 'GET', path), 200);
  const m1 = await counters();
  assert.equal(load.metadata['current-snapshot-id'], snapshotId);
  assert.equal(sum(m1, 'floe_table_cache_hits_total') - sum(m0, 'floe_table_cache_hits_total'), 1, 'the load after the commit is a hit');
  assert.equal(sum(m1, 'floe_table_cache_misses_total') - sum(m0, 'floe_table_cache_misses_total'), 0, 'and no miss');
  // another client moves the row and notifies, from a backend of its own
  const moved = committed['metadata-location'].replace(/\.metadata\.json$/, '-moved.metadata.json');
  // the moved row's file exists (a row whose document only its file holds is read from it)
  fs.copyFileSync(fileURLToPath(committed['metadata-location']), fileURLToPath(moved));
  psql(
    withDatabase(cluster.url, 'floe_outage'),
    `UPDATE table_entry SET metadata_location = '${moved}', version = version + 1 WHERE name = 't'; ` +
      `SELECT pg_notify('floe_table', id::text) FROM table_entry WHERE name = 't'`,
  );
  await waitFor(async () => expectJson(await request(base, 'GET', path), 200)['metadata-location'] === moved, {
    timeoutMs: 10000,
    what: "floe's cache to drop the table when another client's notification came",
  });
});
