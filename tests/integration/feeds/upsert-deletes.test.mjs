// Upsert (copy-on-write) on a table with delete files: a position delete
// file (DuckDB-written) and an equality delete file remove rows of two data
// files; a `floe ingest --mode upsert` batch then updates keys in both
// files, writes a key an equality delete had removed, and adds a new one.
// The files it rewrites lose the deleted rows too (their copies have a newer
// sequence number, which the deletes no longer reach), so no deleted row
// comes back: the rows readers see (the spec's rules applied over DuckDB
// reads) equal the model, in process and over REST, and the summary counts
// only the rows the batch replaced.  On a v3 table the rows a rewrite copies
// keep their _row_id and _last_updated_sequence_number (a replacing row takes
// over its predecessor's _row_id: upsert-lineage.test.mjs), and a file
// rewritten loses the rows its deletion vector deletes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, ingest, show, currentSnapshot, localPath, tmpDir, duck, sqlStr, snapshotFiles,
} from '../ingest/lib.mjs';
import { call } from '../tables/lib.mjs';
import { helpers, fields } from '../maintain/lib.mjs';
import {
  liveEntries, visibleRows, positionDeleteFile, equalityDeleteFile, dvEntries, deleteHelpers,
} from '../maintain/deletes-lib.mjs';

let ctx;
const dir = tmpDir('upsert-deletes');
let append;
let settled;
let maintain;
let commitDeletes;

before(async () => {
  ctx = await startCatalog('upsert_deletes');
  const h = helpers(ctx, dir);
  ({ append, settled, maintain } = h);
  ({ commitDeletes } = deleteHelpers(h.dropManifests));
});

after(async () => {
  await ctx?.floe.stop();
});

const range = (from, n) => Array.from({ length: n }, (_, i) => from + i);

// A table keyed on id (its identifier field).
async function createKeyed(name, properties = {}) {
  await call(ctx.base, 'POST', `${ctx.p}/namespaces/${ctx.ns.join('%1F')}/tables`, {
    body: { name, schema: { type: 'struct', 'schema-id': 0, 'identifier-field-ids': [1], fields }, properties },
    expect: 200,
  });
}

async function upsert(name, rows, rest) {
  const file = path.join(dir, `${name}-${Date.now()}.csv`);
  fs.writeFileSync(file, `id,name\n${rows.map(([id, n]) => `${id},${n}`).join('\n')}\n`);
  const r = await ingest(ctx, name, [file], { rest, args: ['--mode', 'upsert'] });
  assert.equal(r.code, 0, show(r));
  assert.equal(r.out.status, 'committed', show(r));
  return (await settled(name, (s) => String(s['snapshot-id']) === String(r.out['snapshot-id']))).snap;
}

for (const rest of [false, true]) {
  test(`upsert${rest ? ' over REST' : ''} on a table with position and equality deletes: no deleted row comes back`, async () => {
    const name = rest ? 'updelrest' : 'updel';
    let { meta, a, aIds } = await twoFiles(name);
    // Positions 1 and 2 of the file of ids 0-9; ids 11 and 15 by equality.
    const pd = await positionDeleteFile(path.join(dir, `${name}-pd.parquet`), [[a.path, 1], [a.path, 2]]);
    meta = await commitDeletes(name, meta, [{
      content: 1, file_path: pd.path, file_format: 'PARQUET', record_count: pd.count, file_size_in_bytes: pd.size,
    }]);
    meta = await commitDeletes(name, meta, [await equalityDeleteFile(path.join(dir, `${name}-eq.parquet`), { id: 'BIGINT' }, [[11], [15]])]);
    const gone = [aIds[1], aIds[2], 11, 15];
    const model = new Map(range(0, 20).filter((i) => !gone.includes(i)).map((i) => [i, `n${i}`]));
    const rowsOf = (m) => [...m.entries()].sort((x, y) => x[0] - y[0]).map(([i, n]) => [String(i), n]);
    assert.deepEqual((await visibleRows(currentSnapshot(meta))).map((r) => r.slice(0, 2)), rowsOf(model));

    // Updates in both files, a key the equality delete removed, a new key.
    const batch = [[3, 'u3'], [12, 'u12'], [11, 'back11'], [30, 'new30']];
    const snap = await upsert(name, batch, rest);
    for (const [i, n] of batch) model.set(i, n);
    assert.equal(snap.summary.operation, 'overwrite');
    assert.equal(snap.summary['floe.rows-replaced'], '2', 'rows 3 and 12: 11 was deleted already');
    assert.equal(snap.summary['total-delete-files'], '2', 'the delete files stay');
    const after = await visibleRows(snap);
    assert.deepEqual(after.map((r) => r.slice(0, 2)), rowsOf(model), 'no deleted row is back, every batch row is in');
    assert.equal(snap.summary['total-records'], String(model.size), 'both rewritten files lost their deleted rows');
    const live = liveEntries(snap).filter((e) => e.content === 0);
    assert.ok(!live.some((e) => e.path === a.path), 'the file of ids 0-9 was rewritten');
    // A second batch on the rewritten files: the deletes no longer apply to them.
    const snap2 = await upsert(name, [[4, 'u4'], [13, 'u13']], rest);
    model.set(4, 'u4');
    model.set(13, 'u13');
    assert.equal(snap2.summary['floe.rows-replaced'], '2');
    assert.deepEqual((await visibleRows(snap2)).map((r) => r.slice(0, 2)), rowsOf(model));
  });
}

