// Hostile and broken input: each is a clear 4xx in the Iceberg error model whose
// message names the problem, and the daemon stays healthy afterwards.
// Floe A runs with default limits (checks the documented defaults); floe B runs with
// small limits set by flags (checks that the flags are honoured).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freshDatabase, startFloe, request, rawExchange, encodeNs } from './lib/harness.mjs';
import { expectJson, expectError, describe as show } from './lib/checks.mjs';

let A; // defaults
let B; // --max-body-bytes=1024 --max-json-depth=5 --max-identifier-bytes=16 --max-properties=3 --max-namespace-levels=3

before(async () => {
  const db = await freshDatabase('badinput');
  A = await startFloe({ databaseUrl: db.url });
  B = await startFloe({
    databaseUrl: db.url,
    args: [
      '--max-body-bytes=1024',
      '--max-json-depth=5',
      '--max-identifier-bytes=16',
      '--max-properties=3',
      '--max-namespace-levels=3',
      '--warehouse=',
    ],
  });
});

after(async () => {
  await Promise.all([A?.stop(), B?.stop()]);
});

async function healthy(f) {
  const res = await request(f.baseUrl, 'GET', '/healthz');
  assert.equal(res.status, 200, `healthz after bad input: ${show(res)}\n--- floe logs ---\n${f.logs().slice(-3000)}`);
}

const post = (f, path, body, headers = {}) => request(f.baseUrl, 'POST', path, { body, headers });

// One test per case: send, expect (status, type, word), then /healthz is 200.
function bad(name, send, status, type, word, which = () => A) {
  test(name, async () => {
    const f = which();
    const res = await send(f);
    expectError(res, status, type, word);
    await healthy(f);
  });
}

// ------------------------------------------------------------------ bodies

bad('truncated JSON', (f) => post(f, '/v1/namespaces', '{"namespace":["a"'), 400, 'BadRequestException', /json/i);
bad('malformed JSON', (f) => post(f, '/v1/namespaces', "{namespace:['a']}"), 400, 'BadRequestException', /json/i);
bad('trailing garbage after JSON', (f) => post(f, '/v1/namespaces', '{"namespace":["a"]} x'), 400, 'BadRequestException', /json/i);
bad('body is a JSON array', (f) => post(f, '/v1/namespaces', '[["a"]]'), 400, 'BadRequestException', /object/i);
bad('empty body on create', (f) => post(f, '/v1/namespaces', ''), 400, 'BadRequestException', /body|json|empty/i);
bad('empty body on update properties', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['for_props'] });
  return post(f, '/v1/namespaces/for_props/properties', '');
}, 400, 'BadRequestException', /body|json|empty/i);
bad('invalid UTF-8 in JSON', (f) => post(f, '/v1/namespaces', Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x73, 0x70, 0x61, 0x63, 0x65, 0x22, 0x3a, 0x5b, 0x22, 0xff, 0xfe, 0x22, 0x5d, 0x7d])), 400, 'BadRequestException', /utf-?8|json/i);

bad('namespace as a string', (f) => post(f, '/v1/namespaces', { namespace: 'a' }), 400, 'BadRequestException', /namespace/);
bad('namespace levels as numbers', (f) => post(f, '/v1/namespaces', { namespace: [1, 2] }), 400, 'BadRequestException', /namespace/);
bad('namespace missing', (f) => post(f, '/v1/namespaces', { properties: {} }), 400, 'BadRequestException', /namespace/);
bad('namespace empty array', (f) => post(f, '/v1/namespaces', { namespace: [] }), 400, 'BadRequestException', /namespace/);
bad('namespace level empty string', (f) => post(f, '/v1/namespaces', { namespace: [''] }), 400, 'BadRequestException', /namespace|empty/i);
bad('the level separator U+001F inside a namespace level', (f) => post(f, '/v1/namespaces', { namespace: ['a\x1fb'] }), 400, 'BadRequestException', /must not contain the unit separator U\+001F/);
bad('NUL inside a namespace name', (f) => post(f, '/v1/namespaces', '{"namespace":["a\\u0000b"]}'), 400, 'BadRequestException', /nul|\\0|control|invalid/i);
bad('properties values as numbers', (f) => post(f, '/v1/namespaces', { namespace: ['pnum'], properties: { k: 1 } }), 400, 'BadRequestException', /properties|'k'.*string/);
bad('a namespace property value over 64 KiB', (f) => post(f, '/v1/namespaces', { namespace: ['pbig'], properties: { comment: 'x'.repeat(65537) } }),
  400, 'BadRequestException', "the value of 'comment' is 65537 bytes, over the limit of 65536");
