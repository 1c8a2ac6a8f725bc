// The table request sequences of PyIceberg and DuckDB's iceberg extension
// (rest-spec-and-clients.md §B.1, §B.2), replayed over raw HTTP with each client's
// headers and bodies, checking the status codes those clients insist on. Every body
// is validated against the upstream schema (lib.mjs call()). Manifest-list paths are
// realistic but the files do not exist: the catalog never reads them, except the
// manifest lists of v3 appends without added-rows, which the v3 tests write.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import avro from 'avsc';
import { startCatalog, call, assertError, readMetadataFile, localPath, encodeNs, newSnapshotId } from './lib.mjs';

let c;
let P; // "/v1/<prefix>"

before(async () => {
  c = await startCatalog('tbl_replay');
});

after(async () => {
  await c?.floe.stop();
});

// PyIceberg's session headers (legacy auth manager without a token: "Bearer None").
const PY = {
  Authorization: 'Bearer None',
  'X-Iceberg-Access-Delegation': 'vended-credentials',
  'Content-Type': 'application/json',
  'User-Agent': 'PyIceberg/0.9.1',
  'X-Client-Version': '0.9.1',
  Accept: '*/*',
};
const py = (method, p, body, extra = {}) => {
  const headers = { ...PY, ...extra };
  if (body === undefined && (method === 'POST' || method === 'DELETE')) headers['Content-Length'] = '0';
  return call(c.base, method, p, { headers, body: body === undefined ? undefined : JSON.stringify(body) });
};
// DuckDB: bearer TOKEN, Content-Type only with a body, delegation on table loads/creates.
const duck = (method, p, body, { delegation = false } = {}) => {
  const headers = { Authorization: 'Bearer duck-token', 'User-Agent': 'duckdb/v1.4.1(linux_amd64) cpp', Accept: '*/*' };
  if (delegation) headers['X-Iceberg-Access-Delegation'] = 'vended-credentials';
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return call(c.base, method, p, { headers, body: body === undefined ? undefined : JSON.stringify(body) });
};

const tbl = (ns, t) => `${P}/namespaces/${encodeNs(ns)}/tables/${encodeURIComponent(t)}`;

function assertFileMatches(json) {
  assert.deepEqual(readMetadataFile(json['metadata-location']), json.metadata, `${json['metadata-location']} != response`);
}

function expectStatus(res, status) {
  assert.equal(res.status, status, `${res.method} ${res.path}: expected ${status}, got ${res.status} ${res.text.slice(0, 500)}`);
  return res.json;
}

// ---------------------------------------------------------------- PyIceberg

test('PyIceberg: load_catalog → GET /v1/config?warehouse=default', async () => {
  const cfg = expectStatus(await py('GET', '/v1/config?warehouse=default'), 200);
  P = `/v1/${cfg.overrides.prefix}`;
  for (const ep of [
    'POST /v1/{prefix}/namespaces/{namespace}/tables',
    'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}',
    'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}',
    'DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}',
    'POST /v1/{prefix}/transactions/commit',
  ]) {
    assert.ok(cfg.endpoints.includes(ep), `endpoints lists ${ep}`);
  }
  expectStatus(await py('POST', `${P}/namespaces`, { namespace: ['py'], properties: {} }), 200);
});

const pySchema0 = {
  type: 'struct',
  fields: [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 'name', type: 'string', required: false },
    { id: 3, name: 'ts', type: 'timestamptz', required: false },
  ],
  'schema-id': 0,
  'identifier-field-ids': [1],
};

// PyIceberg Snapshot / summary as _SnapshotProducer builds them for a fast append.
function pyAppend(meta, ns, name, snapshotId, records) {
  const parent = meta['current-snapshot-id'] === -1 ? null : meta['current-snapshot-id'];
  const total = Number(meta.snapshots.find((s) => s['snapshot-id'] === parent)?.summary['total-records'] ?? 0);
  const snapshot = {
    'snapshot-id': snapshotId,
    'sequence-number': meta['last-sequence-number'] + 1,
    'timestamp-ms': Date.now(),
    'manifest-list': `${meta.location}/metadata/snap-${snapshotId}-0-${crypto.randomUUID()}.avro`,
    summary: {
      operation: 'append',
      'added-files-size': '1024',
      'added-data-files': '1',
      'added-records': String(records),
      'total-data-files': '1',
      'total-delete-files': '0',
      'total-records': String(total + records),
      'total-files-size': '1024',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
    },
    'schema-id': meta['current-schema-id'],
  };
  if (parent !== null) snapshot['parent-snapshot-id'] = parent;
  return {
    identifier: { namespace: ns, name },
    requirements: [
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent },
      { type: 'assert-table-uuid', uuid: meta['table-uuid'] },
    ],
    updates: [
      { action: 'add-snapshot', snapshot },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId },
    ],
  };
}