test('upsert on a v3 table: copied rows keep their lineage, a replacing row keeps its predecessor\'s id', async () => {
  // Partitioned by region: one ingest writes both regions' files into one
  // manifest, so the file that stays is carried with its first_row_id.
  const name = 'upv3';
  await call(ctx.base, 'POST', `${ctx.p}/namespaces/${ctx.ns.join('%1F')}/tables`, {
    body: {
      name,
      schema: {
        type: 'struct', 'schema-id': 0, 'identifier-field-ids': [1],
        fields: [...fields, { id: 3, name: 'region', type: 'string', required: false }],
      },
      'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 3, 'field-id': 1000, name: 'region', transform: 'identity' }] },
      properties: { 'format-version': '3' },
    },
    expect: 200,
  });
  const load = async (rows, args = []) => {
    const file = path.join(dir, `${name}-${Date.now()}.csv`);
    fs.writeFileSync(file, `id,name,region\n${rows.map(([id, n, rg]) => `${id},${n},${rg}`).join('\n')}\n`);
    const r = await ingest(ctx, name, [file], { args });
    assert.equal(r.code, 0, show(r));
    return (await settled(name, (x) => String(x['snapshot-id']) === String(r.out['snapshot-id']))).snap;
  };
  await load(range(0, 10).map((i) => [i, `n${i}`, i < 5 ? 'eu' : 'us']));
  await load(range(10, 10).map((i) => [i, `n${i}`, 'ap']));
  let { meta } = await settled(name, (s) => s.summary['total-data-files'] === '3');
  const before = await visibleRows(currentSnapshot(meta));
  assert.ok(before.every((r) => r[2] != null && r[3] != null), 'every row has a row id');
  const snap = await load([[3, 'u3', 'eu'], [25, 'new25', 'ap']], ['--mode', 'upsert']);
  assert.equal(snap.summary['floe.rows-replaced'], '1');
  ({ meta } = await settled(name, (x) => String(x['snapshot-id']) === String(snap['snapshot-id'])));
  const after = await visibleRows(snap);
  const byId = (rows) => new Map(rows.map((r) => [r[0], r]));
  const b = byId(before);
  const a = byId(after);
  assert.deepEqual([...a.keys()].sort(), [...b.keys(), '25'].sort());
  for (const [id, row] of b) {
    if (id === '3') continue;
    assert.deepEqual(a.get(id), row, `row ${id} keeps its name, _row_id and _last_updated_sequence_number`);
  }
  const seq = String(snap['sequence-number']);
  assert.equal(a.get('3')[1], 'u3');
  assert.equal(a.get('3')[2], b.get('3')[2], 'the replacing row takes over the _row_id of the row it replaces');
  assert.equal(a.get('3')[3], seq, 'written by the upsert');
  assert.equal(a.get('25')[3], seq);
  assert.equal(new Set(after.map((r) => r[2])).size, after.length, 'row ids stay unique');
  assert.ok(after.every((r) => BigInt(r[2]) < BigInt(meta['next-row-id'])), 'every row id is below next-row-id');
  // The file rewritten (the one that holds id 0 now) holds its rows' lineage itself.
  const con = await duck();
  let rewritten = null;
  for (const e of liveEntries(snap).filter((x) => x.content === 0)) {
    const ids = (await con.runAndReadAll(`SELECT id::INTEGER FROM read_parquet(${sqlStr(localPath(e.path))})`)).getRowsJson().map((r) => r[0]);
    if (ids.includes(0)) rewritten = e;
  }
  assert.ok(rewritten, 'a live file holds id 0');
  const cols = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sqlStr(localPath(rewritten.path))})`)).getRowsJson().map((r) => r[0]);
  assert.ok(cols.includes('_row_id') && cols.includes('_last_updated_sequence_number'), cols.join(','));
});

test('upsert on a v3 table with a deletion vector: the rewritten file loses the rows it deletes', async () => {
  const name = 'upv3dv';
  await createKeyed(name, { 'format-version': '3' });
  await append(name, range(0, 10));
  let { meta } = await settled(name, (s) => s.summary['total-data-files'] === '1');
  const [data] = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0);
  const con = await duck();
  const ids = (await con.runAndReadAll(`SELECT id::INTEGER FROM read_parquet(${sqlStr(localPath(data.path))}) ORDER BY file_row_number`)).getRowsJson().map((r) => r[0]);
  const puffin = path.join(localPath(meta.location), 'data', 'dv.puffin');
  const dvs = new Map([[data.path, [1, 6]]]);
  meta = await commitDeletes(name, meta, dvEntries(puffin, dvs));
  const known = new Map([[`file://${puffin}`, dvs]]);
  const before = await visibleRows(currentSnapshot(meta), known);
  assert.deepEqual(before.map((r) => Number(r[0])), range(0, 10).filter((i) => i !== ids[1] && i !== ids[6]));
  // A key of the same file: it is rewritten, without the rows the vector deletes.
  const key = before.find((r) => r[0] !== String(ids[1]) && r[0] !== String(ids[6]))[0];
  const snap = await upsert(name, [[Number(key), 'changed']], false);
  assert.equal(snap.summary['floe.rows-replaced'], '1');
  const after = await visibleRows(snap, known);
  assert.deepEqual(after.map((r) => Number(r[0])), before.map((r) => Number(r[0])), 'no deleted row is back');
  assert.equal(after.find((r) => r[0] === key)[1], 'changed');
  for (const r of before.filter((x) => x[0] !== key)) {
    assert.deepEqual(after.find((x) => x[0] === r[0]), r, `row ${r[0]} keeps its lineage`);
  }
  assert.ok(!liveEntries(snap).some((e) => e.path === data.path), 'the file with the vector was rewritten');
  assert.equal(snap.summary['total-records'], String(after.length), 'the deleted rows are gone from the files');
  // The vector leaves with its file, in the same snapshot.
  assert.equal(snap.summary['total-delete-files'], '0');
  assert.equal(snap.summary['removed-delete-files'], '1');
  assert.equal(snap.summary['removed-position-deletes'], '2');
  const gone = snapshotFiles(snap).filter((f) => Number(f.file.content) === 1);
  assert.deepEqual(gone.map((f) => [Number(f.entry.status), f.file.referenced_data_file]), [[2, data.path]],
    'the vector is a DELETED entry of the new snapshot, with its referenced file');
  assert.equal(String(gone[0].entry.snapshot_id), String(snap['snapshot-id']));
  // Nothing is left for compaction to remove.
  const res = maintain(name, ['--dry-run', 'compact']);
  assert.equal(res.code, 0, res.stderr);
  assert.ok(!(res.lines[0]['delete-files-removed'] > 0), res.stdout);
});

