// Bad input to `floe ingest`.
// strict (default): exit 3, the message names the file, the line and the
// reason, no snapshot is added and no data file is left in data/.
// dead-letter: exit 0, the good rows commit, <table>/dead-letter/<batch>.rejected
// holds exactly the rejected records' original bytes (one per line) and its
// .errors.ndjson sidecar one {file, line, reason} per rejected record.
// Empty inputs (0 bytes, header only) are nothing to commit.
// --new-columns: reject names the column, ignore drops it, evolve adds it as
// an optional column typed from its values (string when they say nothing
// more precise) whose values read back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  startCatalog, createTable, loadTable, ingest, show, snapshotFiles, currentSnapshot, localPath, parquetOnDisk, duck,
  sqlStr, tmpDir, parseJsonBig,
} from './lib.mjs';

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'name', type: 'string', required: false },
  { id: 3, name: 'amount', type: 'decimal(9, 2)', required: false },
  { id: 4, name: 'day', type: 'date', required: false },
];

let ctx;
let dir;
let n = 0;
before(async () => {
  ctx = await startCatalog('ingest_bad');
  dir = tmpDir('ingest-bad');
});
after(async () => {
  await ctx?.floe.stop();
});

function file(name, bytes) {
  n += 1;
  const p = path.join(dir, `${n}-${name}`);
  fs.writeFileSync(p, typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes);
  return p;
}

async function freshTable(tag) {
  n += 1;
  const name = `${tag}_${n}`;
  await createTable(ctx, name, fields);
  return name;
}

async function rowsOf(name) {
  const meta = (await loadTable(ctx, name)).metadata;
  const cur = currentSnapshot(meta);
  if (!cur) return [];
  const files = snapshotFiles(cur).map((f) => sqlStr(localPath(f.file.file_path)));
  const con = await duck();
  return (await con.runAndReadAll(`SELECT * FROM read_parquet([${files.join(', ')}]) ORDER BY id`)).getRowObjectsJson();
}

// ---- strict ----

