// Idempotency-Key on table and namespace mutations (DESIGN §3): replays are byte
// for byte and marked `Idempotent-Replayed: true`, terminal 4xx are replayed too,
// the same key on a different body / route / method is 422, a malformed key 400,
// concurrent duplicates execute once, and floe_idempotent_replays_total counts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { parse, sum } from '../lib/prom.mjs';
import { request, psql, freshDatabase } from '../lib/harness.mjs';
import { haveStrace, traceProcess } from '../lib/strace.mjs';
import { startCatalog, call, assertError, tablePath, createBody, appendCommit, uuidv7, localPath } from './lib.mjs';

let c;
const NS = ['idem'];

before(async () => {
  c = await startCatalog('tbl_idem');
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await c?.floe.stop();
});

const keyed = (method, path, body, key, extra = {}) =>
  call(c.base, method, path, { body, headers: { 'Idempotency-Key': key, ...extra } });

async function replays() {
  const r = await request(c.base, 'GET', '/metrics');
  assert.equal(r.status, 200);
  return sum(parse(r.text), 'floe_idempotent_replays_total');
}

async function load(name) {
  return (await call(c.base, 'GET', tablePath(c.p, NS, name), { expect: 200 })).json;
}

function assertReplay(first, again) {
  assert.equal(again.status, first.status, 'replayed status');
  assert.equal(again.headers['idempotent-replayed'], 'true', 'replay is marked Idempotent-Replayed: true');
  assert.equal(again.text, first.text, 'replayed body byte for byte');
  assert.equal(again.headers['content-type'], first.headers['content-type']);
  assert.equal(again.headers.etag, first.headers.etag, 'replayed ETag (or none, as the first answer)');
}

test('config advertises idempotency-key-lifetime', async () => {
  const cfg = (await call(c.base, 'GET', '/v1/config?warehouse=default', { expect: 200 })).json;
  assert.equal(cfg['idempotency-key-lifetime'], 'PT30M');
});

test('createTable and commit replay byte for byte, executing once; the replay counter grows', async () => {
  const before = await replays();
  const key = uuidv7();
  const body = JSON.stringify(createBody('t1'));
  const first = await keyed('POST', `${c.p}/namespaces/idem/tables`, body, key);
  assert.equal(first.status, 200, first.text);
  assert.equal(first.headers['idempotent-replayed'], undefined, 'a first execution is not marked replayed');
  const again = await keyed('POST', `${c.p}/namespaces/idem/tables`, body, key);
  assertReplay(first, again); // not 409 AlreadyExists: the create is not re-run

  const ck = uuidv7();
  const commitBody = JSON.stringify(appendCommit(first.json.metadata, { ns: NS, name: 't1' }).body);
  const p = tablePath(c.p, NS, 't1');
  const c1 = await keyed('POST', p, commitBody, ck);
  assert.equal(c1.status, 200, c1.text);
  const c2 = await keyed('POST', p, commitBody, ck);
  const c3 = await keyed('POST', p, commitBody, ck);
  assertReplay(c1, c2);
  assertReplay(c1, c3);
  const l = await load('t1');
  assert.equal(l['metadata-location'], c1.json['metadata-location'], 'replays wrote no new version');
  assert.equal(l.metadata.snapshots.length, 1, 'the append applied once');
  assert.equal((await replays()) - before, 3, 'floe_idempotent_replays_total counted the 3 replays');
});

test('a terminal 4xx (409) is stored and replayed even after the conflict is gone', async () => {
  await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody('t409'), expect: 200 });
  const p = tablePath(c.p, NS, 't409');
  const body = JSON.stringify({
    requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': 1 }],
    updates: [{ action: 'set-properties', updates: { x: '1' } }],
  });
  const key = uuidv7();
  const first = await keyed('POST', p, body, key);
  assertError(first, 409, 'CommitFailedException');
  // make the requirement true now
  await call(c.base, 'POST', p, {
    body: {
      requirements: [],
      updates: [
        { action: 'add-schema', schema: { type: 'struct', 'schema-id': 1, fields: [{ id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 'data', type: 'string', required: false }, { id: 3, name: 'z', type: 'int', required: false }] } },
        { action: 'set-current-schema', 'schema-id': -1 },
      ],
    },
    expect: 200,
  });
  const again = await keyed('POST', p, body, key);
  assertReplay(first, again);
  assert.equal((await load('t409')).metadata.properties.x, undefined, 'the replayed 409 did not execute');
});

