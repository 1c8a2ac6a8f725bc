// Every table endpoint as iceberg-js@1.0.0 drives it (plus raw calls for the two
// routes iceberg-js lacks: metrics and credentials). Every response body is checked
// against the upstream OpenAPI schema before the client sees it (lib.mjs
// validatingFetch). After every commit the metadata file named by metadata-location
// is read from disk and must equal what loadTable returns.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { IcebergError } from 'iceberg-js';
import { waitFor } from '../lib/harness.mjs';
import { validate } from '../lib/spec.mjs';
import {
  startCatalog,
  tableCatalog,
  call,
  assertError,
  tablePath,
  readMetadataFile,
  localPath,
  pySchema,
  appendCommit,
  validateBody,
} from './lib.mjs';

let c;
let cat;
const seen = [];

before(async () => {
  c = await startCatalog('conformance');
  cat = tableCatalog(c.base, { seen });
  for (const ns of [['conf'], ['conf2'], ['pages'], ['conf', 'sub']]) await cat.createNamespace({ namespace: ns });
});

after(async () => {
  await c?.floe.stop();
});

const META_NAME = /\/metadata\/(\d{5})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.metadata\.json$/;

function versionOf(loc) {
  const m = META_NAME.exec(loc);
  assert.ok(m, `metadata-location ${loc} is not <location>/metadata/NNNNN-<uuid>.metadata.json`);
  return Number(m[1]);
}

// The file named by metadata-location equals what loadTable returns, and both are
// valid TableMetadata. Returns the LoadTableResult.
async function assertDiskMatchesLoad(id, expectLoc) {
  const res = await cat.loadTableResult(id);
  assert.ok(res, 'loadTable returned a result');
  if (expectLoc) assert.equal(res['metadata-location'], expectLoc, 'loadTable reports the committed file');
  const disk = readMetadataFile(res['metadata-location']);
  validateBody('TableMetadata', disk);
  assert.deepEqual(res.metadata, disk, `loadTable metadata != ${res['metadata-location']}`);
  assert.ok(res['metadata-location'].startsWith(`${res.metadata.location}/metadata/`), 'file lives under <location>/metadata');
  return res;
}

async function expectIcebergError(promise, status, type) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof IcebergError, `expected an IcebergError, got ${e}`);
    assert.equal(e.status, status, `status: ${e.message}`);
    if (type) assert.equal(e.icebergType, type, `type: ${e.message}`);
    return true;
  });
}

const schema = pySchema();

test('createTable: LoadTableResult, ETag, metadata file on disk, dirs created', async () => {
  const res = await cat.createTableResult(
    { namespace: ['conf'] },
    {
      name: 'events',
      schema,
      'partition-spec': { 'spec-id': 0, fields: [] },
      'write-order': { 'order-id': 0, fields: [] },
      properties: { owner: 'conformance' },
    },
  );
  assert.ok(res.etag, 'createTable answers with an ETag');
  assert.equal(versionOf(res['metadata-location']), 0, 'first metadata file is version 00000');
  assert.equal(res.metadata['format-version'], 2, 'default format-version is 2');
  assert.equal(res.metadata.properties.owner, 'conformance');
  assert.equal(res.metadata['current-snapshot-id'], -1);
  assert.deepEqual(res.config ?? {}, {}, 'file warehouse: empty config');
  assert.ok(!res['storage-credentials'] || res['storage-credentials'].length === 0, 'no credentials for file');
  assert.ok(res.metadata.location.endsWith('/conf/events'), `default location ${res.metadata.location}`);
  for (const d of ['metadata', 'data']) {
    assert.ok(fs.statSync(path.join(localPath(res.metadata.location), d)).isDirectory(), `${d}/ created`);
  }
  const loaded = await assertDiskMatchesLoad({ namespace: ['conf'], name: 'events' }, res['metadata-location']);
  assert.deepEqual(loaded.metadata, res.metadata, 'createTable and loadTable agree');
  assert.equal(loaded.etag, res.etag, 'same version, same ETag');
});