const strictCases = [
  // [name, bytes, line, reason]
  ['unbalanced-quote.csv', 'id,name\n1,ok\n2,"never closed\n3,x\n', 3, /quote|end of input|unterminated|closed/i],
  ['column-count.csv', 'id,name\n1,a\n2,b,extra\n3,c\n', 3, /expected 2 fields/i],
  ['quote-in-unquoted.csv', 'id,name\n1,a\n2,ab"c\n', 3, /quote inside an unquoted field/i],
  ['invalid-utf8.csv', Buffer.concat([Buffer.from('id,name\n1,ok\n2,'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('\n')]), 3, /UTF-8/i],
  ['bad-decimal.csv', 'id,amount\n1,1.00\n2,12.345\n', 3, /amount.*12\.345.*decimal|decimal.*12\.345/i],
  ['bad-long.csv', 'id,name\n1,a\n9223372036854775808,b\n', 3, /id/],
  ['bad-date.csv', 'id,day\n1,2024-02-30\n', 2, /day.*2024-02-30/],
  ['required-null.csv', 'id,name\n1,a\n,b\n', 3, /required column 'id'/],
  ['non-object.ndjson', '{"id":1}\n[1,2]\n{"id":3}\n', 2, /object/i],
  ['malformed.ndjson', '{"id":1}\n{"id":2,"name":\n{"id":3}\n', 2, /./],
  ['json-type.ndjson', '{"id":1}\n{"id":"2"}\n', 2, /id/],
];

for (const [fname, bytes, line, reason] of strictCases) {
  test(`strict: ${fname} fails naming file, line ${line} and the reason; nothing is committed`, async () => {
    const name = await freshTable('strict');
    const good = file('good.csv', 'id,name\n100,fine\n');
    const bad = file(fname, bytes);
    const inputs = fname.endsWith('.csv') ? [good, bad] : [bad];
    const r = await ingest(ctx, name, inputs);
    assert.equal(r.code, 3, show(r));
    assert.equal(r.out.status, 'failed', show(r));
    assert.ok(r.out.error.includes(`${bad}:${line}:`), `error names ${bad}:${line}: ${show(r)}`);
    assert.match(r.out.error, reason, show(r));
    assert.ok(r.stderr.includes(`${bad}:${line}:`), `stderr names the file and line: ${show(r)}`);
    assert.equal(r.out['rows-committed'], 0);
    const meta = (await loadTable(ctx, name)).metadata;
    assert.equal(meta.snapshots.length, 0, 'no snapshot added');
    assert.deepEqual(parquetOnDisk(meta), [], 'no data files left in data/');
  });
}

test('empty inputs: a 0-byte file and a header-only file are nothing to commit', async () => {
  for (const [fname, bytes] of [['empty.csv', ''], ['header-only.csv', 'id,name\n'], ['empty.ndjson', ''],
    ['blank.ndjson', '\n\n  \n']]) {
    const name = await freshTable('empty');
    const r = await ingest(ctx, name, [file(fname, bytes)]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out.status, 'nothing-to-commit', show(r));
    assert.equal(r.out['rows-committed'], 0);
    const meta = (await loadTable(ctx, name)).metadata;
    assert.equal(meta.snapshots.length, 0, `${fname}: no snapshot`);
    assert.deepEqual(parquetOnDisk(meta), [], `${fname}: no data file`);
  }
  // beside a good file they change nothing
  const name = await freshTable('empty');
  const r = await ingest(ctx, name, [file('e.csv', ''), file('h.csv', 'id,name\n'), file('g.csv', 'id,name\n7,seven\n')]);
  assert.equal(r.out?.status, 'committed', show(r));
  assert.deepEqual((await rowsOf(name)).map((x) => [x.id, x.name]), [['7', 'seven']]);
});

// ---- dead-letter ----

// Each bad record: [its exact bytes, its line, reason]; good rows around them.
function deadLetterCsv() {
  const parts = [
    ['id,name,amount,day\n', null],
    ['1,one,1.50,2024-01-01\n', 'good'],
    ['2,"two, quoted",2.00,\n', 'good'],
    ['3,three,12.345,2024-01-03\n', [4, /amount/]],
    ['4,four\n', [5, /expected 4 fields/]],
    ['5,"multi\nline ok",,\n', 'good'],
    ['6,fi"ve,,\n', [8, /quote/]],
    [Buffer.concat([Buffer.from('7,'), Buffer.from([0xff, 0xfe]), Buffer.from(',,\n')]), [9, /UTF-8/]],
    [',no id,,\n', [10, /required column 'id'/]],
    ['8,eight,,1999-12-31\r\n', 'good'],
    ['9,nine,,2024-13-01\r\n', [12, /day/]],
    ['10,"ten ""quoted""",-0.01,0001-01-01\n', 'good'],
    ['11,"open quote at the end,,\n12,swallowed,,\n', [14, /./]],
  ];
  return parts.map(([b, what]) => ({ bytes: Buffer.isBuffer(b) ? b : Buffer.from(b, 'utf8'), what }));
}

function deadLetterNdjson() {
  const parts = [
    ['{"id":1,"name":"one","amount":"1.50"}\n', 'good'],
    ['[1,2,3]\n', [2, /object/i]],
    ['{"id":2,"name":"two"\n', [3, /./]],
    ['{"id":3,"amount":"0.001"}\n', [4, /amount/]],
    ['{"id":4,"name":null,"day":"2024-02-29"}\n', 'good'],
    ['\n', null],
    ['{"name":"no id"}\n', [7, /required column 'id'/]],
    ['"just a string"\r\n', [8, /object/i]],
    ['{"id":5,"name":"five ✓"}', 'good'],
  ];
  return parts.map(([b, what]) => ({ bytes: Buffer.from(b, 'utf8'), what }));
}

for (const [format, make] of [['csv', deadLetterCsv], ['ndjson', deadLetterNdjson]]) {
  test(`dead-letter (${format}): good rows commit; rejected records' bytes and reasons are set aside exactly`, async () => {
    const name = await freshTable(`dl_${format}`);
    const parts = make();
    const bad = file(`mixed.${format}`, Buffer.concat(parts.map((x) => x.bytes)));
    const r = await ingest(ctx, name, [bad], { args: ['--on-error', 'dead-letter'] });
    const rejected = parts.filter((x) => Array.isArray(x.what));
    const good = parts.filter((x) => x.what === 'good');
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out.status, 'committed', show(r));
    assert.equal(r.out['rows-committed'], good.length, show(r));
    assert.equal(r.out['rows-dead-lettered'], rejected.length, show(r));

    const meta = (await loadTable(ctx, name)).metadata;
    const errorsPath = r.out['dead-letter-errors'];
    assert.ok(errorsPath, `dead-letter-errors in the output: ${show(r)}`);
    assert.ok(errorsPath.endsWith('.rejected.errors.ndjson'), errorsPath);
    const rejectedPath = errorsPath.slice(0, -'.errors.ndjson'.length);
    assert.equal(path.dirname(rejectedPath), path.join(localPath(meta.location), 'dead-letter'));
    assert.ok(r.out['batch-id'].startsWith(path.basename(rejectedPath, '.rejected')), 'named after the batch');

    // exact bytes, one record per line (a last record without its newline gets one)
    const want = Buffer.concat(rejected.map((x) => (x.bytes.at(-1) === 0x0a ? x.bytes : Buffer.concat([x.bytes, Buffer.from('\n')]))));
    assert.equal(fs.readFileSync(rejectedPath).toString('hex'), want.toString('hex'),
      `dead-letter bytes:\n${fs.readFileSync(rejectedPath).toString('utf8')}\nwant:\n${want.toString('utf8')}`);
    const errs = fs.readFileSync(errorsPath, 'utf8').split('\n').filter(Boolean).map(parseJsonBig);
    assert.equal(errs.length, rejected.length, fs.readFileSync(errorsPath, 'utf8'));
    errs.forEach((e, i) => {
      const [line, reason] = rejected[i].what;
      assert.equal(e.file, bad);
      assert.equal(e.line, line, `record ${i}: ${JSON.stringify(e)}`);
      assert.match(e.reason, reason, `record ${i}: ${JSON.stringify(e)}`);
    });
    const cur = currentSnapshot(meta);
    assert.equal(cur.summary['floe.rows-dead-lettered'], String(rejected.length));
    assert.equal(cur.summary['added-records'], String(good.length));
    const rows = await rowsOf(name);
    assert.equal(rows.length, good.length);
  });
}

