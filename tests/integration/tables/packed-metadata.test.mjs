// A table's document is stored in its row packed ("zstd:" and base64url of a zstd frame,
// catalog/db/doc.c, migration 0010), so that a loadTable miss moves a fraction of its
// bytes out of PostgreSQL. Two daemons on one database; B never cached what it reads:
// - a ~20 KB document is stored packed, at under a third of its file's size, and B serves
//   it on a miss with the file's content and A's ETag, and commits on it;
// - a document naming a floe.maintenance.* property is stored as it is, and the scheduler
//   notes its policy from the row in SQL;
// - a document stored as it is (every row before migration 0010) is still read and
//   committed on;
// - a stored value that does not unpack is a 500 in the error model, never a wrong body.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startFloe, psql, waitFor } from '../lib/harness.mjs';
import { startCatalog, call, tablePath, createBody, appendCommit, assertError, localPath, readMetadataFile } from './lib.mjs';

const NS = ['pk'];
// Stated, so that the ThreadSanitizer pass (no documents in PostgreSQL) runs this file as it is.
const args = ['--metadata-inline-max-bytes', '262144'];
let a;
let b;

before(async () => {
  a = await startCatalog('tbl_packed', { args: [...args, '--maintenance-poll', '1'] });
  b = await startFloe({ databaseUrl: a.dbUrl, args: [...args, '--maintenance-workers', '0'] });
  await call(a.base, 'POST', `${a.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await b?.stop();
  await a?.floe.stop();
});

const manyProps = (n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`bench.prop.${String(i).padStart(4, '0')}`, `value-${i * 7919}`]));
// [first five characters, length] of a table's stored document.
const stored = (name) => {
  const [head, len, loc] = psql(a.dbUrl, `SELECT left(metadata, 5), length(metadata), metadata_location FROM table_entry WHERE name = '${name}'`).split('|');
  return { head, len: Number(len), loc };
};
async function create(name, properties) {
  const res = await call(a.base, 'POST', `${a.p}/namespaces/pk/tables`, { body: createBody(name, { properties }), expect: 200 });
  return res.json;
}
// B's load (a miss: B never read the table) equals the file the row names, with A's ETag.
async function bServesFile(name) {
  const path = tablePath(a.p, NS, name);
  const onA = await call(a.base, 'GET', path, { expect: 200 });
  const onB = await call(b.baseUrl, 'GET', path, { expect: 200 });
  assert.equal(onB.json['metadata-location'], onA.json['metadata-location']);
  assert.deepEqual(onB.json.metadata, readMetadataFile(onB.json['metadata-location']));
  assert.equal(onB.headers.etag, onA.headers.etag);
  return onB.json;
}

test('a 20 KB document is stored packed; another replica loads it on a miss and commits on it', async () => {
  const name = 'wide';
  await create(name, manyProps(550));
  const s = stored(name);
  const file = fs.statSync(localPath(s.loc)).size;
  assert.ok(file > 18000, `a ${file}-byte document`);
  assert.equal(s.head, 'zstd:');
  assert.ok(s.len < file / 3, `stored in ${s.len} bytes for a ${file}-byte file`);

  const loaded = await bServesFile(name);
  const res = await call(b.baseUrl, 'POST', tablePath(a.p, NS, name), { body: appendCommit(loaded.metadata, { ns: NS, name }).body, expect: 200 });
  const after = stored(name);
  assert.equal(after.loc, res.json['metadata-location']);
  assert.equal(after.head, 'zstd:');
  // A's cache was told of B's commit; both answer B's version.
  await waitFor(async () => (await call(a.base, 'GET', tablePath(a.p, NS, name), { expect: 200 })).json['metadata-location'] === after.loc,
    { what: 'A to serve the version B committed' });
  assert.deepEqual((await bServesFile(name)).metadata, res.json.metadata);
});

test('a document naming a floe.maintenance.* property stays as it is; its policy is noted from the row', async () => {
  const name = 'policy';
  await create(name, { ...manyProps(550), 'floe.maintenance.interval': 'PT6H' });
  const s = stored(name);
  assert.equal(s.head, '{"for');
  const noted = await waitFor(() => {
    const r = psql(a.dbUrl, `SELECT m.version = t.version, m.props FROM table_entry t JOIN table_maintenance_policy m ON m.table_id = t.id WHERE t.name = '${name}'`);
    return r.startsWith('t|') && r.slice(2);
  }, { timeoutMs: 20000, what: 'the policy of the table to be noted' });
  assert.deepEqual(JSON.parse(noted), { 'floe.maintenance.interval': 'PT6H' });
  await bServesFile(name);
});

test('a document stored as it is (before migration 0010) is read and committed on', async () => {
  const name = 'legacy';
  await create(name, manyProps(550));
  const { loc } = stored(name);
  const text = fs.readFileSync(localPath(loc), 'utf8');
  assert.ok(!text.includes('$doc$'));
  psql(a.dbUrl, `UPDATE table_entry SET metadata = $doc$${text}$doc$ WHERE name = '${name}'`);
  assert.equal(stored(name).head, '{"for');
  const loaded = await bServesFile(name);
  const res = await call(b.baseUrl, 'POST', tablePath(a.p, NS, name), { body: appendCommit(loaded.metadata, { ns: NS, name }).body, expect: 200 });
  assert.equal(stored(name).head, 'zstd:', 'the next version is stored packed');
  assert.deepEqual(readMetadataFile(res.json['metadata-location']), res.json.metadata);
});

test('a stored value that does not unpack is a 500 in the error model', async () => {
  for (const [name, value] of [['broken_b64', 'zstd:no.base64'], ['broken_frame', 'zstd:QUJDREVGR0g']]) {
    await create(name, manyProps(100));
    psql(a.dbUrl, `UPDATE table_entry SET metadata = '${value}' WHERE name = '${name}'`);
    const res = await call(b.baseUrl, 'GET', tablePath(a.p, NS, name));
    assertError(res, 500, undefined, 'stored metadata');
  }
});