// A 5xx outcome is never stored: after a commit fails on the server (its metadata
// folder is replaced by a plain file, so the metadata write fails even as root),
// the same key runs the request again once the fault is gone.
test('a 5xx is not stored: the same key executes again after the fault is repaired', async () => {
  const created = await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody('t5xx'), expect: 200 });
  const dir = new URL(`${created.json.metadata.location}/metadata`).pathname;
  const saved = `${dir}.saved`;
  const p = tablePath(c.p, NS, 't5xx');
  const body = JSON.stringify({ requirements: [], updates: [{ action: 'set-properties', updates: { after: 'repair' } }] });
  const key = uuidv7();
  fs.renameSync(dir, saved);
  fs.writeFileSync(dir, 'not a directory');
  let first;
  try {
    first = await keyed('POST', p, body, key);
  } finally {
    fs.rmSync(dir);
    fs.renameSync(saved, dir);
  }
  assert.ok(first.status >= 500, `the broken write must be a 5xx, got ${first.status} ${first.text}`);
  assert.equal((await load('t5xx')).metadata.properties.after, undefined, 'nothing applied by the failed commit');
  const again = await keyed('POST', p, body, key);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers['idempotent-replayed'], undefined, 'executed, not replayed');
  assert.equal((await load('t5xx')).metadata.properties.after, 'repair');
  const third = await keyed('POST', p, body, key);
  assertReplay(again, third); // and the 200 is stored
});

test('same key, different body / route / method → 422 UnprocessableEntityException, nothing applied', async () => {
  await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody('t422'), expect: 200 });
  await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody('t422b'), expect: 200 });
  const p = tablePath(c.p, NS, 't422');
  const key = uuidv7();
  const body = { requirements: [], updates: [{ action: 'set-properties', updates: { v: '1' } }] };
  const first = await keyed('POST', p, body, key);
  assert.equal(first.status, 200);
  const loc = first.json['metadata-location'];
  assertError(
    await keyed('POST', p, { requirements: [], updates: [{ action: 'set-properties', updates: { v: '2' } }] }, key),
    422,
    'UnprocessableEntityException',
    'Idempotency-Key',
  );
  assertError(await keyed('POST', tablePath(c.p, NS, 't422b'), body, key), 422, 'UnprocessableEntityException');
  assertError(await keyed('DELETE', p, undefined, key), 422, 'UnprocessableEntityException');
  assertError(await keyed('POST', `${c.p}/namespaces`, { namespace: ['idem_other'] }, key), 422, 'UnprocessableEntityException');
  const l = await load('t422');
  assert.equal(l['metadata-location'], loc);
  assert.equal(l.metadata.properties.v, '1');
  assert.equal((await load('t422b')).metadata.properties.v, undefined);
  assertError(await call(c.base, 'GET', `${c.p}/namespaces/idem_other`), 404);
  // whitespace differences are a different body too: the fingerprint is over the bytes
  assertError(await keyed('POST', p, `${JSON.stringify(body)} `, key), 422, 'UnprocessableEntityException');
});

test('an expired record is replaced: the key executes again (even for another body), then replays the new outcome', async () => {
  await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody('texp'), expect: 200 });
  const p = tablePath(c.p, NS, 'texp');
  const key = uuidv7();
  const set = (v) => ({ requirements: [], updates: [{ action: 'set-properties', updates: { v } }] });
  const first = await keyed('POST', p, set('1'), key);
  assert.equal(first.status, 200);
  assertReplay(first, await keyed('POST', p, set('1'), key));
  // Age the record past its lifetime (the GC has not run): it counts as absent.
  psql(c.dbUrl, `UPDATE idempotency_record SET expires_at = now() - interval '1 second' WHERE key = '${key}'`);
  const second = await keyed('POST', p, set('2'), key);
  assert.equal(second.status, 200, second.text);
  assert.equal(second.headers['idempotent-replayed'], undefined, 'executed, not replayed');
  assert.notEqual(second.json['metadata-location'], first.json['metadata-location']);
  assert.equal((await load('texp')).metadata.properties.v, '2');
  assertReplay(second, await keyed('POST', p, set('2'), key));
  assertError(await keyed('POST', p, set('1'), key), 422, 'UnprocessableEntityException');
  assert.equal((await load('texp')).metadata.properties.v, '2');
});

