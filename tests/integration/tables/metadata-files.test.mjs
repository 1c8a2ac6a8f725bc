// Metadata files on disk: write.metadata.previous-versions-max trims the metadata-log,
// write.metadata.delete-after-commit.enabled deletes the files it no longer lists (only
// after the commit), and commits that lose a race leave no file behind (the optimistic
// half of a commit writes its file before taking the row lock, DESIGN §3, and must
// delete it when the row moved meanwhile).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startCatalog, call, tablePath, createBody, appendCommit, localPath } from './lib.mjs';

let c;
const NS = ['mfiles'];

before(async () => {
  c = await startCatalog('tbl_metadata_files');
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await c?.floe.stop();
});

const versionOf = (loc) => Number(/\/metadata\/(\d{5,})-[^/]*\.metadata\.json$/.exec(loc)[1]);
const metadataFiles = (loc) =>
  fs
    .readdirSync(path.dirname(localPath(loc)))
    .filter((f) => f.endsWith('.metadata.json'))
    .sort();

async function create(name, properties) {
  return (await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/tables`, { body: createBody(name, { properties }), expect: 200 })).json;
}

async function append(name, meta) {
  const { body } = appendCommit(meta, { ns: NS, name });
  return (await call(c.base, 'POST', tablePath(c.p, NS, name), { body, expect: 200 })).json;
}

test('delete-after-commit: files trimmed from the metadata-log are deleted, the listed ones kept', async () => {
  let res = await create('trimmed', {
    'write.metadata.delete-after-commit.enabled': 'true',
    'write.metadata.previous-versions-max': '2',
  });
  const first = res['metadata-location'];
  for (let i = 0; i < 6; i++) {
    res = await append('trimmed', res.metadata);
    const log = res.metadata['metadata-log'].map((e) => e['metadata-file']);
    assert.ok(log.length <= 2, `metadata-log trimmed to previous-versions-max: ${log.length}`);
    const expected = [...log, res['metadata-location']].map((l) => path.basename(localPath(l))).sort();
    assert.deepEqual(metadataFiles(res['metadata-location']), expected, `after commit ${i + 1}: exactly the current file and the logged ones`);
  }
  assert.ok(!fs.existsSync(localPath(first)), 'the first metadata file was deleted');
});

test('without delete-after-commit every metadata file stays, trimmed or not', async () => {
  let res = await create('kept', { 'write.metadata.previous-versions-max': '2' });
  for (let i = 0; i < 5; i++) res = await append('kept', res.metadata);
  assert.equal(res.metadata['metadata-log'].length, 2);
  assert.equal(metadataFiles(res['metadata-location']).length, 6, 'create + 5 commits');
});

test('racing commits leave exactly one metadata file per version: losers delete what they wrote', async () => {
  const start = await create('raced', {});
  const path_ = tablePath(c.p, NS, 'raced');
  let acks = 0;
  let conflicts = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let k = 0; k < 4; k++) {
        const meta = (await call(c.base, 'GET', path_, { expect: 200 })).json.metadata;
        const { body } = appendCommit(meta, { ns: NS, name: 'raced' });
        const res = await call(c.base, 'POST', path_, { body, expect: [200, 409] });
        if (res.status === 200) acks += 1;
        else conflicts += 1;
      }
    }),
  );
  assert.ok(conflicts > 0 && acks > 0, `the commits raced: ${acks} won, ${conflicts} lost`);
  const now = (await call(c.base, 'GET', path_, { expect: 200 })).json;
  assert.equal(versionOf(now['metadata-location']), acks, 'one version per acknowledged commit');
  const files = metadataFiles(now['metadata-location']);
  assert.equal(files.length, acks + 1, `create + ${acks} commits (${conflicts} conflicts), no orphan: ${files.join(' ')}`);
  assert.equal(versionOf(start['metadata-location']), 0);
});

test('write.metadata.path must lie under the table location: the server never writes elsewhere', async () => {
  const name = 'mpath';
  const path_ = tablePath(c.p, NS, name);
  const created = (await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/tables`, { body: createBody(name), expect: 200 })).json;
  const loc = created.metadata.location;
  const outside = `file://${fs.mkdtempSync('/tmp/floe-mpath-')}`;
  for (const dir of [outside, `${loc}/../elsewhere`]) {
    const res = await call(c.base, 'POST', path_, {
      body: { requirements: [], updates: [{ action: 'set-properties', updates: { 'write.metadata.path': dir } }] },
    });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.json.error.type, 'BadRequestException');
    assert.match(res.json.error.message, /write\.metadata\.path .* must lie under the location/);
  }
  assert.deepEqual(fs.readdirSync(localPath(outside)), [], 'nothing was written outside the table');
  // Under the location it is honoured.
  const res = await call(c.base, 'POST', path_, {
    body: { requirements: [], updates: [{ action: 'set-properties', updates: { 'write.metadata.path': `${loc}/meta2` } }] },
    expect: 200,
  });
  assert.ok(res.json['metadata-location'].startsWith(`${loc}/meta2/`), res.json['metadata-location']);
  assert.ok(fs.existsSync(localPath(res.json['metadata-location'])));
});

test('a commit whose metadata would pass --max-metadata-bytes is refused before any file is written', async () => {
  const small = await startCatalog('tbl_metadata_limit', { args: ['--max-metadata-bytes=8192'] });
  try {
    await call(small.base, 'POST', `${small.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
    const created = await call(small.base, 'POST', `${small.p}/namespaces/${NS[0]}/tables`, { body: createBody('capped'), expect: 200 });
    const path_ = tablePath(small.p, NS, 'capped');
    const body = { requirements: [], updates: [{ action: 'set-properties', updates: { note: 'x'.repeat(10000) } }] };
    const res = await call(small.base, 'POST', path_, { body });
    assert.equal(res.status, 413, res.text);
    assert.equal(res.json.error.type, 'RequestTooLargeException');
    assert.match(res.json.error.message, /the new metadata of \d+ bytes exceeds the limit of 8192 bytes \(max-metadata-bytes\)/);
    const now = (await call(small.base, 'GET', path_, { expect: 200 })).json;
    assert.equal(now['metadata-location'], created.json['metadata-location'], 'nothing committed');
    assert.deepEqual(metadataFiles(now['metadata-location']), metadataFiles(created.json['metadata-location']), 'no file written');
    // under the bound, it commits
    body.updates[0].updates.note = 'x'.repeat(1000);
    await call(small.base, 'POST', path_, { body, expect: 200 });
  } finally {
    await small.floe.stop();
  }
});