// A keyed table of two data files: a holds ids 0-9, b ids 10-19 (aIds, bIds
// in file order).
async function twoFiles(name, properties = {}) {
  await createKeyed(name, properties);
  await append(name, range(0, 10));
  await append(name, range(10, 10));
  const { meta } = await settled(name, (s) => s.summary['total-data-files'] === '2');
  const con = await duck();
  const idsOf = async (f) => (await con.runAndReadAll(`SELECT id::INTEGER FROM read_parquet(${sqlStr(localPath(f.path))}) ORDER BY file_row_number`)).getRowsJson().map((r) => r[0]);
  const data = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0);
  const [a, b] = (await idsOf(data[0])).includes(0) ? data : [data[1], data[0]];
  return { meta, a, b, aIds: await idsOf(a), bIds: await idsOf(b) };
}

test('upsert on v2: a position delete file whose file_path bounds name one data file leaves with it', async () => {
  // v2 manifests have no referenced_data_file: Iceberg Java reads a position
  // delete file as file-scoped when the lower and upper bounds of its
  // file_path column (field 2147483546) are equal, and so does Floe.
  const name = 'upscoped';
  let { meta, a, b, aIds, bIds } = await twoFiles(name);
  const bound = (p) => [{ key: 2147483546, value: Buffer.from(p) }];
  const scoped = (f, p) => ({
    content: 1, file_path: f.path, file_format: 'PARQUET', record_count: f.count, file_size_in_bytes: f.size,
    lower_bounds: bound(p), upper_bounds: bound(p),
  });
  // One manifest: position 1 of a, position 2 of b (each scoped by its
  // bounds), and position 3 of b in a file whose bounds span both files.
  const pa = await positionDeleteFile(path.join(dir, `${name}-a.parquet`), [[a.path, 1]]);
  const pb = await positionDeleteFile(path.join(dir, `${name}-b.parquet`), [[b.path, 2]]);
  const pab = await positionDeleteFile(path.join(dir, `${name}-ab.parquet`), [[b.path, 3]]);
  const [lo, hi] = [a.path, b.path].sort();
  meta = await commitDeletes(name, meta, [scoped(pa, a.path), scoped(pb, b.path),
    { ...scoped(pab, lo), upper_bounds: bound(hi) }]);
  const model = new Map(range(0, 20).filter((i) => ![aIds[1], bIds[2], bIds[3]].includes(i)).map((i) => [i, `n${i}`]));
  const rowsOf = (m) => [...m.entries()].sort((x, y) => x[0] - y[0]).map(([i, n]) => [String(i), n]);
  assert.deepEqual((await visibleRows(currentSnapshot(meta))).map((r) => r.slice(0, 2)), rowsOf(model));
  const keyA = aIds.find((i) => i !== aIds[1]);
  const snap = await upsert(name, [[keyA, 'ua']], false);
  model.set(keyA, 'ua');
  assert.deepEqual((await visibleRows(snap)).map((r) => r.slice(0, 2)), rowsOf(model), 'no deleted row is back');
  assert.equal(snap.summary['removed-delete-files'], '1');
  assert.equal(snap.summary['total-delete-files'], '2');
  const dels = snapshotFiles(snap).filter((f) => Number(f.file.content) === 1)
    .map((f) => [localPath(f.file.file_path), Number(f.entry.status)]).sort();
  assert.deepEqual(dels, [[localPath(pa.path), 2], [localPath(pb.path), 0], [localPath(pab.path), 0]].sort(),
    "a's file-scoped delete is DELETED, the others carried as EXISTING");
});