test('malformed Idempotency-Key → 400, nothing applied', async () => {
  await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody('t400'), expect: 200 });
  const p = tablePath(c.p, NS, 't400');
  const before = await load('t400');
  const v4 = '0d5f9a6e-3b8a-4c1e-9f2a-6b7c8d9e0f1a';
  for (const bad of ['not-a-uuid', v4, '', '01890a5d-ac96-774b-bcce-b302099a8057x', '01890A5D-AC96-774B-BCCE-B302099A8057'.replace(/7/, '4')]) {
    const res = await keyed('POST', p, { requirements: [], updates: [{ action: 'set-properties', updates: { bad } }] }, bad);
    assertError(res, 400, 'BadRequestException', 'Idempotency-Key');
  }
  const after = await load('t400');
  assert.equal(after['metadata-location'], before['metadata-location'], 'a rejected key applied nothing');
  // reads ignore the header
  assert.equal((await call(c.base, 'GET', p, { headers: { 'Idempotency-Key': 'not-a-uuid' } })).status, 200);
});

test('concurrent duplicates: one execution, every caller gets the same body', async () => {
  const created = await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody('tdup'), expect: 200 });
  const p = tablePath(c.p, NS, 'tdup');
  const n0 = await commits();
  for (let round = 0; round < 5; round++) {
    const l = await load('tdup');
    const key = uuidv7();
    const body = JSON.stringify(appendCommit(l.metadata, { ns: NS, name: 'tdup' }).body);
    const res = await Promise.all(Array.from({ length: 6 }, () => keyed('POST', p, body, key)));
    for (const r of res) assert.equal(r.status, 200, `round ${round}: ${r.status} ${r.text.slice(0, 300)}`);
    assert.equal(new Set(res.map((r) => r.text)).size, 1, 'every duplicate got the same body');
    assert.equal(res.filter((r) => r.headers['idempotent-replayed'] !== 'true').length, 1, 'exactly one execution');
    const after = await load('tdup');
    assert.equal(after.metadata.snapshots.length, round + 1, 'applied once');
    assert.equal((await commits()) - n0, round + 1, 'one commit counted per round: the replays are not commits');
    assert.equal(after['metadata-location'], res[0].json['metadata-location']);
  }
  assert.ok(created);
  // concurrent duplicate creates: one table, no 409 for the duplicates
  const key = uuidv7();
  const body = JSON.stringify(createBody('tdupc'));
  const res = await Promise.all(Array.from({ length: 6 }, () => keyed('POST', `${c.p}/namespaces/idem/tables`, body, key)));
  for (const r of res) assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.equal(new Set(res.map((r) => r.text)).size, 1);
});

async function commits() {
  const r = await request(c.base, 'GET', '/metrics');
  assert.equal(r.status, 200);
  return sum(parse(r.text), 'floe_commits_total');
}