test('PyIceberg: create_table (client-assigned ids, stage-create:false) → 200 with metadata-location', async () => {
  const body = {
    name: 'orders',
    schema: pySchema0,
    'partition-spec': {
      'spec-id': 0,
      fields: [{ 'source-id': 1, 'field-id': 1000, transform: 'bucket[16]', name: 'id_bucket' }],
    },
    'write-order': { 'order-id': 0, fields: [] },
    'stage-create': false,
    properties: { 'write.summary.partition-limit': '0' },
  };
  const r = expectStatus(await py('POST', `${P}/namespaces/py/tables`, body), 200);
  assert.ok(r['metadata-location'], 'PyIceberg builds FileIO from metadata-location: it must be present');
  assertFileMatches(r);
  const m = r.metadata;
  assert.equal(m['format-version'], 2, 'client default format-version 2');
  assert.equal(m['current-schema-id'], 0);
  assert.deepEqual(m.schemas[0].fields.map((f) => [f.id, f.name, f.type, f.required]), [
    [1, 'id', 'long', true],
    [2, 'name', 'string', false],
    [3, 'ts', 'timestamptz', false],
  ]);
  assert.deepEqual(m.schemas[0]['identifier-field-ids'], [1], 'identifier-field-ids kept');
  assert.equal(m['last-column-id'], 3);
  assert.deepEqual(m['partition-specs'], [
    { 'spec-id': 0, fields: [{ 'source-id': 1, 'field-id': 1000, transform: 'bucket[16]', name: 'id_bucket' }] },
  ]);
  assert.equal(m['last-partition-id'], 1000);
  assert.equal(m['default-spec-id'], 0);
  assert.equal(m['current-snapshot-id'], -1, 'v2: -1 when there is no snapshot');
  assert.equal(m['last-sequence-number'], 0);
  assert.equal(m.properties['write.summary.partition-limit'], '0');
  assert.equal(m.properties['format-version'], undefined, 'format-version is never persisted as a property');
  assert.deepEqual(r.config, {}, 'file warehouse: empty config');
  assert.equal(r['storage-credentials'], undefined);
  // load_table
  const l = expectStatus(await py('GET', tbl(['py'], 'orders')), 200);
  assert.deepEqual(l.metadata, m);
  assert.equal(l['metadata-location'], r['metadata-location']);
});

test('PyIceberg: append (first: snapshot-id null; then the current id) → 200, uuid unchanged', async () => {
  let meta = expectStatus(await py('GET', tbl(['py'], 'orders')), 200).metadata;
  const uuid = meta['table-uuid'];
  const ids = [];
  for (let i = 0; i < 3; i++) {
    const sid = newSnapshotId();
    const body = pyAppend(meta, ['py'], 'orders', sid, 10);
    if (i === 0) {
      assert.equal(body.requirements[0]['snapshot-id'], null);
      assert.ok(JSON.stringify(body).includes('"snapshot-id":null'), 'null is serialized, not omitted');
    }
    const r = expectStatus(await py('POST', tbl(['py'], 'orders'), body), 200);
    assertFileMatches(r);
    assert.equal(r.metadata['table-uuid'], uuid, 'PyIceberg checks the uuid did not change');
    assert.equal(r.metadata['current-snapshot-id'], sid);
    assert.equal(r.metadata['last-sequence-number'], i + 1);
    const snap = r.metadata.snapshots.find((s) => s['snapshot-id'] === sid);
    assert.equal(snap['sequence-number'], i + 1);
    assert.equal(snap['parent-snapshot-id'], i === 0 ? undefined : ids[i - 1]);
    assert.equal(snap.summary['total-records'], String(10 * (i + 1)));
    assert.deepEqual(r.metadata.refs, { main: { 'snapshot-id': sid, type: 'branch' } });
    assert.equal(r.metadata['snapshot-log'].at(-1)['snapshot-id'], sid);
    ids.push(sid);
    meta = r.metadata;
  }
  assert.deepEqual(meta['snapshot-log'].map((e) => e['snapshot-id']), ids);
});

test('PyIceberg: append on a stale base → 409 CommitFailedException; reload + rebuild → 200', async () => {
  const stale = expectStatus(await py('GET', tbl(['py'], 'orders')), 200).metadata;
  // another writer lands first
  const other = newSnapshotId();
  expectStatus(await py('POST', tbl(['py'], 'orders'), pyAppend(stale, ['py'], 'orders', other, 1)), 200);
  const mine = newSnapshotId();
  const res = await py('POST', tbl(['py'], 'orders'), pyAppend(stale, ['py'], 'orders', mine, 1));
  assertError(res, 409, 'CommitFailedException', /main|snapshot/);
  const fresh = expectStatus(await py('GET', tbl(['py'], 'orders')), 200).metadata;
  assert.ok(!fresh.snapshots.some((s) => s['snapshot-id'] === mine), 'a 409 applied nothing');
  const r = expectStatus(await py('POST', tbl(['py'], 'orders'), pyAppend(fresh, ['py'], 'orders', mine, 1)), 200);
  const snap = r.metadata.snapshots.find((s) => s['snapshot-id'] === mine);
  assert.equal(snap['parent-snapshot-id'], other);
  assert.equal(snap['sequence-number'], fresh['last-sequence-number'] + 1);
});

