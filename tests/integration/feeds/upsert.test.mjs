// Upsert feeds (copy-on-write): random interleavings of inserts and updates
// land through a directory feed in mode upsert, several objects per batch
// and duplicate keys inside one batch; after every round DuckDB (over the
// live data files of the current snapshot) and icebird (the whole table,
// manifests and all) read exactly the model's rows: a Map of key -> the
// latest row.  A plain append of `floe ingest` racing the upsert batches is
// not lost.  Rows with a null key are dead-lettered naming the key column.
// A definition in mode upsert on a table without identifier fields is a 400;
// create-table with "key" makes those columns the new table's identifier
// fields.  On a table partitioned on a column outside the key, a key's new
// row may land in another partition: its old row leaves the old one.
// Seeded: a failure prints the seed that replays it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { icebergRead } from 'icebird';
import { psql, request, waitFor } from '../lib/harness.mjs';
import { expectError } from '../lib/checks.mjs';
import {
  startCatalog, createTable, loadTable, ingest, show, snapshotFiles, currentSnapshot, localPath, duck, sqlStr,
  seededRandom, tmpDir,
} from '../ingest/lib.mjs';
import {
  F, land, createFeed, ledger, waitLedger, routeFileFetch, checkRows, createKeyed as createKeyedTable,
} from './lib.mjs';

const SEED = Number(process.env.UPSERT_SEED ?? 20261201);
let ctx;
let root;
let unroute;

before(async () => {
  ctx = await startCatalog('feeds_upsert');
  root = tmpDir('feeds-upsert');
  unroute = await routeFileFetch();
});