// A table commit's claim is not sent on its own: it rides with the commit's first
// statement (its row read), or goes alone after a handler that never reached the
// database. Either way the key decides the answer, not what the handler made of it.
test('a table commit judges its key with its first statement: the stored answer wins over anything the handler met', async () => {
  await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody('tdef'), expect: 200 });
  const p = tablePath(c.p, NS, 'tdef');
  const before = await load('tdef');
  const n0 = await commits();
  // The daemon holds the version it served: a commit's first try moves the row without
  // reading it, its move carrying the key's claim, and writes its file meanwhile. One
  // that the key stops leaves no file behind.
  const dir = localPath(`${before.metadata.location}/metadata`);
  const files = () => fs.readdirSync(dir).sort();
  const files0 = files();

  // A key stored by another route: every commit under it is 422, whether its handler
  // failed before the database (malformed body), at the row read (missing table),
  // on a requirement (409) or would have committed.
  const nsKey = uuidv7();
  assert.equal((await keyed('POST', `${c.p}/namespaces`, { namespace: ['idem_def'] }, nsKey)).status, 200);
  const stale = { requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 42 }], updates: [] };
  const good = { requirements: [], updates: [{ action: 'set-properties', updates: { deferred: 'no' } }] };
  for (const [path, body] of [[p, '{"requirements": ['], [tablePath(c.p, NS, 'nope'), good], [p, stale], [p, good]]) {
    assertError(await keyed('POST', path, body, nsKey), 422, 'UnprocessableEntityException', 'Idempotency-Key');
  }
  assert.deepEqual(files(), files0, 'a commit refused by its key leaves no metadata file');
  // A commit's own stored 200, replayed with the same key after a later commit; a
  // stored 400 (the handler never reached the database) and a stored 404, replayed.
  const key = uuidv7();
  const first = await keyed('POST', p, good, key);
  assert.equal(first.status, 200, first.text);
  await call(c.base, 'POST', p, { body: { requirements: [], updates: [{ action: 'set-properties', updates: { later: '1' } }] }, expect: 200 });
  const files1 = files();
  const again = await keyed('POST', p, good, key);
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(files(), files1, 'a replay leaves no metadata file');
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.json['metadata-location'], first.json['metadata-location'], 'the commit\'s own version, not the later one');
  for (const [path, body, status] of [[p, '{"requirements": [', 400], [tablePath(c.p, NS, 'nope'), good, 404]]) {
    const k = uuidv7();
    const a = await keyed('POST', path, body, k);
    assert.equal(a.status, status, a.text);
    assertReplay(a, await keyed('POST', path, body, k));
  }
  const after = await load('tdef');
  assert.equal(after.metadata.properties.deferred, 'no');
  assert.equal(after.metadata.properties.later, '1');
  assert.equal(after['last-sequence-number'], before['last-sequence-number']);
  assertError(await call(c.base, 'GET', `${c.p}/namespaces/idem_def/tables/nope`), 404);
  // floe_commits_total counts what the commit engine decided under a key of its
  // own: the two commits that ran and the 404 (the 400 never reached it), never a
  // replay nor a 422.
  assert.equal((await commits()) - n0, 3, 'commits counted without the replays and the 422s');
});

test('transactions/commit and dropTable replay their 204', async () => {
  for (const t of ['tx1', 'tx2', 'tdrop']) await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody(t), expect: 200 });
  const [m1, m2] = [(await load('tx1')).metadata, (await load('tx2')).metadata];
  const body = JSON.stringify({
    'table-changes': [appendCommit(m1, { ns: NS, name: 'tx1' }).body, appendCommit(m2, { ns: NS, name: 'tx2' }).body],
  });
  const key = uuidv7();
  const first = await keyed('POST', `${c.p}/transactions/commit`, body, key);
  assert.equal(first.status, 204, first.text);
  const again = await keyed('POST', `${c.p}/transactions/commit`, body, key);
  assertReplay(first, again);
  assert.equal((await load('tx1')).metadata.snapshots.length, 1);
  assert.equal((await load('tx2')).metadata.snapshots.length, 1);

  const dk = uuidv7();
  const d1 = await keyed('DELETE', `${tablePath(c.p, NS, 'tdrop')}?purgeRequested=false`, undefined, dk);
  assert.equal(d1.status, 204);
  const d2 = await keyed('DELETE', `${tablePath(c.p, NS, 'tdrop')}?purgeRequested=false`, undefined, dk);
  assertReplay(d1, d2); // not 404: the drop is not re-run
});

test('namespaces: create twice with one key → both 200, identical, one namespace', async () => {
  const key = uuidv7();
  const body = JSON.stringify({ namespace: ['idem_ns'], properties: { owner: 'x' } });
  const a = await keyed('POST', `${c.p}/namespaces`, body, key);
  const b = await keyed('POST', `${c.p}/namespaces`, body, key);
  assert.equal(a.status, 200, a.text);
  assertReplay(a, b);
  // without the key the same create is a conflict: the replay above really was a replay
  assertError(await call(c.base, 'POST', `${c.p}/namespaces`, { body }), 409, 'AlreadyExistsException');
  const list = (await call(c.base, 'GET', `${c.p}/namespaces`, { expect: 200 })).json.namespaces;
  assert.equal(list.filter((n) => n.length === 1 && n[0] === 'idem_ns').length, 1);
  // concurrent duplicate namespace creates
  const k2 = uuidv7();
  const body2 = JSON.stringify({ namespace: ['idem_ns2'] });
  const res = await Promise.all(Array.from({ length: 5 }, () => keyed('POST', `${c.p}/namespaces`, body2, k2)));
  for (const r of res) assert.equal(r.status, 200, r.text);
  assert.equal(new Set(res.map((r) => r.text)).size, 1);
});

