// The feed and table signals in /metrics: volume, dead letters, retries,
// backlog, batch latency per feed; commits and freshness per table from the
// commit events, so a `floe ingest` run (another process) counts too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { request, tmpDir } from '../lib/harness.mjs';
import { parse, find } from '../lib/prom.mjs';
import { startCatalog, createTable, ingest, show } from '../ingest/lib.mjs';
import { F, land, createFeed, waitLedger, csv } from './lib.mjs';

let ctx;
let root;

before(async () => {
  ctx = await startCatalog('feeds_signals');
  root = tmpDir('feeds-signals');
});

after(async () => {
  await ctx?.floe.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

async function metrics() {
  const res = await request(ctx.base, 'GET', '/metrics');
  assert.equal(res.status, 200);
  return parse(res.text);
}

const value = (m, name, labels) => {
  const s = find(m, name, labels);
  assert.ok(s.length === 1, `${name} ${JSON.stringify(labels)}: ${s.length} samples`);
  return s[0].value;
};

test('a feed\'s volume, dead letters, backlog and latency; table freshness', async () => {
  const dir = path.join(root, 'in');
  fs.mkdirSync(dir);
  await createTable(ctx, 's', [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 's', type: 'string', required: false },
  ]);
  await createFeed(ctx.base, {
    name: 'sig', table: 'ns.s', source: { type: 'directory', path: dir }, format: 'csv', interval: 'PT1S',
    'on-error': 'dead-letter', 'dead-letter': path.join(root, 'dead'),
  });
  const good = csv(0, 10);
  const some = 'id,s\n10,a\nbad,b\n12,c\n';
  land(dir, 'a.csv', good);
  land(dir, 'b.csv', some);
  land(dir, 'c.csv', 'nope,columns\n1,2\n');
  await waitLedger(ctx.dbUrl, 'sig', 3);
  const m = await metrics();
  const L = { feed: 'sig', warehouse: 'default', namespace: 'ns', table: 's' };
  assert.equal(value(m, 'floe_feed_rows_committed_total', L), 12);
  assert.equal(value(m, 'floe_feed_dead_letter_rows_total', L), 1);
  assert.equal(value(m, 'floe_feed_dead_letter_objects_total', L), 1);
  assert.equal(value(m, 'floe_feed_bytes_read_total', L), Buffer.byteLength(good) + Buffer.byteLength(some));
  assert.ok(value(m, 'floe_feed_bytes_committed_total', L) > 0);
  assert.ok(value(m, 'floe_feed_batches_committed_total', L) >= 1);
  const secs = value(m, 'floe_feed_batch_seconds_total', L);
  assert.ok(secs > 0 && secs < 30, `batch seconds ${secs}`);
  assert.equal(value(m, 'floe_feed_retries_total', L), 0);
  assert.equal(value(m, 'floe_feed_failures', L), 0);
  assert.equal(value(m, 'floe_feed_paused', L), 0);
  assert.equal(value(m, 'floe_feed_backlog_objects', L), 0);
  assert.equal(value(m, 'floe_feed_backlog_bytes', L), 0);
  const fresh = value(m, 'floe_table_freshness_seconds', { warehouse: 'default', namespace: 'ns', table: 's' });
  assert.ok(fresh >= 0 && fresh < 30, `freshness ${fresh}`);
  // Paused shows.
  assert.equal((await request(ctx.base, 'POST', `${F}/sig/pause`)).status, 200);
  assert.equal(value(await metrics(), 'floe_feed_paused', L), 1);
  // Pushes waiting show as backlog while paused.
  const body = '{"id": 100}\n';
  assert.equal((await request(ctx.base, 'POST', `${F}/sig/records`, { headers: { 'Content-Type': 'application/x-ndjson' }, body })).status, 202);
  const m2 = await metrics();
  assert.equal(value(m2, 'floe_feed_backlog_bytes', L), Buffer.byteLength(body));
  assert.equal(value(m2, 'floe_feed_backlog_requests', L), 1);
});

test('commits of `floe ingest` (another process) count in the table signals', async () => {
  const file = path.join(root, 'cli.csv');
  fs.writeFileSync(file, csv(0, 5));
  const r = await ingest(ctx, 'cli', [file], { args: ['--create'] });
  assert.equal(r.code, 0, show(r));
  const T = { warehouse: 'default', namespace: 'ns', table: 'cli' };
  const m = await metrics();
  assert.equal(value(m, 'floe_table_commits_total', T), 2, 'the create and the append');
  const fresh = value(m, 'floe_table_freshness_seconds', T);
  assert.ok(fresh >= 0 && fresh < 30, `freshness ${fresh}`);
  // Freshness grows while nothing lands.
  await new Promise((res) => setTimeout(res, 1100));
  assert.ok(value(await metrics(), 'floe_table_freshness_seconds', T) >= fresh + 1);
});
