// Cache coherence across replicas: two daemons on one database. Commits go through
// replica A while replica B serves loadTable (some with If-None-Match) from its cache
// as fast as it can. B learns of A's commits only through NOTIFY floe_table. For every
// acknowledged commit the test measures the notification delay (from the acknowledgement
// until B's /metrics shows the notification applied) and how long after the
// acknowledgement B still began loads that answered an older version (a 2xx body, or a
// 304 to an older ETag). Once B has applied the notification no load begun afterwards may
// answer an older version: each commit is followed by a quiet period after that point in
// which only B's loaders run, so a stale read re-inserted into B's cache after the
// invalidation (served until the next commit) would be caught. How soon PostgreSQL
// delivers a notification depends on when its listening backend gets a CPU (85 ms in the
// run queue was traced on 2 busy cores), so that delay has a sanity bound only.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request, startFloe, sleep, psql, waitFor } from '../lib/harness.mjs';
import { parse, sum } from '../lib/prom.mjs';
import { startCatalog, call, tablePath, createBody, appendCommit } from './lib.mjs';
import { ingest, show, tmpDir } from '../ingest/lib.mjs';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const NS = ['repl'];
const COMMITS = 60;
const LOADERS = 6;
const QUIET_MS = 300; // after each notification is applied; a stale entry would outlive it
const NOTIFY_BOUND_MS = 5000; // a listener that does not apply notifications fails here

let a;
let b;

