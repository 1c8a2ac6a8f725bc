// `floe maintain compact` writes its new files as the table says, like `floe
// ingest` (ingest/compression-level.test.mjs): write.parquet.compression-level
// reaches the compressor. The same four appends into tables at zstd 1 and zstd
// 19 are compacted into one file each: DuckDB reads the same rows from both, and
// the level-1 file is the larger (at one level for both, the files would be
// the same size: same rows, same order, same codec). A level the codec does not
// have, set after the appends, fails the compaction naming the property, and
// nothing is committed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, createTable, loadTable, ingest, show, currentSnapshot, localPath, duck, sqlStr, tmpDir,
} from '../ingest/lib.mjs';
import { helpers, fields } from './lib.mjs';

let ctx;
let h;
const dir = tmpDir('compact-level');
const inputs = [];

before(async () => {
  ctx = await startCatalog('compact_level');
  h = helpers(ctx, dir);
  // Four CSVs of 5,000 rows each, compressible but not trivially.
  let x = 12345;
  for (let f = 0; f < 4; f++) {
    const lines = ['id,name'];
    for (let i = f * 5000; i < (f + 1) * 5000; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      lines.push(`${i},name ${x % 5000} ${'abcdefgh'.slice(0, x % 8)} ${x % 977}`);
    }
    const file = path.join(dir, `in${f}.csv`);
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    inputs.push(file);
  }
});
after(async () => {
  await ctx?.floe.stop();
});

// Creates name with properties and appends the four inputs, one snapshot each.
async function fourAppends(name, properties) {
  await createTable(ctx, name, fields, properties);
  for (const file of inputs) {
    const r = await ingest(ctx, name, [file]);
    assert.equal(r.code, 0, show(r));
    const id = String(r.out['snapshot-id']);
    await h.settled(name, (s) => String(s['snapshot-id']) === id);
  }
  return (await h.settled(name, (s) => s.summary['total-data-files'] === '4')).snap;
}

// Compacts name; returns the one live file's size and what DuckDB reads from it.
async function compactOne(name) {
  const res = h.maintain(name, ['compact']);
  assert.equal(res.code, 0, `${res.cmd}\n${res.stdout}\n${res.stderr}`);
  assert.equal(res.lines[0].status, 'ok', res.lines[0].error);
  assert.equal(res.lines[0]['files-removed'], 4);
  const { snap } = await h.settled(name, (s) => s.summary.operation === 'replace');
  const live = h.liveFiles(snap);
  assert.equal(live.length, 1, `one file after compaction: ${live}`);
  const p = localPath(live[0]);
  const con = await duck();
  const rows = (await con.runAndReadAll(`SELECT count(*)::INTEGER AS n, sum(id)::VARCHAR AS s,
    count(DISTINCT name)::INTEGER AS d, min(name) AS lo, max(name) AS hi FROM read_parquet(${sqlStr(p)})`))
    .getRowObjectsJson()[0];
  return { size: fs.statSync(p).size, rows };
}

test('compaction honours write.parquet.compression-level: zstd 1 writes a larger file than zstd 19, same rows', async () => {
  await fourAppends('z1', { 'write.parquet.compression-level': '1' });
  await fourAppends('z19', { 'write.parquet.compression-level': '19' });
  const z1 = await compactOne('z1');
  const z19 = await compactOne('z19');
  assert.equal(z1.rows.n, 20000);
  assert.deepEqual(z19.rows, z1.rows, 'both files hold the same rows');
  assert.ok(z1.size > z19.size, `compacted at zstd 1: ${z1.size} bytes, at zstd 19: ${z19.size} bytes`);
});

test('a compression level the codec does not have fails the compaction naming the property; nothing is committed', async () => {
  const before = await fourAppends('bad', {});
  const meta = (await loadTable(ctx, 'bad')).metadata;
  await h.commit('bad', {
    requirements: [],
    updates: [{ action: 'set-properties', updates: { 'write.parquet.compression-level': '23' } }],
  });
  const res = h.maintain('bad', ['compact']);
  assert.notEqual(res.code, 0, res.stdout);
  assert.equal(res.lines[0].status, 'failed', res.stdout);
  assert.match(res.lines[0].error, /write\.parquet\.compression-level is '23'.*zstd/);
  const after = currentSnapshot((await loadTable(ctx, 'bad')).metadata);
  assert.equal(String(after['snapshot-id']), String(before['snapshot-id']), 'no snapshot added');
  const dataDir = path.join(localPath(meta.location), 'data');
  assert.deepEqual(fs.readdirSync(dataDir).filter((f) => f.includes('compact')), [], 'no compacted file left');
});
