// Operating floe: probes, Prometheus metrics, the served OpenAPI document, request
// ids, `floe migrate` idempotence and command-line validation.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { freshDatabase, startFloe, request, runFloe, psql, tmpDir, sleep } from './lib/harness.mjs';
import { floeBin } from './lib/paths.mjs';
import { expectJson, expectError, assertRequestId } from './lib/checks.mjs';
import { yamlToJson } from './lib/spec.mjs';
import * as prom from './lib/prom.mjs';

let floe;
let base;
const r = (method, p, opts) => request(base, method, p, opts);

before(async () => {
  const db = await freshDatabase('ops');
  floe = await startFloe({ databaseUrl: db.url });
  base = floe.baseUrl;
});

after(async () => {
  await floe?.stop();
});

async function metrics() {
  const res = await r('GET', '/metrics');
  assert.equal(res.status, 200, res.text);
  assert.match(res.headers['content-type'] || '', /^text\/plain/, 'Prometheus text content type');
  assertRequestId(res);
  return prom.parse(res.text);
}

test('/healthz and /readyz', async () => {
  const h = expectJson(await r('GET', '/healthz'), 200);
  assert.deepEqual(h, { status: 'ok' });
  const rd = expectJson(await r('GET', '/readyz'), 200);
  assert.deepEqual(rd, { status: 'ready' });
});