test('dead-letter: --dead-letter-dir puts the files there; a clean batch writes none', async () => {
  const name = await freshTable('dldir');
  const dlDir = tmpDir('ingest-dl');
  const r = await ingest(ctx, name, [file('x.csv', 'id,name\n1,a\nbad,b\n2,c\n')],
    { args: ['--on-error', 'dead-letter', '--dead-letter-dir', dlDir] });
  assert.equal(r.out?.status, 'committed', show(r));
  assert.equal(path.dirname(r.out['dead-letter-errors']), dlDir);
  const rej = r.out['dead-letter-errors'].replace(/\.errors\.ndjson$/, '');
  assert.equal(fs.readFileSync(rej, 'utf8'), 'bad,b\n');
  const clean = await ingest(ctx, name, [file('y.csv', 'id,name\n3,d\n')], { args: ['--on-error', 'dead-letter'] });
  assert.equal(clean.out?.status, 'committed', show(clean));
  assert.equal(clean.out['dead-letter-errors'], undefined);
  assert.equal(clean.out['rows-dead-lettered'], 0);
  const meta = (await loadTable(ctx, name)).metadata;
  const dl = path.join(localPath(meta.location), 'dead-letter');
  assert.deepEqual(fs.existsSync(dl) ? fs.readdirSync(dl) : [], [], 'nothing in the table\'s dead-letter folder');
});