// A keyed commit's record is its answer byte for byte, ETag included, for a small table, a
// large one (whose pointer move is sent before its metadata file is written) and names
// whose location needs JSON escapes; a stale keyed commit's 409 is stored and replayed
// and moves nothing.
test('a keyed commit stores its answer as its record and replays it byte for byte, small or large, any name', async () => {
  const big = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p.${i}`, String(i % 10).repeat(1000)]));
  for (const [name, properties] of [
    ['plain', {}],
    ['qu"ote\\back é ✓', {}],
    ['large', big],
  ]) {
    const created = await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody(name, { properties }), expect: 200 });
    const p = tablePath(c.p, NS, name);
    let meta = created.json.metadata;
    for (let i = 0; i < 2; i++) {
      const key = uuidv7();
      const body = JSON.stringify(appendCommit(meta, { ns: NS, name }).body);
      const first = await keyed('POST', p, body, key);
      assert.equal(first.status, 200, first.text);
      if (name === 'large') assert.ok(first.text.length > 64 * 1024, 'the large table is sent ahead');
      assert.ok(first.headers.etag, 'a commit answers with an ETag');
      assertReplay(first, await keyed('POST', p, body, key));
      // The record names the metadata file instead of holding its text a third time.
      const stored = psql(c.dbUrl, `SELECT status || ' ' || content_type || ' ' || etag || ' ' || (body IS NULL) || ' ' || metadata_location FROM idempotency_record WHERE key = '${key}'`);
      assert.equal(stored, `200 application/json ${first.headers.etag} true ${first.json['metadata-location']}`, 'the record is the answer by reference');
      meta = first.json.metadata;
    }
    // A stale keyed commit: 409 stored and replayed; the table did not move.
    const key = uuidv7();
    const stale = JSON.stringify(appendCommit(created.json.metadata, { ns: NS, name }).body);
    const lost = await keyed('POST', p, stale, key);
    assertError(lost, 409, 'CommitFailedException');
    assertReplay(lost, await keyed('POST', p, stale, key));
    assert.equal((await load(name)).metadata.snapshots.length, 2);
  }
});

// A commit's record keeps the metadata file it wrote: a replay after later commits answers
// from that file, byte for byte; once the file is gone it answers the table's current
// version (the spec: a replay "may reflect a newer state of the catalog"), still marked
// replayed; once the table is dropped, 404 as a new request would get. Nothing runs again.
test('a keyed commit replays from its metadata file after later commits, then from the current version, then 404', async () => {
  const created = await call(c.base, 'POST', `${c.p}/namespaces/idem/tables`, { body: createBody('byref'), expect: 200 });
  const p = tablePath(c.p, NS, 'byref');
  const k1 = uuidv7();
  const b1 = JSON.stringify(appendCommit(created.json.metadata, { ns: NS, name: 'byref' }).body);
  const first = await keyed('POST', p, b1, k1);
  assert.equal(first.status, 200, first.text);
  const later = await call(c.base, 'POST', p, { body: appendCommit(first.json.metadata, { ns: NS, name: 'byref' }).body, expect: 200 });
  assert.notEqual(later.json['metadata-location'], first.json['metadata-location']);

  assertReplay(first, await keyed('POST', p, b1, k1)); // read back from the first commit's file

  fs.rmSync(localPath(first.json['metadata-location']));
  const current = await keyed('POST', p, b1, k1);
  assert.equal(current.status, 200, current.text);
  assert.equal(current.headers['idempotent-replayed'], 'true');
  assert.equal(current.json['metadata-location'], later.json['metadata-location'], 'the current version answers');
  assert.equal(current.text, later.text, 'as the later commit answered it');
  assert.equal(current.headers.etag, later.headers.etag);
  const l = await load('byref');
  assert.equal(l.metadata.snapshots.length, 2, 'no replay applied anything');

  await call(c.base, 'DELETE', p, { expect: 204 });
  const gone = await keyed('POST', p, b1, k1);
  assertError(gone, 404, 'NoSuchTableException');
});

// Read off the daemon's system calls (strace -f -yy): a keyed commit of a table whose version
// the daemon holds (it served the load) does not read the row. Its BEGIN and claim go in one
// pipeline with the pointer move, before the metadata file is written; the record and the
// COMMIT are the second and last round trip to PostgreSQL. The same holds for a contended
// table, whose version the daemon also keeps parsed for its next commit (a conflict makes it
// keep the version it read, and each commit then keeps the one it wrote).
// warm: keyed commits before the traced one (0 on a new daemon: its statements are then
// used for the first time, and their preparations must ride behind them).
// idle: milliseconds between the load and the traced commit (past the warehouse lookup's
// 5 s in the daemon's cache, the commit looks its warehouse up again, before its claim).
async function twoRoundTrips(name, { contended = false, warm = 3, cat = c, idle = 0 } = {}) {
  const p = tablePath(cat.p, NS, name);
  const keyed = (method, path, body, key) => call(cat.base, method, path, { body, headers: { 'Idempotency-Key': key } });
  const load = async () => (await call(cat.base, 'GET', p, { expect: 200 })).json;
  await call(cat.base, 'POST', `${cat.p}/namespaces/idem/tables`, { body: createBody(name), expect: 200 });
  for (let i = 0; i < warm; i++) await keyed('POST', p, appendCommit((await load()).metadata, { ns: NS, name }).body, uuidv7());
  if (contended) {
    const stale = appendCommit((await load()).metadata, { ns: NS, name });
    stale.body.requirements[0]['snapshot-id'] = 42;
    assertError(await keyed('POST', p, stale.body, uuidv7()), 409, 'CommitFailedException');
    for (let i = 0; i < 2; i++) await keyed('POST', p, appendCommit((await load()).metadata, { ns: NS, name }).body, uuidv7());
  }
  const body = appendCommit((await load()).metadata, { ns: NS, name }).body;
  const pgPort = new URL(cat.dbUrl).port || '5432';
  const st = await traceProcess(cat.floe.proc.pid, {
    calls: 'linkat,sendto,recvfrom',
    decode: '-yy',
    size: 2000,
    poke: () => call(cat.base, 'GET', '/v1/config?warehouse=default', { expect: 200 }),
  });
  try {
    if (idle > 0) await new Promise((resolve) => { setTimeout(resolve, idle); });
    const key = uuidv7();
    const res = await keyed('POST', p, body, key);
    assert.equal(res.status, 200, res.text);
    const name = path.basename(localPath(res.json['metadata-location']));
    const calls = await st.stop();
    const toPg = (x) => (x.call === 'sendto' || x.call === 'recvfrom') && x.args.includes(`:${pgPort}]>`);
    const claim = calls.find((x) => x.call === 'sendto' && toPg(x) && x.args.includes(key));
    assert.ok(claim, 'the claim was not sent');
    const pg = calls.filter((x) => toPg(x) && x.pid === claim.pid && x.start >= claim.start);
    const move = pg.find((x) => x.call === 'sendto' && x.args.includes(name));
    const link = calls.find((x) => x.call === 'linkat' && x.ret === '0' && x.args.includes(`"${name}"`));
    const commit = pg.find((x) => x.call === 'sendto' && x.args.includes('COMMIT'));
    assert.ok(move && link && commit, `move ${!!move}, file ${!!link}, COMMIT ${!!commit}`);
    const replyBefore = pg.find((x) => x.call === 'recvfrom' && x.start > claim.end && x.end < move.start);
    // On failure, every message to and from PostgreSQL, printable: what the extra round trip was.
    const seen = () => pg.map((x) => `${x.call}(${x.args.replace(/[^ -~]/g, '.').slice(0, 240)})`).join('\n');
    assert.ok(!replyBefore, `the claim took a round trip before the move:\n${replyBefore && seen()}`);
    assert.ok(move.end < link.start, 'the move was sent before the file was written');
    // Round trips: runs of sends to PostgreSQL separated by a reply, up to the COMMIT's.
    let trips = 0;
    let sending = false;
    for (const x of pg.filter((x) => x.start <= commit.start)) {
      if (x.call === 'sendto' && !sending) trips++;
      sending = x.call === 'sendto';
    }
    assert.equal(trips, 2, `round trips to PostgreSQL from the claim to the COMMIT:\n${seen()}`);
  } finally {
    st.kill();
  }
}

test('a keyed commit on a version the daemon holds sends its claim with its move, ahead of the file: two round trips', { skip: !haveStrace && 'strace is not installed' }, () => twoRoundTrips('trt'));

test('the same on a contended table, whose version the daemon keeps parsed: two round trips', { skip: !haveStrace && 'strace is not installed' }, () => twoRoundTrips('trtc', { contended: true }));

test('the same when the warehouse lookup the daemon cached expired before the commit: it is made before the claim', { skip: !haveStrace && 'strace is not installed' }, () => twoRoundTrips('trtw', { idle: 5200 }));

test('the first keyed commit of a new daemon takes the same two round trips: its statements are prepared behind them', { skip: !haveStrace && 'strace is not installed' }, async () => {
  const fresh = await startCatalog('tbl_idem_fresh');
  try {
    await call(fresh.base, 'POST', `${fresh.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
    await twoRoundTrips('trtf', { warm: 0, cat: fresh });
  } finally {
    await fresh.floe.stop();
  }
});