before(async () => {
  a = await startCatalog('tbl_replicas');
  b = await startFloe({ databaseUrl: a.dbUrl });
  await call(a.base, 'POST', `${a.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await b?.stop();
  await a?.floe.stop();
});

const versionOf = (loc) => Number(/\/metadata\/(\d{5,})-[^/]*\.metadata\.json$/.exec(loc)[1]);

test('a commit on one replica is never served stale by another after the notification delay', async () => {
  const name = 't';
  const path = tablePath(a.p, NS, name);
  let meta = (await call(a.base, 'POST', `${a.p}/namespaces/repl/tables`, { body: createBody(name), expect: 200 })).json.metadata;
  const before = parse((await request(b.baseUrl, 'GET', '/metrics')).text);
  assert.equal(sum(before, 'floe_table_cache_listening'), 1, "replica B's cache is listening");

  // Loaders on B: each remembers the ETag and version it last saw and sends If-None-Match
  // on every other request. A 304 means "still the version of that ETag".
  const seen = []; // {start, end, version, status}
  let stop = false;
  const loader = async (k) => {
    let etag = null;
    let held = -1;
    for (let i = 0; !stop; i++) {
      const headers = etag && (i + k) % 2 === 0 ? { 'If-None-Match': etag } : {};
      const start = performance.now();
      const res = await request(b.baseUrl, 'GET', path, { headers });
      const end = performance.now();
      if (res.status === 304) {
        assert.ok(held >= 0, 'a 304 answers an ETag this loader was given');
        seen.push({ start, end, version: held, status: 304 });
        continue;
      }
      assert.equal(res.status, 200, `load on replica B: ${res.status} ${res.text.slice(0, 200)}`);
      held = versionOf(res.json['metadata-location']);
      etag = res.headers.etag;
      assert.ok(etag, 'loadTable sends an ETag');
      seen.push({ start, end, version: held, status: 200 });
    }
  };
  const loaders = Array.from({ length: LOADERS }, (_, k) => loader(k));

  // Commits on A, one after the other. After each, B's /metrics is read until it counts
  // the notification as applied (nothing else notifies in this database meanwhile), then
  // a quiet period in which only B's loaders run: a stale entry left in B's cache would be
  // served through all of it.
  const applied = async () =>
    sum(parse((await request(b.baseUrl, 'GET', '/metrics')).text), 'floe_table_cache_notifications_total');
  const acks = []; // {version, at, applied}
  try {
    for (let i = 0; i < COMMITS; i++) {
      const n0 = await applied();
      const { body } = appendCommit(meta, { ns: NS, name });
      const res = await call(a.base, 'POST', path, { body, expect: 200 });
      const ack = { version: versionOf(res.json['metadata-location']), at: performance.now() };
      meta = res.json.metadata;
      for (;;) {
        const n = await applied();
        const now = performance.now();
        if (n > n0) {
          ack.applied = now; // the end of the /metrics answer that showed it
          break;
        }
        assert.ok(now - ack.at < NOTIFY_BOUND_MS, `replica B did not apply the notification of version ${ack.version} within ${NOTIFY_BOUND_MS} ms`);
        await sleep(2);
      }
      acks.push(ack);
      await sleep(QUIET_MS);
    }
  } finally {
    stop = true;
    await Promise.all(loaders);
  }

  // For commit v: the notification delay (acknowledgement -> applied on B), how long after
  // the acknowledgement B still began a load that answered an older version (0 when none
  // did), and the loads begun after B had applied it that answered an older version (none
  // allowed).
  const stats = (xs) => {
    const sorted = [...xs].sort((x, y) => x - y);
    return `p50 ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} ms, max ${sorted[sorted.length - 1].toFixed(1)} ms`;
  };
  const delays = acks.map(({ applied: t, at }) => t - at);
  const staleFor = acks.map(({ version, at }) => {
    let d = 0;
    for (const s of seen) if (s.start > at && s.version < version) d = Math.max(d, s.start - at);
    return d;
  });
  console.log(
    `replica notification delay (ack on A -> applied on B), ${COMMITS} commits: ${stats(delays)}; ` +
      `last stale load begun on B after the ack: ${stats(staleFor)}; ${seen.length} loads on B ` +
      `(${seen.filter((s) => s.status === 304).length} answered 304)`,
  );
  for (const { version, at, applied: t } of acks) {
    const late = seen.filter((s) => s.start > t && s.version < version);
    assert.equal(
      late.length,
      0,
      `replica B answered version ${late[0]?.version} (${late[0]?.status}) to a load begun ` +
        `${((late[0]?.start ?? t) - t).toFixed(1)} ms after it had applied the notification of version ${version} ` +
        `(${(t - at).toFixed(1)} ms after its acknowledgement)`,
    );
  }

  // The cache was really in play on B (else the test could not fail), and it was invalidated.
  const now = parse((await request(b.baseUrl, 'GET', '/metrics')).text);
  const hits = sum(now, 'floe_table_cache_hits_total') - sum(before, 'floe_table_cache_hits_total');
  const misses = sum(now, 'floe_table_cache_misses_total') - sum(before, 'floe_table_cache_misses_total');
  console.log(`replica B cache during the test: ${hits} hits, ${misses} misses`);
  assert.ok(hits > COMMITS, `replica B served loads from its cache (${hits} hits)`);
  assert.ok(misses >= COMMITS, `replica B re-read the table after each commit (${misses} misses)`);
  assert.ok(seen.some((s) => s.status === 304), 'some loads were answered 304');
});

test('commits racing through both replicas on one table: each converges on the last committed version and keeps it', async () => {
  // Each replica puts the version it commits into its own cache (the next loads are hits).
  // A commit through the other replica right after must still replace it there, through
  // its notification, even when that notification is applied before the first replica's
  // insert: such an insert is refused. Rounds of racing writers on both, then both replicas
  // must answer what PostgreSQL holds, and keep answering it.
  const name = 'both';
  const path = tablePath(a.p, NS, name);
  await call(a.base, 'POST', `${a.p}/namespaces/repl/tables`, { body: createBody(name), expect: 200 });
  const writer = async (base, commits) => {
    let meta = (await call(base, 'GET', path, { expect: 200 })).json.metadata;
    for (let i = 0; i < commits; i++)
      for (;;) {
        const { body } = appendCommit(meta, { ns: NS, name });
        const res = await call(base, 'POST', path, { body, expect: [200, 409] });
        if (res.status === 200) break;
        meta = (await call(base, 'GET', path, { expect: 200 })).json.metadata;
      }
  };
  const answers = async (base) => (await call(base, 'GET', path, { expect: 200 })).json['metadata-location'];
  for (let round = 0; round < 8; round++) {
    await Promise.all([writer(a.base, 3), writer(a.base, 3), writer(b.baseUrl, 3), writer(b.baseUrl, 3)]);
    const truth = psql(a.dbUrl, `SELECT metadata_location FROM table_entry WHERE name = '${name}'`);
    for (const [label, base] of [['A', a.base], ['B', b.baseUrl]])
      await waitFor(async () => (await answers(base)) === truth, {
        timeoutMs: NOTIFY_BOUND_MS,
        what: `replica ${label} to answer the last committed version (round ${round})`,
      });
    for (const until = performance.now() + 100; performance.now() < until; )
      for (const base of [a.base, b.baseUrl]) assert.equal(await answers(base), truth, 'and to keep answering it');
  }
});

test('a replica that starts tells the others to drop their cached tables', async () => {
  // A daemon that dies between a pointer move that committed by itself (an optimistic
  // commit) and its NOTIFY (sent right after, before the client is answered) leaves the
  // other replicas a stale entry; it is cleared when that daemon starts again. Simulated:
  // the row moves by SQL, without a notification.
  const name = 'unnotified';
  const path = tablePath(a.p, NS, name);
  const created = (await call(a.base, 'POST', `${a.p}/namespaces/repl/tables`, { body: createBody(name), expect: 200 })).json;
  const first = await call(b.baseUrl, 'GET', path, { expect: 200 }); // now cached on B
  assert.equal(first.json['metadata-location'], created['metadata-location']);
  const moved = created['metadata-location'].replace(/\.metadata\.json$/, '-moved.metadata.json');
  // the moved row's file exists (a row whose document only its file holds is read from it)
  fs.copyFileSync(fileURLToPath(created['metadata-location']), fileURLToPath(moved));
  psql(a.dbUrl, `UPDATE table_entry SET metadata_location = '${moved}', version = version + 1 WHERE name = '${name}'`);
  const stale = await call(b.baseUrl, 'GET', path, { expect: 200 });
  assert.equal(stale.json['metadata-location'], created['metadata-location'], 'B still serves its cached entry (no notification was sent)');
  const c = await startFloe({ databaseUrl: a.dbUrl });
  try {
    await waitFor(
      async () => (await call(b.baseUrl, 'GET', path, { expect: 200 })).json['metadata-location'] === moved,
      { timeoutMs: 10000, what: 'replica B to drop its cached entry when replica C started' },
    );
  } finally {
    await c.stop();
  }
});

test('a floe ingest killed while its COMMIT runs still tells the other replicas', async () => {
  // The notification travels behind the COMMIT in the same request, so PostgreSQL sends it
  // once the COMMIT completes even when the process that asked is gone by then. A deferred
  // trigger makes this table's COMMIT take 1.5 s; the ingest is killed during it.
  const name = 'killed';
  const ctx = { ns: NS, dbUrl: a.dbUrl, base: a.base, p: a.p };
  const dir = tmpDir('repl-kill');
  fs.writeFileSync(`${dir}/1.csv`, 'id,v\n1,a\n');
  fs.writeFileSync(`${dir}/2.csv`, 'id,v\n2,b\n');
  const first = await ingest(ctx, name, [`${dir}/1.csv`], { args: ['--create'] });
  assert.equal(first.code, 0, show(first));
  const path = tablePath(a.p, NS, name);
  const cached = (await call(b.baseUrl, 'GET', path, { expect: 200 })).json['metadata-location'];
  psql(a.dbUrl, `CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN NULL; END $$;
    CREATE CONSTRAINT TRIGGER slow_commit AFTER UPDATE ON table_entry DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW WHEN (NEW.name = '${name}') EXECUTE FUNCTION slow_commit()`);
  try {
    let proc;
    const run = ingest(ctx, name, [`${dir}/2.csv`], { onSpawn: (p) => { proc = p; } });
    await waitFor(
      () => psql(a.dbUrl, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE 'COMMIT%'").trim() === '1',
      { timeoutMs: 15000, intervalMs: 20, what: 'the ingest to be in its COMMIT' },
    );
    proc.kill('SIGKILL');
    const killed = await run;
    assert.equal(killed.signal, 'SIGKILL', show(killed));
    // The COMMIT completes without its client; then B must drop its entry.
    await waitFor(
      () => psql(a.dbUrl, `SELECT metadata_location FROM table_entry WHERE name = '${name}'`).trim() !== cached,
      { timeoutMs: 10000, what: 'the killed ingest\'s COMMIT to complete' },
    );
    const moved = psql(a.dbUrl, `SELECT metadata_location FROM table_entry WHERE name = '${name}'`).trim();
    await waitFor(
      async () => (await call(b.baseUrl, 'GET', path, { expect: 200 })).json['metadata-location'] === moved,
      { timeoutMs: 3000, what: 'replica B to drop its cached entry (notified behind the killed ingest\'s COMMIT)' },
    );
  } finally {
    psql(a.dbUrl, 'DROP TRIGGER slow_commit ON table_entry; DROP FUNCTION slow_commit()');
  }
});
