// Retries against S3, proven with injected faults: a loopback proxy in front of moto
// (signature checks on) answers chosen requests itself - 503 SlowDown, a reset
// connection, a 403 - and forwards the rest byte for byte (the Host header too, so
// Floe's signatures stay valid).  Floe must retry 5xx and broken connections with
// backoff, give up after its attempts, and never retry a 4xx.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import http from 'node:http';
import { request } from '../lib/harness.mjs';
import { expectJson } from '../lib/checks.mjs';
import { readAvro, duck, sqlStr, parseJsonBig } from '../ingest/lib.mjs';
import { startS3Catalog, s3Profile, createWarehouse, mirror, mirrored, ingestInto, tmpDir, noS3 } from './lib.mjs';

let ctx = null;
let proxy = null;
let dir;
const WH = 'flaky';
const P = `/v1/${WH}`;
const schema = { type: 'struct', fields: [{ id: 1, name: 'id', type: 'long', required: false }, { id: 2, name: 'note', type: 'string', required: false }] };

// The proxy: plan(req) returns 'forward', 'reset' or {status, code}; every request
// is recorded as {method, url, action}.
function startProxy(target) {
  const seen = [];
  let plan = () => 'forward';
  const server = http.createServer((req, res) => {
    const action = plan(req, seen.length);
    seen.push({ method: req.method, url: req.url, action: typeof action === 'string' ? action : action.status });
    if (action === 'reset') {
      req.socket.destroy();
      return;
    }
    if (action !== 'forward') {
      req.resume();
      const body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${action.code}</Code><Message>injected</Message></Error>`;
      res.writeHead(action.status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const u = new URL(target);
    const up = http.request({ host: u.hostname, port: u.port, method: req.method, path: req.url, headers: req.headers, agent: false },
      (ur) => {
        // moto (werkzeug) closes every connection; the proxy keeps its side open so
        // that Floe's connection reuse shows.
        const { connection: _c, 'keep-alive': _k, ...headers } = ur.headers;
        res.writeHead(ur.statusCode, headers);
        ur.pipe(res);
      });
    up.on('error', () => req.socket.destroy());
    req.pipe(up);
  });
  // node closes a connection idle for 5 s (keepAliveTimeout); a sanitizer build under load
  // can spend that long between two requests (TSan, CI: a fourth connection), and Floe's
  // reuse of its connection is what is counted, not the proxy's patience.
  server.keepAliveTimeout = 10 * 60 * 1000;
  let connections = 0;
  server.on('connection', () => { connections++; });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    endpoint: `http://127.0.0.1:${server.address().port}`,
    seen,
    connections: () => connections,
    setPlan(p) { plan = p; },
    reset() { seen.length = 0; connections = 0; plan = () => 'forward'; },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  })));
}

before(async () => {
  ctx = await startS3Catalog('s3flt');
  if (!ctx) return;
  dir = tmpDir('s3flt');
  proxy = await startProxy(ctx.s3.endpoint);
});
after(async () => {
  if (proxy) await proxy.close();
  if (ctx) await ctx.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const skip = (t) => noS3(ctx, t);
const profile = () => s3Profile(ctx.s3, ctx.bucket, 'flaky', { endpoint: proxy.endpoint });
const injected = (status) => proxy.seen.filter((s) => s.action === status).length;

test('503 SlowDown is retried with backoff: the probe and the warehouse succeed', async (t) => {
  if (skip(t)) return;
  proxy.reset();
  proxy.setPlan((req, n) => (n < 3 ? { status: 503, code: 'SlowDown' } : 'forward'));
  const t0 = Date.now();
  expectJson(await createWarehouse(ctx.base, WH, profile()), 201, null);
  assert.equal(injected(503), 3);
  assert.equal(proxy.seen[0].method, 'PUT');
  assert.deepEqual(proxy.seen.slice(0, 4).map((s) => s.url), Array(4).fill(proxy.seen[0].url), 'the same PUT was retried');
  assert.ok(proxy.seen.filter((s) => s.action === 'forward').length >= 3, 'write, read and delete reached moto');
  assert.ok(Date.now() - t0 < 10000);
  expectJson(await request(ctx.base, 'POST', `${P}/namespaces`, { body: { namespace: ['ns'] } }), 200);
});

test('a reset connection and a 500 are retried; the create lands once', async (t) => {
  if (skip(t)) return;
  proxy.reset();
  proxy.setPlan((req, n) => (n === 0 ? 'reset' : n === 1 ? { status: 500, code: 'InternalError' } : 'forward'));
  const r = expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, { body: { name: 't', schema } }), 200);
  assert.deepEqual(proxy.seen.map((s) => s.action), ['reset', 500, 'forward']);
  const key = r['metadata-location'].replace(`s3://${ctx.bucket}/`, '');
  assert.deepEqual((await ctx.s3.list(ctx.bucket, 'flaky/ns/t/')).map((o) => o.key), [key]);
});