test('dead-letter: a batch whose every row is bad commits nothing and keeps the records', async () => {
  const name = await freshTable('dlall');
  const r = await ingest(ctx, name, [file('all-bad.csv', 'id,name\nx,a\ny,b\n')], { args: ['--on-error', 'dead-letter'] });
  assert.equal(r.code, 0, show(r));
  assert.equal(r.out.status, 'nothing-to-commit', show(r));
  assert.equal(r.out['rows-dead-lettered'], 2);
  const rej = r.out['dead-letter-errors'].replace(/\.errors\.ndjson$/, '');
  assert.equal(fs.readFileSync(rej, 'utf8'), 'x,a\ny,b\n');
  const meta = (await loadTable(ctx, name)).metadata;
  assert.equal(meta.snapshots.length, 0);
  assert.deepEqual(parquetOnDisk(meta), []);
});

// ---- new columns ----

for (const format of ['csv', 'ndjson']) {
  const input = format === 'csv'
    ? 'id,name,colour\n1,a,red\n2,b,\n3,c,"dark, blue"\n'
    : '{"id":1,"name":"a","colour":"red"}\n{"id":2,"name":"b"}\n{"id":3,"name":"c","colour":"dark, blue"}\n';

  test(`--new-columns (${format}): reject names the column; nothing is committed`, async () => {
    const name = await freshTable('newcol');
    const f = file(`newcol-reject.${format}`, input);
    const r = await ingest(ctx, name, [f]); // reject is the default
    assert.equal(r.code, 3, show(r));
    assert.match(r.out.error, /colour/, show(r));
    const r2 = await ingest(ctx, name, [f], { args: ['--new-columns', 'reject'] });
    assert.equal(r2.code, 3, show(r2));
    assert.match(r2.out.error, /colour/, show(r2));
    const meta = (await loadTable(ctx, name)).metadata;
    assert.equal(meta.snapshots.length, 0);
    assert.deepEqual(parquetOnDisk(meta), []);
  });

  test(`--new-columns (${format}): ignore drops the column`, async () => {
    const name = await freshTable('newcol');
    const r = await ingest(ctx, name, [file(`newcol-ignore.${format}`, input)], { args: ['--new-columns', 'ignore'] });
    assert.equal(r.out?.status, 'committed', show(r));
    const meta = (await loadTable(ctx, name)).metadata;
    assert.equal(meta.schemas.length, 1);
    assert.deepEqual(meta.schemas[0].fields.map((f) => f.name), fields.map((f) => f.name));
    const rows = await rowsOf(name);
    assert.deepEqual(rows.map((x) => [x.id, x.name]), [['1', 'a'], ['2', 'b'], ['3', 'c']]);
    assert.ok(rows.every((x) => !('colour' in x)));
  });

  test(`--new-columns (${format}): evolve adds an optional string column and its values read back`, async () => {
    const name = await freshTable('newcol');
    const r = await ingest(ctx, name, [file(`newcol-evolve.${format}`, input)], { args: ['--new-columns', 'evolve'] });
    assert.equal(r.out?.status, 'committed', show(r));
    const meta = (await loadTable(ctx, name)).metadata;
    const schema = meta.schemas.find((s) => s['schema-id'] === meta['current-schema-id']);
    assert.equal(meta.schemas.length, 2);
    const added = schema.fields.find((f) => f.name === 'colour');
    assert.ok(added, JSON.stringify(schema));
    assert.equal(added.type, 'string');
    assert.equal(added.required, false);
    assert.equal(added.id, 5, 'the next id after last-column-id 4');
    assert.equal(meta['last-column-id'], 5);
    assert.equal(currentSnapshot(meta)['schema-id'], schema['schema-id']);
    const rows = await rowsOf(name);
    assert.deepEqual(rows.map((x) => [x.id, x.colour]), [['1', 'red'], ['2', null], ['3', 'dark, blue']]);
    // the data file carries the new field id
    const f = snapshotFiles(currentSnapshot(meta))[0].file.file_path;
    const con = await duck();
    const ps = (await con.runAndReadAll(`SELECT name, field_id FROM parquet_schema(${sqlStr(localPath(f))})`)).getRowObjectsJson();
    assert.equal(Number(ps.find((x) => x.name === 'colour').field_id), 5);
    // a later batch with the column needs no further evolution
    const again = await ingest(ctx, name, [file(`newcol-again.${format}`, format === 'csv' ? 'id,colour\n4,green\n' : '{"id":4,"colour":"green"}\n')]);
    assert.equal(again.out?.status, 'committed', show(again));
    assert.equal((await loadTable(ctx, name)).metadata.schemas.length, 2);
  });
}

