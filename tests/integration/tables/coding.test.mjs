// Content-coded responses: a client whose Accept-Encoding names gzip or zstd gets bodies of
// at least --response-compress-min-bytes (1,024) so coded, with Content-Encoding, Vary:
// Accept-Encoding and a weak ETag; the decoded bytes are exactly those sent to a client that
// asks for nothing. A cached loadTable answer is coded once per version and kept (large
// ones on a worker). Responses that carry a token or a secret are never coded (BREACH;
// vended keys: vending/vending.test.mjs). Decoded by clients we did not write: curl
// --compressed (zstd), Python requests (gzip), node's fetch (gzip), iceberg-js.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { request } from '../lib/harness.mjs';
import { parse, sum } from '../lib/prom.mjs';
import { startCatalog, call, tablePath, createBody, appendCommit, uuidv7, tableCatalog } from './lib.mjs';
import { startAuthFloe, tokenFor, bearer, mgmt, ADMIN_ID, ADMIN_SECRET } from '../auth/lib.mjs';

const NS = ['coded'];
const GZIP = { 'Accept-Encoding': 'gzip' };
const ZSTD = { 'Accept-Encoding': 'zstd' };
// PyIceberg's requests session with urllib3 2.x and zstandard installed
const PYICEBERG = { 'Accept-Encoding': 'gzip, deflate, zstd', Accept: '*/*', 'User-Agent': 'PyIceberg/0.9.1' };
let c;

// ~6 KB of metadata (coded inline) and ~190 KB (coded on a worker, past 128 KiB)
const props = (n, width) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p.${i}`, `v${i}`.padEnd(width, 'x')]));

before(async () => {
  c = await startCatalog('coding');
  await call(c.base, 'POST', `${c.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
  await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/tables`, { body: createBody('small', { properties: props(60, 80) }), expect: 200 });
  await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/tables`, { body: createBody('large', { properties: props(900, 200) }), expect: 200 });
});

after(async () => {
  await c?.floe.stop();
});

const metrics = async () => parse((await request(c.base, 'GET', '/metrics')).text);
const coded = (m, coding, what = 'responses') => sum(m, `floe_http_coded_${what}_total`, { coding });

