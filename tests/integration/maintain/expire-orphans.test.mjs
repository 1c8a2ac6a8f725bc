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
//   only by removed snapshots.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import avro from 'avsc';
import { bigLong } from '../lib/avro.mjs';
import {
  startCatalog, createTable, loadTable, ingest, show, currentSnapshot, snapshotById, localPath, readAvro,
  duck, sqlStr, tmpDir, parseJsonBig,
} from '../ingest/lib.mjs';
import { call, tablePath } from '../tables/lib.mjs';
import { floeBin } from '../lib/harness.mjs';
import { buildDir } from '../write-path/samples.mjs';

const dumpBin = path.join(buildDir, 'tests', 'unit', 'storage', 'parquet_dump');
const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'name', type: 'string', required: false },
];

let ctx;
const dir = tmpDir('maintain');

before(async () => {
  ctx = await startCatalog('maintain');
});

after(async () => {
  await ctx?.floe.stop();
});

function maintain(name, args) {
  const argv = ['maintain', '--table', [...ctx.ns, name].join('.'), '--database-url', ctx.dbUrl,
    '--log-level', 'error', ...args];
  const r = spawnSync(floeBin, argv, { encoding: 'utf8' });
  const lines = r.stdout.split('\n').filter(Boolean).map((l) => parseJsonBig(l));
  return { code: r.status, signal: r.signal, lines, stdout: r.stdout, stderr: r.stderr, cmd: `floe ${argv.join(' ')}` };
}

let batch = 0;
async function append(name, rows) {
  const file = path.join(dir, `b${batch++}.csv`);
  fs.writeFileSync(file, `id,name\n${rows.map((i) => `${i},n${i}`).join('\n')}\n`);
  const r = await ingest(ctx, name, [file]);
  assert.equal(r.code, 0, show(r));
  return r.out['snapshot-id'];
}

// JSON with BigInt values written as exact integer literals (snapshot ids are 63-bit).
const exactJson = (v) => JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `__big__${x}` : x))
  .replace(/"__big__(-?\d+)"/g, '$1');

async function commit(name, body, { expect = [200] } = {}) {
  const res = await call(ctx.base, 'POST', tablePath(ctx.p, ctx.ns, name), { body: exactJson(body), expect });
  return res.status === 200 ? parseJsonBig(res.text) : null;
}

async function tag(name, tagName, snapshotId) {
  return commit(name, {
    requirements: [],
    updates: [{ action: 'set-snapshot-ref', 'ref-name': tagName, type: 'tag', 'snapshot-id': BigInt(snapshotId) }],
  });
}

// Live data files of a snapshot: manifest list -> manifests -> entries not DELETED.
function liveFiles(snapshot) {
  const out = [];
  for (const le of readAvro(snapshot['manifest-list']).records) {
    for (const e of readAvro(le.manifest_path).records) {
      if (e.status !== '2') out.push(e.data_file.file_path);
    }
  }
  return out.sort();
}

// Every file a snapshot reaches: its list, its manifests, their files.
function reached(snapshot) {
  const out = new Set([snapshot['manifest-list']]);
  for (const le of readAvro(snapshot['manifest-list']).records) {
    out.add(le.manifest_path);
    for (const e of readAvro(le.manifest_path).records) if (e.status !== '2') out.add(e.data_file.file_path);
  }
  return out;
}

