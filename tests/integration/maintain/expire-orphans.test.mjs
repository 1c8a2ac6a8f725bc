// `floe maintain` expire and orphans on tables written by `floe ingest`:
// - expire removes the snapshots past the table's retention (min-snapshots-
//   to-keep, max-snapshot-age-ms) but never one a tag holds, through a
//   normal commit, then deletes exactly the manifest lists, manifests and
//   data files no kept snapshot reaches; --dry-run reports the same and
//   changes nothing;
// - orphans deletes unreferenced files older than floe.orphan-grace and
//   nothing else: not a young stray, not an old referenced file;
// - readers see the same rows before and after each action: DuckDB
//   read_parquet over the live files, and Floe's own reader (parquet_dump);
// - a property test over random histories (appends, tags, deletes of whole
//   manifests, random retention): after expiry every file any remaining
//   snapshot reaches still exists, and everything expiry deleted was reached
//   only by removed snapshots; and for orphans, over the same histories plus
//   strays of random ages, nothing referenced and nothing younger than the
//   grace is deleted, and every older stray is.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, createTable, loadTable, currentSnapshot, snapshotById, localPath, readAvro, tmpDir,
} from '../ingest/lib.mjs';
import { helpers } from './lib.mjs';
import { request, psql } from '../lib/harness.mjs';

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'name', type: 'string', required: false },
];

let ctx;
const dir = tmpDir('maintain');
let maintain;
let append;
let commit;
let tag;
let liveFiles;
let reached;
let rows;
let dropManifests;
let notifications;
let notified;

before(async () => {
  ctx = await startCatalog('maintain');
  ({ maintain, append, commit, tag, liveFiles, reached, rows, dropManifests, notifications, notified } = helpers(ctx, dir));
});

after(async () => {
  await ctx?.floe.stop();
});

const exists = (uri) => fs.existsSync(localPath(uri));

test('expire: retention and tags decide, freed files go, kept files stay, rows are unchanged', async () => {
  const name = 'events';
  await createTable(ctx, name, fields, {
    'history.expire.max-snapshot-age-ms': '1',
    'history.expire.min-snapshots-to-keep': '1',
  });
  const ids = [];
  for (let b = 0; b < 6; b++) ids.push(await append(name, [b * 10, b * 10 + 1, b * 10 + 2]));
  await tag(name, 'keep-me', ids[1]);
  let meta = (await loadTable(ctx, name)).metadata;
  // Snapshot 7 deletes batch 2's manifest (and so its data file).
  const batch2 = liveFiles(snapshotById(meta, ids[2])).filter((f) => !liveFiles(snapshotById(meta, ids[1])).includes(f));
  assert.equal(batch2.length, 1);
  const m2 = readAvro(snapshotById(meta, ids[2])['manifest-list']).records
    .map((r) => r.manifest_path).find((m) => readAvro(m).records.some((e) => e.data_file.file_path === batch2[0]));
  meta = (await dropManifests(name, meta, (r) => r.manifest_path === m2)).metadata;
  const head = currentSnapshot(meta);
  const before = await rows(head);
  assert.equal(before.length, 15);
  const tagRowsBefore = await rows(snapshotById(meta, ids[1]));
  const all = meta.snapshots.map((s) => reached(s));
  const keptReach = new Set([...reached(head), ...reached(snapshotById(meta, ids[1]))]);
  const freed = new Set();
  for (const s of all) for (const f of s) if (!keptReach.has(f)) freed.add(f);

  // Dry run: the same report, nothing changes.
  const dry = maintain(name, ['--dry-run', 'expire']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(dry.lines.length, 1);
  const d = dry.lines[0];
  assert.equal(d.action, 'expire');
  assert.equal(d.status, 'ok');
  assert.equal(d['dry-run'], true);
  assert.equal(d['snapshots-removed'], 5);
  assert.equal(d['manifest-lists-removed'], 5);
  assert.equal(d['manifests-removed'], 1);
  assert.equal(d['data-files-removed'], 1);
  assert.equal(d['files-removed'], freed.size);
  assert.ok(d['bytes-removed'] > 0);
  assert.equal((await loadTable(ctx, name)).metadata.snapshots.length, 8 - 1);
  for (const f of freed) assert.ok(exists(f), `dry run deleted ${f}`);

  const n0 = await notifications();
  const real = maintain(name, ['expire']);
  assert.equal(real.code, 0, real.stderr);
  await notified(n0); // the server's cache has dropped the version before the expiry
  const r = real.lines[0];
  assert.deepEqual([r['snapshots-removed'], r['files-removed'], r['bytes-removed']],
    [d['snapshots-removed'], d['files-removed'], d['bytes-removed']]);
  meta = (await loadTable(ctx, name)).metadata;
  assert.deepEqual(meta.snapshots.map((s) => String(s['snapshot-id'])).sort(),
    [String(ids[1]), String(head['snapshot-id'])].sort());
  assert.deepEqual(Object.keys(meta.refs).sort(), ['keep-me', 'main']);
  for (const f of freed) assert.ok(!exists(f), `${f} was freed but still exists`);
  for (const f of keptReach) assert.ok(exists(f), `${f} is kept but was deleted`);
  assert.deepEqual(await rows(currentSnapshot(meta)), before);
  assert.deepEqual(await rows(snapshotById(meta, ids[1])), tagRowsBefore);

  // Nothing left to expire: a no-op.
  const again = maintain(name, ['expire']);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.lines[0]['snapshots-removed'], 0);
  assert.equal(again.lines[0]['files-removed'], 0);
});