for (const [name, minBytes] of [['small', 5000], ['large', 150000]]) {
  test(`${name} table: gzip and zstd bodies decode to exactly the identity bytes, with Vary and a weak ETag`, async () => {
    const path = tablePath(c.p, NS, name);
    const plain = await call(c.base, 'GET', path, { expect: 200 });
    assert.ok(plain.rawBody.length >= minBytes, `${plain.rawBody.length} bytes`);
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.headers.vary, 'Accept-Encoding', 'the body varies with Accept-Encoding');
    assert.match(plain.headers.etag, /^"[0-9a-f]{32}"$/);
    const m0 = await metrics();
    for (const [headers, coding] of [[GZIP, 'gzip'], [ZSTD, 'zstd'], [PYICEBERG, 'zstd'], [{ 'Accept-Encoding': 'x-gzip' }, 'gzip'],
      [{ 'Accept-Encoding': 'gzip;q=0.9, zstd;q=0.5' }, 'gzip'], [{ 'Accept-Encoding': 'zstd;q=0, *' }, 'gzip']]) {
      const res = await call(c.base, 'GET', path, { headers, expect: 200 });
      const what = `${name} with ${headers['Accept-Encoding']}`;
      assert.equal(res.headers['content-encoding'], coding, what);
      assert.equal(res.headers.vary, 'Accept-Encoding', what);
      assert.equal(res.headers.etag, `W/${plain.headers.etag}`, `${what}: the same tag, weak`);
      assert.equal(Number(res.headers['content-length']), res.rawBody.length, what);
      assert.ok(res.rawBody.length * 4 < plain.rawBody.length, `${what}: ${res.rawBody.length} of ${plain.rawBody.length} bytes`);
      assert.ok(Buffer.from(res.text).equals(plain.rawBody), `${what}: decodes to the identity bytes`);
    }
    // coded only on request, and never with q=0 or codings Floe does not make
    for (const ae of ['identity', 'br', 'deflate', 'gzip;q=0, zstd;q=0', '*;q=0', 'gzip;q=2', 'gzip;q=0.0001', 'zstd;foo=1']) {
      const res = await call(c.base, 'GET', path, { headers: { 'Accept-Encoding': ae }, expect: 200 });
      assert.equal(res.headers['content-encoding'], undefined, `Accept-Encoding: ${ae}`);
      assert.ok(res.rawBody.equals(plain.rawBody), `Accept-Encoding: ${ae}`);
    }
    // either form of the tag is fresh, with or without a coding; the 304 names it in the
    // form the client holds (a coded 200's is weak)
    for (const inm of [plain.headers.etag, `W/${plain.headers.etag}`])
      for (const headers of [{}, ZSTD]) {
        const res = await call(c.base, 'GET', path, { headers: { ...headers, 'If-None-Match': inm }, expect: 304 });
        assert.equal(res.rawBody.length, 0);
        assert.equal(res.headers.vary, 'Accept-Encoding', 'a 304 varies as its 200 would');
        assert.equal(res.headers.etag, inm, 'the tag in the form the client sent');
      }
    const m1 = await metrics();
    assert.equal(coded(m1, 'zstd') - coded(m0, 'zstd'), 2, 'two zstd answers counted');
    assert.equal(coded(m1, 'gzip') - coded(m0, 'gzip'), 4, 'four gzip answers counted');
    const plainBytes = coded(m1, 'gzip', 'plain_bytes') - coded(m0, 'gzip', 'plain_bytes');
    const sent = coded(m1, 'gzip', 'sent_bytes') - coded(m0, 'gzip', 'sent_bytes');
    assert.equal(plainBytes, 4 * plain.rawBody.length);
    assert.ok(sent > 0 && sent * 4 < plainBytes, `sent ${sent} of ${plainBytes}`);
  });
}

test('a cached version is coded once and kept: the same bytes each time, counted in the cache\'s bytes and gone with its version', async () => {
  const path = tablePath(c.p, NS, 'large');
  const first = await call(c.base, 'GET', path, { headers: ZSTD, expect: 200 });
  const kept = sum(await metrics(), 'floe_table_cache_coded_bytes');
  assert.ok(kept >= first.rawBody.length, `kept ${kept} >= ${first.rawBody.length}`);
  for (let i = 0; i < 5; i++) {
    const res = await call(c.base, 'GET', path, { headers: ZSTD, expect: 200 });
    assert.ok(res.rawBody.equals(first.rawBody), 'the kept copy');
  }
  // a commit makes a new version: its answer is coded anew, and the old copy goes
  const meta = JSON.parse(first.text).metadata;
  const { body, snapshotId } = appendCommit(meta, { ns: NS, name: 'large' });
  await call(c.base, 'POST', path, { body, expect: 200 });
  const before = await metrics();
  const left = sum(before, 'floe_table_cache_coded_bytes');
  assert.ok(left <= kept - first.rawBody.length, `the old copies left with their version: ${left} of ${kept}`);
  const next = await call(c.base, 'GET', path, { headers: ZSTD, expect: 200 });
  const after = await metrics();
  const grew = (m) => sum(after, m) - sum(before, m);
  assert.equal(grew('floe_table_cache_coded_bytes'), next.rawBody.length, 'the new copy, counted');
  assert.equal(grew('floe_table_cache_bytes'), next.rawBody.length, 'in the cache\'s own budget');
  assert.equal(next.headers['content-encoding'], 'zstd');
  assert.equal(next.json.metadata['current-snapshot-id'], snapshotId, 'the new version, not the kept copy of the old one');
  assert.ok(!next.rawBody.equals(first.rawBody));
  const plain = await call(c.base, 'GET', path, { expect: 200 });
  assert.ok(Buffer.from(next.text).equals(plain.rawBody));
});

