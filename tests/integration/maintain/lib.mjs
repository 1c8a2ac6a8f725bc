// Helpers of the `floe maintain` tests: run the command, append with
// `floe ingest`, commit through REST, list a snapshot's live files and read
// its rows with DuckDB and Floe's own reader (parquet_dump).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import avro from 'avsc';
import { bigLong } from '../lib/avro.mjs';
import {
  loadTable, ingest, show, currentSnapshot, localPath, readAvro, duck, sqlStr, parseJsonBig,
} from '../ingest/lib.mjs';
import { call, tablePath } from '../tables/lib.mjs';
import { floeBin, request, waitFor } from '../lib/harness.mjs';
import { parse, sum } from '../lib/prom.mjs';
import { buildDir } from '../write-path/samples.mjs';

const dumpBin = path.join(buildDir, 'tests', 'unit', 'storage', 'parquet_dump');

// An Avro object container file: {type, header, recs} (longs as BigInt).
export function decodeAvro(file) {
  return new Promise((resolve, reject) => {
    const recs = [];
    let type;
    let header;
    avro.createFileDecoder(file, {
      parseHook: (schema) => avro.Type.forSchema(schema, { wrapUnions: false, registry: { long: bigLong } }),
    })
      .on('metadata', (t, codec, h) => { type = t; header = h; })
      .on('data', (r) => recs.push(r))
      .on('error', reject)
      .on('end', () => resolve({ type, header, recs }));
  });
}

// Writes recs with type and the header metadata meta (its avro.* keys are
// the encoder's own).
export function encodeAvro(file, type, meta, recs) {
  const metadata = Object.fromEntries(Object.entries(meta).filter(([k]) => !k.startsWith('avro.')));
  return new Promise((resolve, reject) => {
    const enc = new avro.streams.BlockEncoder(type, { codec: 'null', metadata, writeHeader: 'always' });
    const out = fs.createWriteStream(file);
    enc.on('error', reject).pipe(out).on('error', reject).on('finish', resolve);
    for (const r of recs) enc.write(r);
    enc.end();
  });
}

// The schema of the tables these tests make: id and name.
export const fields = [
  { id: 1, name: 'id', type: 'long', required: true },
  { id: 2, name: 'name', type: 'string', required: false },
];