test('orphans: only unreferenced files older than the grace go', async () => {
  const name = 'orph';
  await createTable(ctx, name, fields);
  for (let b = 0; b < 3; b++) await append(name, [b]);
  let meta = (await loadTable(ctx, name)).metadata;
  const loc = localPath(meta.location);
  const head = currentSnapshot(meta);
  const before = await rows(head);
  const old = (Date.now() - 10 * 86400 * 1000) / 1000;
  const stray = (rel, ageSeconds) => {
    const p = path.join(loc, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, 'stray');
    const t = Date.now() / 1000 - ageSeconds;
    fs.utimesSync(p, t, t);
    return p;
  };
  const oldData = stray('data/killed-ingest-0001.parquet', 10 * 86400);
  const oldMeta = stray('metadata/orphan-m0.avro', 4 * 86400);
  const young = stray('data/in-flight.parquet', 60);
  // Every referenced file made old: age alone must not doom it.
  const refs = [...reached(head), ...meta['metadata-log'].map((e) => e['metadata-file'])];
  for (const f of refs) fs.utimesSync(localPath(f), old, old);

  const dry = maintain(name, ['--dry-run', 'orphans']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(dry.lines[0]['files-removed'], 2, dry.stdout);
  assert.equal(dry.lines[0]['grace-seconds'], 3 * 86400);
  assert.deepEqual(dry.lines[0].sample.map(localPath).sort(), [oldData, oldMeta].sort());
  assert.ok(fs.existsSync(oldData));

  const real = maintain(name, ['orphans']);
  assert.equal(real.code, 0, real.stderr);
  assert.equal(real.lines[0]['files-removed'], 2);
  assert.equal(real.lines[0]['bytes-removed'], 10);
  assert.ok(!fs.existsSync(oldData) && !fs.existsSync(oldMeta));
  assert.ok(fs.existsSync(young), 'a young stray stays');
  for (const f of refs) assert.ok(exists(f), `${f} is referenced but was deleted`);
  meta = (await loadTable(ctx, name)).metadata;
  assert.deepEqual(await rows(currentSnapshot(meta)), before);

  // A shorter grace from the table property; below PT1H it is raised to PT1H.
  await commit(name, { requirements: [], updates: [{ action: 'set-properties', updates: { 'floe.orphan-grace': 'PT2H' } }] });
  const threeHours = stray('data/three-hours.parquet', 3 * 3600);
  const oneHour = stray('data/one-hour.parquet', 3600 - 120);
  let res = maintain(name, ['orphans']);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.lines[0]['grace-seconds'], 7200);
  assert.ok(!fs.existsSync(threeHours) && fs.existsSync(oneHour) && fs.existsSync(young));
  await commit(name, { requirements: [], updates: [{ action: 'set-properties', updates: { 'floe.orphan-grace': 'PT1S' } }] });
  res = maintain(name, ['orphans']);
  assert.equal(res.lines[0]['grace-seconds'], 3600);
  assert.ok(fs.existsSync(oneHour));

  await commit(name, { requirements: [], updates: [{ action: 'set-properties', updates: { 'floe.orphan-grace': 'three days' } }] });
  res = maintain(name, ['orphans']);
  assert.equal(res.code, 3, res.stdout);
  assert.equal(res.lines[0].status, 'failed');
  assert.match(res.lines[0].error, /floe.orphan-grace 'three days' is not a duration/);
});

