// Shared by the feed tests: landing files the way writers should (write, then
// rename), reading a table's rows with DuckDB through its current snapshot,
// and the feed tables through psql.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import assert from 'node:assert/strict';
import { psql, request, waitFor } from '../lib/harness.mjs';
import { icebergRead } from 'icebird';
import { loadTable, currentSnapshot, snapshotFiles, localPath, duck, sqlStr } from '../ingest/lib.mjs';

export const F = '/management/v1/feeds';

// A table keyed on id (identifier field 1): id long, v string, and a third
// optional column (name and type); spec, when given, is its partition spec.
export async function createKeyed(ctx, name, third = { name: 'n', type: 'long' }, spec = undefined) {
  const res = await request(ctx.base, 'POST', `${ctx.p}/namespaces/ns/tables`, {
    body: {
      name,
      schema: {
        type: 'struct', 'schema-id': 0, 'identifier-field-ids': [1], fields: [
          { id: 1, name: 'id', type: 'long', required: true },
          { id: 2, name: 'v', type: 'string', required: false },
          { id: 3, ...third, required: false },
        ],
      },
      ...(spec ? { 'partition-spec': spec } : {}),
    },
  });
  assert.equal(res.status, 200, res.text);
}

// The live data files of the current snapshot (DELETED entries left out).
export function liveFiles(meta) {
  const cur = currentSnapshot(meta);
  if (!cur) return [];
  return snapshotFiles(cur).filter((f) => String(f.entry.status) !== '2').map((f) => f.file);
}

// A table's rows, read two ways, equal to model (a Map of key -> row
// object): DuckDB over the live files and icebird over the whole table.
// cols are the columns compared, the first the key; values compare as
// text, null as null.  The server's table cache learns of other processes'
// commits (the CLI's) by NOTIFY: it first waits until total-records is the
// model's size (a wrong count still fails below, with the rows that
// differ).  Returns the metadata read.
export async function checkRows(ctx, name, model, cols, what) {
  const text = (v) => (v == null ? null : String(v));
  const norm = (r) => cols.map((c) => text(r[c]));
  const byKey = (a, b) => (BigInt(a[0]) < BigInt(b[0]) ? -1 : BigInt(a[0]) > BigInt(b[0]) ? 1 : 0);
  const total = async () => Number(currentSnapshot((await loadTable(ctx, name)).metadata)?.summary['total-records']);
  await waitFor(async () => (await total()) === model.size, { timeoutMs: 15000, what: `${name}: ${model.size} rows` })
    .catch(() => {});
  const meta = (await loadTable(ctx, name)).metadata;
  const want = [...model.values()].map(norm).sort(byKey);
  const files = liveFiles(meta).map((f) => localPath(f.file_path));
  const con = await duck();
  const got = files.length === 0 ? [] : (await con.runAndReadAll(
    `SELECT ${cols.map((c) => `${c}::VARCHAR`).join(', ')} FROM read_parquet([${files.map(sqlStr).join(', ')}])`)).getRows();
  assert.deepEqual(got.sort(byKey), want, `DuckDB reads the model's rows ${what}`);
  const ice = await icebergRead({ tableUrl: meta.location, metadata: meta });
  assert.deepEqual(ice.map(norm).sort(byKey), want, `icebird reads the model's rows ${what}`);
  return meta;
}

// Lands a file atomically: the feed never sees it half written.
export function land(dir, name, text) {
  const tmp = path.join(dir, `.${name}.part`);
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, path.join(dir, name));
}

export async function createFeed(base, body) {
  const res = await request(base, 'POST', F, { body });
  assert.equal(res.status, 201, res.text);
  return res.json;
}

// The ids in the table's current snapshot, read by DuckDB from the data
// files its manifests list (sorted numbers; duplicates kept).
export async function tableIds(ctx, name) {
  const meta = (await loadTable(ctx, name))?.metadata;
  if (!meta) return { meta: null, ids: [] };
  const cur = currentSnapshot(meta);
  if (!cur) return { meta, ids: [] };
  const files = snapshotFiles(cur).map((f) => localPath(f.file.file_path));
  const con = await duck();
  const rows = (await con.runAndReadAll(
    `SELECT id::BIGINT FROM read_parquet([${files.map(sqlStr).join(', ')}]) ORDER BY 1`)).getRows();
  return { meta, ids: rows.map((r) => Number(r[0])) };
}

// The feed's ledger: [{key, outcome, batch}] ordered by key.
export function ledger(dbUrl, feed) {
  const out = psql(dbUrl, `SELECT o.key || '|' || o.outcome || '|' || o.batch_id FROM feed_object o
    JOIN feed f ON f.id = o.feed_id WHERE f.name = '${feed}' ORDER BY o.key, o.batch_id`);
  return out ? out.split('\n').map((l) => {
    const [key, outcome, batch] = l.split('|');
    return { key, outcome, batch };
  }) : [];
}

// Waits until n objects are in feed's ledger; timeoutMs grows with the
// backlog a test builds up (e.g. the crash test's 50 kills).
export async function waitLedger(dbUrl, feed, n, what, timeoutMs = 30000) {
  let have = 0;
  try {
    await waitFor(() => (have = ledger(dbUrl, feed).length) >= n,
      { timeoutMs, intervalMs: 200, what: what ?? `${n} objects in the ledger of ${feed}` });
  } catch (e) {
    e.message += ` (${have} of ${n} in the ledger)`;
    throw e;
  }
}

// CSV text of ids [from, to) with a string column.
export function csv(from, to) {
  let s = 'id,s\n';
  for (let i = from; i < to; i++) s += `${i},v${i}\n`;
  return s;
}

export const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);

// icebird reads a table over HTTP and cannot read file:// URLs: serves local
// files on 127.0.0.1 and routes fetch of file://... there.  Resolves to a
// function that undoes both.
export async function routeFileFetch() {
  const realFetch = globalThis.fetch;
  const server = http.createServer((req, res) => {
    const file = path.normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  globalThis.fetch = (url, init) => {
    const u = String(url);
    return realFetch(u.startsWith('file://') ? base + u.slice('file://'.length) : u, init);
  };
  return async () => {
    globalThis.fetch = realFetch;
    await new Promise((resolve) => server.close(resolve));
  };
}
