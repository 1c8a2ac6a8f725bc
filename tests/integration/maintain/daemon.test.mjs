// Table maintenance run by `floe serve` (two daemons on one database, each
// with a maintenance worker polling every second):
// - a table whose policy is enabled (table properties) is compacted once by
//   one of them: one scheduled job, one `replace` snapshot, never two; the
//   outcome is visible by GET .../maintenance and in /metrics;
// - warehouse properties give the default policy to tables without one;
// - a policy set on a table the workers already noted is found by its new
//   version (table_maintenance_policy), and a dropped table's note goes;
// - POST .../maintenance queues a run (202, job id) that a worker runs; bad
//   bodies, unknown tables and bad warehouse properties are Iceberg errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freshDatabase, startFloe, request, encodeNs, psql, waitFor } from '../lib/harness.mjs';
import { createTable, loadTable, currentSnapshot, tmpDir } from '../ingest/lib.mjs';
import { call, createNamespace, tablePath, assertError } from '../tables/lib.mjs';
import { helpers, range } from './lib.mjs';

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'name', type: 'string', required: false },
];
const NS = ['care'];
const args = ['--maintenance-poll', '1', '--log-level', 'info'];

let db;
let a;
let b;
let ctx;
let append;
const dir = tmpDir('daemon');

before(async () => {
  db = await freshDatabase('maint_daemon');
  a = await startFloe({ databaseUrl: db.url, args });
  b = await startFloe({ databaseUrl: db.url, args });
  const cfg = await call(a.baseUrl, 'GET', '/v1/config?warehouse=default', { expect: 200 });
  const p = `/v1/${encodeURIComponent(cfg.json.overrides.prefix)}`;
  await createNamespace(a.baseUrl, p, NS);
  ctx = { floe: a, base: a.baseUrl, p, dbUrl: db.url, ns: NS };
  ({ append } = helpers(ctx, dir));
});

after(async () => {
  // SIGTERM: the caretaker threads stop cleanly (exit 0).
  const ra = await a?.stop();
  const rb = await b?.stop();
  assert.equal(ra?.code, 0, 'daemon A stops cleanly');
  assert.equal(rb?.code, 0, 'daemon B stops cleanly');
});

const mpath = (name) => `/management/v1/warehouses/default/namespaces/${encodeNs(NS)}/tables/${encodeURIComponent(name)}/maintenance`;

async function status(name, base = a.baseUrl) {
  const res = await request(base, 'GET', mpath(name));
  assert.equal(res.status, 200, res.text);
  return res.json;
}

