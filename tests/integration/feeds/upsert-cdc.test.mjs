// Change data capture in mode upsert: a row whose cdc field says delete (a
// string beginning with D or d, a boolean true) removes its key's row and is
// not written itself; inside a batch it takes part in last-row-wins like any
// other row.  Random interleavings of inserts, updates and deletes land
// through a directory feed with "cdc-field"; after every round DuckDB (over
// the live data files) and icebird (the whole table) read exactly the
// model's rows.  `floe ingest --cdc-field` does the same in process and over
// REST, with a boolean column; the summary counts what the deletes removed.
// A cdc field that is missing, of another type, the key, or given without
// mode upsert is refused with a message that names it.
// Seeded: a failure prints the seed that replays it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { psql, request, waitFor } from '../lib/harness.mjs';
import { expectError } from '../lib/checks.mjs';
import { startCatalog, loadTable, ingest, show, currentSnapshot, seededRandom, tmpDir } from '../ingest/lib.mjs';
import {
  F, land, createFeed, ledger, waitLedger, checkRows, routeFileFetch, createKeyed as createKeyedTable,
} from './lib.mjs';

const SEED = Number(process.env.UPSERT_SEED ?? 20261205);
let ctx;
let root;
let unroute;

before(async () => {
  ctx = await startCatalog('feeds_cdc');
  root = tmpDir('feeds-cdc');
  unroute = await routeFileFetch(); // icebird reads the file warehouse
});

