// The loadTable cache is bounded in bytes (--table-cache-bytes) and says how it is doing
// in /metrics: a budget smaller than the tables loaded forces evictions, the bytes held stay
// within the budget, every answer is still the table's current metadata, and a commit
// through this daemon is read back at once (synchronous invalidation).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../lib/harness.mjs';
import { parse, sum } from '../lib/prom.mjs';
import { startCatalog, call, tablePath, createBody, appendCommit, uuidv7 } from './lib.mjs';

const BUDGET = 60000;
const NS = ['cachens'];
let c;

before(async () => {
  c = await startCatalog('tbl_cache', { args: ['--table-cache-bytes', String(BUDGET)] });
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await c?.floe.stop();
});

const metrics = async () => parse((await request(c.base, 'GET', '/metrics')).text);

test('a byte budget smaller than the tables evicts, stays within budget, and serves current metadata', async () => {
  // ~8 KB of properties per table: 12 tables are ~100 KB, more than the budget
  const properties = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p.${i}`, 'x'.repeat(60)]));
  const uuids = [];
  for (let i = 0; i < 12; i++) {
    const res = await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/tables`, { body: createBody(`t${i}`, { properties }), expect: 200 });
    uuids.push(res.json.metadata['table-uuid']);
  }
  const m0 = await metrics();
  for (let round = 0; round < 3; round++)
    for (let i = 0; i < 12; i++) {
      const res = await call(c.base, 'GET', tablePath(c.p, NS, `t${i}`), { expect: 200 });
      assert.equal(res.json.metadata['table-uuid'], uuids[i], `t${i} answered with its own metadata`);
    }
  const m1 = await metrics();
  const d = (name) => sum(m1, name) - sum(m0, name);
  assert.equal(sum(m1, 'floe_table_cache_max_bytes'), BUDGET);
  assert.ok(sum(m1, 'floe_table_cache_bytes') <= BUDGET, `bytes held ${sum(m1, 'floe_table_cache_bytes')} <= ${BUDGET}`);
  assert.ok(sum(m1, 'floe_table_cache_bytes') > 0, 'something is cached');
  assert.ok(d('floe_table_cache_evictions_total') > 0, 'the budget forced evictions');
  assert.ok(d('floe_table_cache_hits_total') + d('floe_table_cache_misses_total') >= 36, 'every load is counted');
  assert.ok(sum(m1, 'floe_table_cache_entries') < 12, 'not every table fits');

  // the same table twice in a row is a hit, and a commit is read back at once
  const path = tablePath(c.p, NS, 't0');
  const before = await metrics();
  const meta = (await call(c.base, 'GET', path, { expect: 200 })).json.metadata;
  await call(c.base, 'GET', path, { expect: 200 });
  assert.ok(sum(await metrics(), 'floe_table_cache_hits_total') > sum(before, 'floe_table_cache_hits_total'), 'a repeated load hits');
  const { body, snapshotId } = appendCommit(meta, { ns: NS, name: 't0' });
  await call(c.base, 'POST', path, { body, expect: 200 });
  const after = (await call(c.base, 'GET', path, { expect: 200 })).json.metadata;
  assert.equal(after['current-snapshot-id'], snapshotId, 'the commit is visible to the next load');
});