test('/metrics parses, has the documented families, counters grow', async () => {
  const m0 = await metrics();
  assert.equal(m0.types.floe_http_requests_total, 'counter');
  assert.equal(m0.types.floe_http_request_duration_seconds, 'histogram');
  for (const g of ['floe_db_pool_connections', 'floe_db_pool_waiting', 'floe_build_info', 'floe_http_workers', 'floe_http_queued_requests']) {
    assert.equal(m0.types[g], 'gauge', `${g} is a gauge`);
  }
  assert.equal(prom.find(m0, 'floe_db_pool_connections', { state: 'in_use' }).length, 1);
  assert.equal(prom.find(m0, 'floe_db_pool_connections', { state: 'idle' }).length, 1);
  // /metrics waits on PostgreSQL, so a worker renders it: that one is busy; the default
  // pool of 20 connections gives 16 workers
  const busy = prom.find(m0, 'floe_http_workers', { state: 'busy' });
  const idle = prom.find(m0, 'floe_http_workers', { state: 'idle' });
  assert.ok(busy.length === 1 && busy[0].value >= 1, `a worker renders /metrics: ${JSON.stringify(busy)}`);
  assert.equal(busy[0].value + idle[0].value, 16, 'busy + idle = the workers (db-pool-size 20 minus 4)');
  assert.equal(prom.find(m0, 'floe_http_queued_requests').length, 1);
  const info = prom.find(m0, 'floe_build_info');
  assert.equal(info.length, 1);
  const version = runFloe(['version']);
  assert.equal(version.code, 0);
  assert.ok(info[0].labels.version, 'floe_build_info has a version label');
  assert.ok(
    `${version.stdout}${version.stderr}`.includes(info[0].labels.version),
    `floe version (${version.stdout.trim()}) matches floe_build_info{version="${info[0].labels.version}"}`,
  );

  const N = 7;
  for (let i = 0; i < N; i++) expectJson(await r('GET', '/v1/config'), 200);
  const secret = `probe${crypto.randomBytes(6).toString('hex')}`;
  for (let i = 0; i < 3; i++) expectError(await r('GET', `/v1/namespaces/${secret}`), 404);

  const key = (s) => JSON.stringify(s.labels);
  const before0 = new Map(prom.find(m0, 'floe_http_requests_total').map((s) => [key(s), s.value]));
  const grownIn = (m) =>
    prom
      .find(m, 'floe_http_requests_total')
      .filter((s) => s.value - (before0.get(key(s)) ?? 0) >= 1)
      .map((s) => ({ ...s, delta: s.value - (before0.get(key(s)) ?? 0) }));
  // A request is counted when libmicrohttpd reports it complete, which can come a moment
  // after the client has its answer: read /metrics until the last request shows (2 s at most).
  let m1 = await metrics();
  for (let t = 0; t < 40 && !grownIn(m1).some((s) => s.labels.status === '404' && s.delta >= 3); t++) {
    await sleep(50);
    m1 = await metrics();
  }
  const grown = grownIn(m1);
  for (const s of prom.find(m1, 'floe_http_requests_total')) {
    for (const l of ['route', 'method', 'status']) assert.ok(l in s.labels, `label ${l} on ${key(s)}`);
  }
  assert.ok(
    grown.some((s) => s.labels.method === 'GET' && s.labels.status === '200' && s.delta >= N),
    `a GET 200 series grew by >= ${N}: ${JSON.stringify(grown)}`,
  );
  assert.ok(
    grown.some((s) => s.labels.method === 'GET' && s.labels.status === '404' && s.delta >= 3),
    `a GET 404 series grew by >= 3: ${JSON.stringify(grown)}`,
  );
  // route labels are templates, not raw paths (bounded cardinality)
  for (const s of m1.samples) {
    for (const v of Object.values(s.labels)) assert.ok(!v.includes(secret), `raw path leaked into a label: ${key(s)}`);
  }

  // histogram: buckets ascending with +Inf, cumulative, +Inf == _count, _sum present
  const buckets = prom.find(m1, 'floe_http_request_duration_seconds_bucket');
  assert.ok(buckets.length > 0, 'histogram buckets present');
  const byRoute = new Map();
  for (const b of buckets) {
    assert.ok('le' in b.labels && 'route' in b.labels, `bucket labels ${key(b)}`);
    const { le, ...rest } = b.labels;
    const k = JSON.stringify(rest);
    if (!byRoute.has(k)) byRoute.set(k, []);
    byRoute.get(k).push({ le: le === '+Inf' ? Infinity : Number(le), v: b.value });
  }
  let grewAny = false;
  for (const [k, bs] of byRoute) {
    assert.ok(bs.some((b) => b.le === Infinity), `+Inf bucket for ${k}`);
    assert.ok(bs.length >= 5, `at least 5 buckets for ${k}`);
    const sorted = [...bs].sort((a, b) => a.le - b.le);
    for (let i = 1; i < sorted.length; i++) {
      assert.ok(sorted[i].v >= sorted[i - 1].v, `buckets cumulative for ${k}`);
    }
    const labels = JSON.parse(k);
    const count = prom.find(m1, 'floe_http_request_duration_seconds_count', labels);
    const total = prom.find(m1, 'floe_http_request_duration_seconds_sum', labels);
    assert.equal(count.length, 1, `_count for ${k}`);
    assert.equal(total.length, 1, `_sum for ${k}`);
    assert.equal(count[0].value, sorted[sorted.length - 1].v, `+Inf bucket == _count for ${k}`);
    assert.ok(total[0].value >= 0);
    if (count[0].value >= N) grewAny = true;
  }
  assert.ok(grewAny, 'some route histogram counted the config requests');
});

test('/openapi.yaml is served and is an OpenAPI 3 document describing the routes', async () => {
  const res = await r('GET', '/openapi.yaml');
  assert.equal(res.status, 200);
  assert.match(res.headers['content-type'] || '', /yaml/);
  assertRequestId(res);
  const doc = yamlToJson(res.text, { isText: true });
  assert.match(String(doc.openapi), /^3\./);
  assert.ok(doc.info?.title);
  const paths = Object.keys(doc.paths || {});
  for (const p of ['/v1/config', '/v1/{prefix}/namespaces', '/v1/{prefix}/namespaces/{namespace}', '/management/v1/warehouses']) {
    assert.ok(paths.includes(p), `openapi.yaml lacks ${p}; has ${paths.join(', ')}`);
  }
  // every endpoint /v1/config advertises is documented with its method
  const cfg = expectJson(await r('GET', '/v1/config'), 200, 'CatalogConfig');
  for (const ep of cfg.endpoints) {
    const [method, p] = ep.split(' ');
    assert.ok(doc.paths[p]?.[method.toLowerCase()], `advertised "${ep}" is not documented in openapi.yaml`);
  }
  for (const [p, m] of [['/management/v1/warehouses', 'post'], ['/management/v1/warehouses/{name}', 'delete'], ['/healthz', 'get'], ['/readyz', 'get'], ['/metrics', 'get']]) {
    assert.ok(doc.paths[p]?.[m], `openapi.yaml lacks ${m.toUpperCase()} ${p}`);
  }
});

