// Table metadata larger than --metadata-inline-max-bytes is not stored in PostgreSQL beside
// its row (table_entry.metadata is NULL): only its location is, and every reader reads the
// file, which exists and is durable before the row names it. Two daemons on one database
// with a small limit (3,000 bytes) so that a few appends cross it:
// - the row keeps the document while it is small and drops it once it is not;
// - a replica that never cached the table serves it from the file, byte for byte, with the
//   same ETag, and commits on top of it (its base read from the file); a stale commit is 409
//   and changes nothing; a keyed commit is replayed from the file;
// - the maintenance scheduler notes the floe.maintenance.* properties of such a table;
// - a current file gone from storage is a 500 in the error model that names the file, on
//   loads and commits; once it is back a replica with nothing cached commits on it.
// The whole suite also runs with no table document in PostgreSQL at all: tests/run.sh's
// ThreadSanitizer pass sets FLOE_TEST_CHILD_METADATA_INLINE_MAX_BYTES=0.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { request, startFloe, psql, waitFor } from '../lib/harness.mjs';
import { parse, sum } from '../lib/prom.mjs';
import { startCatalog, call, tablePath, createBody, appendCommit, assertError, localPath, uuidv7 } from './lib.mjs';

const NS = ['inl'];
const LIMIT = 3000;
const args = ['--metadata-inline-max-bytes', String(LIMIT), '--maintenance-poll', '1'];
let a;
let b;