test('PyIceberg: update_schema (assert-current-schema-id + add-schema + set-current-schema(-1)) → 200', async () => {
  const meta = expectStatus(await py('GET', tbl(['py'], 'orders')), 200).metadata;
  const body = {
    identifier: { namespace: ['py'], name: 'orders' },
    requirements: [
      { type: 'assert-current-schema-id', 'current-schema-id': 0 },
      { type: 'assert-table-uuid', uuid: meta['table-uuid'] },
    ],
    updates: [
      {
        action: 'add-schema',
        schema: {
          type: 'struct',
          fields: [...pySchema0.fields, { id: 4, name: 'amount', type: 'decimal(10, 2)', required: false }],
          'schema-id': 1,
          'identifier-field-ids': [1],
        },
      },
      { action: 'set-current-schema', 'schema-id': -1 },
    ],
  };
  const r = expectStatus(await py('POST', tbl(['py'], 'orders'), body), 200);
  assertFileMatches(r);
  assert.equal(r.metadata['current-schema-id'], 1);
  assert.equal(r.metadata['last-column-id'], 4, 'last-column-id computed server-side');
  assert.deepEqual(r.metadata.schemas.map((s) => s['schema-id']), [0, 1]);
  assert.equal(r.metadata.schemas[1].fields[3].type, 'decimal(10, 2)');
  assert.equal(r.metadata['current-snapshot-id'], meta['current-snapshot-id'], 'snapshots untouched');
  // the same request again: its requirement now fails → 409, nothing applied
  const again = await py('POST', tbl(['py'], 'orders'), body);
  assertError(again, 409, 'CommitFailedException', /schema/);
  const l = expectStatus(await py('GET', tbl(['py'], 'orders')), 200);
  assert.equal(l['metadata-location'], r['metadata-location']);
});

function pyCreateTxnUpdates(staged, { withSnapshot } = {}) {
  const m = staged.metadata;
  const ups = [
    { action: 'assign-uuid', uuid: m['table-uuid'] },
    { action: 'upgrade-format-version', 'format-version': 2 },
    { action: 'add-schema', schema: { ...pySchema0 }, 'last-column-id': 3 },
    { action: 'set-current-schema', 'schema-id': -1 },
    { action: 'add-spec', spec: { 'spec-id': 0, fields: [] } },
    { action: 'set-default-spec', 'spec-id': -1 },
    { action: 'add-sort-order', 'sort-order': { 'order-id': 0, fields: [] } },
    { action: 'set-default-sort-order', 'sort-order-id': -1 },
    { action: 'set-location', location: m.location },
    { action: 'set-properties', updates: { 'created-by': 'pyiceberg' } },
  ];
  if (withSnapshot) {
    const sid = withSnapshot;
    ups.push(
      {
        action: 'add-snapshot',
        snapshot: {
          'snapshot-id': sid,
          'sequence-number': 1,
          'timestamp-ms': Date.now(),
          'manifest-list': `${m.location}/metadata/snap-${sid}-0-${crypto.randomUUID()}.avro`,
          summary: { operation: 'append', 'added-records': '5', 'total-records': '5' },
          'schema-id': 0,
        },
      },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': sid },
    );
  }
  return ups;
}

test('PyIceberg: create_table_transaction (stage-create, then [assert-create] + full update list) → 200', async () => {
  const staged = expectStatus(
    await py('POST', `${P}/namespaces/py/tables`, {
      name: 'txn',
      schema: pySchema0,
      'partition-spec': { 'spec-id': 0, fields: [] },
      'write-order': { 'order-id': 0, fields: [] },
      'stage-create': true,
      properties: {},
    }),
    200,
  );
  assert.ok(staged['metadata-location'] === undefined || staged['metadata-location'] === null);
  assertError(await py('GET', tbl(['py'], 'txn')), 404, 'NoSuchTableException');
  const sid = newSnapshotId();
  const body = {
    identifier: { namespace: ['py'], name: 'txn' },
    requirements: [{ type: 'assert-create' }],
    updates: pyCreateTxnUpdates(staged, { withSnapshot: sid }),
  };
  const r = expectStatus(await py('POST', tbl(['py'], 'txn'), body), 200);
  assertFileMatches(r);
  const m = r.metadata;
  assert.equal(m['table-uuid'], staged.metadata['table-uuid'], 'assign-uuid is honoured');
  assert.equal(m.location, staged.metadata.location);
  assert.equal(m['current-schema-id'], 0);
  assert.equal(m['default-spec-id'], 0);
  assert.equal(m['default-sort-order-id'], 0);
  assert.equal(m['last-column-id'], 3);
  assert.equal(m.properties['created-by'], 'pyiceberg');
  assert.equal(m['current-snapshot-id'], sid);
  assert.equal(m['last-sequence-number'], 1);
  assert.match(r['metadata-location'], /\/metadata\/00000-[0-9a-f-]{36}\.metadata\.json$/);
  const l = expectStatus(await py('GET', tbl(['py'], 'txn')), 200);
  assert.deepEqual(l.metadata, m);
  // the create again: the table exists now → 409, nothing changed
  const dup = await py('POST', tbl(['py'], 'txn'), body);
  assert.equal(dup.status, 409, dup.text);
  assert.ok(['AlreadyExistsException', 'CommitFailedException'].includes(dup.json.error.type), dup.text);
  assert.equal(expectStatus(await py('GET', tbl(['py'], 'txn')), 200)['metadata-location'], r['metadata-location']);
  // assert-create with another requirement → 400
  const bad = await py('POST', tbl(['py'], 'txn2'), {
    ...body,
    identifier: { namespace: ['py'], name: 'txn2' },
    requirements: [{ type: 'assert-create' }, { type: 'assert-current-schema-id', 'current-schema-id': 0 }],
  });
  assertError(bad, 400, 'BadRequestException', /create/);
});

