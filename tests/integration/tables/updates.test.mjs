// One case per table update action and per requirement type, through
// POST /v1/{prefix}/namespaces/{ns}/tables/{t}, accepted and rejected. Every
// rejection must leave the table exactly as it was: same metadata-location, same
// metadata. Every acceptance is checked against the metadata file on disk.
// Each case gets its own table (created + two appends + a tag), so cases are
// independent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startCatalog, call, assertError, tablePath, readMetadataFile, createBody, appendCommit, newSnapshotId } from './lib.mjs';

let c;
const NS = ['upd'];
let n = 0;

before(async () => {
  // 100,000 updates make a body of several MiB: raise the body limit so that the
  // update-count limit, not the body limit, is what rejects it.
  c = await startCatalog('tbl_updates', { args: ['--max-body-bytes', String(64 * 1024 * 1024)] });
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
});

after(async () => {
  await c?.floe.stop();
});

// A table with schema 0 (id long, data string), two snapshots s1 ← s2 (main = s2)
// and a tag `t1` on s1. Returns {name, path, meta, loc, s1, s2}.
async function fixture() {
  n += 1;
  const name = `u${n}`;
  const path = tablePath(c.p, NS, name);
  let r = await call(c.base, 'POST', `${c.p}/namespaces/upd/tables`, { body: createBody(name), expect: 200 });
  const a1 = appendCommit(r.json.metadata, { ns: NS, name });
  r = await call(c.base, 'POST', path, { body: a1.body, expect: 200 });
  const a2 = appendCommit(r.json.metadata, { ns: NS, name });
  r = await call(c.base, 'POST', path, { body: a2.body, expect: 200 });
  r = await call(c.base, 'POST', path, {
    body: { requirements: [], updates: [{ action: 'set-snapshot-ref', 'ref-name': 't1', type: 'tag', 'snapshot-id': a1.snapshotId }] },
    expect: 200,
  });
  return { name, path, meta: r.json.metadata, loc: r.json['metadata-location'], s1: a1.snapshotId, s2: a2.snapshotId };
}

async function load(t) {
  return (await call(c.base, 'GET', t.path, { expect: 200 })).json;
}

async function commit(t, requirements, updates) {
  return call(c.base, 'POST', t.path, { body: { requirements, updates } });
}

async function assertUnchanged(t, why) {
  const now = await load(t);
  assert.equal(now['metadata-location'], t.loc, `${why}: metadata-location moved after a rejection`);
  assert.deepEqual(now.metadata, t.meta, `${why}: metadata changed after a rejection`);
}

async function assertAccepted(res, t) {
  assert.equal(res.status, 200, `expected 200, got ${res.status} ${res.text.slice(0, 400)}`);
  const after = await load(t);
  assert.equal(after['metadata-location'], res.json['metadata-location']);
  assert.deepEqual(after.metadata, res.json.metadata);
  assert.deepEqual(readMetadataFile(after['metadata-location']), after.metadata, 'file on disk == loadTable');
  return after.metadata;
}

const prop = (k = 'probe', v = '1') => ({ action: 'set-properties', updates: { [k]: v } });
const snapshot = (t, over = {}) => ({
  'snapshot-id': newSnapshotId(),
  'parent-snapshot-id': t.meta['current-snapshot-id'],
  'sequence-number': t.meta['last-sequence-number'] + 1,
  'timestamp-ms': Date.now(),
  'manifest-list': `${t.meta.location}/metadata/snap-x-${crypto.randomUUID()}.avro`,
  summary: { operation: 'append' },
  'schema-id': 0,
  ...over,
});
const schema1 = {
  type: 'struct',
  'schema-id': 1,
  fields: [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 'data', type: 'string', required: false },
    { id: 3, name: 'extra', type: 'double', required: false },
  ],
};
const bucketSpec = { fields: [{ 'source-id': 1, transform: 'bucket[8]', name: 'id_bucket' }] };
const sortById = { 'order-id': 1, fields: [{ 'source-id': 1, transform: 'identity', direction: 'asc', 'null-order': 'nulls-first' }] };