after(async () => {
  await unroute?.();
  await ctx?.floe.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

const createKeyed = (name) => createKeyedTable(ctx, name);
const byKey = (a, b) => (BigInt(a[0]) < BigInt(b[0]) ? -1 : BigInt(a[0]) > BigInt(b[0]) ? 1 : 0);
const checkTable = (name, model, what) => checkRows(ctx, name, model, ['id', 'v', 'n'], `${what} (seed ${SEED})`);

test('random inserts and updates: DuckDB and icebird read the latest row per key, a racing append is kept', async () => {
  const rnd = seededRandom(SEED);
  const pick = (n) => Math.floor(rnd() * n);
  const dir = path.join(root, 'kv');
  fs.mkdirSync(dir);
  await createKeyed('kv');
  await createFeed(ctx.base, {
    name: 'kv', table: 'ns.kv', source: { type: 'directory', path: dir, glob: '*.ndjson' },
    format: 'ndjson', mode: 'upsert', interval: 'PT1S', 'on-error': 'dead-letter', batch: { 'max-objects': 3 },
  });
  const model = new Map();
  let objects = 0;
  let nullKeys = 0;
  let appendId = 1000000;
  const cliBatches = new Set(); // the racing appends' batch ids: theirs carry no watermark
  for (let round = 0; round < 6; round++) {
    const nobj = 1 + pick(4);
    const racing = round === 2 || round === 4;
    let appended = null;
    for (let k = 0; k < nobj; k++) {
      const rows = [];
      const nrows = 3 + pick(25);
      for (let i = 0; i < nrows; i++) {
        // keys from a small range: many updates, duplicates inside a batch
        const id = pick(80);
        rows.push({ id, v: `r${round}o${k}i${i}-${pick(1000)}`, n: rnd() < 0.2 ? null : pick(1 << 30) });
      }
      if (rnd() < 0.3) {
        rows.splice(pick(rows.length), 0, { id: null, v: 'no key', n: 1 });
        nullKeys++;
      }
      for (const r of rows) if (r.id !== null) model.set(r.id, r);
      land(dir, `r${String(round).padStart(2, '0')}-${k}.ndjson`,
        `${rows.map((r) => JSON.stringify(r.n === null ? { id: r.id, v: r.v } : r)).join('\n')}\n`);
      objects++;
      if (racing && k === 0) {
        // a plain append (the CLI, in process) while the feed works
        const file = path.join(root, `append-${round}.csv`);
        const extra = [];
        for (let i = 0; i < 20; i++) extra.push({ id: appendId++, v: `append${round}-${i}`, n: i });
        fs.writeFileSync(file, `id,v,n\n${extra.map((r) => `${r.id},${r.v},${r.n}`).join('\n')}\n`);
        for (const r of extra) model.set(r.id, r);
        appended = ingest(ctx, 'kv', [file]);
      }
    }
    if (appended) {
      const r = await appended;
      assert.equal(r.code, 0, show(r));
      assert.equal(r.out.status, 'committed', show(r));
      cliBatches.add(r.out['batch-id']);
    }
    await waitLedger(ctx.dbUrl, 'kv', objects);
    const meta = await checkTable('kv', model, `after round ${round}`);
    const cur = currentSnapshot(meta);
    // A feed batch names its watermark; the racing CLI append (which may commit last) has none.
    if (cur.summary['floe.batch-id'] && !cliBatches.has(cur.summary['floe.batch-id'])) {
      assert.match(cur.summary['floe.watermark'], /^\d{4}-/, `snapshot ${cur['snapshot-id']} after round ${round}`);
    }
  }
  // Updates were real: some snapshots overwrote files, and the summaries add up.
  const meta = (await loadTable(ctx, 'kv')).metadata;
  const ops = meta.snapshots.map((s) => s.summary.operation);
  assert.ok(ops.includes('overwrite'), `some batch replaced rows: ${ops}`);
  for (const s of meta.snapshots.filter((x) => x.summary.operation === 'overwrite')) {
    assert.ok(Number(s.summary['deleted-data-files']) > 0, JSON.stringify(s.summary));
    assert.ok(s.summary['floe.batch-id'], 'an upsert snapshot names its batch');
  }
  assert.equal(Number(currentSnapshot(meta).summary['total-records']), model.size, 'total-records is the model size');
  assert.ok(ledger(ctx.dbUrl, 'kv').every((o) => o.outcome === 'committed'));
  // Null keys were dead-lettered, naming the key column.
  if (nullKeys > 0) {
    const reasons = psql(ctx.dbUrl, `SELECT location FROM feed_dead_letter d JOIN feed f ON f.id = d.feed_id
      WHERE f.name = 'kv' AND NOT whole_object`).split('\n').filter(Boolean);
    assert.ok(reasons.length > 0, 'null-key rows are dead-lettered');
    const text = reasons.map((l) => fs.readFileSync(`${l}.errors.ndjson`, 'utf8')).join('');
    assert.match(text, /key column 'id'/);
    assert.equal(text.trim().split('\n').length, nullKeys, 'one reason per null-key row');
  }
});

test('mode upsert needs identifier fields; create-table takes the key from the definition', async () => {
  await createTable(ctx, 'nokey', [{ id: 1, name: 'id', type: 'long', required: true }]);
  const dir = path.join(root, 'k2');
  fs.mkdirSync(dir);
  const src = { type: 'directory', path: dir, glob: '*.csv' };
  expectError(await request(ctx.base, 'POST', F, {
    body: { name: 'nokey', table: 'ns.nokey', source: src, format: 'csv', mode: 'upsert' },
  }), 400, 'BadRequestException', 'identifier');
  expectError(await request(ctx.base, 'POST', F, {
    body: { name: 'k2', table: 'ns.k2', source: src, format: 'csv', mode: 'upsert', 'create-table': true },
  }), 400, 'BadRequestException', 'key');
  expectError(await request(ctx.base, 'POST', F, {
    body: { name: 'k2', table: 'ns.k2', source: src, format: 'csv', key: ['id'], 'create-table': true },
  }), 400, 'BadRequestException', 'upsert');
  await createFeed(ctx.base, {
    name: 'k2', table: 'ns.k2', source: src, format: 'csv', mode: 'upsert', key: ['id'],
    'create-table': true, interval: 'PT1S',
  });
  land(dir, 'a.csv', 'id,v,n\n1,a,1\n2,b,2\n1,c,3\n');
  await waitLedger(ctx.dbUrl, 'k2', 1);
  land(dir, 'b.csv', 'id,v,n\n2,d,4\n3,e,5\n');
  await waitLedger(ctx.dbUrl, 'k2', 2);
  const meta = (await loadTable(ctx, 'k2')).metadata;
  const schema = meta.schemas.find((s) => s['schema-id'] === meta['current-schema-id']);
  assert.deepEqual(schema['identifier-field-ids'], [schema.fields.find((f) => f.name === 'id').id]);
  assert.equal(schema.fields.find((f) => f.name === 'id').required, true);
  const model = new Map([[1, { id: 1, v: 'c', n: 3 }], [2, { id: 2, v: 'd', n: 4 }], [3, { id: 3, v: 'e', n: 5 }]]);
  await checkTable('k2', model, 'of the created table');
  const f = (await request(ctx.base, 'GET', `${F}/k2`)).json;
  assert.equal(f.definition.mode, 'upsert');
  assert.deepEqual(f.definition.key, ['id']);

  // Pushes to an upsert feed take the same path: two pushes, one group commit or two.
  for (const body of ['{"id":3,"v":"f","n":6}\n{"id":4,"v":"g","n":7}\n',
    '{"id":4,"v":"h","n":8}\n{"id":1,"v":"i","n":9}\n']) {
    const res = await request(ctx.base, 'POST', `${F}/k2/records`, {
      headers: { 'Content-Type': 'application/x-ndjson' }, body,
    });
    assert.equal(res.status, 202, res.text);
  }
  await waitFor(() => psql(ctx.dbUrl, 'SELECT count(*) FROM feed_spool WHERE batch_id IS NULL') === '0',
    { timeoutMs: 20000, what: 'the pushes to land' });
  model.set(3, { id: 3, v: 'f', n: 6 });
  model.set(4, { id: 4, v: 'h', n: 8 });
  model.set(1, { id: 1, v: 'i', n: 9 });
  await checkTable('k2', model, 'after pushes');
});

test('floe ingest --mode upsert, in process and over REST', async () => {
  await createKeyed('cli');
  const dir = path.join(root, 'cli');
  fs.mkdirSync(dir);
  const model = new Map();
  const steps = [
    [false, 'id,v,n\n1,a,1\n2,b,2\n3,c,3\n2,d,4\n'],
    [true, 'id,v,n\n3,e,5\n4,f,6\n'],
    [false, 'id,v,n\n1,g,7\n4,h,8\n5,i,9\n'],
  ];
  for (const [k, [rest, text]] of steps.entries()) {
    const file = path.join(dir, `s${k}.csv`);
    fs.writeFileSync(file, text);
    for (const line of text.trim().split('\n').slice(1)) {
      const [id, v, n] = line.split(',');
      model.set(Number(id), { id: Number(id), v, n: Number(n) });
    }
    const r = await ingest(ctx, 'cli', [file], { rest, args: ['--mode', 'upsert'] });
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out.status, 'committed', show(r));
    await checkTable('cli', model, `after step ${k}${rest ? ' (REST)' : ''}`);
  }
  // A table without identifier fields: a clear refusal.
  const file = path.join(dir, 'x.csv');
  fs.writeFileSync(file, 'id\n1\n');
  const r = await ingest(ctx, 'nokey', [file], { args: ['--mode', 'upsert'] });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr + r.stdout, /identifier fields/);
});