// evolve types the new columns from their values (the inference of
// `floe ingest --create`), widening when inputs disagree, string as fallback.
test('--new-columns evolve: new columns are typed from the data (long, timestamp), DuckDB reads them', async () => {
  const name = await freshTable('newtyped');
  const r = await ingest(ctx, name, [
    file('typed-1.csv', 'id,qty,seen_at,note\n1,7,2024-03-01T10:00:00,a\n2,,2024-03-02T11:30:00.5,\n'),
    file('typed-2.csv', 'id,qty,seen_at,ratio\n3,-12,2024-03-03T00:00:00,1\n4,40,,2.5\n'),
  ], { args: ['--new-columns', 'evolve'] });
  assert.equal(r.out?.status, 'committed', show(r));
  const meta = (await loadTable(ctx, name)).metadata;
  const schema = meta.schemas.find((s) => s['schema-id'] === meta['current-schema-id']);
  const typeOf = Object.fromEntries(schema.fields.map((f) => [f.name, f.type]));
  assert.equal(typeOf.qty, 'long', JSON.stringify(schema));
  assert.equal(typeOf.seen_at, 'timestamp', JSON.stringify(schema));
  assert.equal(typeOf.note, 'string', 'a column of text stays a string');
  assert.equal(typeOf.ratio, 'double', 'long in one row and double in another widen to double');
  const con = await duck();
  const f = snapshotFiles(currentSnapshot(meta)).map((x) => sqlStr(localPath(x.file.file_path)));
  const rows = (await con.runAndReadAll(
    `SELECT id, qty, CAST(seen_at AS VARCHAR) AS seen_at, typeof(qty) AS tq, typeof(seen_at) AS ts, ratio
       FROM read_parquet([${f.join(', ')}], union_by_name => true) ORDER BY id`)).getRowObjectsJson();
  assert.deepEqual(rows.map((x) => [x.id, x.qty, x.seen_at, x.ratio]), [
    ['1', '7', '2024-03-01 10:00:00', null],
    ['2', null, '2024-03-02 11:30:00.5', null],
    ['3', '-12', '2024-03-03 00:00:00', 1],
    ['4', '40', null, 2.5],
  ]);
  assert.equal(rows[0].tq, 'BIGINT');
  assert.equal(rows[0].ts, 'TIMESTAMP');
});

test('--new-columns evolve (ndjson): values that disagree across inputs fall back to string', async () => {
  const name = await freshTable('newmixed');
  const r = await ingest(ctx, name, [
    file('mixed-1.ndjson', '{"id":1,"flag":true,"code":5}\n'),
    file('mixed-2.ndjson', '{"id":2,"flag":false,"code":"x5"}\n'),
  ], { args: ['--new-columns', 'evolve'] });
  assert.equal(r.out?.status, 'committed', show(r));
  const meta = (await loadTable(ctx, name)).metadata;
  const schema = meta.schemas.find((s) => s['schema-id'] === meta['current-schema-id']);
  const typeOf = Object.fromEntries(schema.fields.map((f) => [f.name, f.type]));
  assert.equal(typeOf.flag, 'boolean', JSON.stringify(schema));
  assert.equal(typeOf.code, 'string', JSON.stringify(schema));
  const rows = await rowsOf(name);
  assert.deepEqual(rows.map((x) => [x.id, x.flag, x.code]), [['1', true, '5'], ['2', false, 'x5']]);
});
