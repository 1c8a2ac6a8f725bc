// `floe ingest --threads N`: the reader parses while worker threads encode and
// compress column chunks.  The result must not depend on N: the same data
// files byte for byte (same count, same rows in the same order, same rolls at
// write.target-file-size-bytes), the same manifest entries, and in dead-letter
// mode the same rejected records and reasons; in strict mode a bad row fails
// the batch exactly as with one thread and leaves no data file behind.
// Small row groups and a small target file size make every run cross many
// row-group and file boundaries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, loadTable, ingest, show, snapshotFiles, currentSnapshot, localPath, parquetOnDisk,
  duck, sqlStr, tmpDir,
} from './lib.mjs';
import { call, encodeNs } from '../tables/lib.mjs';

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'category', type: 'string', required: false },
  { id: 3, name: 'amount', type: 'decimal(9, 2)', required: false },
  { id: 4, name: 'score', type: 'double', required: false },
  { id: 5, name: 'comment', type: 'string', required: false },
  { id: 6, name: 'at', type: 'timestamp', required: false },
];
const properties = {
  'write.parquet.row-group-size-bytes': String(64 << 10),
  'write.target-file-size-bytes': String(300 << 10),
};

let ctx;
let dir;
let n = 0;
before(async () => {
  ctx = await startCatalog('ingest_threads');
  dir = tmpDir('ingest-threads');
});
after(async () => {
  await ctx?.floe.stop();
});

async function table(tag, spec = { 'spec-id': 0, fields: [] }) {
  n += 1;
  const name = `${tag}_${n}`;
  await call(ctx.base, 'POST', `${ctx.p}/namespaces/${encodeNs(ctx.ns)}/tables`, {
    body: { name, schema: { type: 'struct', 'schema-id': 0, fields }, 'partition-spec': spec, properties },
    expect: 200,
  });
  return name;
}

// 40,000 rows of mixed values (dictionary-friendly and unique columns, nulls);
// bad rows (a bad decimal, a missing required id, a short record) at `bad`.
function csv(rows, bad = []) {
  const lines = ['id,category,amount,score,comment,at'];
  for (let i = 0; i < rows; i++) {
    if (bad.includes(i)) {
      lines.push([`${i},c${i % 3},12.345,1,bad decimal,`, `,c1,1.00,1,no id,`, `${i},short`][bad.indexOf(i) % 3]);
      continue;
    }
    const cat = i % 7 === 0 ? '' : `cat-${i % 13}`;
    const amount = i % 11 === 0 ? '' : `${(i * 37) % 100000}.${String(i % 100).padStart(2, '0')}`;
    const comment = `"row ${i}, ${'x'.repeat(i % 40)}"`;
    const sec = String(i % 60).padStart(2, '0');
    lines.push(`${i},${cat},${amount},${(i * 0.125).toFixed(3)},${comment},2024-03-0${1 + (i % 9)}T10:11:${sec}`);
  }
  n += 1;
  const p = path.join(dir, `${n}.csv`);
  fs.writeFileSync(p, `${lines.join('\n')}\n`);
  return p;
}

// The data files of the current snapshot in the order the run wrote them
// (their names end in a sequence number), with their bytes and manifest entry.
async function filesOf(name) {
  const meta = (await loadTable(ctx, name)).metadata;
  const cur = currentSnapshot(meta);
  assert.ok(cur, `${name} has a snapshot`);
  return snapshotFiles(cur)
    .map((f) => ({ seq: /-(\d+)\.parquet$/.exec(f.file.file_path)[1], file: f.file }))
    .sort((a, b) => a.seq.localeCompare(b.seq))
    .map(({ seq, file }) => ({ seq, file, bytes: fs.readFileSync(localPath(file.file_path)) }));
}

function sameFiles(a, b, label, minFiles = 2) {
  assert.equal(b.length, a.length, `${label}: number of data files`);
  assert.ok(a.length >= minFiles, `${label}: at least ${minFiles} files (${a.length})`);
  for (let i = 0; i < a.length; i++) {
    assert.equal(b[i].seq, a[i].seq, `${label}: file ${i} sequence`);
    assert.equal(b[i].bytes.length, a[i].bytes.length, `${label}: file ${a[i].seq} size`);
    assert.ok(b[i].bytes.equals(a[i].bytes), `${label}: file ${a[i].seq} is the same bytes`);
    const strip = (f) => ({ ...f, file_path: undefined });
    assert.deepEqual(strip(b[i].file), strip(a[i].file), `${label}: manifest entry of file ${a[i].seq}`);
  }
}