test('past 256 KiB gzip codes a cached version (once, kept) but no answer made per request', async () => {
  await call(c.base, 'POST', `${c.p}/namespaces/${NS[0]}/tables`, { body: createBody('huge', { properties: props(900, 350) }), expect: 200 });
  const path = tablePath(c.p, NS, 'huge');
  const plain = await call(c.base, 'GET', path, { expect: 200 });
  assert.ok(plain.rawBody.length > 256 * 1024, `${plain.rawBody.length} bytes`);
  const first = await call(c.base, 'GET', path, { headers: GZIP, expect: 200 });
  assert.equal(first.headers['content-encoding'], 'gzip', 'the cached version, coded on a worker');
  assert.ok(Buffer.from(first.text).equals(plain.rawBody));
  assert.ok(first.rawBody.length * 4 < plain.rawBody.length);
  const again = await call(c.base, 'GET', path, { headers: GZIP, expect: 200 });
  assert.ok(again.rawBody.equals(first.rawBody), 'the kept copy');
  // a commit's response is made per request: plain to a client that takes gzip only
  const { body } = appendCommit(plain.json.metadata, { ns: NS, name: 'huge' });
  const commit = await call(c.base, 'POST', path, { body, headers: GZIP, expect: 200 });
  assert.ok(commit.rawBody.length > 256 * 1024);
  assert.equal(commit.headers['content-encoding'], undefined);
  assert.equal(commit.headers.vary, 'Accept-Encoding');
  const zstd = await call(c.base, 'POST', path, { body: appendCommit(commit.json.metadata, { ns: NS, name: 'huge' }).body, headers: ZSTD, expect: 200 });
  assert.equal(zstd.headers['content-encoding'], 'zstd', 'zstd at any size');
});

test('refs-only loads, commit responses and their idempotent replays are coded alike', async () => {
  const path = tablePath(c.p, NS, 'small');
  const refs = await call(c.base, 'GET', `${path}?snapshots=refs`, { headers: GZIP, expect: 200 });
  const refsPlain = await call(c.base, 'GET', `${path}?snapshots=refs`, { expect: 200 });
  assert.equal(refs.headers['content-encoding'], 'gzip');
  assert.equal(refs.text, refsPlain.text);
  const meta = (await call(c.base, 'GET', path, { expect: 200 })).json.metadata;
  const { body } = appendCommit(meta, { ns: NS, name: 'small' });
  const key = uuidv7();
  const first = await call(c.base, 'POST', path, { body, headers: { ...ZSTD, 'Idempotency-Key': key }, expect: 200 });
  assert.equal(first.headers['content-encoding'], 'zstd');
  const replay = await call(c.base, 'POST', path, { body, headers: { ...GZIP, 'Idempotency-Key': key }, expect: 200 });
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.equal(replay.headers['content-encoding'], 'gzip', 'a replay is coded as its own client asks');
  assert.deepEqual(replay.json, first.json);
  const plain = await call(c.base, 'POST', path, { body, headers: { 'Idempotency-Key': key }, expect: 200 });
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.deepEqual(plain.json, first.json, 'the record holds the plain body');
});