// A table keyed on id, partitioned by region (identity): spec 0.
const createByRegion = (name) => createKeyedTable(ctx, name, { name: 'region', type: 'string' },
  { 'spec-id': 0, fields: [{ 'source-id': 3, 'field-id': 1000, name: 'region', transform: 'identity' }] });

test('upsert on a table partitioned outside the key: a key that changes partition leaves the old one', async () => {
  await createByRegion('moves');
  const dir = path.join(root, 'moves');
  fs.mkdirSync(dir);
  const model = new Map();
  const steps = [
    [false, 'id,v,region\n1,a,eu\n2,b,us\n3,c,eu\n'],
    // 1 moves to us, then within the same batch to ap (the last row wins).
    [false, 'id,v,region\n1,d,us\n3,e,eu\n4,f,ap\n1,g,ap\n'],
    [true, 'id,v,region\n2,h,eu\n4,i,ap\n'],
    // The eu file holds 5 and the last row of 1, the ap file the first:
    // the files' order is not the input's, and the last row still wins.
    [false, 'id,v,region\n5,a,eu\n1,x,ap\n1,z,eu\n'],
    [true, 'id,v,region\n6,b,us\n2,p,ap\n2,q,us\n'],
  ];
  for (const [k, [rest, text]] of steps.entries()) {
    const file = path.join(dir, `m${k}.csv`);
    fs.writeFileSync(file, text);
    for (const line of text.trim().split('\n').slice(1)) {
      const [id, v, region] = line.split(',');
      model.set(id, [id, v, region]);
    }
    const r = await ingest(ctx, 'moves', [file], { rest, args: ['--mode', 'upsert'] });
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out.status, 'committed', show(r));
    const want = [...model.values()].sort(byKey);
    await waitFor(async () => Number(currentSnapshot((await loadTable(ctx, 'moves')).metadata).summary['total-records']) === want.length,
      { timeoutMs: 15000, what: `moves: ${want.length} rows` });
    const meta = (await loadTable(ctx, 'moves')).metadata;
    const live = snapshotFiles(currentSnapshot(meta)).filter((f) => String(f.entry.status) !== '2').map((f) => f.file);
    const con = await duck();
    const got = [];
    for (const f of live) {
      const rows = (await con.runAndReadAll(`SELECT id::VARCHAR, v, region FROM read_parquet(${sqlStr(localPath(f.file_path))})`)).getRows();
      for (const row of rows) assert.equal(row[2], f.partition.region, `a row of ${row[2]} in a file of partition ${f.partition.region}`);
      got.push(...rows);
    }
    assert.deepEqual(got.sort(byKey), want, `DuckDB reads the model's rows after step ${k}`);
    const ice = await icebergRead({ tableUrl: meta.location, metadata: meta });
    assert.deepEqual(ice.map((r) => [String(r.id), r.v, r.region]).sort(byKey), want, `icebird after step ${k}`);
  }
});

