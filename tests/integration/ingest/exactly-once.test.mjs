// Exactly once, in process and through --catalog-uri (REST):
// - the same run twice: the second is already-committed, one snapshot;
// - a run "killed after its commit, before printing" (simulated: it ran to
//   completion, nothing is deleted, it runs again): already-committed, no
//   new files written;
// - a run SIGKILLed at a random moment while writing, then rerun: exactly one
//   snapshot holding the rows once;
// - two concurrent runs of different batches: both land (two snapshots,
//   totals add up);
// - two concurrent runs of the SAME batch: exactly one commits, the other
//   reports already-committed;
// - in process, two runs that read one version and then queue on the row
//   lock (held by a psql session until both wait): the second to take it
//   builds on the first's commit, because the version it read is stale by
//   then (a commit reuses what it read only while the row still points there).
// Random delays come from a seed printed in every failure message.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { psql, psqlBin } from '../lib/harness.mjs';
import {
  startCatalog, createTable, loadTable, ingest, show, snapshotFiles, currentSnapshot, localPath, parquetOnDisk, duck,
  sqlStr, tmpDir, seededRandom,
} from './lib.mjs';

const seed = Number(process.env.FLOE_TEST_SEED ?? (Date.now() % 100000));
const rand = seededRandom(seed);

const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 's', type: 'string', required: false },
];
let ctx;
let dir;
let tableNo = 0;

// Product bugs (floe ingest over REST); see the report of issue 4's ingest tests.

function writeCsv(name, from, n) {
  const parts = ['id,s\n'];
  for (let i = from; i < from + n; i++) parts.push(`${i},row-${i}-${(i * 7919) % 100003}\n`);
  const file = path.join(dir, name);
  fs.writeFileSync(file, parts.join(''));
  return file;
}

// Rows for a run of about 1.5 s on this build, between 60,000 and 300,000 (a multiple of
// 300), and how long a run of them takes here, to aim the kills inside it.  The main build
// gets 300,000; a sanitizer build, several times slower, fewer rows for a run as long.
// make(rows) writes a probe input (a path of its own: another batch); run(file) ingests it
// into a new table.
async function sizedRun(make, run) {
  const timed = async (n) => {
    const t0 = Date.now();
    const r = await run(make(n));
    assert.equal(r.code, 0, show(r));
    return Math.max(20, Date.now() - t0);
  };
  const small = await timed(60000);
  const rows = Math.min(300000, Math.max(60000, Math.round((60000 * 1500) / small / 300) * 300));
  return { rows, span: rows === 60000 ? small : await timed(rows) };
}

async function newTable(tag) {
  tableNo += 1;
  const name = `${tag}_${tableNo}`;
  await createTable(ctx, name, fields);
  return name;
}

// Snapshots, rows per the summary, and the rows DuckDB counts in the current snapshot's files.
async function state(name) {
  const meta = (await loadTable(ctx, name)).metadata;
  const cur = currentSnapshot(meta);
  let rows = 0;
  let distinct = 0;
  let files = [];
  if (cur) {
    files = snapshotFiles(cur).map((f) => localPath(f.file.file_path));
    const con = await duck();
    const [r] = (await con.runAndReadAll(
      `SELECT count(*)::INTEGER, count(DISTINCT id)::INTEGER FROM read_parquet([${files.map(sqlStr).join(', ')}])`)).getRows();
    [rows, distinct] = r;
  }
  return { meta, cur, snapshots: meta.snapshots, rows, distinct, files, total: cur ? Number(cur.summary['total-records']) : 0 };
}

before(async () => {
  ctx = await startCatalog('ingest_once');
  dir = tmpDir('ingest-once');
});

after(async () => {
  await ctx?.floe.stop();
});