bad('a table property value over 64 KiB, at create', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['tbig'] });
  return post(f, '/v1/namespaces/tbig/tables', { name: 't', schema: longSchema, properties: { note: 'x'.repeat(65537) } });
}, 400, 'BadRequestException', "the value of 'note' is 65537 bytes, over the limit of 65536");
bad('a table property value over 64 KiB, in a commit', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['tbig2'] });
  await post(f, '/v1/namespaces/tbig2/tables', { name: 't', schema: longSchema });
  return post(f, '/v1/namespaces/tbig2/tables/t', { requirements: [], updates: [{ action: 'set-properties', updates: { note: 'x'.repeat(65537) } }] });
}, 400, 'BadRequestException', "updates[0] (set-properties): the value of 'note' is 65537 bytes, over the limit of 65536");
bad('a view property value over 64 KiB, in a commit', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['vbig'] });
  await post(f, '/v1/namespaces/vbig/views', { name: 'v', schema: longSchema,
    'view-version': { 'version-id': 1, 'timestamp-ms': 1, 'schema-id': 0, summary: {}, representations: [{ type: 'sql', sql: 'select 1', dialect: 'spark' }], 'default-namespace': ['vbig'] } });
  return post(f, '/v1/namespaces/vbig/views/v', { requirements: [], updates: [{ action: 'set-properties', updates: { note: 'x'.repeat(65537) } }] });
}, 400, 'BadRequestException', "updates[0] (set-properties): the value of 'note' is 65537 bytes, over the limit of 65536");
bad('properties as an array', (f) => post(f, '/v1/namespaces', { namespace: ['parr'], properties: ['k'] }), 400, 'BadRequestException', /properties/);
bad('update properties: removals as a string', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['up_types'] });
  return post(f, '/v1/namespaces/up_types/properties', { removals: 'a' });
}, 400, 'BadRequestException', /removals/);
bad('update properties: updates values as numbers', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['up_types2'] });
  return post(f, '/v1/namespaces/up_types2/properties', { updates: { a: 1 } });
}, 400, 'BadRequestException', /updates|'a'.*string/);
bad('duplicate keys at top level', (f) => post(f, '/v1/namespaces', '{"namespace":["d1"],"namespace":["d2"]}'), 400, 'BadRequestException', /duplicate/i);
bad('duplicate keys inside properties', (f) => post(f, '/v1/namespaces', '{"namespace":["d3"],"properties":{"k":"1","k":"2"}}'), 400, 'BadRequestException', /duplicate/i);

test('nothing was created by the rejected bodies', async () => {
  for (const n of ['a', 'pnum', 'parr', 'd1', 'd2', 'd3', 'a\u0000b']) {
    const res = await request(A.baseUrl, 'GET', `/v1/namespaces/${encodeURIComponent(n)}`);
    assert.ok(res.status === 404 || res.status === 400, `${JSON.stringify(n)} -> ${show(res)}`);
  }
});

// ------------------------------------------------------------------ limits (defaults, floe A)

bad('JSON nesting deeper than max-json-depth (default 64)', (f) => {
  const deep = '['.repeat(100) + ']'.repeat(100);
  return post(f, '/v1/namespaces', `{"namespace":["deep"],"properties":{"k":${deep}}}`);
}, 400, 'BadRequestException', /max-json-depth/);

bad('a 256-byte name (> max-identifier-bytes 255)', (f) => post(f, '/v1/namespaces', { namespace: ['n'.repeat(256)] }), 400, 'BadRequestException', /max-identifier-bytes/);
bad('128 two-byte characters = 256 bytes', (f) => post(f, '/v1/namespaces', { namespace: ['é'.repeat(128)] }), 400, 'BadRequestException', /max-identifier-bytes/);
bad('a 10,000-byte name', (f) => post(f, '/v1/namespaces', { namespace: ['x'.repeat(10000)] }), 400, 'BadRequestException', /max-identifier-bytes/);

test('names of exactly max-identifier-bytes (255) are accepted, in bytes not characters', async () => {
  for (const name of ['m'.repeat(255), '数'.repeat(85)]) {
    const res = await post(A, '/v1/namespaces', { namespace: [name] });
    expectJson(res, 200, 'CreateNamespaceResponse');
    const got = expectJson(await request(A.baseUrl, 'GET', `/v1/namespaces/${encodeURIComponent(name)}`), 200, 'GetNamespaceResponse');
    assert.deepEqual(got.namespace, [name]);
  }
});

