// snapshots=refs (only the snapshots a branch or tag points at) is made once per cached
// version and kept beside it: every later refs-only load of that version is a hit, sent
// without a copy (and coded once, like the whole answer). The kept form counts in the
// cache's bytes and leaves with its version, so a commit is never answered with an older
// form. A large table's form is made by a worker; without a cache each load makes its own.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../lib/harness.mjs';
import { parse, sum } from '../lib/prom.mjs';
import { startCatalog, call, tablePath, createBody, appendCommit } from './lib.mjs';

const NS = ['refsns'];
const ZSTD = { 'Accept-Encoding': 'zstd' };
let c;

before(async () => {
  c = await startCatalog('refs_form');
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await c?.floe.stop();
});

const metrics = async (d = c) => parse((await request(d.base, 'GET', '/metrics')).text);
const props = (n, width) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p.${i}`, `v${i}`.padEnd(width, 'x')]));

// A table with `count` snapshots on main and a tag on the first; returns the ids.
async function grown(d, name, count, extra = {}) {
  const path = tablePath(d.p, NS, name);
  let meta = (await call(d.base, 'POST', `${d.p}/namespaces/${NS[0]}/tables`, { body: createBody(name, extra), expect: 200 })).json.metadata;
  const ids = [];
  for (let i = 0; i < count; i++) {
    const { body, snapshotId } = appendCommit(meta, { ns: NS, name });
    meta = (await call(d.base, 'POST', path, { body, expect: 200 })).json.metadata;
    ids.push(snapshotId);
  }
  await call(d.base, 'POST', path, {
    body: { requirements: [], updates: [{ action: 'set-snapshot-ref', 'ref-name': 'first', type: 'tag', 'snapshot-id': ids[0] }] },
    expect: 200,
  });
  return { path, ids };
}

// The whole metadata with only the snapshots a ref points at: what refs must answer.
function filtered(all) {
  const keep = new Set(Object.values(all.refs).map((r) => r['snapshot-id']));
  return { ...all, snapshots: all.snapshots.filter((s) => keep.has(s['snapshot-id'])) };
}

test('a cached version\'s refs-only answer is made once, kept in the cache\'s bytes, and leaves with its version', async () => {
  const { path, ids } = await grown(c, 'small', 30);
  const all = await call(c.base, 'GET', path, { expect: 200 });
  const m0 = await metrics();
  const first = await call(c.base, 'GET', `${path}?snapshots=refs`, { expect: 200 });
  const m1 = await metrics();
  const again = await call(c.base, 'GET', `${path}?snapshots=refs`, { expect: 200 });
  const m2 = await metrics();
  assert.deepEqual(first.json.metadata, filtered(all.json.metadata));
  assert.deepEqual(first.json.metadata.snapshots.map((s) => s['snapshot-id']).sort(), [ids[0], ids.at(-1)].sort());
  assert.deepEqual(first.json.config, {});
  assert.equal(first.json['metadata-location'], all.json['metadata-location']);
  assert.ok(first.rawBody.equals(again.rawBody), 'the same bytes');
  const grew = (a, b) => sum(b, 'floe_table_cache_bytes') - sum(a, 'floe_table_cache_bytes');
  assert.equal(grew(m0, m1), first.rawBody.length + all.json['metadata-location'].length, 'the form, counted');
  assert.equal(grew(m1, m2), 0, 'kept, not made again');
  assert.equal(sum(m2, 'floe_table_cache_hits_total') - sum(m1, 'floe_table_cache_hits_total'), 1);
  // its own ETag, which revalidates it and not the whole answer
  assert.notEqual(first.headers.etag, all.headers.etag);
  assert.equal((await call(c.base, 'GET', `${path}?snapshots=refs`, { headers: { 'If-None-Match': first.headers.etag } })).status, 304);
  assert.equal((await call(c.base, 'GET', path, { headers: { 'If-None-Match': first.headers.etag } })).status, 200);
  // a commit: the next refs load is the new version's
  const { body, snapshotId } = appendCommit(all.json.metadata, { ns: NS, name: 'small' });
  await call(c.base, 'POST', path, { body, expect: 200 });
  const next = await call(c.base, 'GET', `${path}?snapshots=refs`, { expect: 200 });
  assert.deepEqual(next.json.metadata.snapshots.map((s) => s['snapshot-id']).sort(), [ids[0], snapshotId].sort());
  assert.notEqual(next.headers.etag, first.headers.etag);
  const now = await call(c.base, 'GET', path, { expect: 200 });
  assert.deepEqual(next.json.metadata, filtered(now.json.metadata));
});

test('a large table\'s form is made by a worker, then coded once and kept', async () => {
  const { path } = await grown(c, 'large', 5, { properties: props(900, 200) });
  const all = await call(c.base, 'GET', path, { expect: 200 });
  assert.ok(all.rawBody.length > 150000, `${all.rawBody.length} bytes`);
  const plain = await call(c.base, 'GET', `${path}?snapshots=refs`, { expect: 200 });
  assert.deepEqual(plain.json.metadata, filtered(all.json.metadata));
  const m0 = await metrics();
  const coded = await call(c.base, 'GET', `${path}?snapshots=refs`, { headers: ZSTD, expect: 200 });
  const m1 = await metrics();
  assert.equal(coded.headers['content-encoding'], 'zstd');
  assert.ok(Buffer.from(coded.text).equals(plain.rawBody), 'decodes to the plain refs-only answer');
  assert.equal(sum(m1, 'floe_table_cache_coded_bytes') - sum(m0, 'floe_table_cache_coded_bytes'), coded.rawBody.length, 'its copy, counted');
  const again = await call(c.base, 'GET', `${path}?snapshots=refs`, { headers: ZSTD, expect: 200 });
  assert.ok(again.rawBody.equals(coded.rawBody), 'the kept copy');
  assert.equal(sum(await metrics(), 'floe_table_cache_coded_bytes'), sum(m1, 'floe_table_cache_coded_bytes'));
});

test('without a cache (--table-cache-bytes 0) each refs-only load makes its own', async () => {
  const d = await startCatalog('refs_form_nocache', { args: ['--table-cache-bytes', '0'] });
  try {
    await call(d.base, 'POST', `${d.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
    const { path, ids } = await grown(d, 't', 4);
    for (let i = 0; i < 2; i++) {
      const res = await call(d.base, 'GET', `${path}?snapshots=refs`, { headers: i ? ZSTD : {}, expect: 200 });
      assert.deepEqual(res.json.metadata.snapshots.map((s) => s['snapshot-id']).sort(), [ids[0], ids[3]].sort());
    }
    assert.equal(sum(await metrics(d), 'floe_table_cache_bytes'), 0);
  } finally {
    await d.floe.stop();
  }
});