test('orphans: the files of a table that left with its files kept are never a new table\'s orphans', async () => {
  // Dropped without purge (or unregistered), a table's files stay for whoever
  // registers them; a new table of the same name lives at the same place and
  // must not take them for its orphans.
  const name = 'reborn';
  await createTable(ctx, name, fields);
  await append(name, [1]);
  await append(name, [2]);
  const first = (await loadTable(ctx, name)).metadata;
  const loc = localPath(first.location);
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
  const oldFiles = walk(loc);
  assert.ok(oldFiles.length >= 6, oldFiles.join(' '));
  const tpath = `${ctx.p}/namespaces/${ctx.ns.join('%1F')}/tables/${name}`;
  assert.equal((await request(ctx.base, 'DELETE', `${tpath}?purgeRequested=false`)).status, 204);
  await createTable(ctx, name, fields);
  await append(name, [3]);
  await commit(name, { requirements: [], updates: [{ action: 'set-properties', updates: { 'floe.orphan-grace': 'PT1H' } }] });
  const meta = (await loadTable(ctx, name)).metadata;
  assert.equal(meta.location, first.location, 'the new table lives where the old one did');
  // As if the drop was two days ago: the old files are ten days old, a stray
  // of the new table one day.
  psql(ctx.dbUrl, `UPDATE retired_location SET retired_at = now() - interval '2 days'`);
  const ago = (days) => Date.now() / 1000 - days * 86400;
  for (const f of oldFiles) fs.utimesSync(f, ago(10), ago(10));
  const stray = path.join(loc, 'data', 'stray-of-the-new-table.parquet');
  fs.writeFileSync(stray, 'stray');
  fs.utimesSync(stray, ago(1), ago(1));

  const res = maintain(name, ['orphans']);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.lines[0]['files-removed'], 1, res.stdout);
  assert.deepEqual(res.lines[0].sample.map(localPath), [stray]);
  assert.equal(res.lines[0]['files-of-retired-tables-kept'], oldFiles.length, res.stdout);
  for (const f of oldFiles) assert.ok(fs.existsSync(f), `${f} of the dropped table was deleted`);

  // An unregister retires the location too; a drop with purge does not, and
  // its purge deletes only what is newer than the retirements.
  const un = await request(ctx.base, 'POST', `${tpath}/unregister`);
  assert.equal(un.status, 200, un.text);
  const retired = () => psql(ctx.dbUrl, `SELECT count(*) FROM retired_location WHERE location = '${meta.location}'`);
  assert.equal(retired(), '2');
  const secondFiles = walk(loc).filter((f) => !oldFiles.includes(f));
  psql(ctx.dbUrl, `UPDATE retired_location SET retired_at = now() - interval '2 days'`);
  for (const f of secondFiles) fs.utimesSync(f, ago(3), ago(3));
  await createTable(ctx, name, fields);
  await append(name, [4]);
  const thirdFiles = walk(loc).filter((f) => !oldFiles.includes(f) && !secondFiles.includes(f));
  assert.ok(thirdFiles.length >= 3, thirdFiles.join(' '));
  assert.equal((await request(ctx.base, 'DELETE', `${tpath}?purgeRequested=true`)).status, 204);
  assert.equal(retired(), '2');
  for (let i = 0; psql(ctx.dbUrl, "SELECT state FROM maintenance_job WHERE kind = 'purge' ORDER BY id DESC LIMIT 1") !== 'done'; i++) {
    if (i > 400) throw new Error('the purge job did not finish in 20 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const f of thirdFiles) assert.ok(!fs.existsSync(f), `${f} of the purged table is gone`);
  for (const f of [...oldFiles, ...secondFiles]) assert.ok(fs.existsSync(f), `${f} of a retired table stays`);
});

test('maintain: the policy picks the actions; usage errors exit 2; unknown tables fail', async () => {
  const name = 'policy';
  await createTable(ctx, name, fields, { 'floe.maintenance.actions': 'orphans' });
  await append(name, [1]);
  let r = maintain(name, ['--dry-run']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.lines.map((l) => l.action), ['orphans']);
  r = maintain(name, ['--dry-run', 'expire', 'orphans']);
  assert.deepEqual(r.lines.map((l) => l.action), ['expire', 'orphans']);
  r = maintain(name, ['manifests']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.lines[0].status, 'ok', r.lines[0].error);
  assert.equal(r.lines[0]['manifests-replaced'], 0, 'one manifest: nothing to merge');
  await createTable(ctx, 'badpolicy', fields, { 'floe.maintenance.actions': 'expire, vacuum' });
  r = maintain('badpolicy', []);
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.lines[0].error, /floe.maintenance.actions: unknown maintenance action 'vacuum'/);
  r = maintain(name, ['vacuum']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown action 'vacuum'/);
  r = maintain('nope', ['expire']);
  assert.equal(r.code, 1);
  assert.match(r.lines[0].error, /does not exist/);
});