test('upsert across partition evolution: a file of an older spec is rewritten in that spec', async () => {
  const name = 'respec';
  await createByRegion(name);
  const evolve = async (spec) => {
    const r = await request(ctx.base, 'POST', `${ctx.p}/namespaces/ns/tables/${name}`, {
      body: { requirements: [], updates: [{ action: 'add-spec', spec }, { action: 'set-default-spec', 'spec-id': -1 }] },
    });
    assert.equal(r.status, 200, r.text);
  };
  const dir = path.join(root, name);
  fs.mkdirSync(dir);
  const model = new Map();
  // [spec to evolve to first (null: none), rest, batch]
  const steps = [
    [null, false, 'id,v,region\n1,a,eu\n2,b,us\n3,c,eu\n4,d,us\n'],
    // Spec 1 buckets the key: 1 and 3 live in spec 0's eu file, 4 in its us file.
    [{ 'spec-id': 1, fields: [{ 'source-id': 1, 'field-id': 1001, name: 'id_bucket', transform: 'bucket[4]' }] },
      false, 'id,v,region\n1,e,eu\n3,f,us\n5,g,ap\n'],
    [null, true, 'id,v,region\n2,h,us\n5,i,ap\n1,j,eu\n'],
    // Unpartitioned: one batch replaces rows in files of all three specs.
    [{ 'spec-id': 2, fields: [] }, false, 'id,v,region\n4,k,us\n5,l,eu\n3,m,eu\n6,n,us\n'],
  ];
  const specs = (meta) => new Map(meta['partition-specs'].map((s) => [s['spec-id'], s]));
  for (const [k, [spec, rest, text]] of steps.entries()) {
    if (spec) await evolve(spec);
    const file = path.join(dir, `r${k}.csv`);
    fs.writeFileSync(file, text);
    for (const line of text.trim().split('\n').slice(1)) {
      const [id, v, region] = line.split(',');
      model.set(id, [id, v, region]);
    }
    const r = await ingest(ctx, name, [file], { rest, args: ['--mode', 'upsert'] });
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out.status, 'committed', show(r));
    const want = [...model.values()].sort(byKey);
    await waitFor(async () => Number(currentSnapshot((await loadTable(ctx, name)).metadata).summary['total-records']) === want.length,
      { timeoutMs: 15000, what: `${name}: ${want.length} rows` });
    const meta = (await loadTable(ctx, name)).metadata;
    const snap = currentSnapshot(meta);
    const entries = snapshotFiles(snap);
    const live = entries.filter((f) => String(f.entry.status) !== '2');
    const con = await duck();
    const got = [];
    for (const f of live) {
      const specId = Number(f.listEntry.partition_spec_id);
      assert.ok(specs(meta).has(specId), `step ${k}: a manifest of spec ${specId}`);
      const rows = (await con.runAndReadAll(`SELECT id::VARCHAR, v, region FROM read_parquet(${sqlStr(localPath(f.file.file_path))})`)).getRows();
      // A file keeps the spec it was written for: spec 0's hold one region each.
      if (specId === 0) for (const row of rows) assert.equal(row[2], f.file.partition.region, `step ${k}: a row of ${row[2]} in spec 0's ${f.file.partition.region} file`);
      if (specId === 2) assert.deepEqual(f.file.partition, {}, `step ${k}: spec 2 is unpartitioned`);
      got.push(...rows);
    }
    assert.deepEqual(got.sort(byKey), want, `DuckDB reads the model's rows after step ${k}`);
    const ice = await icebergRead({ tableUrl: meta.location, metadata: meta });
    assert.deepEqual(ice.map((r) => [String(r.id), r.v, r.region]).sort(byKey), want, `icebird after step ${k}`);
    assert.equal(Number(snap.summary['total-data-files']), live.length, `step ${k}: total-data-files`);
    // The snapshot's own manifests: the batch's in the default spec, then one per older spec it rewrote in.
    const own = [...new Map(entries.filter((f) => String(f.listEntry.added_snapshot_id) === String(snap['snapshot-id']))
      .map((f) => [f.listEntry.manifest_path, Number(f.listEntry.partition_spec_id)])).values()];
    const [first, ...older] = [[0], [1, 0], [1, 0], [2, 0, 1]][k];
    assert.equal(own[0], first, `step ${k}: the batch's manifest is of the default spec`);
    assert.deepEqual(own.slice(1).sort(), older.sort(), `step ${k}: one manifest per older spec rewritten in`);
    const added = entries.filter((f) => String(f.entry.status) === '1' && String(f.entry.snapshot_id) === String(snap['snapshot-id']));
    assert.equal(Number(snap.summary['added-data-files']), added.length, `step ${k}: added-data-files counts every new manifest`);
    assert.equal(Number(snap.summary['added-records']), added.reduce((a, f) => a + Number(f.file.record_count), 0), `step ${k}: added-records`);
  }
});
