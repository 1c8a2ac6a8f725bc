// `floe maintain` on an S3 warehouse (moto with signature checks): expiry
// deletes the freed manifest lists on S3 (batch delete) and nothing a kept
// snapshot reaches; orphan cleanup lists every object of the table with its
// LastModified (an object written just now is never old enough, so nothing
// goes), then deletes nothing referenced; compaction reads the small files
// from S3 in ranges and writes the new one back (a multipart upload), rows
// unchanged for Floe's reader.  Skipped without moto_server.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { request, floeBin, tmpDir } from '../lib/harness.mjs';
import { expectJson } from '../lib/checks.mjs';
import { NO_S3 } from '../lib/moto.mjs';
import { startS3Catalog, s3Profile, createWarehouse } from './lib.mjs';
import { buildDir } from '../write-path/samples.mjs';

let ctx = null;
const WH = 'lake';
const P = `/v1/${WH}`;
const dir = tmpDir('s3-maintain');

before(async () => {
  ctx = await startS3Catalog('s3maint');
  if (!ctx) return;
  expectJson(await createWarehouse(ctx.base, WH, s3Profile(ctx.s3, ctx.bucket, 'wh')), 201);
  expectJson(await request(ctx.base, 'POST', `${P}/namespaces`, { body: { namespace: ['ns'] } }), 200);
  expectJson(await request(ctx.base, 'POST', `${P}/namespaces/ns/tables`, {
    body: {
      name: 't',
      schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', type: 'long', required: false }] },
      properties: { 'history.expire.max-snapshot-age-ms': '1', 'history.expire.min-snapshots-to-keep': '1' },
    },
  }), 200);
});
after(async () => {
  if (ctx) await ctx.stop();
});

const skip = (t) => {
  if (ctx) return false;
  t.skip(NO_S3);
  return true;
};
const keys = async (prefix) => (await ctx.s3.list(ctx.bucket, prefix)).map((o) => o.key).sort();

// Runs floe in process against the suite's database, with the S3 keys.
function floe(args, positional = []) {
  const childEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('FLOE_')) childEnv[k] = v;
  const argv = [...args, '--database-url', ctx.dbUrl, '--warehouse', WH, '--log-level', 'error', ...positional];
  const proc = spawn(floeBin, argv, { env: { ...childEnv, ...ctx.env } });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve) => proc.on('close', (code) => resolve({
    code, stderr, lines: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l.replace(/:(\d{16,})/g, ':"$1"'))),
  })));
}

test('expire and orphans on S3: freed lists deleted, everything referenced stays', async (t) => {
  if (skip(t)) return;
  for (let b = 0; b < 3; b++) {
    const f = path.join(dir, `b${b}.csv`);
    fs.writeFileSync(f, `a\n${b}\n${b + 10}\n`);
    const r = await floe(['ingest', '--table', 'ns.t'], [f]);
    assert.equal(r.code, 0, r.stderr);
  }
  const before = await keys('wh/ns/t/');
  const lists = before.filter((k) => /\/metadata\/snap-/.test(k));
  assert.equal(lists.length, 3, before.join('\n'));

  let r = await floe(['maintain', '--table', 'ns.t'], ['expire']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.lines[0]['snapshots-removed'], 2);
  assert.equal(r.lines[0]['manifest-lists-removed'], 2);
  assert.equal(r.lines[0]['data-files-removed'], 0, 'appends carry every data file forward');
  const after1 = await keys('wh/ns/t/');
  assert.deepEqual(before.filter((k) => !after1.includes(k)).sort(), lists.slice().sort().filter((k) => !after1.includes(k)));
  assert.equal(after1.filter((k) => /\/metadata\/snap-/.test(k)).length, 1);
  const m = expectJson(await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/t`), 200).metadata;
  assert.equal(m.snapshots.length, 1);
  assert.ok(after1.includes(m.snapshots[0]['manifest-list'].replace(`s3://${ctx.bucket}/`, '')));
  assert.equal(after1.filter((k) => k.endsWith('.parquet')).length, 3, 'every data file is still live');

  await ctx.s3.put(ctx.bucket, 'wh/ns/t/data/stray.parquet', Buffer.from('stray'));
  r = await floe(['maintain', '--table', 'ns.t'], ['orphans']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.lines[0]['objects-listed'], after1.length + 1, 'every object listed, with its LastModified');
  assert.equal(r.lines[0]['files-removed'], 0, 'nothing is older than the grace');
  assert.deepEqual(await keys('wh/ns/t/'), [...after1, 'wh/ns/t/data/stray.parquet'].sort());
});

// The current snapshot's summary and the values of column a in each data
// file of the table, read by Floe's reader (parquet_dump) from downloaded copies.
// The server's table cache learns of in-process commits by NOTIFY: load
// until the current snapshot's operation is op (at most 10 s).  (Ids are
// compared as the JSON numbers they parse to, rounded alike.)
async function liveValues(op) {
  let summary;
  for (let i = 0; ; i++) {
    const m = expectJson(await request(ctx.base, 'GET', `${P}/namespaces/ns/tables/t`), 200).metadata;
    summary = m.snapshots.find((s) => s['snapshot-id'] === m['current-snapshot-id']).summary;
    if (summary.operation === op) break;
    if (i >= 200) throw new Error(`the table never showed a ${op} snapshot`);
    await new Promise((res) => setTimeout(res, 50));
  }
  const out = [];
  // (not the stray object of the orphans test, which is no Parquet file)
  const keysNow = (await keys('wh/ns/t/data/')).filter((k) => k.endsWith('.parquet') && !k.endsWith('stray.parquet'));
  for (const k of keysNow) {
    const local = path.join(dir, path.basename(k));
    fs.writeFileSync(local, await ctx.s3.get(ctx.bucket, k));
    const r = spawnSync(path.join(buildDir, 'tests', 'unit', 'storage', 'parquet_dump'), [local], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    out.push({ key: k, rows: r.stdout.split('\n').filter(Boolean).slice(1).map((l) => JSON.parse(l)[0]) });
  }
  return { summary, out };
}

test('compact on S3: the small files become one, rows unchanged', async (t) => {
  if (skip(t)) return;
  const r = await floe(['maintain', '--table', 'ns.t'], ['compact']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.lines[0].status, 'ok', r.lines[0].error);
  assert.equal(r.lines[0]['files-removed'], 3);
  assert.equal(r.lines[0]['files-added'], 1);
  const { summary, out } = await liveValues('replace');
  assert.equal(summary['total-data-files'], '1');
  assert.equal(summary['total-records'], '6');
  // The old files stay (for older snapshots) until expiry; the new one holds every row.
  const added = out.filter((o) => o.key.endsWith('-compact.parquet'));
  assert.equal(added.length, 1);
  assert.deepEqual(added[0].rows.map(String).sort((a, b) => a - b), ['0', '1', '2', '10', '11', '12']);
});
