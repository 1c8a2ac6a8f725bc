// How `floe ingest --catalog-uri` reaches the catalog.  An http:// catalog is
// spoken to by Floe's own HTTP/1.1 client (storage/rest/http1.c), anything
// else by libcurl:
// - config, loadTable and the commit travel on one kept-alive connection,
//   in that order (a TCP relay between the two counts connections and reads
//   the request lines);
// - a catalog that does not answer is named in a clear error, and nothing is
//   committed;
// - with http_proxy set, the requests go through libcurl and that proxy (a
//   forwarding proxy in this process sees each one), and the batch lands.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { startCatalog, createTable, loadTable, ingest, show, currentSnapshot, tmpDir } from './lib.mjs';

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 's', type: 'string', required: false },
];
let ctx;
let dir;

before(async () => {
  ctx = await startCatalog('ingest_transport');
  dir = tmpDir('ingest-transport');
});

after(async () => {
  await ctx?.floe.stop();
});

function csv(name, rows) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `id,s\n${Array.from({ length: rows }, (_, i) => `${i},v${i}`).join('\n')}\n`);
  return file;
}

const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
const close = (server) => new Promise((resolve) => server.close(() => resolve()));

// A TCP relay to the catalog: counts the connections made to it and keeps
// what clients sent.
async function relay(target) {
  const { hostname, port } = new URL(target);
  const seen = { connections: 0, sent: '' };
  const sockets = new Set();
  const server = net.createServer((c) => {
    seen.connections += 1;
    sockets.add(c);
    const up = net.connect(Number(port), hostname);
    c.on('data', (d) => { seen.sent += d.toString('latin1'); });
    c.pipe(up).pipe(c);
    const end = () => { c.destroy(); up.destroy(); sockets.delete(c); };
    c.on('error', end);
    up.on('error', end);
    c.on('close', end);
    up.on('close', end);
  });
  const p = await listen(server);
  return {
    base: `http://127.0.0.1:${p}`,
    seen,
    stop: async () => { for (const s of sockets) s.destroy(); await close(server); },
  };
}

test('config, loadTable and the commit share one kept-alive connection', async () => {
  await createTable(ctx, 'one_conn', fields);
  const r = await relay(ctx.base);
  try {
    const res = await ingest({ ...ctx, base: r.base }, 'one_conn', [csv('one.csv', 50)], { rest: true });
    assert.equal(res.code, 0, show(res));
    assert.equal(res.out.status, 'committed', show(res));
    assert.equal(res.out['rows-committed'], 50, show(res));
    const lines = r.seen.sent.split('\r\n').filter((l) => /^(GET|POST|PUT|DELETE|HEAD) /.test(l));
    assert.deepEqual(lines.map((l) => l.split(' ')[0] + ' ' + l.split(' ')[1].replace(/\?.*/, '')), [
      'GET /v1/config',
      `GET ${ctx.p}/namespaces/ns/tables/one_conn`,
      `POST ${ctx.p}/namespaces/ns/tables/one_conn`,
    ], r.seen.sent.slice(0, 2000));
    assert.ok(lines.every((l) => l.endsWith(' HTTP/1.1')), lines.join('\n'));
    assert.match(r.seen.sent, /\r\nIdempotency-Key: [^\r]+\r\n/);
    assert.match(r.seen.sent, /\r\nX-Iceberg-Access-Delegation: vended-credentials\r\n/);
    assert.equal(r.seen.connections, 1, 'one connection for the three requests');
  } finally {
    await r.stop();
  }
  const meta = (await loadTable(ctx, 'one_conn')).metadata;
  assert.equal(currentSnapshot(meta).summary['added-records'], '50');
});

test('a catalog that does not answer: a clear error, nothing committed', async () => {
  await createTable(ctx, 'nobody', fields);
  const dead = net.createServer();
  const port = await listen(dead);
  await close(dead); // nothing listens there now
  const res = await ingest({ ...ctx, base: `http://127.0.0.1:${port}` }, 'nobody', [csv('nobody.csv', 5)], { rest: true });
  assert.notEqual(res.code, 0, show(res));
  assert.match(res.stderr, new RegExp(`GET http://127\\.0\\.0\\.1:${port}/v1/config\\S*: cannot connect to 127\\.0\\.0\\.1:${port}`), show(res));
  assert.equal(currentSnapshot((await loadTable(ctx, 'nobody')).metadata), null);
});

test('with http_proxy set, the requests go through that proxy (libcurl) and the batch lands', async () => {
  await createTable(ctx, 'proxied', fields);
  const requests = [];
  const proxy = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const u = new URL(req.url); // a proxy is sent absolute URLs
    const up = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: req.method, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    up.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
    req.pipe(up);
  });
  const port = await listen(proxy);
  try {
    const res = await ingest(ctx, 'proxied', [csv('proxied.csv', 7)], {
      rest: true,
      env: { http_proxy: `http://127.0.0.1:${port}`, no_proxy: '', NO_PROXY: '' },
    });
    assert.equal(res.code, 0, show(res));
    assert.equal(res.out.status, 'committed', show(res));
    assert.deepEqual(requests.map((l) => l.replace(/\?.*/, '')), [
      `GET ${ctx.base}/v1/config`,
      `GET ${ctx.base}${ctx.p}/namespaces/ns/tables/proxied`,
      `POST ${ctx.base}${ctx.p}/namespaces/ns/tables/proxied`,
    ]);
  } finally {
    await close(proxy);
  }
  const meta = (await loadTable(ctx, 'proxied')).metadata;
  assert.equal(currentSnapshot(meta).summary['added-records'], '7');
});