test('X-Request-Id on every response, unique per request', async () => {
  const ids = new Set();
  const cases = [
    ['GET', '/healthz'],
    ['GET', '/readyz'],
    ['GET', '/metrics'],
    ['GET', '/openapi.yaml'],
    ['GET', '/v1/config'],
    ['GET', '/v1/namespaces'],
    ['HEAD', '/v1/namespaces/nope'],
    ['GET', '/v1/namespaces/nope'],
    ['GET', '/nope'],
    ['PUT', '/v1/config'],
    ['POST', '/v1/namespaces', { body: '{' }],
    ['GET', '/v1/namespaces/%zz'],
    ['GET', '/management/v1/warehouses'],
  ];
  for (const [m, p, opts] of cases) {
    const res = await r(m, p, opts);
    const id = assertRequestId(res);
    assert.ok(!ids.has(id), `request id ${id} reused`);
    ids.add(id);
  }
  const c = expectJson(await r('POST', '/v1/namespaces', { body: { namespace: ['rid'] } }), 200);
  assert.ok(c);
  const d = await r('DELETE', '/v1/namespaces/rid');
  assert.equal(d.status, 204);
  assertRequestId(d);
});

test('floe migrate twice on an empty database: the second run is a no-op', async () => {
  const db = await freshDatabase('migrate');
  const first = runFloe(['migrate', '--database-url', db.url]);
  assert.equal(first.code, 0, `first migrate: ${first.stderr}`);
  const rows1 = psql(db.url, 'SELECT version FROM schema_migrations ORDER BY version');
  const n1 = rows1.split('\n').filter(Boolean).length;
  assert.ok(n1 >= 1, `schema_migrations has rows after migrate: "${rows1}"`);
  const applied1 = psql(db.url, 'SELECT string_agg(applied_at::text, \',\' ORDER BY version) FROM schema_migrations');
  // 0006: the large values a commit writes are lz4-compressed (Debian's PostgreSQL has lz4)
  assert.equal(psql(db.url, "SELECT string_agg(attrelid::regclass || '.' || attname || '=' || attcompression::text, ',' ORDER BY attname) " +
    "FROM pg_attribute WHERE (attrelid, attname) IN (('table_entry'::regclass, 'metadata'), ('idempotency_record'::regclass, 'body'))"),
    'idempotency_record.body=l,table_entry.metadata=l');

  const second = runFloe(['migrate', '--database-url', db.url]);
  assert.equal(second.code, 0, `second migrate: ${second.stderr}`);
  const rows2 = psql(db.url, 'SELECT version FROM schema_migrations ORDER BY version');
  assert.equal(rows2, rows1, 'no new migrations on the second run');
  const applied2 = psql(db.url, 'SELECT string_agg(applied_at::text, \',\' ORDER BY version) FROM schema_migrations');
  assert.equal(applied2, applied1, 'applied_at untouched by the second run');

  // `serve` on the migrated database starts without applying anything new
  const f = await startFloe({ databaseUrl: db.url });
  try {
    expectJson(await request(f.baseUrl, 'GET', '/readyz'), 200);
    assert.equal(psql(db.url, 'SELECT version FROM schema_migrations ORDER BY version'), rows1);
  } finally {
    await f.stop();
  }
});