test('upsert on v3 with two vectors in one manifest: the one of a rewritten file leaves with it, the other stays', async () => {
  const name = 'uptwodv';
  let { meta, a, b, aIds, bIds } = await twoFiles(name, { 'format-version': '3' });
  // One delete manifest: position 1 of a, positions 2 and 3 of b.
  const puffin = path.join(localPath(meta.location), 'data', 'two.puffin');
  const dvs = new Map([[a.path, [1]], [b.path, [2, 3]]]);
  meta = await commitDeletes(name, meta, dvEntries(puffin, dvs));
  const known = new Map([[`file://${puffin}`, dvs]]);
  const model = new Map(range(0, 20).filter((i) => ![aIds[1], bIds[2], bIds[3]].includes(i)).map((i) => [i, `n${i}`]));
  const rowsOf = (m) => [...m.entries()].sort((x, y) => x[0] - y[0]).map(([i, n]) => [String(i), n]);
  const visible = async (sn) => (await visibleRows(sn, known)).map((r) => r.slice(0, 2));
  assert.deepEqual(await visible(currentSnapshot(meta)), rowsOf(model));
  const keyA = aIds.find((i) => i !== aIds[1]);
  let snap = await upsert(name, [[keyA, 'ua']], false);
  model.set(keyA, 'ua');
  assert.deepEqual(await visible(snap), rowsOf(model), 'no deleted row is back');
  assert.equal(snap.summary['removed-delete-files'], '1');
  assert.equal(snap.summary['removed-position-deletes'], '1');
  assert.equal(snap.summary['total-delete-files'], '1');
  assert.equal(snap.summary['total-position-deletes'], '2');
  const dels = snapshotFiles(snap).filter((f) => Number(f.file.content) === 1)
    .map((f) => [f.file.referenced_data_file, Number(f.entry.status)]).sort();
  assert.deepEqual(dels, [[a.path, 2], [b.path, 0]].sort(),
    "a's vector is DELETED, b's carried as EXISTING in the new delete manifest");
  // Over REST, a key of b: its vector goes too.
  const keyB = bIds.find((i) => i !== bIds[2] && i !== bIds[3]);
  snap = await upsert(name, [[keyB, 'ub']], true);
  model.set(keyB, 'ub');
  assert.deepEqual(await visible(snap), rowsOf(model));
  assert.equal(snap.summary['total-delete-files'], '0');
  assert.equal(snap.summary['total-position-deletes'], '0');
  assert.equal(snap.summary['total-records'], String(model.size));
});