// The helpers bound to one catalog (ctx of startCatalog) and a scratch dir.
export function helpers(ctx, dir) {
  // The server's table cache learns of in-process commits (`floe ingest`,
  // `floe maintain`) by NOTIFY, so a load right after one may be stale: load
  // until the current snapshot satisfies pred (at most 10 s).
  async function settled(name, pred) {
    for (let i = 0; ; i++) {
      const meta = (await loadTable(ctx, name)).metadata;
      const snap = currentSnapshot(meta);
      if (snap && pred(snap)) return { meta, snap };
      if (i >= 200) throw new Error(`table ${name} did not reach the expected state`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  // The count of NOTIFYs the server's table cache has applied: a `floe maintain` commit
  // that keeps the current snapshot (an expiry) cannot be awaited with settled(), so a
  // test notes this before the command and waits with notified() after it.
  const notifications = async () =>
    sum(parse((await request(ctx.base, 'GET', '/metrics', { timeoutMs: 10000 })).text), 'floe_table_cache_notifications_total');
  const notified = (since) => waitFor(async () => (await notifications()) > since,
    { timeoutMs: 10000, intervalMs: 50, what: 'the server to apply a notification of the commit' });

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
    // The next load must see this append (see settled).
    const id = String(r.out['snapshot-id']);
    await settled(name, (s) => String(s['snapshot-id']) === id);
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

  // The table's rows as DuckDB and Floe's reader see them (sorted by id):
  // [id as text, then the other columns].  mapping: a name mapping (JSON
  // text) for Floe's reader, for files without field ids.
  async function rows(snapshot, cols = ['id', 'name'], { mapping } = {}) {
    const files = liveFiles(snapshot).map(localPath);
    if (files.length === 0) return [];
    const con = await duck();
    const rest = cols.slice(1);
    const sql = `SELECT id::VARCHAR AS id${rest.map((c) => `, ${c}`).join('')} FROM read_parquet([${files.map(sqlStr).join(', ')}]) ORDER BY id::BIGINT`;
    const duckRows = (await con.runAndReadAll(sql)).getRowsJson().map((r) => [String(r[0]), ...r.slice(1)]);
    const floeRows = [];
    for (const f of files) {
      let args = [f];
      if (mapping) {
        const mf = path.join(dir, 'mapping.json');
        fs.writeFileSync(mf, mapping);
        args = ['--mapping', mf, f];
      }
      const r = spawnSync(dumpBin, args, { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const [head, ...lines] = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
      const at = cols.map((c) => head.columns.findIndex((x) => x.path === c));
      floeRows.push(...lines.map((l) => at.map((k) => l[k])));
    }
    floeRows.sort((a, b) => Number(BigInt(a[0]) - BigInt(b[0])));
    assert.deepEqual(floeRows, duckRows, 'Floe reader and DuckDB agree');
    return duckRows;
  }

  // A snapshot that drops whole manifests: its list is the parent's list
  // without the manifests `drop` selects (a delete of every file in them);
  // edit(records, meta, {id, seq}) may change or add list records before it
  // is written (id and seq: the new snapshot's).
  async function dropManifests(name, meta, drop, { edit = (r) => r, attempt = 0 } = {}) {
    const parent = currentSnapshot(meta);
    const decoded = await decodeAvro(localPath(parent['manifest-list']));
    const id = BigInt(crypto.randomInt(1, 2 ** 47)) * 1024n;
    const seq = BigInt(meta['last-sequence-number']) + 1n;
    const kept = await edit(decoded.recs.filter((r) => !drop(r)), meta, { id, seq });
    const listPath = `${localPath(meta.location)}/metadata/snap-${id}-drop.avro`;
    const metaOut = { ...decoded.header.meta };
    metaOut['snapshot-id'] = Buffer.from(String(id));
    metaOut['parent-snapshot-id'] = Buffer.from(String(parent['snapshot-id']));
    metaOut['sequence-number'] = Buffer.from(String(seq));
    await encodeAvro(listPath, decoded.type, metaOut, kept);
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
            // v3: the list numbers no new rows (its data manifests have
            // their first_row_id already).
            ...(Number(meta['format-version']) >= 3 ? { 'first-row-id': BigInt(meta['next-row-id']), 'added-rows': 0n } : {}),
          },
        },
        { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id },
      ],
    }, { expect: [200, 409] });
    if (done === null) {
      fs.rmSync(listPath);
      if (attempt >= 10) throw new Error('dropManifests: 10 conflicts in a row');
      await new Promise((r) => setTimeout(r, 50));
      return dropManifests(name, (await loadTable(ctx, name)).metadata, drop, { edit, attempt: attempt + 1 });
    }
    return done;
  }

  // `floe maintain` in the background: {proc, done}, done resolving like maintain.
  function startMaintain(name, args, env = {}) {
    const argv = ['maintain', '--table', [...ctx.ns, name].join('.'), '--database-url', ctx.dbUrl,
      '--log-level', 'error', ...args];
    const proc = spawn(floeBin, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => { stdout += d; });
    proc.stderr.on('data', (d) => { stderr += d; });
    const done = new Promise((resolve) => proc.on('close', (code, signal) => resolve({
      code, signal, stdout, stderr, cmd: `floe ${argv.join(' ')}`,
      lines: stdout.split('\n').filter(Boolean).map((l) => parseJsonBig(l)),
    })));
    return { proc, done };
  }

  // `floe maintain` in the background (to race it): resolves like maintain.
  const maintainAsync = (name, args, env = {}) => startMaintain(name, args, env).done;

  // `floe maintain` held between its rewrite and its commit (the test hook
  // FLOE_TEST_COMPACT_PAUSE_MS, at most a minute) for as long as the test
  // races it: resolves {release} once reached() (polled) says the run wrote its
  // new files; release() ends the hold (SIGUSR1, repeated until the run exits:
  // one that comes before the pause begins does nothing) and resolves like
  // maintain.  No fixed sleep: the race happens however loaded the machine is.
  async function maintainHeld(name, args, reached) {
    const { proc, done } = startMaintain(name, args, { FLOE_TEST_COMPACT_PAUSE_MS: '60000' });
    let exited = null;
    done.then((r) => { exited = r; });
    for (let i = 0; !reached(); i++) {
      if (exited) throw new Error(`the run ended before it was held: ${exited.stdout}${exited.stderr}`);
      if (i > 1500) throw new Error('the run wrote no new file in 30 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const release = () => {
      const kick = () => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGUSR1'); };
      kick();
      const t = setInterval(kick, 100);
      return done.finally(() => clearInterval(t));
    };
    return { release }; // not the run's promise itself: awaiting this must not wait for the run
  }

  // A table of the tests' fields and a region (string, field 3), partitioned
  // by identity(region).
  async function createByRegion(name) {
    await call(ctx.base, 'POST', `${ctx.p}/namespaces/${ctx.ns.join('%1F')}/tables`, {
      body: {
        name,
        schema: { type: 'struct', 'schema-id': 0, fields: [...fields, { id: 3, name: 'region', type: 'string', required: false }] },
        'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 3, 'field-id': 1000, name: 'region', transform: 'identity' }] },
      },
      expect: 200,
    });
  }

  // A table bucketed on id, bucket[2] (spec 0).
  async function createBucketed(name, properties = {}) {
    await call(ctx.base, 'POST', `${ctx.p}/namespaces/${ctx.ns.join('%1F')}/tables`, {
      body: {
        name,
        schema: { type: 'struct', 'schema-id': 0, fields },
        'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 1, 'field-id': 1000, name: 'id_bucket', transform: 'bucket[2]' }] },
        properties,
      },
      expect: 200,
    });
  }

  // Partition evolution: spec becomes the table's default.
  const evolveSpec = (name, spec) => call(ctx.base, 'POST', tablePath(ctx.p, ctx.ns, name), {
    body: { requirements: [], updates: [{ action: 'add-spec', spec }, { action: 'set-default-spec', 'spec-id': -1 }] },
    expect: 200,
  });

  return {
    createByRegion, createBucketed, evolveSpec,
    maintain, maintainAsync, maintainHeld, append, exactJson, commit, tag, liveFiles, reached, rows, dropManifests, settled,
    notifications, notified,
  };
}

// A predicate of settled(): the current snapshot is `id`.
export const isSnap = (id) => (snap) => String(snap['snapshot-id']) === String(id);
export const range = (from, n) => Array.from({ length: n }, (_, i) => from + i);