test('small bodies, errors and 204s go as they are; /metrics and /openapi.yaml are coded', async () => {
  const list = await call(c.base, 'GET', `${c.p}/namespaces`, { headers: GZIP, expect: 200 });
  assert.ok(list.rawBody.length < 1024);
  assert.equal(list.headers['content-encoding'], undefined);
  assert.equal(list.headers.vary, undefined, 'too small to ever be coded');
  const missing = await call(c.base, 'GET', tablePath(c.p, NS, 'nope'), { headers: GZIP, expect: 404 });
  assert.equal(missing.headers['content-encoding'], undefined);
  assert.equal(missing.json.error.code, 404);
  const head = await call(c.base, 'HEAD', tablePath(c.p, NS, 'small'), { headers: GZIP, expect: 204 });
  assert.equal(head.headers['content-encoding'], undefined);
  for (const p of ['/metrics', '/openapi.yaml']) {
    const z = await request(c.base, 'GET', p, { headers: GZIP });
    assert.equal(z.status, 200);
    assert.equal(z.headers['content-encoding'], 'gzip', p);
    assert.ok(z.rawBody.length * 2 < z.text.length, `${p}: ${z.rawBody.length} of ${z.text.length}`);
  }
  // the document is coded once: the same bytes each time; HEAD has GET's headers
  const o1 = await request(c.base, 'GET', '/openapi.yaml', { headers: ZSTD });
  const o2 = await request(c.base, 'GET', '/openapi.yaml', { headers: ZSTD });
  assert.equal(o1.headers['content-encoding'], 'zstd');
  assert.ok(o1.rawBody.equals(o2.rawBody));
  const oh = await request(c.base, 'HEAD', '/openapi.yaml', { headers: ZSTD });
  assert.equal(oh.status, 200);
  assert.equal(oh.rawBody.length, 0);
  for (const h of ['content-encoding', 'content-length', 'vary', 'content-type'])
    assert.equal(oh.headers[h], o1.headers[h], `HEAD's ${h} is GET's`);
});

test('clients we did not write decode them: curl --compressed, Python requests, fetch, iceberg-js', async (t) => {
  const path = tablePath(c.p, NS, 'large');
  const plain = (await call(c.base, 'GET', path, { expect: 200 })).rawBody.toString();
  const m0 = await metrics();
  // curl offers "deflate, gzip, br, zstd" (Debian's libcurl has zstd): Floe answers zstd
  const curl = spawnSync('curl', ['-sS', '--compressed', '-w', '%{stderr}%header{content-encoding}', `${c.base}${path}`], { maxBuffer: 1 << 26 });
  assert.equal(curl.status, 0, curl.stderr.toString());
  assert.equal(curl.stderr.toString(), 'zstd');
  assert.equal(curl.stdout.toString(), plain);
  // node's fetch (undici) offers gzip, deflate, br
  const f = await fetch(`${c.base}${path}`);
  assert.equal(f.headers.get('content-encoding'), 'gzip');
  assert.equal(await f.text(), plain);
  // iceberg-js, through fetch
  const cat = tableCatalog(c.base);
  const loaded = await cat.loadTable({ namespace: NS, name: 'large' });
  assert.deepEqual(loaded, JSON.parse(plain).metadata);
  const m1 = await metrics();
  assert.ok(coded(m1, 'zstd') > coded(m0, 'zstd') && coded(m1, 'gzip') >= coded(m0, 'gzip') + 2, 'each was coded');
  // Debian's Python requests (the library PyIceberg uses) decodes gzip
  const py = spawnSync('/usr/bin/python3', ['-c', 'import requests'], { encoding: 'utf8' });
  if (py.status !== 0) {
    t.diagnostic('Debian python3-requests is not installed: that client is not exercised');
    return;
  }
  const out = execFileSync('/usr/bin/python3', ['-c', `
import hashlib, requests, sys
r = requests.get(sys.argv[1])
assert r.headers.get("Content-Encoding") == "gzip", r.headers
sys.stdout.write(hashlib.sha256(r.content).hexdigest() + " " + str(r.json()["metadata"]["format-version"]))
`, `${c.base}${path}`], { encoding: 'utf8' });
  const { createHash } = await import('node:crypto');
  assert.equal(out, `${createHash('sha256').update(plain).digest('hex')} 2`);
});