// ------------------------------------------------------------ accepted updates
const accepted = [
  ['assign-uuid (same uuid)', (t) => [[], [{ action: 'assign-uuid', uuid: t.meta['table-uuid'] }, prop()]],
    (m, t) => assert.equal(m['table-uuid'], t.meta['table-uuid'])],
  ['upgrade-format-version 2 → 3', () => [[], [{ action: 'upgrade-format-version', 'format-version': 3 }]],
    (m) => {
      assert.equal(m['format-version'], 3);
      assert.ok(Number.isInteger(m['next-row-id']), 'v3 metadata has next-row-id');
    }],
  ['upgrade-format-version 2 → 2 (no-op)', () => [[], [{ action: 'upgrade-format-version', 'format-version': 2 }, prop()]],
    (m) => assert.equal(m['format-version'], 2)],
  ['add-schema (new id, last-column-id computed)', () => [[], [{ action: 'add-schema', schema: schema1 }]],
    (m) => {
      assert.deepEqual(m.schemas.map((s) => s['schema-id']), [0, 1]);
      assert.equal(m['last-column-id'], 3);
      assert.equal(m['current-schema-id'], 0, 'add-schema alone does not change the current schema');
    }],
  ['add-schema identical to the current one reuses its id', (t) => [[], [{ action: 'add-schema', schema: { ...t.meta.schemas[0], 'schema-id': 7 } }, { action: 'set-current-schema', 'schema-id': -1 }, prop()]],
    (m) => {
      assert.equal(m.schemas.length, 1);
      assert.equal(m['current-schema-id'], 0);
    }],
  // last-column-id is deprecated: the server computes max(last, highest field id) and
  // never lets it decrease, whatever the client says
  ['add-schema with a stale last-column-id (computed server-side)', () => [[], [{ action: 'add-schema', schema: schema1, 'last-column-id': 1 }]],
    (m) => assert.equal(m['last-column-id'], 3)],
  ['add-schema + set-current-schema(-1)', () => [[], [{ action: 'add-schema', schema: schema1 }, { action: 'set-current-schema', 'schema-id': -1 }]],
    (m) => assert.equal(m['current-schema-id'], 1)],
  ['set-current-schema (existing id)', () => [[], [{ action: 'add-schema', schema: schema1 }, { action: 'set-current-schema', 'schema-id': 1 }]],
    (m) => assert.equal(m['current-schema-id'], 1)],
  ['add-spec (field id assigned from 1000) + set-default-spec(-1)', () => [[], [{ action: 'add-spec', spec: bucketSpec }, { action: 'set-default-spec', 'spec-id': -1 }]],
    (m) => {
      assert.equal(m['default-spec-id'], 1);
      const spec = m['partition-specs'].find((s) => s['spec-id'] === 1);
      assert.deepEqual(spec.fields, [{ 'source-id': 1, 'field-id': 1000, transform: 'bucket[8]', name: 'id_bucket' }]);
      assert.equal(m['last-partition-id'], 1000);
    }],
  ['set-default-spec (an existing id, given explicitly)', () => [[], [{ action: 'add-spec', spec: bucketSpec }, { action: 'set-default-spec', 'spec-id': 1 }]],
    (m) => assert.equal(m['default-spec-id'], 1)],
  ['set-default-spec 1, 0, then 1 again: the last one wins', () => [[], [{ action: 'add-spec', spec: bucketSpec }, { action: 'set-default-spec', 'spec-id': 1 }, { action: 'set-default-spec', 'spec-id': 0 }, { action: 'set-default-spec', 'spec-id': 1 }]],
    (m) => {
      assert.equal(m['default-spec-id'], 1);
      assert.deepEqual(m['partition-specs'].map((s) => s['spec-id']), [0, 1]);
    }],
  ['add-sort-order + set-default-sort-order(-1)', () => [[], [{ action: 'add-sort-order', 'sort-order': sortById }, { action: 'set-default-sort-order', 'sort-order-id': -1 }]],
    (m) => {
      assert.equal(m['default-sort-order-id'], 1);
      assert.deepEqual(m['sort-orders'].find((o) => o['order-id'] === 1).fields, sortById.fields);
    }],
  ['add-snapshot + set-snapshot-ref main', (t) => {
    const s = snapshot(t);
    t.sid = s['snapshot-id'];
    return [[], [{ action: 'add-snapshot', snapshot: s }, { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': s['snapshot-id'] }]];
  }, (m, t) => {
    assert.equal(m['current-snapshot-id'], t.sid);
    assert.equal(m['last-sequence-number'], t.meta['last-sequence-number'] + 1);
    assert.equal(m['snapshot-log'].at(-1)['snapshot-id'], t.sid);
  }],
  ['add-snapshot alone (not current)', (t) => {
    const s = snapshot(t);
    t.sid = s['snapshot-id'];
    return [[], [{ action: 'add-snapshot', snapshot: s }]];
  }, (m, t) => {
    assert.ok(m.snapshots.some((s) => s['snapshot-id'] === t.sid));
    assert.equal(m['current-snapshot-id'], t.s2, 'main unchanged');
  }],
  ['set-snapshot-ref tag', (t) => [[], [{ action: 'set-snapshot-ref', 'ref-name': 'v1', type: 'tag', 'snapshot-id': t.s1, 'max-ref-age-ms': 86400000 }]],
    (m, t) => assert.deepEqual(m.refs.v1, { 'snapshot-id': t.s1, type: 'tag', 'max-ref-age-ms': 86400000 })],
  ['set-snapshot-ref branch', (t) => [[], [{ action: 'set-snapshot-ref', 'ref-name': 'dev', type: 'branch', 'snapshot-id': t.s1, 'min-snapshots-to-keep': 2 }]],
    (m, t) => {
      assert.equal(m.refs.dev['snapshot-id'], t.s1);
      assert.equal(m.refs.dev.type, 'branch');
      assert.equal(m.refs.dev['min-snapshots-to-keep'], 2);
      assert.equal(m['current-snapshot-id'], t.s2, 'a non-main branch does not move main');
    }],
  ['set-snapshot-ref main to an older snapshot (rollback)', (t) => [[], [{ action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': t.s1 }]],
    (m, t) => {
      assert.equal(m['current-snapshot-id'], t.s1);
      assert.equal(m['snapshot-log'].at(-1)['snapshot-id'], t.s1);
    }],
  ['remove-snapshot-ref (tag)', () => [[], [{ action: 'remove-snapshot-ref', 'ref-name': 't1' }]],
    (m) => assert.equal(m.refs.t1, undefined)],
  ['remove-snapshot-ref main → no current snapshot', () => [[], [{ action: 'remove-snapshot-ref', 'ref-name': 'main' }]],
    (m) => {
      assert.equal(m.refs.main, undefined);
      assert.equal(m['current-snapshot-id'], -1);
    }],
  ['remove-snapshots (unreferenced)', (t) => [[], [{ action: 'remove-snapshot-ref', 'ref-name': 't1' }, { action: 'remove-snapshots', 'snapshot-ids': [t.s1] }]],
    (m, t) => {
      assert.ok(!m.snapshots.some((s) => s['snapshot-id'] === t.s1));
      assert.equal(m['current-snapshot-id'], t.s2);
    }],
  ['set-location', (t) => [[], [{ action: 'set-location', location: `${t.meta.location}_moved` }]],
    (m, t) => assert.equal(m.location, `${t.meta.location}_moved`)],
  ['set-properties', () => [[], [{ action: 'set-properties', updates: { a: '1', 'b.c': 'x y' } }]],
    (m) => {
      assert.equal(m.properties.a, '1');
      assert.equal(m.properties['b.c'], 'x y');
    }],
  ['remove-properties', () => [[], [{ action: 'set-properties', updates: { a: '1' } }, { action: 'remove-properties', removals: ['a', 'never-set'] }]],
    (m) => assert.equal(m.properties.a, undefined)],
  ['set-statistics / remove-statistics', (t) => {
    const st = { 'snapshot-id': t.s2, 'statistics-path': `${t.meta.location}/metadata/stats.puffin`, 'file-size-in-bytes': 100, 'file-footer-size-in-bytes': 20, 'blob-metadata': [] };
    t.st = st;
    return [[], [{ action: 'set-statistics', statistics: st }]];
  }, (m, t) => assert.deepEqual(m.statistics, [t.st])],
  ['remove-statistics', (t) => [[], [
    { action: 'set-statistics', statistics: { 'snapshot-id': t.s2, 'statistics-path': `${t.meta.location}/metadata/s.puffin`, 'file-size-in-bytes': 1, 'file-footer-size-in-bytes': 1, 'blob-metadata': [] } },
    { action: 'remove-statistics', 'snapshot-id': t.s2 },
    prop(),
  ]], (m) => assert.deepEqual(m.statistics ?? [], [])],
  ['set-partition-statistics', (t) => {
    const st = { 'snapshot-id': t.s2, 'statistics-path': `${t.meta.location}/metadata/p.parquet`, 'file-size-in-bytes': 10 };
    t.st = st;
    return [[], [{ action: 'set-partition-statistics', 'partition-statistics': st }]];
  }, (m, t) => assert.deepEqual(m['partition-statistics'], [t.st])],
  ['remove-partition-statistics', (t) => [[], [
    { action: 'set-partition-statistics', 'partition-statistics': { 'snapshot-id': t.s2, 'statistics-path': `${t.meta.location}/metadata/p.parquet`, 'file-size-in-bytes': 10 } },
    { action: 'remove-partition-statistics', 'snapshot-id': t.s2 },
    prop(),
  ]], (m) => assert.deepEqual(m['partition-statistics'] ?? [], [])],
  ['remove-partition-specs (not default)', () => [[], [{ action: 'add-spec', spec: bucketSpec }, { action: 'set-default-spec', 'spec-id': -1 }, { action: 'remove-partition-specs', 'spec-ids': [0] }]],
    (m) => assert.deepEqual(m['partition-specs'].map((s) => s['spec-id']), [1])],
  ['remove-schemas (not current)', () => [[], [{ action: 'add-schema', schema: schema1 }, { action: 'remove-schemas', 'schema-ids': [1] }, prop()]],
    (m) => assert.deepEqual(m.schemas.map((s) => s['schema-id']), [0])],
  ['add-encryption-key / remove-encryption-key (v3)', () => [[], [
    { action: 'upgrade-format-version', 'format-version': 3 },
    { action: 'add-encryption-key', 'encryption-key': { 'key-id': 'k1', 'encrypted-key-metadata': Buffer.from('key').toString('base64') } },
    { action: 'add-encryption-key', 'encryption-key': { 'key-id': 'k2', 'encrypted-key-metadata': Buffer.from('key2').toString('base64') } },
    { action: 'remove-encryption-key', 'key-id': 'k1' },
  ]], (m) => assert.deepEqual((m['encryption-keys'] ?? []).map((k) => k['key-id']), ['k2'])],
];

for (const [name, build, check] of accepted) {
  test(`update ${name} → 200`, async () => {
    const t = await fixture();
    const [reqs, ups] = build(t);
    const res = await commit(t, reqs, ups);
    const m = await assertAccepted(res, t);
    assert.notEqual(res.json['metadata-location'], t.loc, 'a change writes a new metadata file');
    assert.equal(m['metadata-log'].at(-1)['metadata-file'], t.loc, 'previous file appended to metadata-log');
    check(m, t);
  });
}

// ------------------------------------------------------------ requirements
const uuidOf = (t) => t.meta['table-uuid'];
const requirementCases = [
  // [name, requirement(t), passes]
  ['assert-table-uuid (equal)', (t) => ({ type: 'assert-table-uuid', uuid: uuidOf(t) }), true],
  ['assert-table-uuid (equal, upper case)', (t) => ({ type: 'assert-table-uuid', uuid: uuidOf(t).toUpperCase() }), true],
  ['assert-table-uuid (other)', () => ({ type: 'assert-table-uuid', uuid: crypto.randomUUID() }), false],
  ['assert-ref-snapshot-id main (current)', (t) => ({ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': t.s2 }), true],
  ['assert-ref-snapshot-id main (stale)', (t) => ({ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': t.s1 }), false],
  ['assert-ref-snapshot-id main null while main exists', () => ({ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }), false],
  ['assert-ref-snapshot-id absent ref, null', () => ({ type: 'assert-ref-snapshot-id', ref: 'nosuch', 'snapshot-id': null }), true],
  ['assert-ref-snapshot-id absent ref, an id', (t) => ({ type: 'assert-ref-snapshot-id', ref: 'nosuch', 'snapshot-id': t.s1 }), false],
  ['assert-ref-snapshot-id tag (current)', (t) => ({ type: 'assert-ref-snapshot-id', ref: 't1', 'snapshot-id': t.s1 }), true],
  ['assert-last-assigned-field-id (equal)', () => ({ type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 2 }), true],
  ['assert-last-assigned-field-id (other)', () => ({ type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 3 }), false],
  ['assert-current-schema-id (equal)', () => ({ type: 'assert-current-schema-id', 'current-schema-id': 0 }), true],
  ['assert-current-schema-id (other)', () => ({ type: 'assert-current-schema-id', 'current-schema-id': 1 }), false],
  ['assert-last-assigned-partition-id (equal)', () => ({ type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': 999 }), true],
  ['assert-last-assigned-partition-id (other)', () => ({ type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': 1000 }), false],
  ['assert-default-spec-id (equal)', () => ({ type: 'assert-default-spec-id', 'default-spec-id': 0 }), true],
  ['assert-default-spec-id (other)', () => ({ type: 'assert-default-spec-id', 'default-spec-id': 1 }), false],
  ['assert-default-sort-order-id (equal)', () => ({ type: 'assert-default-sort-order-id', 'default-sort-order-id': 0 }), true],
  ['assert-default-sort-order-id (other)', () => ({ type: 'assert-default-sort-order-id', 'default-sort-order-id': 1 }), false],
  ['assert-create on an existing table', () => ({ type: 'assert-create' }), false],
];

for (const [name, req, passes] of requirementCases) {
  test(`requirement ${name} → ${passes ? 200 : 409}`, async () => {
    const t = await fixture();
    const res = await commit(t, [req(t)], [prop('req', name)]);
    if (passes) {
      const m = await assertAccepted(res, t);
      assert.equal(m.properties.req, name);
    } else {
      assert.equal(res.status, 409, res.text);
      const type = res.json.error.type;
      assert.ok(
        type === 'CommitFailedException' || (name.startsWith('assert-create') && type === 'AlreadyExistsException'),
        `409 type ${type}`,
      );
      await assertUnchanged(t, name);
    }
  });
}

test('every failing requirement is checked, not only the first: a passing one then a failing one → 409', async () => {
  const t = await fixture();
  const res = await commit(t, [{ type: 'assert-table-uuid', uuid: uuidOf(t) }, { type: 'assert-current-schema-id', 'current-schema-id': 5 }], [prop()]);
  assertError(res, 409, 'CommitFailedException', /schema/);
  await assertUnchanged(t, 'second requirement');
});

// ------------------------------------------------------------ rejections (400 / 409)
// [name, (t) => [requirements, updates], status, message-word]. Each valid-looking
// prefix (set-properties first) proves nothing is applied when a later update fails.
const rejected = [
  ['unknown update action', () => [[], [prop(), { action: 'explode' }]], 400, 'explode'],
  ['update without action', () => [[], [prop(), { updates: { a: 'b' } }]], 400, 'action'],
  ['action not a string', () => [[], [prop(), { action: 7 }]], 400, 'action'],
  ['update not an object', () => [[], [prop(), 'set-properties']], 400],
  ['unknown requirement type', () => [[{ type: 'assert-moon-phase', phase: 'full' }], [prop()]], 400, 'assert-moon-phase'],
  ['requirement without type', () => [[{ 'current-schema-id': 0 }], [prop()]], 400, 'type'],
  ['requirement missing its field', () => [[{ type: 'assert-current-schema-id' }], [prop()]], 400, 'current-schema-id'],
  ['requirement field of the wrong type', () => [[{ type: 'assert-current-schema-id', 'current-schema-id': '0' }], [prop()]], 400, 'current-schema-id'],
  ['assert-ref-snapshot-id without the snapshot-id key', () => [[{ type: 'assert-ref-snapshot-id', ref: 'main' }], [prop()]], 400, 'snapshot-id'],
  ['an update that is not an object', () => [[], [prop(), 'x']], 400, 'updates[1] must be a JSON object'],
  ['an update whose action is not a string', () => [[], [prop(), { action: 5 }]], 400, "updates[1]: field 'action' must be a string, got integer"],
  ['an update without its action', () => [[], [prop(), { 'schema-id': 0 }]], 400, "updates[1]: missing required field 'action'"],
  ['set-current-schema with schema-id as a string', () => [[], [prop(), { action: 'set-current-schema', 'schema-id': '0' }]], 400,
    "updates[1] (set-current-schema): field 'schema-id' must be an integer, got string"],
  ['remove-properties with a number among its removals', () => [[], [prop(), { action: 'remove-properties', removals: ['a', 7] }]], 400,
    'updates[1] (remove-properties): removals[1] must be a string'],
  ['assign-uuid without uuid', () => [[], [prop(), { action: 'assign-uuid' }]], 400, 'uuid'],
  ['assign-uuid not a uuid', () => [[], [prop(), { action: 'assign-uuid', uuid: 'not-a-uuid' }]], 400, 'uuid'],
  ['upgrade-format-version downgrade 2 → 1', () => [[], [prop(), { action: 'upgrade-format-version', 'format-version': 1 }]], 400, 'downgrade'],
  ['upgrade-format-version to an unsupported version', () => [[], [prop(), { action: 'upgrade-format-version', 'format-version': 99 }]], 400, 'version'],
  ['upgrade-format-version as a string', () => [[], [prop(), { action: 'upgrade-format-version', 'format-version': '3' }]], 400, 'format-version'],
  ['add-schema without schema', () => [[], [prop(), { action: 'add-schema' }]], 400, 'schema'],
  ['add-schema with a duplicate field id', () => [[], [prop(), { action: 'add-schema', schema: { type: 'struct', 'schema-id': 1, fields: [{ id: 1, name: 'a', type: 'long', required: true }, { id: 1, name: 'b', type: 'long', required: true }] } }]], 400],
  ['add-schema with an unknown type', () => [[], [prop(), { action: 'add-schema', schema: { type: 'struct', 'schema-id': 1, fields: [{ id: 1, name: 'a', type: 'quaternion', required: true }] } }]], 400, 'quaternion'],
  ['set-current-schema 99 (does not exist)', () => [[], [prop(), { action: 'set-current-schema', 'schema-id': 99 }]], 400, '99'],
  ['set-current-schema -1 without add-schema', () => [[], [prop(), { action: 'set-current-schema', 'schema-id': -1 }]], 400],
  ['set-current-schema without schema-id', () => [[], [prop(), { action: 'set-current-schema' }]], 400, 'schema-id'],
  ['add-spec on a missing source column', () => [[], [prop(), { action: 'add-spec', spec: { fields: [{ 'source-id': 42, transform: 'identity', name: 'x' }] } }]], 400, '42'],
  ['add-spec with an unknown transform', () => [[], [prop(), { action: 'add-spec', spec: { fields: [{ 'source-id': 1, transform: 'shuffle', name: 'x' }] } }]], 400, 'shuffle'],
  ['set-default-spec 99', () => [[], [prop(), { action: 'set-default-spec', 'spec-id': 99 }]], 400, '99'],
  ['add-sort-order with a bad direction', () => [[], [prop(), { action: 'add-sort-order', 'sort-order': { 'order-id': 1, fields: [{ 'source-id': 1, transform: 'identity', direction: 'sideways', 'null-order': 'nulls-first' }] } }]], 400, 'direction'],
  ['add-sort-order on a missing column', () => [[], [prop(), { action: 'add-sort-order', 'sort-order': { 'order-id': 1, fields: [{ 'source-id': 42, transform: 'identity', direction: 'asc', 'null-order': 'nulls-first' }] } }]], 400, '42'],
  ['set-default-sort-order 99', () => [[], [prop(), { action: 'set-default-sort-order', 'sort-order-id': 99 }]], 400, '99'],
  ['add-snapshot with an existing snapshot id', (t) => [[], [prop(), { action: 'add-snapshot', snapshot: snapshot(t, { 'snapshot-id': t.s1 }) }]], 400, 'snapshot'],
  ['add-snapshot without manifest-list', (t) => {
    const s = snapshot(t);
    delete s['manifest-list'];
    return [[], [prop(), { action: 'add-snapshot', snapshot: s }]];
  }, 400, 'manifest-list'],
  ['add-snapshot without summary', (t) => {
    const s = snapshot(t);
    delete s.summary;
    return [[], [prop(), { action: 'add-snapshot', snapshot: s }]];
  }, 400, 'summary'],
  ['add-snapshot with an unknown operation', (t) => [[], [prop(), { action: 'add-snapshot', snapshot: snapshot(t, { summary: { operation: 'teleport' } }) }]], 400, 'teleport'],
  ['add-snapshot with a string snapshot-id', (t) => [[], [prop(), { action: 'add-snapshot', snapshot: snapshot(t, { 'snapshot-id': '123' }) }]], 400, 'snapshot-id'],
  ['set-snapshot-ref to a snapshot that does not exist', () => [[], [prop(), { action: 'set-snapshot-ref', 'ref-name': 'x', type: 'tag', 'snapshot-id': 424242 }]], 400, '424242'],
  ['set-snapshot-ref main as a tag', (t) => [[], [prop(), { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'tag', 'snapshot-id': t.s1 }]], 400, 'main'],
  ['set-snapshot-ref with an unknown type', (t) => [[], [prop(), { action: 'set-snapshot-ref', 'ref-name': 'x', type: 'leaf', 'snapshot-id': t.s1 }]], 400, 'type'],
  ['remove-snapshots with ids not an array', (t) => [[], [prop(), { action: 'remove-snapshots', 'snapshot-ids': t.s1 }]], 400, 'snapshot-ids'],
  ['set-location without location', () => [[], [prop(), { action: 'set-location' }]], 400, 'location'],
  ['set-properties with a non-string value', () => [[], [prop(), { action: 'set-properties', updates: { a: 1 } }]], 400],
  ['set-properties updates not an object', () => [[], [prop(), { action: 'set-properties', updates: ['a'] }]], 400, 'updates'],
  ['remove-properties removals not an array', () => [[], [prop(), { action: 'remove-properties', removals: 'a' }]], 400, 'removals'],
  ['remove-schemas of the current schema', () => [[], [prop(), { action: 'remove-schemas', 'schema-ids': [0] }]], 400, 'current'],
  ['remove-partition-specs of the default spec', () => [[], [prop(), { action: 'remove-partition-specs', 'spec-ids': [0] }]], 400, 'default'],
  ['set-statistics without statistics', () => [[], [prop(), { action: 'set-statistics' }]], 400, 'statistics'],
  ['remove-encryption-key without key-id', () => [[], [prop(), { action: 'remove-encryption-key' }]], 400, 'key-id'],
];

for (const [name, build, status, word] of rejected) {
  test(`reject ${name} → ${status}`, async () => {
    const t = await fixture();
    const [reqs, ups] = build(t);
    const res = await commit(t, reqs, ups);
    assertError(res, status, status === 400 ? 'BadRequestException' : 'CommitFailedException', word);
    await assertUnchanged(t, name);
  });
}

test('add-snapshot with a stale sequence-number (≤ last, parent set) → 409 retryable, not applied', async () => {
  const t = await fixture();
  const s = snapshot(t, { 'sequence-number': t.meta['last-sequence-number'] });
  const res = await commit(t, [], [{ action: 'add-snapshot', snapshot: s }, { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': s['snapshot-id'] }]);
  // Java: RetryableValidationException → 409, so the client refreshes and retries (§C.1)
  assertError(res, 409, 'CommitFailedException', 'sequence');
  await assertUnchanged(t, 'stale sequence');
});

test('body-level rejections: requirements / updates missing or mistyped → 400, nothing applied', async () => {
  const t = await fixture();
  for (const body of [
    { updates: [prop()] },
    { requirements: [] },
    { requirements: {}, updates: [prop()] },
    { requirements: [], updates: { action: 'set-properties' } },
    '{"requirements":[],"updates":[',
    '{"requirements":[],"requirements":[],"updates":[]}',
  ]) {
    const res = await call(c.base, 'POST', t.path, { body });
    assertError(res, 400, 'BadRequestException');
  }
  await assertUnchanged(t, 'body');
});

test('100,000 updates → 400 naming max-commit-updates, nothing applied', async () => {
  const t = await fixture();
  const updates = Array.from({ length: 100000 }, (_, i) => ({ action: 'set-properties', updates: { [`k${i % 10}`]: String(i) } }));
  const body = JSON.stringify({ requirements: [], updates });
  assert.ok(body.length < 64 * 1024 * 1024 && body.length > 4 * 1024 * 1024, `body of ${body.length} bytes`);
  const res = await call(c.base, 'POST', t.path, { body, timeoutMs: 60000 });
  assertError(res, 400, 'BadRequestException', 'max-commit-updates');
  await assertUnchanged(t, '100k updates');
  // the limit counts across a transaction's tables too
  const t2 = await fixture();
  const half = updates.slice(0, 6000);
  const tx = await call(c.base, 'POST', `${c.p}/transactions/commit`, {
    body: {
      'table-changes': [
        { identifier: { namespace: NS, name: t.name }, requirements: [], updates: half },
        { identifier: { namespace: NS, name: t2.name }, requirements: [], updates: half },
      ],
    },
    timeoutMs: 60000,
  });
  assertError(tx, 400, 'BadRequestException', /max-commit-updates, counted across its tables\): table upd\.\S+ brings 6000 with 4000 left/);
  await assertUnchanged(t, 'tx limit');
  await assertUnchanged(t2, 'tx limit');
});

test('a malformed change in a transaction names its index, and no table changes', async () => {
  const t = await fixture();
  const good = { identifier: { namespace: NS, name: t.name }, requirements: [], updates: [prop()] };
  const cases = [
    [{ requirements: [], updates: [] }, "table-changes[1]: missing required field 'identifier'"],
    [{ identifier: { namespace: NS }, requirements: [], updates: [] }, 'table-changes[1].identifier'],
    [{ identifier: { namespace: NS, name: 'other' }, requirements: [], updates: {} }, 'table-changes[1]'],
  ];
  for (const [bad, word] of cases) {
    const res = await call(c.base, 'POST', `${c.p}/transactions/commit`, { body: { 'table-changes': [good, bad] } });
    assertError(res, 400, 'BadRequestException', word);
  }
  await assertUnchanged(t, 'malformed transaction');
});

test('snapshot ids beyond 2^53 survive exactly (64-bit longs)', async () => {
  const t = await fixture();
  const big = '9007199254740993'; // 2^53 + 1: not representable as a double
  const text = `{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":${big},"parent-snapshot-id":${t.s2},"sequence-number":${t.meta['last-sequence-number'] + 1},"timestamp-ms":${Date.now()},"manifest-list":"${t.meta.location}/metadata/snap-${big}-0-x.avro","summary":{"operation":"append"},"schema-id":0}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":${big}}]}`;
  const res = await call(c.base, 'POST', t.path, { body: text, expect: 200 });
  assert.match(res.text, new RegExp(`"current-snapshot-id":\\s*${big}\\b`), 'current-snapshot-id kept exactly');
  const l = await call(c.base, 'GET', t.path, { expect: 200 });
  assert.match(l.text, new RegExp(`"snapshot-id":\\s*${big}\\b`));
  // and a requirement on it compares exactly (…993 vs …992 differ only beyond double precision)
  const near = `{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":9007199254740992}],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`;
  assertError(await call(c.base, 'POST', t.path, { body: near }), 409, 'CommitFailedException');
});

test('no-op commit (nothing changes) writes no new metadata file', async () => {
  const t = await fixture();
  const res = await commit(t, [], []);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json['metadata-location'], t.loc, 'no change, same file');
  await assertUnchanged(t, 'no-op');
});

test('commit on a table or namespace that does not exist → 404', async () => {
  assertError(await call(c.base, 'POST', tablePath(c.p, NS, 'ghost'), { body: { requirements: [], updates: [prop()] } }), 404, 'NoSuchTableException');
  assertError(await call(c.base, 'POST', tablePath(c.p, ['ghostns'], 'ghost'), { body: { requirements: [], updates: [prop()] } }), 404);
});

// spec (TableUpdate / TableRequirement): "Server implementations are required to fail
// with a 400 status code if any unknown updates or requirements are received." Java
// rejects at deserialization, before any requirement is looked at; a 409 instead tells
// the client to refresh and retry a request that can never succeed.
test('an invalid update is 400 even when a requirement also fails', async () => {
  const t = await fixture();
  const stale = { type: 'assert-current-schema-id', 'current-schema-id': 5 };
  assertError(await commit(t, [stale], [{ action: 'explode' }]), 400, 'BadRequestException', 'explode');
  assertError(await commit(t, [stale], [{ action: 'set-properties', updates: { a: 1 } }]), 400, 'BadRequestException');
  await assertUnchanged(t, 'invalid update + stale requirement');
});