test('PyIceberg: drop_table DELETE ?purgeRequested=False → 204 (files kept); True → 204', async () => {
  const l = expectStatus(await py('GET', tbl(['py'], 'txn')), 200);
  const del = await py('DELETE', `${tbl(['py'], 'txn')}?purgeRequested=False`);
  assert.equal(del.status, 204, del.text);
  assertError(await py('GET', tbl(['py'], 'txn')), 404, 'NoSuchTableException');
  assert.ok(fs.existsSync(localPath(l['metadata-location'])), 'purgeRequested=False keeps files');
  const del2 = await py('DELETE', `${tbl(['py'], 'orders')}?purgeRequested=True`);
  assert.equal(del2.status, 204, del2.text);
  assertError(await py('DELETE', `${tbl(['py'], 'orders')}?purgeRequested=False`), 404, 'NoSuchTableException');
  assertError(await py('DELETE', `${tbl(['py'], 'x')}?purgeRequested=maybe`), 400, 'BadRequestException', 'purgeRequested');
});

// ---------------------------------------------------------------- DuckDB

const duckSchema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { name: 'i', id: 1, type: 'int', required: false },
    { name: 's', id: 2, type: 'string', required: false },
  ],
};

// DuckDB's create-table commit, updates in its order (set-current-schema LAST).
function duckCreateCommit(staged, { snapshotId } = {}) {
  const m = staged.metadata;
  const ups = [
    { action: 'assign-uuid', uuid: m['table-uuid'] },
    { action: 'upgrade-format-version', 'format-version': 2 },
    { action: 'add-schema', schema: duckSchema, 'last-column-id': 2 },
    { action: 'add-spec', spec: { 'spec-id': 0, fields: [] } },
    { action: 'set-default-spec', 'spec-id': 0 },
    { action: 'add-sort-order', 'sort-order': { 'order-id': 0, fields: [] } },
    { action: 'set-default-sort-order', 'sort-order-id': 0 },
    { action: 'set-location', location: m.location },
    { action: 'set-properties', updates: { ...m.properties } },
  ];
  if (snapshotId) {
    ups.push(
      {
        action: 'add-snapshot',
        snapshot: {
          'snapshot-id': snapshotId,
          'sequence-number': 1,
          'timestamp-ms': Date.now(),
          'manifest-list': `${m.location}/metadata/snap-${snapshotId}-${crypto.randomUUID()}.avro`,
          summary: { operation: 'append', 'added-data-files': '1', 'added-records': '3', 'total-records': '3' },
          'schema-id': 0,
        },
      },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId },
    );
  }
  ups.push({ action: 'set-current-schema', 'schema-id': 0 });
  return { requirements: [{ type: 'assert-create' }], updates: ups };
}

function duckInsert(meta, ns, name, snapshotId) {
  const cur = meta['current-snapshot-id'];
  const parent = cur === -1 || cur == null ? null : cur;
  const snapshot = {
    'snapshot-id': snapshotId,
    'sequence-number': meta['last-sequence-number'] + 1,
    'timestamp-ms': Date.now(),
    'manifest-list': `${meta.location}/metadata/snap-${snapshotId}-${crypto.randomUUID()}.avro`,
    summary: { operation: 'append', 'added-data-files': '1', 'added-records': '2' },
    'schema-id': meta['current-schema-id'],
  };
  if (parent !== null) snapshot['parent-snapshot-id'] = parent;
  return {
    identifier: { namespace: ns, name },
    requirements: [
      { type: 'assert-table-uuid', uuid: meta['table-uuid'] },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent },
    ],
    updates: [
      { action: 'add-snapshot', snapshot },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId },
    ],
  };
}

async function duckStage(name) {
  const r = await duck(
    'POST',
    `${P}/namespaces/duck/tables`,
    {
      'stage-create': true,
      name,
      schema: duckSchema,
      'partition-spec': { 'spec-id': 0, fields: [] },
      'write-order': { 'order-id': 0, fields: [] },
      properties: { 'format-version': '2' },
    },
    { delegation: true },
  );
  return expectStatus(r, 200);
}

test('DuckDB: ATTACH (config) and CREATE SCHEMA → exactly 200', async () => {
  const cfg = expectStatus(await duck('GET', '/v1/config?warehouse=default'), 200);
  assert.ok(cfg.defaults && cfg.overrides, 'DuckDB requires defaults and overrides');
  assert.equal(cfg.overrides['namespace-separator'], '%1F');
  const ns = await duck('POST', `${P}/namespaces`, { namespace: ['duck'], properties: {} });
  assert.equal(ns.status, 200, 'DuckDB requires exactly 200 for createNamespace');
});

