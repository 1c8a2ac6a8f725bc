// POST /v1/{prefix}/namespaces/{ns}/tables/{t}/unregister (unregisterTable):
// the table leaves the catalog, its files stay, and the answer is its last
// metadata location and metadata (UnregisterTableResult, validated against
// the upstream OpenAPI by call()).  The spec's two promises are tested
// directly: the metadata holds every commit acknowledged before, and every
// commit after fails; then the files register again, in this catalog.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {
  startCatalog, call, assertError, tablePath, readMetadataFile, localPath, createBody, appendCommit, uuidv7,
} from './lib.mjs';
import { request, psql } from '../lib/harness.mjs';

let c;
const NS = ['unreg'];

before(async () => {
  c = await startCatalog('tbl_unregister');
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await c?.floe.stop();
});

const unregister = (name, headers = {}) => call(c.base, 'POST', `${tablePath(c.p, NS, name)}/unregister`, { headers });

// A table with one appended snapshot; returns its last LoadTableResult.
async function fixture(name) {
  const path = tablePath(c.p, NS, name);
  const r = await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/tables`, { body: createBody(name), expect: 200 });
  const a = appendCommit(r.json.metadata, { ns: NS, name });
  await call(c.base, 'POST', path, { body: a.body, expect: 200 });
  return (await call(c.base, 'GET', path, { expect: 200 })).json;
}

test('unregister answers the last version, leaves every file, and the table can be registered again', async () => {
  const last = await fixture('t1');
  const config = await call(c.base, 'GET', '/v1/config?warehouse=default', { expect: 200 });
  assert.ok(config.json.endpoints.includes('POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister'),
    'the endpoint is advertised');
  const dir = localPath(`${last.metadata.location}/metadata`);
  const before = fs.readdirSync(dir).sort();

  const res = await unregister('t1');
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.json).sort(), ['metadata', 'metadata-location']);
  assert.equal(res.json['metadata-location'], last['metadata-location']);
  assert.deepEqual(res.json.metadata, last.metadata);
  assert.deepEqual(readMetadataFile(res.json['metadata-location']), res.json.metadata, 'the file holds what was answered');

  // Gone from the catalog; every file stays.
  const path = tablePath(c.p, NS, 't1');
  assertError(await call(c.base, 'GET', path), 404, 'NoSuchTableException', 't1');
  assertError(await call(c.base, 'POST', path, { body: appendCommit(last.metadata, { ns: NS, name: 't1' }).body }),
    404, 'NoSuchTableException');
  assertError(await unregister('t1'), 404, 'NoSuchTableException', 't1');
  const list = await call(c.base, 'GET', `${c.p}/namespaces/${NS[0]}/tables`, { expect: 200 });
  assert.ok(!list.json.identifiers.some((i) => i.name === 't1'));
  assert.deepEqual(fs.readdirSync(dir).sort(), before, 'no metadata file was removed');
  assert.equal(psql(c.dbUrl, "SELECT count(*) FROM maintenance_job WHERE kind = 'purge'").trim(), '0',
    'no purge of its files was queued');

  // Registered again from what unregister answered: the same table.
  const reg = await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/register`, {
    body: { name: 't1', 'metadata-location': res.json['metadata-location'] }, expect: 200,
  });
  assert.deepEqual(reg.json.metadata, last.metadata);
  const again = await call(c.base, 'POST', path, { body: appendCommit(reg.json.metadata, { ns: NS, name: 't1' }).body, expect: 200 });
  assert.equal(again.json.metadata.snapshots.length, last.metadata.snapshots.length + 1);
});

test('unregister: 404 for a missing table or namespace, and for a view\'s name', async () => {
  assertError(await unregister('nope'), 404, 'NoSuchTableException', 'nope');
  assertError(await call(c.base, 'POST', `${tablePath(c.p, ['nons'], 'x')}/unregister`), 404, 'NoSuchNamespaceException');
  await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/views`, {
    body: {
      name: 'v1',
      schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'x', type: 'long', required: false }] },
      'view-version': {
        'version-id': 1, 'timestamp-ms': Date.now(), 'schema-id': 0, summary: {}, 'default-namespace': NS,
        representations: [{ type: 'sql', sql: 'select 1 as x', dialect: 'spark' }],
      },
      properties: {},
    },
    expect: 200,
  });
  assertError(await unregister('v1'), 404, 'NoSuchTableException');
  await call(c.base, 'GET', `${c.p}/namespaces/${NS[0]}/views/v1`, { expect: 200 });
});

test('unregister under an Idempotency-Key: the replay answers the same bytes', async () => {
  await fixture('t2');
  const key = uuidv7();
  const first = await unregister('t2', { 'Idempotency-Key': key });
  assert.equal(first.status, 200, first.text);
  const replay = await request(c.base, 'POST', `${tablePath(c.p, NS, 't2')}/unregister`, { headers: { 'Idempotency-Key': key } });
  assert.equal(replay.status, 200, replay.text);
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.equal(replay.text, first.text);
});

test('unregister racing commits: every commit acknowledged is in the answer, none is applied after', async () => {
  const last = await fixture('t3');
  const path = tablePath(c.p, NS, 't3');
  // 8 writers, each setting its own property again and again until the table is gone.
  let stop = false;
  const acked = [];
  const writer = async (w) => {
    for (let i = 0; !stop; i++) {
      const res = await call(c.base, 'POST', path, {
        body: { requirements: [], updates: [{ action: 'set-properties', updates: { [`w${w}`]: String(i) } }] },
      });
      if (res.status === 200) acked.push([`w${w}`, i]);
      else {
        assertError(res, 404, 'NoSuchTableException');
        return;
      }
    }
  };
  const writers = Array.from({ length: 8 }, (_, w) => writer(w));
  await new Promise((r) => setTimeout(r, 300));
  const res = await unregister('t3');
  assert.equal(res.status, 200, res.text);
  await Promise.all(writers);
  stop = true;
  assert.ok(acked.length > 0, 'some commits were acknowledged before the unregister');
  const props = res.json.metadata.properties;
  for (const [k, i] of acked) {
    assert.ok(Number(props[k]) >= i, `acknowledged ${k}=${i} is in the answer (it has ${props[k]})`);
  }
  // The last acknowledged value of each writer is exactly the one answered.
  for (let w = 0; w < 8; w++) {
    const mine = acked.filter(([k]) => k === `w${w}`).map(([, i]) => i);
    if (mine.length > 0) assert.equal(props[`w${w}`], String(Math.max(...mine)), `w${w}: nothing after its last acknowledgement`);
  }
  assert.deepEqual(readMetadataFile(res.json['metadata-location']), res.json.metadata);
  assert.ok(res.json.metadata['last-updated-ms'] >= last.metadata['last-updated-ms']);
  assertError(await call(c.base, 'GET', path), 404, 'NoSuchTableException');
});