// Polls GET .../maintenance until every action in `want` has an outcome (30 s at most).
async function outcomes(name, want) {
  for (let i = 0; ; i++) {
    const s = await status(name, i % 2 ? b.baseUrl : a.baseUrl);
    const got = Object.fromEntries(s.outcomes.map((o) => [o.action, o]));
    if (want.every((w) => got[w])) return { s, got };
    if (i >= 300) throw new Error(`no outcome for ${want} on ${name}: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function setProps(name, updates) {
  await call(ctx.base, 'POST', tablePath(ctx.p, NS, name), {
    body: { requirements: [], updates: [{ action: 'set-properties', updates }] },
    expect: 200,
  });
}

async function metrics(base) {
  const res = await request(base, 'GET', '/metrics');
  assert.equal(res.status, 200);
  return res.text;
}

test('daemon: a table with its policy enabled is compacted once, by one of two replicas', async () => {
  const name = 'sched';
  await createTable(ctx, name, fields);
  for (let k = 0; k < 6; k++) await append(name, range(k * 3, 3));
  await setProps(name, {
    'floe.maintenance.enabled': 'true',
    'floe.maintenance.interval': 'PT1H',
    'floe.maintenance.actions': 'compact, manifests',
  });
  const { s, got } = await outcomes(name, ['compact', 'manifests']);
  assert.equal(got.compact.outcome, 'ok', got.compact.error);
  assert.equal(got.compact['files-removed'], 6);
  assert.equal(got.compact['files-added'], 1);
  assert.equal(got.manifests.outcome, 'ok', got.manifests.error);
  assert.equal(got.compact.runs, 1);
  assert.ok(got.compact['job-id'] > 0);
  // Three more polls of both replicas: still one job and one compaction.
  await new Promise((r) => setTimeout(r, 3500));
  const later = await status(name);
  const jobs = later.jobs.filter((j) => j.origin === 'schedule');
  assert.equal(jobs.length, 1, JSON.stringify(later.jobs));
  assert.equal(jobs[0].state, 'done');
  assert.deepEqual(jobs[0].actions, ['compact', 'manifests']);
  assert.equal(later.outcomes.find((o) => o.action === 'compact').runs, 1);
  let meta;
  for (let i = 0; i < 100; i++) {
    meta = (await loadTable(ctx, name)).metadata;
    if (currentSnapshot(meta).summary.operation === 'replace') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const replaces = meta.snapshots.filter((x) => x.summary.operation === 'replace');
  assert.equal(replaces.length, 1, 'exactly one compaction');
  assert.equal(currentSnapshot(meta).summary['total-data-files'], '1');
  assert.equal(s.table, `care.${name}`);

  // /metrics of either replica: the outcome and the table's shape.
  const text = await metrics(b.baseUrl);
  const lbl = `warehouse="default",namespace="care",table="${name}"`;
  assert.match(text, new RegExp(`floe_maintenance_last_run_ok\\{${lbl},action="compact"\\} 1\\n`));
  assert.match(text, new RegExp(`floe_maintenance_last_run_timestamp_seconds\\{${lbl},action="compact"\\} \\d+`));
  assert.match(text, new RegExp(`floe_maintenance_runs_total\\{${lbl},action="manifests"\\} 1\\n`));
  assert.match(text, new RegExp(`floe_table_snapshots\\{${lbl}\\} ${meta.snapshots.length}\\n`));
  assert.match(text, new RegExp(`floe_table_files_per_partition_max\\{${lbl}\\} 1\\n`));
  assert.match(text, new RegExp(`floe_table_avg_file_size_bytes\\{${lbl}\\} \\d+`));
  assert.match(text, /# TYPE floe_maintenance_bytes_reclaimed_total counter/);
});

test('daemon: a policy set after the table was noted is found by its version; a dropped table is forgotten', async () => {
  const name = 'late';
  await createTable(ctx, name, fields);
  for (let k = 0; k < 3; k++) await append(name, [k]);
  const row = () => psql(db.url, `SELECT t.id || ' ' || t.version || ' ' || coalesce(m.version::text, '-') || ' ' || coalesce(m.props::text, '-')` +
    ` FROM table_entry t LEFT JOIN table_maintenance_policy m ON m.table_id = t.id WHERE t.name = '${name}'`).split(' ');
  // A pass notes the table at its version, with no policy.
  const [id, v0] = await waitFor(() => {
    const r = row();
    return r[2] === r[1] && r;
  }, { timeoutMs: 20000, what: 'the table to be noted' });
  assert.equal(row()[3], '-', 'no maintenance property yet');
  assert.deepEqual((await status(name)).jobs, [], 'nothing scheduled without a policy');

  await setProps(name, {
    'floe.maintenance.enabled': 'true',
    'floe.maintenance.interval': 'PT1H',
    'floe.maintenance.actions': 'manifests',
    'write.metadata.previous-versions-max': '50',
  });
  const { got } = await outcomes(name, ['manifests']);
  assert.equal(got.manifests.outcome, 'ok', got.manifests.error);
  assert.equal(got.manifests['files-removed'], 3, 'three manifests merged');
  const noted = await waitFor(() => {
    const r = row();
    return r[2] === r[1] && Number(r[1]) > Number(v0) && r;
  }, { timeoutMs: 20000, what: 'the new version to be noted' });
  assert.deepEqual(JSON.parse(noted.slice(3).join(' ')), {
    'floe.maintenance.enabled': 'true',
    'floe.maintenance.interval': 'PT1H',
    'floe.maintenance.actions': 'manifests',
  }, 'only the maintenance properties are noted');

  const drop = await request(a.baseUrl, 'DELETE', tablePath(ctx.p, NS, name));
  assert.equal(drop.status, 204, drop.text);
  await waitFor(() => psql(db.url, `SELECT count(*) FROM table_maintenance_policy WHERE table_id = '${id}'`) === '0',
    { timeoutMs: 20000, what: 'the dropped table to be forgotten' });
});

test('daemon: warehouse properties are the default policy', async () => {
  const wh = '/management/v1/warehouses/default';
  const bad = await request(a.baseUrl, 'PUT', wh, { body: { properties: { 'floe.maintenance.interval': 'sometimes' } } });
  assertError(bad, 400, 'BadRequestException', 'floe.maintenance.interval');
  const bad2 = await request(a.baseUrl, 'PUT', wh, { body: { properties: { 'floe.maintenance.actions': 'expire,vacuum' } } });
  assertError(bad2, 400, 'BadRequestException', "unknown maintenance action 'vacuum'");
  const bad3 = await request(a.baseUrl, 'PUT', wh, { body: { properties: { 'floe.maintenance.enabled': 'yes' } } });
  assertError(bad3, 400, 'BadRequestException', "floe.maintenance.enabled must be true or false, got 'yes'");
  const bad4 = await request(a.baseUrl, 'PUT', wh, { body: { properties: { note: 'x'.repeat(5000) } } });
  assertError(bad4, 400, 'BadRequestException', "value of 'note' is 5000 bytes, over 4096");
  const name = 'bydefault';
  await createTable(ctx, name, fields);
  for (let k = 0; k < 3; k++) await append(name, [k]);
  const put = await request(a.baseUrl, 'PUT', wh, {
    body: { properties: { 'floe.maintenance.enabled': 'true', 'floe.maintenance.interval': 'PT1H', 'floe.maintenance.actions': 'manifests' } },
  });
  assert.equal(put.status, 200, put.text);
  assert.equal(put.json.properties['floe.maintenance.enabled'], 'true');
  try {
    const { got } = await outcomes(name, ['manifests']);
    assert.equal(got.manifests.outcome, 'ok', got.manifests.error);
    assert.equal(got.manifests['files-removed'], 3, 'three manifests merged');
    assert.equal(got.manifests['files-added'], 1);
  } finally {
    const off = await request(a.baseUrl, 'PUT', wh, { body: { properties: {} } });
    assert.equal(off.status, 200, off.text);
  }
});

test('daemon: POST .../maintenance queues a run; errors are Iceberg errors', async () => {
  const name = 'asked';
  await createTable(ctx, name, fields);
  for (let k = 0; k < 4; k++) await append(name, [k]);
  const res = await request(a.baseUrl, 'POST', mpath(name), { body: { actions: ['manifests', 'expire'], 'dry-run': true } });
  assert.equal(res.status, 202, res.text);
  assert.equal(res.json.state, 'queued');
  assert.deepEqual(res.json.actions, ['expire', 'manifests'], 'canonical order');
  const { got } = await outcomes(name, ['expire', 'manifests']);
  assert.equal(got.manifests['job-id'], res.json['job-id']);
  assert.equal(got.manifests['dry-run'], true);
  assert.equal(got.manifests['files-removed'], 4, 'would merge four manifests');
  assert.equal(got.manifests['bytes-added'], 0, 'dry run writes nothing');
  const meta = (await loadTable(ctx, name)).metadata;
  assert.ok(meta.snapshots.every((x) => x.summary.operation === 'append'), 'dry run commits nothing');

  assertError(await request(a.baseUrl, 'POST', mpath(name), { body: { actions: ['vacuum'] } }), 400, 'BadRequestException', 'actions[0]');
  assertError(await request(a.baseUrl, 'POST', mpath(name), { body: { actions: [] } }), 400, 'BadRequestException', 'actions');
  assertError(await request(a.baseUrl, 'POST', mpath(name), { body: { actions: ['expire'], now: true } }), 400, 'BadRequestException', "unknown field 'now'");
  assertError(await request(a.baseUrl, 'POST', mpath(name), { body: { actions: ['expire'], 'dry-run': 'yes' } }), 400, 'BadRequestException', 'dry-run');
  assertError(await request(a.baseUrl, 'POST', mpath('nope'), { body: { actions: ['expire'] } }), 404, 'NoSuchTableException', 'does not exist');
  assertError(await request(a.baseUrl, 'GET', mpath('nope')), 404, 'NoSuchTableException', 'does not exist');
  assertError(await request(a.baseUrl, 'GET', `/management/v1/warehouses/nowh/namespaces/care/tables/${name}/maintenance`), 404, 'NoSuchWarehouseException', 'nowh');
});