// A tiny seeded generator (mulberry32).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A random history on table name: appends, tags of random snapshots, and
// commits that drop random manifests, with pauses that age some snapshots.
async function randomHistory(name, rand) {
  let next = 0;
  const steps = 6 + Math.floor(rand() * 5);
  for (let s = 0; s < steps; s++) {
    const meta = (await loadTable(ctx, name)).metadata;
    const x = rand();
    if (x < 0.6 || !currentSnapshot(meta)) {
      await append(name, [next++, next++]);
    } else if (x < 0.8) {
      const snaps = meta.snapshots;
      await tag(name, `t${s}`, snaps[Math.floor(rand() * snaps.length)]['snapshot-id']);
    } else {
      const drops = meta.snapshots.length > 0 ? Array.from({ length: 64 }, () => rand() < 0.4) : [];
      let k = 0;
      await dropManifests(name, meta, () => drops[k++ % 64]);
    }
    if (rand() < 0.3) await new Promise((r) => setTimeout(r, 300));
  }
}

const seeds = process.env.FLOE_TEST_SEED ? [Number(process.env.FLOE_TEST_SEED)]
  : Array.from({ length: Number(process.env.FLOE_TEST_SEED_COUNT ?? 3) }, (_, i) => 1000 + i);

for (const seed of seeds) {
  test(`expire property (seed ${seed}): no file a kept snapshot or tag reaches is ever deleted`, async () => {
    const rand = rng(seed);
    const name = `prop_${seed}`;
    await createTable(ctx, name, fields, {
      'history.expire.max-snapshot-age-ms': String(1 + Math.floor(rand() * 3) * 400),
      'history.expire.min-snapshots-to-keep': String(1 + Math.floor(rand() * 3)),
    });
    await randomHistory(name, rand);
    let meta = (await loadTable(ctx, name)).metadata;
    const before = new Map(meta.snapshots.map((s) => [String(s['snapshot-id']), reached(s)]));
    const headRows = await rows(currentSnapshot(meta));
    const res = maintain(name, ['expire']);
    assert.equal(res.code, 0, `${res.stderr}\n${res.stdout}`);
    // The expiry committed in another process: wait until the server's
    // cache has heard of it (NOTIFY) before judging what was kept.
    const removed = res.lines[0]['snapshots-removed'];
    for (let i = 0; ; i++) {
      meta = (await loadTable(ctx, name)).metadata;
      if (Number(removed) === 0 || meta.snapshots.length < before.size || i >= 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const keptIds = new Set(meta.snapshots.map((s) => String(s['snapshot-id'])));
    for (const ref of Object.values(meta.refs)) assert.ok(keptIds.has(String(ref['snapshot-id'])), 'refs point at kept snapshots');
    const keptFiles = new Set();
    for (const id of keptIds) for (const f of before.get(id)) keptFiles.add(f);
    for (const f of keptFiles) assert.ok(exists(f), `seed ${seed}: ${f} is reached by a kept snapshot but was deleted`);
    const gone = new Set();
    for (const [id, files] of before) {
      if (keptIds.has(id)) continue;
      for (const f of files) if (!keptFiles.has(f)) gone.add(f);
    }
    for (const f of gone) assert.ok(!exists(f), `seed ${seed}: ${f} was freed but still exists`);
    assert.equal(res.lines[0]['files-removed'], gone.size, res.stdout);
    assert.equal(res.lines[0]['snapshots-removed'], before.size - keptIds.size);
    assert.deepEqual(await rows(currentSnapshot(meta)), headRows);
  });
}

for (const seed of seeds) {
  test(`orphans property (seed ${seed}): no referenced or young file is ever deleted, every old stray is`, async () => {
    const rand = rng(seed + 7919);
    const name = `oprop_${seed}`;
    await createTable(ctx, name, fields, { 'history.expire.min-snapshots-to-keep': '1' });
    await randomHistory(name, rand);
    if (rand() < 0.5) {
      const count = (await loadTable(ctx, name)).metadata.snapshots.length;
      const ex = maintain(name, ['expire']);
      assert.equal(ex.code, 0, ex.stderr);
      // Committed in another process: wait for the server's cache (NOTIFY).
      for (let i = 0; Number(ex.lines[0]['snapshots-removed']) > 0 && i < 200; i++) {
        if ((await loadTable(ctx, name)).metadata.snapshots.length < count) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const res0 = await loadTable(ctx, name);
    const meta = res0.metadata;
    const loc = localPath(meta.location);
    // Everything the table references, made old: age alone must not doom it.
    const refs = new Set([res0['metadata-location'], ...meta['metadata-log'].map((e) => e['metadata-file'])]);
    for (const snap of meta.snapshots) for (const f of reached(snap)) refs.add(f);
    const old = Date.now() / 1000 - 30 * 86400;
    for (const f of refs) fs.utimesSync(localPath(f), old, old);
    // Strays of random ages around the default grace (P3D), in data/ and metadata/.
    const strays = [];
    const n = 3 + Math.floor(rand() * 6);
    for (let i = 0; i < n; i++) {
      const rel = `${rand() < 0.5 ? 'data' : 'metadata'}/stray-${seed}-${i}.${rand() < 0.5 ? 'parquet' : 'avro'}`;
      const p = path.join(loc, rel);
      const age = rand() < 0.5 ? 3 * 86400 + 600 + Math.floor(rand() * 10 * 86400) : Math.floor(rand() * (3 * 86400 - 600));
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, 'stray');
      const t = Date.now() / 1000 - age;
      fs.utimesSync(p, t, t);
      strays.push({ p, oldEnough: age > 3 * 86400 });
    }
    const res = maintain(name, ['orphans']);
    assert.equal(res.code, 0, `${res.stderr}\n${res.stdout}`);
    for (const f of refs) assert.ok(exists(f), `seed ${seed}: ${f} is referenced but was deleted`);
    for (const { p, oldEnough } of strays) {
      assert.equal(fs.existsSync(p), !oldEnough, `seed ${seed}: ${p} (${oldEnough ? 'older' : 'younger'} than the grace)`);
    }
    assert.equal(res.lines[0]['files-removed'], strays.filter((x) => x.oldEnough).length, res.stdout);
  });
}
