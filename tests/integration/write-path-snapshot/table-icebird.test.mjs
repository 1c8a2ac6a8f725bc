// A table built by three appends through the snapshot builder, read end to
// end by icebird over HTTP: table metadata (made up here from the three
// Snapshot JSONs the builder returned, as a catalog would commit them) ->
// manifest list -> manifests -> Parquet data files -> rows.  The builder
// names files with the table's file:// location, which icebird cannot
// fetch, so fetch is routed: file://<table dir>/... -> the local HTTP server
// serving that directory.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream, existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { icebergRead } from 'icebird';
import { writeTable } from './snapshots.mjs';

let server;
let tableUrl;
let written;
const realFetch = globalThis.fetch;

before(async () => {
  // icebird's inflater cannot take small raw-deflate blocks (see
  // write-path/table-icebird.test.mjs), so this table is written uncompressed.
  written = writeTable(2, 'null');
  server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/t\//, '');
    const file = path.join(written.dir, path.normalize(rel));
    if (!file.startsWith(written.dir) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  tableUrl = `http://127.0.0.1:${server.address().port}/t`;
  const prefix = written.table.location;
  globalThis.fetch = (url, init) => {
    const u = String(url);
    return realFetch(u.startsWith(prefix) ? tableUrl + u.slice(prefix.length) : u, init);
  };
});

after(async () => {
  globalThis.fetch = realFetch;
  await new Promise((resolve) => server?.close(resolve));
  written?.cleanup();
});

function metadata(current) {
  const { table } = written;
  const snaps = table.snapshots;
  const now = Date.now();
  return {
    'format-version': 2,
    'table-uuid': '0195f0e0-0000-7000-8000-0000000000aa',
    location: table.location,
    'last-sequence-number': 3,
    'last-updated-ms': now,
    'last-column-id': 3,
    'current-schema-id': 0,
    schemas: [table.schema],
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: [] }],
    'last-partition-id': 999,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: {},
    'current-snapshot-id': snaps[current]['snapshot-id'],
    refs: { main: { 'snapshot-id': snaps[current]['snapshot-id'], type: 'branch' } },
    snapshots: snaps,
    'snapshot-log': snaps.map((s) => ({ 'snapshot-id': s['snapshot-id'], 'timestamp-ms': s['timestamp-ms'] })),
    'metadata-log': [],
  };
}

const asRow = (r) => [Number(r.id), r.name ?? null, r.v ?? null];

test('icebird reads every row of the three appends through the third snapshot', async () => {
  const rows = await icebergRead({ tableUrl, metadata: metadata(2) });
  const want = written.table.rows;
  assert.equal(rows.length, want.length);
  // the list holds the newest manifest first: compare by id
  const have = rows.map(asRow).sort((a, b) => a[0] - b[0]);
  assert.deepEqual(have, want);
});

test('each earlier snapshot still reads as of its own append', async () => {
  const rows1 = await icebergRead({ tableUrl, metadata: metadata(0) });
  assert.deepEqual(rows1.map(asRow).sort((a, b) => a[0] - b[0]), written.table.rows.slice(0, 65));
  const rows2 = await icebergRead({ tableUrl, metadata: metadata(1) });
  assert.deepEqual(rows2.map(asRow).sort((a, b) => a[0] - b[0]), written.table.rows.slice(0, 95));
});