test('upsert over REST racing a delete: its retry rewrites the file again with the new delete', async () => {
  const name = 'uprace';
  await createKeyed(name);
  await append(name, range(0, 10));
  let { meta } = await settled(name, (s) => s.summary['total-data-files'] === '1');
  const [a] = liveEntries(currentSnapshot(meta)).filter((e) => e.content === 0);
  const con = await duck();
  const aIds = (await con.runAndReadAll(`SELECT id::INTEGER FROM read_parquet(${sqlStr(localPath(a.path))}) ORDER BY file_row_number`)).getRowsJson().map((r) => r[0]);
  // The file has a delete already, so the delete that races is its second.
  const pd = await positionDeleteFile(path.join(dir, `${name}-pd.parquet`), [[a.path, 1]]);
  meta = await commitDeletes(name, meta, [{
    content: 1, file_path: pd.path, file_format: 'PARQUET', record_count: pd.count, file_size_in_bytes: pd.size,
  }]);
  const victim = aIds.find((i) => i !== aIds[1] && i !== 3);
  const file = path.join(dir, `${name}.csv`);
  fs.writeFileSync(file, 'id,name\n3,u3\n');
  let proc;
  const run = ingest(ctx, name, [file], {
    rest: true, args: ['--mode', 'upsert'], env: { FLOE_TEST_UPSERT_PAUSE_MS: '60000' }, onSpawn: (p) => { proc = p; },
  });
  // Held once its first plan rewrote the file.
  const dataDir = path.join(localPath(meta.location), 'data');
  for (let i = 0; !fs.readdirSync(dataDir).some((f) => f.endsWith('-upsert.parquet')); i++) {
    if (i > 1500) throw new Error('the upsert rewrote nothing in 30 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  meta = await commitDeletes(name, (await settled(name, () => true)).meta,
    [await equalityDeleteFile(path.join(dir, `${name}-eq.parquet`), { id: 'BIGINT' }, [[victim]])]);
  const kick = setInterval(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGUSR1'); }, 100);
  const r = await run.finally(() => clearInterval(kick));
  assert.equal(r.code, 0, show(r));
  const snap = (await settled(name, (x) => String(x['snapshot-id']) === String(r.out['snapshot-id']))).snap;
  const got = await visibleRows(snap);
  const want = range(0, 10).filter((i) => i !== aIds[1] && i !== victim).map((i) => [String(i), i === 3 ? 'u3' : `n${i}`]);
  assert.deepEqual(got.map((x) => x.slice(0, 2)), want, `the row deleted meanwhile (${victim}) stays deleted`);
});
