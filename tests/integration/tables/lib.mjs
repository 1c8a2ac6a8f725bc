// Helpers shared by the table-lifecycle suite (tests/integration/tables/).
//
// Builds on ../lib/harness.mjs (PostgreSQL, floe processes, raw HTTP) and
// ../lib/spec.mjs (Ajv against the upstream OpenAPI). What it adds:
// - the upstream schema every table route answers with (tableSchemaFor), used by
//   `call()` for raw requests and by `tableCatalog()` for iceberg-js, so every body
//   a test sees has been validated before the test looks at it;
// - UUIDv7 keys, metadata-file reading (file:// locations), and builders for the
//   exact table/commit bodies PyIceberg and DuckDB send.
// Nothing here interprets the daemon's answers beyond schema checks: assertions
// belong to the tests.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { IcebergRestCatalog } from 'iceberg-js';
import { freshDatabase, startFloe, request, encodeNs } from '../lib/harness.mjs';
import { validate } from '../lib/spec.mjs';
import { schemaFor as nsSchemaFor } from '../lib/clients.mjs';

export { encodeNs };

// The upstream schema of a response (null: no body expected / not checked here).
export function tableSchemaFor(method, pathname, status) {
  if (method === 'HEAD' || status === 204 || status === 304) return null;
  if (status >= 400) return 'IcebergErrorResponse';
  const p = pathname.replace(/^\/v1\//, '');
  if (p === 'config') return 'CatalogConfig';
  const segs = p.split('/');
  const i = segs[0] === 'namespaces' || segs[0] === 'tables' || segs[0] === 'transactions' ? 0 : 1;
  const rest = segs.slice(i);
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    if (rest[2] === 'tables' && rest.length === 3) return method === 'GET' ? 'ListTablesResponse' : 'LoadTableResult';
    if (rest[2] === 'register' && rest.length === 3) return 'LoadTableResult';
    if (rest[2] === 'tables' && rest.length === 4) return method === 'GET' ? 'LoadTableResult' : 'CommitTableResponse';
    if (rest[2] === 'tables' && rest.length === 5 && rest[4] === 'credentials') return 'LoadCredentialsResponse';
    if (rest[2] === 'tables' && rest.length === 5 && rest[4] === 'unregister') return 'UnregisterTableResult';
  }
  return nsSchemaFor(method, pathname, status);
}

// validate() with one documented allowance: format v3 writes `current-snapshot-id: null`
// when there is no snapshot (format/spec.md; Java TableMetadataParser for v3, see
// rest-spec-and-clients.md §A.7), while the OpenAPI TableMetadata still types it as a
// plain integer. Such a body is validated with that one member left out (it is optional);
// null anywhere else, or on a v1/v2 table, still fails.
export function validateBody(schema, body) {
  const meta = body && typeof body === 'object' ? (schema === 'TableMetadata' ? body : body.metadata) : undefined;
  if (meta && meta['format-version'] >= 3 && meta['current-snapshot-id'] === null) {
    const { 'current-snapshot-id': _omit, ...rest } = meta;
    const copy = schema === 'TableMetadata' ? rest : { ...body, metadata: rest };
    return validate(schema, copy) && body;
  }
  return validate(schema, body);
}

function describe(res) {
  return `${res.method} ${res.path} -> HTTP ${res.status} ${(res.text || '').slice(0, 600)}`;
}

// Validates a raw response: JSON bodies against their upstream schema, error
// bodies against IcebergErrorResponse with error.code == status, X-Request-Id.
export function checkResponse(res) {
  assert.ok(res.headers['x-request-id'], `no X-Request-Id: ${describe(res)}`);
  const schema = tableSchemaFor(res.method, res.path.split('?')[0], res.status);
  if (res.status === 204 || res.status === 304 || res.method === 'HEAD') {
    assert.equal(res.text, '', `${res.status} must have no body: ${describe(res)}`);
    return res;
  }
  assert.match(res.headers['content-type'] || '', /^application\/json/, `content-type: ${describe(res)}`);
  assert.ok(res.json !== undefined, `body is not JSON: ${describe(res)}`);
  if (schema) validateBody(schema, res.json);
  if (res.status >= 400) assert.equal(res.json.error.code, res.status, `error.code != status: ${describe(res)}`);
  return res;
}

