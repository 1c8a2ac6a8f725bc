// Directory feeds in the daemon: files land in a watched directory and become
// snapshots that DuckDB reads exactly once; the ledger records each object;
// floe.batch-id and floe.watermark are in every snapshot's summary; batches
// respect max-objects; a poison file and a file with bad rows are
// dead-lettered with their bytes and reasons while the rest commits.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { psql, request, tmpDir, waitFor } from '../lib/harness.mjs';
import { startCatalog, createTable, loadTable } from '../ingest/lib.mjs';
import { expectError } from '../lib/checks.mjs';
import { F, land, createFeed, tableIds, ledger, waitLedger, csv, range } from './lib.mjs';

let ctx;
let root;

before(async () => {
  ctx = await startCatalog('feeds_dir');
  root = tmpDir('feeds');
});

after(async () => {
  await ctx?.floe.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

test('files land once each; snapshots carry batch id and watermark; batches bounded', async () => {
  const dir = path.join(root, 'orders');
  fs.mkdirSync(dir);
  await createFeed(ctx.base, {
    name: 'orders', table: 'ns.orders', source: { type: 'directory', path: dir, glob: '*.csv' },
    format: 'csv', interval: 'PT1S', 'on-error': 'dead-letter', 'create-table': true, batch: { 'max-objects': 2 },
  });
  for (let k = 0; k < 5; k++) land(dir, `part-${k}.csv`, csv(k * 100, k * 100 + 50));
  // Not objects of this feed: another extension, a dot-file, a temporary.
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'id,s\n999999,x\n');
  fs.writeFileSync(path.join(dir, '.hidden.csv'), 'id,s\n999998,x\n');
  fs.writeFileSync(path.join(dir, 'late.csv.tmp'), 'id,s\n999997,x\n');
  await waitLedger(ctx.dbUrl, 'orders', 5);
  const want = [0, 1, 2, 3, 4].flatMap((k) => range(k * 100, k * 100 + 50));
  const { meta, ids } = await tableIds(ctx, 'orders');
  assert.deepEqual(ids, want, 'every row exactly once, nothing else');
  const l = ledger(ctx.dbUrl, 'orders');
  assert.deepEqual(l.map((o) => o.key), ['part-0.csv', 'part-1.csv', 'part-2.csv', 'part-3.csv', 'part-4.csv']);
  assert.ok(l.every((o) => o.outcome === 'committed'), JSON.stringify(l));
  // One snapshot per batch, at most two objects per batch.
  const perBatch = new Map();
  for (const o of l) perBatch.set(o.batch, (perBatch.get(o.batch) ?? 0) + 1);
  assert.ok([...perBatch.values()].every((n) => n <= 2), `batches: ${[...perBatch.values()]}`);
  const snaps = meta.snapshots;
  assert.equal(snaps.length, perBatch.size, 'one snapshot per batch');
  for (const s of snaps) {
    assert.ok(perBatch.has(s.summary['floe.batch-id']), `snapshot names a ledger batch: ${s.summary['floe.batch-id']}`);
    assert.match(s.summary['floe.watermark'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  }
  // The watermark is the newest object's modification time.
  const newest = Math.max(...[0, 1, 2, 3, 4].map((k) => fs.statSync(path.join(dir, `part-${k}.csv`)).mtimeMs));
  const last = snaps.map((s) => Date.parse(s.summary['floe.watermark'])).sort().at(-1);
  assert.equal(last, Math.floor(newest));
  // The events name the feed as the actor.
  assert.equal(psql(ctx.dbUrl, "SELECT DISTINCT actor FROM commit_event WHERE table_name = 'orders' AND operation <> 'create'"), 'feed:orders');
  // GET shows the batches.
  const f = (await request(ctx.base, 'GET', `${F}/orders`)).json;
  assert.equal(f['last-batches'].reduce((a, b) => a + b['rows-committed'], 0), 250);
  assert.ok(f['last-batches'].every((b) => b.outcome === 'committed' && b['snapshot-id'] != null));

  // Later files land too; files already landed are not read again.
  land(dir, 'part-5.csv', csv(500, 510));
  await waitLedger(ctx.dbUrl, 'orders', 6);
  assert.deepEqual((await tableIds(ctx, 'orders')).ids, [...want, ...range(500, 510)]);

  // Paused: nothing lands; resumed: it does.
  assert.equal((await request(ctx.base, 'POST', `${F}/orders/pause`)).status, 200);
  land(dir, 'part-6.csv', csv(600, 610));
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(ledger(ctx.dbUrl, 'orders').length, 6, 'a paused feed does not run');
  assert.equal((await request(ctx.base, 'POST', `${F}/orders/resume`)).status, 200);
  await waitLedger(ctx.dbUrl, 'orders', 7);
});

test('a poison file and a file with bad rows: dead-lettered with bytes and reasons, the rest lands', async () => {
  const dir = path.join(root, 'dl');
  const dead = path.join(root, 'dead');
  fs.mkdirSync(dir);
  await createTable(ctx, 'events', [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 's', type: 'string', required: false },
  ]);
  await createFeed(ctx.base, {
    name: 'events', table: 'ns.events', source: { type: 'directory', path: dir },
    format: 'csv', interval: 'PT1S', 'on-error': 'dead-letter', 'dead-letter': dead,
  });
  const poison = 'wrong,columns\n1,2\n';
  land(dir, 'a-good.csv', csv(1, 4));
  land(dir, 'b-badrows.csv', 'id,s\n4,d\nnot-a-number,e\n6,f\n');
  land(dir, 'c-poison.csv', poison);
  await waitLedger(ctx.dbUrl, 'events', 3);
  assert.deepEqual((await tableIds(ctx, 'events')).ids, [1, 2, 3, 4, 6]);
  const l = ledger(ctx.dbUrl, 'events');
  assert.deepEqual(l.map((o) => `${o.key}:${o.outcome}`), ['a-good.csv:committed', 'b-badrows.csv:committed', 'c-poison.csv:dead-letter']);
  const dl = psql(ctx.dbUrl, `SELECT key || '|' || whole_object || '|' || rows_bad || '|' || location || '|' || reason
    FROM feed_dead_letter ORDER BY whole_object, id`).split('\n').map((x) => x.split('|'));
  assert.equal(dl.length, 2, JSON.stringify(dl));
  const [rows, whole] = dl;
  assert.equal(rows[1], 'false');
  assert.equal(rows[2], '1');
  assert.ok(rows[3].startsWith(dead), rows[3]);
  assert.equal(fs.readFileSync(rows[3], 'utf8'), 'not-a-number,e\n', 'the rejected row, byte for byte');
  assert.match(fs.readFileSync(`${rows[3]}.errors.ndjson`, 'utf8'), /b-badrows\.csv/);
  assert.equal(whole[0], 'c-poison.csv');
  assert.equal(whole[1], 'true');
  assert.equal(fs.readFileSync(whole[3], 'utf8'), poison, 'the poison object, whole');
  assert.match(whole[4], /wrong|column/i, `reason names the problem: ${whole[4]}`);
  // The feed keeps going, and never retries the poison file.
  land(dir, 'd-more.csv', csv(7, 9));
  await waitLedger(ctx.dbUrl, 'events', 4);
  assert.deepEqual((await tableIds(ctx, 'events')).ids, [1, 2, 3, 4, 6, 7, 8]);
  const f = (await request(ctx.base, 'GET', `${F}/events`)).json;
  assert.equal(f.state, 'active');
  assert.equal(f.failures, 0);
  assert.equal(ledger(ctx.dbUrl, 'events').filter((o) => o.key === 'c-poison.csv').length, 1);
});

test('a feed whose source is missing backs off and records why', async () => {
  await createTable(ctx, 'nosrc', [{ id: 1, name: 'id', type: 'long', required: false }]);
  await createFeed(ctx.base, {
    name: 'nosrc', table: 'ns.nosrc', source: { type: 'directory', path: path.join(root, 'absent') },
    format: 'csv', interval: 'PT1S', 'max-retries': 1,
  });
  const f = await waitFor(async () => {
    const g = (await request(ctx.base, 'GET', `${F}/nosrc`)).json;
    return g.state === 'paused' ? g : null;
  }, { timeoutMs: 20000, what: 'the feed to pause after its retries' });
  assert.match(f['last-error'], /absent/);
  assert.equal(f.failures, 2);
  assert.equal(f['last-batches'].length, 2, 'each failed run is a batch');
  assert.ok(f['last-batches'].every((b) => b.outcome === 'failed'));
});

test('replay: missing objects only, or --force again under new batch ids; bad ranges are 400s', async () => {
  const dir = path.join(root, 'rp');
  fs.mkdirSync(dir);
  await createTable(ctx, 'rp', [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 's', type: 'string', required: false },
  ]);
  await createFeed(ctx.base, {
    name: 'rp', table: 'ns.rp', source: { type: 'directory', path: dir }, format: 'csv', interval: 'PT1S',
  });
  land(dir, 'a.csv', csv(0, 3));
  land(dir, 'b.csv', csv(10, 13));
  land(dir, 'c.csv', csv(20, 23));
  await waitLedger(ctx.dbUrl, 'rp', 3);
  const once = [...range(0, 3), ...range(10, 13), ...range(20, 23)];
  assert.deepEqual((await tableIds(ctx, 'rp')).ids, once);
  const pending = async () => (await request(ctx.base, 'GET', `${F}/rp`)).json['pending-replay'];

  // Without force: everything is in the ledger, nothing lands again.
  const r1 = await request(ctx.base, 'POST', `${F}/rp/replay`);
  assert.equal(r1.status, 200, r1.text);
  assert.equal(r1.json['pending-replay'].force, false);
  await waitFor(async () => (await pending()) === null, { what: 'the replay to finish' });
  assert.deepEqual((await tableIds(ctx, 'rp')).ids, once);

  // Forced over b..c: those land again, once more, in a forced batch.
  const r2 = await request(ctx.base, 'POST', `${F}/rp/replay`, { body: { from: 'b.csv', to: 'c.csv', force: true } });
  assert.equal(r2.status, 200, r2.text);
  await waitFor(async () => (await pending()) === null, { what: 'the forced replay to finish' });
  const again = [...once, ...range(10, 13), ...range(20, 23)].sort((x, y) => x - y);
  assert.deepEqual((await tableIds(ctx, 'rp')).ids, again);
  const l = ledger(ctx.dbUrl, 'rp');
  assert.deepEqual(l.map((o) => o.key), ['a.csv', 'b.csv', 'b.csv', 'c.csv', 'c.csv']);
  const f = (await request(ctx.base, 'GET', `${F}/rp`)).json;
  assert.equal(f['last-batches'][0].forced, true, 'the batch says it was forced');
  const meta = (await loadTable(ctx, 'rp')).metadata;
  const batches = meta.snapshots.map((s) => s.summary['floe.batch-id']);
  assert.equal(new Set(batches).size, batches.length, 'a forced replay has its own batch id');

  // Bad requests.
  expectError(await request(ctx.base, 'POST', `${F}/rp/replay`, { body: { from: 'z', to: 'a' } }), 400, 'BadRequestException', "from 'z' sorts after to 'a'");
  expectError(await request(ctx.base, 'POST', `${F}/rp/replay`, { body: { since: 'yesterday' } }), 400, 'BadRequestException', 'since');
  expectError(await request(ctx.base, 'POST', `${F}/rp/replay`, { body: { to: 'k'.repeat(1025) } }), 400, 'BadRequestException', 'to is 1025 bytes, over 1024');
  expectError(await request(ctx.base, 'POST', `${F}/rp/replay`, { body: { force: true, color: 1 } }), 400, 'BadRequestException', "unknown key 'color'");
  expectError(await request(ctx.base, 'POST', `${F}/nope/replay`), 404, undefined, "feed 'nope' does not exist");
  await createFeed(ctx.base, { name: 'rp-push', table: 'ns.rp', source: { type: 'push' }, format: 'csv' });
  expectError(await request(ctx.base, 'POST', `${F}/rp-push/replay`), 400, 'BadRequestException', 'directory source');
});