test('DuckDB: CREATE TABLE AS (stage-create format-version 2, then the commit in DuckDB order) → 200', async () => {
  const staged = await duckStage('ctas');
  assert.ok(staged['metadata-location'] === undefined || staged['metadata-location'] === null);
  assert.deepEqual(staged.config, {}, 'empty config: DuckDB treats a file location as s3 otherwise');
  assert.equal(staged['storage-credentials'], undefined);
  assert.ok(staged.metadata.location, 'usable metadata.location');
  assert.equal(staged.metadata['format-version'], 2);
  assert.equal(staged.metadata.properties['format-version'], undefined, 'format-version is not a stored property');
  const metaDir = path.join(localPath(staged.metadata.location), 'metadata');
  assert.ok(fs.statSync(metaDir).isDirectory(), 'stage-create makes metadata/ (DuckDB writes manifests there first)');
  // DuckDB writes its manifest before committing; the folder must accept it
  fs.writeFileSync(path.join(metaDir, `${crypto.randomUUID()}-m0.avro`), 'manifest bytes');
  const sid = newSnapshotId();
  const r = await duck('POST', tbl(['duck'], 'ctas'), duckCreateCommit(staged, { snapshotId: sid }));
  expectStatus(r, 200);
  assertFileMatches(r.json);
  const m = r.json.metadata;
  assert.equal(m['table-uuid'], staged.metadata['table-uuid']);
  assert.equal(m['current-schema-id'], 0);
  assert.deepEqual(m.schemas.map((s) => s['schema-id']), [0], 'one schema');
  assert.equal(m['last-column-id'], 2);
  assert.equal(m['default-spec-id'], 0);
  assert.deepEqual(m['partition-specs'], [{ 'spec-id': 0, fields: [] }]);
  assert.equal(m['default-sort-order-id'], 0);
  assert.equal(m['current-snapshot-id'], sid);
  assert.deepEqual(m.refs.main, { 'snapshot-id': sid, type: 'branch' });
  assert.equal(m['last-sequence-number'], 1);
  const l = expectStatus(await duck('GET', tbl(['duck'], 'ctas'), undefined, { delegation: true }), 200);
  assert.deepEqual(l.metadata, m);
  assert.deepEqual(l.config, {});
});

test('DuckDB: INSERT through POST /transactions/commit → 204, visible on the next load', async () => {
  let meta = expectStatus(await duck('GET', tbl(['duck'], 'ctas'), undefined, { delegation: true }), 200).metadata;
  for (let i = 0; i < 2; i++) {
    const sid = newSnapshotId();
    const res = await duck('POST', `${P}/transactions/commit`, { 'table-changes': [duckInsert(meta, ['duck'], 'ctas', sid)] });
    assert.equal(res.status, 204, `transactions/commit: ${res.text}`);
    const l = expectStatus(await duck('GET', tbl(['duck'], 'ctas'), undefined, { delegation: true }), 200);
    assertFileMatches(l);
    assert.equal(l.metadata['current-snapshot-id'], sid);
    assert.equal(l.metadata['last-sequence-number'], meta['last-sequence-number'] + 1);
    assert.equal(l.metadata.snapshots.at(-1)['parent-snapshot-id'], meta['current-snapshot-id']);
    meta = l.metadata;
  }
  // a stale INSERT (DuckDB retries only on 409) → 409, nothing applied
  const stale = { ...meta, 'current-snapshot-id': meta.snapshots[0]['snapshot-id'] };
  const res = await duck('POST', `${P}/transactions/commit`, { 'table-changes': [duckInsert(stale, ['duck'], 'ctas', newSnapshotId())] });
  assertError(res, 409, 'CommitFailedException');
  const l = expectStatus(await duck('GET', tbl(['duck'], 'ctas')), 200);
  assert.equal(l.metadata['current-snapshot-id'], meta['current-snapshot-id']);
});

test('DuckDB: CREATE TABLE (no data) then first INSERT with assert-ref-snapshot-id null; two tables in one transaction', async () => {
  const staged = await duckStage('empty');
  const created = await duck('POST', tbl(['duck'], 'empty'), duckCreateCommit(staged));
  expectStatus(created, 200);
  assert.equal(created.json.metadata['current-snapshot-id'], -1);
  const a = expectStatus(await duck('GET', tbl(['duck'], 'empty')), 200).metadata;
  const b = expectStatus(await duck('GET', tbl(['duck'], 'ctas')), 200).metadata;
  const sa = newSnapshotId();
  const sb = newSnapshotId();
  const changeA = duckInsert(a, ['duck'], 'empty', sa);
  assert.equal(changeA.requirements[1]['snapshot-id'], null);
  const res = await duck('POST', `${P}/transactions/commit`, {
    'table-changes': [changeA, duckInsert(b, ['duck'], 'ctas', sb)],
  });
  assert.equal(res.status, 204, res.text);
  assert.equal(expectStatus(await duck('GET', tbl(['duck'], 'empty')), 200).metadata['current-snapshot-id'], sa);
  assert.equal(expectStatus(await duck('GET', tbl(['duck'], 'ctas')), 200).metadata['current-snapshot-id'], sb);
});

