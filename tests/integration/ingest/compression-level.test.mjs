// The table property write.parquet.compression-level, as Iceberg's writers
// honour it: unset = the codec's default (zstd 3); set = that level for zstd
// (1-22) and gzip (1-9); snappy has no level and ignores it; a level the
// codec does not have fails the batch naming the property, and nothing is
// committed.  The same CSV into tables at zstd 1, the default and zstd 19:
// DuckDB reads the same rows from each file, and the sizes are ordered
// (level 1 larger than level 19: the level reached the compressor).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, createTable, loadTable, ingest, show, snapshotFiles, currentSnapshot, localPath, parquetOnDisk, duck,
  sqlStr, tmpDir,
} from './lib.mjs';

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'name', type: 'string', required: false },
  { id: 3, name: 'score', type: 'double', required: false },
];

let ctx;
let csv;
before(async () => {
  ctx = await startCatalog('ingest_level');
  const dir = tmpDir('ingest-level');
  const lines = ['id,name,score'];
  let x = 12345;
  for (let i = 0; i < 20000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    lines.push(`${i},name ${x % 5000} ${'abcdefgh'.slice(0, x % 8)},${(x % 100000) / 1000}`);
  }
  csv = path.join(dir, 'rows.csv');
  fs.writeFileSync(csv, `${lines.join('\n')}\n`);
});
after(async () => {
  await ctx?.floe.stop();
});

async function ingestInto(name, properties) {
  await createTable(ctx, name, fields, properties);
  const r = await ingest(ctx, name, [csv]);
  const meta = (await loadTable(ctx, name)).metadata;
  return { r, meta };
}

async function fileOf(meta) {
  const files = snapshotFiles(currentSnapshot(meta));
  assert.equal(files.length, 1);
  const p = localPath(files[0].file.file_path);
  const con = await duck();
  const rows = (await con.runAndReadAll(`SELECT count(*)::INTEGER AS n, sum(id)::VARCHAR AS s, sum(score) AS sc,
    count(DISTINCT name)::INTEGER AS d FROM read_parquet(${sqlStr(p)})`)).getRowObjectsJson()[0];
  return { size: fs.statSync(p).size, rows };
}

test('zstd 1, the default and zstd 19 read back the same rows; level 1 is the largest file', async () => {
  const out = {};
  for (const [name, props] of [['z1', { 'write.parquet.compression-level': '1' }], ['zdef', {}],
    ['z19', { 'write.parquet.compression-level': '19' }]]) {
    const { r, meta } = await ingestInto(name, props);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out['rows-committed'], 20000, show(r));
    out[name] = await fileOf(meta);
  }
  assert.deepEqual(out.z1.rows, out.zdef.rows);
  assert.deepEqual(out.z19.rows, out.zdef.rows);
  assert.equal(out.zdef.rows.n, 20000);
  assert.ok(out.z1.size > out.z19.size, `zstd 1 ${out.z1.size} bytes > zstd 19 ${out.z19.size} bytes`);
});

test('gzip honours a level; snappy ignores one', async () => {
  for (const [name, props] of [
    ['g9', { 'write.parquet.compression-codec': 'gzip', 'write.parquet.compression-level': '9' }],
    ['s5', { 'write.parquet.compression-codec': 'snappy', 'write.parquet.compression-level': '5' }]]) {
    const { r, meta } = await ingestInto(name, props);
    assert.equal(r.code, 0, show(r));
    assert.equal((await fileOf(meta)).rows.n, 20000);
  }
});

for (const [codec, level] of [['zstd', '0'], ['zstd', '23'], ['zstd', 'fast'], ['gzip', '10'], ['zstd', '3x']]) {
  test(`${codec} level '${level}' fails naming the property; nothing is committed`, async () => {
    const name = `bad_${codec}_${level.replace(/\W/g, '_')}`;
    const { r, meta } = await ingestInto(name, {
      'write.parquet.compression-codec': codec, 'write.parquet.compression-level': level,
    });
    assert.equal(r.code, 3, show(r));
    assert.equal(r.out.status, 'failed', show(r));
    assert.match(r.out.error, new RegExp(`write\\.parquet\\.compression-level is '${level}'.*${codec}`), show(r));
    assert.equal(meta.snapshots.length, 0, 'no snapshot added');
    assert.deepEqual(parquetOnDisk(meta), [], 'no data files left in data/');
  });
}