// One raw request, validated. `expect` (a status or list of statuses) is asserted.
export async function call(base, method, path, { body, headers = {}, expect, timeoutMs } = {}) {
  const res = await request(base, method, path, { body, headers, timeoutMs });
  checkResponse(res);
  if (expect !== undefined) {
    const ok = Array.isArray(expect) ? expect.includes(res.status) : res.status === expect;
    assert.ok(ok, `expected ${expect}, got ${describe(res)}`);
  }
  return res;
}

// An error response of `status` and `type`, message matching `word`.
export function assertError(res, status, type, word) {
  assert.equal(res.status, status, `expected ${status} ${type ?? ''}: ${describe(res)}`);
  validate('IcebergErrorResponse', res.json);
  if (type) assert.equal(res.json.error.type, type, `error.type: ${describe(res)}`);
  if (word) {
    const re = word instanceof RegExp ? word : new RegExp(word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
    assert.match(res.json.error.message, re, `error message should name the problem: ${describe(res)}`);
  }
  return res.json.error;
}

export { describe };

// fetch wrapper for iceberg-js: every response is validated against its upstream
// schema before the client sees it (a mismatch makes the call throw).
export function validatingFetch(seen = []) {
  return async (url, init = {}) => {
    const res = await globalThis.fetch(url, init);
    const method = (init.method || 'GET').toUpperCase();
    const { pathname } = new URL(url);
    const text = await res.clone().text();
    seen.push({ method, url: String(url), status: res.status, headers: init.headers, body: init.body, response: text });
    if (!res.headers.get('x-request-id')) throw new Error(`no X-Request-Id on ${method} ${url}`);
    if (method === 'HEAD' || res.status === 204 || res.status === 304) {
      if (text !== '') throw new Error(`${method} ${url} -> ${res.status} has a body: ${text.slice(0, 200)}`);
      return res;
    }
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${url} -> ${res.status}: body is not JSON: ${text.slice(0, 200)}`);
    }
    if (!(res.headers.get('content-type') || '').startsWith('application/json')) {
      throw new Error(`${method} ${url} -> ${res.status}: content-type ${res.headers.get('content-type')}`);
    }
    const schema = tableSchemaFor(method, pathname, res.status);
    if (schema) validateBody(schema, body);
    if (res.status >= 400 && body.error.code !== res.status) {
      throw new Error(`${method} ${url}: error.code ${body.error.code} != status ${res.status}`);
    }
    return res;
  };
}

export function tableCatalog(baseUrl, { warehouse = 'default', seen, ...rest } = {}) {
  return new IcebergRestCatalog({
    baseUrl,
    warehouse,
    auth: { type: 'bearer', token: 'None' },
    fetch: validatingFetch(seen),
    ...rest,
  });
}

// A UUIDv7 (RFC 9562): 48-bit ms timestamp, version 7, variant 10.
export function uuidv7() {
  const b = crypto.randomBytes(16);
  const ms = BigInt(Date.now());
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// A fresh database + floe + the default warehouse's prefix (from /v1/config).
export async function startCatalog(tag, { args = [], databaseUrl, env = {} } = {}) {
  const url = databaseUrl ?? (await freshDatabase(tag)).url;
  const floe = await startFloe({ databaseUrl: url, args, env });
  const cfg = await call(floe.baseUrl, 'GET', '/v1/config?warehouse=default', { expect: 200 });
  const prefix = cfg.json.overrides.prefix;
  assert.ok(prefix, 'config names a prefix');
  return { floe, base: floe.baseUrl, prefix, dbUrl: url, p: `/v1/${encodeURIComponent(prefix)}` };
}

export async function createNamespace(base, p, levels) {
  return call(base, 'POST', `${p}/namespaces`, { body: { namespace: levels, properties: {} }, expect: 200 });
}

export const tablePath = (p, ns, name) => `${p}/namespaces/${encodeNs(ns)}/tables/${encodeURIComponent(name)}`;

// Metadata file on disk for a file:// (or plain path) location.
export function localPath(loc) {
  return loc.startsWith('file://') ? decodeURI(loc.slice('file://'.length)) : loc;
}
export function readMetadataFile(loc) {
  return JSON.parse(fs.readFileSync(localPath(loc), 'utf8'));
}

// A PyIceberg-style schema (client-assigned ids).
export function pySchema(extra = []) {
  return {
    type: 'struct',
    'schema-id': 0,
    'identifier-field-ids': [],
    fields: [
      { id: 1, name: 'id', type: 'long', required: true },
      { id: 2, name: 'data', type: 'string', required: false },
      ...extra,
    ],
  };
}

export function createBody(name, extra = {}) {
  return {
    name,
    schema: pySchema(),
    'partition-spec': { 'spec-id': 0, fields: [] },
    'write-order': { 'order-id': 0, fields: [] },
    'stage-create': false,
    properties: {},
    ...extra,
  };
}

let snapCounter = 0;
// Snapshot ids below 2^53 so JSON.parse keeps them exact, unique per process.
export function newSnapshotId() {
  snapCounter += 1;
  return (crypto.randomInt(1, 2 ** 30) * 2 ** 20 + (snapCounter % 2 ** 20)) % Number.MAX_SAFE_INTEGER || 1;
}

// PyIceberg's fast-append commit on top of `meta` (a TableMetadata object).
export function appendCommit(meta, { ns, name, snapshotId = newSnapshotId(), records = 1, extraSummary = {} } = {}) {
  const current = meta['current-snapshot-id'];
  const parent = current === -1 || current === null || current === undefined ? null : current;
  const location = meta.location;
  return {
    snapshotId,
    body: {
      identifier: { namespace: ns, name },
      requirements: [
        { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent },
        { type: 'assert-table-uuid', uuid: meta['table-uuid'] },
      ],
      updates: [
        {
          action: 'add-snapshot',
          snapshot: {
            'snapshot-id': snapshotId,
            ...(parent === null ? {} : { 'parent-snapshot-id': parent }),
            'sequence-number': meta['last-sequence-number'] + 1,
            'timestamp-ms': Date.now(),
            'manifest-list': `${location}/metadata/snap-${snapshotId}-0-${crypto.randomUUID()}.avro`,
            summary: {
              operation: 'append',
              'added-data-files': '1',
              'added-records': String(records),
              'total-records': String(records),
              ...extraSummary,
            },
            'schema-id': meta['current-schema-id'],
          },
        },
        { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId },
      ],
    },
  };
}

// A table built only by appends: no duplicate snapshot ids, sequence numbers 1..N
// without gap, each parent = the previous snapshot, main = the last one, the
// snapshot-log in that order, and every metadata-log file on disk with consecutive
// version numbers ending just before the current file.
export function assertLinearHistory(result, what) {
  const m = result.metadata;
  const ids = m.snapshots.map((s) => s['snapshot-id']);
  assert.equal(new Set(ids).size, ids.length, `${what}: duplicate snapshot id`);
  const bySeq = [...m.snapshots].sort((a, b) => a['sequence-number'] - b['sequence-number']);
  bySeq.forEach((s, i) => {
    assert.equal(s['sequence-number'], i + 1, `${what}: sequence numbers 1..N without gap`);
    assert.equal(s['parent-snapshot-id'] ?? null, i === 0 ? null : bySeq[i - 1]['snapshot-id'], `${what}: parent chain`);
  });
  assert.equal(m['last-sequence-number'], bySeq.length, `${what}: last-sequence-number`);
  if (bySeq.length) assert.equal(m['current-snapshot-id'], bySeq.at(-1)['snapshot-id'], `${what}: main is the newest`);
  assert.deepEqual(m['snapshot-log'].map((e) => e['snapshot-id']), bySeq.map((s) => s['snapshot-id']), `${what}: snapshot-log`);
  const v = (loc) => Number(/\/metadata\/(\d{5,})-[^/]*\.metadata\.json$/.exec(loc)[1]);
  const lv = m['metadata-log'].map((e) => v(e['metadata-file']));
  for (let i = 1; i < lv.length; i++) assert.equal(lv[i], lv[i - 1] + 1, `${what}: metadata-log versions consecutive`);
  if (lv.length) assert.equal(lv.at(-1), v(result['metadata-location']) - 1, `${what}: metadata-log ends before current`);
  for (const e of m['metadata-log']) assert.ok(fs.existsSync(localPath(e['metadata-file'])), `${what}: ${e['metadata-file']} missing`);
  assert.deepEqual(readMetadataFile(result['metadata-location']), m, `${what}: current metadata file != loadTable`);
}

// request() that reports a transport failure (daemon killed, connection refused)
// as {status: 0, error} instead of throwing.
export async function tryRequest(base, method, path, opts) {
  try {
    return await request(base, method, path, opts);
  } catch (error) {
    return { status: 0, error: String(error.message || error), method, path };
  }
}