test('DuckDB: ALTER TABLE ADD COLUMN (add-schema + set-current-schema, assert-current-schema-id) → 204', async () => {
  const meta = expectStatus(await duck('GET', tbl(['duck'], 'ctas')), 200).metadata;
  const change = {
    identifier: { namespace: ['duck'], name: 'ctas' },
    requirements: [
      { type: 'assert-current-schema-id', 'current-schema-id': 0 },
      { type: 'assert-table-uuid', uuid: meta['table-uuid'] },
    ],
    updates: [
      {
        action: 'add-schema',
        schema: { ...duckSchema, 'schema-id': 1, fields: [...duckSchema.fields, { name: 'd', id: 3, type: 'double', required: false }] },
        'last-column-id': 3,
      },
      { action: 'set-current-schema', 'schema-id': 1 },
    ],
  };
  const res = await duck('POST', `${P}/transactions/commit`, { 'table-changes': [change] });
  assert.equal(res.status, 204, res.text);
  const l = expectStatus(await duck('GET', tbl(['duck'], 'ctas')), 200);
  assertFileMatches(l);
  assert.equal(l.metadata['current-schema-id'], 1);
  assert.equal(l.metadata['last-column-id'], 3);
  assert.equal(l.metadata['current-snapshot-id'], meta['current-snapshot-id']);
  // replayed ALTER: requirement fails → 409
  assertError(await duck('POST', `${P}/transactions/commit`, { 'table-changes': [change] }), 409, 'CommitFailedException');
});

test('DuckDB: DROP TABLE DELETE ?purgeRequested=false → 204', async () => {
  const res = await duck('DELETE', `${tbl(['duck'], 'empty')}?purgeRequested=false`);
  assert.ok([200, 204].includes(res.status), `DuckDB accepts 200/204, got ${res.status} ${res.text}`);
  assert.equal(res.status, 204, 'the spec says 204');
  assertError(await duck('GET', tbl(['duck'], 'empty')), 404, 'NoSuchTableException');
});

// Row lineage needs added-rows; PyIceberg never sends it (only first-row-id).
// Floe counts it from the snapshot's manifest list the way Java's list writer
// assigns row ids: data manifests numbered from first-row-id on, plus data
// manifests without a first_row_id; older manifests and delete manifests add
// nothing.  The lists here are written with avsc in the v3 manifest_file
// layout, as PyIceberg's Avro writer would.
const manifestListType = avro.Type.forSchema({
  type: 'record',
  name: 'manifest_file',
  fields: [
    { name: 'manifest_path', type: 'string', 'field-id': 500 },
    { name: 'manifest_length', type: 'long', 'field-id': 501 },
    { name: 'partition_spec_id', type: 'int', 'field-id': 502 },
    { name: 'content', type: 'int', 'field-id': 517 },
    { name: 'sequence_number', type: 'long', 'field-id': 515 },
    { name: 'min_sequence_number', type: 'long', 'field-id': 516 },
    { name: 'added_snapshot_id', type: 'long', 'field-id': 503 },
    { name: 'added_files_count', type: 'int', 'field-id': 504 },
    { name: 'existing_files_count', type: 'int', 'field-id': 505 },
    { name: 'deleted_files_count', type: 'int', 'field-id': 506 },
    { name: 'added_rows_count', type: 'long', 'field-id': 512 },
    { name: 'existing_rows_count', type: 'long', 'field-id': 513 },
    { name: 'deleted_rows_count', type: 'long', 'field-id': 514 },
    {
      name: 'partitions',
      type: ['null', { type: 'array', items: { type: 'record', name: 'r508', fields: [
        { name: 'contains_null', type: 'boolean', 'field-id': 509 },
        { name: 'contains_nan', type: ['null', 'boolean'], default: null, 'field-id': 518 },
        { name: 'lower_bound', type: ['null', 'bytes'], default: null, 'field-id': 510 },
        { name: 'upper_bound', type: ['null', 'bytes'], default: null, 'field-id': 511 },
      ] }, 'element-id': 508 }],
      default: null,
      'field-id': 507,
    },
    { name: 'key_metadata', type: ['null', 'bytes'], default: null, 'field-id': 519 },
    { name: 'first_row_id', type: ['null', 'long'], default: null, 'field-id': 520 },
  ],
});

function writeManifestList(file, snapshot, manifests) {
  const meta = {
    'snapshot-id': String(snapshot['snapshot-id']),
    'parent-snapshot-id': String(snapshot['parent-snapshot-id'] ?? 'null'),
    'sequence-number': String(snapshot['sequence-number']),
    'first-row-id': String(snapshot['first-row-id']),
    'format-version': '3',
  };
  return new Promise((resolve, reject) => {
    const metadata = Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, Buffer.from(v)]));
    // Done when the file stream has flushed, not when the encoder has.
    const enc = new avro.streams.BlockEncoder(manifestListType, { codec: 'null', metadata });
    const out = fs.createWriteStream(file);
    enc.on('error', reject).pipe(out).on('error', reject).on('finish', resolve);
    for (const m of manifests) {
      enc.write({
        manifest_path: `${path.dirname(file)}/${crypto.randomUUID()}-m0.avro`,
        manifest_length: 4096,
        partition_spec_id: 0,
        content: m.content ?? 0,
        sequence_number: m.seq ?? snapshot['sequence-number'],
        min_sequence_number: m.seq ?? snapshot['sequence-number'],
        added_snapshot_id: m.snapshot ?? snapshot['snapshot-id'],
        added_files_count: m.added ? 1 : 0,
        existing_files_count: m.existing ? 1 : 0,
        deleted_files_count: 0,
        added_rows_count: m.added ?? 0,
        existing_rows_count: m.existing ?? 0,
        deleted_rows_count: 0,
        partitions: [],
        key_metadata: null,
        first_row_id: m.first ?? null,
      });
    }
    enc.end();
  });
}

