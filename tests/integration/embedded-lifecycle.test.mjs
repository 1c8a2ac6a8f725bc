// Who stops the embedded PostgreSQL (server/embedded_pg.c): the last live floe process
// that uses it -- never earlier (a floe serve keeps its database while a floe ingest or a
// second server on the same data directory comes and goes), never left behind (a cluster
// orphaned by a kill -9 is adopted and stopped by the next user). Also: a second floe
// serve on the same data directory and port is refused, naming the first; `floe status`
// says where the cluster lives and who uses it.
//
// One data directory serves the whole file (initdb runs once), so the tests run in order
// and build on each other's namespaces; every test ends with no floe running and the
// cluster stopped, which the harness checks again after the file.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  asPostgres,
  freePort,
  isRoot,
  pgBinDir,
  postmastersUnder,
  request,
  runFloe,
  startFloe,
  tmpDir,
} from './lib/harness.mjs';
import { expectJson } from './lib/checks.mjs';

const dataDir = path.join(tmpDir('lifecycle'), 'data');
const pgData = path.join(dataDir, 'pg');

// Every server a test starts; one a failed test left running is stopped after it.
const servers = new Set();
afterEach(async () => {
  await Promise.all([...servers].map((f) => f.stop('SIGTERM')));
  servers.clear();
});

async function serve(port = 0) {
  const floe = await startFloe({ databaseUrl: null, dataDir, args: ['--port', String(port)], timeoutMs: 90000 });
  servers.add(floe);
  return floe;
}

// pg_ctl status exits 0 when the cluster runs and 3 when it does not.
function pgCtlStatus() {
  return asPostgres(path.join(pgBinDir(), 'pg_ctl'), ['-D', pgData, 'status'], { encoding: 'utf8' }).status;
}

function assertClusterRuns(why) {
  assert.equal(pgCtlStatus(), 0, `embedded PostgreSQL should run: ${why}`);
  assert.equal(postmastersUnder([pgData], { graceMs: 0 }).length, 1, `one postmaster for ${pgData}: ${why}`);
}

function assertClusterGone(why) {
  assert.deepEqual(postmastersUnder([pgData]), [], `no postmaster left for ${pgData}: ${why}`);
  assert.equal(pgCtlStatus(), 3, `pg_ctl status: not running (${why})`);
  assert.ok(!fs.existsSync(path.join(pgData, 'postmaster.pid')), `postmaster.pid removed (${why})`);
}

async function stopClean(floe, what) {
  const r = await floe.stop('SIGTERM');
  assert.deepEqual(r, { code: 0, signal: null }, `${what} exits 0 on SIGTERM\n${floe.logs().slice(-2000)}`);
}

async function prefixOf(base) {
  const cfg = expectJson(await request(base, 'GET', '/v1/config'), 200, 'CatalogConfig');
  return `/v1/${cfg.overrides.prefix}`;
}

// A request that needs the database: the namespace list.
async function assertServes(base, P, want, what) {
  const l = expectJson(await request(base, 'GET', `${P}/namespaces`), 200, 'ListNamespacesResponse');
  assert.deepEqual(
    l.namespaces.map((n) => n.join('.')).sort(),
    [...want].sort(),
    `${what} still answers from its database`,
  );
}

test('kill -9 of floe serve, start again, SIGTERM: the orphaned cluster is adopted and stopped', async () => {
  let floe = await serve();
  const P = await prefixOf(floe.baseUrl);
  expectJson(await request(floe.baseUrl, 'POST', `${P}/namespaces`, { body: { namespace: ['crash'] } }), 200);
  assert.deepEqual(await floe.stop('SIGKILL'), { code: null, signal: 'SIGKILL' });
  assertClusterRuns('a killed floe cannot stop it');

  floe = await serve();
  assert.match(floe.logs(), /adopting the embedded PostgreSQL in \S+ left running by a floe process that exited/);
  await assertServes(floe.baseUrl, P, ['crash'], 'the restarted server');
  await stopClean(floe, 'the adopting server');
  assert.match(floe.logs(), /embedded PostgreSQL stopped \(this was its last floe user\)/);
  assertClusterGone('the adopting server was its last user');
});

test('floe ingest in process while floe serve runs: the server keeps its database; the last to exit stops it', async () => {
  const floe = await serve();
  const P = await prefixOf(floe.baseUrl);
  expectJson(await request(floe.baseUrl, 'POST', `${P}/namespaces`, { body: { namespace: ['feed'] } }), 200);
  const csv = path.join(path.dirname(dataDir), 'rows.csv');
  fs.writeFileSync(csv, 'id,name\n1,a\n2,b\n');

  const ing = runFloe(['ingest', '--data-dir', dataDir, '--table', 'feed.t', '--create', csv], { timeoutMs: 90000 });
  assert.equal(ing.code, 0, `in-process ingest succeeds\n${ing.stderr}${ing.stdout}`);
  assert.match(ing.stderr, /sharing the embedded PostgreSQL in \S+ with floe process \d+/);
  assert.match(ing.stderr, /left running for floe process \d+, which still uses it/);
  assertClusterRuns('floe serve still uses it after the ingest exited');
  const t = expectJson(await request(floe.baseUrl, 'GET', `${P}/namespaces/feed/tables/t`), 200, 'LoadTableResult');
  assert.equal(t.metadata.snapshots.length, 1, 'the server sees the ingested snapshot');
  assert.equal(t.metadata.snapshots[0].summary['added-records'], '2');
  await assertServes(floe.baseUrl, P, ['crash', 'feed'], 'the server after the ingest');

  await stopClean(floe, 'floe serve');
  assertClusterGone('floe serve was the last user');

  // Alone, an in-process ingest starts the cluster and, as its only user, stops it.
  const again = runFloe(['ingest', '--data-dir', dataDir, '--table', 'feed.t', csv], { timeoutMs: 90000 });
  assert.equal(again.code, 0, `ingest alone succeeds\n${again.stderr}`);
  assert.match(again.stderr, /started the embedded PostgreSQL/);
  assert.match(again.stderr, /embedded PostgreSQL stopped \(this was its last floe user\)/);
  assertClusterGone('the lone ingest was its only user');
});