// loadTable writes metadata-location into the body itself (not through a JSON
// library) on the hot path: a location that needs escaping must come out as the
// same JSON string createTable wrote, on a miss and on a cached hit alike.
test('loadTable: a location with a quote and non-ASCII characters is escaped as createTable does', async () => {
  const name = 'we"ird\\tbl-\u00e9\u6771';
  const created = await call(c.base, 'POST', `${c.p}/namespaces/conf/tables`, { body: { name, schema }, expect: 200 });
  const loc = created.json['metadata-location'];
  assert.ok(loc.includes('"') && loc.includes('\u6771'), `location keeps the quote and the non-ASCII: ${loc}`);
  for (const pass of ['first read', 'cached read']) {
    const res = await call(c.base, 'GET', tablePath(c.p, ['conf'], name), { expect: 200 });
    assert.equal(res.json['metadata-location'], loc, `${pass}: same metadata-location`);
    assert.ok(res.text.startsWith(`{"metadata-location":${JSON.stringify(loc)},"metadata":`), `${pass}: ${res.text.slice(0, 160)}`);
    assert.equal(res.headers.etag, created.headers.etag, `${pass}: same version, same ETag`);
  }
});

test('createTable: 409 when it exists, 404 when the namespace does not', async () => {
  await expectIcebergError(cat.createTable({ namespace: ['conf'] }, { name: 'events', schema }), 409, 'AlreadyExistsException');
  await expectIcebergError(
    cat.createTable({ namespace: ['nope'] }, { name: 'events', schema }),
    404,
    'NoSuchNamespaceException',
  );
});

test('createTable stage-create: no metadata-location, nothing stored', async () => {
  const res = await cat.createTableResult({ namespace: ['conf'] }, { name: 'staged', schema, 'stage-create': true });
  assert.ok(res['metadata-location'] === undefined || res['metadata-location'] === null, 'no metadata-location');
  assert.ok(res.metadata['table-uuid'], 'staged metadata has a uuid');
  assert.equal(await cat.tableExists({ namespace: ['conf'], name: 'staged' }), false, 'stage-create stores nothing');
  const list = await cat.listTables({ namespace: ['conf'] });
  assert.ok(!list.identifiers.some((i) => i.name === 'staged'), 'staged table is not listed');
});

test('tableExists: true / false', async () => {
  assert.equal(await cat.tableExists({ namespace: ['conf'], name: 'events' }), true);
  assert.equal(await cat.tableExists({ namespace: ['conf'], name: 'missing' }), false);
  assert.equal(await cat.tableExists({ namespace: ['nope'], name: 'events' }), false);
});

test('loadTable: 404 NoSuchTableException; ifNoneMatch → null on 304, new ETag after a commit', async () => {
  await expectIcebergError(cat.loadTable({ namespace: ['conf'], name: 'missing' }), 404, 'NoSuchTableException');
  const id = { namespace: ['conf'], name: 'events' };
  const first = await cat.loadTableResult(id);
  assert.equal(await cat.loadTableResult(id, { ifNoneMatch: first.etag }), null, '304 while unchanged');
  assert.equal(await cat.loadTable(id, { ifNoneMatch: first.etag }), null);
  const commit = await cat.updateTable(id, {
    requirements: [{ type: 'assert-table-uuid', uuid: first.metadata['table-uuid'] }],
    updates: [{ action: 'set-properties', updates: { 'etag.test': '1' } }],
  });
  assert.equal(versionOf(commit['metadata-location']), 1);
  const after = await cat.loadTableResult(id, { ifNoneMatch: first.etag });
  assert.ok(after, 'changed table: a full response, not 304');
  assert.notEqual(after.etag, first.etag, 'new version, new ETag');
  assert.equal(after.metadata.properties['etag.test'], '1');
  await assertDiskMatchesLoad(id, commit['metadata-location']);
});