test('a 4xx is never retried: one request, and the error names the store\'s code', async (t) => {
  if (skip(t)) return;
  proxy.reset();
  proxy.setPlan(() => ({ status: 403, code: 'AccessDenied' }));
  const r = await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, { body: { name: 'denied', schema } });
  assert.ok(r.status >= 400, r.text);
  assert.match(r.json.error.message, /403 AccessDenied/);
  assert.equal(proxy.seen.length, 1, JSON.stringify(proxy.seen));
});

test('a store whose clock differs is named as such by the probe (RequestTimeTooSkewed)', async (t) => {
  if (skip(t)) return;
  proxy.reset();
  proxy.setPlan(() => ({ status: 403, code: 'RequestTimeTooSkewed' }));
  const r = await createWarehouse(ctx.base, 'skewed', s3Profile(ctx.s3, ctx.bucket, 'skewed', { endpoint: proxy.endpoint }));
  assert.equal(r.status, 400, r.text);
  assert.match(r.json.error.message, /RequestTimeTooSkewed \(the clocks of Floe and the store differ by more than 15 minutes\)/);
  assert.equal(proxy.seen.length, 1, 'a 403 is not retried');
});

test('retries give up after five attempts with the store\'s answer', async (t) => {
  if (skip(t)) return;
  proxy.reset();
  proxy.setPlan(() => ({ status: 503, code: 'SlowDown' }));
  const r = await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, { body: { name: 'busy', schema } });
  assert.ok(r.status >= 500, r.text);
  assert.match(r.json.error.message, /503 SlowDown/);
  assert.equal(proxy.seen.length, 5, JSON.stringify(proxy.seen));
});

test('a multipart floe ingest survives 503s on its part uploads', async (t) => {
  if (skip(t)) return;
  proxy.reset();
  // Every second UploadPart is refused once.
  let parts = 0;
  proxy.setPlan((req) => (/partNumber=/.test(req.url) && parts++ % 2 === 0 ? { status: 503, code: 'SlowDown' } : 'forward'));
  const csv = path.join(dir, 'wide.csv');
  const lines = ['id,note'];
  for (let i = 0; i < 400000; i++) lines.push(`${i},${crypto.createHash('sha256').update(String(i)).digest('hex')}`);
  fs.writeFileSync(csv, `${lines.join('\n')}\n`);
  const r = await ingestInto(ctx, WH, 't', [csv]);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  assert.ok(injected(503) >= 1, 'a part upload was refused');
  // One process, one storage handle: its requests share a kept-alive connection (a
  // refused upload closes its connection: curl stops sending the body mid-way).
  assert.ok(proxy.seen.length >= 8 && proxy.connections() <= injected(503) + 1,
    `${proxy.seen.length} requests over ${proxy.connections()} connections, ${injected(503)} refused`);
  // Read back: manifests with python3-avro, data with DuckDB.
  const l = parseJsonBig((await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/t`)).text);
  const snap = l.metadata.snapshots.at(-1);
  const local = path.join(dir, 'mirror');
  await mirror(ctx.s3, ctx.bucket, 'flaky/ns/t/', local);
  const files = [];
  for (const le of readAvro(`file://${mirrored(local, snap['manifest-list'])}`).records) {
    for (const e of readAvro(`file://${mirrored(local, le.manifest_path)}`).records) files.push(mirrored(local, e.data_file.file_path));
  }
  assert.ok(files.some((f) => fs.statSync(f).size > 8 << 20), 'the data file took several parts');
  const con = await duck();
  const q = await con.runAndReadAll(`SELECT count(*)::BIGINT, count(DISTINCT note)::BIGINT FROM read_parquet([${files.map(sqlStr).join(',')}])`);
  assert.deepEqual(q.getRows()[0].map(Number), [400000, 400000]);
  assert.deepEqual(await ctx.s3.uploads(ctx.bucket, 'flaky/'), [], 'no upload is left open');
});