async function createV3(name) {
  const r = expectStatus(
    await py('POST', `${P}/namespaces/py/tables`, {
      name,
      schema: pySchema0,
      'partition-spec': { 'spec-id': 0, fields: [] },
      'write-order': { 'order-id': 0, fields: [] },
      'stage-create': false,
      properties: { 'format-version': '3' },
    }),
    200,
  );
  assert.equal(r.metadata['format-version'], 3);
  assert.equal(r.metadata['next-row-id'], 0);
  return r;
}

// PyIceberg's v3 append body: pyAppend plus first-row-id, no added-rows.
async function v3Append(meta, name, records, manifests) {
  const body = pyAppend(meta, ['py'], name, newSnapshotId(), records);
  const snap = body.updates[0].snapshot;
  snap['first-row-id'] = meta['next-row-id'];
  assert.equal('added-rows' in snap, false);
  await writeManifestList(localPath(snap['manifest-list']), snap, manifests(snap));
  return body;
}

test('PyIceberg: appends to a v3 table without added-rows → 200, added-rows counted from the manifest list', async () => {
  const name = 'v3_lineage';
  let r = await createV3(name);
  // 1: one new data manifest, numbered from first-row-id.
  let body = await v3Append(r.metadata, name, 10, (s) => [{ added: 10, first: s['first-row-id'] }]);
  r = expectStatus(await py('POST', tbl(['py'], name), body), 200);
  assertFileMatches(r);
  const s1 = r.metadata.snapshots.at(-1);
  assert.equal(s1['first-row-id'], 0);
  assert.equal(s1['added-rows'], 10);
  assert.equal(r.metadata['next-row-id'], 10);
  // 2: the new manifest first, the carried one (numbered before) and a
  // delete manifest after it: only the new rows count.
  body = await v3Append(r.metadata, name, 7, (s) => [
    { added: 7, first: s['first-row-id'] },
    { added: 10, first: 0, snapshot: s1['snapshot-id'], seq: 1 },
    { content: 1, added: 3, snapshot: s1['snapshot-id'], seq: 1 },
  ]);
  r = expectStatus(await py('POST', tbl(['py'], name), body), 200);
  assert.equal(r.metadata.snapshots.at(-1)['added-rows'], 7);
  assert.equal(r.metadata['next-row-id'], 17);
  // 3: manifests the writer left unnumbered count whole (existing rows too),
  // as Java's list writer would number them.
  body = await v3Append(r.metadata, name, 4, () => [
    { added: 4 },
    { existing: 5, snapshot: s1['snapshot-id'], seq: 1 },
    { added: 7, first: 10, seq: 2 },
  ]);
  r = expectStatus(await py('POST', tbl(['py'], name), body), 200);
  assert.equal(r.metadata.snapshots.at(-1)['added-rows'], 9);
  assert.equal(r.metadata.snapshots.at(-1)['first-row-id'], 17);
  assert.equal(r.metadata['next-row-id'], 26);
  // A client that does send added-rows is taken at its word.
  body = pyAppend(r.metadata, ['py'], name, newSnapshotId(), 1);
  Object.assign(body.updates[0].snapshot, { 'first-row-id': 26, 'added-rows': 2 });
  r = expectStatus(await py('POST', tbl(['py'], name), body), 200);
  assert.equal(r.metadata['next-row-id'], 28);
});

test('PyIceberg: a v3 append whose manifest list is missing or outside the table → 400 naming added-rows, nothing applied', async () => {
  const r = await createV3('v3');
  const body = pyAppend(r.metadata, ['py'], 'v3', newSnapshotId(), 10);
  body.updates[0].snapshot['first-row-id'] = r.metadata['next-row-id'];
  // pyAppend's list path does not exist.
  let res = await py('POST', tbl(['py'], 'v3'), body);
  assertError(res, 400, 'BadRequestException', 'added-rows');
  assert.match(res.json.error.message, /manifest list/);
  // A list elsewhere on the server is never read.
  body.updates[0].snapshot['manifest-list'] = 'file:///etc/passwd';
  res = await py('POST', tbl(['py'], 'v3'), body);
  assertError(res, 400, 'BadRequestException', 'added-rows');
  assert.match(res.json.error.message, /^table py\.v3: updates\[0\] \(add-snapshot\): snapshot \d+ has no added-rows, and its manifest-list file:\/\/\/etc\/passwd lies outside the table location and write\.metadata\.path$/);
  body.updates[0].snapshot['manifest-list'] = `${r.metadata.location}/../v3_lineage/metadata/x.avro`;
  res = await py('POST', tbl(['py'], 'v3'), body);
  assertError(res, 400, 'BadRequestException', 'added-rows');
  assert.match(res.json.error.message, /lies outside the table location/);
  const after = expectStatus(await py('GET', tbl(['py'], 'v3')), 200);
  assert.equal(after['metadata-location'], r['metadata-location'], 'nothing applied');
});