test('updateTable / commitTable: responses match disk and loadTable; metadata-log grows', async () => {
  const id = { namespace: ['conf'], name: 'events' };
  let cur = await cat.loadTableResult(id);
  const locs = [cur['metadata-location']];
  for (let i = 0; i < 3; i++) {
    const { body, snapshotId } = appendCommit(cur.metadata, { ns: id.namespace, name: id.name });
    const fn = i % 2 === 0 ? 'commitTable' : 'updateTable';
    const resp = await cat[fn](id, { requirements: body.requirements, updates: body.updates });
    assert.equal(versionOf(resp['metadata-location']), versionOf(locs.at(-1)) + 1, 'version +1 per commit');
    assert.deepEqual(readMetadataFile(resp['metadata-location']), resp.metadata, 'commit response == file on disk');
    cur = await assertDiskMatchesLoad(id, resp['metadata-location']);
    assert.equal(cur.metadata['current-snapshot-id'], snapshotId);
    assert.deepEqual(cur.metadata.refs.main, { 'snapshot-id': snapshotId, type: 'branch' });
    locs.push(resp['metadata-location']);
  }
  const log = cur.metadata['metadata-log'].map((e) => e['metadata-file']);
  assert.deepEqual(log.slice(-locs.length + 1), locs.slice(0, -1), 'metadata-log lists the previous files in order');
  for (const f of log) assert.ok(fs.existsSync(localPath(f)), `metadata-log file ${f} exists`);
  // a requirement that fails → 409 CommitFailedException, nothing applied
  await expectIcebergError(
    cat.updateTable(id, {
      requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }],
      updates: [{ action: 'set-properties', updates: { nope: '1' } }],
    }),
    409,
    'CommitFailedException',
  );
  const again = await assertDiskMatchesLoad(id, cur['metadata-location']);
  assert.equal(again.metadata.properties.nope, undefined);
  // 404 for a table that does not exist
  await expectIcebergError(
    cat.updateTable({ namespace: ['conf'], name: 'missing' }, { requirements: [], updates: [] }),
    404,
    'NoSuchTableException',
  );
});

test('commit response carries an ETag usable with If-None-Match', async () => {
  const id = { namespace: ['conf'], name: 'events' };
  const cur = await cat.loadTableResult(id);
  const res = await call(c.base, 'POST', tablePath(c.p, id.namespace, id.name), {
    body: { requirements: [], updates: [{ action: 'set-properties', updates: { 'etag.commit': '1' } }] },
    expect: 200,
  });
  assert.notEqual(res.json['metadata-location'], cur['metadata-location']);
  const etag = res.headers.etag;
  assert.ok(etag, 'CommitTableResponse has an ETag header (spec: components/responses/CommitTableResponse)');
  assert.equal(await cat.loadTableResult(id, { ifNoneMatch: etag }), null, 'commit ETag → 304 on the next load');
});

test("loadTable snapshots: 'refs' keeps only referenced snapshots; 'all' keeps every one", async () => {
  const id = { namespace: ['conf'], name: 'snaps' };
  let cur = await cat.createTableResult({ namespace: ['conf'] }, { name: 'snaps', schema });
  const ids = [];
  for (let i = 0; i < 3; i++) {
    const { body, snapshotId } = appendCommit(cur.metadata, { ns: id.namespace, name: id.name });
    cur = await cat.commitTable(id, body);
    ids.push(snapshotId);
  }
  cur = await cat.commitTable(id, {
    requirements: [],
    updates: [{ action: 'set-snapshot-ref', 'ref-name': 'first', type: 'tag', 'snapshot-id': ids[0] }],
  });
  await assertDiskMatchesLoad(id, cur['metadata-location']);
  const all = await cat.loadTableResult(id, { snapshots: 'all' });
  assert.deepEqual(all.metadata.snapshots.map((s) => s['snapshot-id']).sort(), [...ids].sort());
  const refs = await cat.loadTableResult(id, { snapshots: 'refs' });
  assert.deepEqual(
    refs.metadata.snapshots.map((s) => s['snapshot-id']).sort(),
    [ids[0], ids[2]].sort(),
    'refs: the tagged snapshot and main only',
  );
  assert.deepEqual(refs.metadata.refs, all.metadata.refs, 'refs unchanged');
  const plain = await cat.loadTableResult(id);
  assert.deepEqual(plain.metadata, all.metadata, 'default is all');
});

// spec components/parameters/etag: "the `snapshots` query parameter may result in different
// metadata representations depending on whether `refs` or `all` is provided, therefore
// should have distinct ETags". With one ETag, a client that cached the refs body and
// revalidates the full load gets 304 and keeps a body missing snapshots.
test("loadTable: 'refs' and 'all' bodies carry distinct ETags", async () => {
  const id = { namespace: ['conf'], name: 'snaps' };
  const all = await cat.loadTableResult(id, { snapshots: 'all' });
  const refs = await cat.loadTableResult(id, { snapshots: 'refs' });
  assert.notEqual(all.metadata.snapshots.length, refs.metadata.snapshots.length, 'the two bodies differ');
  assert.notEqual(refs.etag, all.etag, 'refs and all responses carry distinct ETags');
  assert.ok((await cat.loadTableResult(id, { ifNoneMatch: refs.etag })) !== null,
    "an ETag of the 'refs' body must not validate the 'all' body");
});