async function rowsOf(files) {
  const list = files.map((f) => sqlStr(localPath(f.file.file_path))).join(', ');
  const con = await duck();
  return (await con.runAndReadAll(
    `SELECT * FROM read_parquet([${list}]) ORDER BY id`)).getRowObjectsJson();
}

test('--threads 1, 2 and 3 write the same files byte for byte (many row groups, rolled files)', async () => {
  const input = csv(40000);
  const runs = [];
  for (const threads of [1, 2, 3]) {
    const name = await table(`same${threads}`);
    const r = await ingest(ctx, name, [input], { args: ['--threads', String(threads)] });
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out.status, 'committed', show(r));
    assert.equal(r.out['rows-committed'], 40000, show(r));
    runs.push({ threads, name, r, files: await filesOf(name) });
  }
  for (const run of runs.slice(1)) {
    sameFiles(runs[0].files, run.files, `--threads ${run.threads} vs 1`, 3);
    assert.equal(run.r.out['bytes-written'], runs[0].r.out['bytes-written']);
    assert.equal(run.r.out['files-written'], runs[0].r.out['files-written']);
  }
  // And DuckDB reads every row back, in the order of the input.
  const rows = await rowsOf(runs[2].files);
  assert.equal(rows.length, 40000);
  assert.equal(String(rows[39999].id), '39999');
  assert.equal(rows[12345].comment, `row 12345, ${'x'.repeat(12345 % 40)}`);
});

test('--threads 2 on a partitioned table: the same files per partition as one thread', async () => {
  const input = csv(20000);
  const spec = { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'category', transform: 'identity' }] };
  const out = [];
  for (const threads of [1, 2]) {
    const name = await table(`part${threads}`, spec);
    const r = await ingest(ctx, name, [input], { args: ['--threads', String(threads)] });
    assert.equal(r.code, 0, show(r));
    out.push(await filesOf(name));
  }
  sameFiles(out[0], out[1], 'partitioned, --threads 2 vs 1', 13);
});

test('dead-letter with --threads 2: the same rejected records, reasons and files as one thread', async () => {
  const input = csv(30000, [5, 7777, 15001, 29999]);
  const res = [];
  for (const threads of [1, 2]) {
    const name = await table(`dl${threads}`);
    const r = await ingest(ctx, name, [input], { args: ['--threads', String(threads), '--on-error', 'dead-letter'] });
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out['rows-dead-lettered'], 4, show(r));
    assert.equal(r.out['rows-committed'], 29996, show(r));
    const errors = r.out['dead-letter-errors'];
    res.push({
      files: await filesOf(name),
      rejected: fs.readFileSync(errors.replace(/\.errors\.ndjson$/, '')),
      reasons: fs.readFileSync(errors, 'utf8').trim().split('\n').map((l) => JSON.parse(l)),
    });
  }
  sameFiles(res[0].files, res[1].files, 'dead-letter, --threads 2 vs 1');
  assert.ok(res[1].rejected.equals(res[0].rejected), 'the same rejected bytes');
  assert.deepEqual(res[1].reasons, res[0].reasons);
  assert.deepEqual(res[1].reasons.map((e) => e.line), [7, 7779, 15003, 30001]);
});

test('strict with --threads 2: a bad row late in the file fails the batch, nothing committed, no data file left', async () => {
  const input = csv(30000, [28000]);
  const name = await table('strict');
  const r = await ingest(ctx, name, [input], { args: ['--threads', '2'] });
  assert.equal(r.code, 3, show(r));
  assert.match(r.stderr + r.stdout, new RegExp(`${path.basename(input)}:28002: .*amount`), show(r));
  const meta = (await loadTable(ctx, name)).metadata;
  assert.equal(currentSnapshot(meta), null, 'no snapshot');
  assert.deepEqual(parquetOnDisk(meta), [], 'no data file left behind');
});

test('--threads out of range is a usage error naming the option', async () => {
  const name = await table('range');
  for (const bad of ['0', '65', 'two']) {
    const r = await ingest(ctx, name, [csv(10)], { args: ['--threads', bad] });
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /threads/, show(r));
  }
});