bad('10,000 properties (> max-properties 1000)', (f) => {
  const properties = {};
  for (let i = 0; i < 10000; i++) properties[`k${i}`] = 'v';
  return post(f, '/v1/namespaces', { namespace: ['manyprops'], properties });
}, 400, 'BadRequestException', /max-properties/);

bad('10,000 property updates (> max-properties 1000)', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['manyupd'] });
  const updates = {};
  for (let i = 0; i < 10000; i++) updates[`k${i}`] = 'v';
  return post(f, '/v1/namespaces/manyupd/properties', { updates });
}, 400, 'BadRequestException', /max-properties/);

test('exactly 1000 properties are accepted', async () => {
  const properties = {};
  for (let i = 0; i < 1000; i++) properties[`k${i}`] = `v${i}`;
  const res = expectJson(await post(A, '/v1/namespaces', { namespace: ['props1000'], properties }), 200, 'CreateNamespaceResponse');
  assert.equal(Object.keys(res.properties).length, 1000);
});

bad('17 namespace levels (> max-namespace-levels 16)', (f) => post(f, '/v1/namespaces', { namespace: Array.from({ length: 17 }, (_, i) => `l${i}`) }), 400, 'BadRequestException', /max-namespace-levels/);

// ------------------------------------------------------------------ limits set by flags (floe B)

bad('body over --max-body-bytes=1024 -> 413', (f) => post(f, '/v1/default/namespaces', { namespace: ['big'], properties: { k: 'v'.repeat(2000) } }), 413, null, /max-body-bytes/, () => B);

bad('chunked body over --max-body-bytes -> 413', (f) => request(f.baseUrl, 'POST', '/v1/default/namespaces', {
  headers: { 'Transfer-Encoding': 'chunked', 'Content-Type': 'application/json' },
  body: JSON.stringify({ namespace: ['bigc'], properties: { k: 'v'.repeat(3000) } }),
}), 413, null, /max-body-bytes/, () => B);

test('a declared Content-Length over the limit is refused before the body is sent', async () => {
  const u = new URL(B.baseUrl);
  const raw = await rawExchange(
    B.baseUrl,
    `POST /v1/default/namespaces HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{"namespace":`,
    { timeoutMs: 5000 },
  );
  assert.match(raw, /^HTTP\/1\.[01] 413/, `expected an immediate 413, got: ${raw.slice(0, 300) || '(nothing within 5 s)'}`);
  assert.match(raw, /max-body-bytes/);
  await healthy(B);
});

test('a GET, HEAD or DELETE may declare no more than 64 KiB of body, refused before it is sent', async () => {
  const u = new URL(A.baseUrl);
  for (const method of ['GET', 'DELETE']) {
    const raw = await rawExchange(
      A.baseUrl,
      `${method} /v1/namespaces/x HTTP/1.1\r\nHost: ${u.host}\r\nContent-Length: 70000\r\n\r\n{`,
      { timeoutMs: 5000 },
    );
    assert.match(raw, /^HTTP\/1\.[01] 413/, `${method}: ${raw.slice(0, 300) || '(nothing within 5 s)'}`);
    assert.match(raw, /request body exceeds the limit of 65536 bytes for a GET, HEAD or DELETE/);
  }
  await healthy(A);
});
bad('depth 6 over --max-json-depth=5', (f) => post(f, '/v1/default/namespaces', `{"namespace":["dd"],"properties":{"k":[[[[["x"]]]]]}}`), 400, 'BadRequestException', /max-json-depth/, () => B);
const longSchema = { type: 'struct', fields: [{ id: 1, name: 'id', type: 'long', required: false }] };
bad('a table location over 1024 bytes (its overlap check is quadratic in it)', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['loc'] });
  const cfg = (await request(f.baseUrl, 'GET', '/v1/config')).json;
  const wh = `${cfg.overrides.prefix}`;
  const root = (await post(f, `/v1/${wh}/namespaces/loc/tables`, { name: 'probe', schema: longSchema })).json.metadata.location;
  return post(f, `/v1/${wh}/namespaces/loc/tables`, { name: 'deep', schema: longSchema, location: `${root}x/${'a/'.repeat(600)}t` });
}, 400, 'BadRequestException', /table location of \d+ bytes exceeds the limit of 1024 bytes/);
bad('a metrics report over 64 KiB', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['rep'] });
  await post(f, '/v1/namespaces/rep/tables', { name: 't', schema: longSchema });
  return post(f, '/v1/namespaces/rep/tables/t/metrics', { 'report-type': 'scan-report', 'table-name': 'rep.t', filler: 'x'.repeat(70000) });
}, 413, 'RequestTooLargeException', 'ReportMetricsRequest of 70');
bad('a view version of 65 representations (each dialect is checked against the others)', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['vrep'] });
  const representations = Array.from({ length: 65 }, (_, i) => ({ type: 'sql', sql: 'select 1', dialect: `d${i}` }));
  return post(f, '/v1/namespaces/vrep/views', { name: 'v', schema: longSchema,
    'view-version': { 'version-id': 1, 'timestamp-ms': 1, 'schema-id': 0, summary: {}, representations, 'default-namespace': ['vrep'] } });
}, 400, 'BadRequestException', '65 representations, over the limit of 64');
bad('a partition spec of 1,001 fields (each is checked against the others)', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['wide'] });
  const fields = Array.from({ length: 1001 }, (_, i) => ({ 'source-id': 1, transform: 'void', name: `p${i}` }));
  return post(f, '/v1/namespaces/wide/tables', { name: 'w', schema: longSchema, 'partition-spec': { 'spec-id': 0, fields } });
}, 400, 'BadRequestException', 'partition-spec: 1001 fields, over the limit of 1000');
bad('a struct of 30,000 fields, two sharing a name, is refused by name', async (f) => {
  await post(f, '/v1/namespaces', { namespace: ['wide2'] });
  const fields = Array.from({ length: 30000 }, (_, i) => ({ id: i + 1, name: i === 29999 ? 'c17' : `c${i}`, type: 'int', required: false }));
  return post(f, '/v1/namespaces/wide2/tables', { name: 'w', schema: { type: 'struct', fields } });
}, 400, 'BadRequestException', "duplicate field name 'c17'");
bad('a rename to an empty name names the destination', (f) => post(f, '/v1/tables/rename', { source: { namespace: ['a'], name: 't' }, destination: { namespace: ['a'], name: '' } }),
  400, 'BadRequestException', 'RenameTableRequest destination.name must not be empty');