test('listTables: paginated with pageSize, every table exactly once; 404 for a missing namespace', async () => {
  const names = Array.from({ length: 7 }, (_, i) => `t${String(i).padStart(2, '0')}`);
  for (const name of names) await cat.createTable({ namespace: ['pages'] }, { name, schema });
  const got = [];
  let token;
  let pages = 0;
  do {
    const page = await cat.listTables({ namespace: ['pages'] }, { pageSize: 3, pageToken: token });
    assert.ok(page.identifiers.length <= 3, `page of ${page.identifiers.length} > pageSize 3`);
    for (const i of page.identifiers) assert.deepEqual(i.namespace, ['pages']);
    got.push(...page.identifiers.map((i) => i.name));
    token = page.nextPageToken;
    pages += 1;
    assert.ok(pages < 10, 'pagination terminates');
  } while (token);
  assert.ok(pages >= 3, `7 tables at pageSize 3 need ≥ 3 pages, got ${pages}`);
  assert.deepEqual([...got].sort(), names, 'every table exactly once');
  const whole = await cat.listTables({ namespace: ['pages'] });
  assert.deepEqual(whole.identifiers.map((i) => i.name).sort(), names);
  // only the namespace's own tables: nested namespace tables are not listed
  await cat.createTable({ namespace: ['conf', 'sub'] }, { name: 'deep', schema });
  const conf = await cat.listTables({ namespace: ['conf'] });
  assert.ok(!conf.identifiers.some((i) => i.name === 'deep'), 'child namespace tables not listed in parent');
  const sub = await cat.listTables({ namespace: ['conf', 'sub'] });
  assert.deepEqual(sub.identifiers, [{ namespace: ['conf', 'sub'], name: 'deep' }]);
  await expectIcebergError(cat.listTables({ namespace: ['nope'] }), 404, 'NoSuchNamespaceException');
});

test('renameTable: within and across namespaces; 404 missing source / destination namespace; 409 target exists', async () => {
  const created = await cat.createTableResult({ namespace: ['conf'] }, { name: 'ren_a', schema });
  await cat.renameTable({
    source: { namespace: ['conf'], name: 'ren_a' },
    destination: { namespace: ['conf'], name: 'ren_b' },
  });
  assert.equal(await cat.tableExists({ namespace: ['conf'], name: 'ren_a' }), false);
  const b = await cat.loadTableResult({ namespace: ['conf'], name: 'ren_b' });
  assert.equal(b['metadata-location'], created['metadata-location'], 'rename keeps the metadata');
  await cat.renameTable({
    source: { namespace: ['conf'], name: 'ren_b' },
    destination: { namespace: ['conf2'], name: 'ren_c' },
  });
  assert.equal(await cat.tableExists({ namespace: ['conf'], name: 'ren_b' }), false);
  const moved = await assertDiskMatchesLoad({ namespace: ['conf2'], name: 'ren_c' }, created['metadata-location']);
  assert.equal(moved.metadata['table-uuid'], created.metadata['table-uuid']);
  assert.ok((await cat.listTables({ namespace: ['conf2'] })).identifiers.some((i) => i.name === 'ren_c'));
  // a commit on the renamed table works
  const { body } = appendCommit(moved.metadata, { ns: ['conf2'], name: 'ren_c' });
  const resp = await cat.commitTable({ namespace: ['conf2'], name: 'ren_c' }, body);
  await assertDiskMatchesLoad({ namespace: ['conf2'], name: 'ren_c' }, resp['metadata-location']);

  await expectIcebergError(
    cat.renameTable({ source: { namespace: ['conf2'], name: 'ren_c' }, destination: { namespace: ['nope'], name: 'x' } }),
    404,
    'NoSuchNamespaceException',
  );
  await expectIcebergError(
    cat.renameTable({ source: { namespace: ['conf'], name: 'missing' }, destination: { namespace: ['conf'], name: 'x' } }),
    404,
    'NoSuchTableException',
  );
  await expectIcebergError(
    cat.renameTable({ source: { namespace: ['conf2'], name: 'ren_c' }, destination: { namespace: ['conf'], name: 'events' } }),
    409,
    'AlreadyExistsException',
  );
  assert.equal(await cat.tableExists({ namespace: ['conf2'], name: 'ren_c' }), true, 'failed renames change nothing');
});