// The table's rows as DuckDB and Floe's reader see them (sorted by id).
async function rows(snapshot) {
  const files = liveFiles(snapshot).map(localPath);
  if (files.length === 0) return { duck: [], floe: [] };
  const con = await duck();
  const sql = `SELECT id::VARCHAR AS id, name FROM read_parquet([${files.map(sqlStr).join(', ')}]) ORDER BY id::BIGINT`;
  const duckRows = (await con.runAndReadAll(sql)).getRowsJson().map((r) => [String(r[0]), r[1]]);
  const floeRows = [];
  for (const f of files) {
    const r = spawnSync(dumpBin, [f], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    floeRows.push(...r.stdout.split('\n').filter(Boolean).slice(1).map((l) => JSON.parse(l)));
  }
  floeRows.sort((a, b) => Number(BigInt(a[0]) - BigInt(b[0])));
  assert.deepEqual(floeRows, duckRows, 'Floe reader and DuckDB agree');
  return duckRows;
}

// A snapshot that drops whole manifests: its list is the parent's list
// without the manifests `drop` selects (a delete of every file in them).
async function dropManifests(name, meta, drop, attempt = 0) {
  const parent = currentSnapshot(meta);
  const src = localPath(parent['manifest-list']);
  const decoded = await new Promise((resolve, reject) => {
    const recs = [];
    let type;
    let header;
    avro.createFileDecoder(src, {
      parseHook: (schema) => avro.Type.forSchema(schema, { wrapUnions: false, registry: { long: bigLong } }),
    })
      .on('metadata', (t, codec, h) => { type = t; header = h; })
      .on('data', (r) => recs.push(r))
      .on('error', reject)
      .on('end', () => resolve({ type, header, recs }));
  });
  const id = BigInt(crypto.randomInt(1, 2 ** 47)) * 1024n;
  const seq = BigInt(meta['last-sequence-number']) + 1n;
  const kept = decoded.recs.filter((r) => !drop(r));
  const listPath = `${localPath(meta.location)}/metadata/snap-${id}-drop.avro`;
  // The encoder writes its own avro.schema and avro.codec.
  const metaOut = Object.fromEntries(Object.entries(decoded.header.meta).filter(([k]) => !k.startsWith('avro.')));
  metaOut['snapshot-id'] = Buffer.from(String(id));
  metaOut['parent-snapshot-id'] = Buffer.from(String(parent['snapshot-id']));
  metaOut['sequence-number'] = Buffer.from(String(seq));
  await new Promise((resolve, reject) => {
    const enc = new avro.streams.BlockEncoder(decoded.type, { codec: 'null', metadata: metaOut, writeHeader: 'always' });
    const out = fs.createWriteStream(listPath);
    enc.on('error', reject).pipe(out).on('error', reject).on('finish', resolve);
    for (const r of kept) enc.write(r);
    enc.end();
  });
  // The server's table cache learns of `floe ingest` commits by NOTIFY, so a
  // load right after one may be stale: a 409 means reload and retry, as a
  // client would.
  const done = await commit(name, {
    requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': BigInt(parent['snapshot-id']) }],
    updates: [
      {
        action: 'add-snapshot',
        snapshot: {
          'snapshot-id': id,
          'parent-snapshot-id': BigInt(parent['snapshot-id']),
          'sequence-number': seq,
          'timestamp-ms': Date.now(),
          'manifest-list': `file://${listPath}`,
          summary: { operation: 'delete' },
          'schema-id': 0,
        },
      },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id },
    ],
  }, { expect: [200, 409] });
  if (done === null) {
    fs.rmSync(listPath);
    if (attempt >= 10) throw new Error('dropManifests: 10 conflicts in a row');
    await new Promise((r) => setTimeout(r, 50));
    return dropManifests(name, (await loadTable(ctx, name)).metadata, drop, attempt + 1);
  }
  return done;
}

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

  const real = maintain(name, ['expire']);
  assert.equal(real.code, 0, real.stderr);
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

test('maintain: the policy picks the actions; usage errors exit 2; unknown tables fail', async () => {
  const name = 'policy';
  await createTable(ctx, name, fields, { 'floe.maintenance.actions': 'orphans' });
  await append(name, [1]);
  let r = maintain(name, ['--dry-run']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.lines.map((l) => l.action), ['orphans']);
  r = maintain(name, ['--dry-run', 'expire', 'orphans']);
  assert.deepEqual(r.lines.map((l) => l.action), ['expire', 'orphans']);
  r = maintain(name, ['compact']);
  assert.equal(r.code, 1);
  assert.equal(r.lines[0].status, 'failed');
  assert.match(r.lines[0].error, /compact is not implemented/);
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
    let meta = (await loadTable(ctx, name)).metadata;
    const before = new Map(meta.snapshots.map((s) => [String(s['snapshot-id']), reached(s)]));
    const headRows = await rows(currentSnapshot(meta));
    const res = maintain(name, ['expire']);
    assert.equal(res.code, 0, `${res.stderr}\n${res.stdout}`);
    meta = (await loadTable(ctx, name)).metadata;
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
