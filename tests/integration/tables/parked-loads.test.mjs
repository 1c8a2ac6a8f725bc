// A loadTable that misses the cache parks its connection while a loader thread reads the
// table, instead of holding an HTTP worker; a cached one is answered by the HTTP thread that
// read it, whatever the workers are waiting for. With PostgreSQL's table_entry locked by a psql
// session, so that every read of a table waits, a dozen misses on a daemon with one worker
// must not stop it from answering a cached table; once the lock goes, every parked load
// gets its own table. A daemon stopped while loads are parked answers them and exits
// cleanly, and a client that leaves while parked costs nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request, startFloe, psql, psqlBin } from '../lib/harness.mjs';
import { parse, sum } from '../lib/prom.mjs';
import { startCatalog, call, tablePath, createBody } from './lib.mjs';

const NS = ['parked'];
const WORKERS = 1; // one worker: a miss holding it would stop every other request
const TABLES = 13;
let a; // the daemon under test, with one HTTP worker
let b; // a second daemon on the same database, which creates the tables, so that A misses
const uuids = {};

before(async () => {
  a = await startCatalog('tbl_parked', { args: ['--threads', String(WORKERS)] });
  b = await startFloe({ databaseUrl: a.dbUrl });
  await call(b.baseUrl, 'POST', `${a.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
  for (let i = 0; i < TABLES; i++) {
    const name = `m${i}`;
    const res = await call(b.baseUrl, 'POST', `${a.p}/namespaces/${NS[0]}/tables`, { body: createBody(name), expect: 200 });
    uuids[name] = res.json.metadata['table-uuid'];
  }
});

after(async () => {
  await a?.floe.stop();
  await b?.stop();
});

const sessions = (url, cond) =>
  Number(psql(url, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND ${cond}`));

async function waitUntil(what, fn, ms = 20000) {
  const until = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > until) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// A psql session holding table_entry in ACCESS EXCLUSIVE mode: every read of a table waits.
async function lockTables(url) {
  const holder = spawn(psqlBin(), [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1'], { stdio: ['pipe', 'ignore', 'pipe'] });
  const closed = new Promise((resolve) => holder.on('close', resolve));
  holder.stdin.write('BEGIN; LOCK TABLE table_entry IN ACCESS EXCLUSIVE MODE;\n');
  await waitUntil('the psql session holds the lock', () => sessions(url, "state = 'idle in transaction'") === 1);
  return {
    async release() {
      holder.stdin.end('COMMIT;\n');
      assert.equal(await closed, 0, 'the psql session ended cleanly');
    },
  };
}

// Each answer is a 200 with its own table's metadata.
function assertOwnTables(answers, names) {
  answers.forEach((res, i) => {
    assert.equal(res.status, 200, `${names[i]}: ${res.text}`);
    assert.equal(res.json.metadata['table-uuid'], uuids[names[i]], `${names[i]} answered with its own metadata`);
  });
}

const loadsWaiting = (url) => sessions(url, "wait_event_type = 'Lock' AND query LIKE '%unnest%'");

test('misses wait for PostgreSQL without holding the worker: a cached table is still answered, then each parked load gets its own table', async () => {
  const cached = 'm0';
  await call(a.base, 'GET', tablePath(a.p, NS, cached), { expect: 200 }); // now in A's cache
  // /metrics reads table statistics, which the lock would hold up: counted before and after
  const metrics = async () => parse((await request(a.base, 'GET', '/metrics', { timeoutMs: 5000 })).text);
  const m0 = await metrics();
  const lock = await lockTables(a.dbUrl);
  let released = false;
  try {
    // a dozen misses, all in flight while the reads wait
    const names = Object.keys(uuids).filter((n) => n !== cached);
    const parked = names.map((n) => request(a.base, 'GET', tablePath(a.p, NS, n), { timeoutMs: 30000 }));
    await waitUntil('a batched read waits on the lock', () => loadsWaiting(a.dbUrl) >= 1);
    // the worker would be blocked if a miss held it: this load would wait for the lock
    // (and time out)
    const hit = await request(a.base, 'GET', tablePath(a.p, NS, cached), { timeoutMs: 5000 });
    assert.equal(hit.status, 200, hit.text);
    assert.equal(hit.json.metadata['table-uuid'], uuids[cached]);
    const health = await request(a.base, 'GET', '/healthz', { timeoutMs: 5000 });
    assert.equal(health.status, 200, 'and so is /healthz');
    await lock.release();
    released = true;
    assertOwnTables(await Promise.all(parked), names);
    const m1 = await metrics();
    assert.equal(sum(m1, 'floe_table_cache_loads_waiting'), 0, 'nothing waits any more');
    const reads = sum(m1, 'floe_table_cache_batch_reads_total') - sum(m0, 'floe_table_cache_batch_reads_total');
    const loads = sum(m1, 'floe_table_cache_batch_loads_total') - sum(m0, 'floe_table_cache_batch_loads_total');
    assert.equal(loads, names.length, 'every parked load was answered by a batched read');
    assert.ok(reads >= 1 && reads < names.length, `${reads} statements read ${loads} loads`);
  } finally {
    if (!released) await lock.release();
  }
});

test('a daemon stopped while loads are parked answers them and exits 0; a client that gave up while parked holds up neither the others nor the exit', async () => {
  const c = await startFloe({ databaseUrl: a.dbUrl, args: ['--threads', String(WORKERS)] });
  let lock = null;
  try {
    lock = await lockTables(a.dbUrl);
    const names = Object.keys(uuids).slice(0, 6);
    // one client gives up after 300 ms, while its load is parked
    const gone = request(c.baseUrl, 'GET', tablePath(a.p, NS, 'm7'), { timeoutMs: 300 }).then(
      () => 'answered',
      () => 'gave up',
    );
    const parked = names.map((n) => request(c.baseUrl, 'GET', tablePath(a.p, NS, n), { timeoutMs: 30000 }));
    await waitUntil('a batched read waits on the lock', () => loadsWaiting(a.dbUrl) >= 1);
    assert.equal(await gone, 'gave up');
    const stopped = c.stop('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(c.proc.exitCode, null, 'the daemon waits for its parked loads');
    await lock.release();
    lock = null;
    assertOwnTables(await Promise.all(parked), names);
    const { code, signal } = await stopped;
    assert.equal(signal, null, c.logs());
    assert.equal(code, 0, c.logs());
  } finally {
    if (lock) await lock.release();
    await c.stop();
  }
});

test('a worker waiting on PostgreSQL holds up no cached load: the HTTP thread answers it from memory', async () => {
  // one HTTP thread and one worker: anything that waited on the HTTP thread, or a cached
  // load queued behind the worker, would stop the hit below
  const d = await startFloe({ databaseUrl: a.dbUrl, args: ['--threads', '1', '--http-threads', '1'] });
  let lock = null;
  try {
    // D's cache is emptied when its listener starts listening: cached only after that, and
    // then checked to be a hit
    const dm = async () => parse((await request(d.baseUrl, 'GET', '/metrics', { timeoutMs: 5000 })).text);
    const until = Date.now() + 20000;
    while (sum(await dm(), 'floe_table_cache_listening') !== 1) {
      if (Date.now() > until) throw new Error('D never listened for cache notifications');
      await new Promise((r) => setTimeout(r, 25));
    }
    await call(d.baseUrl, 'GET', tablePath(a.p, NS, 'm1'), { expect: 200 });
    const hits0 = sum(await dm(), 'floe_table_cache_hits_total');
    await call(d.baseUrl, 'GET', tablePath(a.p, NS, 'm1'), { expect: 200 });
    assert.equal(sum(await dm(), 'floe_table_cache_hits_total'), hits0 + 1, 'm1 is in D\'s cache');
    lock = await lockTables(a.dbUrl);
    // listing the tables reads table_entry: the worker waits on the lock
    let listed = false;
    const list = request(d.baseUrl, 'GET', `${a.p}/namespaces/${NS[0]}/tables`, { timeoutMs: 30000 }).finally(() => {
      listed = true;
    });
    await waitUntil('the list waits on the lock', () => sessions(a.dbUrl, "wait_event_type = 'Lock'") >= 1);
    for (let i = 0; i < 3; i++) {
      const hit = await request(d.baseUrl, 'GET', tablePath(a.p, NS, 'm1'), { timeoutMs: 5000 });
      assert.equal(hit.status, 200, hit.text);
      assert.equal(hit.json.metadata['table-uuid'], uuids.m1);
    }
    const exists = await request(d.baseUrl, 'HEAD', tablePath(a.p, NS, 'm1'), { timeoutMs: 5000 });
    assert.equal(exists.status, 204, 'tableExists is answered from the cache too');
    const health = await request(d.baseUrl, 'GET', '/healthz', { timeoutMs: 5000 });
    assert.equal(health.status, 200, 'and so is /healthz');
    assert.equal(listed, false, 'the list was still waiting for PostgreSQL meanwhile');
    await lock.release();
    lock = null;
    const res = await list;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.identifiers.length, TABLES, 'then the list is answered, whole');
  } finally {
    if (lock) await lock.release();
    await d.stop();
  }
});