test('--response-compress-min-bytes 0 codes nothing', async () => {
  const d = await startCatalog('coding_off', { args: ['--response-compress-min-bytes', '0'] });
  try {
    await call(d.base, 'POST', `${d.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
    await call(d.base, 'POST', `${d.p}/namespaces/${NS[0]}/tables`, { body: createBody('t', { properties: props(60, 80) }), expect: 200 });
    const res = await call(d.base, 'GET', tablePath(d.p, NS, 't'), { headers: PYICEBERG, expect: 200 });
    assert.ok(res.rawBody.length > 5000);
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal(res.headers.vary, undefined);
    assert.match(res.headers.etag, /^"/);
  } finally {
    await d.floe.stop();
  }
});

test('without a cache (--table-cache-bytes 0) each coded load is coded for itself', async () => {
  const d = await startCatalog('coding_nocache', { args: ['--table-cache-bytes', '0'] });
  try {
    await call(d.base, 'POST', `${d.p}/namespaces`, { body: { namespace: NS }, expect: 200 });
    await call(d.base, 'POST', `${d.p}/namespaces/${NS[0]}/tables`, { body: createBody('t', { properties: props(900, 200) }), expect: 200 });
    const path = tablePath(d.p, NS, 't');
    const plain = await call(d.base, 'GET', path, { expect: 200 });
    for (let i = 0; i < 3; i++) {
      const res = await call(d.base, 'GET', path, { headers: ZSTD, expect: 200 });
      assert.equal(res.headers['content-encoding'], 'zstd');
      assert.ok(Buffer.from(res.text).equals(plain.rawBody));
    }
    // gzip past 256 KiB only for a version whose copy is kept: none here
    await call(d.base, 'POST', `${d.p}/namespaces/${NS[0]}/tables`, { body: createBody('huge', { properties: props(900, 350) }), expect: 200 });
    const huge = await call(d.base, 'GET', tablePath(d.p, NS, 'huge'), { headers: GZIP, expect: 200 });
    assert.ok(huge.rawBody.length > 256 * 1024);
    assert.equal(huge.headers['content-encoding'], undefined);
    const m = parse((await request(d.base, 'GET', '/metrics')).text);
    assert.equal(sum(m, 'floe_table_cache_coded_bytes'), 0, 'nothing kept without a cache');
    assert.equal(sum(m, 'floe_http_coded_responses_total', { coding: 'zstd' }), 3);
  } finally {
    await d.floe.stop();
  }
});

test('tokens and client secrets are never coded, even when every body would be', async () => {
  const a = await startAuthFloe({ tag: 'coding_auth', args: ['--response-compress-min-bytes', '1'] });
  try {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: ADMIN_ID, client_secret: ADMIN_SECRET, scope: 'catalog' });
    const tok = await request(a.base, 'POST', '/v1/oauth/tokens', {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...PYICEBERG },
      body: form.toString(),
    });
    assert.equal(tok.status, 200);
    assert.ok(tok.json.access_token);
    assert.equal(tok.headers['content-encoding'], undefined, 'a token response is never coded');
    const admin = await tokenFor(a.base, ADMIN_ID, ADMIN_SECRET);
    const cfg = await request(a.base, 'GET', '/v1/config', { headers: { ...bearer(admin), ...PYICEBERG } });
    assert.equal(cfg.status, 200);
    assert.equal(cfg.headers['content-encoding'], 'zstd', 'with a 1-byte floor, an ordinary body is coded');
    const created = await request(a.base, 'POST', '/management/v1/principals', {
      headers: { ...bearer(admin), ...PYICEBERG },
      body: { name: 'coded-client' },
    });
    assert.equal(created.status, 201);
    assert.ok(created.json['client-secret']);
    assert.equal(created.headers['content-encoding'], undefined, 'a client secret is never coded');
    const rotated = await request(a.base, 'POST', '/management/v1/principals/coded-client/rotate', {
      headers: { ...bearer(admin), ...PYICEBERG },
    });
    assert.equal(rotated.status, 200, rotated.text);
    assert.equal(rotated.headers['content-encoding'], undefined, 'a rotated secret is never coded');
    const got = await mgmt(a.base, admin, 'GET', '/principals/coded-client');
    assert.equal(got.status, 200);
  } finally {
    await a.floe.stop();
  }
});
