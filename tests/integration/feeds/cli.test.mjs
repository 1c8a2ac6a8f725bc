// `floe feed`: create, list, show, pause, resume, replay (--force says what
// it does), delete, against a running floe; errors come back with the API's
// words and exit 1, usage errors exit 2.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runFloe, tmpDir, waitFor } from '../lib/harness.mjs';
import { startCatalog, createTable } from '../ingest/lib.mjs';
import { land, csv, tableIds, waitLedger } from './lib.mjs';

let ctx;
let root;
const feed = (...args) => runFloe(['feed', ...args, '--url', ctx.base]);

before(async () => {
  ctx = await startCatalog('feeds_cli');
  root = tmpDir('feeds-cli');
});

after(async () => {
  await ctx?.floe.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

test('floe feed: the whole life of a feed', async () => {
  const dir = path.join(root, 'in');
  fs.mkdirSync(dir);
  await createTable(ctx, 'c', [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 's', type: 'string', required: false },
  ]);
  const def = { name: 'c1', table: 'ns.c', source: { type: 'directory', path: dir }, format: 'csv', interval: 'PT1S' };
  const file = path.join(root, 'def.json');
  fs.writeFileSync(file, JSON.stringify(def));
  let r = feed('create', file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).definition.table, 'ns.c');
  r = feed('create', JSON.stringify({ ...def, name: 'c2' }));
  assert.equal(r.code, 0, r.stderr);
  r = feed('list');
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout).feeds.map((f) => f.name), ['c1', 'c2']);
  r = feed('delete', 'c2');
  assert.equal(r.code, 0, r.stderr);

  land(dir, 'a.csv', csv(0, 4));
  await waitLedger(ctx.dbUrl, 'c1', 1);
  r = feed('show', 'c1');
  assert.equal(r.code, 0, r.stderr);
  const shown = JSON.parse(r.stdout);
  assert.equal(shown['last-batches'][0].outcome, 'committed');
  assert.equal(shown['last-batches'][0]['rows-committed'], 4);

  assert.equal(JSON.parse(feed('pause', 'c1').stdout).state, 'paused');
  assert.equal(JSON.parse(feed('resume', 'c1').stdout).state, 'active');

  r = feed('replay', 'c1', '--from', 'a.csv', '--to', 'a.csv', '--force');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /AGAIN/, 'a forced replay says what it does');
  assert.equal(JSON.parse(r.stdout)['pending-replay'].force, true);
  await waitFor(async () => (await tableIds(ctx, 'c')).ids.length === 8, { what: 'the forced replay' });

  r = feed('delete', 'c1');
  assert.equal(r.code, 0, r.stderr);
  r = feed('show', 'c1');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /404: feed 'c1' does not exist/);
});

test('floe feed: refusals', () => {
  let r = feed('create', '{"name":"x","table":"ns.c","source":{"type":"push"},"format":"xml"}');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /400: .*format must be one of/);
  r = feed('show');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /usage/);
  r = feed('fly', 'x');
  assert.equal(r.code, 2);
  r = runFloe(['feed', 'list', '--url', 'http://127.0.0.1:1']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /127\.0\.0\.1:1/);
  r = runFloe(['feed', '--help']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /replay NAME/);
  // --token=VALUE is not a form it takes, and the refusal does not print the value
  r = runFloe(['feed', 'list', '--token=s3cr3t-t0ken-value']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unexpected argument '--token'/);
  assert.ok(!r.stderr.includes('s3cr3t'), r.stderr);
});