test('bursts of misses larger than a batch and than the workers: each answer is its table, and a commit is seen by every load after it', async () => {
  // More requests in flight than one batched read takes (64) and than the daemon has
  // workers, over tables that do not all fit the budget: parked loads queue behind running
  // reads, and none may get another's answer or miss a commit acknowledged before its
  // request was sent.
  const ns = ['burst'];
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: ns }, expect: 200 });
  const properties = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p.${i}`, 'y'.repeat(60)]));
  const uuids = [];
  for (let i = 0; i < 12; i++)
    uuids.push((await call(c.base, 'POST', `${c.p}/namespaces/${ns[0]}/tables`, { body: createBody(`b${i}`, { properties }), expect: 200 })).json.metadata['table-uuid']);
  const burst = async (check) => {
    const asks = Array.from({ length: 96 }, (_, k) => (k * 5) % 12);
    const answers = await Promise.all(asks.map((i) => request(c.base, 'GET', tablePath(c.p, ns, `b${i}`))));
    answers.forEach((res, k) => {
      assert.equal(res.status, 200, `b${asks[k]}: ${res.text}`);
      assert.equal(res.json.metadata['table-uuid'], uuids[asks[k]], `b${asks[k]} answered with its own metadata`);
      check?.(asks[k], res.json.metadata);
    });
  };
  const m0 = await metrics();
  await burst();
  const meta = (await call(c.base, 'GET', tablePath(c.p, ns, 'b0'), { expect: 200 })).json.metadata;
  const { body, snapshotId } = appendCommit(meta, { ns, name: 'b0' });
  await call(c.base, 'POST', tablePath(c.p, ns, 'b0'), { body, expect: 200 });
  for (let round = 0; round < 3; round++)
    await burst((i, m) => {
      if (i === 0) assert.equal(m['current-snapshot-id'], snapshotId, 'b0 after its commit');
    });
  const m1 = await metrics();
  assert.ok(sum(m1, 'floe_table_cache_misses_total') - sum(m0, 'floe_table_cache_misses_total') >= 12, 'the bursts missed');
});

// Whether concurrent misses share a statement depends on when they arrive; parked-loads
// pins the batching with a lock. Here: every answer to a burst of misses is right.
test('concurrent misses: each answer is its own table (nested namespace, quotes in a name), byte for byte the createTable answer; a missing one is 404', async () => {
  const ns = [NS[0], 'deep "ns"'];
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: ns }, expect: 200 });
  const names = Array.from({ length: 10 }, (_, i) => (i === 3 ? 'q"t\\x,{y}é' : `c${i}`));
  const uuids = {};
  const created = {};
  for (const name of names) {
    const res = await call(c.base, 'POST', `${c.p}/namespaces/${encodeURIComponent(ns.join('\x1f'))}/tables`, { body: createBody(name), expect: 200 });
    uuids[name] = res.json.metadata['table-uuid'];
    created[name] = res.text;
  }
  const m0 = await metrics();
  // one burst: every table several times, in flight together, so the first loads miss at once
  const asks = [];
  for (let k = 0; k < 4; k++) for (const name of [...names, 'absent']) asks.push(name);
  const answers = await Promise.all(asks.map((name) => request(c.base, 'GET', tablePath(c.p, ns, name))));
  answers.forEach((res, i) => {
    if (asks[i] === 'absent') {
      assert.equal(res.status, 404, `absent: ${res.text}`);
      assert.equal(res.json.error.type, 'NoSuchTableException');
    } else {
      assert.equal(res.status, 200, `${asks[i]}: ${res.text}`);
      assert.equal(res.json.metadata['table-uuid'], uuids[asks[i]], `${asks[i]} answered with its own metadata`);
      // a load (miss or hit: sent from the cache's block) and the create (built by the handler) agree
      assert.equal(res.text, created[asks[i]], `${asks[i]}: the load's bytes are the create's`);
    }
  });
  const m1 = await metrics();
  assert.ok(sum(m1, 'floe_table_cache_misses_total') - sum(m0, 'floe_table_cache_misses_total') >= names.length, 'the burst missed');
});

test('a table of more than 512 KB of metadata (a hot table of ~1,000 snapshots) is cached under the default budget', async () => {
  const big = await startCatalog('tbl_cache_big');
  try {
    await call(big.base, 'POST', `${big.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
    // 600 properties of 1,000 characters: ~0.6 MB of metadata
    const properties = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`p.${i}`, String(i % 10).repeat(1000)]));
    await call(big.base, 'POST', `${big.p}/namespaces/${NS[0]}/tables`, { body: createBody('big', { properties }), expect: 200 });
    const path = tablePath(big.p, NS, 'big');
    const m = async () => parse((await request(big.base, 'GET', '/metrics')).text);
    const first = await call(big.base, 'GET', path, { expect: 200 });
    assert.ok(first.text.length > 600000, `the body is ${first.text.length} bytes`);
    const m0 = await m();
    const second = await call(big.base, 'GET', path, { expect: 200 });
    const m1 = await m();
    assert.equal(second.text, first.text);
    assert.equal(sum(m1, 'floe_table_cache_hits_total') - sum(m0, 'floe_table_cache_hits_total'), 1, 'the second load is a hit');
    assert.equal(sum(m1, 'floe_table_cache_misses_total') - sum(m0, 'floe_table_cache_misses_total'), 0, 'and no miss');
  } finally {
    await big.floe.stop();
  }
});

test('a commit through this daemon puts the version it wrote in the cache: the next load is a hit that answers it, with and without an Idempotency-Key', async () => {
  await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/tables`, { body: createBody('w0'), expect: 200 });
  const path = tablePath(c.p, NS, 'w0');
  let meta = (await call(c.base, 'GET', path, { expect: 200 })).json.metadata;
  for (const headers of [{}, { 'Idempotency-Key': uuidv7() }]) {
    const { body, snapshotId } = appendCommit(meta, { ns: NS, name: 'w0' });
    const res = await call(c.base, 'POST', path, { body, headers, expect: 200 });
    const m0 = await metrics();
    const load = await call(c.base, 'GET', path, { expect: 200 });
    const m1 = await metrics();
    const d = (name) => sum(m1, name) - sum(m0, name);
    assert.equal(load.json.metadata['current-snapshot-id'], snapshotId, 'the load answers the commit');
    assert.equal(load.json['metadata-location'], res.json['metadata-location']);
    assert.equal(d('floe_table_cache_hits_total'), 1, `a hit (${JSON.stringify(headers)})`);
    assert.equal(d('floe_table_cache_misses_total'), 0, 'and no miss');
    meta = load.json.metadata;
  }
  // a commit that loses (409) leaves the entry as it is: still a hit with the current version
  const { body } = appendCommit({ ...meta, 'current-snapshot-id': 12345 }, { ns: NS, name: 'w0' });
  await call(c.base, 'POST', path, { body, expect: 409 });
  const m0 = await metrics();
  const load = await call(c.base, 'GET', path, { expect: 200 });
  assert.equal(load.json.metadata['current-snapshot-id'], meta['current-snapshot-id']);
  assert.equal(sum(await metrics(), 'floe_table_cache_hits_total') - sum(m0, 'floe_table_cache_hits_total'), 1);
});