// A TCP proxy in front of PostgreSQL that cuts the connection which carries `armed`
// (a string in what the daemon sends) right after forwarding that chunk, before any answer
// to it comes back.
async function cuttingProxy(target) {
  const state = { armed: null, cut: 0 };
  const server = net.createServer((client) => {
    const pg = net.connect(Number(target.port), target.hostname);
    const end = () => { client.destroy(); pg.destroy(); };
    client.on('data', (d) => {
      pg.write(d);
      if (state.armed && d.includes(state.armed)) {
        state.armed = null;
        state.cut++;
        end();
      }
    });
    pg.on('data', (d) => client.write(d));
    client.on('error', end);
    pg.on('error', end);
    client.on('close', end);
    pg.on('close', end);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = server.address().port;
  state.close = () => new Promise((resolve) => server.close(resolve));
  return state;
}

// The connection is lost after a keyed commit's pipeline (BEGIN, claim, SAVEPOINT, move) was
// sent and while its file is written: the claim is judged lost, not pending, so the answer is
// a definite 503 (nothing was committed), the file is deleted, and the same request with the
// same key then executes once.
test('a keyed commit whose connection is lost with its claim and move in flight: 503, no file left, the retry executes once', async () => {
  const { url } = await freshDatabase('tbl_idem_cut');
  const target = new URL(url);
  const proxy = await cuttingProxy(target);
  const via = new URL(url);
  via.port = String(proxy.port);
  const b = await startCatalog('tbl_idem_cut', { databaseUrl: via.toString() });
  try {
    await call(b.base, 'POST', `${b.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
    await call(b.base, 'POST', `${b.p}/namespaces/idem/tables`, { body: createBody('cut'), expect: 200 });
    const p = tablePath(b.p, NS, 'cut');
    const l = (await call(b.base, 'GET', p, { expect: 200 })).json; // the daemon holds this version
    const dir = localPath(`${l.metadata.location}/metadata`);
    const files0 = fs.readdirSync(dir).sort();
    const key = uuidv7();
    const { body, snapshotId } = appendCommit(l.metadata, { ns: NS, name: 'cut' });
    proxy.armed = key;
    const lost = await request(b.base, 'POST', p, { body, headers: { 'Idempotency-Key': key } });
    assert.equal(proxy.cut, 1, 'the connection carrying the key was cut');
    assertError(lost, 503, 'ServiceUnavailableException', 'database');
    assert.deepEqual(fs.readdirSync(dir).sort(), files0, 'the file written while the move was in flight is deleted');
    assert.equal(psql(url, "SELECT count(*) FROM idempotency_record WHERE key = '" + key + "'"), '0', 'no record: nothing committed under the key');
    const again = await request(b.base, 'POST', p, { body, headers: { 'Idempotency-Key': key } });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers['idempotent-replayed'], undefined, 'executed, not replayed');
    const now = (await call(b.base, 'GET', p, { expect: 200 })).json;
    assert.deepEqual(now.metadata.snapshots.map((x) => x['snapshot-id']), [snapshotId], 'applied once');
    assert.equal(fs.readdirSync(dir).length, files0.length + 1, 'one file more: the one answered');
  } finally {
    await b.floe.stop();
    await proxy.close();
  }
});