before(async () => {
  a = await startCatalog('tbl_inline', { args });
  // B schedules no maintenance, so its file reads are the requests' alone (counted below).
  b = await startFloe({ databaseUrl: a.dbUrl, args: ['--metadata-inline-max-bytes', String(LIMIT), '--maintenance-workers', '0'] });
  await call(a.base, 'POST', `${a.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await b?.stop();
  await a?.floe.stop();
});

// [stored in the row, location] of a table's row.
const row = (name) => {
  const [stored, loc] = psql(a.dbUrl, `SELECT metadata IS NOT NULL, metadata_location FROM table_entry WHERE name = '${name}'`).split('|');
  return { stored: stored === 't', loc };
};
const fileSize = (loc) => fs.statSync(localPath(loc)).size;

// Appends on `base` until the table's metadata file is larger than the limit; checks the
// row after each commit.
async function grow(base, name) {
  const path = tablePath(a.p, NS, name);
  let meta = (await call(base, 'GET', path, { expect: 200 })).json.metadata;
  const seen = [];
  while (true) {
    const res = await call(base, 'POST', path, { body: appendCommit(meta, { ns: NS, name }).body, expect: 200 });
    meta = res.json.metadata;
    const r = row(name);
    assert.equal(r.loc, res.json['metadata-location']);
    const size = fileSize(r.loc);
    assert.equal(r.stored, size <= LIMIT, `a ${size}-byte document ${r.stored ? 'is' : 'is not'} stored in the row`);
    seen.push(r.stored);
    if (!r.stored) break;
  }
  assert.ok(seen.length > 1 && seen[0], 'the small table kept its document in the row first');
  return meta;
}

test('a document larger than the limit lives only in its file; another replica loads and commits on it', async () => {
  const name = 'big';
  const path = tablePath(a.p, NS, name);
  await call(a.base, 'POST', `${a.p}/namespaces/inl/tables`, { body: createBody(name), expect: 200 });
  assert.equal(row(name).stored, true, 'a new table keeps its document in the row');
  const meta = await grow(a.base, name);

  // B has never cached it: its load is a miss, read from the file (counted in /metrics).
  const fileReads = async (base) => {
    const m = parse((await request(base, 'GET', '/metrics')).text);
    return [sum(m, 'floe_metadata_file_reads_total'), sum(m, 'floe_metadata_file_read_bytes_total')];
  };
  const [r0, b0] = await fileReads(b.baseUrl);
  const onB = await call(b.baseUrl, 'GET', path, { expect: 200 });
  const [r1, b1] = await fileReads(b.baseUrl);
  const onA = await call(a.base, 'GET', path, { expect: 200 });
  const loc = row(name).loc;
  assert.equal(onB.json['metadata-location'], loc);
  assert.equal(onB.headers.etag, onA.headers.etag, 'the same version has the same ETag on both');
  assert.deepEqual(onB.json.metadata, JSON.parse(fs.readFileSync(localPath(loc), 'utf8')), 'B serves the file');
  assert.deepEqual(onB.json.metadata, meta);
  assert.equal(r1 - r0, 1, 'one file read for the miss');
  assert.equal(b1 - b0, fileSize(loc), 'of the whole file');
  await call(b.baseUrl, 'GET', path, { expect: 200 });
  assert.equal((await fileReads(b.baseUrl))[0], r1, 'the next load is a hit: no file read');
  const notModified = await request(b.baseUrl, 'GET', path, { headers: { 'If-None-Match': onB.headers.etag } });
  assert.equal(notModified.status, 304);

  // A commit on B: its base is the file (B's held copy is this same version).
  const c1 = appendCommit(meta, { ns: NS, name });
  const v1 = (await call(b.baseUrl, 'POST', path, { body: c1.body, expect: 200 })).json;
  assert.equal(v1.metadata['current-snapshot-id'], c1.snapshotId);
  assert.equal(v1.metadata.snapshots.length, meta.snapshots.length + 1, 'built on the version in the file');
  assert.equal(row(name).stored, false);
  // A learns of it (notification) and serves B's version, read from the file.
  await waitFor(async () => (await call(a.base, 'GET', path, { expect: 200 })).json['metadata-location'] === v1['metadata-location'],
    { timeoutMs: 10000, what: "A to serve B's commit" });

  // A stale commit (on the version before B's) is 409 on either replica; nothing changes.
  for (const base of [a.base, b.baseUrl]) {
    assertError(await request(base, 'POST', path, { body: appendCommit(meta, { ns: NS, name }).body }), 409, 'CommitFailedException');
    assert.equal(row(name).loc, v1['metadata-location'], 'a refused commit moves nothing');
  }

  // A keyed commit on A, replayed on B: the same answer, read from the file.
  const key = uuidv7();
  const c2 = appendCommit(v1.metadata, { ns: NS, name });
  const first = await call(a.base, 'POST', path, { body: c2.body, headers: { 'Idempotency-Key': key }, expect: 200 });
  const again = await call(b.baseUrl, 'POST', path, { body: c2.body, headers: { 'Idempotency-Key': key }, expect: 200 });
  assert.equal(again.text, first.text, 'the replay answers byte for byte');
  assert.equal(row(name).loc, first.json['metadata-location'], 'applied once');
});

test('the maintenance properties of a table kept only in its file are noted by the scheduler', async () => {
  const name = 'policy';
  const path = tablePath(a.p, NS, name);
  await call(a.base, 'POST', `${a.p}/namespaces/inl/tables`, { body: createBody(name), expect: 200 });
  const meta = await grow(a.base, name);
  const props = { 'floe.maintenance.enabled': 'false', 'floe.maintenance.interval': 'PT6H', 'other.property': 'x' };
  const set = await call(a.base, 'POST', path, {
    body: { identifier: { namespace: NS, name }, requirements: [{ type: 'assert-table-uuid', uuid: meta['table-uuid'] }], updates: [{ action: 'set-properties', updates: props }] },
    expect: 200,
  });
  assert.equal(row(name).stored, false);
  const noted = await waitFor(() => {
    const r = psql(a.dbUrl, `SELECT m.version = t.version, m.props FROM table_entry t JOIN table_maintenance_policy m ON m.table_id = t.id WHERE t.name = '${name}'`);
    return r.startsWith('t|') && r.slice(2);
  }, { timeoutMs: 20000, what: 'the policy of the table to be noted at its version' });
  assert.deepEqual(JSON.parse(noted), { 'floe.maintenance.enabled': 'false', 'floe.maintenance.interval': 'PT6H' });
  assert.equal(set.json.metadata.properties['other.property'], 'x');
});

test('a current metadata file gone from storage: 500 naming the file, nothing moves; served again once it is back', async () => {
  const name = 'gone';
  const path = tablePath(a.p, NS, name);
  await call(a.base, 'POST', `${a.p}/namespaces/inl/tables`, { body: createBody(name), expect: 200 });
  const meta = await grow(a.base, name);
  const { loc } = row(name);
  const file = localPath(loc);
  const aside = `${file}.aside`;
  fs.renameSync(file, aside);
  try {
    // A third replica has nothing cached: its load and its commit must read the file.
    const c = await startFloe({ databaseUrl: a.dbUrl, args });
    try {
      const err = assertError(await request(c.baseUrl, 'GET', path), 500, null, 'metadata file');
      assert.ok(err.message.includes(loc.split('/').pop()), `the message names the file: ${err.message}`);
      const commit = await request(c.baseUrl, 'POST', path, { body: appendCommit(meta, { ns: NS, name }).body });
      assertError(commit, 500, null, 'metadata file');
      assert.equal(row(name).loc, loc, 'nothing moved');
      fs.renameSync(aside, file);
      // c still has nothing cached: the commit's base is read from the file.
      const c1 = appendCommit(meta, { ns: NS, name });
      const v1 = (await call(c.baseUrl, 'POST', path, { body: c1.body, expect: 200 })).json;
      assert.equal(v1.metadata.snapshots.length, meta.snapshots.length + 1, 'built on the version in the file');
      assert.equal(row(name).loc, v1['metadata-location']);
      const back = await call(c.baseUrl, 'GET', path, { expect: 200 });
      assert.deepEqual(back.json.metadata, v1.metadata, 'served again once the file is back (the error was not cached)');
    } finally {
      await c.stop();
    }
  } finally {
    if (fs.existsSync(aside)) fs.renameSync(aside, file);
  }
});
