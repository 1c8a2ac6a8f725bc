// PostgreSQL failures in the middle of a commit storm, on a private cluster this
// file owns: a fast restart of the whole cluster, and the daemon's backends being
// terminated. The daemon must recover by itself (no restart), and no answer may
// be wrong: a 2xx must be visible afterwards, a 409 must not have been applied;
// requests that could not complete get 500/503 (in the error model).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startPgCluster, startFloe, psql, withDatabase, sleep, waitFor } from '../lib/harness.mjs';
import { call, tablePath, createBody, appendCommit, tryRequest, checkResponse, assertLinearHistory, uuidv7 } from './lib.mjs';

const NS = ['faults'];
let cluster;
let dbUrl;
let floe;
let P;

before(async () => {
  cluster = await startPgCluster({ tag: 'tbl-faults' });
  psql(cluster.url, 'CREATE DATABASE floe_faults');
  dbUrl = withDatabase(cluster.url, 'floe_faults');
  floe = await startFloe({ databaseUrl: dbUrl });
  const cfg = await call(floe.baseUrl, 'GET', '/v1/config?warehouse=default', { expect: 200 });
  P = `/v1/${cfg.json.overrides.prefix}`;
  await call(floe.baseUrl, 'POST', `${P}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await floe?.stop();
  cluster?.destroy();
});

const ALLOWED = new Set([200, 409, 500, 503]);

// Clients append until `state.stop`, recording every commit outcome.
async function storm(table, nClients, state) {
  const p = tablePath(P, NS, table);
  const recs = [];
  const client = async () => {
    let meta;
    while (!state.stop) {
      const l = await tryRequest(floe.baseUrl, 'GET', p, { timeoutMs: 30000 });
      if (l.status !== 200) {
        assert.ok(l.status === 0 || [500, 503].includes(l.status), `loadTable during a fault: ${l.status} ${l.text}`);
        if (l.status) checkResponse(l);
        await sleep(50);
        // keep committing on the last known state, so commits meet the fault too
        if (!meta) continue;
      } else {
        meta = l.json.metadata;
      }
      const { body, snapshotId } = appendCommit(meta, { ns: NS, name: table });
      const res = await tryRequest(floe.baseUrl, 'POST', p, { body, timeoutMs: 30000 });
      recs.push({ sid: snapshotId, status: res.status, text: res.text, error: res.error });
      if (res.status) checkResponse(res);
    }
  };
  await Promise.all(Array.from({ length: nClients }, client));
  return recs;
}

async function verify(table, recs, what) {
  const bad = recs.filter((r) => !ALLOWED.has(r.status));
  assert.deepEqual(bad.map((r) => `${r.status} ${r.text ?? r.error}`), [], `${what}: only 200/409/500/503 are acceptable answers`);
  const l = (await call(floe.baseUrl, 'GET', tablePath(P, NS, table), { expect: 200 })).json;
  assertLinearHistory(l, what);
  const ids = l.metadata.snapshots.map((s) => s['snapshot-id']);
  for (const r of recs) {
    const n = ids.filter((x) => x === r.sid).length;
    if (r.status === 200) assert.equal(n, 1, `${what}: a 200 commit (${r.sid}) is not visible — a wrong 2xx`);
    else if (r.status === 409) assert.equal(n, 0, `${what}: a 409 commit (${r.sid}) was applied — a wrong 409`);
    // Java's REST client maps only 500/502/504 to CommitStateUnknownException; a 503 is
    // a definite failure after which SnapshotProducer deletes the commit's manifest
    // list. So a 503 must never have been applied (an unknown outcome must be a 500).
    else if (r.status === 503) assert.equal(n, 0, `${what}: a 503 commit (${r.sid}) was applied — must have been 500`);
    else assert.ok(n <= 1);
  }
  const possible = new Set(recs.filter((r) => r.status !== 409).map((r) => r.sid));
  for (const id of ids) assert.ok(possible.has(id), `${what}: snapshot ${id} from nowhere`);
  const count = (s) => recs.filter((r) => r.status === s).length;
  return { ok: count(200), conflict: count(409), e500: count(500), e503: count(503), transport: count(0) };
}

test('PostgreSQL restarts (pg_ctl stop -m fast / start) mid-storm: the daemon recovers, no wrong answer', async () => {
  await call(floe.baseUrl, 'POST', `${P}/namespaces/faults/tables`, { body: createBody('restart'), expect: 200 });
  const state = { stop: false };
  const running = storm('restart', 6, state);
  await sleep(1500);
  cluster.stop('fast');
  await sleep(1500);
  // while the database is down: a clear 5xx in the error model, never a hang or a 2xx
  const during = await tryRequest(floe.baseUrl, 'GET', tablePath(P, NS, 'restart'), { timeoutMs: 30000 });
  assert.ok([500, 503].includes(during.status), `loadTable with PostgreSQL down: ${during.status} ${during.text}`);
  checkResponse(during);
  const ready = await tryRequest(floe.baseUrl, 'GET', '/readyz');
  assert.equal(ready.status, 503, '/readyz reports the outage');
  cluster.start();
  // the same daemon process serves again
  await waitFor(async () => (await tryRequest(floe.baseUrl, 'GET', tablePath(P, NS, 'restart'))).status === 200, {
    timeoutMs: 20000,
    what: 'the daemon to serve again after PostgreSQL restarted',
  });
  await sleep(1500);
  state.stop = true;
  const recs = await running;
  assert.equal(floe.proc.exitCode, null, 'the daemon did not exit');
  const s = await verify('restart', recs, 'restart');
  assert.ok(s.ok > 5, `too few commits: ${JSON.stringify(s)}`);
  // commits after recovery succeed normally
  for (let i = 0; i < 3; i++) {
    const p = tablePath(P, NS, 'restart');
    const l = (await call(floe.baseUrl, 'GET', p, { expect: 200 })).json;
    await call(floe.baseUrl, 'POST', p, { body: appendCommit(l.metadata, { ns: NS, name: 'restart' }).body, expect: 200 });
  }
  process.stderr.write(`# pg restart: ${JSON.stringify(s)}\n`);
});

test("the daemon's PostgreSQL backends terminated mid-storm: recovers, no wrong answer", async () => {
  await call(floe.baseUrl, 'POST', `${P}/namespaces/faults/tables`, { body: createBody('terminate'), expect: 200 });
  const state = { stop: false };
  const running = storm('terminate', 6, state);
  for (let i = 0; i < 4; i++) {
    await sleep(400);
    psql(cluster.url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'floe_faults' AND pid <> pg_backend_pid()");
  }
  await sleep(1000);
  state.stop = true;
  const recs = await running;
  const s = await verify('terminate', recs, 'terminate');
  assert.ok(s.ok > 5, `too few commits: ${JSON.stringify(s)}`);
  await waitFor(async () => (await tryRequest(floe.baseUrl, 'GET', '/readyz')).status === 200, { what: 'ready again' });
  process.stderr.write(`# backends terminated: ${JSON.stringify(s)}\n`);
});

// Clients that send every commit under an Idempotency-Key of its own and, as a client should
// after a 5xx or a lost answer, send the same request with the same key again (up to 8
// times), each on a table of its own (so that a first try moves the row without reading it,
// the key's claim riding with the move). Their backends are terminated mid-storm: the final
// answer of each commit must be right — a 200 (executed or replayed) applied exactly once, a
// 409 not applied — and no commit may be applied twice, whatever its attempts met.
test("keyed commits retried with their key while the daemon's backends are terminated: every final answer right, none applied twice", async () => {
  const names = Array.from({ length: 6 }, (_, i) => `keyed${i}`);
  for (const name of names) await call(floe.baseUrl, 'POST', `${P}/namespaces/faults/tables`, { body: createBody(name), expect: 200 });
  const state = { stop: false };
  const finals = [];
  const seen = [];
  const client = async (name) => {
    const p = tablePath(P, NS, name);
    while (!state.stop) {
      const l = await tryRequest(floe.baseUrl, 'GET', p, { timeoutMs: 30000 });
      if (l.status !== 200) {
        await sleep(50);
        continue;
      }
      const { body, snapshotId } = appendCommit(l.json.metadata, { ns: NS, name });
      const headers = { 'Idempotency-Key': uuidv7() };
      let res;
      for (let k = 0; k < 8; k++) {
        res = await tryRequest(floe.baseUrl, 'POST', p, { body, headers, timeoutMs: 30000 });
        seen.push(res.status);
        if (res.status) checkResponse(res);
        if (res.status === 200 || res.status === 409) break;
        await sleep(100);
      }
      finals.push({ name, sid: snapshotId, status: res.status, replayed: res.headers?.['idempotent-replayed'] === 'true' });
    }
  };
  const running = Promise.all(names.map(client));
  for (let i = 0; i < 4; i++) {
    await sleep(400);
    psql(cluster.url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'floe_faults' AND pid <> pg_backend_pid()");
  }
  await sleep(1000);
  state.stop = true;
  await running;
  assert.deepEqual(seen.filter((s) => !ALLOWED.has(s) && s !== 0), [], 'only 200/409/500/503 (or a lost answer) on the way');
  for (const name of names) {
    const l = (await call(floe.baseUrl, 'GET', tablePath(P, NS, name), { expect: 200 })).json;
    assertLinearHistory(l, name);
    const ids = l.metadata.snapshots.map((s) => s['snapshot-id']);
    const mine = finals.filter((f) => f.name === name);
    for (const f of mine) {
      const n = ids.filter((x) => x === f.sid).length;
      if (f.status === 200) assert.equal(n, 1, `${name}: a final 200 (${f.sid}${f.replayed ? ', replayed' : ''}) must be applied exactly once`);
      else if (f.status === 409) assert.equal(n, 0, `${name}: a final 409 (${f.sid}) was applied`);
      else assert.ok(n <= 1, `${name}: ${f.sid} applied twice`);
    }
    const known = new Set(mine.map((f) => f.sid));
    for (const id of ids) assert.ok(known.has(id), `${name}: snapshot ${id} from nowhere`);
  }
  const ok = finals.filter((f) => f.status === 200).length;
  assert.ok(ok > 5, `too few commits: ${ok} of ${finals.length}`);
  await waitFor(async () => (await tryRequest(floe.baseUrl, 'GET', '/readyz')).status === 200, { what: 'ready again' });
  const count = (s) => seen.filter((x) => x === s).length;
  process.stderr.write(`# keyed, backends terminated: ${finals.length} commits, ${ok} final 200 (${finals.filter((f) => f.replayed).length} replayed); attempts 200 ${count(200)}, 409 ${count(409)}, 500 ${count(500)}, 503 ${count(503)}, lost ${count(0)}\n`);
});