bad('a rename from a namespace level over the limit names the source and the level', (f) => post(f, '/v1/default/tables/rename', { source: { namespace: ['a', 'b'.repeat(17)], name: 't' }, destination: { namespace: ['a'], name: 'u' } }),
  400, 'BadRequestException', 'RenameTableRequest source.namespace[1] of 17 bytes exceeds the limit of 16', () => B);
bad('17-byte name over --max-identifier-bytes=16', (f) => post(f, '/v1/default/namespaces', { namespace: ['a'.repeat(17)] }), 400, 'BadRequestException', /max-identifier-bytes/, () => B);
bad('4 properties over --max-properties=3', (f) => post(f, '/v1/default/namespaces', { namespace: ['p4'], properties: { a: '1', b: '2', c: '3', d: '4' } }), 400, 'BadRequestException', /max-properties/, () => B);
test('--max-properties bounds what a namespace holds, not just one request', async () => {
  expectJson(await post(B, '/v1/default/namespaces', { namespace: ['p3'], properties: { a: '1', b: '2', c: '3' } }), 200);
  expectError(
    await post(B, '/v1/default/namespaces/p3/properties', { updates: { d: '4' } }),
    400,
    'BadRequestException',
    /max-properties/,
  );
  // replacing and removing within the bound is fine
  expectJson(await post(B, '/v1/default/namespaces/p3/properties', { removals: ['a'], updates: { b: '20', d: '4' } }), 200);
  const g = expectJson(await request(B.baseUrl, 'GET', '/v1/default/namespaces/p3'), 200, 'GetNamespaceResponse');
  assert.deepEqual(g.properties, { b: '20', c: '3', d: '4' });
  await healthy(B);
});
bad('4 levels over --max-namespace-levels=3', (f) => post(f, '/v1/default/namespaces', { namespace: ['a', 'b', 'c', 'd'] }), 400, 'BadRequestException', /max-namespace-levels/, () => B);

test('floe B with --warehouse= has no default warehouse: unprefixed routes and config say so', async () => {
  const res = await request(B.baseUrl, 'GET', '/v1/config');
  // without a default warehouse, /v1/config still answers (clients pass ?warehouse=)
  expectJson(res, 200, 'CatalogConfig');
  const ns = await request(B.baseUrl, 'GET', '/v1/namespaces');
  assert.ok(ns.status === 404 || ns.status === 400, `unprefixed route with no default warehouse: ${show(ns)}`);
  expectError(ns, ns.status, null, /warehouse/i);
  // the prefixed route to the warehouse floe A created still works on B
  expectJson(await request(B.baseUrl, 'GET', '/v1/default/namespaces'), 200, 'ListNamespacesResponse');
});