for (const mode of ['in-process', 'rest']) {
  const rest = mode === 'rest';

  test(`${mode}: the same run twice commits once`, async () => {
    const name = await newTable('twice');
    const file = writeCsv(`twice-${mode}.csv`, 0, 100);
    const a = await ingest(ctx, name, [file], { rest });
    assert.equal(a.code, 0, show(a));
    assert.equal(a.out.status, 'committed', show(a));
    const b = await ingest(ctx, name, [file], { rest });
    assert.equal(b.code, 0, show(b));
    assert.equal(b.out.status, 'already-committed', show(b));
    assert.equal(String(b.out['snapshot-id']), String(a.out['snapshot-id']));
    assert.equal(b.out['batch-id'], a.out['batch-id']);
    assert.equal(b.out['rows-committed'], 0);
    // and through the other mode too: the batch identity is the table's, not the client's
    const c = await ingest(ctx, name, [file], { rest: !rest });
    assert.equal(c.out?.status, 'already-committed', show(c));
    const s = await state(name);
    assert.equal(s.snapshots.length, 1);
    assert.equal(s.rows, 100);
    assert.equal(s.cur.summary['floe.batch-id'], a.out['batch-id']);
  });

  test(`${mode}: a run whose output was lost after the commit reruns as already-committed`, async () => {
    const name = await newTable('lost');
    const file = writeCsv(`lost-${mode}.csv`, 0, 500);
    const a = await ingest(ctx, name, [file], { rest });
    assert.equal(a.code, 0, show(a));
    // (its printed line is ignored, as if the process died right after committing)
    const onDiskBefore = parquetOnDisk((await loadTable(ctx, name)).metadata);
    assert.equal(onDiskBefore.length, 1, 'the first run wrote one data file');
    const b = await ingest(ctx, name, [file], { rest });
    assert.equal(b.code, 0, show(b));
    assert.equal(b.out.status, 'already-committed', show(b));
    assert.equal(b.out['files-written'], 0);
    const s = await state(name);
    assert.equal(s.snapshots.length, 1);
    assert.equal(s.rows, 500);
    assert.deepEqual(parquetOnDisk(s.meta), onDiskBefore, 'the rerun wrote no data files');
  });

  test(`${mode}: SIGKILL at a random moment mid-write, then rerun: one snapshot, rows once`, async () => {
    const { rows: N, span } = await sizedRun(
      (n) => writeCsv(`probe-${mode}.csv`, 0, n),
      async (file) => ingest(ctx, await newTable('probe'), [file], { rest }));
    for (let k = 0; k < 3; k++) {
      const name = await newTable('kill');
      // one input per table (the same input into another table is BUG_KEY_PER_TABLE over REST)
      const file = writeCsv(`kill-${mode}-${k}.csv`, 0, N);
      const delay = Math.floor(rand() * span);
      let timer;
      const killed = await ingest(ctx, name, [file], {
        rest,
        onSpawn: (proc) => {
          timer = setTimeout(() => proc.kill('SIGKILL'), delay);
        },
      });
      clearTimeout(timer);
      const rerun = await ingest(ctx, name, [file], { rest });
      const why = `seed ${seed}, ${N} rows, kill after ${delay} of ~${span} ms (killed run: ${killed.signal ?? killed.out?.status})\n${show(rerun)}`;
      assert.equal(rerun.code, 0, why);
      if (killed.signal === 'SIGKILL') assert.ok(['committed', 'already-committed'].includes(rerun.out.status), why);
      else assert.equal(rerun.out.status, 'already-committed', why);
      const s = await state(name);
      assert.equal(s.snapshots.length, 1, why);
      assert.equal(s.total, N, why);
      assert.equal(s.rows, N, why);
      assert.equal(s.distinct, N, why);
      assert.equal(s.cur.summary['floe.batch-id'], rerun.out['batch-id'], why);
    }
  });

  test(`${mode}: two concurrent runs of different batches both land`, async () => {
    const name = await newTable('conc');
    const f1 = writeCsv(`conc-a-${mode}.csv`, 0, 20000);
    const f2 = writeCsv(`conc-b-${mode}.csv`, 20000, 30000);
    const [a, b] = await Promise.all([ingest(ctx, name, [f1], { rest }), ingest(ctx, name, [f2], { rest })]);
    assert.equal(a.code, 0, show(a));
    assert.equal(b.code, 0, show(b));
    assert.equal(a.out.status, 'committed', show(a));
    assert.equal(b.out.status, 'committed', show(b));
    const s = await state(name);
    assert.equal(s.snapshots.length, 2);
    assert.equal(s.total, 50000);
    assert.equal(s.rows, 50000);
    assert.equal(s.distinct, 50000);
    assert.deepEqual(s.snapshots.map((x) => x.summary['floe.batch-id']).sort(), [a.out['batch-id'], b.out['batch-id']].sort());
  });

  test(`${mode}: two concurrent runs of the same batch: exactly one commits`, async () => {
    for (let k = 0; k < 3; k++) {
      const name = await newTable('same');
      const file = writeCsv(`same-${mode}-${k}.csv`, 0, 20000 + k);
      const [a, b] = await Promise.all([ingest(ctx, name, [file], { rest }), ingest(ctx, name, [file], { rest })]);
      const why = `round ${k}\n${show(a)}\n${show(b)}`;
      assert.equal(a.code, 0, why);
      assert.equal(b.code, 0, why);
      assert.deepEqual([a.out.status, b.out.status].sort(), ['already-committed', 'committed'], why);
      assert.equal(String(a.out['snapshot-id']), String(b.out['snapshot-id']), why);
      const s = await state(name);
      assert.equal(s.snapshots.length, 1, why);
      assert.equal(s.rows, 20000 + k, why);
      // the loser's data files are not left behind
      assert.deepEqual(parquetOnDisk(s.meta), [...s.files].sort(), `${why}\nonly the committed files remain in data/`);
    }
  });
}