after(async () => {
  await unroute?.();
  await ctx?.floe.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

// id (the key), v, and the cdc column (string or boolean).
const createKeyed = (name, type = 'string', cdcName = 'op') => createKeyedTable(ctx, name, { name: cdcName, type });

const isDelete = (op) => op === true || (typeof op === 'string' && /^[Dd]/.test(op));
// Applies rows to the model in input order: a delete removes its key.
function apply(model, rows) {
  for (const r of rows) {
    if (isDelete(r.op)) model.delete(r.id);
    else model.set(r.id, r);
  }
}

test('random inserts, updates and deletes through a feed: DuckDB and icebird read the model', async () => {
  const rnd = seededRandom(SEED);
  const pick = (n) => Math.floor(rnd() * n);
  const ops = ['c', 'u', 'r', 'I', 'U', null, 'd', 'D', 'DELETE', 'delete'];
  const dir = path.join(root, 'cdc');
  fs.mkdirSync(dir);
  await createKeyed('cdc');
  await createFeed(ctx.base, {
    name: 'cdc', table: 'ns.cdc', source: { type: 'directory', path: dir, glob: '*.ndjson' },
    format: 'ndjson', mode: 'upsert', 'cdc-field': 'op', interval: 'PT1S', batch: { 'max-objects': 3 },
  });
  const def = (await request(ctx.base, 'GET', `${F}/cdc`)).json.definition;
  assert.equal(def['cdc-field'], 'op', JSON.stringify(def));
  const model = new Map();
  let objects = 0;
  let deletes = 0;
  let hits = 0; // deletes of a key the table held when its batch began
  for (let round = 0; round < 6; round++) {
    const before = new Set(model.keys());
    const nobj = 1 + pick(3);
    for (let k = 0; k < nobj; k++) {
      const rows = [];
      const nrows = 3 + pick(20);
      for (let i = 0; i < nrows; i++) {
        // keys from a small range: updates, deletes of present and absent
        // keys, and a key's several rows inside one batch
        const id = pick(40);
        // the first round only inserts, so that later deletes find rows
        const op = round === 0 ? 'c' : ops[pick(ops.length)];
        rows.push({ id, v: `r${round}o${k}i${i}`, op });
        if (isDelete(op)) {
          deletes++;
          if (before.has(id)) hits++;
        }
      }
      apply(model, rows);
      land(dir, `r${String(round).padStart(2, '0')}-${k}.ndjson`, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
      objects++;
    }
    await waitLedger(ctx.dbUrl, 'cdc', objects);
    await checkRows(ctx, 'cdc', model, ['id', 'v', 'op'], `after round ${round} (seed ${SEED})`);
  }
  assert.ok(deletes > 20 && hits > 5, `the rounds deleted rows: ${deletes} deletes, ${hits} of present keys (seed ${SEED})`);
  const meta = (await loadTable(ctx, 'cdc')).metadata;
  assert.equal(Number(currentSnapshot(meta).summary['total-records']), model.size, 'total-records is the model size');
  const removed = meta.snapshots.reduce((n, s) => n + Number(s.summary['floe.rows-deleted-by-key'] ?? 0), 0);
  assert.ok(removed > 0, 'some snapshot counts rows its deletes removed');
  assert.ok(ledger(ctx.dbUrl, 'cdc').every((o) => o.outcome === 'committed'));

  // Pushes to the feed take the same path: a delete, a delete put back, a new key.
  const present = [...model.keys()].sort((a, b) => a - b);
  assert.ok(present.length >= 2, `rows to delete (seed ${SEED})`);
  const pushed = [
    { id: present[0], v: 'gone', op: 'd' },
    { id: present[1], v: 'gone', op: 'D' }, { id: present[1], v: 'back', op: 'u' },
    { id: 1000, v: 'new', op: 'c' },
  ];
  const res = await request(ctx.base, 'POST', `${F}/cdc/records`, {
    headers: { 'Content-Type': 'application/x-ndjson' }, body: `${pushed.map((r) => JSON.stringify(r)).join('\n')}\n`,
  });
  assert.equal(res.status, 202, res.text);
  apply(model, pushed);
  await waitFor(() => psql(ctx.dbUrl, 'SELECT count(*) FROM feed_spool WHERE batch_id IS NULL') === '0',
    { timeoutMs: 20000, what: 'the push to land' });
  await checkRows(ctx, 'cdc', model, ['id', 'v', 'op'], `after a push (seed ${SEED})`);
});

test('floe ingest --cdc-field: in process and over REST, a boolean column, the summary counts', async () => {
  await createKeyed('cli', 'boolean', 'deleted');
  const dir = path.join(root, 'cli');
  fs.mkdirSync(dir);
  const model = new Map();
  // [over REST, CSV, rows the deletes remove from the table, rows replaced]
  const steps = [
    [false, 'id,v,deleted\n1,a,false\n2,b,false\n3,c,\n4,d,false\n', 0, 0],
    // 2 deleted; 3 deleted then put back; 4 updated then deleted; 9 never existed
    [true, 'id,v,deleted\n2,x,true\n3,y,true\n3,e,false\n4,f,false\n4,g,true\n9,h,true\n', 2, 1],
    // a batch of deletes only: 1 goes, 7 never existed
    [false, 'id,v,deleted\n1,z,true\n7,z,true\n', 1, 0],
    // deletes that match nothing: an empty append, recorded as the batch
    [true, 'id,v,deleted\n7,z,true\n8,z,true\n', 0, 0],
    // deleted keys come back
    [true, 'id,v,deleted\n2,k,false\n4,l,\n', 0, 0],
  ];
  for (const [k, [rest, text, removed, replaced]] of steps.entries()) {
    const file = path.join(dir, `s${k}.csv`);
    fs.writeFileSync(file, text);
    apply(model, text.trim().split('\n').slice(1).map((line) => {
      const [id, v, d] = line.split(',');
      return { id: Number(id), v, deleted: d === '' ? null : d === 'true', op: d === 'true' };
    }));
    const r = await ingest(ctx, 'cli', [file], { rest, args: ['--mode', 'upsert', '--cdc-field', 'deleted'] });
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out.status, 'committed', show(r));
    const meta = await checkRows(ctx, 'cli', model, ['id', 'v', 'deleted'], `after step ${k}${rest ? ' (REST)' : ''}`);
    const sum = currentSnapshot(meta).summary;
    assert.equal(sum['floe.batch-id'], r.out['batch-id'], `step ${k}: the batch's own snapshot`);
    assert.equal(sum['floe.rows-deleted-by-key'], String(removed), `step ${k}: ${JSON.stringify(sum)}`);
    assert.equal(sum['floe.rows-replaced'], String(replaced), `step ${k}: ${JSON.stringify(sum)}`);
    if (k === 3) {
      assert.equal(sum.operation, 'append', JSON.stringify(sum));
      assert.equal(sum['added-data-files'] ?? '0', '0', JSON.stringify(sum)); // absent when 0, as Java writes it
      // Exactly once: the same file again is that batch, not a new delete.
      const again = await ingest(ctx, 'cli', [file], { args: ['--mode', 'upsert', '--cdc-field', 'deleted'] });
      assert.equal(again.out.status, 'already-committed', show(again));
    }
  }
  assert.deepEqual([...model.keys()].sort(), [2, 3, 4]);

  // Refusals name the problem, and commit nothing.
  const before = (await loadTable(ctx, 'cli')).metadata['current-snapshot-id'];
  const file = path.join(dir, 'bad.csv');
  fs.writeFileSync(file, 'id,v,deleted\n5,a,true\n');
  let r = await ingest(ctx, 'cli', [file], { args: ['--cdc-field', 'deleted'] });
  assert.equal(r.code, 2, show(r));
  assert.match(r.stderr, /--cdc-field is for --mode upsert/);
  for (const [field, why] of [['gone', /cdc field gone is not a top-level column/], ['id', /cdc field id is a key column/]]) {
    r = await ingest(ctx, 'cli', [file], { args: ['--mode', 'upsert', '--cdc-field', field] });
    assert.equal(r.code, 3, show(r));
    assert.match(r.stderr, why, show(r));
  }
  assert.equal((await loadTable(ctx, 'cli')).metadata['current-snapshot-id'], before, 'nothing was committed');
  // v is a string column, so a legal cdc field: "a" says no delete, and 5 is upserted.
  r = await ingest(ctx, 'cli', [file], { args: ['--mode', 'upsert', '--cdc-field', 'v'] });
  assert.equal(r.code, 0, show(r));
  model.set(5, { id: 5, v: 'a', deleted: true });
  await checkRows(ctx, 'cli', model, ['id', 'v', 'deleted'], 'after the upsert keyed by v');
});

test('deletes of rows in files of an older partition spec, and nothing of the current one', async () => {
  await createKeyed('evo');
  const dir = path.join(root, 'evo');
  fs.mkdirSync(dir);
  const model = new Map();
  const run = async (name, text) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    apply(model, text.trim().split('\n').slice(1).map((line) => {
      const [id, v, op] = line.split(',');
      return { id: Number(id), v, op };
    }));
    const r = await ingest(ctx, 'evo', [file], { args: ['--mode', 'upsert', '--cdc-field', 'op'] });
    assert.equal(r.code, 0, show(r));
    return checkRows(ctx, 'evo', model, ['id', 'v', 'op'], `after ${name}`);
  };
  await run('a.csv', 'id,v,op\n1,a,c\n2,b,c\n3,c,c\n4,d,c\n');
  const res = await request(ctx.base, 'POST', `${ctx.p}/namespaces/ns/tables/evo`, {
    body: { requirements: [], updates: [
      { action: 'add-spec', spec: { 'spec-id': 1, fields: [{ 'source-id': 1, 'field-id': 1000, name: 'b', transform: 'bucket[2]' }] } },
      { action: 'set-default-spec', 'spec-id': -1 }] },
  });
  assert.equal(res.status, 200, res.text);
  // Every row of the table is in spec 0's file: the snapshot's only manifest is spec 0's.
  const meta = await run('b.csv', 'id,v,op\n2,x,d\n9,y,d\n');
  const sum = currentSnapshot(meta).summary;
  assert.equal(sum.operation, 'overwrite', JSON.stringify(sum));
  assert.equal(sum['floe.rows-deleted-by-key'], '1', JSON.stringify(sum));
  assert.equal(sum['total-records'], '3', JSON.stringify(sum));
  // Then rows of both specs, and a delete in each.
  await run('c.csv', 'id,v,op\n5,e,c\n6,f,c\n');
  await run('d.csv', 'id,v,op\n1,z,D\n5,z,D\n6,g,u\n');
});

test('a feed definition with a cdc field it cannot use is a 400 that names it', async () => {
  await createKeyed('defs', 'long', 'n');
  const dir = path.join(root, 'defs');
  fs.mkdirSync(dir);
  const body = { name: 'defs', table: 'ns.defs', source: { type: 'directory', path: dir, glob: '*.csv' }, format: 'csv', mode: 'upsert' };
  expectError(await request(ctx.base, 'POST', F, { body: { ...body, mode: 'append', 'cdc-field': 'v' } }),
    400, 'BadRequestException', 'cdc-field is only for mode upsert');
  expectError(await request(ctx.base, 'POST', F, { body: { ...body, 'cdc-field': '' } }),
    400, 'BadRequestException', 'cdc-field must be a column name');
  expectError(await request(ctx.base, 'POST', F, { body: { ...body, 'cdc-field': 'gone' } }),
    400, 'BadRequestException', 'cdc field gone is not a top-level column');
  expectError(await request(ctx.base, 'POST', F, { body: { ...body, 'cdc-field': 'n' } }),
    400, 'BadRequestException', 'cdc field n must be a string or boolean column');
  expectError(await request(ctx.base, 'POST', F, { body: { ...body, 'cdc-field': 'id' } }),
    400, 'BadRequestException', 'cdc field id is a key column');
  expectError(await request(ctx.base, 'POST', F, { body: { ...body, 'cdc-field': 7 } }),
    400, 'BadRequestException', 'cdc-field');
  await createFeed(ctx.base, { ...body, 'cdc-field': 'v' });
});