test('a v3 commit with more than 64 snapshots without added-rows → 400 naming the bound, before any list is read', async () => {
  const r = await createV3('v3_many');
  const body = pyAppend(r.metadata, ['py'], 'v3_many', newSnapshotId(), 1);
  const first = body.updates[0].snapshot;
  first['first-row-id'] = 0;
  let parent = first['snapshot-id'];
  for (let i = 1; i <= 64; i++) {
    const id = newSnapshotId();
    body.updates.push({
      action: 'add-snapshot',
      snapshot: {
        ...first,
        'snapshot-id': id,
        'parent-snapshot-id': parent,
        'sequence-number': first['sequence-number'] + i,
        'manifest-list': `${r.metadata.location}/metadata/snap-${id}.avro`,
      },
    });
    parent = id;
  }
  // None of the lists exists: a read would answer "manifest list" for updates[0]. The
  // 65th snapshot is updates[65] (updates[1] sets the ref).
  const res = await py('POST', tbl(['py'], 'v3_many'), body);
  assertError(res, 400, 'BadRequestException', 'added-rows');
  assert.match(res.json.error.message, /updates\[65\] \(add-snapshot\): more than 64 snapshots in one commit have no added-rows/);
  const after = expectStatus(await py('GET', tbl(['py'], 'v3_many')), 200);
  assert.equal(after['metadata-location'], r['metadata-location'], 'nothing applied');
});

test('DuckDB STAGE_CREATE_TABLES=false: real create, then the create updates as no-ops + a snapshot → 200', async () => {
  const created = expectStatus(
    await duck(
      'POST',
      `${P}/namespaces/duck/tables`,
      {
        name: 'nostage',
        schema: duckSchema,
        'partition-spec': { 'spec-id': 0, fields: [] },
        'write-order': { 'order-id': 0, fields: [] },
        properties: { 'format-version': '2' },
      },
      { delegation: true },
    ),
    200,
  );
  assert.ok(created['metadata-location']);
  const sid = newSnapshotId();
  const { updates } = duckCreateCommit(created, { snapshotId: sid });
  const body = {
    requirements: [
      { type: 'assert-table-uuid', uuid: created.metadata['table-uuid'] },
      { type: 'assert-current-schema-id', 'current-schema-id': 0 },
    ],
    updates,
  };
  const r = await duck('POST', `${P}/transactions/commit`, { 'table-changes': [{ identifier: { namespace: ['duck'], name: 'nostage' }, ...body }] });
  assert.ok([200, 204].includes(r.status), `${r.status} ${r.text}`);
  const l = expectStatus(await duck('GET', tbl(['duck'], 'nostage')), 200);
  assertFileMatches(l);
  const m = l.metadata;
  assert.equal(m['table-uuid'], created.metadata['table-uuid']);
  assert.equal(m.schemas.length, 1, 'identical add-schema is a no-op');
  assert.equal(m['partition-specs'].length, 1, 'identical add-spec is a no-op');
  assert.equal(m['sort-orders'].length, 1, 'identical add-sort-order is a no-op');
  assert.equal(m['current-schema-id'], 0);
  assert.equal(m['current-snapshot-id'], sid);
});

test('PyIceberg: partition evolution ([assert-last-assigned-partition-id, assert-default-spec-id], [add-spec, set-default-spec(-1)]) → 200', async () => {
  const created = expectStatus(
    await py('POST', `${P}/namespaces/py/tables`, {
      name: 'evolve',
      schema: pySchema0,
      'partition-spec': { 'spec-id': 0, fields: [] },
      'write-order': { 'order-id': 0, fields: [] },
      'stage-create': false,
      properties: {},
    }),
    200,
  );
  const body = {
    identifier: { namespace: ['py'], name: 'evolve' },
    requirements: [
      { type: 'assert-table-uuid', uuid: created.metadata['table-uuid'] },
      { type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': 999 },
      { type: 'assert-default-spec-id', 'default-spec-id': 0 },
    ],
    updates: [
      { action: 'add-spec', spec: { 'spec-id': 1, fields: [{ 'source-id': 3, 'field-id': 1000, transform: 'day', name: 'ts_day' }] } },
      { action: 'set-default-spec', 'spec-id': -1 },
    ],
  };
  const r = expectStatus(await py('POST', tbl(['py'], 'evolve'), body), 200);
  assertFileMatches(r);
  assert.equal(r.metadata['default-spec-id'], 1);
  assert.equal(r.metadata['last-partition-id'], 1000);
  assert.deepEqual(r.metadata['partition-specs'][1].fields, [{ 'source-id': 3, 'field-id': 1000, transform: 'day', name: 'ts_day' }]);
  assertError(await py('POST', tbl(['py'], 'evolve'), body), 409, 'CommitFailedException');
});
