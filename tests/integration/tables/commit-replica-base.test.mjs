// A commit is judged on the table's current state even when the daemon holds an older
// version parsed in memory. Replica A commits, and a conflicting commit makes it keep that
// version parsed for its next optimistic try; replica B, on the same database, then
// commits on top of it.
// A stale client on A must get 409 and change nothing; a client that saw B's commit must
// succeed on A, and A's new metadata must be built on B's version, not on the one A held.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request, startFloe, psql, waitFor } from '../lib/harness.mjs';
import { parse, sum } from '../lib/prom.mjs';
import fs from 'node:fs';
import { startCatalog, call, tablePath, createBody, appendCommit, assertError, readMetadataFile, uuidv7, localPath } from './lib.mjs';

const NS = ['rbase'];
let a;
let b;
let aListener; // the PostgreSQL backend that delivers A's cache notifications

const listeners = (url) =>
  psql(url, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN floe_table%'")
    .split('\n')
    .filter(Boolean)
    .map(Number);

before(async () => {
  a = await startCatalog('tbl_replica_base');
  // Before B starts, A's is the only one (A's listener connects on a thread of its own).
  [aListener] = await waitFor(() => { const l = listeners(a.dbUrl); return l.length === 1 && l; }, { what: "A's LISTEN backend" });
  b = await startFloe({ databaseUrl: a.dbUrl });
  await call(a.base, 'POST', `${a.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await b?.stop();
  await a?.floe.stop();
});

// Notifications from another process that A has applied.
const applied = async () => sum(parse((await request(a.base, 'GET', '/metrics')).text), 'floe_table_cache_notifications_total');

test('a version held parsed by one replica never judges a commit after another replica moved the table', async () => {
  for (const [i, withKey] of [false, true].entries()) {
    const name = `t${i}`;
    const path = tablePath(a.p, NS, name);
    const headers = () => (withKey ? { 'Idempotency-Key': uuidv7() } : {});
    const v0 = (await call(a.base, 'POST', `${a.p}/namespaces/rbase/tables`, { body: createBody(name), expect: 200 })).json;

    // Two commits on A, then a conflicting one: A now holds v2 parsed for its next try.
    const c1 = appendCommit(v0.metadata, { ns: NS, name });
    const v1 = (await call(a.base, 'POST', path, { body: c1.body, headers: headers(), expect: 200 })).json;
    const c2 = appendCommit(v1.metadata, { ns: NS, name });
    const v2 = (await call(a.base, 'POST', path, { body: c2.body, headers: headers(), expect: 200 })).json;
    const late = appendCommit(v1.metadata, { ns: NS, name });
    assertError(await request(a.base, 'POST', path, { body: late.body, headers: headers() }), 409, 'CommitFailedException', 'main');

    // B moves the table on.
    const n0 = await applied();
    const c3 = appendCommit(v2.metadata, { ns: NS, name });
    const v3 = (await call(b.baseUrl, 'POST', path, { body: c3.body, headers: headers(), expect: 200 })).json;

    // A client that saw only v2 commits through A: 409, and nothing changes.
    const stale = appendCommit(v2.metadata, { ns: NS, name });
    assertError(await request(a.base, 'POST', path, { body: stale.body, headers: headers() }), 409, 'CommitFailedException', 'main');
    // A's loadTable cache learns of B's version from its notification, which may still be on
    // its way (README: coherent after the acknowledgement plus the notification delay).
    await waitFor(async () => (await applied()) > n0, { what: "B's notification applied on A" });
    const now = (await call(a.base, 'GET', path, { expect: 200 })).json;
    assert.equal(now['metadata-location'], v3['metadata-location'], 'the stale commit applied nothing');

    // A client that saw v3 commits through A: built on v3.
    const fresh = appendCommit(v3.metadata, { ns: NS, name });
    const v4 = (await call(a.base, 'POST', path, { body: fresh.body, headers: headers(), expect: 200 })).json;
    const ids = v4.metadata.snapshots.map((s) => s['snapshot-id']);
    assert.deepEqual(ids, [c1.snapshotId, c2.snapshotId, c3.snapshotId, fresh.snapshotId], 'every snapshot, in order');
    assert.equal(v4.metadata.snapshots[3]['parent-snapshot-id'], c3.snapshotId);
    assert.equal(v4.metadata['last-sequence-number'], 4);
    assert.deepEqual(
      v4.metadata['metadata-log'].map((e) => e['metadata-file']),
      [v0, v1, v2, v3].map((v) => v['metadata-location']),
      'the metadata log names the version B wrote',
    );
    assert.deepEqual(readMetadataFile(v4['metadata-location']), v4.metadata, 'the file holds what was answered');

    // A commit that changes nothing, through A, answers B's latest state byte for byte.
    const c5 = appendCommit(v4.metadata, { ns: NS, name });
    const v5 = (await call(b.baseUrl, 'POST', path, { body: c5.body, headers: headers(), expect: 200 })).json;
    const noop = await call(a.base, 'POST', path, { body: { requirements: [], updates: [] }, headers: headers(), expect: 200 });
    assert.equal(noop.json['metadata-location'], v5['metadata-location']);
    assert.deepEqual(noop.json.metadata, v5.metadata);
  }
});

// Properties that make a table's metadata text larger than 64 KB: from that size on, the
// version a commit writes is kept parsed for the next commit even when no commit conflicts
// (catalog/commit.c, KEEP_BYTES), so the tests below run on a small and on a large table.
const SIZES = [['', {}], ['_large', { properties: Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`pad.${i}`, 'x'.repeat(1000)])) }]];
// The large table's document is larger than 64 KB from its first version, the small one's is not.
const assertSize = (name, extra, created) => {
  const bytes = fs.statSync(localPath(created['metadata-location'])).size;
  assert.equal(bytes > 64 * 1024, extra.properties !== undefined, `${name}: a ${bytes}-byte document`);
};

// A commit reads the table's row without its metadata when the row still names the version
// whose text the daemon holds in its loadTable cache (where its own last commit left it).
// Here A's listening backend is stopped while B commits, so A's cached text is one version
// behind when the next commits arrive: the row's own text must then be the base, never the
// cached one (reading the cached text whenever A holds one fails every check below). On the
// large table A also holds the version it wrote parsed, which must not stand in either.
test('text a replica cached for a table never stands in for a version another replica committed', async () => {
  assert.ok(aListener > 0, 'A listens for cache notifications');
  for (const [suffix, extra] of SIZES) await cachedRounds(`cached${suffix}`, extra);
});

async function cachedRounds(name, extra) {
  const path = tablePath(a.p, NS, name);
  let v = (await call(a.base, 'POST', `${a.p}/namespaces/rbase/tables`, { body: createBody(name, extra), expect: 200 })).json;
  assertSize(name, extra, v);
  const ids = [];
  for (let i = 0; i < 3; i++) {
    // A commits, and its loadTable cache holds what it wrote.
    const ca = appendCommit(v.metadata, { ns: NS, name });
    const va = (await call(a.base, 'POST', path, { body: ca.body, headers: { 'Idempotency-Key': uuidv7() }, expect: 200 })).json;
    const n0 = await applied();
    process.kill(aListener, 'SIGSTOP');
    let cb;
    let vb;
    try {
      // B moves the table on; A cannot hear of it yet.
      cb = appendCommit(va.metadata, { ns: NS, name });
      vb = (await call(b.baseUrl, 'POST', path, { body: cb.body, expect: 200 })).json;
      const cached = (await call(a.base, 'GET', path, { expect: 200 })).json;
      assert.equal(cached['metadata-location'], va['metadata-location'], `round ${i}: A still serves its own version from its cache`);
      // A client that saw only A's version commits through A: 409, nothing changes.
      const stale = appendCommit(va.metadata, { ns: NS, name });
      assertError(await request(a.base, 'POST', path, { body: stale.body, headers: { 'Idempotency-Key': uuidv7() } }), 409, 'CommitFailedException', 'main');
      // A client that saw B's version commits through A: built on it.
      const cf = appendCommit(vb.metadata, { ns: NS, name });
      v = (await call(a.base, 'POST', path, { body: cf.body, expect: 200 })).json;
      ids.push(ca.snapshotId, cb.snapshotId, cf.snapshotId);
    } finally {
      process.kill(aListener, 'SIGCONT');
    }
    // B's notification reaches A now; the next round starts once A has applied it, so that
    // it cannot land on A's next commit and keep that one out of A's cache.
    await waitFor(async () => (await applied()) > n0, { what: "B's notification applied on A" });
    assert.deepEqual(v.metadata.snapshots.map((s) => s['snapshot-id']), ids, `round ${i}: every snapshot, in order`);
    assert.equal(v.metadata.snapshots.at(-1)['parent-snapshot-id'], cb.snapshotId);
    assert.equal(v.metadata['metadata-log'].at(-1)['metadata-file'], vb['metadata-location'], `round ${i}: the metadata log ends with B's version`);
    assert.deepEqual(readMetadataFile(v['metadata-location']), v.metadata, 'the file holds what was answered');
  }
}

// A commit's first try may not read the table's row at all: the version A's loadTable cache
// holds stands for it, and the move names that version (under an Idempotency-Key the move also
// carries the key's claim). With A's listening backend stopped while B commits, A holds a
// version one behind, and each kind of answer must still rest on the row: a commit judged fine
// on the held version must not land (its move names a version the row no longer has: 409 after
// a read, its file deleted); one that fails on the held version but not on the row's must land
// on the row's; a commit that changes nothing answers the row's version. A keyed answer then
// replays byte for byte and writes nothing more.
test('a commit that A judges on the version it holds never lands on, nor answers from, an older version', async () => {
  const variants = SIZES.flatMap((size) => [false, true].flatMap((k) => ['stale', 'fresh', 'noop'].map((x) => [size, k, x])));
  for (const [[suffix, extra], withKey, kind] of variants) {
    const name = `held_${kind}${withKey ? '_keyed' : ''}${suffix}`;
    const key = uuidv7();
    const headers = withKey ? { 'Idempotency-Key': key } : {};
    // The same request again under its key: the stored answer, and no file written or left.
    const replayed = async (first, body) => {
      if (!withKey) return;
      const files = fs.readdirSync(dir).sort();
      const again = await request(a.base, 'POST', path, { body, headers });
      assert.equal(again.status, first.status, `${name}: replayed status`);
      assert.equal(again.headers['idempotent-replayed'], 'true', `${name}: marked as replayed`);
      assert.equal(again.text, first.text, `${name}: replayed byte for byte`);
      assert.deepEqual(fs.readdirSync(dir).sort(), files, `${name}: a replay leaves no file`);
    };
    const path = tablePath(a.p, NS, name);
    const v0 = (await call(a.base, 'POST', `${a.p}/namespaces/rbase/tables`, { body: createBody(name, extra), expect: 200 })).json;
    assertSize(name, extra, v0);
    const ca = appendCommit(v0.metadata, { ns: NS, name });
    const va = (await call(a.base, 'POST', path, { body: ca.body, expect: 200 })).json;
    const dir = localPath(`${va.metadata.location}/metadata`);
    const n0 = await applied();
    process.kill(aListener, 'SIGSTOP');
    try {
      const cb = appendCommit(va.metadata, { ns: NS, name });
      const vb = (await call(b.baseUrl, 'POST', path, { body: cb.body, expect: 200 })).json;
      const cached = (await call(a.base, 'GET', path, { expect: 200 })).json;
      assert.equal(cached['metadata-location'], va['metadata-location'], `${kind}: A still serves its own version from its cache`);
      const files = fs.readdirSync(dir).sort();
      if (kind === 'stale') {
        const stale = appendCommit(va.metadata, { ns: NS, name });
        const r = await request(a.base, 'POST', path, { body: stale.body, headers });
        assertError(r, 409, 'CommitFailedException', 'main');
        assert.deepEqual(fs.readdirSync(dir).sort(), files, 'the file of the move that did not land is deleted');
        assert.equal(psql(a.dbUrl, `SELECT metadata_location FROM table_entry WHERE name = '${name}'`), vb['metadata-location']);
        await replayed(r, stale.body);
      } else if (kind === 'fresh') {
        const cf = appendCommit(vb.metadata, { ns: NS, name });
        const r = await call(a.base, 'POST', path, { body: cf.body, headers, expect: 200 });
        const vf = r.json;
        assert.deepEqual(vf.metadata.snapshots.map((s) => s['snapshot-id']), [ca.snapshotId, cb.snapshotId, cf.snapshotId]);
        assert.equal(vf.metadata['metadata-log'].at(-1)['metadata-file'], vb['metadata-location'], 'built on B\'s version');
        assert.deepEqual(readMetadataFile(vf['metadata-location']), vf.metadata, 'the file holds what was answered');
        assert.deepEqual(fs.readdirSync(dir).sort(), [...files, vf['metadata-location'].split('/').at(-1)].sort(), 'one file more: the one answered');
        await replayed(r, cf.body);
      } else {
        const noop = await call(a.base, 'POST', path, { body: { requirements: [], updates: [] }, headers, expect: 200 });
        assert.equal(noop.json['metadata-location'], vb['metadata-location'], 'a no-op commit answers the row\'s version');
        assert.deepEqual(noop.json.metadata, vb.metadata);
        assert.deepEqual(fs.readdirSync(dir).sort(), files, 'a no-op commit writes no file');
        await replayed(noop, { requirements: [], updates: [] });
      }
    } finally {
      process.kill(aListener, 'SIGCONT');
    }
    await waitFor(async () => (await applied()) > n0, { what: "B's notification applied on A" });
  }
});
