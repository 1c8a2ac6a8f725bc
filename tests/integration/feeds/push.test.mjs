// HTTP push: POST /management/v1/feeds/{name}/records is durable before its
// 202 (spooled in PostgreSQL), group-committed at the feed's interval, exactly
// once under retries with Idempotency-Key, and 429 + Retry-After when the
// spool is full.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { psql, request, sleep, waitFor } from '../lib/harness.mjs';
import { expectError } from '../lib/checks.mjs';
import { startCatalog, createTable } from '../ingest/lib.mjs';
import { F, createFeed, tableIds, range } from './lib.mjs';
import { uuidv7 } from '../tables/lib.mjs';

let ctx;

before(async () => {
  ctx = await startCatalog('feeds_push');
});

after(async () => {
  await ctx?.floe.stop();
});

const ndjson = (from, to) => range(from, to).map((i) => JSON.stringify({ id: i, s: `v${i}` })).join('\n') + '\n';
const push = (name, body, { key, type = 'application/x-ndjson' } = {}) => request(ctx.base, 'POST', `${F}/${name}/records`, {
  headers: { 'Content-Type': type, ...(key ? { 'Idempotency-Key': key } : {}) },
  body,
});

// Pushes until accepted: retries on 429 (after Retry-After), 503 and lost
// answers, always with the same key.
async function pushOnce(name, body, key) {
  for (let attempt = 0; attempt < 60; attempt++) {
    let res;
    try {
      res = await push(name, body, { key });
    } catch {
      await sleep(100);
      continue;
    }
    if (res.status === 202) return res;
    if (res.status === 429) {
      await sleep(Number(res.headers['retry-after'] ?? 1) * 1000 * Math.random());
      continue;
    }
    if (res.status >= 500) {
      await sleep(100 + 200 * Math.random());
      continue;
    }
    throw new Error(`push refused: ${res.status} ${res.text}`);
  }
  throw new Error('push never accepted');
}

test('200 concurrent clients with retries and keys: every record once, few snapshots', async () => {
  await createTable(ctx, 'pushed', [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 's', type: 'string', required: false },
  ]);
  await createFeed(ctx.base, {
    name: 'pushed', table: 'ns.pushed', source: { type: 'push' }, format: 'ndjson', interval: 'PT1S',
    batch: { 'max-objects': 10000 },
  });
  const CLIENTS = 200;
  const PER = 3;
  const ROWS = 10;
  const t0 = Date.now();
  await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
    for (let k = 0; k < PER; k++) {
      const from = (c * PER + k) * ROWS;
      const body = ndjson(from, from + ROWS);
      const key = uuidv7();
      await pushOnce('pushed', body, key);
      // The client did not see the answer and sends it again: same key, no effect.
      const again = await pushOnce('pushed', body, key);
      assert.equal(again.status, 202);
    }
  }));
  const pushedFor = (Date.now() - t0) / 1000;
  const want = range(0, CLIENTS * PER * ROWS);
  await waitFor(async () => (await tableIds(ctx, 'pushed')).ids.length >= want.length,
    { timeoutMs: 60000, intervalMs: 500, what: 'every pushed record to land' });
  await sleep(1500); // one more interval: nothing else may land
  const { meta, ids } = await tableIds(ctx, 'pushed');
  assert.deepEqual(ids, want, 'every record exactly once');
  // Group commit: at most one snapshot per interval while pushes came in, and
  // far fewer snapshots than pushes.
  const snaps = meta.snapshots.length;
  assert.ok(snaps <= Math.ceil(pushedFor) + 3, `${snaps} snapshots in ${pushedFor}s of pushes at PT1S`);
  assert.ok(snaps * 20 <= CLIENTS * PER, `${snaps} snapshots for ${CLIENTS * PER} pushes`);
  const f = (await request(ctx.base, 'GET', `${F}/pushed`)).json;
  assert.deepEqual(f.backlog, { 'spooled-bytes': 0, 'spooled-requests': 0 });
  assert.equal(psql(ctx.dbUrl, 'SELECT count(*) FROM feed_spool WHERE body IS NOT NULL'), '0', 'landed bodies are dropped');
});