// ------------------------------------------------------------------ percent-encoding

bad('%zz in a path segment', (f) => request(f.baseUrl, 'GET', '/v1/namespaces/%zz'), 400, 'BadRequestException', /percent|encod|%zz/i);
bad('%2 at the end of a path segment', (f) => request(f.baseUrl, 'GET', '/v1/namespaces/a%2'), 400, 'BadRequestException', /percent|encod|%2/i);
bad('lone % in a path segment', (f) => request(f.baseUrl, 'GET', '/v1/namespaces/100%'), 400, 'BadRequestException', /percent|encod|%/i);
bad('%zz in the parent query', (f) => request(f.baseUrl, 'GET', '/v1/namespaces?parent=%zz'), 400, 'BadRequestException', /percent|encod|parent/i);
bad('%2 in pageToken', (f) => request(f.baseUrl, 'GET', '/v1/namespaces?pageToken=%2'), 400, 'BadRequestException', /percent|encod|token/i);
bad('%zz in the warehouse query', (f) => request(f.baseUrl, 'GET', '/v1/config?warehouse=%zz'), 400, 'BadRequestException', /percent|encod|warehouse/i);
bad('%00 in a path segment', (f) => request(f.baseUrl, 'GET', '/v1/namespaces/a%00b'), 400, 'BadRequestException', /nul|encod|invalid|control/i);
bad('percent-encoded invalid UTF-8 in a path segment', (f) => request(f.baseUrl, 'GET', '/v1/namespaces/%C3%28'), 400, 'BadRequestException', /utf-?8|encod/i);
bad('empty namespace level in the path (a%1F%1Fb)', (f) => request(f.baseUrl, 'GET', `/v1/namespaces/a%1F%1Fb`), 400, 'BadRequestException', /namespace|empty/i);

// ------------------------------------------------------------------ routes and methods

bad('unknown route /v2/config', (f) => request(f.baseUrl, 'GET', '/v2/config'), 404, 'NoSuchResourceException', /\/v2\/config|route|not found/i);
bad('unknown route /nope', (f) => request(f.baseUrl, 'GET', '/nope'), 404, 'NoSuchResourceException');
bad('unknown sub-resource', (f) => request(f.baseUrl, 'GET', '/v1/default/namespaces/x/nope'), 404, 'NoSuchResourceException');
bad('unknown management route', (f) => request(f.baseUrl, 'GET', '/management/v1/nope'), 404, 'NoSuchResourceException');

for (const [method, path, allowed] of [
  ['PUT', '/v1/namespaces', ['GET', 'POST']],
  ['PATCH', '/v1/default/namespaces/x', ['GET', 'HEAD', 'DELETE']],
  ['POST', '/v1/config', ['GET']],
  ['DELETE', '/healthz', ['GET']],
  ['GET', '/v1/namespaces/x/properties', ['POST']],
]) {
  test(`wrong method ${method} ${path} -> 405 with Allow`, async () => {
    const res = await request(A.baseUrl, method, path, method === 'GET' ? {} : { body: '{}' });
    expectError(res, 405, 'MethodNotAllowedException', new RegExp(method));
    const allow = (res.headers.allow || '').split(',').map((s) => s.trim());
    for (const m of allowed) assert.ok(allow.includes(m), `Allow "${res.headers.allow}" lacks ${m}`);
    assert.ok(!allow.includes(method), `Allow "${res.headers.allow}" lists ${method}`);
    await healthy(A);
  });
}

// ------------------------------------------------------------------ broken connections

test('a body cut short by a closed connection, and a garbage request line', async () => {
  const u = new URL(A.baseUrl);
  await rawExchange(
    A.baseUrl,
    `POST /v1/namespaces HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"namespace":["cut"`,
    { timeoutMs: 300 },
  );
  const garbage = await rawExchange(A.baseUrl, 'GARBAGE\r\n\r\n', { timeoutMs: 2000 });
  assert.match(garbage, /^HTTP\/1\.[01] 4\d\d|^$/, `garbage request line answered ${garbage.slice(0, 100)}`);
  await healthy(A);
  expectError(await request(A.baseUrl, 'GET', '/v1/namespaces/cut'), 404, 'NoSuchNamespaceException');
  // and the daemon still does real work
  expectJson(await post(A, '/v1/namespaces', { namespace: ['still_works'] }), 200, 'CreateNamespaceResponse');
  expectJson(await request(A.baseUrl, 'GET', `/v1/namespaces/${encodeNs(['still_works'])}`), 200, 'GetNamespaceResponse');
});