test('invalid settings exit non-zero naming the setting', async () => {
  const cases = [
    [['--port=abc'], {}],
    [['serve', '--port=abc'], {}],
    [['serve', '--port', 'abc'], {}],
    [['serve', '--port=70000'], {}],
    [['serve'], { FLOE_PORT: 'abc' }],
  ];
  for (const [args, env] of cases) {
    const res = runFloe(args, { env, timeoutMs: 15000 });
    assert.notEqual(res.code, 0, `floe ${args.join(' ')} exited 0`);
    assert.equal(res.signal, null);
    assert.match(`${res.stderr}${res.stdout}`, /port/, `floe ${args.join(' ')} should name "port": ${res.stderr}`);
  }
  const r2 = runFloe(['serve', '--port=abc']);
  assert.equal(r2.code, 2, 'invalid value -> exit 2 (contract)');
  const r3 = runFloe(['serve', '--max-body-bytes=-5']);
  assert.equal(r3.code, 2);
  assert.match(r3.stderr + r3.stdout, /max-body-bytes/);
  const r4 = runFloe(['serve', '--no-such-flag=1']);
  assert.notEqual(r4.code, 0);
  assert.match(r4.stderr + r4.stdout, /no-such-flag/);
  const help = runFloe(['--help']);
  assert.equal(help.code, 0);
  for (const flag of ['--port', '--database-url', '--max-body-bytes', 'FLOE_PORT']) {
    assert.ok(`${help.stdout}${help.stderr}`.includes(flag), `--help mentions ${flag}`);
  }
});

test('two `floe migrate` at once (replicas starting together) both succeed, applied once', async () => {
  const db = await freshDatabase('migrate_race');
  const run = () =>
    new Promise((resolve) => {
      const p = spawn(floeBin, ['migrate', '--database-url', db.url], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      p.stderr.on('data', (d) => (err += d));
      p.on('exit', (code) => resolve({ code, err }));
    });
  const [a, b, c] = await Promise.all([run(), run(), run()]);
  for (const x of [a, b, c]) assert.equal(x.code, 0, `concurrent migrate failed: ${x.err}`);
  const versions = psql(db.url, 'SELECT version FROM schema_migrations ORDER BY version').split('\n');
  assert.equal(new Set(versions).size, versions.length, 'each migration recorded once');
});

test('serve and migrate refuse a database newer than the binary', async () => {
  const db = await freshDatabase('newer');
  assert.equal(runFloe(['migrate', '--database-url', db.url]).code, 0);
  psql(db.url, "INSERT INTO schema_migrations (version, name) VALUES (9999, 'from_the_future')");
  const m = runFloe(['migrate', '--database-url', db.url]);
  assert.notEqual(m.code, 0, 'migrate on a newer database must fail');
  assert.match(m.stderr + m.stdout, /9999|newer/i);
  const dir = tmpDir('newer');
  const s = spawnSync(floeBin, ['serve', '--port', '0', '--database-url', db.url, '--data-dir', path.join(dir, 'd')], {
    encoding: 'utf8',
    timeout: 20000,
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FLOE_'))),
  });
  assert.equal(s.signal, null, 'serve must exit by itself, not keep running');
  assert.notEqual(s.status, 0, 'serve on a newer database must fail');
  assert.match(s.stderr + s.stdout, /9999|newer/i);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('settings: env is honoured and a flag beats the env', async () => {
  const db = await freshDatabase('settings');
  const props = { properties: { a: '1', b: '2', c: '3' } };
  const viaEnv = await startFloe({ databaseUrl: db.url, env: { FLOE_MAX_PROPERTIES: '2' } });
  try {
    expectError(
      await request(viaEnv.baseUrl, 'POST', '/v1/namespaces', { body: { namespace: ['e1'], ...props } }),
      400,
      'BadRequestException',
      /max-properties/,
    );
  } finally {
    await viaEnv.stop();
  }
  const flagWins = await startFloe({ databaseUrl: db.url, env: { FLOE_MAX_PROPERTIES: '2' }, args: ['--max-properties=5'] });
  try {
    expectJson(await request(flagWins.baseUrl, 'POST', '/v1/namespaces', { body: { namespace: ['e2'], ...props } }), 200);
  } finally {
    await flagWins.stop();
  }
  // FLOE_DATABASE_URL alone (no flag) selects the database
  const envDb = await startFloe({ databaseUrl: null, env: { FLOE_DATABASE_URL: db.url } });
  try {
    expectJson(await request(envDb.baseUrl, 'GET', '/v1/namespaces/e2'), 200, 'GetNamespaceResponse');
  } finally {
    await envDb.stop();
  }
});