test('a full spool answers 429 with Retry-After, and the same key goes through later', async () => {
  await createTable(ctx, 'full', [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 's', type: 'string', required: false },
  ]);
  await createFeed(ctx.base, {
    name: 'full', table: 'ns.full', source: { type: 'push' }, format: 'ndjson', interval: 'PT2S',
    'spool-max-bytes': 65536,
  });
  assert.equal((await request(ctx.base, 'POST', `${F}/full/pause`)).status, 200);
  const chunk = ndjson(0, 2000).slice(0, 30000).replace(/[^\n]*$/, '');
  const ids = chunk.trim().split('\n').map((l) => JSON.parse(l).id);
  assert.equal((await push('full', chunk, { key: uuidv7() })).status, 202);
  const second = chunk.replace(/"id":(\d+)/g, (_, d) => `"id":${1000000 + Number(d)}`);
  assert.equal((await push('full', second, { key: uuidv7() })).status, 202);
  const key = uuidv7();
  const late = ndjson(5000000, 5000010);
  const refused = await push('full', chunk.slice(0, 10000).replace(/[^\n]*$/, '') + late, { key });
  expectError(refused, 429, 'TooManyRequestsException', 'spool-max-bytes');
  assert.equal(refused.headers['retry-after'], '2');
  assert.equal(psql(ctx.dbUrl, 'SELECT count(*) FROM idempotency_record WHERE status = 429'), '0', 'a 429 is not stored under its key');
  assert.equal((await request(ctx.base, 'POST', `${F}/full/resume`)).status, 200);
  await waitFor(async () => (await request(ctx.base, 'GET', `${F}/full`)).json.backlog['spooled-bytes'] === 0,
    { timeoutMs: 20000, what: 'the spool to drain' });
  assert.equal((await push('full', late, { key })).status, 202, 'the same key is accepted once there is room');
  await waitFor(async () => (await tableIds(ctx, 'full')).ids.includes(5000009), { timeoutMs: 20000, what: 'the late push to land' });
  const got = (await tableIds(ctx, 'full')).ids;
  assert.deepEqual(got, [...ids, ...ids.map((i) => 1000000 + i), ...range(5000000, 5000010)]);
  assert.equal(psql(ctx.dbUrl, "SELECT count(*) FROM feed_dead_letter d JOIN feed f ON f.id = d.feed_id WHERE f.name = 'full'"), '0');
});

test('bad pushes: 400 for the content type or a non-UTF-8 body, 404 for no feed; a bad body is dead-lettered whole', async () => {
  expectError(await push('pushed', '{"id":1}\n', { type: 'text/plain' }), 400, 'BadRequestException', 'Content-Type');
  expectError(await push('pushed', ''), 400, 'BadRequestException', 'no records');
  expectError(await request(ctx.base, 'POST', `${F}/pushed/records`, {
    headers: { 'Content-Type': 'text/csv' }, body: Buffer.from([0x69, 0x64, 0x0a, 0xff, 0xfe, 0x0a]),
  }), 400, 'BadRequestException', 'UTF-8');
  expectError(await push('nofeed', '{"id":1}\n'), 404, undefined, "feed 'nofeed' does not exist");
  // One body that cannot be read at all lands nowhere but the dead letters; the
  // others pushed with it land.
  const before = (await tableIds(ctx, 'pushed')).ids.length;
  assert.equal((await push('pushed', '{"id": 9000001, "s": "ok"}\n')).status, 202);
  const bad = 'this is not json\n{"id": broken\n';
  assert.equal((await push('pushed', bad)).status, 202);
  assert.equal((await push('pushed', '{"id": 9000002, "s": "ok"}\n')).status, 202);
  await waitFor(() => psql(ctx.dbUrl, "SELECT count(*) FROM feed_dead_letter WHERE key LIKE 'push/%'") !== '0'
    || psql(ctx.dbUrl, 'SELECT count(*) FROM feed_spool WHERE batch_id IS NULL') === '0',
  { timeoutMs: 20000, what: 'the pushes to be processed' });
  await waitFor(async () => (await tableIds(ctx, 'pushed')).ids.length === before + 2, { timeoutMs: 20000, what: 'the good pushes' });
  const dl = psql(ctx.dbUrl, "SELECT whole_object || '|' || location || '|' || reason FROM feed_dead_letter WHERE key LIKE 'push/%'").split('|');
  assert.equal(dl[0], 'true', 'the bad body is dead-lettered whole');
  assert.equal(fs.readFileSync(dl[1], 'utf8'), bad, 'with its exact bytes');
  assert.match(dl[2], /line 1|json|JSON/, `and a reason: ${dl[2]}`);
});