test('POST …/metrics → 204; GET …/credentials → {"storage-credentials": []}', async () => {
  const tp = tablePath(c.p, ['conf'], 'events');
  const loaded = await cat.loadTable({ namespace: ['conf'], name: 'events' });
  const report = {
    'report-type': 'commit-report',
    'table-name': 'conf.events',
    'snapshot-id': loaded['current-snapshot-id'],
    'sequence-number': loaded['last-sequence-number'],
    operation: 'append',
    metrics: { 'total-duration': { count: 1, 'time-unit': 'nanoseconds', 'total-duration': 1000 } },
  };
  validate('CommitReport', report);
  const m = await call(c.base, 'POST', `${tp}/metrics`, { body: report, headers: { Authorization: 'Bearer None' } });
  assert.equal(m.status, 204, m.text);
  const scan = {
    'report-type': 'scan-report',
    'table-name': 'conf.events',
    'snapshot-id': loaded['current-snapshot-id'],
    filter: true,
    'schema-id': 0,
    'projected-field-ids': [1, 2],
    'projected-field-names': ['id', 'data'],
    metrics: {},
  };
  assert.equal((await call(c.base, 'POST', `${tp}/metrics`, { body: scan })).status, 204);
  assertError(
    await call(c.base, 'POST', `${tablePath(c.p, ['conf'], 'missing')}/metrics`, { body: report }),
    404,
    'NoSuchTableException',
  );
  const cr = await call(c.base, 'GET', `${tp}/credentials`, {
    headers: { 'X-Iceberg-Access-Delegation': 'vended-credentials' },
    expect: 200,
  });
  assert.deepEqual(cr.json, { 'storage-credentials': [] });
  assertError(await call(c.base, 'GET', `${tablePath(c.p, ['conf'], 'missing')}/credentials`), 404, 'NoSuchTableException');
});

test('dropTable without purge keeps files; registerTable brings the table back; 409 / overwrite', async () => {
  const id = { namespace: ['conf'], name: 'dropme' };
  let cur = await cat.createTableResult({ namespace: ['conf'] }, { name: 'dropme', schema });
  const { body } = appendCommit(cur.metadata, { ns: id.namespace, name: id.name });
  cur = await cat.commitTable(id, body);
  const mloc = cur['metadata-location'];
  await cat.dropTable(id, { purge: false });
  assert.equal(await cat.tableExists(id), false);
  await expectIcebergError(cat.loadTable(id), 404, 'NoSuchTableException');
  await expectIcebergError(cat.dropTable(id), 404, 'NoSuchTableException');
  assert.ok(fs.existsSync(localPath(mloc)), 'drop without purge keeps the metadata file');

  const reg = await cat.registerTableResult({ namespace: ['conf2'] }, { name: 'revived', 'metadata-location': mloc });
  assert.equal(reg['metadata-location'], mloc);
  assert.deepEqual(reg.metadata, readMetadataFile(mloc), 'register answers with the file it registered');
  const loaded = await assertDiskMatchesLoad({ namespace: ['conf2'], name: 'revived' }, mloc);
  assert.equal(loaded.metadata['current-snapshot-id'], cur.metadata['current-snapshot-id']);
  // a commit on the registered table works
  const next = appendCommit(loaded.metadata, { ns: ['conf2'], name: 'revived' });
  const resp = await cat.commitTable({ namespace: ['conf2'], name: 'revived' }, next.body);
  await assertDiskMatchesLoad({ namespace: ['conf2'], name: 'revived' }, resp['metadata-location']);
  assert.deepEqual(
    resp.metadata['metadata-log'].at(-1)['metadata-file'],
    mloc,
    'metadata-log of the first commit after register names the registered file',
  );
  registered = { mloc, next: resp['metadata-location'] };

  await expectIcebergError(
    cat.registerTable({ namespace: ['conf2'] }, { name: 'revived', 'metadata-location': mloc }),
    409,
    'AlreadyExistsException',
  );
  const over = await cat.registerTableResult(
    { namespace: ['conf2'] },
    { name: 'revived', 'metadata-location': mloc, overwrite: true },
  );
  assert.equal(over['metadata-location'], mloc, 'overwrite: points back at the registered file');
  await assertDiskMatchesLoad({ namespace: ['conf2'], name: 'revived' }, mloc);
  await expectIcebergError(
    cat.registerTable({ namespace: ['nope'] }, { name: 'x', 'metadata-location': mloc }),
    404,
    'NoSuchNamespaceException',
  );
  await expectIcebergError(
    cat.registerTable({ namespace: ['conf2'] }, { name: 'ghost', 'metadata-location': mloc.replace(/\d{5}-/, '99999-') }),
    400,
  );
});

