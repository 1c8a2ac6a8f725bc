// Restart and shutdown: the embedded default (no database URL: floe runs its own
// PostgreSQL in <data-dir>/pg) keeps its state across a clean SIGTERM restart and
// stops its PostgreSQL; SIGTERM lets an in-flight request finish.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { freshDatabase, startFloe, request, tmpDir, sleep } from './lib/harness.mjs';
import { expectJson, expectNoContent } from './lib/checks.mjs';

const dirs = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function postgresProcessesFor(dataDir) {
  const out = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(dataDir) && /postgres|postmaster/.test(l));
}

test('embedded default: state survives SIGTERM + restart; embedded PostgreSQL stops', async () => {
  const root = tmpDir('embedded');
  dirs.push(root);
  const dataDir = path.join(root, 'data'); // floe creates it
  let floe = await startFloe({ databaseUrl: null, dataDir, timeoutMs: 90000 });
  try {
    let base = floe.baseUrl;
    const cfg = expectJson(await request(base, 'GET', '/v1/config'), 200, 'CatalogConfig');
    const P = `/v1/${cfg.overrides.prefix}`;
    expectJson(await request(base, 'POST', `${P}/namespaces`, { body: { namespace: ['keep'], properties: { a: '1' } } }), 200);
    expectJson(await request(base, 'POST', `${P}/namespaces`, { body: { namespace: ['keep', 'deep ér'] } }), 200);
    expectJson(await request(base, 'POST', `${P}/namespaces`, { body: { namespace: ['gone'] } }), 200);
    expectNoContent(await request(base, 'DELETE', `${P}/namespaces/gone`));
    assert.ok(fs.existsSync(path.join(dataDir, 'pg', 'postmaster.pid')), 'embedded PostgreSQL runs in <data-dir>/pg');

    const exit1 = await floe.stop('SIGTERM');
    assert.deepEqual(exit1, { code: 0, signal: null }, `clean exit on SIGTERM\n${floe.logs().slice(-2000)}`);
    assert.ok(!fs.existsSync(path.join(dataDir, 'pg', 'postmaster.pid')), 'postmaster.pid removed: embedded PG stopped');
    assert.deepEqual(postgresProcessesFor(dataDir), [], 'no postgres process left for this data dir');

    floe = await startFloe({ databaseUrl: null, dataDir, timeoutMs: 90000 });
    base = floe.baseUrl;
    const g = expectJson(await request(base, 'GET', `${P}/namespaces/keep`), 200, 'GetNamespaceResponse');
    assert.deepEqual(g, { namespace: ['keep'], properties: { a: '1' } });
    const l = expectJson(await request(base, 'GET', `${P}/namespaces?parent=keep`), 200, 'ListNamespacesResponse');
    assert.deepEqual(l.namespaces, [['keep', 'deep ér']]);
    assert.equal((await request(base, 'HEAD', `${P}/namespaces/gone`)).status, 404);
    const top = expectJson(await request(base, 'GET', `${P}/namespaces`), 200, 'ListNamespacesResponse');
    assert.deepEqual(top.namespaces, [['keep']]);

    const exit2 = await floe.stop('SIGINT');
    assert.deepEqual(exit2, { code: 0, signal: null }, `clean exit on SIGINT\n${floe.logs().slice(-2000)}`);
    assert.ok(!fs.existsSync(path.join(dataDir, 'pg', 'postmaster.pid')), 'embedded PG stopped after SIGINT');
  } finally {
    await floe.stop('SIGKILL');
  }
});

test('SIGTERM while a request is in flight: that request completes, new ones are refused', async () => {
  const db = await freshDatabase('inflight');
  const floe = await startFloe({ databaseUrl: db.url });
  try {
    const u = new URL(floe.baseUrl);
    const body = JSON.stringify({ namespace: ['inflight'], properties: { k: 'v' } });
    const half = Math.floor(body.length / 2);
    const sock = net.connect(Number(u.port), u.hostname);
    const chunks = [];
    const closed = new Promise((resolve) => {
      sock.on('data', (c) => chunks.push(c));
      sock.on('close', resolve);
      sock.on('error', resolve);
    });
    await new Promise((resolve) => sock.on('connect', resolve));
    sock.write(
      `POST /v1/namespaces HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, half)}`,
    );
    await sleep(300); // headers are in: the request is being handled
    floe.proc.kill('SIGTERM');
    await sleep(500);
    assert.equal(floe.proc.exitCode, null, 'floe waits for the in-flight request instead of exiting');

    // a new request is not served while draining
    const late = await request(floe.baseUrl, 'GET', '/v1/config', { timeoutMs: 3000 }).catch((e) => e);
    assert.ok(
      late instanceof Error || late.status === 503,
      `a request after SIGTERM should be refused or 503, got ${late.status} ${late.text}`,
    );

    sock.write(body.slice(half));
    const timedOut = await Promise.race([closed.then(() => false), sleep(15000).then(() => true)]);
    sock.destroy();
    assert.equal(timedOut, false, 'the in-flight request got no complete response within 15 s');
    const raw = Buffer.concat(chunks).toString('utf8');
    assert.match(raw, /^HTTP\/1\.1 200 /, `in-flight request completed: ${raw.slice(0, 300)}`);
    assert.match(raw, /"inflight"/);

    const exit = await floe.stop('SIGTERM', 35000);
    assert.deepEqual(exit, { code: 0, signal: null }, `clean exit after draining\n${floe.logs().slice(-2000)}`);
  } finally {
    await floe.stop('SIGKILL');
  }
  // it was really committed
  const again = await startFloe({ databaseUrl: db.url });
  try {
    const g = expectJson(await request(again.baseUrl, 'GET', '/v1/namespaces/inflight'), 200, 'GetNamespaceResponse');
    assert.deepEqual(g.properties, { k: 'v' });
  } finally {
    await again.stop();
  }
});