test('two floe serve on one data directory, started at once: either may stop first; the same port twice is refused', async () => {
  const [pa, pb] = [await freePort(), await freePort()];
  // Both start at once on the stopped cluster: one starts it, the other shares it.
  let [a, b] = await Promise.all([serve(pa), serve(pb)]);
  const [first, second] = /started the embedded PostgreSQL/.test(a.logs()) ? [a, b] : [b, a];
  assert.match(first.logs(), /started the embedded PostgreSQL/);
  assert.match(second.logs(), new RegExp(`sharing the embedded PostgreSQL in \\S+ with floe process ${first.proc.pid}`));
  const P = await prefixOf(a.baseUrl);
  const want = ['crash', 'feed'];

  // The first to start stops first: the second keeps serving.
  await stopClean(a, 'server A');
  assert.match(a.logs(), new RegExp(`left running for floe process ${b.proc.pid}, which still uses it`));
  assertClusterRuns('server B still uses it');
  await assertServes(b.baseUrl, P, want, 'server B after A stopped');

  // Same data directory and port as B: refused before touching the database, naming B.
  let dup;
  try {
    dup = runFloe(['serve', '--host', '127.0.0.1', '--port', String(pb), '--data-dir', dataDir], { timeoutMs: 30000 });
  } catch (e) {
    assert.fail(`a second server on port ${pb} did not exit within 30 s (${e.message}): it must be refused`);
  }
  const [dupExit, dupLog] = [dup.code, dup.stderr + dup.stdout];
  assert.notEqual(dupExit, 0, `a second server on port ${pb} must exit non-zero\n${dupLog}`);
  assert.ok(
    dupLog.includes(`floe process ${b.proc.pid} already serves data directory ${dataDir} on port ${pb}`),
    `the refusal names the holder, the data directory and the port:\n${dupLog}`,
  );
  assert.doesNotMatch(dupLog, /sharing the embedded PostgreSQL/, 'refused before using the cluster');
  await assertServes(b.baseUrl, P, want, 'server B after the refused duplicate');

  // floe status names both the server and the cluster's user without disturbing them.
  const st = runFloe(['status', '--data-dir', dataDir]);
  assert.equal(st.code, 0, st.stderr);
  assert.match(st.stdout, new RegExp(`^data directory: ${dataDir}$`, 'm'));
  assert.match(st.stdout, new RegExp(`^floe serve: +port ${pb}, pid ${b.proc.pid}$`, 'm'));
  assert.match(st.stdout, new RegExp(`^cluster: +${pgData}$`, 'm'));
  assert.match(st.stdout, /^state: +running \(postmaster pid \d+\)$/m);
  assert.match(st.stdout, new RegExp(`^floe users: +pid ${b.proc.pid}\\b`, 'm'));

  // A comes back on its port; now the later one stops first.
  a = await serve(pa);
  await stopClean(b, 'server B');
  assertClusterRuns('server A still uses it');
  await assertServes(a.baseUrl, P, want, 'server A after B stopped');
  await stopClean(a, 'server A');
  assertClusterGone('both servers stopped');

  const st2 = runFloe(['status', '--data-dir', dataDir]);
  assert.match(st2.stdout, /^state: +stopped$/m);
  assert.match(st2.stdout, /^floe users: +none$/m);
  assert.match(st2.stdout, /^floe serve: +none on a fixed port/m);
});

test('a data directory the postgres user cannot reach: the cluster lives under /var/lib/floe and the log says why', { skip: !isRoot && 'needs root (the cluster runs as postgres)' }, async () => {
  const root = tmpDir('private');
  fs.chmodSync(root, 0o700); // postgres cannot traverse it
  const dir = path.join(root, 'data');
  const abs = path.join(fs.realpathSync(root), 'data');
  const base = `/var/lib/floe/pg-${crypto.createHash('sha256').update(abs).digest('hex').slice(0, 12)}`;
  let floe;
  try {
    floe = await startFloe({ databaseUrl: null, dataDir: dir, timeoutMs: 90000 });
    assert.match(
      floe.logs(),
      new RegExp(`embedded PostgreSQL lives in ${base}, not in ${abs}: the postgres user cannot reach the data directory`),
    );
    const st = runFloe(['status', '--data-dir', dir]);
    assert.equal(st.code, 0, st.stderr);
    assert.match(st.stdout, new RegExp(`^cluster: +${base}/pg$`, 'm'));
    assert.match(st.stdout, /^ +\(not in the data directory: the postgres user cannot reach/m);
    assert.match(st.stdout, /^state: +running/m);
    await stopClean(floe, 'floe serve');
    assert.deepEqual(postmastersUnder([base]), [], 'the fallback cluster stopped with its last user');
  } finally {
    await floe?.stop('SIGTERM');
    // Outside every tmpDir: stop whatever a failure left before removing it.
    if (fs.existsSync(path.join(base, 'pg', 'postmaster.pid'))) {
      asPostgres(path.join(pgBinDir(), 'pg_ctl'), ['-D', path.join(base, 'pg'), '-m', 'immediate', '-w', 'stop']);
    }
    fs.rmSync(base, { recursive: true, force: true });
    try {
      fs.rmdirSync('/var/lib/floe'); // when no other cluster lives there
    } catch {
      /* in use by other clusters */
    }
  }
});