let registered;
// Java (BaseMetastoreTableOperations.parseVersion) and PyIceberg (_parse_metadata_version)
// number the next metadata file from the current file's name; after register the daemon
// restarts at 00001 and writes a second 00001-*.metadata.json beside the registered one,
// so "highest version in metadata/" no longer names the current file.
test('register then commit: the next metadata file continues the registered file\'s version', async () => {
  assert.ok(registered, 'previous test ran');
  assert.equal(versionOf(registered.next), versionOf(registered.mloc) + 1);
});

test('dropTable with purge: the table is gone and a background job removes its files', async () => {
  const id = { namespace: ['conf'], name: 'purgeme' };
  let cur = await cat.createTableResult({ namespace: ['conf'] }, { name: 'purgeme', schema });
  const { body } = appendCommit(cur.metadata, { ns: id.namespace, name: id.name });
  cur = await cat.commitTable(id, body);
  const dir = localPath(cur.metadata.location);
  fs.writeFileSync(path.join(dir, 'data', 'part-0.parquet'), 'not really parquet');
  await cat.dropTable(id, { purge: true });
  assert.equal(await cat.tableExists(id), false);
  await waitFor(() => !fs.existsSync(localPath(cur['metadata-location'])) && !fs.existsSync(path.join(dir, 'data', 'part-0.parquet')), {
    timeoutMs: 20000,
    what: `purge of ${dir}`,
  });
  // the name is free again
  const again = await cat.createTableResult({ namespace: ['conf'] }, { name: 'purgeme', schema });
  assert.notEqual(again.metadata['table-uuid'], cur.metadata['table-uuid']);
});

test('iceberg-js sent UUIDv7 Idempotency-Keys on every mutation and all were accepted', () => {
  const muts = seen.filter((s) => s.method === 'POST' || s.method === 'DELETE');
  assert.ok(muts.length > 20);
  for (const m of muts) {
    const k = m.headers['Idempotency-Key'];
    assert.match(k, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(m.status, 422, `${m.method} ${m.url}: key rejected as reused`);
  }
  assert.equal(new Set(muts.map((m) => m.headers['Idempotency-Key'])).size, muts.length);
});

test('routes without the {prefix} segment reach the default warehouse', async () => {
  const np = '/v1/namespaces/conf/tables/events';
  const withP = await call(c.base, 'GET', tablePath(c.p, ['conf'], 'events'), { expect: 200 });
  const noP = await call(c.base, 'GET', np, { expect: 200 });
  assert.deepEqual(noP.json, withP.json);
  const res = await call(c.base, 'POST', np, {
    body: { requirements: [{ type: 'assert-table-uuid', uuid: noP.json.metadata['table-uuid'] }], updates: [{ action: 'set-properties', updates: { noprefix: '1' } }] },
    expect: 200,
  });
  await assertDiskMatchesLoad({ namespace: ['conf'], name: 'events' }, res.json['metadata-location']);
  const list = await call(c.base, 'GET', '/v1/namespaces/conf/tables', { expect: 200 });
  assert.ok(list.json.identifiers.some((i) => i.name === 'events'));
});

test('a namespace with tables cannot be dropped (409 NamespaceNotEmptyException); empty, it can', async () => {
  await cat.createNamespace({ namespace: ['tmpns'] });
  await cat.createTable({ namespace: ['tmpns'] }, { name: 'only', schema });
  await expectIcebergError(cat.dropNamespace({ namespace: ['tmpns'] }), 409, 'NamespaceNotEmptyException');
  await cat.dropTable({ namespace: ['tmpns'], name: 'only' });
  await cat.dropNamespace({ namespace: ['tmpns'] });
  assert.equal(await cat.namespaceExists({ namespace: ['tmpns'] }), false);
});