async function waitUntil(what, fn, ms = 20000) {
  const until = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > until) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

for (const same of [false, true]) {
  test(`in-process: two runs read one version, then queue on the row lock (${same ? 'same batch' : 'different batches'})`, async () => {
    const name = await newTable(same ? 'queued_same' : 'queued');
    const f1 = writeCsv(`queued-a-${same}.csv`, 0, 500);
    const f2 = same ? f1 : writeCsv('queued-b.csv', 500, 700);
    const holder = spawn(psqlBin(), [ctx.dbUrl, '-X', '-q', '-v', 'ON_ERROR_STOP=1'], { stdio: ['pipe', 'ignore', 'pipe'] });
    const held = new Promise((resolve) => holder.on('close', resolve));
    holder.stdin.write(`BEGIN; SELECT 1 FROM table_entry WHERE name = ${sqlStr(name)} FOR UPDATE;\n`);
    const sessions = (cond) => Number(psql(ctx.dbUrl, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND ${cond}`));
    await waitUntil('the psql session holds the row lock', () => sessions("state = 'idle in transaction'") === 1);
    const runs = Promise.all([ingest(ctx, name, [f1]), ingest(ctx, name, [f2])]);
    await waitUntil('both runs wait on the row lock', () => sessions("wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE OF t%'") === 2);
    holder.stdin.end('COMMIT;\n');
    assert.equal(await held, 0, 'the psql session ended cleanly');
    const [a, b] = await runs;
    const why = `${show(a)}\n${show(b)}`;
    assert.equal(a.code, 0, why);
    assert.equal(b.code, 0, why);
    const s = await state(name);
    if (same) {
      assert.deepEqual([a.out.status, b.out.status].sort(), ['already-committed', 'committed'], why);
      assert.equal(s.snapshots.length, 1, why);
      assert.equal(s.rows, 500, why);
    } else {
      assert.deepEqual([a.out.status, b.out.status], ['committed', 'committed'], why);
      assert.equal(s.snapshots.length, 2, why);
      const [first, second] = s.snapshots;
      assert.equal(String(second['parent-snapshot-id']), String(first['snapshot-id']), why);
      assert.equal(s.total, 1200, why);
      assert.equal(s.rows, 1200, why);
      assert.equal(s.distinct, 1200, why);
    }
  });
}

test('rest: the same file into two different tables commits to both', async () => {
  const file = writeCsv('two-tables.csv', 0, 50);
  const t1 = await newTable('pair');
  const t2 = await newTable('pair');
  const a = await ingest(ctx, t1, [file], { rest: true });
  const b = await ingest(ctx, t2, [file], { rest: true });
  assert.equal(a.out?.status, 'committed', show(a));
  assert.equal(b.out?.status, 'committed', show(b));
  assert.equal((await state(t2)).rows, 50);
});

test('in-process: the same file into two different tables commits to both', async () => {
  const file = writeCsv('two-tables-inproc.csv', 0, 50);
  const t1 = await newTable('pair');
  const t2 = await newTable('pair');
  const a = await ingest(ctx, t1, [file]);
  const b = await ingest(ctx, t2, [file]);
  assert.equal(a.out?.status, 'committed', show(a));
  assert.equal(b.out?.status, 'committed', show(b));
  assert.equal((await state(t2)).rows, 50);
});

// The dead-letter file is named after the batch and opened for append, so a
// rerun after a crash mid-write appends every rejected record again.

test('dead-letter: SIGKILL mid-write, then rerun: each rejected record is set aside once', async () => {
  const make = (tag, n) => {
    const parts = ['id,s\n'];
    for (let i = 0; i < n; i++) parts.push(i % 3 === 0 ? `bad${i},x\n` : `${i},y\n`);
    const f = path.join(dir, `dl-${tag}.csv`);
    fs.writeFileSync(f, parts.join(''));
    return f;
  };
  const { rows: N, span } = await sizedRun(
    (n) => make('probe', n),
    async (file) => ingest(ctx, await newTable('dlprobe'), [file], { args: ['--on-error', 'dead-letter'] }));
  const name = await newTable('dlkill');
  const file = make('kill', N);
  const delay = Math.floor(span * (0.3 + 0.3 * rand()));
  let timer;
  const killed = await ingest(ctx, name, [file], {
    args: ['--on-error', 'dead-letter'],
    onSpawn: (proc) => { timer = setTimeout(() => proc.kill('SIGKILL'), delay); },
  });
  clearTimeout(timer);
  const rerun = await ingest(ctx, name, [file], { args: ['--on-error', 'dead-letter'] });
  const why = `seed ${seed}, ${N} rows, kill after ${delay} of ~${span} ms (killed run: ${killed.signal ?? killed.out?.status})\n${show(rerun)}`;
  assert.equal(rerun.code, 0, why);
  const s = await state(name);
  assert.equal(s.snapshots.length, 1, why);
  assert.equal(s.rows, N - N / 3, why);
  const dl = path.join(localPath(s.meta.location), 'dead-letter');
  const rejected = fs.readdirSync(dl).filter((f) => f.endsWith('.rejected'));
  assert.equal(rejected.length, 1, why);
  const lines = fs.readFileSync(path.join(dl, rejected[0]), 'utf8').split('\n').filter(Boolean);
  assert.equal(lines.length, N / 3, `${why}\nrejected records in ${rejected[0]}`);
  assert.equal(new Set(lines).size, lines.length, why);
  const errs = fs.readFileSync(path.join(dl, `${rejected[0]}.errors.ndjson`), 'utf8').split('\n').filter(Boolean);
  assert.equal(errs.length, N / 3, why);
});

// A run reads its first rows while the batch identity (a hash of the inputs)
// is still being computed, and waits for it before it writes anything: a
// rerun of a committed batch must still write nothing, whatever its read
// meets before it knows. Here the rerun's first record is a bad one, so
// without that wait its dead-letter file would be opened (and truncated)
// before the batch is found committed; and a strict rerun of the same
// inputs fails on that record before it knows, yet the batch is committed.
for (const mode of ['in-process', 'rest']) {
  test(`${mode}: a rerun of a committed batch leaves its dead letters alone, even when strict`, async () => {
    const rest = mode === 'rest';
    const name = await newTable('dlrerun');
    const parts = ['id,s\n', 'not-a-number,first\n'];
    for (let i = 0; i < 200000; i++) parts.push(`${i},row-${i}\n`);
    const file = path.join(dir, `dlrerun-${mode}.csv`);
    fs.writeFileSync(file, parts.join(''));
    const a = await ingest(ctx, name, [file], { rest, args: ['--on-error', 'dead-letter'] });
    assert.equal(a.out?.status, 'committed', show(a));
    assert.equal(a.out['rows-dead-lettered'], 1, show(a));
    const dl = path.join(localPath((await loadTable(ctx, name)).metadata.location), 'dead-letter');
    const [rejected] = fs.readdirSync(dl).filter((f) => f.endsWith('.rejected'));
    assert.ok(rejected, `no dead-letter file in ${dl}`);
    // mark both files: a rerun that reopened them would lose the marks
    for (const f of [rejected, `${rejected}.errors.ndjson`]) fs.appendFileSync(path.join(dl, f), 'marked\n');
    const before = Object.fromEntries(fs.readdirSync(dl).map((f) => [f, fs.readFileSync(path.join(dl, f), 'utf8')]));
    const onDisk = parquetOnDisk((await loadTable(ctx, name)).metadata);

    const b = await ingest(ctx, name, [file], { rest, args: ['--on-error', 'dead-letter'] });
    assert.equal(b.out?.status, 'already-committed', show(b));
    assert.equal(b.out['batch-id'], a.out['batch-id']);
    const c = await ingest(ctx, name, [file], { rest, args: ['--on-error', 'strict'] });
    assert.equal(c.code, 0, show(c));
    assert.equal(c.out?.status, 'already-committed', show(c));

    const after = Object.fromEntries(fs.readdirSync(dl).map((f) => [f, fs.readFileSync(path.join(dl, f), 'utf8')]));
    assert.deepEqual(after, before, 'the reruns touched the dead-letter files');
    const s = await state(name);
    assert.equal(s.snapshots.length, 1);
    assert.equal(s.rows, 200000);
    assert.deepEqual(parquetOnDisk(s.meta), onDisk, 'the reruns wrote data files');
  });
}
